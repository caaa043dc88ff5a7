/*
 * The CPU GEMM kernel: one generic loop nest over a plan's tiles, for every
 * family and path.
 *
 * For each group g and its rows, each M tile, each N tile and each split s
 * of K (split s covers K chunk [s*chunk, (s+1)*chunk), chunk = ceil(K /
 * split_k) rounded up to tile_k):
 *   acc[tile_m][tile_n] = 0 (FP32)
 *   for each tile_k step of the chunk:
 *     X tile   <- FP16 bits widened to FP32
 *     W^T tile <- vg_dequant_block() straight from the quantized buffers
 *     acc += X tile * W^T tile   (k in increasing order)
 * With split_k 1, acc is Y's tile.  Otherwise each split's acc goes to the
 * caller's workspace ([split][m][n] FP32) and Y = partial 0 + partial 1 + ...
 * in that fixed order, so the result is the same bits on every run.
 * Y is FP32 or FP16 (round to nearest even).
 *
 * A plan of the dequantize-once kind (VG_KIND_DEQUANT_BLAS) first writes
 * each group's W as FP16 into the workspace, rounded once per element as
 * the CUDA kind's copy is, then runs the same loop over that copy.
 *
 * The inner product loop runs over a W^T row of a compile-time width
 * (tile_n 32 or 64, ragged columns zero-padded) so that the compiler
 * vectorises it; the dequantizer runs once per W element per M tile.
 */
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"

typedef struct scratch {
    float *x;   /* [tile_m][tile_k] */
    float *wt;  /* [tile_k][tile_n] */
    float *acc; /* [tile_m][tile_n] */
} scratch;

/* acc[i][0..TN) += sum_kk x[i][kk] * wt[kk][0..TN) for i < rows. */
#define DEFINE_MICRO(TN)                                                                   \
    static void micro_##TN(int32_t rows, int32_t kl, int32_t ldx, const float *restrict x, \
                           const float *restrict wt, float *restrict acc)                  \
    {                                                                                      \
        int32_t i = 0;                                                                     \
        for (; i + 2 <= rows; i += 2) { /* two rows share each W^T row load */             \
            float *restrict a0 = acc + (size_t)i * TN;                                     \
            float *restrict a1 = a0 + TN;                                                  \
            const float *x0 = x + (size_t)i * ldx, *x1 = x0 + ldx;                         \
            for (int32_t kk = 0; kk < kl; kk++) {                                          \
                const float *restrict wr = wt + (size_t)kk * TN;                           \
                float v0 = x0[kk], v1 = x1[kk];                                            \
                for (int j = 0; j < TN; j++) {                                             \
                    a0[j] += v0 * wr[j];                                                   \
                    a1[j] += v1 * wr[j];                                                   \
                }                                                                          \
            }                                                                              \
        }                                                                                  \
        for (; i < rows; i++) {                                                            \
            float *restrict a0 = acc + (size_t)i * TN;                                     \
            const float *x0 = x + (size_t)i * ldx;                                         \
            for (int32_t kk = 0; kk < kl; kk++) {                                          \
                const float *restrict wr = wt + (size_t)kk * TN;                           \
                float v0 = x0[kk];                                                         \
                for (int j = 0; j < TN; j++)                                               \
                    a0[j] += v0 * wr[j];                                                   \
            }                                                                              \
        }                                                                                  \
    }
DEFINE_MICRO(32)
DEFINE_MICRO(64)

static void store_row(const vg_gemm_args *a, int32_t row, int32_t col0, int32_t cols,
                      const float *v)
{
    size_t at = (size_t)row * (size_t)a->w.n + (size_t)col0;
    if (a->y_dtype == VG_DTYPE_F32) {
        memcpy((float *)a->y + at, v, (size_t)cols * sizeof(float));
    } else {
        uint16_t *y = (uint16_t *)a->y + at;
        for (int32_t j = 0; j < cols; j++)
            y[j] = vg_f32_to_fp16(v[j]);
    }
}

/* Rows r0..r1-1 of X and Y against group g's weight. */
static void gemm_rows(const vg_plan *p, const vg_gemm_args *a, int32_t g, int32_t r0,
                      int32_t r1, scratch *s)
{
    const int32_t n = a->w.n, k = a->w.k;
    const int32_t tm = p->tile_m, tn = p->tile_n, tk = p->tile_k, sk = p->split_k;
    int32_t chunk = (k + sk - 1) / sk;
    chunk = (chunk + tk - 1) / tk * tk;
    float *ws = (float *)a->workspace;

    for (int32_t mt = r0; mt < r1; mt += tm) {
        const int32_t rows = r1 - mt < tm ? r1 - mt : tm;
        for (int32_t nt = 0; nt < n; nt += tn) {
            const int32_t cols = n - nt < tn ? n - nt : tn;
            for (int32_t split = 0; split < sk; split++) {
                const int32_t ks = split * chunk;
                const int32_t ke = ks + chunk < k ? ks + chunk : k;
                memset(s->acc, 0, (size_t)rows * (size_t)tn * sizeof(float));
                for (int32_t k0 = ks; k0 < ke; k0 += tk) {
                    const int32_t kl = ke - k0 < tk ? ke - k0 : tk;
                    for (int32_t i = 0; i < rows; i++) {
                        const uint16_t *xr = a->x + (size_t)(mt + i) * (size_t)k + k0;
                        float *xd = s->x + (size_t)i * tk;
                        for (int32_t kk = 0; kk < kl; kk++)
                            xd[kk] = vg_fp16_to_f32(xr[kk]);
                    }
                    if (cols < tn) /* ragged N edge: zero columns contribute nothing */
                        memset(s->wt, 0, (size_t)kl * (size_t)tn * sizeof(float));
                    vg_dequant_block(&a->w, g, nt, cols, k0, kl, s->wt, 1, (size_t)tn);
                    if (tn == 64)
                        micro_64(rows, kl, tk, s->x, s->wt, s->acc);
                    else
                        micro_32(rows, kl, tk, s->x, s->wt, s->acc);
                }
                if (sk == 1) {
                    for (int32_t i = 0; i < rows; i++)
                        store_row(a, mt + i, nt, cols, s->acc + (size_t)i * tn);
                } else {
                    for (int32_t i = 0; i < rows; i++)
                        memcpy(ws + ((size_t)split * a->m + (size_t)(mt + i)) * n + nt,
                               s->acc + (size_t)i * tn, (size_t)cols * sizeof(float));
                }
            }
            if (sk > 1) { /* fixed-order reduction of the partials */
                for (int32_t i = 0; i < rows; i++) {
                    float *sum = s->acc + (size_t)i * tn;
                    const size_t row = (size_t)(mt + i);
                    memcpy(sum, ws + row * n + nt, (size_t)cols * sizeof(float));
                    for (int32_t split = 1; split < sk; split++) {
                        const float *part = ws + ((size_t)split * a->m + row) * n + nt;
                        for (int32_t j = 0; j < cols; j++)
                            sum[j] += part[j];
                    }
                    store_row(a, mt + i, nt, cols, sum);
                }
            }
        }
    }
}

/* The dequantize-once kind: for each group with rows, its W as FP16 into
 * the workspace, then the tiled loop over rows of that group against the
 * copy (an fp16 weight of one group). */
static vg_status dequant_once_rows(const vg_plan *p, const vg_gemm_args *a, scratch *s)
{
    const int32_t n = a->w.n, k = a->w.k;
    uint16_t *copy = (uint16_t *)a->workspace;
    float *row = malloc((size_t)k * sizeof(float));
    if (!row)
        return vg_fail(VG_ERR_NO_MEMORY, "cpu gemm: out of memory for a weight row");
    vg_plan tiled = *p;
    tiled.kind = VG_KIND_TILED;
    vg_gemm_args b = *a;
    b.w = (vg_weight){.family = VG_FAMILY_FP16, .n = n, .k = k, .groups = 1, .q = copy,
                      .tensor_scale = 1.0f};
    const int grouped = a->path != VG_PATH_DENSE;
    for (int32_t g = 0; g < (grouped ? a->w.groups : 1); g++) {
        const int32_t r0 = grouped ? a->offsets_host[g] : 0;
        const int32_t r1 = grouped ? a->offsets_host[g + 1] : a->m;
        if (r1 <= r0)
            continue;
        for (int32_t r = 0; r < n; r++) {
            vg_dequant_block(&a->w, g, r, 1, 0, k, row, (size_t)k, 1);
            for (int32_t kk = 0; kk < k; kk++)
                copy[(size_t)r * k + kk] = vg_f32_to_fp16(row[kk]);
        }
        gemm_rows(&tiled, &b, 0, r0, r1, s);
    }
    free(row);
    return VG_OK;
}

vg_status vg_cpu_gemm(const vg_plan *p, const vg_gemm_args *a)
{
    vg_status st = vg_cpu_plan_check(p, "cpu gemm");
    if (st != VG_OK)
        return st;
    st = vg_gemm_check_args(a);
    if (st != VG_OK)
        return st;
    const int32_t rows = vg_gemm_max_group_rows(a);
    if (!vg_plan_applies(p, a->w.family, a->path, rows))
        return vg_fail(VG_ERR_UNSUPPORTED,
                       "cpu gemm: plan '%s' does not apply to %s %s with %d rows per group",
                       p->id ? p->id : "(unnamed)", vg_family_name(a->w.family),
                       vg_path_name(a->path), (int)rows);
    if (a->m == 0)
        return VG_OK;
    size_t need = 0;
    st = vg_cpu_workspace_bytes(p, a, &need);
    if (st != VG_OK)
        return st;
    if (need && (!a->workspace || a->workspace_bytes < need))
        return vg_fail(VG_ERR_INVALID_ARG,
                       "cpu gemm: plan '%s' (%s, split-K %d) needs %zu workspace bytes, got %zu%s",
                       p->id ? p->id : "(unnamed)", vg_plan_kind_name(p->kind), (int)p->split_k, need,
                       a->workspace ? a->workspace_bytes : (size_t)0,
                       a->workspace ? "" : " (workspace is NULL)");
    if (need && ((uintptr_t)a->workspace % sizeof(float)))
        return vg_fail(VG_ERR_INVALID_ARG, "cpu gemm: workspace is not 4-byte aligned");

    scratch s;
    s.x = malloc((size_t)p->tile_m * (size_t)p->tile_k * sizeof(float));
    s.wt = malloc((size_t)p->tile_k * (size_t)p->tile_n * sizeof(float));
    s.acc = malloc((size_t)p->tile_m * (size_t)p->tile_n * sizeof(float));
    if (!s.x || !s.wt || !s.acc) {
        free(s.x);
        free(s.wt);
        free(s.acc);
        return vg_fail(VG_ERR_NO_MEMORY, "cpu gemm: out of memory for tile scratch");
    }
    if (p->kind == VG_KIND_DEQUANT_BLAS) {
        st = dequant_once_rows(p, a, &s);
    } else if (a->path == VG_PATH_DENSE) {
        gemm_rows(p, a, 0, 0, a->m, &s);
    } else {
        /* grouped and moe: every group in this one call; loop: the same
         * dense pass once per group (each call of a dense plan) */
        for (int32_t g = 0; g < a->w.groups; g++)
            if (a->offsets_host[g + 1] > a->offsets_host[g])
                gemm_rows(p, a, g, a->offsets_host[g], a->offsets_host[g + 1], &s);
    }
    free(s.x);
    free(s.wt);
    free(s.acc);
    return st;
}
