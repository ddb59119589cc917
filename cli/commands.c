/* The command table (texts in usage.h), in the library so tests and help share it. */
#include "cli.h"
#include "usage.h"

#include <stddef.h>

const nq_cmd_t nq_commands[] = {
    NQ_COMMAND_TABLE
    { NULL, NULL, NULL, NULL },
};
