/*
 * The committed golden set: it verifies on the CPU backend for every plan
 * (and on CUDA when a device is present), it covers what issue 3 asks,
 * regenerating a file gives the same bytes, the references are what an
 * independent FP64 loop computes, and a wrong kernel result does fail.
 */
#include "vgtest.h"

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "voltgate/formats.h"
#include "voltgate/golden.h"
#include "voltgate/runtime.h"

#define CASES_DIR "golden/cases"

/* Sorted *.h5 names of the committed set. */
static int list_cases(char names[][64], int max)
{
    DIR *d = opendir(CASES_DIR);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        size_t len = strlen(e->d_name);
        if (len > 3 && len < 64 && !strcmp(e->d_name + len - 3, ".h5"))
            memcpy(names[n++], e->d_name, len + 1);   /* len < 64: fits */
    }
    closedir(d);
    qsort(names, (size_t)n, 64, (int (*)(const void *, const void *))strcmp);
    return n;
}

typedef struct tally {
    int rows, failed;
    char first_failure[1024];
} tally;

static void on_row(const vg_golden_row *r, void *user)
{
    tally *t = user;
    t->rows++;
    if (!r->pass) {
        if (!t->failed)
            snprintf(t->first_failure, sizeof t->first_failure, "%.320s %s %.96s: rel_rms %.3g max_abs %.3g %.160s",
                     r->case_name, r->backend, r->plan, r->rel_rms, r->max_abs, r->note);
        t->failed++;
    }
}

static void verify_set(const char *backend, const char *plan)
{
    char names[64][64];
    int n = list_cases(names, 64);
    assert_true(n >= 20);
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open(backend, 0, &dev), VG_OK);
    tally t = {0, 0, ""};
    for (int i = 0; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", CASES_DIR, names[i]);
        vg_golden_file f;
        vg_status st = vg_golden_read(path, &f);
        if (st != VG_OK)
            fail_msg("%s", vg_last_error());
        vg_golden_verify_opts o = {backend, plan};
        int ran = 0, failed = 0;
        st = vg_golden_verify_file(dev, path, &f, &o, on_row, &t, &ran, &failed);
        if (st != VG_OK)
            fail_msg("%s: %s", path, vg_last_error());
        /* every case of every file ran at least once */
        assert_true(ran >= f.ncases);
        vg_golden_free(&f);
    }
    vg_device_close(dev);
    print_message("%s/%s: %d rows, %d failed\n", backend, plan, t.rows, t.failed);
    if (t.failed)
        fail_msg("%d of %d rows failed; first: %s", t.failed, t.rows, t.first_failure);
}

static void test_committed_set_cpu_all_plans(void **state)
{
    (void)state;
    verify_set("cpu", "all");
}

static void test_committed_set_cpu_heuristic(void **state)
{
    (void)state;
    verify_set("cpu", "heuristic");
}

static void test_committed_set_cuda_all_plans(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    verify_set("cuda", "all");
}

static void test_committed_set_cuda_heuristic(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    verify_set("cuda", "heuristic");
}

/* The set covers every family x path, the dense M list, grouped and loop
 * 1..16, 17, 32, a moe routing with an empty expert, ragged shapes and
 * shapes on the 128 grid (the kernels' whole-step paths, also at 17-63
 * rows) for every family,
 * the wo_a shape, and stays under 24 MiB. */
static void test_committed_set_coverage(void **state)
{
    (void)state;
    char names[64][64];
    int n = list_cases(names, 64);
    static const int dense_m[] = {1, 2, 3, 6, 16, 24, 40, 64, 65, 256};
    enum { kDenseM = sizeof dense_m / sizeof dense_m[0] };
    unsigned dense_seen[VG_FAMILY_COUNT] = {0};
    uint64_t tok_seen[VG_FAMILY_COUNT][VG_PATH_COUNT] = {{0}};
    int path_seen[VG_FAMILY_COUNT][VG_PATH_COUNT] = {{0}};
    int moe_zero[VG_FAMILY_COUNT] = {0}, ragged[VG_FAMILY_COUNT] = {0}, aligned[VG_FAMILY_COUNT] = {0};
    int wo_a = 0;
    long long bytes = 0;
    for (int i = 0; i < n; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", CASES_DIR, names[i]);
        struct stat sb;
        assert_int_equal(stat(path, &sb), 0);
        bytes += sb.st_size;
        vg_golden_file f;
        if (vg_golden_read(path, &f) != VG_OK)
            fail_msg("%s", vg_last_error());
        path_seen[f.family][f.path] = 1;
        if (f.n % 128 && f.k % 128)
            ragged[f.family] = 1;
        for (int32_t c = 0; c < f.ncases; c++) {
            const vg_golden_case *k = &f.cases[c];
            /* on the grid, with one mid-size case (the whole-step loops at
             * 17-64 rows) */
            if (f.path == VG_PATH_DENSE && f.n % 128 == 0 && f.k % 128 == 0 && k->m > 16 && k->m < 64)
                aligned[f.family] = 1;
            if (f.path == VG_PATH_DENSE)
                for (int j = 0; j < kDenseM; j++)
                    dense_seen[f.family] |= (unsigned)(k->m == dense_m[j]) << j;
            if (f.path == VG_PATH_GROUPED || f.path == VG_PATH_LOOP)
                if (k->tokens[0] < 64)
                    tok_seen[f.family][f.path] |= 1ull << k->tokens[0];
            if (f.path == VG_PATH_MOE) {
                int zero = 0, uneven = 0;
                for (int32_t g = 0; g < f.groups; g++) {
                    zero |= k->tokens[g] == 0;
                    uneven |= k->tokens[g] != k->tokens[0];
                }
                moe_zero[f.family] |= zero && uneven;
            }
            if (f.family == VG_FAMILY_FP8 && f.path == VG_PATH_GROUPED && f.groups == 8 &&
                f.n == 1024 && f.k == 4096 && k->tokens[0] == 6 && k->m == 48)
                wo_a = 1;
        }
        vg_golden_free(&f);
    }
    uint64_t want_tok = 0;
    for (int t = 1; t <= 16; t++)
        want_tok |= 1ull << t;
    want_tok |= (1ull << 17) | (1ull << 32);
    for (int fam = 0; fam < VG_FAMILY_COUNT; fam++) {
        for (int p = 0; p < VG_PATH_COUNT; p++)
            if (!path_seen[fam][p])
                fail_msg("no %s %s file", vg_family_name((vg_family)fam), vg_path_name((vg_path)p));
        if (dense_seen[fam] != (1u << kDenseM) - 1)
            fail_msg("%s dense misses some M of 1,2,3,6,16,24,40,64,65,256 (mask %#x)",
                     vg_family_name((vg_family)fam), dense_seen[fam]);
        assert_true(tok_seen[fam][VG_PATH_GROUPED] == want_tok);
        assert_true(tok_seen[fam][VG_PATH_LOOP] == want_tok);
        assert_true(moe_zero[fam]);
        assert_true(ragged[fam]);
        if (!aligned[fam])
            fail_msg("no %s dense file with N and K on the 128 grid and 17-63 rows", vg_family_name((vg_family)fam));
    }
    assert_true(wo_a);
    print_message("committed set: %d files, %.2f MiB\n", n, bytes / 1048576.0);
    assert_true(bytes < 24ll * 1024 * 1024);
}

/* Regenerating a committed file gives the same datasets (compared by
 * content through the reader, which also checks every SHA-256). */
static void test_regenerate_matches_committed(void **state)
{
    (void)state;
    const char *which[] = {"awq-moe.h5", "nvfp4-dense.h5"};
    char *dir = vgtest_mkdtemp();
    for (size_t w = 0; w < 2; w++) {
        if (vg_golden_generate_set("ci", dir, which[w], 0) != VG_OK)
            fail_msg("%s", vg_last_error());
        char mine[512], committed[512];
        snprintf(mine, sizeof mine, "%s/%s", dir, which[w]);
        snprintf(committed, sizeof committed, "%s/%s", CASES_DIR, which[w]);
        vg_golden_file a, b;
        assert_int_equal(vg_golden_read(mine, &a), VG_OK);
        assert_int_equal(vg_golden_read(committed, &b), VG_OK);
        assert_int_equal(a.ncases, b.ncases);
        size_t G = (size_t)a.groups;
        assert_memory_equal(a.w_q, b.w_q, G * a.layout.q_bytes);
        assert_memory_equal(a.w_scale, b.w_scale, G * a.layout.scale_bytes);
        assert_memory_equal(a.w_dequant, b.w_dequant, G * (size_t)a.n * (size_t)a.k * 4);
        for (int32_t c = 0; c < a.ncases; c++) {
            assert_string_equal(a.cases[c].name, b.cases[c].name);
            assert_memory_equal(a.cases[c].x, b.cases[c].x, (size_t)a.cases[c].m * (size_t)a.k * 2);
            assert_memory_equal(a.cases[c].y_ref, b.cases[c].y_ref,
                                (size_t)a.cases[c].m * (size_t)a.n * 4);
        }
        vg_golden_free(&a);
        vg_golden_free(&b);
        /* Bytes are compared between two generations on the same machine
         * (test_generate_write_read): against the committed file they hold
         * only with the same HDF5 and zlib as the writer (1.10.8, Debian
         * 12), since another deflate may compress the same data otherwise. */
    }
    vgtest_rmtree(dir);
    free(dir);
}

/* y_ref is what a plain FP64 loop over the file's own x and w_dequant gives,
 * and w_dequant is what formats.h decodes from w_q and w_scale (fp8). */
static void test_reference_independent(void **state)
{
    (void)state;
    vg_golden_file f;
    if (vg_golden_read(CASES_DIR "/fp8-moe.h5", &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    const uint8_t *q = f.w_q;
    const float *sc = f.w_scale;
    int32_t sr = f.layout.scale_rows, scc = f.layout.scale_cols;
    for (int32_t g = 0; g < f.groups; g++)
        for (int32_t n = 0; n < f.n; n++)
            for (int32_t k = 0; k < f.k; k++) {
                size_t i = ((size_t)g * f.n + n) * f.k + k;
                float want = vg_e4m3_to_f32(q[i]) * sc[((size_t)g * sr + n / 128) * scc + k / 128];
                assert_true(f.w_dequant[i] == want);
            }
    for (int32_t c = 0; c < f.ncases; c++) {
        const vg_golden_case *k = &f.cases[c];
        for (int32_t g = 0; g < f.groups; g++)
            for (int32_t r = k->offsets[g]; r < k->offsets[g + 1]; r++)
                for (int32_t n = 0; n < f.n; n++) {
                    double s = 0;
                    for (int32_t j = 0; j < f.k; j++)
                        s += (double)vg_fp16_to_f32(k->x[(size_t)r * f.k + j]) *
                             (double)f.w_dequant[((size_t)g * f.n + n) * f.k + j];
                    float got = k->y_ref[(size_t)r * f.n + n];
                    assert_true(got == (float)s);
                }
    }
    vg_golden_free(&f);
}

/* A kernel given a subtly wrong weight (one block scale 2% off, as a
 * wrong scale index would do) fails verification: the tolerance is tight
 * enough to catch it.  And the unchanged weight passes. */
static void test_wrong_result_fails(void **state)
{
    (void)state;
    vg_golden_file f;
    if (vg_golden_read(CASES_DIR "/fp8-dense.h5", &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_golden_verify_opts o = {"cpu", "heuristic"};
    tally t = {0, 0, ""};
    int ran = 0, failed = 0;
    assert_int_equal(vg_golden_verify_file(dev, "fp8-dense.h5", &f, &o, on_row, &t, &ran, &failed),
                     VG_OK);
    assert_int_equal(failed, 0);
    assert_int_equal(ran, f.ncases);
    ((float *)f.w_scale)[1] *= 1.02f;
    t.failed = t.rows = 0;
    assert_int_equal(vg_golden_verify_file(dev, "fp8-dense.h5", &f, &o, on_row, &t, &ran, &failed),
                     VG_OK);
    assert_int_equal(failed, f.ncases);
    vg_device_close(dev);
    vg_golden_free(&f);
}

/* A NaN in the output fails the row as "unwritten output" end to end:
 * here the kernel computes NaN from an E4M3 NaN code in one weight row
 * (the same check catches elements a kernel never writes, since y is
 * poisoned with NaN before every run). */
typedef struct note_capture {
    int rows, failed_with_note;
} note_capture;

static void capture_note(const vg_golden_row *r, void *user)
{
    note_capture *c = user;
    c->rows++;
    if (!r->pass && strstr(r->note, "unwritten output"))
        c->failed_with_note++;
}

static void test_nan_output_fails(void **state)
{
    (void)state;
    vg_golden_file f;
    if (vg_golden_read(CASES_DIR "/fp8-dense.h5", &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    ((uint8_t *)f.w_q)[5 * f.k + 7] = 0x7F; /* row 5: NaN in every output of column 5 */
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_golden_verify_opts o = {"cpu", "all"};
    note_capture c = {0, 0};
    int ran = 0, failed = 0;
    assert_int_equal(vg_golden_verify_file(dev, "x.h5", &f, &o, capture_note, &c, &ran, &failed),
                     VG_OK);
    assert_true(ran > 0);
    assert_int_equal(failed, ran);
    assert_int_equal(c.failed_with_note, ran);
    vg_device_close(dev);
    vg_golden_free(&f);
}

/* The comparison: NaN left is counted, errors are what they are. */
static void test_compare(void **state)
{
    (void)state;
    float ref[4] = {3, 4, 0, 0}, y[4] = {3, 4, 0, 0};
    double rel, mx;
    size_t bad;
    vg_golden_compare(y, ref, 4, &rel, &mx, &bad);
    assert_true(rel == 0.0 && mx == 0.0 && bad == 0);
    y[0] = 3.5f; /* error 0.5 against a norm of 5 */
    vg_golden_compare(y, ref, 4, &rel, &mx, &bad);
    vgtest_assert_near(rel, 0.1, 1e-12);
    vgtest_assert_near(mx, 0.5, 1e-12);
    y[3] = NAN;
    vg_golden_compare(y, ref, 4, &rel, &mx, &bad);
    assert_int_equal(bad, 1);
    assert_true(isinf(rel));
}

/* Generating twice gives byte-identical files; a write never leaves its
 * temporary behind; the round trip keeps every field. */
static void test_generate_write_read(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    int32_t tok[] = {1, 17};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_NVFP4;
    a.path = VG_PATH_GROUPED;
    a.n = 72;
    a.k = 48;
    a.groups = 2;
    a.seed = 99;
    a.tokens_list = tok;
    a.tokens_count = 2;
    char p1[512], p2[512];
    snprintf(p1, sizeof p1, "%s/a.h5", dir);
    snprintf(p2, sizeof p2, "%s/b.h5", dir);
    vg_golden_file f;
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    assert_int_equal(vg_golden_write(p1, &f), VG_OK);
    vg_golden_free(&f);
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    assert_int_equal(vg_golden_write(p2, &f), VG_OK);
    size_t l1, l2;
    void *b1 = vgtest_read_file(p1, &l1), *b2 = vgtest_read_file(p2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    free(b1);
    free(b2);
    vg_golden_file g;
    assert_int_equal(vg_golden_read(p1, &g), VG_OK);
    assert_int_equal(g.family, VG_FAMILY_NVFP4);
    assert_int_equal(g.path, VG_PATH_GROUPED);
    assert_int_equal(g.n, 72);
    assert_int_equal(g.k, 48);
    assert_int_equal(g.groups, 2);
    assert_true(g.seed == 99);
    assert_true(g.w_tensor_scale == f.w_tensor_scale);
    assert_int_equal(g.ncases, 2);
    assert_string_equal(g.cases[0].name, "t01");
    assert_string_equal(g.cases[1].name, "t17");
    assert_int_equal(g.cases[1].m, 34);
    assert_int_equal(g.cases[1].offsets[1], 17);
    assert_memory_equal(g.cases[1].y_ref, f.cases[1].y_ref, 34 * 72 * 4);
    vg_golden_free(&g);
    vg_golden_free(&f);
    /* a write into a missing folder fails and leaves nothing */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/missing/x.h5", dir);
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    assert_int_equal(vg_golden_write(bad, &f), VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), "x.h5"));
    vg_golden_free(&f);
    /* only a.h5 and b.h5 in the folder: no temporaries */
    DIR *d = opendir(dir);
    int entries = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.') {
            entries++;
            assert_null(strstr(e->d_name, ".tmp."));
        }
    closedir(d);
    assert_int_equal(entries, 2);
    vgtest_rmtree(dir);
    free(dir);
}

/* The generator refuses what the family cannot take and bad case lists. */
static void test_generate_refuses(void **state)
{
    (void)state;
    int32_t m[] = {1};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_AWQ;
    a.path = VG_PATH_DENSE;
    a.n = 64;
    a.k = 100; /* not a multiple of 8 */
    a.m_list = m;
    a.m_count = 1;
    vg_golden_file f;
    assert_int_equal(vg_golden_generate(&a, &f), VG_ERR_UNSUPPORTED);
    a.k = 128;
    a.m_count = 0;
    assert_int_equal(vg_golden_generate(&a, &f), VG_ERR_INVALID_ARG);
    int32_t twice[] = {4, 4};
    a.m_list = twice;
    a.m_count = 2;
    assert_int_equal(vg_golden_generate(&a, &f), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "twice"));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_committed_set_coverage),
        cmocka_unit_test(test_committed_set_cpu_all_plans),
        cmocka_unit_test(test_committed_set_cpu_heuristic),
        cmocka_unit_test(test_committed_set_cuda_all_plans),
        cmocka_unit_test(test_committed_set_cuda_heuristic),
        cmocka_unit_test(test_regenerate_matches_committed),
        cmocka_unit_test(test_reference_independent),
        cmocka_unit_test(test_wrong_result_fails),
        cmocka_unit_test(test_nan_output_fails),
        cmocka_unit_test(test_compare),
        cmocka_unit_test(test_generate_write_read),
        cmocka_unit_test(test_generate_refuses),
    };
    return VGTEST_MAIN("golden", tests);
}
