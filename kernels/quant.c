/*
 * Quantizers from FP32 weights to each family, and the dequantizer back.
 * The rules are documented in include/voltgate/quant.h; the layouts in
 * include/voltgate/types.h.
 */
#include "voltgate/quant.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "voltgate/family.h"
#include "voltgate/formats.h"

static int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

/* ---- decode tables ---------------------------------------------------------
 * E4M3 decodes through a 256-entry table built once from formats.h, so the
 * inner loops of the CPU kernels are a load, not a branchy decode. */
static float e4m3_table[256];
static pthread_once_t e4m3_once = PTHREAD_ONCE_INIT;

static void e4m3_table_init(void)
{
    for (int c = 0; c < 256; c++)
        e4m3_table[c] = vg_e4m3_to_f32((uint8_t)c);
}

static const float e2m1_table[16] = {0.0f,  0.5f,  1.0f,  1.5f,  2.0f,  3.0f,  4.0f,  6.0f,
                                     -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

/* ---- checks ------------------------------------------------------------------ */

vg_status vg_weight_check(const vg_weight *w, const char *what)
{
    if (!w)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: weight is NULL", what);
    if ((unsigned)w->family >= VG_FAMILY_COUNT)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: invalid family %d", what, (int)w->family);
    if (w->n <= 0 || w->k <= 0)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: N=%d K=%d must be positive", what, (int)w->n,
                       (int)w->k);
    if (w->groups < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: groups=%d must be at least 1", what,
                       (int)w->groups);
    vg_weight_layout lay;
    vg_status st = vg_weight_layout_of(w->family, w->n, w->k, &lay);
    if (st != VG_OK)
        return st;
    const char *fam = vg_family_name(w->family);
    if (!w->q)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: %s weight codes (q) are NULL", what, fam);
    if (lay.scale_bytes && !w->scale)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: %s weight scales are NULL", what, fam);
    if (lay.zero_bytes && !w->zero)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: %s weight zero points are NULL", what, fam);
    if (vg_family_has_tensor_scale(w->family) &&
        !(isfinite(w->tensor_scale) && w->tensor_scale > 0.0f))
        return vg_fail(VG_ERR_INVALID_ARG, "%s: %s tensor_scale %g must be finite and > 0", what,
                       fam, (double)w->tensor_scale);
    return VG_OK;
}

/* ---- dequantization ------------------------------------------------------------ */

void vg_dequant_block(const vg_weight *w, int32_t g, int32_t row0, int32_t nrows, int32_t k0,
                      int32_t klen, float *out, size_t row_stride, size_t k_stride)
{
    const size_t n = (size_t)w->n, k = (size_t)w->k;
    const size_t per_group = n * k; /* elements per group */
    switch (w->family) {
    case VG_FAMILY_FP16: {
        const uint16_t *q = (const uint16_t *)w->q + (size_t)g * per_group;
        for (int32_t r = 0; r < nrows; r++) {
            const uint16_t *src = q + (size_t)(row0 + r) * k + k0;
            float *dst = out + (size_t)r * row_stride;
            for (int32_t kk = 0; kk < klen; kk++)
                dst[kk * k_stride] = vg_fp16_to_f32(src[kk]);
        }
        return;
    }
    case VG_FAMILY_FP8: {
        pthread_once(&e4m3_once, e4m3_table_init);
        const size_t scols = (size_t)ceil_div(w->k, VG_FP8_BLOCK);
        const size_t srows = (size_t)ceil_div(w->n, VG_FP8_BLOCK);
        const uint8_t *q = (const uint8_t *)w->q + (size_t)g * per_group;
        const float *sc = (const float *)w->scale + (size_t)g * srows * scols;
        for (int32_t r = 0; r < nrows; r++) {
            size_t row = (size_t)(row0 + r);
            const uint8_t *src = q + row * k;
            const float *srow = sc + (row / VG_FP8_BLOCK) * scols;
            float *dst = out + (size_t)r * row_stride;
            for (int32_t kk = 0; kk < klen; kk++) {
                int32_t col = k0 + kk;
                dst[kk * k_stride] = e4m3_table[src[col]] * srow[col / VG_FP8_BLOCK];
            }
        }
        return;
    }
    case VG_FAMILY_AWQ: {
        const size_t words = k / 8, scols = (size_t)ceil_div(w->k, VG_AWQ_GROUP);
        const uint32_t *q = (const uint32_t *)w->q + (size_t)g * n * words;
        const uint16_t *sc = (const uint16_t *)w->scale + (size_t)g * n * scols;
        const uint16_t *zp = (const uint16_t *)w->zero + (size_t)g * n * scols;
        for (int32_t r = 0; r < nrows; r++) {
            size_t row = (size_t)(row0 + r);
            const uint32_t *src = q + row * words;
            float *dst = out + (size_t)r * row_stride;
            int32_t cur_group = -1;
            float s = 0.0f, z = 0.0f;
            for (int32_t kk = 0; kk < klen; kk++) {
                int32_t col = k0 + kk;
                if (col / VG_AWQ_GROUP != cur_group) {
                    cur_group = col / VG_AWQ_GROUP;
                    s = vg_fp16_to_f32(sc[row * scols + (size_t)cur_group]);
                    z = vg_fp16_to_f32(zp[row * scols + (size_t)cur_group]);
                }
                float code = (float)vg_awq_unpack(src[col / 8], col & 7);
                dst[kk * k_stride] = (code - z) * s;
            }
        }
        return;
    }
    case VG_FAMILY_MXFP4:
    case VG_FAMILY_NVFP4: {
        const int mx = w->family == VG_FAMILY_MXFP4;
        const int32_t group = mx ? VG_MXFP4_GROUP : VG_NVFP4_GROUP;
        const size_t scols = (size_t)ceil_div(w->k, group);
        const uint8_t *q = (const uint8_t *)w->q + (size_t)g * (per_group / 2);
        const uint8_t *sc = (const uint8_t *)w->scale + (size_t)g * n * scols;
        const float ts = w->tensor_scale;
        if (!mx)
            pthread_once(&e4m3_once, e4m3_table_init);
        for (int32_t r = 0; r < nrows; r++) {
            size_t row = (size_t)(row0 + r);
            const uint8_t *src = q + row * (k / 2);
            float *dst = out + (size_t)r * row_stride;
            int32_t cur_group = -1;
            float s = 0.0f;
            for (int32_t kk = 0; kk < klen; kk++) {
                int32_t col = k0 + kk;
                if (col / group != cur_group) {
                    cur_group = col / group;
                    uint8_t c = sc[row * scols + (size_t)cur_group];
                    s = mx ? vg_e8m0_to_f32(c) : e4m3_table[c];
                }
                uint8_t byte = src[col >> 1];
                float e = e2m1_table[(col & 1) ? byte >> 4 : byte & 0xF];
                dst[kk * k_stride] = mx ? e * s : (e * s) * ts;
            }
        }
        return;
    }
    case VG_FAMILY_COUNT:
        return;
    }
}

vg_status vg_dequantize(const vg_weight *w, float *out)
{
    vg_status st = vg_weight_check(w, "dequantize");
    if (st != VG_OK)
        return st;
    if (!out)
        return vg_fail(VG_ERR_INVALID_ARG, "dequantize: output is NULL");
    size_t per_group = (size_t)w->n * (size_t)w->k;
    for (int32_t g = 0; g < w->groups; g++)
        vg_dequant_block(w, g, 0, w->n, 0, w->k, out + (size_t)g * per_group, (size_t)w->k, 1);
    return VG_OK;
}

/* ---- quantization, one group at a time ------------------------------------------- */

static void quant_fp16(const float *w, int32_t n, int32_t k, uint16_t *q)
{
    size_t nk = (size_t)n * (size_t)k;
    for (size_t i = 0; i < nk; i++)
        q[i] = vg_f32_to_fp16(w[i]);
}

static void quant_fp8(const float *w, int32_t n, int32_t k, uint8_t *q, float *scale)
{
    int32_t scols = ceil_div(k, VG_FP8_BLOCK);
    for (int32_t br = 0; br < n; br += VG_FP8_BLOCK) {
        int32_t re = br + VG_FP8_BLOCK < n ? br + VG_FP8_BLOCK : n;
        for (int32_t bc = 0; bc < k; bc += VG_FP8_BLOCK) {
            int32_t ce = bc + VG_FP8_BLOCK < k ? bc + VG_FP8_BLOCK : k;
            float amax = 0.0f;
            for (int32_t r = br; r < re; r++)
                for (int32_t c = bc; c < ce; c++) {
                    float a = fabsf(w[(size_t)r * k + c]);
                    if (a > amax)
                        amax = a;
                }
            float s = amax > 0.0f ? amax / VG_E4M3_MAX : 1.0f;
            scale[(size_t)(br / VG_FP8_BLOCK) * scols + bc / VG_FP8_BLOCK] = s;
            for (int32_t r = br; r < re; r++)
                for (int32_t c = bc; c < ce; c++)
                    q[(size_t)r * k + c] = vg_f32_to_e4m3(w[(size_t)r * k + c] / s, 0);
        }
    }
}

/* The smallest FP16 >= x (x positive and finite, below 65504). */
static uint16_t fp16_round_up(float x)
{
    uint16_t h = vg_f32_to_fp16(x);
    if (vg_fp16_to_f32(h) < x)
        h++; /* positive FP16 bit patterns are ordered like their values */
    return h;
}

static vg_status quant_awq(const float *w, int32_t n, int32_t k, uint32_t *q, uint16_t *scale,
                           uint16_t *zero)
{
    int32_t scols = ceil_div(k, VG_AWQ_GROUP);
    for (int32_t r = 0; r < n; r++) {
        const float *row = w + (size_t)r * k;
        uint8_t codes[VG_AWQ_GROUP];
        for (int32_t gc = 0; gc < k; gc += VG_AWQ_GROUP) {
            int32_t ge = gc + VG_AWQ_GROUP < k ? gc + VG_AWQ_GROUP : k;
            float lo = 0.0f, hi = 0.0f;
            for (int32_t c = gc; c < ge; c++) {
                if (row[c] < lo)
                    lo = row[c];
                if (row[c] > hi)
                    hi = row[c];
            }
            float range = (hi - lo) / 15.0f;
            if (!(range <= 65504.0f))
                return vg_fail(VG_ERR_UNSUPPORTED,
                               "quantize awq: row %d group %d spans %g, too wide for an FP16 scale",
                               (int)r, (int)(gc / VG_AWQ_GROUP), (double)(hi - lo));
            uint16_t sh = range > 0.0f ? fp16_round_up(range) : 0x3C00u; /* 1.0 */
            float s = vg_fp16_to_f32(sh);
            float z = floorf(-lo / s + 0.5f);
            if (z > 15.0f) /* cannot happen since (hi - lo) / s <= 15; belt and braces */
                z = 15.0f;
            scale[(size_t)r * scols + gc / VG_AWQ_GROUP] = sh;
            zero[(size_t)r * scols + gc / VG_AWQ_GROUP] = vg_f32_to_fp16(z);
            for (int32_t c = gc; c < ge; c++) {
                float v = floorf(row[c] / s + z + 0.5f);
                codes[c - gc] = (uint8_t)(v < 0.0f ? 0 : v > 15.0f ? 15 : (int)v);
            }
            for (int32_t c = gc; c < ge; c += 8)
                q[((size_t)r * k + c) / 8] = vg_awq_pack8(codes + (c - gc));
        }
    }
    return VG_OK;
}

static void put_nibble(uint8_t *q, size_t i, uint8_t v)
{
    if (i & 1)
        q[i >> 1] = (uint8_t)((q[i >> 1] & 0x0F) | (v << 4));
    else
        q[i >> 1] = (uint8_t)((q[i >> 1] & 0xF0) | (v & 0x0F));
}

static void quant_mxfp4(const float *w, int32_t n, int32_t k, uint8_t *q, uint8_t *scale)
{
    int32_t scols = ceil_div(k, VG_MXFP4_GROUP);
    for (int32_t r = 0; r < n; r++) {
        const float *row = w + (size_t)r * k;
        for (int32_t gc = 0; gc < k; gc += VG_MXFP4_GROUP) {
            int32_t ge = gc + VG_MXFP4_GROUP < k ? gc + VG_MXFP4_GROUP : k;
            float amax = 0.0f;
            for (int32_t c = gc; c < ge; c++)
                if (fabsf(row[c]) > amax)
                    amax = fabsf(row[c]);
            uint8_t code = 127; /* 1.0 for an all-zero group */
            if (amax > 0.0f) {
                code = vg_f32_to_e8m0(amax / VG_E2M1_MAX);
                /* amax / 6 may have rounded down onto a power of two */
                if (code < 254 && amax > VG_E2M1_MAX * vg_e8m0_to_f32(code))
                    code++;
            }
            scale[(size_t)r * scols + gc / VG_MXFP4_GROUP] = code;
            float x = vg_e8m0_to_f32(code);
            for (int32_t c = gc; c < ge; c++)
                put_nibble(q, (size_t)r * k + c, vg_f32_to_e2m1(row[c] / x));
        }
    }
}

static void quant_nvfp4(const float *w, int32_t n, int32_t k, float ts, uint8_t *q,
                        uint8_t *scale)
{
    int32_t scols = ceil_div(k, VG_NVFP4_GROUP);
    for (int32_t r = 0; r < n; r++) {
        const float *row = w + (size_t)r * k;
        for (int32_t gc = 0; gc < k; gc += VG_NVFP4_GROUP) {
            int32_t ge = gc + VG_NVFP4_GROUP < k ? gc + VG_NVFP4_GROUP : k;
            float amax = 0.0f;
            for (int32_t c = gc; c < ge; c++)
                if (fabsf(row[c]) > amax)
                    amax = fabsf(row[c]);
            uint8_t code = vg_f32_to_e4m3(amax / VG_E2M1_MAX / ts, 0);
            if (code == 0 && amax > 0.0f)
                code = 1; /* keep a tiny block representable rather than all zero */
            scale[(size_t)r * scols + gc / VG_NVFP4_GROUP] = code;
            float s = vg_e4m3_to_f32(code);
            float div = s * ts;
            for (int32_t c = gc; c < ge; c++)
                put_nibble(q, (size_t)r * k + c, div > 0.0f ? vg_f32_to_e2m1(row[c] / div) : 0);
        }
    }
}

/* ---- the public quantizer ----------------------------------------------------------- */

vg_status vg_qweight_free(vg_qweight *q)
{
    if (!q)
        return VG_OK;
    free(q->q);
    free(q->scale);
    free(q->zero);
    memset(q, 0, sizeof *q);
    return VG_OK;
}

vg_status vg_quantize(vg_family f, const float *w, int32_t groups, int32_t n, int32_t k,
                      vg_qweight *out)
{
    if (!out)
        return vg_fail(VG_ERR_INVALID_ARG, "quantize: output is NULL");
    memset(out, 0, sizeof *out);
    if (!w)
        return vg_fail(VG_ERR_INVALID_ARG, "quantize: weights are NULL");
    if ((unsigned)f >= VG_FAMILY_COUNT)
        return vg_fail(VG_ERR_INVALID_ARG, "quantize: invalid family %d", (int)f);
    if (groups < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "quantize: groups=%d must be at least 1", (int)groups);
    vg_weight_layout lay;
    vg_status st = vg_weight_layout_of(f, n, k, &lay);
    if (st != VG_OK)
        return st;
    size_t per_group = (size_t)n * (size_t)k;
    if (per_group > SIZE_MAX / sizeof(float) / (size_t)groups)
        return vg_fail(VG_ERR_LIMIT, "quantize: %d x %d x %d weights overflow the address space",
                       (int)groups, (int)n, (int)k);
    size_t total = per_group * (size_t)groups;

    /* Refuse NaN/inf up front: no rule gives them a meaningful code. */
    float gmax = 0.0f;
    for (size_t i = 0; i < total; i++) {
        if (!isfinite(w[i]))
            return vg_fail(VG_ERR_INVALID_ARG,
                           "quantize %s: weight [%zu][%zu][%zu] is %g, not finite",
                           vg_family_name(f), i / per_group, (i % per_group) / (size_t)k,
                           i % (size_t)k, (double)w[i]);
        if (fabsf(w[i]) > gmax)
            gmax = fabsf(w[i]);
    }
    if (f == VG_FAMILY_FP16 && gmax > 65504.0f)
        return vg_fail(VG_ERR_UNSUPPORTED, "quantize fp16: |w| up to %g exceeds FP16's 65504",
                       (double)gmax);

    out->layout = lay;
    out->q = calloc((size_t)groups, lay.q_bytes);
    out->scale = lay.scale_bytes ? calloc((size_t)groups, lay.scale_bytes) : NULL;
    out->zero = lay.zero_bytes ? calloc((size_t)groups, lay.zero_bytes) : NULL;
    if (!out->q || (lay.scale_bytes && !out->scale) || (lay.zero_bytes && !out->zero)) {
        vg_qweight_free(out);
        return vg_fail(VG_ERR_NO_MEMORY, "quantize: out of memory for %d x %d x %d weights",
                       (int)groups, (int)n, (int)k);
    }
    float ts = 1.0f;
    if (f == VG_FAMILY_NVFP4 && gmax > 0.0f)
        ts = gmax / (VG_E4M3_MAX * VG_E2M1_MAX);

    for (int32_t g = 0; g < groups; g++) {
        const float *wg = w + (size_t)g * per_group;
        uint8_t *qg = (uint8_t *)out->q + (size_t)g * lay.q_bytes;
        uint8_t *sg = out->scale ? (uint8_t *)out->scale + (size_t)g * lay.scale_bytes : NULL;
        uint8_t *zg = out->zero ? (uint8_t *)out->zero + (size_t)g * lay.zero_bytes : NULL;
        switch (f) {
        case VG_FAMILY_FP16:
            quant_fp16(wg, n, k, (uint16_t *)qg);
            break;
        case VG_FAMILY_FP8:
            quant_fp8(wg, n, k, qg, (float *)sg);
            break;
        case VG_FAMILY_AWQ:
            st = quant_awq(wg, n, k, (uint32_t *)qg, (uint16_t *)sg, (uint16_t *)zg);
            break;
        case VG_FAMILY_MXFP4:
            quant_mxfp4(wg, n, k, qg, sg);
            break;
        case VG_FAMILY_NVFP4:
            quant_nvfp4(wg, n, k, ts, qg, sg);
            break;
        case VG_FAMILY_COUNT:
            break;
        }
        if (st != VG_OK) {
            vg_qweight_free(out);
            return st;
        }
    }
    out->w.family = f;
    out->w.n = n;
    out->w.k = k;
    out->w.groups = groups;
    out->w.q = out->q;
    out->w.scale = out->scale;
    out->w.zero = out->zero;
    out->w.tensor_scale = ts;
    return VG_OK;
}
