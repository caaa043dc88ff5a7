/*
 * The FP64 reference GEMM (include/voltgate/reference.h): small cases worked
 * out by hand, FP64 accumulation, grouped/loop/moe against dense applied to
 * each group's rows, and the refused offsets rows and arguments (Y untouched).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vgtest.h"
#include "voltgate/reference.h"

static const vg_path grouped_paths[3] = {VG_PATH_GROUPED, VG_PATH_LOOP, VG_PATH_MOE};

static void dense_hand_case(void **state)
{
    (void)state;
    const float x[2 * 3] = {1, 2, 3, 4, 5, 6};
    const float w[2 * 3] = {1, 0, -1, 0.5f, 0.5f, 0.5f};
    double y[4];
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, 2, 2, 3, 1, NULL, x, w, y), VG_OK);
    /* [1 2 3].[1 0 -1] = -2, [1 2 3].[.5 .5 .5] = 3, [4 5 6].[1 0 -1] = -2, 7.5 */
    assert_true(y[0] == -2.0 && y[1] == 3.0 && y[2] == -2.0 && y[3] == 7.5);
}

static void grouped_hand_case(void **state)
{
    (void)state;
    const float x[3 * 2] = {1, 2, 3, 4, -1, 0.5f};
    const float w[2 * 2 * 2] = {1, 1, 2, -1,  /* group 0 */
                                0, 1, 1, 0};  /* group 1 */
    const int32_t offsets[3] = {0, 1, 3};     /* row 0 -> group 0, rows 1-2 -> group 1 */
    const double want[3 * 2] = {3, 0,         /* [1 2].[1 1], [1 2].[2 -1] */
                                4, 3,         /* [3 4].[0 1], [3 4].[1 0] */
                                0.5, -1};     /* [-1 .5].[0 1], [-1 .5].[1 0] */
    for (int p = 0; p < 3; p++) {
        double y[6];
        assert_int_equal(vg_reference_gemm(grouped_paths[p], 3, 2, 2, 2, offsets, x, w, y), VG_OK);
        for (int i = 0; i < 6; i++)
            assert_true(y[i] == want[i]);
    }
}

static void accumulates_in_fp64(void **state)
{
    (void)state;
    /* 1e8 + 1 - 1e8: exact in FP64, 0 in FP32 */
    const float x[3] = {1e8f, 1.0f, -1e8f};
    const float w[3] = {1.0f, 1.0f, 1.0f};
    double y = NAN;
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, 1, 1, 3, 1, NULL, x, w, &y), VG_OK);
    assert_true(y == 1.0);
    /* products are formed in FP64 too: (1 + 2^-20)^2 keeps its 2^-40 term */
    const float a = 1.0f + 0x1p-20f;
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, 1, 1, 1, 1, NULL, &a, &a, &y), VG_OK);
    assert_true(y == 1.0 + 0x1p-19 + 0x1p-40);
}

static void moe_empty_group_is_skipped(void **state)
{
    (void)state;
    const float x[2 * 2] = {1, 2, 3, 4};
    const float w[2 * 1 * 2] = {NAN, NAN, /* group 0 has no rows: never read */
                                2, -1};
    const int32_t offsets[3] = {0, 0, 2};
    double y[2];
    assert_int_equal(vg_reference_gemm(VG_PATH_MOE, 2, 1, 2, 2, offsets, x, w, y), VG_OK);
    assert_true(y[0] == 0.0 && y[1] == 2.0);
}

static void fill(float *v, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((double)(seed >> 8) / 8388608.0 - 1.0);
    }
}

static void grouped_equals_dense_per_group(void **state)
{
    (void)state;
    enum { G = 4, M = 16, N = 5, K = 7 };
    const int32_t offsets[G + 1] = {0, 3, 3, 10, 16}; /* one empty group */
    float x[M * K], w[G * N * K];
    fill(x, M * K, 1);
    fill(w, G * N * K, 2);
    double want[M * N];
    for (int g = 0; g < G; g++) {
        int32_t r0 = offsets[g], rows = offsets[g + 1] - offsets[g];
        assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, rows, N, K, 1, NULL, x + r0 * K,
                                           w + g * N * K, want + r0 * N),
                         VG_OK);
    }
    for (int p = 0; p < 3; p++) {
        double y[M * N];
        assert_int_equal(vg_reference_gemm(grouped_paths[p], M, N, K, G, offsets, x, w, y), VG_OK);
        assert_memory_equal(y, want, sizeof y); /* same order of summation: same bits */
    }
    /* dense with several groups uses group 0 only */
    double d1[M * N], d3[M * N];
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, M, N, K, 1, NULL, x, w, d1), VG_OK);
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, M, N, K, 3, NULL, x, w, d3), VG_OK);
    assert_memory_equal(d1, d3, sizeof d1);
}

/* Refused with the status and a message; y stays as poisoned. */
static void expect_refused(vg_path path, int32_t m, int32_t n, int32_t k, int32_t groups,
                           const int32_t *offsets, const float *x, const float *w, double *y,
                           size_t y_count)
{
    for (size_t i = 0; i < y_count; i++)
        y[i] = -12345.0;
    vg_status st = vg_reference_gemm(path, m, n, k, groups, offsets, x, w, y);
    if (st != VG_ERR_INVALID_ARG) {
        print_error("path %d m=%d n=%d k=%d groups=%d: status %d, want INVALID_ARG\n", (int)path,
                    (int)m, (int)n, (int)k, (int)groups, (int)st);
        fail();
    }
    assert_true(strlen(vg_last_error()) > 0);
    for (size_t i = 0; i < y_count; i++)
        assert_true(y[i] == -12345.0);
}

static void bad_offsets_refused(void **state)
{
    (void)state;
    enum { M = 16, N = 2, K = 3 };
    float x[M * K], w[2 * N * K];
    double y[M * N];
    fill(x, M * K, 3);
    fill(w, 2 * N * K, 4);
    const int32_t not_from_zero[3] = {1, 5, 16};
    const int32_t decreasing[3] = {0, 9, 8};
    const int32_t beyond_m[3] = {0, 17, 16};
    const int32_t short_of_m[3] = {0, 5, 15};
    for (int p = 0; p < 3; p++) {
        vg_path path = grouped_paths[p];
        expect_refused(path, M, N, K, 2, NULL, x, w, y, M * N);
        expect_refused(path, M, N, K, 2, not_from_zero, x, w, y, M * N);
        assert_non_null(strstr(vg_last_error(), "offsets[0]"));
        expect_refused(path, M, N, K, 2, decreasing, x, w, y, M * N);
        assert_non_null(strstr(vg_last_error(), "decrease"));
        expect_refused(path, M, N, K, 2, beyond_m, x, w, y, M * N);
        assert_non_null(strstr(vg_last_error(), "beyond"));
        expect_refused(path, M, N, K, 2, short_of_m, x, w, y, M * N);
        assert_non_null(strstr(vg_last_error(), "must equal"));
    }
    /* dense ignores offsets altogether */
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, M, N, K, 1, decreasing, x, w, y), VG_OK);
}

static void bad_arguments_refused(void **state)
{
    (void)state;
    float x[4] = {1, 2, 3, 4}, w[4] = {1, 2, 3, 4};
    double y[4];
    expect_refused(VG_PATH_COUNT, 2, 2, 2, 1, NULL, x, w, y, 4);
    expect_refused(VG_PATH_DENSE, -1, 2, 2, 1, NULL, x, w, y, 4);
    expect_refused(VG_PATH_DENSE, 2, 0, 2, 1, NULL, x, w, y, 4);
    expect_refused(VG_PATH_DENSE, 2, 2, 0, 1, NULL, x, w, y, 4);
    expect_refused(VG_PATH_DENSE, 2, 2, 2, 0, NULL, x, w, y, 4);
    expect_refused(VG_PATH_DENSE, 2, 2, 2, 1, NULL, NULL, w, y, 4);
    expect_refused(VG_PATH_DENSE, 2, 2, 2, 1, NULL, x, NULL, y, 4);
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, 2, 2, 2, 1, NULL, x, w, NULL),
                     VG_ERR_INVALID_ARG);
}

static void zero_rows_are_valid(void **state)
{
    (void)state;
    float w[4] = {1, 2, 3, 4};
    const int32_t offsets[3] = {0, 0, 0};
    assert_int_equal(vg_reference_gemm(VG_PATH_DENSE, 0, 2, 2, 1, NULL, NULL, w, NULL), VG_OK);
    assert_int_equal(vg_reference_gemm(VG_PATH_GROUPED, 0, 1, 2, 2, offsets, NULL, w, NULL),
                     VG_OK);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(dense_hand_case),
        cmocka_unit_test(grouped_hand_case),
        cmocka_unit_test(accumulates_in_fp64),
        cmocka_unit_test(moe_empty_group_is_skipped),
        cmocka_unit_test(grouped_equals_dense_per_group),
        cmocka_unit_test(bad_offsets_refused),
        cmocka_unit_test(bad_arguments_refused),
        cmocka_unit_test(zero_rows_are_valid),
    };
    return VGTEST_MAIN("reference", tests);
}
