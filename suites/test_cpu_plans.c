/*
 * The CPU backend (kernels/cpu/): every plan on every family and on each
 * path it serves, against the FP64 reference on the dequantized weights;
 * split-K determinism (the same bits twice); FP16 output equal to the RNE of
 * the FP32 output; the plan table and the heuristic rule; and the argument
 * checks, each bad argument refused without touching a NaN-poisoned Y.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"
#include "vgtest.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"

/* ---- a test case: X, quantized W, offsets, reference Y ---------------------------- */

enum { N = 72, K = 520, G = 3 }; /* ragged against every tile_n, tile_k and split */

typedef struct gemm_case {
    vg_family family;
    vg_path path;
    int32_t m, groups;
    int32_t offsets[G + 1];
    uint16_t *x;   /* FP16 bits [m][K] */
    float *xf;     /* the same, widened */
    vg_qweight q;  /* groups x N x K */
    float *wd;     /* dequantized */
    double *ref;   /* [m][N] */
    double *abssum; /* [m][N]: sum_k |x w|, scales the tolerance */
} gemm_case;

static uint32_t rng;
static float urand(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((double)(rng >> 8) / 8388608.0 - 1.0);
}

static void case_free(gemm_case *c)
{
    free(c->x);
    free(c->xf);
    free(c->wd);
    free(c->ref);
    free(c->abssum);
    vg_qweight_free(&c->q);
    memset(c, 0, sizeof *c);
}

/* Set while a case is made for a dequantize-once plan, which multiplies by
 * the weight rounded to FP16: the reference then uses that rounding too
 * (done here with the format's own RNE, not the plan's code). */
static int case_w_as_fp16;

/* offsets == NULL for dense. */
static void case_make(gemm_case *c, vg_family f, vg_path path, int32_t m, const int32_t *offsets,
                      uint32_t seed)
{
    memset(c, 0, sizeof *c);
    c->family = f;
    c->path = path;
    c->m = m;
    c->groups = offsets ? G : 1;
    if (offsets)
        memcpy(c->offsets, offsets, sizeof c->offsets);
    rng = seed;
    size_t wn = (size_t)c->groups * N * K;
    float *w = malloc(wn * sizeof *w);
    c->x = malloc((size_t)m * K * sizeof *c->x + 2);
    c->xf = malloc((size_t)m * K * sizeof *c->xf + 4);
    c->wd = malloc(wn * sizeof *c->wd);
    c->ref = malloc((size_t)m * N * sizeof *c->ref + 8);
    c->abssum = malloc((size_t)m * N * sizeof *c->abssum + 8);
    assert_true(w && c->x && c->xf && c->wd && c->ref && c->abssum);
    for (size_t i = 0; i < wn; i++)
        w[i] = urand() * 0.5f;
    for (size_t i = 0; i < (size_t)m * K; i++) {
        c->x[i] = vg_f32_to_fp16(urand() * 2.0f);
        c->xf[i] = vg_fp16_to_f32(c->x[i]);
    }
    assert_int_equal(vg_quantize(f, w, c->groups, N, K, &c->q), VG_OK);
    free(w);
    assert_int_equal(vg_dequantize(&c->q.w, c->wd), VG_OK);
    if (case_w_as_fp16)
        for (size_t i = 0; i < wn; i++)
            c->wd[i] = vg_fp16_to_f32(vg_f32_to_fp16(c->wd[i]));
    assert_int_equal(vg_reference_gemm(path, m, N, K, c->groups, offsets, c->xf, c->wd, c->ref),
                     VG_OK);
    /* sum |x||w| per output, for the FP32 error bound */
    for (int32_t r = 0; r < m; r++) {
        int32_t g = 0;
        while (offsets && r >= c->offsets[g + 1])
            g++;
        for (int32_t j = 0; j < N; j++) {
            double s = 0;
            const float *wr = c->wd + ((size_t)g * N + j) * K;
            for (int32_t k = 0; k < K; k++)
                s += fabs((double)c->xf[(size_t)r * K + k] * wr[k]);
            c->abssum[(size_t)r * N + j] = s;
        }
    }
}

static vg_gemm_args case_args(const gemm_case *c, void *y, vg_dtype dt)
{
    vg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.path = c->path;
    a.m = c->m;
    a.w = c->q.w;
    a.offsets = c->path == VG_PATH_DENSE ? NULL : c->offsets;
    a.offsets_host = a.offsets;
    a.x = c->x;
    a.y = y;
    a.y_dtype = dt;
    return a;
}

/* Runs plan p on case c into y (poisoned with NaN first), with a workspace
 * of the size the backend asks for. */
static void run(const vg_plan *p, const gemm_case *c, void *y, vg_dtype dt)
{
    size_t elem = dt == VG_DTYPE_F32 ? 4 : 2;
    memset(y, 0xFF, (size_t)c->m * N * elem);
    vg_gemm_args a = case_args(c, y, dt);
    size_t ws = 0;
    assert_int_equal(vg_cpu_workspace_bytes(p, &a, &ws), VG_OK);
    if (p->kind == VG_KIND_DEQUANT_BLAS) /* one group's FP16 copy */
        assert_int_equal(ws, (size_t)N * K * 2);
    else if (p->split_k > 1)
        assert_int_equal(ws, (size_t)p->split_k * c->m * N * sizeof(float));
    else
        assert_int_equal(ws, 0);
    void *buf = ws ? malloc(ws) : NULL;
    a.workspace = buf;
    a.workspace_bytes = ws;
    vg_status st = vg_cpu_gemm(p, &a);
    free(buf);
    if (st != VG_OK) {
        print_error("%s on %s %s m=%d: %s\n", p->id, vg_family_name(c->family),
                    vg_path_name(c->path), (int)c->m, vg_last_error());
        fail();
    }
}

static void check_against_reference(const vg_plan *p, const gemm_case *c, const float *y)
{
    double norm = 0, err = 0;
    for (size_t i = 0; i < (size_t)c->m * N; i++) {
        /* FP32 accumulation over K terms: |error| <= K * 2^-23 * sum |x w| */
        double tol = K * 0x1p-23 * c->abssum[i] + 1e-30;
        if (!isfinite(y[i]) || !(fabs(y[i] - c->ref[i]) <= tol)) {
            print_error("%s %s %s: y[%zu][%zu] = %.9g, reference %.9g, tolerance %.3g\n", p->id,
                        vg_family_name(c->family), vg_path_name(c->path), i / N, i % N,
                        (double)y[i], c->ref[i], tol);
            fail();
        }
        norm += c->ref[i] * c->ref[i];
        err += (y[i] - c->ref[i]) * (y[i] - c->ref[i]);
    }
    assert_true(norm > 0); /* an all-zero result cannot pass */
    assert_true(sqrt(err / norm) < 1e-5);
}

/* One plan on one family: each path the plan serves, FP32 and FP16, twice. */
static void plan_on_family(const vg_plan *p, vg_family f)
{
    static const int32_t loop_decode[G + 1] = {0, 5, 5, 16};
    static const int32_t loop_mid[G + 1] = {0, 20, 20, 57};
    static const int32_t loop_prefill[G + 1] = {0, 70, 71, 100};
    static const int32_t grouped_rows[G + 1] = {0, 6, 6, 22};
    static const int32_t moe_small[G + 1] = {0, 1, 12, 25};
    static const int32_t moe_large[G + 1] = {0, 20, 21, 40};

    struct { vg_path path; int32_t m; const int32_t *offsets; } runs[2];
    if (p->path == VG_PATH_DENSE) {
        int32_t m = p->max_rows == 16 ? 13 : p->max_rows == 64 ? 37 : 70;
        const int32_t *lo = p->max_rows == 16 ? loop_decode
                          : p->max_rows == 64 ? loop_mid : loop_prefill;
        runs[0].path = VG_PATH_DENSE, runs[0].m = m, runs[0].offsets = NULL;
        runs[1].path = VG_PATH_LOOP, runs[1].m = lo[G], runs[1].offsets = lo;
    } else {
        const int32_t *mo = p->max_rows == 0 ? moe_large : moe_small;
        runs[0].path = VG_PATH_GROUPED, runs[0].m = grouped_rows[G], runs[0].offsets = grouped_rows;
        runs[1].path = VG_PATH_MOE, runs[1].m = mo[G], runs[1].offsets = mo;
    }
    for (int r = 0; r < 2; r++) {
        gemm_case c;
        case_w_as_fp16 = p->kind == VG_KIND_DEQUANT_BLAS;
        case_make(&c, f, runs[r].path, runs[r].m, runs[r].offsets, 1000u + (uint32_t)f * 7u + r);
        case_w_as_fp16 = 0;
        size_t count = (size_t)c.m * N;
        float *y = malloc(count * sizeof *y), *y2 = malloc(count * sizeof *y2);
        uint16_t *h = malloc(count * sizeof *h);
        assert_true(y && y2 && h);
        run(p, &c, y, VG_DTYPE_F32);
        check_against_reference(p, &c, y);
        run(p, &c, y2, VG_DTYPE_F32); /* deterministic, split-K included */
        assert_memory_equal(y, y2, count * sizeof *y);
        run(p, &c, h, VG_DTYPE_F16); /* FP16 output = RNE of the FP32 result */
        for (size_t i = 0; i < count; i++)
            if (h[i] != vg_f32_to_fp16(y[i])) {
                print_error("%s: FP16 y[%zu] = 0x%04X, want RNE(%.9g) = 0x%04X\n", p->id, i,
                            h[i], (double)y[i], vg_f32_to_fp16(y[i]));
                fail();
            }
        free(y);
        free(y2);
        free(h);
        case_free(&c);
    }
}

typedef struct plan_family { const vg_plan *plan; vg_family family; } plan_family;

static void plan_family_test(void **state)
{
    const plan_family *pf = *state;
    plan_on_family(pf->plan, pf->family);
}

/* ---- the table and the rule ------------------------------------------------------------- */

static void plan_table_is_well_formed(void **state)
{
    (void)state;
    size_t n = vg_cpu_plan_count();
    assert_true(n >= 8 && n <= 14);
    assert_null(vg_cpu_plan_at(n));
    int dense = 0, grouped = 0, sk[5] = {0};
    for (size_t i = 0; i < n; i++) {
        const vg_plan *p = vg_cpu_plan_at(i);
        assert_non_null(p);
        assert_string_equal(p->backend, "cpu");
        assert_int_equal(p->families, VG_ALL_FAMILIES);
        assert_true(p->path == VG_PATH_DENSE || p->path == VG_PATH_GROUPED);
        char want[96];
        assert_true(p->kind == VG_KIND_TILED || p->kind == VG_KIND_DEQUANT_BLAS);
        snprintf(want, sizeof want, "cpu.%s.%sm%dn%dk%d.sk%d", vg_path_name(p->path),
                 p->kind == VG_KIND_DEQUANT_BLAS ? "dq." : "", (int)p->tile_m, (int)p->tile_n,
                 (int)p->tile_k, (int)p->split_k);
        assert_string_equal(p->id, want); /* the id says what the plan is */
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(p->id, vg_cpu_plan_at(j)->id);
        dense += p->path == VG_PATH_DENSE;
        grouped += p->path == VG_PATH_GROUPED;
        if (p->path == VG_PATH_DENSE && p->max_rows == 16 && p->split_k <= 4)
            sk[p->split_k] = 1;
        if (p->path == VG_PATH_GROUPED && p->max_rows)
            assert_true(p->max_rows <= GROUPED_DECODE_MAX_TOKENS);
    }
    assert_true(dense > 0 && grouped > 0);
    assert_true(sk[1] && sk[2] && sk[4]); /* decode split-K 1, 2 and 4 */
}

static void heuristic_rule(void **state)
{
    (void)state;
    /* decode: split-K by K */
    assert_int_equal(vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, 1, 4096, 512, NULL)->split_k, 1);
    assert_int_equal(vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, 16, 4096, 4096, NULL)->split_k, 2);
    assert_int_equal(vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, 4, 4096, 8192, NULL)->split_k, 4);
    assert_string_equal(vg_cpu_heuristic(VG_FAMILY_AWQ, VG_PATH_DENSE, 40, 4096, 4096, NULL)->id,
                        "cpu.dense.m16n64k128.sk1");
    assert_string_equal(vg_cpu_heuristic(VG_FAMILY_AWQ, VG_PATH_DENSE, 65, 4096, 4096, NULL)->id,
                        "cpu.dense.m32n64k128.sk1");
    assert_string_equal(vg_cpu_heuristic(VG_FAMILY_NVFP4, VG_PATH_GROUPED, 6, 1024, 4096, NULL)->id,
                        "cpu.grouped.m16n32k128.sk1");
    /* loop follows the dense rule on its largest group */
    assert_ptr_equal(vg_cpu_heuristic(VG_FAMILY_FP16, VG_PATH_LOOP, 40, 1024, 4096, NULL),
                     vg_cpu_heuristic(VG_FAMILY_FP16, VG_PATH_DENSE, 40, 1024, 4096, NULL));
    /* whatever the call, the rule's plan applies to it (grouped stops at 16 rows) */
    static const int32_t rows[] = {0, 1, 6, 16, 17, 40, 64, 65, 500};
    static const int32_t ks[] = {64, 512, 4096, 8192};
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int path = 0; path < VG_PATH_COUNT; path++)
            for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++)
                for (size_t k = 0; k < sizeof ks / sizeof ks[0]; k++) {
                    const vg_plan *p = vg_cpu_heuristic((vg_family)f, (vg_path)path, rows[r],
                                                        1024, ks[k], NULL);
                    assert_non_null(p);
                    if (path == VG_PATH_GROUPED && rows[r] > GROUPED_DECODE_MAX_TOKENS)
                        continue;
                    assert_true(vg_plan_applies(p, (vg_family)f, (vg_path)path, rows[r]));
                }
    assert_null(vg_cpu_heuristic(VG_FAMILY_COUNT, VG_PATH_DENSE, 1, 64, 64, NULL));
}

/* The token tiles a rule reads of a call: each group's rows rounded up to
 * whole tiles, empty groups none; dense is one group of M rows. */
static void row_tiles_count(void **state)
{
    (void)state;
    vg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.path = VG_PATH_DENSE;
    a.m = 17;
    int32_t busy = -1;
    assert_int_equal(vg_gemm_row_tiles(&a, 16, &busy), 2);
    assert_int_equal(busy, 1);
    a.m = 0;
    assert_int_equal(vg_gemm_row_tiles(&a, 16, &busy), 0);
    assert_int_equal(busy, 0);
    static const int32_t offsets[] = {0, 40, 40, 57, 60, 76};
    a.path = VG_PATH_MOE;
    a.w.groups = 5;
    a.m = 76;
    a.offsets_host = offsets;   /* rows 40, 0, 17, 3, 16 */
    assert_int_equal(vg_gemm_row_tiles(&a, 16, &busy), 3 + 0 + 2 + 1 + 1);
    assert_int_equal(busy, 4);
    assert_int_equal(vg_gemm_row_tiles(&a, 64, NULL), 4);
    assert_int_equal(vg_gemm_row_tiles(&a, 1, NULL), 76);
}

/* The dequantize + cuBLAS kind's batches: groups with rows in group order,
 * empty ones skipped, at most `batch` a batch, runs of equal rows counted
 * (each is one group of cuBLAS's grouped GEMM). */
static void group_batches(void **state)
{
    (void)state;
    vg_gemm_args a;
    memset(&a, 0, sizeof a);
    vg_group_batch b;
    int32_t next = 0;
    a.path = VG_PATH_DENSE;
    a.m = 300;
    assert_int_equal(vg_gemm_next_batch(&a, 8, &next, &b), 1);
    assert_int_equal(b.slots, 1);
    assert_int_equal(b.group[0], 0);
    assert_int_equal(b.row0[0], 0);
    assert_int_equal(b.rows[0], 300);
    assert_int_equal(b.runs, 1);
    assert_int_equal(vg_gemm_next_batch(&a, 8, &next, &b), 0);

    /* rows 17 17 0 40 40 40 3 0 25 25 9 33: ten groups with rows */
    static const int32_t counts[] = {17, 17, 0, 40, 40, 40, 3, 0, 25, 25, 9, 33};
    int32_t offsets[13] = {0};
    for (int g = 0; g < 12; g++)
        offsets[g + 1] = offsets[g] + counts[g];
    a.path = VG_PATH_MOE;
    a.w.groups = 12;
    a.m = offsets[12];
    a.offsets_host = offsets;
    next = 0;
    assert_int_equal(vg_gemm_next_batch(&a, 8, &next, &b), 1);
    static const int32_t first[] = {0, 1, 3, 4, 5, 6, 8, 9};
    assert_int_equal(b.slots, 8);
    for (int s = 0; s < 8; s++) {
        assert_int_equal(b.group[s], first[s]);
        assert_int_equal(b.row0[s], offsets[first[s]]);
        assert_int_equal(b.rows[s], counts[first[s]]);
    }
    static const int32_t runs[] = {2, 3, 1, 2}; /* 17 17 | 40 40 40 | 3 | 25 25 */
    assert_int_equal(b.runs, 4);
    for (int r = 0; r < 4; r++)
        assert_int_equal(b.run_slots[r], runs[r]);
    assert_int_equal(next, 10);
    assert_int_equal(vg_gemm_next_batch(&a, 8, &next, &b), 1);
    assert_int_equal(b.slots, 2);
    assert_int_equal(b.group[0], 10);
    assert_int_equal(b.group[1], 11);
    assert_int_equal(b.row0[1], offsets[11]);
    assert_int_equal(b.runs, 2);
    assert_int_equal(vg_gemm_next_batch(&a, 8, &next, &b), 0);
    /* one group a batch: ten batches; a batch past the most is the most */
    next = 0;
    int batches = 0;
    while (vg_gemm_next_batch(&a, 1, &next, &b)) {
        assert_int_equal(b.slots, 1);
        assert_int_equal(b.runs, 1);
        batches++;
    }
    assert_int_equal(batches, 10);
    next = 0;
    assert_int_equal(vg_gemm_next_batch(&a, 100, &next, &b), 1);
    assert_int_equal(b.slots, VG_GEMM_MAX_BATCH);
    /* trailing empty groups: no batch */
    static const int32_t tail[] = {0, 5, 5, 5};
    a.w.groups = 3;
    a.m = 5;
    a.offsets_host = tail;
    next = 1;
    assert_int_equal(vg_gemm_next_batch(&a, 8, &next, &b), 0);
    assert_int_equal(next, 3);
}

/* ---- argument checks: refused, Y untouched --------------------------------------------- */

typedef struct bad_case {
    const char *what;
    vg_family family;
    vg_path path;
    void (*mutate)(vg_gemm_args *a, vg_plan *p);
    vg_status want;
} bad_case;

static int32_t bad_offsets[G + 1];
static uint16_t misaligned_x[64];

static void m_null_x(vg_gemm_args *a, vg_plan *p) { (void)p; a->x = NULL; }
static void m_null_q(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.q = NULL; }
static void m_null_scale(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.scale = NULL; }
static void m_null_zero(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.zero = NULL; }
static void m_neg_m(vg_gemm_args *a, vg_plan *p) { (void)p; a->m = -1; }
static void m_zero_n(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.n = 0; }
static void m_zero_k(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.k = 0; }
static void m_awq_k(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.k = K - 4; }
static void m_fp4_k(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.k = K - 1; }
static void m_zero_groups(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.groups = 0; }
static void m_dense_groups(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.groups = 2; }
static void m_bad_family(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.family = VG_FAMILY_COUNT; }
static void m_bad_path(vg_gemm_args *a, vg_plan *p) { (void)p; a->path = VG_PATH_COUNT; }
static void m_bad_dtype(vg_gemm_args *a, vg_plan *p) { (void)p; a->y_dtype = (vg_dtype)7; }
static void m_ts_zero(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.tensor_scale = 0.0f; }
static void m_ts_nan(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.tensor_scale = NAN; }
static void m_ts_inf(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.tensor_scale = INFINITY; }
static void m_ts_neg(vg_gemm_args *a, vg_plan *p) { (void)p; a->w.tensor_scale = -1.0f; }
static void m_x_misaligned(vg_gemm_args *a, vg_plan *p)
{
    (void)p;
    a->x = (const uint16_t *)((const char *)misaligned_x + 1);
}
static void m_no_offsets(vg_gemm_args *a, vg_plan *p) { (void)p; a->offsets = NULL; }
static void m_no_offsets_host(vg_gemm_args *a, vg_plan *p) { (void)p; a->offsets_host = NULL; }
static void set_offsets(vg_gemm_args *a, int32_t o0, int32_t o1, int32_t o2, int32_t o3)
{
    bad_offsets[0] = o0, bad_offsets[1] = o1, bad_offsets[2] = o2, bad_offsets[3] = o3;
    a->offsets = a->offsets_host = bad_offsets;
}
static void m_off_not_zero(vg_gemm_args *a, vg_plan *p) { (void)p; set_offsets(a, 1, 6, 6, a->m); }
static void m_off_decreasing(vg_gemm_args *a, vg_plan *p) { (void)p; set_offsets(a, 0, 9, 6, a->m); }
static void m_off_beyond(vg_gemm_args *a, vg_plan *p) { (void)p; set_offsets(a, 0, a->m + 1, a->m + 1, a->m); }
static void m_off_short(vg_gemm_args *a, vg_plan *p) { (void)p; set_offsets(a, 0, 6, 6, a->m - 1); }
static void m_too_many_rows(vg_gemm_args *a, vg_plan *p) { (void)p; set_offsets(a, 0, 0, 0, a->m); }
static void m_no_workspace(vg_gemm_args *a, vg_plan *p) { (void)a; p->split_k = 2; }
static void m_small_workspace(vg_gemm_args *a, vg_plan *p)
{
    static float small[16];
    p->split_k = 2;
    a->workspace = small;
    a->workspace_bytes = sizeof small;
}
static void m_plan_cuda(vg_gemm_args *a, vg_plan *p) { (void)a; p->backend = "cuda"; }
static void m_plan_grouped(vg_gemm_args *a, vg_plan *p) { (void)a; p->path = VG_PATH_GROUPED; }
static void m_plan_rows(vg_gemm_args *a, vg_plan *p) { (void)a; p->max_rows = 4; }
static void m_plan_tile(vg_gemm_args *a, vg_plan *p) { (void)a; p->tile_n = 48; }
static void m_plan_family(vg_gemm_args *a, vg_plan *p)
{
    (void)a;
    p->families = VG_FAMILY_BIT(VG_FAMILY_FP16);
}

static const bad_case bad_cases[] = {
    {"X NULL", VG_FAMILY_FP8, VG_PATH_DENSE, m_null_x, VG_ERR_INVALID_ARG},
    {"w.q NULL", VG_FAMILY_FP16, VG_PATH_DENSE, m_null_q, VG_ERR_INVALID_ARG},
    {"fp8 scale NULL", VG_FAMILY_FP8, VG_PATH_DENSE, m_null_scale, VG_ERR_INVALID_ARG},
    {"awq scale NULL", VG_FAMILY_AWQ, VG_PATH_DENSE, m_null_scale, VG_ERR_INVALID_ARG},
    {"awq zero NULL", VG_FAMILY_AWQ, VG_PATH_DENSE, m_null_zero, VG_ERR_INVALID_ARG},
    {"mxfp4 scale NULL", VG_FAMILY_MXFP4, VG_PATH_DENSE, m_null_scale, VG_ERR_INVALID_ARG},
    {"M < 0", VG_FAMILY_FP8, VG_PATH_DENSE, m_neg_m, VG_ERR_INVALID_ARG},
    {"N = 0", VG_FAMILY_FP8, VG_PATH_DENSE, m_zero_n, VG_ERR_INVALID_ARG},
    {"K = 0", VG_FAMILY_FP8, VG_PATH_DENSE, m_zero_k, VG_ERR_INVALID_ARG},
    {"awq K % 8", VG_FAMILY_AWQ, VG_PATH_DENSE, m_awq_k, VG_ERR_UNSUPPORTED},
    {"nvfp4 K odd", VG_FAMILY_NVFP4, VG_PATH_DENSE, m_fp4_k, VG_ERR_UNSUPPORTED},
    {"groups = 0", VG_FAMILY_FP8, VG_PATH_GROUPED, m_zero_groups, VG_ERR_INVALID_ARG},
    {"dense with 2 groups", VG_FAMILY_FP8, VG_PATH_DENSE, m_dense_groups, VG_ERR_INVALID_ARG},
    {"invalid family", VG_FAMILY_FP8, VG_PATH_DENSE, m_bad_family, VG_ERR_INVALID_ARG},
    {"invalid path", VG_FAMILY_FP8, VG_PATH_DENSE, m_bad_path, VG_ERR_INVALID_ARG},
    {"invalid y dtype", VG_FAMILY_FP8, VG_PATH_DENSE, m_bad_dtype, VG_ERR_INVALID_ARG},
    {"nvfp4 tensor_scale 0", VG_FAMILY_NVFP4, VG_PATH_DENSE, m_ts_zero, VG_ERR_INVALID_ARG},
    {"nvfp4 tensor_scale NaN", VG_FAMILY_NVFP4, VG_PATH_DENSE, m_ts_nan, VG_ERR_INVALID_ARG},
    {"nvfp4 tensor_scale inf", VG_FAMILY_NVFP4, VG_PATH_DENSE, m_ts_inf, VG_ERR_INVALID_ARG},
    {"nvfp4 tensor_scale < 0", VG_FAMILY_NVFP4, VG_PATH_DENSE, m_ts_neg, VG_ERR_INVALID_ARG},
    {"X misaligned", VG_FAMILY_FP8, VG_PATH_DENSE, m_x_misaligned, VG_ERR_INVALID_ARG},
    {"grouped offsets NULL", VG_FAMILY_FP8, VG_PATH_GROUPED, m_no_offsets, VG_ERR_INVALID_ARG},
    {"grouped offsets_host NULL", VG_FAMILY_FP8, VG_PATH_GROUPED, m_no_offsets_host, VG_ERR_INVALID_ARG},
    {"loop offsets NULL", VG_FAMILY_FP8, VG_PATH_LOOP, m_no_offsets, VG_ERR_INVALID_ARG},
    {"offsets[0] != 0", VG_FAMILY_FP8, VG_PATH_GROUPED, m_off_not_zero, VG_ERR_INVALID_ARG},
    {"offsets decreasing", VG_FAMILY_FP8, VG_PATH_MOE, m_off_decreasing, VG_ERR_INVALID_ARG},
    {"offsets beyond M", VG_FAMILY_FP8, VG_PATH_LOOP, m_off_beyond, VG_ERR_INVALID_ARG},
    {"offsets[G] != M", VG_FAMILY_FP8, VG_PATH_GROUPED, m_off_short, VG_ERR_INVALID_ARG},
    {"grouped > 16 rows", VG_FAMILY_FP8, VG_PATH_GROUPED, m_too_many_rows, VG_ERR_UNSUPPORTED},
    {"split-K, workspace NULL", VG_FAMILY_FP8, VG_PATH_DENSE, m_no_workspace, VG_ERR_INVALID_ARG},
    {"split-K, workspace small", VG_FAMILY_FP8, VG_PATH_DENSE, m_small_workspace, VG_ERR_INVALID_ARG},
    {"plan of another backend", VG_FAMILY_FP8, VG_PATH_DENSE, m_plan_cuda, VG_ERR_INVALID_ARG},
    {"grouped plan on dense", VG_FAMILY_FP8, VG_PATH_DENSE, m_plan_grouped, VG_ERR_UNSUPPORTED},
    {"plan max_rows exceeded", VG_FAMILY_FP8, VG_PATH_DENSE, m_plan_rows, VG_ERR_UNSUPPORTED},
    {"plan tile_n unsupported", VG_FAMILY_FP8, VG_PATH_DENSE, m_plan_tile, VG_ERR_INVALID_ARG},
    {"plan without the family", VG_FAMILY_FP8, VG_PATH_DENSE, m_plan_family, VG_ERR_UNSUPPORTED},
};

static void bad_arguments_leave_y_untouched(void **state)
{
    (void)state;
    static const int32_t offs[G + 1] = {0, 6, 6, 17};
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        const bad_case *b = &bad_cases[i];
        gemm_case c;
        int dense = b->path == VG_PATH_DENSE || b->path == VG_PATH_COUNT;
        case_make(&c, b->family, b->path, dense ? 16 : 17, dense ? NULL : offs, 500u + (uint32_t)i);
        size_t count = (size_t)c.m * N;
        float *y = malloc(count * sizeof *y);
        assert_non_null(y);
        memset(y, 0xFF, count * sizeof *y); /* NaN poison */
        vg_plan plan = *(dense ? vg_cpu_heuristic(b->family, VG_PATH_DENSE, 16, N, K, NULL)
                               : vg_cpu_heuristic(b->family, VG_PATH_GROUPED, 6, N, K, NULL));
        plan.split_k = 1;
        plan.id = "test.copy";
        vg_gemm_args a = case_args(&c, y, VG_DTYPE_F32);
        b->mutate(&a, &plan);
        vg_clear_error();
        vg_status st = vg_cpu_gemm(&plan, &a);
        if (st != b->want || strlen(vg_last_error()) == 0) {
            print_error("%s: status %d '%s', want %d with a message\n", b->what, (int)st,
                        vg_last_error(), (int)b->want);
            fail();
        }
        for (size_t j = 0; j < count; j++)
            if (!isnan(y[j])) {
                print_error("%s: Y[%zu] was written on error\n", b->what, j);
                fail();
            }
        free(y);
        case_free(&c);
    }
    /* NULL plan, NULL args */
    assert_int_equal(vg_cpu_gemm(NULL, NULL), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_cpu_gemm(vg_cpu_plan_at(0), NULL), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_gemm_check_args(NULL), VG_ERR_INVALID_ARG);
}

static void good_arguments_write_all_of_y(void **state)
{
    (void)state;
    static const int32_t offs[G + 1] = {0, 6, 6, 16};
    gemm_case c;
    case_make(&c, VG_FAMILY_AWQ, VG_PATH_GROUPED, 16, offs, 9);
    float y[16 * N];
    memset(y, 0xFF, sizeof y);
    vg_gemm_args a = case_args(&c, y, VG_DTYPE_F32);
    assert_int_equal(vg_gemm_check_args(&a), VG_OK);
    assert_int_equal(vg_cpu_gemm(vg_cpu_heuristic(VG_FAMILY_AWQ, VG_PATH_GROUPED, 6, N, K, NULL), &a),
                     VG_OK);
    for (size_t j = 0; j < 16 * N; j++)
        assert_false(isnan(y[j]));
    case_free(&c);
}

static void zero_rows_are_a_no_op(void **state)
{
    (void)state;
    gemm_case c;
    case_make(&c, VG_FAMILY_FP8, VG_PATH_DENSE, 1, NULL, 10);
    float y = NAN;
    vg_gemm_args a = case_args(&c, &y, VG_DTYPE_F32);
    a.m = 0;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++) {
        const vg_plan *p = vg_cpu_plan_at(i);
        if (p->path != VG_PATH_DENSE)
            continue;
        assert_int_equal(vg_cpu_gemm(p, &a), VG_OK); /* split-K needs no workspace here */
        assert_true(isnan(y));
    }
    a.x = NULL, a.y = NULL; /* nothing to read or write */
    assert_int_equal(vg_gemm_check_args(&a), VG_OK);
    case_free(&c);
}

int main(int argc, char **argv)
{
    enum { MAX_TESTS = 96 };
    static struct CMUnitTest tests[MAX_TESTS];
    static plan_family pfs[MAX_TESTS];
    static char names[MAX_TESTS][96];
    size_t n = 0;
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(plan_table_is_well_formed);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(heuristic_rule);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(row_tiles_count);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(group_batches);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(bad_arguments_leave_y_untouched);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(good_arguments_write_all_of_y);
    tests[n++] = (struct CMUnitTest)cmocka_unit_test(zero_rows_are_a_no_op);
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        for (int f = 0; f < VG_FAMILY_COUNT && n < MAX_TESTS; f++) {
            pfs[n].plan = vg_cpu_plan_at(i);
            pfs[n].family = (vg_family)f;
            snprintf(names[n], sizeof names[n], "%s/%s", pfs[n].plan->id,
                     vg_family_name((vg_family)f));
            tests[n].name = names[n];
            tests[n].test_func = plan_family_test;
            tests[n].setup_func = NULL;
            tests[n].teardown_func = NULL;
            tests[n].initial_state = &pfs[n];
            n++;
        }
    return vgtest_main("cpu_plans", tests, n, argc, argv);
}
