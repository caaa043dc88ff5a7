/*
 * Fuzz regressions: every input a fuzzer crashed on is kept under
 * suites/fuzz/regressions/<target>/ and replayed here through exactly the
 * code the fuzzer ran (the targets are #included with FUZZ_FAIL turned into
 * a cmocka failure).  The committed seed corpora are replayed too, so a
 * target that no longer runs its own seeds cleanly fails here first.
 *
 * Each input runs in a forked child, so one that still crashes fails its
 * test instead of killing the suite.  Inputs whose name starts with "hdf5_"
 * crash inside libhdf5 itself (not instrumented, not ours; /tmp/findings.md):
 * while they still crash they are reported SKIPPED with the reason, never
 * passed; once they stop crashing they pass.
 *
 * Run under `make sanitize` this is where the ASan/UBSan findings show.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "vgtest.h"

/* A broken invariant inside a replayed target fails the child. */
#define FUZZ_FAIL(...)                                   \
    do {                                                 \
        fprintf(stderr, "fuzz invariant broken: ");      \
        fprintf(stderr, __VA_ARGS__);                    \
        fprintf(stderr, "\n");                           \
        _exit(3);                                        \
    } while (0)
#define FUZZ_NO_ENTRY 1
#include "fuzz/fuzz_config.c"
#include "fuzz/fuzz_golden.c"
#include "fuzz/fuzz_lut.c"
#include "fuzz/fuzz_safetensors.c"

#include "internal.h"

typedef int (*fuzz_one_fn)(const uint8_t *data, size_t size);

typedef struct replay_counts {
    int ran, crashed_ours, crashed_hdf5, broken;
    char first_failure[1200];
    char first_hdf5[1200];
} replay_counts;

/* Replays one file in a child; returns the child's wait status. */
static int replay_in_child(fuzz_one_fn fn, const char *path)
{
    size_t len = 0;
    char *data = fuzz_read_file(path, &len);
    assert_non_null(data);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* the child must die of a crash (cmocka's handlers would catch it
         * and run the suite on inside the child) */
        const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
        for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
            signal(sigs[i], SIG_DFL);
        fn((const uint8_t *)data, len);
        _exit(0);
    }
    free(data);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
}

static void replay_dir(fuzz_one_fn fn, const char *dir, replay_counts *c)
{
    DIR *d = opendir(dir);
    if (!d)
        return;   /* no regressions kept for this target (yet) */
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path)
            continue;
        int status = replay_in_child(fn, path);
        c->ran++;
        int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
        if (ok)
            continue;
        char what[1100];
        if (WIFSIGNALED(status))
            snprintf(what, sizeof what, "%s: killed by signal %d", path, WTERMSIG(status));
        else
            snprintf(what, sizeof what, "%s: exit %d", path, WEXITSTATUS(status));
        if (strncmp(e->d_name, "hdf5_", 5) == 0) {
            if (!c->crashed_hdf5++)
                snprintf(c->first_hdf5, sizeof c->first_hdf5, "%s", what);
        } else {
            if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
                c->broken++;
            else
                c->crashed_ours++;
            if (!c->first_failure[0])
                snprintf(c->first_failure, sizeof c->first_failure, "%s", what);
        }
    }
    closedir(d);
}

static void replay_target(const char *target, fuzz_one_fn fn, int corpus_too)
{
    replay_counts c;
    memset(&c, 0, sizeof c);
    char dir[512];
    snprintf(dir, sizeof dir, "suites/fuzz/regressions/%s", target);
    replay_dir(fn, dir, &c);
    if (corpus_too) {
        snprintf(dir, sizeof dir, "suites/fuzz/corpus/%s", target);
        int before = c.ran;
        replay_dir(fn, dir, &c);
        /* the seed corpus must exist: an empty one would make this pass vacuously */
        assert_true(c.ran > before);
    }
    print_message("%s: %d inputs replayed, %d crashed in voltgate, %d broke an invariant, "
                  "%d crashed in libhdf5\n",
                  target, c.ran, c.crashed_ours, c.broken, c.crashed_hdf5);
    if (c.crashed_ours || c.broken)
        fail_msg("%s: %d crash(es), %d invariant failure(s); first: %s", target, c.crashed_ours,
                 c.broken, c.first_failure);
    if (c.crashed_hdf5) {
        vgtest_skip("libhdf5 still crashes on %d damaged file(s) (third-party, see "
                    "/tmp/findings.md); first: %s",
                    c.crashed_hdf5, c.first_hdf5);
    }
}

static void replay_config(void **state)
{
    (void)state;
    replay_target("fuzz_config", fuzz_config_one, 1);
}

static void replay_lut(void **state)
{
    (void)state;
    replay_target("fuzz_lut", fuzz_lut_one, 1);
}

static void replay_safetensors(void **state)
{
    (void)state;
    replay_target("fuzz_safetensors", fuzz_safetensors_one, 1);
}

static void replay_golden(void **state)
{
    (void)state;
    replay_target("fuzz_golden", fuzz_golden_one, 1);
}

/* fuzz_lut's first finding, written out: exporting a device with nothing
 * cached must write a valid, empty LUT (runtime/lut.c sorted a NULL array:
 * undefined behaviour that UBSan stops on under `make sanitize`). */
static void empty_cache_exports_an_empty_lut(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[1024];
    snprintf(path, sizeof path, "%s/empty.lut", dir);
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_trace_set(dev, NULL);
    assert_int_equal(vg_lut_export(dev, path, 0), VG_OK);
    size_t len = 0;
    char *text = fuzz_read_file(path, &len);
    assert_non_null(text);
    /* the header line, then the checksum of the header alone, nothing else */
    char want[128];
    snprintf(want, sizeof want, "voltgate-lut 2\nchecksum fnv1a64=%016llx\n",
             (unsigned long long)fuzz_fnv1a64("voltgate-lut 2\n", 15));
    assert_string_equal(text, want);
    free(text);
    vg_device *again = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &again), VG_OK);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(again, path, 0, &r), VG_OK);
    assert_int_equal(r.applied, 0);
    vg_device_close(again);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(replay_config),
        cmocka_unit_test(replay_lut),
        cmocka_unit_test(replay_safetensors),
        cmocka_unit_test(replay_golden),
        cmocka_unit_test(empty_cache_exports_an_empty_lut),
    };
    return VGTEST_MAIN("fuzz_regressions", tests);
}
