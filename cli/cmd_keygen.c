/* `nq keygen NAME`: a CURVE key pair for a broker, worker or client. */
#include "cli.h"
#include "security.h"

#include <stdio.h>
#include <string.h>

/* NAME must name a file to put .key and .pub after: "" or "dir/" would write the hidden
   ".key" and "dir/.key", "." and ".." likewise. */
static int keygen_check_name(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    for (const char *p = name; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return cli_usage_error("keygen", "NAME must not contain control characters");
    if (name[0] == '-')
        return cli_usage_error("keygen", "unknown option '%s'", name);
    if (!base[0] || !strcmp(base, ".") || !strcmp(base, ".."))
        return cli_usage_error("keygen", "NAME must end in a file name, as in 'broker' or 'keys/w1' (got '%s')",
                               name);
    return 0;
}

int cmd_keygen(int argc, char **argv)
{
    if (argc != 2)
        return cli_usage_error("keygen", "expected one NAME (writes NAME.key and NAME.pub)");
    int rc = keygen_check_name(argv[1]);
    if (rc)
        return rc;
    char err[512];
    if (security_keygen(argv[1], err, sizeof err) != 0)
        return cli_error("keygen", "%s", err);
    printf("wrote %s.key (secret, mode 0600) and %s.pub (public)\n", argv[1], argv[1]);
    return NQ_EXIT_OK;
}
