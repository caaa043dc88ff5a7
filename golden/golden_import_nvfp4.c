/*
 * golden import: NVFP4 checkpoints of NVIDIA ModelOpt and of
 * compressed-tensors -> the nvfp4 family.  One source format's reader: its
 * tensors, its checks and its dequantization rule (ModelOpt multiplies by
 * weight_scale_2, compressed-tensors divides by weight_global_scale), apart
 * from the other formats'.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_import.h"

static vg_status e4m3_scales_ok(imp *im, const char *name, const uint8_t *s, int64_t rows,
                                int64_t cols)
{
    for (int64_t i = 0; i < rows * cols; i++)
        if ((s[i] & 0x7F) == 0x7F)
            return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] is an E4M3 NaN "
                           "(a NaN scale)", im->c.label, name, (long long)(i / cols),
                           (long long)(i % cols));
    return VG_OK;
}

vg_status golden_import_nvfp4(imp *im, const char *base, int32_t g)
{
    int ct = im->fmt == SRC_NVFP4_CT;
    char nw[1024], ns[1024], ng[1024];
    /* ModelOpt: P.weight, P.weight_scale, P.weight_scale_2;
     * compressed-tensors: P.weight_packed, P.weight_scale, P.weight_global_scale */
    snprintf(nw, sizeof nw, "%s.%s", base, ct ? "weight_packed" : "weight");
    golden_import_join(ns, sizeof ns, base, ".weight_scale");
    snprintf(ng, sizeof ng, "%s.%s", base, ct ? "weight_global_scale" : "weight_scale_2");
    void *q = NULL, *s = NULL, *gs = NULL;
    int64_t qs[2], any2[2] = {-1, -1};
    vg_status r = golden_import_load(im, nw, VG_ST_U8, 2, any2, "E2M1 pairs [N][K/2]", -1, &q, qs);
    if (r != VG_OK)
        goto out;
    int64_t N = qs[0], K = qs[1] * 2;
    int64_t SC = (K + VG_NVFP4_GROUP - 1) / VG_NVFP4_GROUP;
    int64_t want_s[2] = {N, SC};
    if ((r = golden_import_load(im, ns, VG_ST_F8_E4M3, 2, want_s,
                                "E4M3 scale per 16 along K [N][K/16]", -1, &s, NULL)) != VG_OK)
        goto out;
    if ((r = golden_import_load(im, ng, VG_ST_F32, 0, NULL,
                                ct ? "F32 global scale [1], the reciprocal"
                                   : "F32 per-tensor scale",
                                -1, &gs, NULL)) != VG_OK)
        goto out;
    if ((r = e4m3_scales_ok(im, ns, s, N, SC)) != VG_OK)
        goto out;
    float gv = rd_f32(gs, 0);
    if (!isfinite(gv) || !(gv > 0.0f)) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' is %g: a %s must be finite and > 0",
                    im->c.label, ng, (double)gv, ct ? "global scale" : "per-tensor scale");
        goto out;
    }
    /* our family holds one FP32 tensor scale, applied as a multiplier: the
     * compressed-tensors global scale divides, so its reciprocal goes in */
    float ts = ct ? 1.0f / gv : gv;
    if (!isfinite(ts) || !(ts > 0.0f)) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' is %g: its reciprocal is not a finite "
                    "FP32", im->c.label, ng, (double)gv);
        goto out;
    }
    int first = !im->started;
    if ((r = golden_import_begin(im, VG_FAMILY_NVFP4, N, K, g, base)) != VG_OK)
        goto out;
    vg_golden_file *f = im->f;
    if (first) {
        f->w_tensor_scale = ts;
    } else if (f->w_tensor_scale != ts) {
        r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s' is %g, the groups before it %g: the "
                    "nvfp4 family holds one tensor scale for all groups", im->c.label, ng,
                    (double)gv, (double)(ct ? 1.0f / f->w_tensor_scale : f->w_tensor_scale));
        goto out;
    }
    memcpy((uint8_t *)f->w_q + (size_t)g * f->layout.q_bytes, q, f->layout.q_bytes);
    memcpy((uint8_t *)f->w_scale + (size_t)g * f->layout.scale_bytes, s, f->layout.scale_bytes);
    const uint8_t *qb = q, *sb = s;
    float *wd = f->w_dequant + (size_t)g * (size_t)(N * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            uint8_t byte = qb[n * (K / 2) + k / 2];
            float e = vg_e2m1_to_f32((k & 1) ? (uint8_t)(byte >> 4) : (uint8_t)(byte & 0xF));
            float blk = vg_e4m3_to_f32(sb[n * SC + k / VG_NVFP4_GROUP]);
            /* each source's own order: ModelOpt scales the block scale by
             * weight_scale_2 in FP32 first; compressed-tensors divides the block
             * scale by the global scale in FP32 first; then the element */
            float scale = ct ? blk / gv : blk * gv;
            wd[n * K + k] = (float)((double)e * (double)scale);
        }
out:
    free(q);
    free(s);
    free(gs);
    return r;
}
