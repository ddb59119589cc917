/* `nq keygen NAME`: a CURVE key pair for a broker, worker or client. */
#include "cli.h"
#include "security.h"

#include <stdio.h>

int cmd_keygen(int argc, char **argv)
{
    if (argc != 2)
        return cli_usage_error("keygen", "expected one NAME (writes NAME.key and NAME.pub)");
    if (argv[1][0] == '-')
        return cli_usage_error("keygen", "unknown option '%s'", argv[1]);
    char err[512];
    if (security_keygen(argv[1], err, sizeof err) != 0)
        return cli_error("keygen", "%s", err);
    printf("wrote %s.key (secret, mode 0600) and %s.pub (public)\n", argv[1], argv[1]);
    return NQ_EXIT_OK;
}
