/*
 * Quantizers (include/voltgate/quant.h): hand-worked small cases that pin
 * each family's layout and rounding, then per-family error bounds on random
 * weights with ragged edges -- every dequantized element within half a step
 * of the original on its own scale's grid; the FP8 block scale equal to
 * block absmax / 448 -- grouped stacking, and the refused inputs.
 *
 * The grids are built here from the format definitions (ldexp), not from
 * formats.h, so a wrong decoder cannot vouch for itself.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgtest.h"
#include "voltgate/quant.h"

/* ---- independent grids ---------------------------------------------------------- */

static double e4m3_pos[127];  /* codes 0x00..0x7E */
static double e2m1_pos[8];    /* codes 0..7 */
static double fp16_pos[31744]; /* codes 0x0000..0x7BFF */

static void build_grids(void)
{
    for (int c = 0; c < 127; c++) {
        int e = c >> 3, m = c & 7;
        e4m3_pos[c] = e ? ldexp(8 + m, e - 7 - 3) : ldexp(m, -9);
    }
    for (int c = 0; c < 8; c++) {
        int e = c >> 1, m = c & 1;
        e2m1_pos[c] = e ? ldexp(2 + m, e - 1 - 1) : ldexp(m, -1);
    }
    for (int c = 0; c < 31744; c++) {
        int e = c >> 10, m = c & 1023;
        fp16_pos[c] = e ? ldexp(1024 + m, e - 15 - 10) : ldexp(m, -24);
    }
}

static int setup_grids(void **state)
{
    (void)state;
    build_grids();
    return 0;
}

/* Half the gap between the grid points around t >= 0; beyond the top, the
 * distance to the top (what saturation costs). */
static double half_gap(const double *grid, int n, double t)
{
    if (t >= grid[n - 1])
        return t - grid[n - 1];
    int lo = 0, hi = n - 1; /* grid[lo] <= t < grid[hi] */
    while (hi - lo > 1) {
        int mid = (lo + hi) / 2;
        if (grid[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return (grid[hi] - grid[lo]) / 2;
}

static double ref_e4m3(uint8_t c)
{
    return (c & 0x80) ? -e4m3_pos[c & 0x7F] : e4m3_pos[c & 0x7F];
}

static double ref_fp16(uint16_t h)
{
    return (h & 0x8000) ? -fp16_pos[h & 0x7FFF] : fp16_pos[h & 0x7FFF];
}

/* ---- random weights ------------------------------------------------------------------ */

static uint32_t rng_state;
static float urand(void) /* uniform in [-1, 1) */
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return (float)((double)(rng_state >> 8) / 8388608.0 - 1.0);
}

/* groups x n x k in [-1, 1), every 97th element an outlier x 8, and (when
 * zero_k > 0) row 3's first zero_k elements of every group zero. */
static float *random_weights(int32_t groups, int32_t n, int32_t k, uint32_t seed, int32_t zero_k)
{
    size_t total = (size_t)groups * n * k;
    float *w = malloc(total * sizeof *w);
    assert_non_null(w);
    rng_state = seed;
    for (size_t i = 0; i < total; i++)
        w[i] = urand() * ((i % 97) ? 1.0f : 8.0f);
    for (int32_t g = 0; g < groups && zero_k > 0 && n > 3; g++)
        memset(w + ((size_t)g * n + 3) * k, 0, (size_t)zero_k * sizeof *w);
    return w;
}

static float *dequantized(const vg_qweight *q)
{
    float *d = malloc((size_t)q->w.groups * q->w.n * q->w.k * sizeof *d);
    assert_non_null(d);
    assert_int_equal(vg_dequantize(&q->w, d), VG_OK);
    return d;
}

static void check_within(double got, double want, double bound, const char *fam, int32_t g,
                         int32_t r, int32_t c)
{
    if (!(fabs(got - want) <= bound)) {
        print_error("%s [%d][%d][%d]: dequantized %.9g, original %.9g, off by %.3g > bound %.3g\n",
                    fam, (int)g, (int)r, (int)c, got, want, fabs(got - want), bound);
        fail();
    }
}

/* Slack for FP32 arithmetic in the quantizer and dequantizer: a few ulps. */
static double slack(double v) { return fabs(v) * 0x1p-21 + 1e-30; }

/* ---- per-family bound checks ----------------------------------------------------------- */

static void check_fp16(const float *w, const vg_qweight *q)
{
    float *d = dequantized(q);
    const int32_t G = q->w.groups, N = q->w.n, K = q->w.k;
    for (int32_t g = 0; g < G; g++)
        for (int32_t r = 0; r < N; r++)
            for (int32_t c = 0; c < K; c++) {
                size_t i = ((size_t)g * N + r) * K + c;
                double b = half_gap(fp16_pos, 31744, fabs(w[i]));
                check_within(d[i], w[i], b, "fp16", g, r, c);
                assert_true((double)d[i] == ref_fp16(((const uint16_t *)q->q)[i]));
            }
    free(d);
}

static void check_fp8(const float *w, const vg_qweight *q)
{
    float *d = dequantized(q);
    const int32_t G = q->w.groups, N = q->w.n, K = q->w.k;
    const int32_t SR = (N + 127) / 128, SC = (K + 127) / 128;
    assert_int_equal(q->layout.scale_rows, SR);
    assert_int_equal(q->layout.scale_cols, SC);
    for (int32_t g = 0; g < G; g++)
        for (int32_t br = 0; br < SR; br++)
            for (int32_t bc = 0; bc < SC; bc++) {
                float amax = 0.0f;
                for (int32_t r = br * 128; r < N && r < br * 128 + 128; r++)
                    for (int32_t c = bc * 128; c < K && c < bc * 128 + 128; c++)
                        amax = fmaxf(amax, fabsf(w[((size_t)g * N + r) * K + c]));
                float s = ((const float *)q->scale)[((size_t)g * SR + br) * SC + bc];
                float want = amax > 0.0f ? amax / 448.0f : 1.0f;
                if (s != want) {
                    print_error("fp8 group %d block (%d,%d): scale %.9g, want absmax/448 = %.9g\n",
                                (int)g, (int)br, (int)bc, (double)s, (double)want);
                    fail();
                }
                for (int32_t r = br * 128; r < N && r < br * 128 + 128; r++)
                    for (int32_t c = bc * 128; c < K && c < bc * 128 + 128; c++) {
                        size_t i = ((size_t)g * N + r) * K + c;
                        double t = fabs((double)w[i]) / s;
                        assert_true(t <= 448.0 * (1 + 1e-6));
                        double b = half_gap(e4m3_pos, 127, t) * s + slack(w[i]);
                        check_within(d[i], w[i], b, "fp8", g, r, c);
                        assert_true((double)d[i] ==
                                    (double)(float)(ref_e4m3(((const uint8_t *)q->q)[i]) * s));
                    }
            }
    free(d);
}

static void check_awq(const float *w, const vg_qweight *q)
{
    float *d = dequantized(q);
    const int32_t G = q->w.groups, N = q->w.n, K = q->w.k, SC = (K + 127) / 128;
    const uint16_t *sc = q->scale, *zp = q->zero;
    for (int32_t g = 0; g < G; g++)
        for (int32_t r = 0; r < N; r++)
            for (int32_t gc = 0; gc < SC; gc++) {
                double lo = 0, hi = 0;
                for (int32_t c = gc * 128; c < K && c < gc * 128 + 128; c++) {
                    lo = fmin(lo, w[((size_t)g * N + r) * K + c]);
                    hi = fmax(hi, w[((size_t)g * N + r) * K + c]);
                }
                size_t si = ((size_t)g * N + r) * SC + gc;
                double s = ref_fp16(sc[si]), z = ref_fp16(zp[si]);
                assert_true(z == floor(z) && z >= 0 && z <= 15);
                if (hi > lo) { /* the smallest FP16 at or above (hi - lo) / 15 */
                    double want = (hi - lo) / 15;
                    assert_true(s >= want * (1 - 1e-6));
                    assert_true(s <= want + 2 * half_gap(fp16_pos, 31744, want) + slack(want));
                } else {
                    assert_true(s == 1.0 && z == 0.0);
                }
                for (int32_t c = gc * 128; c < K && c < gc * 128 + 128; c++) {
                    size_t i = ((size_t)g * N + r) * K + c;
                    check_within(d[i], w[i], s / 2 + slack(s * 16), "awq", g, r, c);
                }
            }
    free(d);
}

static void check_mxfp4(const float *w, const vg_qweight *q)
{
    float *d = dequantized(q);
    const int32_t G = q->w.groups, N = q->w.n, K = q->w.k, SC = (K + 31) / 32;
    const uint8_t *sc = q->scale;
    for (int32_t g = 0; g < G; g++)
        for (int32_t r = 0; r < N; r++)
            for (int32_t gc = 0; gc < SC; gc++) {
                double amax = 0;
                for (int32_t c = gc * 32; c < K && c < gc * 32 + 32; c++)
                    amax = fmax(amax, fabs(w[((size_t)g * N + r) * K + c]));
                uint8_t code = sc[((size_t)g * N + r) * SC + gc];
                assert_true(code != 0xFF);
                double x = ldexp(1.0, code - 127);
                if (amax > 0) { /* the smallest power of two with amax / X <= 6 */
                    assert_true(amax <= 6 * x);
                    assert_true(amax > 3 * x);
                } else {
                    assert_int_equal(code, 127);
                }
                for (int32_t c = gc * 32; c < K && c < gc * 32 + 32; c++) {
                    size_t i = ((size_t)g * N + r) * K + c;
                    double b = half_gap(e2m1_pos, 8, fabs(w[i]) / x) * x + slack(w[i]);
                    check_within(d[i], w[i], b, "mxfp4", g, r, c);
                }
            }
    free(d);
}

static void check_nvfp4(const float *w, const vg_qweight *q)
{
    float *d = dequantized(q);
    const int32_t G = q->w.groups, N = q->w.n, K = q->w.k, SC = (K + 15) / 16;
    const uint8_t *sc = q->scale;
    float gmax = 0.0f;
    for (size_t i = 0; i < (size_t)G * N * K; i++)
        gmax = fmaxf(gmax, fabsf(w[i]));
    const double ts = q->w.tensor_scale;
    assert_true(q->w.tensor_scale == gmax / 2688.0f); /* global absmax / (448 * 6) */
    for (int32_t g = 0; g < G; g++)
        for (int32_t r = 0; r < N; r++)
            for (int32_t gc = 0; gc < SC; gc++) {
                double amax = 0;
                for (int32_t c = gc * 16; c < K && c < gc * 16 + 16; c++)
                    amax = fmax(amax, fabs(w[((size_t)g * N + r) * K + c]));
                uint8_t code = sc[((size_t)g * N + r) * SC + gc];
                assert_true(code < 0x80); /* positive, not NaN */
                double s = e4m3_pos[code];
                double u = amax / 6 / ts; /* the scale's target, rounded to E4M3 */
                if (amax > 0 && u >= e4m3_pos[1] / 2)
                    assert_true(fabs(s - u) <= half_gap(e4m3_pos, 127, u) + slack(u));
                for (int32_t c = gc * 16; c < K && c < gc * 16 + 16; c++) {
                    size_t i = ((size_t)g * N + r) * K + c;
                    double st = s * ts;
                    if (amax == 0) { /* an all-zero block: scale code 0, elements 0 */
                        assert_int_equal(code, 0);
                        check_within(d[i], w[i], 0, "nvfp4", g, r, c);
                        continue;
                    }
                    double t = fabs(w[i]) / st;
                    assert_true(t <= 6.5); /* the scale rounds by at most 1/16 */
                    double b = half_gap(e2m1_pos, 8, t) * st + slack(w[i]);
                    check_within(d[i], w[i], b, "nvfp4", g, r, c);
                }
            }
    free(d);
}

typedef void (*check_fn)(const float *, const vg_qweight *);
static const check_fn checks[VG_FAMILY_COUNT] = {
    [VG_FAMILY_FP16] = check_fp16,   [VG_FAMILY_AWQ] = check_awq,
    [VG_FAMILY_FP8] = check_fp8,     [VG_FAMILY_MXFP4] = check_mxfp4,
    [VG_FAMILY_NVFP4] = check_nvfp4,
};

/* Ragged in every family: 200 = 128 + 72 rows, 328 = 2*128 + 72 = 10*32 + 8 =
 * 20*16 + 8 columns; two groups stacked; one zero run in row 3. */
static void bounds_for(vg_family f, int32_t groups, int32_t n, int32_t k, uint32_t seed)
{
    float *w = random_weights(groups, n, k, seed, k >= 128 ? 128 : k);
    vg_qweight q;
    vg_status st = vg_quantize(f, w, groups, n, k, &q);
    if (st != VG_OK) {
        print_error("quantize %s: %s\n", vg_family_name(f), vg_last_error());
        fail();
    }
    assert_int_equal(q.w.family, f);
    assert_int_equal(q.w.groups, groups);
    assert_ptr_equal(q.w.q, q.q);
    checks[f](w, &q);
    vg_qweight_free(&q);
    free(w);
}

static void fp16_bounds(void **s) { (void)s; bounds_for(VG_FAMILY_FP16, 2, 200, 328, 1); }
static void fp8_bounds(void **s) { (void)s; bounds_for(VG_FAMILY_FP8, 2, 200, 328, 2); }
static void awq_bounds(void **s) { (void)s; bounds_for(VG_FAMILY_AWQ, 2, 200, 328, 3); }
static void mxfp4_bounds(void **s) { (void)s; bounds_for(VG_FAMILY_MXFP4, 2, 200, 328, 4); }
static void nvfp4_bounds(void **s) { (void)s; bounds_for(VG_FAMILY_NVFP4, 2, 200, 328, 5); }

static void tiny_shapes_bounds(void **state)
{
    (void)state;
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        bounds_for((vg_family)f, 1, 1, 8, 10u + (uint32_t)f);
        bounds_for((vg_family)f, 3, 5, 136, 20u + (uint32_t)f);
    }
}

/* ---- hand-worked cases: layout and rounding written out ------------------------------ */

static void fp16_hand_case(void **state)
{
    (void)state;
    const float w[4] = {1.0f, -2.0f, 65504.0f, 0.333333343f};
    vg_qweight q;
    assert_int_equal(vg_quantize(VG_FAMILY_FP16, w, 1, 1, 4, &q), VG_OK);
    const uint16_t *h = q.q;
    assert_int_equal(h[0], 0x3C00);
    assert_int_equal(h[1], 0xC000);
    assert_int_equal(h[2], 0x7BFF);
    assert_int_equal(h[3], 0x3555); /* 1/3 in FP16 */
    assert_null(q.scale);
    vg_qweight_free(&q);
}

static void fp8_hand_case(void **state)
{
    (void)state;
    /* one 2x3 block, absmax 896 -> scale 2; codes of w/2 */
    const float w[6] = {896.0f, 3.0f, 0.0f, -1.0f, 0.5f, 224.0f};
    vg_qweight q;
    assert_int_equal(vg_quantize(VG_FAMILY_FP8, w, 1, 2, 3, &q), VG_OK);
    const uint8_t *c = q.q;
    assert_true(((const float *)q.scale)[0] == 2.0f);
    assert_int_equal(c[0], 0x7E); /* 448 */
    assert_int_equal(c[1], 0x3C); /* 1.5 = 2^0 * 1.100b */
    assert_int_equal(c[2], 0x00);
    assert_int_equal(c[3], 0xB0); /* -0.5 */
    assert_int_equal(c[4], 0x28); /* 0.25 */
    assert_int_equal(c[5], 0x6E); /* 112 = 2^6 * 1.110b */
    vg_qweight_free(&q);
}

static void awq_hand_case(void **state)
{
    (void)state;
    /* lo -1, hi 2: (hi-lo)/15 = 0.2 rounds up to FP16 0x3267 = 0.2000732421875;
     * zero = round(1 / 0.20007) = 5; codes floor(w/s + 5.5) */
    const float w[8] = {-1.0f, 2.0f, 0.0f, 0.5f, 1.0f, -0.5f, 1.9f, 0.1f};
    vg_qweight q;
    assert_int_equal(vg_quantize(VG_FAMILY_AWQ, w, 1, 1, 8, &q), VG_OK);
    assert_int_equal(((const uint16_t *)q.scale)[0], 0x3267);
    assert_int_equal(((const uint16_t *)q.zero)[0], 0x4500); /* 5.0 */
    /* codes 0,15,5,7,10,3,14,5; nibble j holds element {0,2,4,6,1,3,5,7}[j] */
    assert_int_equal(((const uint32_t *)q.q)[0], 0x537FEA50u);
    vg_qweight_free(&q);
}

static void mxfp4_hand_case(void **state)
{
    (void)state;
    float w[34] = {0};
    w[0] = 12.0f;  /* group 0 absmax 12 -> X = 2 (E8M0 128) */
    w[1] = -3.0f;  /* -1.5 -> 0xB */
    w[2] = 1.5f;   /* 0.75, the tie between 0.5 and 1 -> 1 (even code 2) */
    w[32] = 0.3f;  /* group 1 absmax 0.3 -> X = 2^-4 (E8M0 123); 4.8 -> 4 (code 6) */
    w[33] = -0.1f; /* -1.6 -> -1.5 (0xB) */
    vg_qweight q;
    assert_int_equal(vg_quantize(VG_FAMILY_MXFP4, w, 1, 1, 34, &q), VG_OK);
    const uint8_t *b = q.q, *s = q.scale;
    assert_int_equal(s[0], 128);
    assert_int_equal(s[1], 123);
    assert_int_equal(b[0], 0xB7); /* element 0 low nibble, element 1 high */
    assert_int_equal(b[1], 0x02);
    assert_int_equal(b[15], 0x00);
    assert_int_equal(b[16], 0xB6);
    vg_qweight_free(&q);
}

static void nvfp4_hand_case(void **state)
{
    (void)state;
    float w[32] = {0};
    w[0] = 2688.0f; /* global absmax 2688 -> tensor scale 1; block scale 448 (0x7E) */
    w[1] = -448.0f; /* -1 -> 0xA */
    w[16] = 12.0f;  /* block 1 absmax 12 -> scale 2 (0x40); 6 -> 0x7 */
    w[17] = -1.0f;  /* -0.5 -> 0x9 */
    w[18] = 5.0f;   /* 2.5, the tie between 2 and 3 -> 2 (code 4) */
    vg_qweight q;
    assert_int_equal(vg_quantize(VG_FAMILY_NVFP4, w, 1, 1, 32, &q), VG_OK);
    const uint8_t *b = q.q, *s = q.scale;
    assert_true(q.w.tensor_scale == 1.0f);
    assert_int_equal(s[0], 0x7E);
    assert_int_equal(s[1], 0x40);
    assert_int_equal(b[0], 0xA7);
    assert_int_equal(b[8], 0x97);
    assert_int_equal(b[9], 0x04);
    float d[32];
    assert_int_equal(vg_dequantize(&q.w, d), VG_OK);
    assert_true(d[0] == 2688.0f && d[1] == -448.0f && d[16] == 12.0f && d[17] == -1.0f &&
                d[18] == 4.0f && d[2] == 0.0f);
    vg_qweight_free(&q);
}

static void all_zero_weights(void **state)
{
    (void)state;
    float w[2 * 256] = {0};
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        vg_qweight q;
        assert_int_equal(vg_quantize((vg_family)f, w, 1, 2, 256, &q), VG_OK);
        float d[2 * 256];
        memset(d, 0xFF, sizeof d); /* NaN */
        assert_int_equal(vg_dequantize(&q.w, d), VG_OK);
        for (int i = 0; i < 2 * 256; i++)
            assert_true(d[i] == 0.0f);
        if (f == VG_FAMILY_FP8)
            assert_true(((const float *)q.scale)[0] == 1.0f && ((const float *)q.scale)[1] == 1.0f);
        if (f == VG_FAMILY_NVFP4)
            assert_true(q.w.tensor_scale == 1.0f);
        vg_qweight_free(&q);
    }
}

/* ---- grouped stacking: group g of a stacked call is the group quantized alone ----------- */

static void grouped_stacking(void **state)
{
    (void)state;
    const int32_t G = 3, N = 130, K = 264;
    float *w = random_weights(G, N, K, 77, 0);
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        vg_qweight all;
        assert_int_equal(vg_quantize((vg_family)f, w, G, N, K, &all), VG_OK);
        if (f == VG_FAMILY_NVFP4) {
            /* one tensor scale for the whole stack; bounds per group checked */
            check_nvfp4(w, &all);
            vg_qweight_free(&all);
            continue;
        }
        for (int32_t g = 0; g < G; g++) {
            vg_qweight one;
            assert_int_equal(vg_quantize((vg_family)f, w + (size_t)g * N * K, 1, N, K, &one),
                             VG_OK);
            const vg_weight_layout *l = &all.layout;
            assert_memory_equal((const uint8_t *)all.q + g * l->q_bytes, one.q, l->q_bytes);
            if (l->scale_bytes)
                assert_memory_equal((const uint8_t *)all.scale + g * l->scale_bytes, one.scale,
                                    l->scale_bytes);
            if (l->zero_bytes)
                assert_memory_equal((const uint8_t *)all.zero + g * l->zero_bytes, one.zero,
                                    l->zero_bytes);
            vg_qweight_free(&one);
        }
        vg_qweight_free(&all);
    }
    free(w);
}

/* ---- refused inputs ----------------------------------------------------------------------- */

static void expect_refused(vg_status want, vg_family f, const float *w, int32_t groups,
                           int32_t n, int32_t k)
{
    vg_qweight q;
    memset(&q, 0x5A, sizeof q);
    vg_status st = vg_quantize(f, w, groups, n, k, &q);
    if (st != want) {
        print_error("quantize %d %dx%dx%d: status %d (%s), want %d\n", (int)f, (int)groups,
                    (int)n, (int)k, (int)st, vg_last_error(), (int)want);
        fail();
    }
    assert_true(strlen(vg_last_error()) > 0);
    assert_null(q.q); /* left zeroed, owning nothing */
    assert_null(q.scale);
    assert_null(q.zero);
}

static void bad_shapes_refused(void **state)
{
    (void)state;
    static float w[4096];
    expect_refused(VG_ERR_UNSUPPORTED, VG_FAMILY_AWQ, w, 1, 4, 100);   /* K % 8 */
    expect_refused(VG_ERR_UNSUPPORTED, VG_FAMILY_MXFP4, w, 1, 4, 33);  /* K odd */
    expect_refused(VG_ERR_UNSUPPORTED, VG_FAMILY_NVFP4, w, 1, 4, 7);
    expect_refused(VG_ERR_INVALID_ARG, VG_FAMILY_FP8, w, 1, 0, 8);     /* N = 0 */
    expect_refused(VG_ERR_INVALID_ARG, VG_FAMILY_FP8, w, 1, 8, -8);    /* K < 0 */
    expect_refused(VG_ERR_INVALID_ARG, VG_FAMILY_FP16, w, 0, 8, 8);    /* groups = 0 */
    expect_refused(VG_ERR_INVALID_ARG, VG_FAMILY_FP16, NULL, 1, 8, 8); /* no weights */
    expect_refused(VG_ERR_INVALID_ARG, VG_FAMILY_COUNT, w, 1, 8, 8);   /* no such family */
    assert_int_equal(vg_quantize(VG_FAMILY_FP16, w, 1, 8, 8, NULL), VG_ERR_INVALID_ARG);
}

static void non_finite_refused(void **state)
{
    (void)state;
    float w[64] = {0};
    w[37] = NAN;
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        expect_refused(VG_ERR_INVALID_ARG, (vg_family)f, w, 1, 2, 32);
    assert_non_null(strstr(vg_last_error(), "[0][1][5]")); /* names the element */
    w[37] = -INFINITY;
    expect_refused(VG_ERR_INVALID_ARG, VG_FAMILY_FP8, w, 1, 2, 32);
    w[37] = 1e6f; /* beyond FP16 */
    expect_refused(VG_ERR_UNSUPPORTED, VG_FAMILY_FP16, w, 1, 2, 32);
}

static void dequantize_refuses_incomplete(void **state)
{
    (void)state;
    float w[64], out[64];
    for (int i = 0; i < 64; i++)
        w[i] = (float)i / 64;
    vg_qweight q;
    assert_int_equal(vg_quantize(VG_FAMILY_AWQ, w, 1, 1, 64, &q), VG_OK);
    vg_weight bad = q.w;
    bad.zero = NULL;
    assert_int_equal(vg_dequantize(&bad, out), VG_ERR_INVALID_ARG);
    bad = q.w;
    bad.scale = NULL;
    assert_int_equal(vg_dequantize(&bad, out), VG_ERR_INVALID_ARG);
    bad = q.w;
    bad.groups = 0;
    assert_int_equal(vg_dequantize(&bad, out), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_dequantize(&q.w, NULL), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_dequantize(NULL, out), VG_ERR_INVALID_ARG);
    vg_qweight_free(&q);
    assert_int_equal(vg_quantize(VG_FAMILY_NVFP4, w, 1, 1, 64, &q), VG_OK);
    bad = q.w;
    bad.tensor_scale = 0.0f;
    assert_int_equal(vg_dequantize(&bad, out), VG_ERR_INVALID_ARG);
    bad.tensor_scale = NAN;
    assert_int_equal(vg_dequantize(&bad, out), VG_ERR_INVALID_ARG);
    vg_qweight_free(&q);
    assert_int_equal(vg_qweight_free(&q), VG_OK); /* twice is fine */
    assert_int_equal(vg_qweight_free(NULL), VG_OK);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(fp16_hand_case),
        cmocka_unit_test(fp8_hand_case),
        cmocka_unit_test(awq_hand_case),
        cmocka_unit_test(mxfp4_hand_case),
        cmocka_unit_test(nvfp4_hand_case),
        cmocka_unit_test(all_zero_weights),
        cmocka_unit_test_setup(fp16_bounds, setup_grids),
        cmocka_unit_test_setup(fp8_bounds, setup_grids),
        cmocka_unit_test_setup(awq_bounds, setup_grids),
        cmocka_unit_test_setup(mxfp4_bounds, setup_grids),
        cmocka_unit_test_setup(nvfp4_bounds, setup_grids),
        cmocka_unit_test_setup(tiny_shapes_bounds, setup_grids),
        cmocka_unit_test_setup(grouped_stacking, setup_grids),
        cmocka_unit_test(bad_shapes_refused),
        cmocka_unit_test(non_finite_refused),
        cmocka_unit_test(dequantize_refuses_incomplete),
    };
    return VGTEST_MAIN("quant", tests);
}
