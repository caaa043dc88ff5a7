/*
 * vg_golden_write when the disk says no, and after killed writers:
 *   - a folder that is a file, a missing folder, /dev/full, RLIMIT_FSIZE:
 *     VG_ERR_IO with one line naming the file and the OS's reason
 *     (strerror), never HDF5's raw text (timestamps, descriptors, buffer
 *     addresses), the old target untouched and no temporary left;
 *   - a failed write leaves the process able to exit cleanly (HDF5 ran its
 *     clean-up at exit on a file whose close had failed, and crashed);
 *   - temporaries `<file>.tmp.<pid>` of writers that died (SIGKILL) are
 *     removed by the next write; those of live processes and other names
 *     are not.
 */
#include "vgtest.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "voltgate/golden.h"

typedef struct fixture {
    char *dir;
    vg_golden_file f;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = vgtest_mkdtemp();
    static const int32_t ms[] = {1, 3};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_FP8;
    a.path = VG_PATH_DENSE;
    a.n = 64;
    a.k = 128;
    a.groups = 1;
    a.seed = 11;
    a.m_list = ms;
    a.m_count = 2;
    if (vg_golden_generate(&a, &fx->f) != VG_OK)
        return -1;
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    vg_golden_free(&fx->f);
    vgtest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static int has_text(const char *path, const char *text)
{
    char buf[256] = "";
    FILE *fp = fopen(path, "r");
    if (!fp)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    buf[n] = '\0';
    fclose(fp);
    return strcmp(buf, text) == 0;
}

/* One clean line: names `path`, holds `why`, none of HDF5's raw details. */
static int clean_refusal(vg_status st, const char *path, const char *why)
{
    const char *m = vg_last_error();
    fprintf(stderr, "  -> %s: %s\n", vg_status_str(st), m);
    return st == VG_ERR_IO && strstr(m, path) && strstr(m, why) && !strchr(m, '\n') &&
           !strstr(m, "time =") && !strstr(m, "0x") && !strstr(m, "HDF5 call failed") &&
           !strstr(m, "file descriptor");
}

static void test_folder_is_a_file(void **state)
{
    fixture *fx = *state;
    char plain[600], target[700];
    snprintf(plain, sizeof plain, "%s/plain", fx->dir);
    write_text(plain, "x");
    snprintf(target, sizeof target, "%s/case.h5", plain);
    assert_true(clean_refusal(vg_golden_write(target, &fx->f), target, "Not a directory"));
}

static void test_missing_folder(void **state)
{
    fixture *fx = *state;
    char target[700];
    snprintf(target, sizeof target, "%s/no/such/case.h5", fx->dir);
    assert_true(clean_refusal(vg_golden_write(target, &fx->f), target,
                              "No such file or directory"));
}

/* In a child that ends through exit() (so that every library's clean-up at
 * exit runs): make the write fail with ENOSPC (the temporary's name leads
 * to /dev/full) or EFBIG (RLIMIT_FSIZE), check the refusal, the old target
 * and the temporary.  Returns the child's exit code, 100 + signal. */
static int failing_write_child(fixture *fx, int efbig)
{
    char target[600];
    snprintf(target, sizeof target, "%s/case.h5", fx->dir);
    write_text(target, "old\n");
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGSEGV, SIG_DFL);
        signal(SIGABRT, SIG_DFL);
        char tmp[700];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
        if (efbig) {
            signal(SIGXFSZ, SIG_IGN);
            struct rlimit rl = {4096, 4096};
            if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
                exit(10);
        } else if (symlink("/dev/full", tmp) != 0) {
            exit(11);
        }
        vg_status st = vg_golden_write(target, &fx->f);
        if (!clean_refusal(st, target, efbig ? "File too large" : "No space left on device"))
            exit(1);
        if (!has_text(target, "old\n"))
            exit(2);
        struct stat sb;
        if (lstat(tmp, &sb) == 0)
            exit(3);
        exit(0);   /* not _exit: the clean-up at exit must survive the failure */
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

static void test_no_space(void **state)
{
    int code = failing_write_child(*state, 0);
    if (code)
        fail_msg("check %d failed (1 message, 2 old file changed, 3 temporary left, >100 signal)",
                 code);
}

static void test_file_too_large(void **state)
{
    int code = failing_write_child(*state, 1);
    if (code)
        fail_msg("check %d failed (1 message, 2 old file changed, 3 temporary left, >100 signal)",
                 code);
}

/* A child that creates its temporary as vg_golden_write names it, writes a
 * little and dies by SIGKILL; returns its (reaped, so dead) pid. */
static pid_t killed_writer(const char *target)
{
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char tmp[700];
        snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
        int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0 && write(fd, "\x89HDF\r\n", 6) == 6)
            kill(getpid(), SIGKILL);
        _exit(1);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    return pid;
}

static void test_stale_temporaries_removed(void **state)
{
    fixture *fx = *state;
    char target[600], other[600], p[800];
    snprintf(target, sizeof target, "%s/case.h5", fx->dir);
    snprintf(other, sizeof other, "%s/other.h5", fx->dir);
    pid_t dead1 = killed_writer(target), dead2 = killed_writer(target);
    pid_t dead_other = killed_writer(other);
    char stale1[800], stale2[800], stale_other[800];
    snprintf(stale1, sizeof stale1, "%s.tmp.%ld", target, (long)dead1);
    snprintf(stale2, sizeof stale2, "%s.tmp.%ld", target, (long)dead2);
    snprintf(stale_other, sizeof stale_other, "%s.tmp.%ld", other, (long)dead_other);
    assert_int_equal(access(stale1, F_OK), 0);
    assert_int_equal(access(stale2, F_OK), 0);

    /* a live process's temporary (a sleeping child), a name that is not a
     * pid, and a symbolic link with a dead pid's name stay */
    pid_t live = fork();
    assert_true(live >= 0);
    if (live == 0) {
        pause();
        _exit(0);
    }
    char live_tmp[800], not_pid[800], link_tmp[800];
    snprintf(live_tmp, sizeof live_tmp, "%s.tmp.%ld", target, (long)live);
    write_text(live_tmp, "live writer\n");
    snprintf(not_pid, sizeof not_pid, "%s.tmp.12ab", target);
    write_text(not_pid, "x");
    pid_t dead3 = killed_writer(other);  /* a pid surely not alive, for the link's name */
    snprintf(p, sizeof p, "%s.tmp.%ld", other, (long)dead3);
    unlink(p);
    snprintf(link_tmp, sizeof link_tmp, "%s.tmp.%ld", target, (long)dead3);
    assert_int_equal(symlink("/nonexistent", link_tmp), 0);

    assert_int_equal(vg_golden_write(target, &fx->f), VG_OK);
    int gone1 = access(stale1, F_OK) != 0, gone2 = access(stale2, F_OK) != 0;
    int kept_live = access(live_tmp, F_OK) == 0, kept_other = access(stale_other, F_OK) == 0;
    int kept_not_pid = access(not_pid, F_OK) == 0;
    struct stat sb;
    int kept_link = lstat(link_tmp, &sb) == 0;
    kill(live, SIGKILL);
    waitpid(live, NULL, 0);
    print_message("  dead writers' temporaries removed: %d %d; kept: live %d, other file %d, "
                  "not a pid %d, symlink %d\n",
                  gone1, gone2, kept_live, kept_other, kept_not_pid, kept_link);
    assert_true(gone1 && gone2);
    assert_true(kept_live && kept_other && kept_not_pid && kept_link);

    /* the new file is whole */
    vg_golden_file g;
    if (vg_golden_read(target, &g) != VG_OK)
        fail_msg("%s", vg_last_error());
    vg_golden_free(&g);
}

int main(int argc, char **argv)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_folder_is_a_file),
        T(test_missing_folder),
        T(test_no_space),
        T(test_file_too_large),
        T(test_stale_temporaries_removed),
    };
    return VGTEST_MAIN("golden_write", tests);
}
