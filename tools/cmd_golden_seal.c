/*
 * voltgate golden seal: checks a golden file in a forked child (libhdf5 is
 * not memory-safe on damaged files) and seals it in place.  A file of its
 * own: the child process is seal's alone (cmd_golden.c has what the
 * subcommands share).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd_golden.h"

/* `seal` must parse an unsealed (or edited) file, and libhdf5 1.10.x is not
 * memory-safe on damaged ones (a use-after-free and a heap overflow under
 * H5Aexists, found by fuzzing: suites/fuzz/regressions/fuzz_golden/hdf5_*).
 * So it first reads the file in a forked child (vg_golden_read_flags with
 * VG_GOLDEN_READ_NO_SEAL: every HDF5 parse and stored dataset, and a recipe
 * weight rebuilt and checked against its hashes, so that an edit which makes
 * the recipe stale, such as another seed, is refused here rather than sealed
 * and refused by the next verify):
 *   - the child crashes: "<file>: damaged file (the HDF5 library crashed
 *     reading it: signal N)", and the file is left alone (exit 2);
 *   - the child refuses the file: its one-line message, passed up a pipe;
 *   - the child accepts it (or no child could be had: pipe or fork failed):
 *     0, and the caller seals it.
 * Returns 0, or -1 after printing the reason (prefix `cmd`). */
static int check_in_child(const char *cmd, const char *file)
{
    int fds[2] = {-1, -1};
    fflush(NULL);
    pid_t pid = pipe(fds) == 0 ? fork() : -1;
    if (pid < 0 && fds[0] >= 0) {
        close(fds[0]);
        close(fds[1]);
    }
    if (pid == 0) {
        close(fds[0]);
        vg_golden_file probe;
        vg_status st = vg_golden_read_flags(file, VG_GOLDEN_READ_NO_SEAL, &probe);
        if (st == VG_OK) {
            vg_golden_free(&probe);
            _exit(0);
        }
        const char *msg = vg_last_error();
        size_t len = strlen(msg);
        while (len > 0) {
            ssize_t n = write(fds[1], msg, len);
            if (n <= 0)
                break;
            msg += n;
            len -= (size_t)n;
        }
        _exit(1);   /* _exit: the parent's atexit handlers (CUDA, HDF5) are not ours */
    }
    if (pid > 0) {
        close(fds[1]);
        char msg[2048];
        size_t used = 0;
        for (;;) {
            ssize_t n = read(fds[0], msg + used, sizeof msg - 1 - used);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            used += (size_t)n;
            if (used == sizeof msg - 1)
                break;
        }
        msg[used] = '\0';
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "voltgate golden %s: %s: damaged file (the HDF5 library crashed "
                            "reading it: signal %d)\n", cmd, file, WTERMSIG(status));
            return -1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (used)
                fprintf(stderr, "voltgate golden %s: %s\n", cmd, msg);
            else
                fprintf(stderr, "voltgate golden %s: %s: damaged file (the checking process "
                                "exited with status %d)\n", cmd, file,
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            return -1;
        }
    }
    return 0;
}

int cmd_golden_seal(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: voltgate golden seal FILE...\n\n"
               "Seals golden files (SCHEMA.md, \"The seal\"): every reader refuses a file whose\n"
               "first 512 bytes do not seal the rest, so that damaged bytes never reach libhdf5.\n"
               "Use it on a file written before seals existed, or after an intended edit\n"
               "through HDF5 (h5py, h5repack).  Each file is first read and validated in a\n"
               "child process, without its seal; only a file that passes is sealed, in\n"
               "place and atomically.  An intact sealed file is left as it is.\n"
               "Exit: 0 all sealed, 2 a file was refused (its reason on stderr).\n");
        return argc < 2 ? VG_EXIT_USAGE : VG_EXIT_OK;
    }
    int rc = VG_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        if (check_in_child("seal", argv[i]) != 0) {
            rc = VG_EXIT_USAGE;
            continue;
        }
        if (vg_golden_seal(argv[i]) != VG_OK) {
            fprintf(stderr, "voltgate golden seal: %s\n", vg_last_error());
            rc = VG_EXIT_USAGE;
            continue;
        }
        printf("%s: sealed\n", argv[i]);
    }
    return rc;
}
