/* PLACEHOLDER: replaced by the real implementation. */
#include "cli.h"
int cmd_estimate(int argc, char **argv) { (void)argc; return cli_error(argv[0], "not built yet"); }
