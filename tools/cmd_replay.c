/* Placeholder until its issue lands: says so and fails. */
#include <stdio.h>

#include "tools.h"

int cmd_replay(int argc, char **argv)
{
    (void)argc; (void)argv;
    fprintf(stderr, "voltgate replay: not built yet\n");
    return VG_EXIT_USAGE;
}
