/*
 * golden import: BF16 / F16 / F32 weights -> the fp16 family when every
 * value is an FP16 as stored, else quantized to --family.  Unlike the
 * quantized formats' readers, the values of all groups are gathered first
 * and the weight is made at the end (golden_import_finish_float).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "golden_import.h"
#include "voltgate/quant.h"

vg_status golden_import_float(imp *im, const char *name, int64_t e, int32_t g)
{
    const vg_st_tensor *t;
    vg_status r = golden_import_peek(im, name, &t);
    if (r != VG_OK)
        return r;
    vg_st_dtype dt = t->dtype;
    void *raw = NULL;
    int64_t ws[2], any2[2] = {-1, -1};
    if ((r = golden_import_load(im, name, dt, 2, any2, "[N][K]", e, &raw, ws)) != VG_OK)
        return r;
    int64_t N = ws[0], K = ws[1];
    vg_golden_file *f = im->f;
    if (!im->started) {
        if (N < 1 || K < 1 || N > VG_GOLDEN_MAX_DIM || K > VG_GOLDEN_MAX_DIM ||
            (uint64_t)N * (uint64_t)K * (uint64_t)im->groups > ((uint64_t)1 << 28)) {
            free(raw);
            return vg_fail(VG_ERR_LIMIT, "%s: tensor '%s' shape %dx%lldx%lld is empty or too big "
                           "for a golden case", im->c.label, name, (int)im->groups, (long long)N,
                           (long long)K);
        }
        im->wfloat = malloc((size_t)im->groups * (size_t)(N * K) * sizeof(float));
        if (!im->wfloat) {
            free(raw);
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        }
        f->n = (int32_t)N;
        f->k = (int32_t)K;
        im->float_dtype = dt;
        im->started = 1;
    } else if (N != f->n || K != f->k || dt != im->float_dtype) {
        free(raw);
        return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' (group %d) is %s %lld x %lld; the groups "
                       "before it are %s %d x %d", im->c.label, name, (int)g,
                       vg_st_dtype_name(dt), (long long)N, (long long)K,
                       vg_st_dtype_name(im->float_dtype), (int)f->n, (int)f->k);
    }
    float *w = im->wfloat + (size_t)g * (size_t)(N * K);
    for (int64_t i = 0; i < N * K; i++) {
        w[i] = dt == VG_ST_F32 ? rd_f32(raw, (size_t)i)
             : dt == VG_ST_F16 ? vg_fp16_to_f32(rd_u16(raw, (size_t)i))
                               : vg_bf16_to_f32(rd_u16(raw, (size_t)i));
        if (!isfinite(w[i])) {
            free(raw);
            return vg_fail(VG_ERR_FORMAT, "%s: weight '%s' element %lld is not finite",
                           im->c.label, name, (long long)i);
        }
    }
    free(raw);
    return VG_OK;
}

/* After every group: the float values as an fp16 weight (each must be an
 * FP16 exactly), or quantized to --family. */
vg_status golden_import_finish_float(imp *im)
{
    vg_golden_file *f = im->f;
    size_t elems = (size_t)im->groups * (size_t)f->n * (size_t)f->k;
    f->groups = im->groups;
    if (im->a->have_family) {
        vg_qweight q;
        memset(&q, 0, sizeof q);
        vg_status r = vg_quantize(im->a->family, im->wfloat, im->groups, f->n, f->k, &q);
        if (r != VG_OK)
            return r;
        f->family = im->a->family;
        f->layout = q.layout;
        f->w_q = q.q;
        f->w_scale = q.scale;
        f->w_zero = q.zero;
        f->w_tensor_scale = q.w.tensor_scale; /* 1.0 unless the family has one */
        if (!(f->w_dequant = malloc(elems * sizeof(float))))
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        vg_weight w = vg_golden_weight(f);
        return vg_dequantize(&w, f->w_dequant);
    }
    f->family = VG_FAMILY_FP16;
    vg_status r = vg_weight_layout_of(VG_FAMILY_FP16, f->n, f->k, &f->layout);
    if (r != VG_OK)
        return r;
    uint16_t *q = malloc(elems * sizeof(uint16_t));
    if (!q)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    f->w_q = q;
    for (size_t i = 0; i < elems; i++) {
        q[i] = vg_f32_to_fp16(im->wfloat[i]);
        if (vg_fp16_to_f32(q[i]) != im->wfloat[i])
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: '%s' element %zu (group %zu) is %.9g, not an "
                           "FP16 value: a %s weight imports as stored into fp16 only when every "
                           "value is one; give --family to quantize it", im->c.label,
                           im->a->weight ? im->a->weight : im->a->experts,
                           i % ((size_t)f->n * (size_t)f->k), i / ((size_t)f->n * (size_t)f->k),
                           (double)im->wfloat[i], vg_st_dtype_name(im->float_dtype));
    }
    f->w_dequant = im->wfloat; /* the stored values themselves */
    im->wfloat = NULL;
    f->w_tensor_scale = 1.0f;
    return VG_OK;
}
