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

/* Writes text and a newline to path atomically (vg_write_file_atomic,
 * tools/json_file.c): 1 on success, else 0 with errno saying why. */
int tool_write_json(const char *path, const char *text);

/* Every command's default --backend is "auto": cuda when a CUDA device is
 * present, else cpu.  tool_backend() resolves "auto" (other names come back
 * as given) and prints the command's first line, "backend: NAME" (with why,
 * for auto), so that the output says what ran. */
const char *tool_backend(const char *asked);

/* One progress line on stderr, "what: TEXT, N s", redrawn in place at most
 * ten times a second (force: now), only when stderr is a terminal
 * (tools/progress.c); tool_progress_end() clears it. */
typedef struct tool_progress {
    int on;
    const char *what;
    double start, last;
} tool_progress;
void tool_progress_start(tool_progress *p, const char *what);
void tool_progress_show(tool_progress *p, int force, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void tool_progress_end(tool_progress *p);

#endif
