/*
 * The block-FP8 CUDA kernels on a device: every plan on every path (dense,
 * grouped, loop, moe) against the FP64 reference on generated cases,
 * including the real wo_a shape (8 groups, N=1024, K=4096, 1..16 tokens per
 * group) and a large prefill shape; every E4M3 code through the kernel's bit
 * decode; bad arguments refused without a launch; a grouped decode launch
 * captured in a CUDA graph; split-K bitwise deterministic; the bench's stream
 * ceiling sane.  Without a device every test is skipped.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_cuda_util.h"

/* Every E4M3 code (the two NaN codes excepted) decoded through each dense
 * plan: X one-hot (row m picks k = m), W[n][k] = code (n + k) mod 256, block
 * scales 0.375 and 6 on the two N blocks: Y[m][n] must equal
 * e4m3(code(n + m)) * scale exactly (one exact product per output; FP16
 * holds each product exactly too, so the dequantize + cuBLAS plans, whose
 * copy of W is FP16, are held to the same). */
static void test_e4m3_every_code(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    const int32_t M = 16, N = 256, K = 256;
    uint8_t *q = malloc((size_t)N * K);
    float scale[2 * 2] = {0.375f, 0.375f, 6.0f, 6.0f};
    uint16_t *x = calloc((size_t)M * K, 2);
    assert_non_null(q);
    assert_non_null(x);
    for (int32_t n = 0; n < N; n++)
        for (int32_t k = 0; k < K; k++) {
            uint8_t c = (uint8_t)((n + k) & 0xFF);
            if ((c & 0x7F) == 0x7F)
                c = (uint8_t)(c & 0x80); /* NaN codes become +-0 */
            q[(size_t)n * K + k] = c;
        }
    for (int32_t m = 0; m < M; m++)
        x[(size_t)m * K + m] = vg_f32_to_fp16(1.0f);
    void *dq = tc_upload(q, (size_t)N * K), *ds = tc_upload(scale, sizeof scale);
    void *dx = tc_upload(x, (size_t)M * K * 2), *dy = tc_upload(NULL, (size_t)M * N * 4);
    void *dws = tc_upload(NULL, (size_t)8 * M * N * 4);
    vg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.path = VG_PATH_DENSE;
    a.m = M;
    a.w.family = VG_FAMILY_FP8;
    a.w.n = N;
    a.w.k = K;
    a.w.groups = 1;
    a.w.q = dq;
    a.w.scale = ds;
    a.w.tensor_scale = 1.0f;
    a.x = dx;
    a.y = dy;
    a.y_dtype = VG_DTYPE_F32;
    a.workspace = dws;
    a.workspace_bytes = (size_t)8 * M * N * 4;
    float *y = malloc((size_t)M * N * 4);
    assert_non_null(y);
    int ran = 0;
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (!vg_plan_applies(p, VG_FAMILY_FP8, VG_PATH_DENSE, M))
            continue;
        size_t need = 0;
        assert_int_equal(vg_cuda_workspace_bytes(p, &a, &need), VG_OK);
        void *pws = need > a.workspace_bytes ? tc_upload(NULL, need) : NULL;
        vg_gemm_args b = a;
        if (pws) {
            b.workspace = pws;
            b.workspace_bytes = need;
        }
        assert_int_equal(vg_cuda_memset(dy, 0xFF, (size_t)M * N * 4), VG_OK);
        assert_int_equal(vg_cuda_gemm(p, &b), VG_OK);
        assert_int_equal(vg_cuda_synchronize(NULL), VG_OK);
        assert_int_equal(vg_cuda_copy_to_host(y, dy, (size_t)M * N * 4), VG_OK);
        if (pws)
            vg_cuda_free(pws);
        for (int32_t m = 0; m < M; m++)
            for (int32_t n = 0; n < N; n++) {
                const uint8_t c = q[(size_t)n * K + m];
                const float want = vg_e4m3_to_f32(c) * scale[(n / 128) * 2];
                const float got = y[(size_t)m * N + n];
                if (!(got == want)) {
                    print_error("plan %s: code 0x%02x gave %.9g, want %.9g\n", p->id, c,
                                (double)got, (double)want);
                    fail();
                }
            }
        ran++;
    }
    assert_true(ran > 0);
    free(y);
    free(q);
    free(x);
    vg_cuda_free(dq);
    vg_cuda_free(ds);
    vg_cuda_free(dx);
    vg_cuda_free(dy);
    vg_cuda_free(dws);
}

/* Dense, every plan, at shapes that hit the fast paths and the ragged ones
 * (N and K not multiples of the tiles, K not a multiple of 16). */
static void test_dense_every_plan(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    /* The two-K-group mid plans' barrier counts (KERNELS.md D46), run
     * under racecheck by ci/device-run: {40, 128, 128} one K step, so the
     * second K group has none; {40, 128, 192} a full step for group 0 and
     * the K tail for group 1, which then takes more ring barriers than
     * the group that reads its partial sums. */
    static const int32_t shapes[][3] = {
        {1, 256, 384}, {7, 200, 392}, {16, 512, 1024}, {3, 130, 200},
        {33, 256, 512}, {64, 128, 256}, {100, 300, 264}, {5, 64, 4096},
        {40, 128, 128}, {40, 128, 192}, {24, 136, 392},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        tc_case c;
        tc_make(&c, VG_FAMILY_FP8, VG_PATH_DENSE, shapes[i][0], shapes[i][1], shapes[i][2], 1,
                NULL, 100 + i);
        assert_true(tc_run_all_plans(&c, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32)) > 0);
        tc_free(&c);
    }
}

/* FP16 output through a decode, a mid and the prefill plan. */
static void test_dense_fp16_output(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    static const int32_t ms[] = {4, 40, 130};
    for (size_t i = 0; i < 3; i++) {
        tc_case c;
        tc_make(&c, VG_FAMILY_FP8, VG_PATH_DENSE, ms[i], 256, 512, 1, NULL, 7 + i);
        c.args.y_dtype = VG_DTYPE_F16;
        assert_true(tc_run_all_plans(&c, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F16)) > 0);
        tc_free(&c);
    }
}

/* Grouped and moe (grouped plans), loop (dense plans), with empty groups and
 * uneven counts. */
static void test_grouped_loop_moe_every_plan(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    static const int32_t counts[][4] = {
        {1, 1, 1, 1}, {3, 3, 3, 3}, {16, 16, 16, 16}, {0, 5, 0, 16}, {2, 0, 7, 1},
    };
    static const vg_path paths[] = {VG_PATH_GROUPED, VG_PATH_LOOP, VG_PATH_MOE};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        for (size_t p = 0; p < 3; p++) {
            int32_t off[5];
            tc_offsets(off, counts[i], 4);
            tc_case c;
            tc_make(&c, VG_FAMILY_FP8, paths[p], off[4], 320, 640, 4, off, 30 + i);
            assert_true(tc_run_all_plans(&c, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32)) > 0);
            tc_free(&c);
        }
    /* moe above 16 rows per group: the grouped mid plans, and the grouped
     * 16-row plans with several tiles per group, some empty (m16n32w4.u2 to
     * 32 rows, m16n16w4.u2 to 64, and to 128 where the routing row takes it
     * on SM80+). */
    static const int32_t above16[][4] = {{32, 0, 17, 3}, {40, 0, 17, 3}, {100, 0, 17, 3}};
    for (size_t i = 0; i < sizeof above16 / sizeof above16[0]; i++) {
        int32_t off[5];
        tc_offsets(off, above16[i], 4);
        tc_case c;
        tc_make(&c, VG_FAMILY_FP8, VG_PATH_MOE, off[4], 256, 512, 4, off, 77 + i);
        assert_true(tc_run_all_plans(&c, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32)) > 0);
        tc_free(&c);
    }
}

/* The DeepSeek wo_a shape: 8 groups, N=1024, K=4096, 1..16 tokens per group,
 * grouped (every grouped plan) and loop (every dense plan).  The reference
 * is computed once at 16 tokens; t tokens take each group's first t rows. */
static void test_wo_a_shape(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    const int32_t G = 8, N = 1024, K = 4096, T = 16;
    int32_t off[9], cnt[8];
    for (int g = 0; g < G; g++)
        cnt[g] = T;
    tc_offsets(off, cnt, G);
    tc_case full;
    tc_make(&full, VG_FAMILY_FP8, VG_PATH_GROUPED, G * T, N, K, G, off, 2026);
    for (int32_t t = 1; t <= T; t++) {
        for (int p = 0; p < 2; p++) {
            tc_case c = full; /* shares the weight and its device copy */
            c.path = p == 0 ? VG_PATH_GROUPED : VG_PATH_LOOP;
            c.m = G * t;
            int32_t o[9], ct[8];
            for (int g = 0; g < G; g++)
                ct[g] = t;
            tc_offsets(o, ct, G);
            uint16_t *x = malloc((size_t)c.m * K * 2);
            double *ref = malloc((size_t)c.m * N * sizeof(double));
            double *ref_w16 = malloc((size_t)c.m * N * sizeof(double));
            assert_non_null(x);
            assert_non_null(ref);
            assert_non_null(ref_w16);
            for (int g = 0; g < G; g++)
                for (int j = 0; j < t; j++) {
                    memcpy(x + (size_t)(g * t + j) * K, full.x16 + (size_t)(g * T + j) * K,
                           (size_t)K * 2);
                    memcpy(ref + (size_t)(g * t + j) * N, full.ref + (size_t)(g * T + j) * N,
                           (size_t)N * sizeof(double));
                    memcpy(ref_w16 + (size_t)(g * t + j) * N,
                           full.ref_w16 + (size_t)(g * T + j) * N, (size_t)N * sizeof(double));
                }
            assert_int_equal(vg_cuda_copy_to_device(full.d_x, x, (size_t)c.m * K * 2), VG_OK);
            assert_int_equal(vg_cuda_copy_to_device(full.d_off, o, sizeof o), VG_OK);
            c.offsets = o;
            c.ref = ref;
            c.ref_w16 = ref_w16;
            c.args.path = c.path;
            c.args.m = c.m;
            c.args.offsets_host = o;
            assert_true(tc_run_all_plans(&c, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32)) > 0);
            free(x);
            free(ref);
            free(ref_w16);
        }
    }
    tc_free(&full);
}

/* Prefill M=1024, N=K=4096: every element checked written, 32 rows spread
 * over M checked against the reference. */
static void test_prefill_large(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    const int32_t M = 1024, N = 4096, K = 4096, S = 32;
    tc_case c;
    /* Build with M = S rows for the reference, then widen X to M rows whose
     * rows i*(M/S) are the reference rows. */
    tc_make(&c, VG_FAMILY_FP8, VG_PATH_DENSE, S, N, K, 1, NULL, 4242);
    uint16_t *x = malloc((size_t)M * K * 2);
    assert_non_null(x);
    uint64_t s = 99;
    for (size_t i = 0; i < (size_t)M * K; i++)
        x[i] = vg_f32_to_fp16(tc_uniform(&s));
    for (int32_t r = 0; r < S; r++)
        memcpy(x + (size_t)r * (M / S) * K, c.x16 + (size_t)r * K, (size_t)K * 2);
    void *dx = tc_upload(x, (size_t)M * K * 2), *dy = tc_upload(NULL, (size_t)M * N * 4);
    vg_gemm_args a = c.args;
    a.m = M;
    a.x = dx;
    a.y = dy;
    float *y = malloc((size_t)M * N * 4);
    float *ys = malloc((size_t)S * N * 4);
    assert_non_null(y);
    assert_non_null(ys);
    int ran = 0;
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (!vg_plan_applies(p, VG_FAMILY_FP8, VG_PATH_DENSE, M))
            continue;
        size_t need = 0;
        assert_int_equal(vg_cuda_workspace_bytes(p, &a, &need), VG_OK);
        void *ws = tc_upload(NULL, need);
        a.workspace = ws;
        a.workspace_bytes = need;
        assert_int_equal(vg_cuda_memset(dy, 0xFF, (size_t)M * N * 4), VG_OK);
        assert_int_equal(vg_cuda_gemm(p, &a), VG_OK);
        assert_int_equal(vg_cuda_synchronize(NULL), VG_OK);
        assert_int_equal(vg_cuda_copy_to_host(y, dy, (size_t)M * N * 4), VG_OK);
        for (size_t e = 0; e < (size_t)M * N; e++)
            if (!isfinite(y[e])) {
                print_error("plan %s: Y[%zu][%zu] not written\n", p->id, e / N, e % N);
                fail();
            }
        for (int32_t r = 0; r < S; r++)
            memcpy(ys + (size_t)r * N, y + (size_t)r * (M / S) * N, (size_t)N * 4);
        tc_check_against(&c, tc_ref_for(&c, p), ys, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32), p->id);
        vg_cuda_free(ws);
        ran++;
    }
    assert_true(ran > 0);
    free(x);
    free(y);
    free(ys);
    vg_cuda_free(dx);
    vg_cuda_free(dy);
    tc_free(&c);
}

/* Y must still hold the poison: nothing launched. */
static void assert_untouched(tc_case *c, const char *what)
{
    assert_int_equal(vg_cuda_synchronize(NULL), VG_OK);
    const size_t bytes = (size_t)c->m * c->n * 4;
    uint8_t *y = malloc(bytes);
    assert_non_null(y);
    assert_int_equal(vg_cuda_copy_to_host(y, c->d_y, bytes), VG_OK);
    for (size_t i = 0; i < bytes; i++)
        if (y[i] != 0xFF) {
            print_error("%s: Y changed at byte %zu although the call was refused\n", what, i);
            fail();
        }
    free(y);
}

static void expect_refused(tc_case *c, const vg_plan *p, const vg_gemm_args *a, vg_status want,
                           const char *what)
{
    tc_poison(c);
    vg_status st = vg_cuda_gemm(p, a);
    if (st != want) {
        print_error("%s: got %s, want %s\n", what, vg_status_str(st), vg_status_str(want));
        fail();
    }
    assert_true(strlen(vg_last_error()) > 0);
    assert_untouched(c, what);
}

static void test_bad_arguments_refused(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    int32_t cnt[4] = {2, 2, 2, 2}, off[5];
    tc_offsets(off, cnt, 4);
    tc_case c;
    tc_make(&c, VG_FAMILY_FP8, VG_PATH_GROUPED, 8, 256, 512, 4, off, 5);
    const vg_plan *grouped = vg_cuda_heuristic(VG_FAMILY_FP8, VG_PATH_GROUPED, 2, 256, 512, NULL);
    assert_non_null(grouped);
    vg_gemm_args a;

    int32_t bad[5] = {0, 4, 2, 6, 8}; /* decreasing */
    a = c.args;
    a.offsets_host = bad;
    expect_refused(&c, grouped, &a, VG_ERR_INVALID_ARG, "decreasing offsets");

    int32_t short_end[5] = {0, 2, 4, 6, 7}; /* does not end at M */
    a = c.args;
    a.offsets_host = short_end;
    expect_refused(&c, grouped, &a, VG_ERR_INVALID_ARG, "offsets end before M");

    a = c.args;
    a.w.scale = NULL;
    expect_refused(&c, grouped, &a, VG_ERR_INVALID_ARG, "NULL scales");

    a = c.args;
    a.w.n = 0;
    expect_refused(&c, grouped, &a, VG_ERR_INVALID_ARG, "N = 0");

    a = c.args;
    a.offsets = NULL;
    expect_refused(&c, grouped, &a, VG_ERR_INVALID_ARG, "no device offsets");

    vg_plan unknown = *grouped;
    unknown.id = "cuda.no.such.plan";
    expect_refused(&c, &unknown, &c.args, VG_ERR_NOT_FOUND, "unknown plan");

    /* A dense plan on the grouped path, a decode plan above its rows. */
    const vg_plan *dense = vg_cuda_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, 2, 256, 512, NULL);
    expect_refused(&c, dense, &c.args, VG_ERR_UNSUPPORTED, "dense plan on the grouped path");
    const vg_plan *split = NULL;
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (p->path == VG_PATH_DENSE && p->kind == VG_KIND_DECODE && p->split_k > 1 &&
            p->tile_m == 16)
            split = p;
    }
    assert_non_null(split);
    /* A split-K plan with too small a workspace (K long enough that the
     * plan really splits). */
    tc_case d;
    tc_make(&d, VG_FAMILY_FP8, VG_PATH_DENSE, 8, 256, 8192, 1, NULL, 9);
    size_t need = 0;
    assert_int_equal(vg_cuda_workspace_bytes(split, &d.args, &need), VG_OK);
    assert_true(need > 16);
    a = d.args;
    a.workspace_bytes = 16;
    expect_refused(&d, split, &a, VG_ERR_INVALID_ARG, "workspace too small");
    a.workspace = NULL;
    a.workspace_bytes = 0;
    expect_refused(&d, split, &a, VG_ERR_INVALID_ARG, "no workspace");
    tc_free(&d);
    /* Rows above the plan's max_rows (a 16-row tile that takes up to 64). */
    assert_true(split->max_rows >= 16);
    tc_case big;
    tc_make(&big, VG_FAMILY_FP8, VG_PATH_DENSE, split->max_rows + 1, 128, 256, 1, NULL, 6);
    expect_refused(&big, split, &big.args, VG_ERR_UNSUPPORTED, "rows above the plan's max_rows");
    tc_free(&big);
    tc_free(&c);
}

/* A grouped decode launch (single and split-K plans) captured in a graph,
 * replayed, and checked; the timer is refused while capturing. */
static void test_graph_capture_grouped(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    int32_t cnt[8] = {6, 6, 6, 6, 6, 6, 6, 6}, off[9];
    tc_offsets(off, cnt, 8);
    tc_case c;
    tc_make(&c, VG_FAMILY_FP8, VG_PATH_GROUPED, 48, 1024, 4096, 8, off, 8);
    void *stream = NULL;
    assert_int_equal(vg_cuda_stream_create(&stream), VG_OK);
    c.args.stream = stream;
    /* The dequantize + cuBLAS plan needs a cuBLAS handle made outside the
     * capture, as the cuda backend's open makes it. */
    int blas = 0;
    assert_int_equal(vg_cuda_blas_prepare(&blas, NULL), VG_OK);
    int ran = 0;
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (!vg_plan_applies(p, VG_FAMILY_FP8, VG_PATH_GROUPED, 6))
            continue;
        int capturing = -1;
        assert_int_equal(vg_cuda_stream_capturing(stream, &capturing), VG_OK);
        assert_int_equal(capturing, 0);
        assert_int_equal(vg_cuda_graph_begin(stream), VG_OK);
        assert_int_equal(vg_cuda_stream_capturing(stream, &capturing), VG_OK);
        assert_int_equal(capturing, 1);
        double us = 0;
        assert_int_equal(vg_cuda_time_plan(p, &c.args, 1, 3, &us, NULL), VG_ERR_STATE);
        assert_int_equal(vg_cuda_gemm(p, &c.args), VG_OK);
        void *exec = NULL;
        assert_int_equal(vg_cuda_graph_end(stream, &exec), VG_OK);
        tc_poison(&c);
        assert_int_equal(vg_cuda_graph_launch(exec, stream), VG_OK);
        assert_int_equal(vg_cuda_synchronize(stream), VG_OK);
        float *y = tc_download(&c);
        tc_check_against(&c, tc_ref_for(&c, p), y, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32), p->id);
        free(y);
        assert_int_equal(vg_cuda_graph_destroy(exec), VG_OK);
        /* And the timer works outside a capture, leaving the right Y. */
        tc_time_plan(&c, p, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32));
        ran++;
    }
    assert_true(ran >= 2);
    vg_cuda_stream_destroy(stream);
    tc_free(&c);
}

/* Split-K sums in a fixed order: two runs give the same bits. */
static void test_split_k_deterministic(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    tc_case c;
    tc_make(&c, VG_FAMILY_FP8, VG_PATH_DENSE, 9, 512, 4096, 1, NULL, 11);
    int ran = 0;
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (p->split_k < 2 || !vg_plan_applies(p, VG_FAMILY_FP8, VG_PATH_DENSE, 9))
            continue;
        tc_run_plan(&c, p, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32));
        float *y1 = tc_download(&c);
        tc_run_plan(&c, p, tc_tol(VG_FAMILY_FP8, VG_DTYPE_F32));
        float *y2 = tc_download(&c);
        assert_memory_equal(y1, y2, (size_t)c.m * c.n * 4);
        free(y1);
        free(y2);
        ran++;
    }
    assert_true(ran > 0);
    tc_free(&c);
}

/* The heuristic names a plan that applies for every family, path and size. */
static void test_heuristic_applies(void **state)
{
    (void)state;
    static const vg_path paths[] = {VG_PATH_DENSE, VG_PATH_GROUPED, VG_PATH_LOOP, VG_PATH_MOE};
    static const int32_t rows[] = {1, 6, 16, 17, 64, 65, 4096};
    assert_true(vg_cuda_plan_count() > 0 || !vgtest_have_cuda());
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("no CUDA device");
    }
    for (size_t p = 0; p < 4; p++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            if (paths[p] == VG_PATH_GROUPED && rows[r] > GROUPED_DECODE_MAX_TOKENS)
                continue;
            for (int f = 0; f < VG_FAMILY_COUNT; f++) {
                const vg_plan *h = vg_cuda_heuristic((vg_family)f, paths[p], rows[r], 1024, 4096, NULL);
                assert_non_null(h);
                assert_true(vg_plan_applies(h, (vg_family)f, paths[p], rows[r]));
            }
        }
}

/* The rule's inputs the heuristic tests sweep: SM major 7-9, each dq_rows
 * (not offered, SM80+'s, SM70's), each shared-memory limit, family, path,
 * row count and N (grouped only up to its decode limit).  Every pick must
 * be a plan that applies; check (may be NULL) says how many more ways it
 * fails, summed into the result. */
typedef int (*rule_check)(vg_family f, vg_path path, int32_t rows, int32_t n, int limit, const vg_plan *h);
static int rule_sweep(const int *limits, size_t nl, const int32_t *rows, size_t nr, const int32_t *ns,
                      size_t nn, rule_check check)
{
    static const vg_path paths[] = {VG_PATH_DENSE, VG_PATH_GROUPED, VG_PATH_LOOP, VG_PATH_MOE};
    static const int dq_rows_of[] = {0, VG_CUDA_DQBLAS_ROWS_SM80, VG_CUDA_DQBLAS_ROWS_SM70};
    int failures = 0;
    for (int major = 7; major <= 9; major++)
        for (size_t dq = 0; dq < 3; dq++)
            for (size_t l = 0; l < nl; l++)
                for (int f = 0; f < VG_FAMILY_COUNT; f++)
                    for (size_t p = 0; p < 4; p++)
                        for (size_t r = 0; r < nr; r++)
                            for (size_t n = 0; n < nn; n++) {
                                if (paths[p] == VG_PATH_GROUPED && rows[r] > GROUPED_DECODE_MAX_TOKENS)
                                    continue;
                                const vg_plan *h = vg_cuda_heuristic_for((vg_family)f, paths[p], rows[r], ns[n],
                                                                         4096, limits[l], dq_rows_of[dq], major, NULL);
                                assert_non_null(h);
                                assert_true(vg_plan_applies(h, (vg_family)f, paths[p], rows[r]));
                                if (check)
                                    failures += check((vg_family)f, paths[p], rows[r], ns[n], limits[l], h);
                            }
    return failures;
}

/* The pick's kernel fits the limit's shared memory. */
static int pick_fits(vg_family f, vg_path path, int32_t rows, int32_t n, int limit, const vg_plan *h)
{
    int smem = vg_cuda_plan_smem(h, f);
    if (smem >= 0 && smem <= limit)
        return 0;
    print_error("%s %s rows %d n %d, %d KB per block: %s takes %d bytes\n", vg_family_name(f),
                vg_path_name(path), (int)rows, (int)n, limit >> 10, h->id, smem);
    return 1;
}

/* The heuristic's plan fits the shared memory of every arch it may run on
 * (opt-in bytes per block: sm_70 96 KB, sm_86/89 99 KB, sm_80 163 KB,
 * sm_90 227 KB, sm_75 64 KB), or vg_cuda_gemm refuses it whenever the
 * runtime does not measure (tuning off, frozen, capturing).  Needs no
 * device: the plan table and the rule are host data. */
static void test_heuristic_fits_every_arch(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    static const int limits[] = {64 << 10, 96 << 10, 99 << 10, 163 << 10, 227 << 10};
    static const int32_t rows[] = {1, 6, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 256, 257, 4096};
    static const int32_t ns[] = {256, 1024, 3072, 4096, 14336};
    int failures = rule_sweep(limits, sizeof limits / sizeof limits[0], rows, sizeof rows / sizeof rows[0], ns,
                              sizeof ns / sizeof ns[0], pick_fits);
    assert_int_equal(failures, 0);
}

/* The rule's rows above 16 (KERNELS.md "The fixed rule", D36): dense on
 * SM80+ takes the 16-row decode tiles to 32 rows, the mid decode plans
 * (W streamed, tokens in 64-row tiles) to 256 unless the dequantize +
 * cuBLAS kind starts earlier (from VG_CUDA_DQBLAS_ROWS_SM80), the prefill
 * tile above (below N = 2048 the 16-row tiles to 64 rows); SM70/75 keep
 * the tiled mid and prefill plans but at 65-128 rows (65-256 below N =
 * 2048), where the quantized families take the mid decode plans (the V100
 * model, D38), and at 17-32 rows, where the quantized families take the
 * 32-token mid decode plan (D52).  Needs no device. */
static void test_rule_mid_rows(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    const int smem = 227 << 10;
    static const int32_t rows[] = {17, 32, 33, 64, 65, 128, 129, 200, 256, 257};
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            const int32_t m = rows[r];
            const vg_plan *h = vg_cuda_heuristic_for((vg_family)f, VG_PATH_DENSE, m, 4096, 4096, smem, 0, 9, NULL);
            assert_non_null(h);
            assert_int_equal(h->kind, m <= 256 ? VG_KIND_DECODE : VG_KIND_TILED);
            assert_true(h->tile_m == (m <= 32 ? 16 : m <= 256 ? 64 : h->tile_m));
            assert_true(vg_plan_offered(h, (vg_family)f, VG_PATH_DENSE, m));
            h = vg_cuda_heuristic_for((vg_family)f, VG_PATH_LOOP, m, 4096, 4096, smem,
                                      VG_CUDA_DQBLAS_ROWS_SM80, 8, NULL);
            assert_non_null(h);
            /* fp16's "dequantization" is no copy: cuBLAS from 17 rows */
            assert_int_equal(h->kind, m >= VG_CUDA_DQBLAS_ROWS_SM80 || f == VG_FAMILY_FP16
                                          ? VG_KIND_DEQUANT_BLAS
                                          : VG_KIND_DECODE);
            /* SM70 (the V100 model, KERNELS.md D38, D52, D53): the
             * quantized families' mid decode plans, of 32 tokens at 17-32
             * rows and 64 at 33-128, the tiled plans elsewhere (and for
             * fp16) */
            const int quantized = f != VG_FAMILY_FP16;
            h = vg_cuda_heuristic_for((vg_family)f, VG_PATH_DENSE, m, 4096, 4096, 96 << 10, 0, 7, NULL);
            assert_non_null(h);
            assert_true(vg_cuda_plan_smem(h, (vg_family)f) <= 96 << 10);
            if (quantized && m <= 128) {
                assert_int_equal(h->kind, VG_KIND_DECODE);
                assert_int_equal(h->tile_m, m <= 32 ? 32 : 64);
                assert_true(vg_plan_offered(h, (vg_family)f, VG_PATH_DENSE, m));
            } else {
                assert_int_equal(h->kind, VG_KIND_TILED);
            }
            /* N = 1024 on SM70: the quantized families' mid decode plans
             * to 256 rows */
            h = vg_cuda_heuristic_for((vg_family)f, VG_PATH_LOOP, m, 1024, 4096, 96 << 10, 0, 7, NULL);
            assert_int_equal(h->kind, quantized && m <= 256 ? VG_KIND_DECODE : VG_KIND_TILED);
            /* N = 2048-2560 on SM70: the mid decode plans to 256 rows too,
             * split 1 above 64 rows (the prefill tile's 129-256 rows make
             * at most 40 blocks there, D55); from N = 2624 to 128 rows */
            static const int32_t mid_n[] = {2048, 2560, 2624};
            for (size_t i = 0; i < sizeof mid_n / sizeof mid_n[0]; i++) {
                const int32_t n = mid_n[i], top = n <= 2560 ? 256 : 128;
                h = vg_cuda_heuristic_for((vg_family)f, VG_PATH_DENSE, m, n, 4096, 96 << 10, 0, 7, NULL);
                assert_int_equal(h->kind, quantized && m <= top ? VG_KIND_DECODE : VG_KIND_TILED);
                if (quantized && m > 64 && m <= top) {
                    assert_int_equal(h->split_k, 1);
                    assert_true(vg_plan_offered(h, (vg_family)f, VG_PATH_DENSE, m));
                }
            }
            /* at 17-64 rows: the fewest splits (4 at most) that make 128
             * blocks or more of 64 weight rows (N = 8192: 1, 4096: 2, 2048
             * and 1024: 4), more than one block per V100 SM (80) where N
             * allows */
            for (int32_t n = 1024; quantized && m <= 64 && n <= 16384; n *= 2) {
                h = vg_cuda_heuristic_for((vg_family)f, VG_PATH_DENSE, m, n, 4096, 96 << 10, 0, 7, NULL);
                assert_int_equal(h->tile_m, m <= 32 ? 32 : 64);
                assert_true(vg_plan_offered(h, (vg_family)f, VG_PATH_DENSE, m));
                const int32_t blocks = (n / 64) * h->split_k;
                assert_true((blocks >= 128 || h->split_k == 4) && (h->split_k == 1 || blocks / 2 < 128));
            }
            /* N = 1024 (wo_a's groups): the 16-row tiles to 64 rows */
            h = vg_cuda_heuristic_for((vg_family)f, VG_PATH_LOOP, m, 1024, 4096, smem, 0, 9, NULL);
            assert_non_null(h);
            assert_int_equal(h->kind, m <= 256 ? VG_KIND_DECODE : VG_KIND_TILED);
            assert_true(m > 64 || h->tile_m == 16);
        }
}

/* SM70/75 load stages with plain loads (no cp.async), so the rule gives
 * them two-stage tiled plans wherever one fits: a third or fourth stage
 * hides nothing there and costs shared memory (a V100 fits two blocks of
 * the 4-bit mid tile with two stages, one with four).  The last fallback,
 * m64n64k64.s3, stays for a device where no two-stage plan fits.  SM80+
 * (cp.async) keep the deeper plans first.  Needs no device. */
static void test_rule_sm70_two_stages(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    static const int limits[] = {64 << 10, 96 << 10};
    static const int32_t rows[] = {17, 64, 129, 255, 4096};
    static const vg_path paths[] = {VG_PATH_DENSE, VG_PATH_MOE};
    int tiled = 0, deep_on_sm90 = 0;
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (size_t l = 0; l < sizeof limits / sizeof limits[0]; l++)
            for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
                for (size_t pa = 0; pa < sizeof paths / sizeof paths[0]; pa++) {
                    const vg_family fam = (vg_family)f;
                    const vg_plan *h = vg_cuda_heuristic_for(fam, paths[pa], rows[r], 4096, 4096, limits[l], 0,
                                                             7, NULL);
                    assert_non_null(h);
                    if (h->kind != VG_KIND_TILED)
                        continue;
                    tiled++;
                    assert_true(vg_cuda_plan_smem(h, fam) <= limits[l]);
                    if (h->stages != 2) {
                        /* the fallback, only where no two-stage plan fits:
                         * in 64 KB (fp16's mid tile takes 70 KB with two
                         * stages), never in a V100's 96 */
                        assert_int_equal(h->tile_k, 64);
                        assert_int_equal(h->tile_m, 64);
                        assert_int_equal(limits[l], 64 << 10);
                    }
                    h = vg_cuda_heuristic_for(fam, paths[pa], rows[r], 4096, 4096, 227 << 10, 0, 9, NULL);
                    deep_on_sm90 += h->kind == VG_KIND_TILED && h->stages > 2;
                }
    assert_true(tiled > 0);
    assert_true(deep_on_sm90 > 0);
}

/* Groups above 16 rows (moe, and grouped calls rerouted to moe) on SM80+:
 * the grouped mid decode plans to 256 rows (fp16: 128), offered there (from
 * 17 rows: no grouped token tile is smaller), two K groups to 64 rows
 * (fp16: 128), but fp8's two 16-row tiles (32 weight rows a block) to 32
 * rows; above, the
 * dequantize + cuBLAS kind where offered; SM70 keeps the grouped mid tile
 * but for the quantized families at 17-32 rows (the grouped 32-token mid
 * decode plan, D52). */
static void test_rule_grouped_rows(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    const int smem = 227 << 10;
    static const int32_t rows[] = {17, 32, 33, 64, 65, 128, 129, 256, 257};
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
            const int32_t m = rows[r];
            const vg_family fam = (vg_family)f;
            const vg_plan *h = vg_cuda_heuristic_for(fam, VG_PATH_MOE, m, 1024, 4096, smem,
                                                     VG_CUDA_DQBLAS_ROWS_SM80, 9, NULL);
            assert_non_null(h);
            const int last = fam == VG_FAMILY_FP16 ? 128 : 256;
            const int wk2_last = fam == VG_FAMILY_FP16 ? 128 : 64;
            if (m > last) {
                assert_int_equal(h->kind, VG_KIND_DEQUANT_BLAS);
            } else if (fam == VG_FAMILY_FP8 && m <= 32) {
                /* two 16-row tiles per group (D43), 32 weight rows per
                 * block (D45) */
                assert_string_equal(h->id, "cuda.grouped.decode.m16n32w4.u2.sk1");
                assert_true(vg_plan_offered(h, fam, VG_PATH_MOE, m));
            } else {
                assert_int_equal(h->kind, VG_KIND_DECODE);
                assert_int_equal(h->tile_m, 64);
                assert_string_equal(h->id, m <= wk2_last ? "cuda.grouped.decode.m64n64wn4wk2.u2.sk1"
                                                         : "cuda.grouped.decode.m64n64wn4wk1.u2.sk1");
                assert_true(vg_plan_offered(h, fam, VG_PATH_MOE, m));
            }
            /* without the dequantize + cuBLAS kind, above that: the mid tile */
            h = vg_cuda_heuristic_for(fam, VG_PATH_MOE, m, 1024, 4096, smem, 0, 9, NULL);
            assert_int_equal(h->kind, m <= last ? VG_KIND_DECODE : VG_KIND_TILED);
            /* SM70: the grouped mid tile, but the quantized families'
             * grouped 32-token mid decode plan at 17-32 rows (D52) */
            h = vg_cuda_heuristic_for(fam, VG_PATH_MOE, m, 1024, 4096, 96 << 10, 0, 7, NULL);
            if (m <= 32 && fam != VG_FAMILY_FP16) {
                assert_string_equal(h->id, "cuda.grouped.decode.m32n64wn4wk1.u2.sk1");
                assert_true(vg_plan_offered(h, fam, VG_PATH_MOE, m));
            } else {
                assert_int_equal(h->kind, VG_KIND_TILED);
            }
        }
}

/* A moe call of 8 groups of N=1024 with `tokens` rows each (host offsets
 * only: the rule reads nothing else of the call). */
static vg_gemm_args moe_call(vg_family f, const int32_t tokens[8], int32_t offsets[9])
{
    vg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.path = VG_PATH_MOE;
    a.w.family = f;
    a.w.n = 1024;
    a.w.k = 4096;
    a.w.groups = 8;
    offsets[0] = 0;
    for (int g = 0; g < 8; g++)
        offsets[g + 1] = offsets[g] + tokens[g];
    a.m = offsets[8];
    a.offsets_host = offsets;
    return a;
}

/* Uneven moe routing (a router's load falls off over its experts): where
 * the largest group has 17-128 rows but the call's 16-row token tiles are
 * few for its groups with rows, the grouped 16-row plan (one tile per 16
 * rows of each group) in place of a 64-row tile per group.  SM80+: at most
 * 3/2 tiles per group to 64 rows, 9/4 at 65-128, every family but fp16;
 * SM70: the 4-bit families at most 5/4 to 64 rows (the V100 model); even
 * rows, a call the rule is not shown (NULL) and small N keep the plans the
 * largest group's rows give. */
static void test_rule_uneven_moe(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    const char *m16 = "cuda.grouped.decode.m16n16w4.u2.sk1";
    const int smem = 227 << 10;
    /* 47 rows in the first group: 11 tiles for 8 groups (the bench's skewed
     * routing at 16 tokens per group); 12 tiles for 8; 13 for 8 (over 3/2);
     * 10 for 8 with 40 in the first (5/4); 16 tiles for 8 (even, 32 each) */
    static const int32_t skew11[8] = {47, 23, 16, 12, 9, 8, 7, 6};
    static const int32_t skew12[8] = {64, 17, 16, 16, 4, 3, 2, 1};
    static const int32_t skew13[8] = {64, 17, 17, 16, 4, 3, 2, 1};
    static const int32_t skew10[8] = {40, 16, 16, 10, 8, 4, 2, 1};
    static const int32_t even32[8] = {32, 32, 32, 32, 32, 32, 32, 32};
    static const int32_t one_hot[8] = {0, 0, 40, 0, 0, 0, 0, 0};
    /* 65-128 rows in the largest group (SM80+ only): 18 tiles for 8 groups
     * (the bench's skewed routing at 32 tokens per group, 9/4); 19 for 8;
     * 129 rows, past the row; even at 80 rows (5 tiles for each) */
    static const int32_t skew18[8] = {94, 47, 31, 24, 19, 16, 13, 12};
    static const int32_t skew19[8] = {94, 47, 31, 24, 19, 17, 13, 12};
    static const int32_t skew129[8] = {129, 16, 16, 16, 16, 16, 16, 16};
    static const int32_t even80[8] = {80, 80, 80, 80, 80, 80, 80, 80};
    int32_t off[9];
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        const vg_family fam = (vg_family)f;
        const int four_bit = fam != VG_FAMILY_FP16 && fam != VG_FAMILY_FP8;
        const int sm80 = fam != VG_FAMILY_FP16; /* fp16's 16-row tiles lost there */
        struct {
            const int32_t *tokens;
            int sm80, sm70; /* 1: the routing row's 16-row plan */
        } cases[] = {{skew11, sm80, 0}, {skew12, sm80, 0}, {skew13, 0, 0},
                     {skew10, sm80, four_bit}, {even32, 0, 0}, {one_hot, 0, 0},
                     {skew18, sm80, 0}, {skew19, 0, 0}, {skew129, 0, 0}, {even80, 0, 0}};
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            vg_gemm_args a = moe_call(fam, cases[c].tokens, off);
            const int32_t rows = vg_gemm_max_group_rows(&a);
            for (int major = 7; major <= 9; major += 2) {
                const vg_plan *h = vg_cuda_heuristic_for(fam, VG_PATH_MOE, rows, 1024, 4096,
                                                         major == 9 ? smem : 96 << 10,
                                                         major == 9 ? VG_CUDA_DQBLAS_ROWS_SM80
                                                                    : VG_CUDA_DQBLAS_ROWS_SM70,
                                                         major, &a);
                const vg_plan *even = vg_cuda_heuristic_for(fam, VG_PATH_MOE, rows, 1024, 4096,
                                                            major == 9 ? smem : 96 << 10,
                                                            major == 9 ? VG_CUDA_DQBLAS_ROWS_SM80
                                                                       : VG_CUDA_DQBLAS_ROWS_SM70,
                                                            major, NULL);
                assert_non_null(h);
                assert_non_null(even);
                assert_true(vg_plan_applies(h, fam, VG_PATH_MOE, rows));
                /* the row the runtime asks on its own names the same plan */
                const vg_plan *r = vg_cuda_routing_plan_for(fam, VG_PATH_MOE, rows, 1024, major, &a);
                if (major == 9 ? cases[c].sm80 : cases[c].sm70) {
                    assert_string_equal(h->id, m16);
                    assert_true(vg_plan_offered(h, fam, VG_PATH_MOE, rows));
                    assert_ptr_equal(r, h);
                } else {
                    assert_ptr_equal(h, even);
                    assert_null(r);
                }
                /* the rows alone: 64-row tiles on SM80+ (fp16 from 129:
                 * the dequantize + cuBLAS kind), but fp8's two 16-row tiles
                 * of 32 weight rows to 32 rows (even32) */
                if (major == 9 && fam == VG_FAMILY_FP8 && rows <= 32) {
                    assert_string_equal(even->id, "cuda.grouped.decode.m16n32w4.u2.sk1");
                } else {
                    if (major == 9 && even->kind != VG_KIND_DEQUANT_BLAS)
                        assert_int_equal(even->tile_m, 64);
                    assert_string_not_equal(even->id, m16);
                }
            }
        }
        /* 30000 groups of 33 and 1 rows: few tiles, but 3 per group would
         * make 90000 grid rows, more than a launch takes */
        if (sm80) {
            enum { MANY = 30000 };
            static int32_t many[MANY + 1];
            for (int g = 0; g <= MANY; g++)
                many[g] = g + (g > 0 ? 32 : 0);
            vg_gemm_args m = moe_call(fam, skew11, off);
            m.w.groups = MANY;
            m.m = many[MANY];
            m.offsets_host = many;
            assert_null(vg_cuda_routing_plan_for(fam, VG_PATH_MOE, 33, 1024, 9, &m));
            m.w.groups = 20000; /* 60000 grid rows: taken */
            m.m = many[20000];
            assert_non_null(vg_cuda_routing_plan_for(fam, VG_PATH_MOE, 33, 1024, 9, &m));
        }
        /* N = 256 (16 N tiles): too few blocks for one tile per group */
        vg_gemm_args a = moe_call(fam, skew11, off);
        a.w.n = 256;
        const vg_plan *h = vg_cuda_heuristic_for(fam, VG_PATH_MOE, 47, 256, 4096, smem,
                                                 VG_CUDA_DQBLAS_ROWS_SM80, 9, &a);
        assert_string_not_equal(h->id, m16);
    }
}

/* Every plan id the CUDA heuristic can name is in the table: with limits
 * that no plan fits (0) or only some fit (48 KB), each preference list is
 * walked to its end, so every id in it is looked up, on every branch of the
 * rule (dq_rows, rows, N tiers, paths, families); an id the plan list does not
 * have makes vg_cuda_plan_table_check (which the backend's open calls)
 * fail, naming it. */
static void test_heuristic_names_known_plans(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    static const int limits[] = {0, 48 << 10};
    static const int32_t rows[] = {1, 6, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 255, 256, 257, 4096};
    static const int32_t ns[] = {16, 256, 512, 768, 1024, 3072, 4096, 14336};
    (void)rule_sweep(limits, sizeof limits / sizeof limits[0], rows, sizeof rows / sizeof rows[0], ns,
                     sizeof ns / sizeof ns[0], NULL);
    vg_status st = vg_cuda_plan_table_check();
    if (st != VG_OK)
        print_error("%s\n", vg_last_error());
    assert_int_equal(st, VG_OK);
}

/* The bench's stream ceiling (vg_cuda_stream_ceiling) reads what it says:
 * the read rate it implies lies between a fifth of the copy bandwidth and a
 * little above it (a pure read beats a copy's read + write by ~6 % on the
 * H200), twice the bytes take longer, and bad arguments are refused. */
static void test_stream_ceiling_sane(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    double us = 0, us2 = 0, copy_gbs = 0;
    assert_int_equal(vg_cuda_stream_ceiling(0, 5, &us), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_cuda_stream_ceiling(1 << 20, 0, &us), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_cuda_stream_ceiling(1 << 20, 5, NULL), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_cuda_copy_bandwidth((size_t)256 << 20, 5, &copy_gbs, NULL), VG_OK);
    const size_t bytes = (size_t)32 << 20;
    assert_int_equal(vg_cuda_stream_ceiling(bytes, 11, &us), VG_OK);
    assert_int_equal(vg_cuda_stream_ceiling(2 * bytes, 11, &us2), VG_OK);
    const double gbs = (double)bytes / (us * 1e-6) / 1e9;
    print_message("stream ceiling: %.2f us for 32 MiB (%.0f GB/s, %.3f of copy %.0f GB/s), %.2f us for 64 MiB\n",
                  us, gbs, gbs / copy_gbs, copy_gbs, us2);
    assert_true(isfinite(us) && us > 0);
    assert_true(gbs > 0.2 * copy_gbs && gbs < 1.2 * copy_gbs);
    assert_true(us2 > us);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_heuristic_applies),
        cmocka_unit_test(test_heuristic_fits_every_arch),
        cmocka_unit_test(test_rule_mid_rows),
        cmocka_unit_test(test_rule_sm70_two_stages),
        cmocka_unit_test(test_rule_grouped_rows),
        cmocka_unit_test(test_rule_uneven_moe),
        cmocka_unit_test(test_heuristic_names_known_plans),
        cmocka_unit_test(test_e4m3_every_code),
        cmocka_unit_test(test_dense_every_plan),
        cmocka_unit_test(test_dense_fp16_output),
        cmocka_unit_test(test_grouped_loop_moe_every_plan),
        cmocka_unit_test(test_wo_a_shape),
        cmocka_unit_test(test_prefill_large),
        cmocka_unit_test(test_bad_arguments_refused),
        cmocka_unit_test(test_graph_capture_grouped),
        cmocka_unit_test(test_split_k_deterministic),
        cmocka_unit_test(test_stream_ceiling_sane),
    };
    return VGTEST_MAIN("cuda_fp8", tests);
}
