/* Placeholder until its issue lands: says so and fails. */
#include <stdio.h>

#include "tools.h"

int cmd_golden(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "voltgate golden: not built yet\n");
    return VG_EXIT_USAGE;
}
