/*
 * Crash safety of the two file writers: vg_lut_export (runtime/lut_export.c) and
 * vg_golden_write (golden/golden_write.c).  Both promise "written to a
 * temporary file and renamed": a crash at any point leaves the complete old
 * file or the complete new one, never a mix, never a torn file.
 *
 * The kill tests: a child process loops rewriting the target with the new
 * content; the parent SIGKILLs it after a random delay within the first
 * write (even rounds) or within the write after the first has returned
 * (odd rounds), repeated KILL_ROUNDS times.  Afterwards the target must equal,
 * byte for byte, the old or the new file (both written once beforehand to
 * other names by the same writer: both writers are deterministic), and must
 * parse.  The rounds must see both outcomes, or the test proves nothing.
 *
 * Then the refusals: a target whose folder is a regular file (ENOTDIR), a
 * read-only folder (chmod as a user; the immutable flag as root, who ignores
 * modes), a full disk (/dev/full behind the temporary name, a file-size
 * limit, and a 64 KiB tmpfs when we may mount one): each gives a clear
 * VG_ERR_IO naming the file, and the old file is untouched.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "vgtest.h"
#include "voltgate/golden.h"
#include "voltgate/runtime.h"

#define KILL_ROUNDS 50

/* ---- small file helpers ------------------------------------------------------ */

/* In a forked child: cmocka's handlers for crash signals would catch a
 * crash there and carry on running the suite inside the child.  A child
 * must die of its crash, so that the parent sees the signal. */
static void child_default_signals(void)
{
    const int sigs[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGSYS};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
        signal(sigs[i], SIG_DFL);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)n, f);
    fclose(f);
    buf[got] = '\0';
    *len = got;
    return buf;
}

static void write_all(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static int same_bytes(const char *a, size_t la, const char *b, size_t lb)
{
    return la == lb && memcmp(a, b, la) == 0;
}

/* Files in dir whose name starts with prefix (leftover temporaries). */
static int count_prefixed(const char *dir, const char *prefix)
{
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "ls -1 '%s' | grep -c '^%s' 2>/dev/null", dir, prefix);
    FILE *p = popen(cmd, "r");
    int n = 0;
    if (p) {
        if (fscanf(p, "%d", &n) != 1)
            n = 0;
        pclose(p);
    }
    return n;
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* ---- LUT fixtures -------------------------------------------------------------- */

/* FNV-1a 64 from its definition, to build LUT files without the exporter. */
static uint64_t fnv1a64(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A device whose cache holds `count` entries (imported from a LUT built
 * here: fp8 dense shapes n = base+i, one row each, on a cpu plan). */
static vg_device *device_with_entries(const char *dir, int base, int count)
{
    size_t cap = (size_t)count * 160 + 128, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "voltgate-lut 1\n");
    for (int i = 0; i < count; i++)
        len += (size_t)snprintf(text + len, cap - len,
                                "entry arch=0 policy=00000000000000%02x family=fp8 path=dense "
                                "n=%d k=128 groups=1 rows=%d plan=cpu.dense.m4n64k128.sk1 "
                                "us=%d.5\n",
                                base & 0xff, base + i, 1 + i % 16, i % 97);
    uint64_t sum = fnv1a64(text, len);
    len += (size_t)snprintf(text + len, cap - len, "checksum fnv1a64=%016llx\n",
                            (unsigned long long)sum);
    char path[1024];
    snprintf(path, sizeof path, "%s/seed-%d.lut", dir, base);
    write_all(path, text, len);
    free(text);
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_trace_set(dev, NULL);
    vg_lut_report r;
    vg_status st = vg_lut_import(dev, path, 0, &r);
    if (st != VG_OK)
        fail_msg("import of the fixture: %s", vg_last_error());
    assert_int_equal(r.applied, (uint64_t)count);
    unlink(path);
    return dev;
}

static int lut_parses(const char *path)
{
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_trace_set(dev, NULL);
    vg_lut_report r;
    vg_status st = vg_lut_import(dev, path, 0, &r);
    vg_device_close(dev);
    return st == VG_OK;
}

/* ---- the kill loop, shared by both writers ------------------------------------- */

typedef vg_status (*write_fn)(const char *path, void *user);

typedef struct kill_result {
    int saw_old, saw_new, torn, unparsable, missing;
    int leftover_tmp;
    double write_ms;
} kill_result;

static void kill_loop(const char *dir, const char *target, write_fn fn, void *user,
                      const char *old_bytes, size_t old_len, const char *new_bytes,
                      size_t new_len, int (*parses)(const char *), kill_result *res)
{
    memset(res, 0, sizeof *res);
    /* how long one write takes, to spread the kill over it */
    char probe[1100];
    snprintf(probe, sizeof probe, "%s.probe", target);
    uint64_t t0 = now_us();
    for (int i = 0; i < 3; i++)
        assert_int_equal(fn(probe, user), VG_OK);
    uint64_t per_write = (now_us() - t0) / 3 + 1;
    res->write_ms = (double)per_write / 1000.0;
    unlink(probe);

    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    print_message("kill loop on %s: one write takes %.2f ms, seed %u\n", target, res->write_ms,
                  seed);
    for (int round = 0; round < KILL_ROUNDS; round++) {
        write_all(target, old_bytes, old_len);
        fflush(NULL);
        /* The child says on a pipe when each write has returned: the odd
         * rounds wait for the first one instead of guessing from the probe's
         * timing (a loaded machine made the child slower than the probe, so
         * a timed wait could kill every child before its first rename). */
        int done[2];
        assert_int_equal(pipe(done), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            child_default_signals();
            close(done[0]);
            for (;;)
                if (fn(target, user) == VG_OK && write(done[1], "w", 1) != 1)
                    _exit(1);
        }
        close(done[1]);
        /* Even rounds: anywhere in the first write, most often before its
         * rename (the old file must survive).  Odd rounds: anywhere in the
         * second write, after the first rename (a rewrite must keep a whole
         * new file). */
        if (round & 1) {
            struct pollfd pf = {.fd = done[0], .events = POLLIN};
            char w;
            assert_int_equal(poll(&pf, 1, 30000), 1); /* 30 s: the writer is stuck */
            assert_int_equal(read(done[0], &w, 1), 1);
        }
        usleep((useconds_t)(rand_r(&seed) % (per_write + 1)));
        kill(pid, SIGKILL);
        int status;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        close(done[0]);
        size_t len = 0;
        char *now = read_all(target, &len);
        if (!now) {
            res->missing++;
            continue;
        }
        if (same_bytes(now, len, old_bytes, old_len))
            res->saw_old++;
        else if (same_bytes(now, len, new_bytes, new_len))
            res->saw_new++;
        else
            res->torn++;
        if (!parses(target))
            res->unparsable++;
        free(now);
    }
    const char *base = strrchr(target, '/') + 1;
    char prefix[300];
    snprintf(prefix, sizeof prefix, "%s.tmp.", base);
    res->leftover_tmp = count_prefixed(dir, prefix);
    print_message("  %d rounds: old %d, new %d, torn %d, unparsable %d, missing %d; "
                  "%d temporaries left behind by killed writers\n",
                  KILL_ROUNDS, res->saw_old, res->saw_new, res->torn, res->unparsable,
                  res->missing, res->leftover_tmp);
}

static vg_status lut_write(const char *path, void *user)
{
    return vg_lut_export(user, path, 0);
}

static void lut_export_killed_keeps_old_or_new(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char target[1024], oldp[1024], newp[1024];
    snprintf(target, sizeof target, "%s/dispatch.lut", dir);
    snprintf(oldp, sizeof oldp, "%s/old.lut", dir);
    snprintf(newp, sizeof newp, "%s/new.lut", dir);
    /* old: 1000 entries; new: 3000 other entries (about 350 KB, so a write
     * takes long enough to be killed in the middle) */
    vg_device *old_dev = device_with_entries(dir, 1, 1000);
    vg_device *new_dev = device_with_entries(dir, 2, 3000);
    assert_int_equal(vg_lut_export(old_dev, oldp, 0), VG_OK);
    assert_int_equal(vg_lut_export(new_dev, newp, 0), VG_OK);
    size_t ol, nl;
    char *ob = read_all(oldp, &ol), *nb = read_all(newp, &nl);
    assert_non_null(ob);
    assert_non_null(nb);
    assert_false(same_bytes(ob, ol, nb, nl));
    assert_true(lut_parses(oldp));
    assert_true(lut_parses(newp));

    kill_result r;
    kill_loop(dir, target, lut_write, new_dev, ob, ol, nb, nl, lut_parses, &r);
    assert_int_equal(r.torn, 0);
    assert_int_equal(r.unparsable, 0);
    assert_int_equal(r.missing, 0);
    assert_true(r.saw_old > 0);
    assert_true(r.saw_new > 0);
    free(ob);
    free(nb);
    vg_device_close(old_dev);
    vg_device_close(new_dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* The harness itself: a writer that overwrites in place (what the two
 * writers must not do) is caught tearing the file. */
typedef struct naive {
    const char *bytes;
    size_t len;
} naive;

static vg_status naive_write(const char *path, void *user)
{
    const naive *n = user;
    FILE *f = fopen(path, "wb");
    if (!f)
        return VG_ERR_IO;
    for (size_t at = 0; at < n->len; at += 4096) {
        size_t chunk = n->len - at < 4096 ? n->len - at : 4096;
        fwrite(n->bytes + at, 1, chunk, f);
        fflush(f);
        usleep(20);
    }
    fclose(f);
    return VG_OK;
}

static void harness_catches_an_in_place_writer(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char target[1024], oldp[1024], newp[1024];
    snprintf(target, sizeof target, "%s/dispatch.lut", dir);
    snprintf(oldp, sizeof oldp, "%s/old.lut", dir);
    snprintf(newp, sizeof newp, "%s/new.lut", dir);
    vg_device *old_dev = device_with_entries(dir, 7, 500);
    vg_device *new_dev = device_with_entries(dir, 8, 1500);
    assert_int_equal(vg_lut_export(old_dev, oldp, 0), VG_OK);
    assert_int_equal(vg_lut_export(new_dev, newp, 0), VG_OK);
    size_t ol, nl;
    char *ob = read_all(oldp, &ol), *nb = read_all(newp, &nl);
    naive n = {nb, nl};
    kill_result r;
    kill_loop(dir, target, naive_write, &n, ob, ol, nb, nl, lut_parses, &r);
    assert_true(r.torn + r.unparsable > 0);
    free(ob);
    free(nb);
    vg_device_close(old_dev);
    vg_device_close(new_dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* ---- golden fixtures ------------------------------------------------------------- */

static void golden_make(uint64_t seed, vg_golden_file *f)
{
    static const int32_t ms[] = {1, 4};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_FP8;
    a.path = VG_PATH_DENSE;
    a.n = 128;
    a.k = 256;
    a.groups = 1;
    a.seed = seed;
    a.m_list = ms;
    a.m_count = 2;
    vg_status st = vg_golden_generate(&a, f);
    if (st != VG_OK)
        fail_msg("vg_golden_generate: %s", vg_last_error());
}

static vg_status golden_write(const char *path, void *user)
{
    return vg_golden_write(path, user);
}

static int golden_parses(const char *path)
{
    vg_golden_file f;
    vg_status st = vg_golden_read(path, &f);
    if (st == VG_OK)
        vg_golden_free(&f);
    return st == VG_OK;
}

static void golden_write_killed_keeps_old_or_new(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char target[1024], oldp[1024], newp[1024];
    snprintf(target, sizeof target, "%s/case.h5", dir);
    snprintf(oldp, sizeof oldp, "%s/old.h5", dir);
    snprintf(newp, sizeof newp, "%s/new.h5", dir);
    vg_golden_file fo, fn;
    golden_make(1, &fo);
    golden_make(2, &fn);
    assert_int_equal(vg_golden_write(oldp, &fo), VG_OK);
    assert_int_equal(vg_golden_write(newp, &fn), VG_OK);
    size_t ol, nl;
    char *ob = read_all(oldp, &ol), *nb = read_all(newp, &nl);
    assert_false(same_bytes(ob, ol, nb, nl));
    assert_true(golden_parses(oldp));

    kill_result r;
    kill_loop(dir, target, golden_write, &fn, ob, ol, nb, nl, golden_parses, &r);
    assert_int_equal(r.torn, 0);
    assert_int_equal(r.unparsable, 0);
    assert_int_equal(r.missing, 0);
    assert_true(r.saw_old > 0);
    assert_true(r.saw_new > 0);
    free(ob);
    free(nb);
    vg_golden_free(&fo);
    vg_golden_free(&fn);
    vgtest_rmtree(dir);
    free(dir);
}

/* ---- refusals: read-only folder, folder that is a file, full disk ---------------- */

/* Runs both writers at `path`; both must fail with VG_ERR_IO naming the
 * target and, when `why` is given, the errno text; nothing may appear. */
static void both_refuse(vg_device *dev, const vg_golden_file *g, const char *dir,
                        const char *lut_path, const char *h5_path, const char *why)
{
    vg_status st = vg_lut_export(dev, lut_path, 0);
    print_message("  lut export: %s: %s\n", vg_status_str(st), vg_last_error());
    assert_int_equal(st, VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), lut_path));
    if (why)
        assert_non_null(strstr(vg_last_error(), why));
    assert_null(strchr(vg_last_error(), '\n'));

    st = vg_golden_write(h5_path, g);
    print_message("  golden write: %s: %s\n", vg_status_str(st), vg_last_error());
    assert_int_equal(st, VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), h5_path));
    assert_null(strchr(vg_last_error(), '\n'));
    (void)dir;
}

static void folder_is_a_file(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char file[1024], lut[1100], h5[1100];
    snprintf(file, sizeof file, "%s/plain", dir);
    write_all(file, "x", 1);
    snprintf(lut, sizeof lut, "%s/dispatch.lut", file);
    snprintf(h5, sizeof h5, "%s/case.h5", file);
    vg_device *dev = device_with_entries(dir, 3, 10);
    vg_golden_file g;
    golden_make(3, &g);
    both_refuse(dev, &g, dir, lut, h5, "Not a directory");
    vg_golden_free(&g);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* chmod 0555 stops a user; root ignores modes, so as root the folder gets
 * the immutable attribute (ext4, xfs, btrfs, tmpfs have it). */
static int make_read_only(const char *dir, int on)
{
    if (geteuid() != 0)
        return chmod(dir, on ? 0555 : 0755) == 0;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0)
        return 0;
    int flags = 0, ok = ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    if (ok) {
        flags = on ? (flags | FS_IMMUTABLE_FL) : (flags & ~FS_IMMUTABLE_FL);
        ok = ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    }
    close(fd);
    return ok;
}

static void read_only_folder(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char ro[1024], lut[1100], h5[1100];
    snprintf(ro, sizeof ro, "%s/ro", dir);
    assert_int_equal(mkdir(ro, 0755), 0);
    snprintf(lut, sizeof lut, "%s/dispatch.lut", ro);
    snprintf(h5, sizeof h5, "%s/case.h5", ro);
    /* an old LUT in place: a refused export must leave it as it was */
    vg_device *dev = device_with_entries(dir, 4, 10);
    vg_device *old = device_with_entries(dir, 5, 5);
    assert_int_equal(vg_lut_export(old, lut, 0), VG_OK);
    size_t before_len;
    char *before = read_all(lut, &before_len);
    vg_golden_file g;
    golden_make(4, &g);
    if (!make_read_only(ro, 1)) {
        vg_golden_free(&g);
        free(before);
        vg_device_close(dev);
        vg_device_close(old);
        vgtest_rmtree(dir);
        free(dir);
        vgtest_skip("cannot make a read-only folder here (root without the immutable "
                    "attribute)");
    }
    both_refuse(dev, &g, dir, lut, h5, geteuid() == 0 ? "not permitted" : "ermission denied");
    make_read_only(ro, 0);
    size_t after_len;
    char *after = read_all(lut, &after_len);
    assert_non_null(after);
    assert_true(same_bytes(before, before_len, after, after_len));
    assert_int_equal(access(h5, F_OK), -1);
    free(before);
    free(after);
    vg_golden_free(&g);
    vg_device_close(dev);
    vg_device_close(old);
    vgtest_rmtree(dir);
    free(dir);
}

/* A full disk, three ways, each in a child so that limits stay there. */
typedef enum { FULL_DEV_FULL, FULL_FSIZE } full_kind;

/* In the child: make the next write of this writer fail, run it, report
 * 0 when it failed cleanly (VG_ERR_IO, message naming the target and the
 * errno text, target untouched, temporary removed). */
static int full_child(full_kind kind, int golden, const char *dir, const char *target,
                      vg_device *dev, const vg_golden_file *g, const char *old, size_t old_len)
{
    char tmp[1200];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", target, (long)getpid());
    const char *why = "No space left on device";
    if (kind == FULL_DEV_FULL) {
        /* the writer opens <target>.tmp.<pid> without O_NOFOLLOW: make that name
         * lead to /dev/full, where every write fails with ENOSPC */
        if (symlink("/dev/full", tmp) != 0)
            return 10;
    } else {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            return 11;
        why = "too large";
    }
    vg_status st = golden ? vg_golden_write(target, g) : vg_lut_export(dev, target, 0);
    fprintf(stderr, "    %s, %s: %s: %s\n", golden ? "golden write" : "lut export",
            kind == FULL_DEV_FULL ? "/dev/full" : "RLIMIT_FSIZE 4096", vg_status_str(st),
            vg_last_error());
    if (st != VG_ERR_IO)
        return 1;
    if (!strstr(vg_last_error(), target) && !strstr(vg_last_error(), tmp))
        return 2;
    if (!golden && !strstr(vg_last_error(), why))
        return 3;
    size_t len = 0;
    char *now = read_all(target, &len);
    int same = now && same_bytes(now, len, old, old_len);
    free(now);
    if (!same)
        return 4;
    struct stat sb;
    /* (a writer that could not even create its temporary is not asked to
     * remove our link to /dev/full) */
    if (lstat(tmp, &sb) == 0 && !(kind == FULL_DEV_FULL && S_ISLNK(sb.st_mode) &&
                                  strstr(vg_last_error(), "cannot create")))
        return 5;   /* the failed temporary was left behind */
    unlink(tmp);
    (void)dir;
    return 0;
}

static void full_disk(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char lut[1100], h5[1100];
    snprintf(lut, sizeof lut, "%s/dispatch.lut", dir);
    snprintf(h5, sizeof h5, "%s/case.h5", dir);
    vg_device *dev = device_with_entries(dir, 6, 3000);   /* ~350 KB of LUT */
    vg_golden_file g;
    golden_make(5, &g);
    write_all(lut, "old lut\n", 8);
    write_all(h5, "old h5\n", 7);
    const char *names[] = {"/dev/full", "RLIMIT_FSIZE"};
    int failures = 0;
    for (int kind = FULL_DEV_FULL; kind <= FULL_FSIZE; kind++)
        for (int golden = 0; golden <= 1; golden++) {
            fflush(NULL);
            pid_t pid = fork();
            assert_true(pid >= 0);
            /* exit(), not _exit(): HDF5's clean-up at exit must survive too */
            if (pid == 0 && (child_default_signals(), 1))
                exit(full_child((full_kind)kind, golden, dir, golden ? h5 : lut, dev, &g,
                                golden ? "old h5\n" : "old lut\n", golden ? 7 : 8));
            int status;
            waitpid(pid, &status, 0);
            int code = WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
            if (code) {
                print_error("%s %s: check %d failed (1 status, 2 message names no file, "
                            "3 no errno text, 4 old file changed, 5 temporary left, >100 "
                            "signal)\n",
                            golden ? "golden write" : "lut export", names[kind], code);
                failures++;
            }
        }
    /* the real thing where we may mount: a 64 KiB tmpfs */
    char mnt[1100];
    snprintf(mnt, sizeof mnt, "%s/small", dir);
    assert_int_equal(mkdir(mnt, 0755), 0);
    if (geteuid() == 0 && mount("tmpfs", mnt, "tmpfs", 0, "size=64k") == 0) {
        char l2[1200], h2[1200];
        snprintf(l2, sizeof l2, "%s/dispatch.lut", mnt);
        snprintf(h2, sizeof h2, "%s/case.h5", mnt);
        vg_status st = vg_lut_export(dev, l2, 0);
        print_message("  64 KiB tmpfs: lut export: %s: %s\n", vg_status_str(st), vg_last_error());
        if (st != VG_ERR_IO || !strstr(vg_last_error(), "No space left"))
            failures++;
        if (access(l2, F_OK) == 0)
            failures++;
        /* the golden write in a child that ends through exit(), so that
         * HDF5's own clean-up at exit runs too: a failed close must not
         * leave a file behind in HDF5 that crashes the process later */
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            child_default_signals();
            vg_status cst = vg_golden_write(h2, &g);
            fprintf(stderr, "  64 KiB tmpfs: golden write: %s: %s\n", vg_status_str(cst),
                    vg_last_error());
            exit(cst != VG_ERR_IO ? 1 : access(h2, F_OK) == 0 ? 2 : 0);
        }
        int status;
        waitpid(pid, &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            print_error("  64 KiB tmpfs: golden write: %s %d (1 status, 2 file appeared; a "
                        "signal after the write returned = crash at exit)\n",
                        WIFEXITED(status) ? "check" : "killed by signal",
                        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
            failures++;
        }
        /* nothing left on the small disk: the temporaries were removed */
        int left = count_prefixed(mnt, "");
        if (left) {
            print_error("  %d file(s) left on the full tmpfs\n", left);
            failures++;
        }
        umount2(mnt, MNT_DETACH);
    } else {
        print_message("  (no 64 KiB tmpfs: not root or mount not permitted; /dev/full and "
                      "RLIMIT_FSIZE only)\n");
    }
    assert_int_equal(failures, 0);
    vg_golden_free(&g);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(harness_catches_an_in_place_writer),
        cmocka_unit_test(lut_export_killed_keeps_old_or_new),
        cmocka_unit_test(golden_write_killed_keeps_old_or_new),
        cmocka_unit_test(folder_is_a_file),
        cmocka_unit_test(read_only_folder),
        cmocka_unit_test(full_disk),
    };
    return VGTEST_MAIN("crash_safety", tests);
}
