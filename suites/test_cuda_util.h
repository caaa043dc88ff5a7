/*
 * Shared helpers of the CUDA suites (test_cuda_*.c): a generated case
 * (random FP32 weights quantized with vg_quantize, FP16 activations, the
 * FP64 reference on the dequantized weights), its device copies, and a
 * checked launch: Y poisoned with NaN first, every element checked written
 * and finite, relative RMS error against the reference.
 *
 * Everything is static inline so each suite takes what it uses.
 */
#ifndef VOLTGATE_TEST_CUDA_UTIL_H
#define VOLTGATE_TEST_CUDA_UTIL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vgtest.h"

#include "cuda/cuda_bench.h"
#include "kernels.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"

typedef struct tc_case {
    vg_family fam;
    vg_path path;
    int32_t m, n, k, groups;
    int32_t *offsets;       /* host, groups + 1 (NULL for dense) */
    float *x32;             /* [m][k], FP16-rounded */
    uint16_t *x16;
    vg_qweight qw;
    float *wdq;             /* [groups][n][k] dequantized */
    double *ref;            /* [m][n] */
    double *ref_w16;        /* [m][n], against wdq rounded to FP16: what the dequantize +
                               cuBLAS kind computes (its copy of W is FP16) */
    void *d_x, *d_y, *d_q, *d_scale, *d_zero, *d_off, *d_ws;
    size_t ws_bytes;
    vg_gemm_args args;
} tc_case;

static inline uint64_t tc_rand_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* Uniform in [-1, 1). */
static inline float tc_uniform(uint64_t *s)
{
    return (float)((double)(tc_rand_next(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

/* Upload `bytes` from host (NULL allowed when bytes == 0). */
static inline void *tc_upload(const void *src, size_t bytes)
{
    void *d = NULL;
    assert_int_equal(vg_cuda_alloc(bytes ? bytes : 16, &d), VG_OK);
    if (bytes && src)
        assert_int_equal(vg_cuda_copy_to_device(d, src, bytes), VG_OK);
    return d;
}

/* The reference of rows of x (already FP16-rounded) against wdq, and
 * against wdq rounded to FP16 (by the format's RNE, not the kernels'). */
static inline void tc_reference(tc_case *c)
{
    c->ref = calloc((size_t)c->m * c->n + 1, sizeof(double));
    c->ref_w16 = calloc((size_t)c->m * c->n + 1, sizeof(double));
    const size_t wn = (size_t)c->groups * c->n * c->k;
    float *w16 = malloc(wn * sizeof(float) + 4);
    assert_non_null(c->ref);
    assert_non_null(c->ref_w16);
    assert_non_null(w16);
    for (size_t i = 0; i < wn; i++)
        w16[i] = vg_fp16_to_f32(vg_f32_to_fp16(c->wdq[i]));
    if (c->m > 0) {
        assert_int_equal(vg_reference_gemm(c->path, c->m, c->n, c->k, c->groups, c->offsets,
                                           c->x32, c->wdq, c->ref),
                         VG_OK);
        assert_int_equal(vg_reference_gemm(c->path, c->m, c->n, c->k, c->groups, c->offsets,
                                           c->x32, w16, c->ref_w16),
                         VG_OK);
    }
    free(w16);
}

/* The reference plan p's result is checked against. */
static inline const double *tc_ref_for(const tc_case *c, const vg_plan *p)
{
    return p->kind == VG_KIND_DEQUANT_BLAS ? c->ref_w16 : c->ref;
}

/* Builds a case.  offsets (groups + 1 entries) is copied; NULL for dense.
 * Weights: uniform times a per-row magnitude that spans 2^-6..2^6, so the
 * block scales differ; X uniform in [-1, 1) rounded to FP16. */
static inline void tc_make(tc_case *c, vg_family fam, vg_path path, int32_t m, int32_t n,
                           int32_t k, int32_t groups, const int32_t *offsets, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->fam = fam;
    c->path = path;
    c->m = m;
    c->n = n;
    c->k = k;
    c->groups = groups;
    uint64_t s = seed * 2654435761u + 12345u;
    if (offsets) {
        c->offsets = malloc(sizeof(int32_t) * (size_t)(groups + 1));
        assert_non_null(c->offsets);
        memcpy(c->offsets, offsets, sizeof(int32_t) * (size_t)(groups + 1));
    }
    const size_t wn = (size_t)groups * n * k;
    float *w = malloc(wn * sizeof(float));
    assert_non_null(w);
    for (size_t r = 0; r < (size_t)groups * n; r++) {
        const float mag = ldexpf(1.0f, (int)(tc_rand_next(&s) % 13) - 6);
        for (int32_t j = 0; j < k; j++)
            w[r * k + j] = tc_uniform(&s) * mag;
    }
    assert_int_equal(vg_quantize(fam, w, groups, n, k, &c->qw), VG_OK);
    free(w);
    c->wdq = malloc(wn * sizeof(float));
    assert_non_null(c->wdq);
    assert_int_equal(vg_dequantize(&c->qw.w, c->wdq), VG_OK);

    const size_t xn = (size_t)m * k;
    c->x16 = malloc(xn * 2 + 2);
    c->x32 = malloc(xn * 4 + 4);
    assert_non_null(c->x16);
    assert_non_null(c->x32);
    for (size_t i = 0; i < xn; i++) {
        c->x16[i] = vg_f32_to_fp16(tc_uniform(&s));
        c->x32[i] = vg_fp16_to_f32(c->x16[i]);
    }
    tc_reference(c);

    const vg_weight_layout *l = &c->qw.layout;
    c->d_q = tc_upload(c->qw.q, l->q_bytes * groups);
    c->d_scale = l->scale_bytes ? tc_upload(c->qw.scale, l->scale_bytes * groups) : NULL;
    c->d_zero = l->zero_bytes ? tc_upload(c->qw.zero, l->zero_bytes * groups) : NULL;
    c->d_x = tc_upload(c->x16, xn * 2);
    c->d_y = tc_upload(NULL, (size_t)m * n * 4);
    c->d_off = offsets ? tc_upload(c->offsets, sizeof(int32_t) * (size_t)(groups + 1)) : NULL;

    vg_gemm_args *a = &c->args;
    memset(a, 0, sizeof *a);
    a->path = path;
    a->m = m;
    a->w = c->qw.w;
    a->w.q = c->d_q;
    a->w.scale = c->d_scale;
    a->w.zero = c->d_zero;
    a->offsets = c->d_off;
    a->offsets_host = c->offsets;
    a->x = c->d_x;
    a->y = c->d_y;
    a->y_dtype = VG_DTYPE_F32;
    /* Workspace: the most any plan asks for. */
    size_t most = 0;
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        size_t b = 0;
        assert_int_equal(vg_cuda_workspace_bytes(vg_cuda_plan_at(i), a, &b), VG_OK);
        if (b > most)
            most = b;
    }
    c->ws_bytes = most;
    c->d_ws = tc_upload(NULL, most);
    a->workspace = c->d_ws;
    a->workspace_bytes = most;
}

static inline void tc_free(tc_case *c)
{
    vg_cuda_free(c->d_x);
    vg_cuda_free(c->d_y);
    vg_cuda_free(c->d_q);
    vg_cuda_free(c->d_scale);
    vg_cuda_free(c->d_zero);
    vg_cuda_free(c->d_off);
    vg_cuda_free(c->d_ws);
    vg_qweight_free(&c->qw);
    free(c->offsets);
    free(c->x32);
    free(c->x16);
    free(c->wdq);
    free(c->ref);
    free(c->ref_w16);
    memset(c, 0, sizeof *c);
}

/* Downloads Y (m x n of the args' dtype) as FP32. */
static inline float *tc_download(const tc_case *c)
{
    const size_t count = (size_t)c->m * c->n;
    float *y = malloc(count * 4 + 4);
    assert_non_null(y);
    if (c->args.y_dtype == VG_DTYPE_F16) {
        uint16_t *h = malloc(count * 2 + 2);
        assert_non_null(h);
        assert_int_equal(vg_cuda_copy_to_host(h, c->d_y, count * 2), VG_OK);
        for (size_t i = 0; i < count; i++)
            y[i] = vg_fp16_to_f32(h[i]);
        free(h);
    } else {
        assert_int_equal(vg_cuda_copy_to_host(y, c->d_y, count * 4), VG_OK);
    }
    return y;
}

static inline void tc_poison(tc_case *c)
{
    /* 0xFF bytes are NaN in FP32 and FP16 alike. */
    assert_int_equal(vg_cuda_memset(c->d_y, 0xFF, (size_t)c->m * c->n * 4 + 0), VG_OK);
}

/* Checks every element written (finite) and the relative RMS error against
 * the reference rows `ref`; returns the error. */
static inline double tc_check_against(const tc_case *c, const double *ref, const float *y,
                                      double tol, const char *what)
{
    double num = 0, den = 0, maxabs = 0;
    const size_t count = (size_t)c->m * c->n;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(y[i])) {
            print_error("%s: Y[%zu][%zu] = %g was not written (or is not finite)\n", what,
                        i / (size_t)c->n, i % (size_t)c->n, (double)y[i]);
            fail();
        }
        const double d = (double)y[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
        if (fabs(d) > maxabs)
            maxabs = fabs(d);
    }
    if (count == 0)
        return 0;
    if (!(den > 0)) {
        print_error("%s: the reference is all zero, the check would prove nothing\n", what);
        fail();
    }
    const double rel = sqrt(num / den);
    if (!(rel <= tol)) {
        print_error("%s: relative RMS error %.3g above %.3g (max abs %.3g)\n", what, rel, tol,
                    maxabs);
        fail();
    }
    return rel;
}

static inline double tc_check(const tc_case *c, const float *y, double tol, const char *what)
{
    return tc_check_against(c, c->ref, y, tol, what);
}

/* Runs plan p on the case (poisoned Y), checks the result. */
static inline double tc_run_plan(tc_case *c, const vg_plan *p, double tol)
{
    char what[256];
    snprintf(what, sizeof what, "%s %s m=%d n=%d k=%d g=%d plan %s", vg_family_name(c->fam),
             vg_path_name(c->path), (int)c->m, (int)c->n, (int)c->k, (int)c->groups, p->id);
    tc_poison(c);
    vg_status st = vg_cuda_gemm(p, &c->args);
    if (st != VG_OK) {
        print_error("%s: %s (%s)\n", what, vg_status_str(st), vg_last_error());
        fail();
    }
    assert_int_equal(vg_cuda_synchronize(c->args.stream), VG_OK);
    float *y = tc_download(c);
    double rel = tc_check_against(c, tc_ref_for(c, p), y, tol, what);
    free(y);
    return rel;
}

/* The plan timer on the case (poisoned Y): it must time back to back over
 * weight copies (not its one-launch fallback, which only a device short of
 * memory or a broken capture should see), and its launches, which read
 * rotating copies of the weights, must leave the right Y, so a copy with
 * its codes, scales or zeros misplaced fails here. */
static inline void tc_time_plan(tc_case *c, const vg_plan *p, double tol)
{
    assert_non_null(p);
    char what[256];
    snprintf(what, sizeof what, "timer: %s %s m=%d n=%d k=%d g=%d plan %s",
             vg_family_name(c->fam), vg_path_name(c->path), (int)c->m, (int)c->n, (int)c->k,
             (int)c->groups, p->id);
    tc_poison(c);
    double us = -1;
    int copies = -1;
    vg_status st = vg_cuda_time_plan(p, &c->args, 1, 3, &us, &copies);
    if (st != VG_OK) {
        print_error("%s: %s (%s)\n", what, vg_status_str(st), vg_last_error());
        fail();
    }
    if (!(us > 0 && isfinite(us)) || copies < 1) {
        print_error("%s: %g us over %d weight copies (0: the fallback timed it)\n", what, us,
                    copies);
        fail();
    }
    print_message("%s: %.2f us, back to back over %d weight copies\n", what, us, copies);
    assert_int_equal(vg_cuda_synchronize(c->args.stream), VG_OK);
    float *y = tc_download(c);
    tc_check_against(c, tc_ref_for(c, p), y, tol, what);
    free(y);
}

/* Every plan that applies to the case's family, path and rows; returns how
 * many ran (the caller asserts it is not zero). */
static inline int tc_run_all_plans(tc_case *c, double tol)
{
    int ran = 0;
    const int32_t rows = vg_gemm_max_group_rows(&c->args);
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (!vg_plan_applies(p, c->fam, c->path, rows))
            continue;
        tc_run_plan(c, p, tol);
        ran++;
    }
    return ran;
}

/* Offsets of `groups` groups with counts[g] rows each. */
static inline void tc_offsets(int32_t *off, const int32_t *counts, int32_t groups)
{
    off[0] = 0;
    for (int32_t g = 0; g < groups; g++)
        off[g + 1] = off[g] + counts[g];
}

/* Tolerance on the relative RMS error per family and output type.  FP32
 * output: only the FP32 summation order differs from the FP64 reference,
 * except awq, whose (q - zero) * scale is rounded to FP16 once per weight as
 * in AWQ's own kernels.  FP16 output adds one FP16 rounding. */
static inline double tc_tol(vg_family f, vg_dtype y)
{
    double t = f == VG_FAMILY_AWQ ? 2e-3 : 1e-4;
    return y == VG_DTYPE_F16 ? t + 1e-3 : t;
}

#endif
