/* Subcommands of the voltgate program; each returns the process exit code
 * (0 success, 1 a check failed, 2 bad input or usage, 77 skipped). */
#ifndef VOLTGATE_TOOLS_H
#define VOLTGATE_TOOLS_H

#define VG_EXIT_OK 0
#define VG_EXIT_FAIL 1
#define VG_EXIT_USAGE 2
#define VG_EXIT_SKIP 77

int cmd_golden(int argc, char **argv);  /* tools/cmd_golden.c */
int cmd_bench(int argc, char **argv);   /* tools/cmd_bench.c */
int cmd_replay(int argc, char **argv);  /* tools/cmd_replay.c */
int cmd_plans(int argc, char **argv);   /* tools/cmd_plans.c */

/* "voltgate <git describe>" of this build (tools/main.c): `voltgate
 * --version` prints it and every JSON the program writes carries it as
 * "build". */
const char *tool_build_id(void);

/* Every command's default --backend is "auto": cuda when a CUDA device is
 * present, else cpu.  tool_backend() resolves "auto" (other names come back
 * as given) and prints the command's first line, "backend: NAME" (with why,
 * for auto), so that the output says what ran. */
const char *tool_backend(const char *asked);

#endif
