/* voltgate bench --dispatch: the dispatch-overhead benchmark (tools/bench_dispatch.c).
 * tools/cmd_bench.c forwards its arguments here; argv[0] is skipped. */
#ifndef VOLTGATE_TOOLS_BENCH_DISPATCH_H
#define VOLTGATE_TOOLS_BENCH_DISPATCH_H

/* Options: [--dispatch] [--json FILE] [--batches N] [--batch N] [--help].
 * Returns a process exit code (tools.h). */
int vg_bench_dispatch_main(int argc, char **argv);

#endif
