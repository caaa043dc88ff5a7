/*
 * voltgate quantizers: FP32 weights to each family's layout (types.h) and
 * back.  Host code; the golden generator and the suites use them, and the
 * CPU kernels use vg_dequant_block() to dequantize W tile by tile.
 *
 * Rules, per family (G groups stacked, each [N][K] row-major):
 *   fp16   element = FP16(w), RNE.  |w| beyond 65504 is refused.
 *   fp8    per 128x128 block (ragged at the N and K edges) the FP32 scale is
 *          block absmax / 448 (an all-zero block gets scale 1); element =
 *          E4M3(w / scale), RNE, saturating.  w' = e4m3 * scale.
 *   awq    per row, per 128 along K (ragged last group): lo = min(0, min w),
 *          hi = max(0, max w) -- zero is always inside the range, so the zero
 *          point needs no clamping and every w is within half a step;
 *          scale = (hi - lo) / 15 rounded UP to the next FP16 (so the 16
 *          codes still span [lo, hi]); an all-zero group gets scale 1;
 *          zero = round(-lo / scale), an integer 0..15 stored as FP16 bits;
 *          code = clamp(floor(w / scale + zero + 0.5), 0, 15).
 *          w' = (code - zero) * scale.
 *   mxfp4  per row, per 32 along K (ragged last group): the E8M0 scale X is
 *          the smallest power of two with absmax / X <= 6 (never clips,
 *          unlike OCP's floor(log2(absmax)) - 2 which can clip up to 8/6);
 *          an all-zero group gets X = 1; element = E2M1(w / X), RNE.
 *   nvfp4  tensor_scale = absmax over all groups / (448 * 6) (1 when all
 *          zero); per row per 16 along K: scale = E4M3(absmax / 6 /
 *          tensor_scale), RNE, at least the smallest subnormal code when the
 *          block is not all zero; element = E2M1(w / (scale * tensor_scale)).
 *          w' = (e2m1 * scale) * tensor_scale.
 * Non-finite weights are refused (VG_ERR_INVALID_ARG naming the element).
 */
#ifndef VOLTGATE_QUANT_H
#define VOLTGATE_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "voltgate/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An owning quantized weight: w's pointers point at q, scale and zero
 * (host memory, all groups back to back).  layout is per group. */
typedef struct vg_qweight {
    vg_weight w;
    void *q, *scale, *zero;
    vg_weight_layout layout;
} vg_qweight;

/* Quantizes w[groups][n][k] (FP32) into *out.  On error *out is left
 * zeroed and owns nothing. */
vg_status vg_quantize(vg_family f, const float *w, int32_t groups, int32_t n, int32_t k,
                      vg_qweight *out);

/* Dequantizes every group of *w (host memory) into out[groups][n][k]. */
vg_status vg_dequantize(const vg_weight *w, float *out);

/* Frees what *q owns and zeroes it; a zeroed (or freed) q is fine. */
vg_status vg_qweight_free(vg_qweight *q);

/* Checks that *w describes a complete host weight: valid family, positive
 * shape, groups >= 1, the buffers the family needs non-NULL, nvfp4's
 * tensor_scale finite and > 0.  `what` names the caller in the error. */
vg_status vg_weight_check(const vg_weight *w, const char *what);

/* The dequantizer the CPU kernels share: W_g[row0 + r][k0 + kk] for
 * r < nrows, kk < klen, written to out[r * row_stride + kk * k_stride].
 * No validation (callers ran vg_weight_check / vg_gemm_check_args); the
 * rows and the K range must lie inside the weight. */
void vg_dequant_block(const vg_weight *w, int32_t g, int32_t row0, int32_t nrows, int32_t k0,
                      int32_t klen, float *out, size_t row_stride, size_t k_stride);

#ifdef __cplusplus
}
#endif
#endif
