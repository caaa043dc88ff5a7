/*
 * voltgate — the command-line program.  Each subcommand lives in its own
 * tools/cmd_*.c; this file only dispatches.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "kernels.h"
#include "tools.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} commands[] = {
    {"golden", cmd_golden, "generate, verify and import golden HDF5 cases"},
    {"bench", cmd_bench, "benchmark kernels, peers and dispatch overhead"},
    {"replay", cmd_replay, "replay a serving schedule through the tuning runtime"},
    {"plans", cmd_plans, "list the kernel plans of each backend"},
};

/* The Makefile passes the build id that runtime/lut.c stamps into LUTs. */
#ifndef VG_BUILD_ID
#define VG_BUILD_ID "voltgate (unknown build)"
#endif

const char *tool_build_id(void)
{
    return VG_BUILD_ID;
}

const char *tool_backend(const char *asked)
{
    if (strcmp(asked, "auto") != 0) {
        printf("backend: %s\n", asked);
        return asked;
    }
    int count = 0;
    const int cuda = vg_cuda_device_count(&count) == VG_OK && count > 0;
    printf("backend: %s (auto: %s)\n", cuda ? "cuda" : "cpu",
           cuda ? "a CUDA device is present" : "no CUDA device");
    fflush(stdout);
    return cuda ? "cuda" : "cpu";
}

static void usage(FILE *out)
{
    fprintf(out, "usage: voltgate <command> [options]   (voltgate <command> --help)\n"
                 "       voltgate --version | -V\n\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(out, "  %-8s %s\n", commands[i].name, commands[i].summary);
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0) {
        printf("%s\n", tool_build_id());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0) {
            int rc = commands[i].run(argc - 1, argv + 1);
            /* Output that never arrived (a full disk, a closed pipe) is no
             * result: a table or verdict lost on the way must not exit 0. */
            errno = 0;
            if ((fflush(stdout) != 0 || ferror(stdout)) && rc == 0) {
                fprintf(stderr, "voltgate %s: cannot write its output to standard output: %s\n",
                        argv[1], errno ? strerror(errno) : "write error");
                rc = 1;
            }
            return rc;
        }
    fprintf(stderr, "voltgate: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
