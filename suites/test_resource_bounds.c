/*
 * Resource bounds: inputs that claim absurd sizes are refused with a clear
 * error BEFORE any large allocation.
 *
 *   - LUT (runtime/lut_import.c, 64 MiB cap) and kernel_config file
 *     (runtime/config.c vg_config_load, 16 MiB cap): a sparse file just
 *     over the cap;
 *   - golden files (golden/golden_read.c, VG_GOLDEN_MAX_*): attributes and
 *     datasets claiming shapes of terabytes (unwritten chunked datasets, so
 *     the file itself stays a few KB), a recipe weight of 2^40 elements, a
 *     case of 2^20 rows;
 *   - safetensors (golden/safetensors.c): a header length beyond the file,
 *     a tensor whose offsets run past the data, a shape product overflow.
 *
 * "Before any large allocation" is checked, not assumed: each refusal runs
 * in a child whose address space is capped (RLIMIT_AS) at what it uses now
 * plus ALLOC_ALLOWANCE_MB, so a reader that allocates first and checks
 * later fails with VG_ERR_NO_MEMORY (or dies) instead of VG_ERR_LIMIT /
 * VG_ERR_FORMAT.  Under ASan/TSan (which reserve terabytes of shadow) the
 * cap cannot be set; the statuses are still checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "safetensors.h"
#include "vgtest.h"
#include "voltgate/golden.h"
#include "voltgate/runtime.h"

#define ALLOC_ALLOWANCE_MB 8

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define CAN_CAP_MEMORY 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define CAN_CAP_MEMORY 0
#endif
#endif
#ifndef CAN_CAP_MEMORY
#define CAN_CAP_MEMORY 1
#endif

/* ---- the bounded child ------------------------------------------------------------ */

typedef vg_status (*bounded_fn)(const char *path, void *user);

/* Runs fn(path) in a child under the memory cap.  Returns the vg_status it
 * returned (or 100 + signal), and its message in msg. */
static int bounded(bounded_fn fn, const char *path, void *user, char *msg, size_t msg_size,
                   double *seconds)
{
    int pipefd[2];
    assert_int_equal(pipe(pipefd), 0);
    fflush(NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(pipefd[0]);
        if (CAN_CAP_MEMORY) {
            /* current virtual size + the allowance */
            long pages = 0;
            FILE *f = fopen("/proc/self/statm", "r");
            if (f) {
                if (fscanf(f, "%ld", &pages) != 1)
                    pages = 0;
                fclose(f);
            }
            /* VG_BOUNDS_ALLOWANCE_MB overrides the allowance (to see what a
             * reader does once it may allocate more) */
            const char *env = getenv("VG_BOUNDS_ALLOWANCE_MB");
            rlim_t allow = env ? (rlim_t)strtoul(env, NULL, 10) : ALLOC_ALLOWANCE_MB;
            rlim_t cap = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + allow * 1024 * 1024;
            struct rlimit rl = {cap, cap};
            if (pages <= 0 || setrlimit(RLIMIT_AS, &rl) != 0)
                _exit(99);
        }
        vg_status st = fn(path, user);
        const char *m = vg_last_error();
        ssize_t w = write(pipefd[1], m, strlen(m));
        (void)w;
        close(pipefd[1]);
        _exit((int)st);
    }
    close(pipefd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < msg_size && (r = read(pipefd[0], msg + got, msg_size - 1 - got)) > 0)
        got += (size_t)r;
    msg[got] = '\0';
    close(pipefd[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    *seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 99)
        fail_msg("could not set RLIMIT_AS in the child");
    return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

/* Expects a refusal with one of the two statuses, a one-line message that
 * contains `must_say`, within a second, under the memory cap. */
static void expect_refusal(const char *what, bounded_fn fn, const char *path, void *user,
                           vg_status want, vg_status also_ok, const char *must_say)
{
    char msg[2048];
    double secs = 0;
    int got = bounded(fn, path, user, msg, sizeof msg, &secs);
    print_message("  %-44s -> %s in %.3f s%s: %s\n", what,
                  got < VG_STATUS_COUNT ? vg_status_str((vg_status)got) : "killed", secs,
                  CAN_CAP_MEMORY ? "" : " (no memory cap under a sanitizer)", msg);
    if (got != (int)want && got != (int)also_ok)
        fail_msg("%s: status %d (%s), want %s%s", what, got,
                 got < VG_STATUS_COUNT ? vg_status_str((vg_status)got) : "killed by a signal",
                 vg_status_str(want),
                 got == VG_ERR_NO_MEMORY ? ": it allocated before checking the size" : "");
    if (!msg[0] || strchr(msg, '\n'))
        fail_msg("%s: message empty or not one line: '%s'", what, msg);
    if (must_say && !strstr(msg, must_say))
        fail_msg("%s: message does not say '%s': %s", what, must_say, msg);
    if (secs > 2.0)
        fail_msg("%s: took %.2f s to refuse", what, secs);
}

/* A sparse file of `bytes` (no disk used), starting with `head`. */
static void sparse_file(const char *path, const char *head, off_t bytes)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, head, strlen(head)), (ssize_t)strlen(head));
    assert_int_equal(ftruncate(fd, bytes), 0);
    close(fd);
}

/* ---- LUT and kernel_config --------------------------------------------------------- */

/* user: a device opened before the cap (it holds a 16 MiB workspace). */
static vg_status lut_import(const char *path, void *user)
{
    vg_lut_report r;
    return vg_lut_import(user, path, 0, &r);
}

static vg_status config_load(const char *path, void *user)
{
    (void)user;
    vg_config *cfg = NULL;
    vg_status st = vg_config_load(path, &cfg);
    vg_config_free(cfg);
    return st;
}

static void lut_over_the_cap(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[1024];
    snprintf(path, sizeof path, "%s/huge.lut", dir);
    /* 64 MiB + 1: the documented cap is 64 MiB (LUT_MAX_BYTES) */
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_trace_set(dev, NULL);
    sparse_file(path, "voltgate-lut 1\n", ((off_t)64 << 20) + 1);
    expect_refusal("LUT of 64 MiB + 1 byte", lut_import, path, dev, VG_ERR_LIMIT, VG_ERR_LIMIT,
                   "larger than");
    /* 1 TiB claimed by the file system (sparse): must not even be read */
    sparse_file(path, "voltgate-lut 1\n", (off_t)1 << 40);
    expect_refusal("LUT of 1 TiB (sparse)", lut_import, path, dev, VG_ERR_LIMIT, VG_ERR_LIMIT,
                   "larger than");
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

static void config_over_the_cap(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[1024];
    snprintf(path, sizeof path, "%s/huge.json", dir);
    /* 16 MiB + 1 of JSON (spaces after the object are valid JSON) */
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    char block[65536];
    memset(block, ' ', sizeof block);
    assert_int_equal(write(fd, "{}", 2), 2);
    for (int i = 0; i < 256; i++)
        assert_int_equal(write(fd, block, sizeof block), (ssize_t)sizeof block);
    close(fd);
    expect_refusal("kernel_config of 16 MiB + 2 bytes", config_load, path, NULL, VG_ERR_LIMIT,
                   VG_ERR_LIMIT, "16 MiB");
    sparse_file(path, "{}", (off_t)1 << 40);
    expect_refusal("kernel_config of 1 TiB (sparse)", config_load, path, NULL, VG_ERR_LIMIT,
                   VG_ERR_LIMIT, "16 MiB");
    vgtest_rmtree(dir);
    free(dir);
}

/* ---- golden files ---------------------------------------------------------------------- */

static vg_status golden_read(const char *path, void *user)
{
    (void)user;
    vg_golden_file f;
    vg_status st = vg_golden_read(path, &f);
    if (st == VG_OK)
        vg_golden_free(&f);
    return st;
}

/* A small valid file to edit: fp8 dense 16 x 32, one case of M = 2. */
static void golden_base(const char *path, int recipe)
{
    static const int32_t ms[] = {2};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_FP8;
    a.path = VG_PATH_DENSE;
    a.n = 16;
    a.k = 32;
    a.groups = 1;
    a.seed = 3;
    a.m_list = ms;
    a.m_count = 1;
    a.recipe_weights = recipe;
    vg_golden_file f;
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    assert_int_equal(vg_golden_write(path, &f), VG_OK);
    vg_golden_free(&f);
    char msg[2048];
    double secs;
    assert_int_equal(bounded(golden_read, path, NULL, msg, sizeof msg, &secs), VG_OK);
}

static void set_i32(hid_t loc, const char *name, int32_t v)
{
    hid_t a = H5Aopen(loc, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_INT32, &v) >= 0);
    H5Aclose(a);
}

/* Replaces a dataset by an unwritten chunked one of the given extents (a
 * few hundred bytes in the file whatever it claims), with its format. */
static void huge_dataset(hid_t loc, const char *name, hid_t type, int rank, const hsize_t *dims,
                         const char *format)
{
    if (H5Lexists(loc, name, H5P_DEFAULT) > 0)
        assert_true(H5Ldelete(loc, name, H5P_DEFAULT) >= 0);
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    hsize_t chunk[3] = {1, 1, 1};
    assert_true(H5Pset_chunk(dcpl, rank, chunk) >= 0);
    hid_t ds = H5Dcreate2(loc, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(ds >= 0);
    hid_t st = H5Tcopy(H5T_C_S1);
    H5Tset_size(st, strlen(format) + 1);
    hid_t asp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(ds, "format", st, asp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, st, format);
    H5Aclose(a);
    H5Sclose(asp);
    H5Tclose(st);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
}

static hid_t edit_open(const char *path)
{
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    return f;
}

/* Closes an edit and seals it, as `voltgate golden seal` would: the bounds
 * under test sit behind the seal (SCHEMA.md), which refuses any edit. */
static void edit_close(hid_t f, const char *path)
{
    assert_true(H5Fclose(f) >= 0);
    assert_int_equal(vg_golden_seal(path), VG_OK);
}

static void golden_huge_shapes(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[1024];
    snprintf(path, sizeof path, "%s/huge.h5", dir);

    /* 1. N = K = 2^20 in the attributes, the datasets as they were */
    golden_base(path, 0);
    hid_t f = edit_open(path);
    set_i32(f, "N", 1 << 20);
    set_i32(f, "K", 1 << 20);
    edit_close(f, path);
    expect_refusal("golden: N = K = 2^20 (datasets 16 x 32)", golden_read, path, NULL,
                   VG_ERR_FORMAT, VG_ERR_LIMIT, "huge.h5");

    /* 2. ... and w_q / w_dequant claiming those extents: 1 TiB and 4 TiB */
    golden_base(path, 0);
    f = edit_open(path);
    set_i32(f, "N", 1 << 20);
    set_i32(f, "K", 1 << 20);
    hsize_t big[3] = {1, 1 << 20, 1 << 20};
    huge_dataset(f, "w_q", H5T_STD_U8LE, 3, big, "e4m3");
    huge_dataset(f, "w_dequant", H5T_IEEE_F32LE, 3, big, "f32");
    edit_close(f, path);
    expect_refusal("golden: w_q [1][2^20][2^20] unwritten", golden_read, path, NULL,
                   VG_ERR_LIMIT, VG_ERR_LIMIT, "w_q");

    /* 3. a just-over-the-cap dataset: w_q of 1 GiB + 32 KiB (u8) */
    golden_base(path, 0);
    f = edit_open(path);
    set_i32(f, "N", 32769);
    set_i32(f, "K", 32768);
    hsize_t over[3] = {1, 32769, 32768};
    huge_dataset(f, "w_q", H5T_STD_U8LE, 3, over, "e4m3");
    edit_close(f, path);
    expect_refusal("golden: w_q of 1 GiB + 32 KiB", golden_read, path, NULL, VG_ERR_LIMIT,
                   VG_ERR_LIMIT, "w_q");

    /* 4. groups = 4096 (the bound) on a grouped file: 4096 x 16 x 32 weights
     * the datasets do not hold */
    golden_base(path, 0);
    f = edit_open(path);
    set_i32(f, "groups", 4096);
    edit_close(f, path);
    expect_refusal("golden: groups = 4096 on a dense file", golden_read, path, NULL,
                   VG_ERR_FORMAT, VG_ERR_LIMIT, "groups");
    f = edit_open(path);
    set_i32(f, "groups", 1 << 30);
    edit_close(f, path);
    expect_refusal("golden: groups = 2^30", golden_read, path, NULL, VG_ERR_FORMAT,
                   VG_ERR_LIMIT, "groups");

    /* 5. a recipe weight of 2^40 elements (rebuilt in memory on read) */
    golden_base(path, 1);
    f = edit_open(path);
    set_i32(f, "N", 1 << 20);
    set_i32(f, "K", 1 << 20);
    edit_close(f, path);
    expect_refusal("golden: recipe weight of 2^40 elements", golden_read, path, NULL,
                   VG_ERR_LIMIT, VG_ERR_LIMIT, "recipe");

    /* 6. a case of M = 2^20 rows whose x claims [2^20][32] (64 MiB), y_ref
     * [2^20][16] (64 MiB): within the caps, but not held by the file */
    golden_base(path, 0);
    f = edit_open(path);
    hid_t cases = H5Gopen2(f, "cases", H5P_DEFAULT);
    char name[64] = "";
    H5Lget_name_by_idx(cases, ".", H5_INDEX_NAME, H5_ITER_INC, 0, name, sizeof name,
                       H5P_DEFAULT);
    hid_t c = H5Gopen2(cases, name, H5P_DEFAULT);
    set_i32(c, "M", 1 << 20);
    hid_t ta = H5Aopen(c, "tokens", H5P_DEFAULT);
    int32_t tok = 1 << 20;
    H5Awrite(ta, H5T_NATIVE_INT32, &tok);
    H5Aclose(ta);
    hsize_t dx[2] = {1 << 20, 32}, dy[2] = {1 << 20, 16};
    huge_dataset(c, "x", H5T_STD_U16LE, 2, dx, "fp16");
    huge_dataset(c, "y_ref", H5T_IEEE_F32LE, 2, dy, "f32");
    H5Gclose(c);
    H5Gclose(cases);
    edit_close(f, path);
    char msg[2048];
    double secs;
    int got = bounded(golden_read, path, NULL, msg, sizeof msg, &secs);
    print_message("  %-44s -> %s in %.3f s: %s\n", "golden: case M = 2^20, x/y_ref unwritten",
                  got < VG_STATUS_COUNT ? vg_status_str((vg_status)got) : "killed", secs, msg);
    /* 128 MiB of claimed data in a ~10 KB file: within VG_GOLDEN_MAX_*, so
     * the reader may allocate it; it must still refuse (the hashes of the
     * unwritten data cannot match) and not crash. */
    assert_true(got == VG_ERR_CHECKSUM || got == VG_ERR_FORMAT || got == VG_ERR_LIMIT ||
                (CAN_CAP_MEMORY && got == VG_ERR_NO_MEMORY));
    if (got == VG_ERR_NO_MEMORY)
        print_message("  note: the reader allocates what a ~10 KB file claims (up to "
                      "VG_GOLDEN_MAX_DATASET_BYTES per dataset) before it can check it\n");
    vgtest_rmtree(dir);
    free(dir);
}

/* ---- safetensors ------------------------------------------------------------------------ */

static vg_status st_open(const char *path, void *user)
{
    (void)user;
    vg_safetensors *st = NULL;
    vg_status s = vg_st_open(path, &st);
    vg_st_close(st);
    return s;
}

/* A safetensors file: the 8-byte length `claimed`, then `json`, then
 * `data_bytes` of data. */
static void st_file(const char *path, uint64_t claimed, const char *json, size_t data_bytes)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    uint8_t len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (uint8_t)(claimed >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(json, 1, strlen(json), f);
    for (size_t i = 0; i < data_bytes; i++)
        fputc(0, f);
    fclose(f);
}

static void safetensors_claims(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[1024];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    const char *ok = "{\"w\":{\"dtype\":\"F16\",\"shape\":[2,4],\"data_offsets\":[0,16]}}";

    st_file(path, strlen(ok), ok, 16);
    char msg[2048];
    double secs;
    assert_int_equal(bounded(st_open, path, NULL, msg, sizeof msg, &secs), VG_OK);

    /* a header length of 90 MiB (under the format's 100 MiB) in a 90-byte file */
    st_file(path, 90u << 20, ok, 16);
    expect_refusal("safetensors: header 90 MiB, file 90 B", st_open, path, NULL, VG_ERR_FORMAT,
                   VG_ERR_LIMIT, "past the end");
    /* 2^63 */
    st_file(path, (uint64_t)1 << 63, ok, 16);
    expect_refusal("safetensors: header 2^63", st_open, path, NULL, VG_ERR_FORMAT, VG_ERR_LIMIT,
                   "header length");
    /* a tensor claiming 1 TiB of data the file does not hold */
    const char *tib = "{\"w\":{\"dtype\":\"F16\",\"shape\":[1048576,524288],"
                      "\"data_offsets\":[0,1099511627776]}}";
    st_file(path, strlen(tib), tib, 16);
    expect_refusal("safetensors: tensor of 1 TiB, 16 B of data", st_open, path, NULL,
                   VG_ERR_FORMAT, VG_ERR_LIMIT, "outside the data section");
    /* a shape whose product overflows 64 bits while the offsets look small */
    const char *ovf = "{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],"
                      "\"data_offsets\":[0,16]}}";
    st_file(path, strlen(ovf), ovf, 16);
    expect_refusal("safetensors: shape product overflows", st_open, path, NULL, VG_ERR_FORMAT,
                   VG_ERR_LIMIT, "overflow");
    free(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(lut_over_the_cap),
        cmocka_unit_test(config_over_the_cap),
        cmocka_unit_test(golden_huge_shapes),
        cmocka_unit_test(safetensors_claims),
    };
    return VGTEST_MAIN("resource_bounds", tests);
}
