/*
 * golden import: which source format a weight is -- --format when given,
 * else from the tensors present (their names, dtypes and shapes) and the
 * folder's quantization config -- and how that was decided, for the
 * provenance.  Separate from the readers: they are told the format, and
 * detection reads no weight data.
 */
#include <stdio.h>
#include <string.h>

#include "golden_import.h"

static vg_status parse_format(const char *name, src_format *out)
{
    for (int i = 0; i < SRC_COUNT; i++)
        if (!strcmp(name, golden_import_src_names[i])) {
            *out = (src_format)i;
            return VG_OK;
        }
    return vg_fail(VG_ERR_INVALID_ARG, "import: unknown --format '%s' (%s)", name,
                   vg_golden_import_format_names());
}

/* Chooses the source format of the weight `base` (a tensor or a module
 * prefix) from the tensors present and the folder's quantization config;
 * `*tensor` gets the name a single-tensor format reads. */
vg_status golden_import_detect(imp *im, const char *base, char *tensor, size_t tlen)
{
    char nm[600];
    snprintf(tensor, tlen, "%s", base);
    const ckpt *c = &im->c;
    const quant_cfg *q = &im->q;
    if (im->a->format) {
        vg_status r = parse_format(im->a->format, &im->fmt);
        if (r != VG_OK)
            return r;
        snprintf(im->detected, sizeof im->detected, "--format %s", im->a->format);
        if ((im->fmt == SRC_FP8 || im->fmt == SRC_FLOAT) && !golden_import_ckpt_has(c, base)) {
            golden_import_join(nm, sizeof nm, base, ".weight");
            if (golden_import_ckpt_has(c, nm))
                snprintf(tensor, tlen, "%s", nm);
        }
        size_t bl = strlen(tensor);
        if ((im->fmt == SRC_NVFP4_MODELOPT || im->fmt == SRC_NVFP4_CT) && bl > 7 &&
            !strcmp(tensor + bl - 7, ".weight"))
            tensor[bl - 7] = '\0'; /* these formats' tensors hang off the module prefix */
        return VG_OK;
    }
    char cfg[256] = "";
    if (q->method[0])
        snprintf(cfg, sizeof cfg, "; %s quant_method %s%s%s", q->where, q->method,
                 q->checkpoint_format[0] ? ", checkpoint_format " : "", q->checkpoint_format);
    golden_import_join(nm, sizeof nm, base, ".qweight");
    if (golden_import_ckpt_has(c, nm)) {
        const vg_st_tensor *tq, *ts;
        char ns[600];
        golden_import_join(ns, sizeof ns, base, ".scales");
        vg_status r;
        if ((r = golden_import_peek(im, nm, &tq)) != VG_OK ||
            (r = golden_import_peek(im, ns, &ts)) != VG_OK)
            return r;
        int awq_shape = tq->rank == 2 && ts->rank == 2 && tq->shape[1] * 8 == ts->shape[1];
        int gptq_shape = tq->rank == 2 && ts->rank == 2 && tq->shape[1] == ts->shape[1];
        if (!strcmp(q->method, "awq") || (!q->method[0] && awq_shape && !gptq_shape)) {
            im->fmt = SRC_AWQ;
        } else if (!strcmp(q->method, "gptq") || (!q->method[0] && gptq_shape)) {
            im->fmt = !strcmp(q->checkpoint_format, "gptq_v2") ? SRC_GPTQ_V2 : SRC_GPTQ;
        } else {
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: '%s' has qweight/scales, but neither the "
                           "AWQ ([K][N/8], [K/g][N]) nor the GPTQ ([K/8][N], [K/g][N]) shapes%s "
                           "(give --format)", c->label, base, cfg);
        }
        if (im->fmt == SRC_AWQ && q->version[0] && strcmp(q->version, "gemm"))
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: %s says AWQ version '%s': only the GEMM "
                           "packing (version gemm) is read", c->label, q->where, q->version);
        if (q->bits && q->bits != 4)
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: %s says bits %d: the awq family takes 4-bit "
                           "weights only", c->label, q->where, q->bits);
        snprintf(im->detected, sizeof im->detected, "tensors %s.qweight/.qzeros/.scales (%s "
                 "shapes)%s%s", base, im->fmt == SRC_AWQ ? "AWQ" : "GPTQ", cfg,
                 im->fmt == SRC_GPTQ && !q->checkpoint_format[0]
                     ? "; no checkpoint_format: gptq (v1) assumed" : "");
        return VG_OK;
    }
    golden_import_join(nm, sizeof nm, base, ".weight_packed");
    if (golden_import_ckpt_has(c, nm)) {
        im->fmt = SRC_NVFP4_CT;
        snprintf(im->detected, sizeof im->detected, "tensors %s.weight_packed/.weight_scale/"
                 ".weight_global_scale%s", base, cfg);
        return VG_OK;
    }
    char nb1[600], nb2[600];
    golden_import_join(nb1, sizeof nb1, base, "_blocks");
    golden_import_join(nb2, sizeof nb2, base, ".blocks");
    if (golden_import_ckpt_has(c, nb1) || golden_import_ckpt_has(c, nb2)) {
        im->fmt = SRC_MXFP4;
        snprintf(im->detected, sizeof im->detected, "tensors %s%s/_scales%s", base,
                 golden_import_ckpt_has(c, nb1) ? "_blocks" : ".blocks", cfg);
        return VG_OK;
    }
    if (!golden_import_ckpt_has(c, base)) {
        golden_import_join(nm, sizeof nm, base, ".weight");
        if (golden_import_ckpt_has(c, nm))
            snprintf(tensor, tlen, "%s", nm);
    }
    const vg_st_tensor *t;
    vg_status r = golden_import_peek(im, tensor, &t);
    if (r != VG_OK)
        return r;
    char ns2[600];
    golden_import_join(ns2, sizeof ns2, tensor, "_scale_2");
    if (t->dtype == VG_ST_U8 && golden_import_ckpt_has(c, ns2)) {
        im->fmt = SRC_NVFP4_MODELOPT;
        size_t bl = strlen(tensor);
        if (bl > 7 && !strcmp(tensor + bl - 7, ".weight"))
            tensor[bl - 7] = '\0';
        snprintf(im->detected, sizeof im->detected, "tensors %s (U8) with _scale/_scale_2%s",
                 base, cfg);
        return VG_OK;
    }
    if (t->dtype == VG_ST_F8_E4M3) {
        im->fmt = SRC_FP8;
        snprintf(im->detected, sizeof im->detected, "tensor %s is F8_E4M3", tensor);
        return VG_OK;
    }
    if (t->dtype == VG_ST_F32 || t->dtype == VG_ST_F16 || t->dtype == VG_ST_BF16) {
        im->fmt = SRC_FLOAT;
        snprintf(im->detected, sizeof im->detected, "tensor %s is %s%s", tensor,
                 vg_st_dtype_name(t->dtype),
                 im->a->have_family ? " (quantized to --family)" : "");
        return VG_OK;
    }
    return vg_fail(VG_ERR_UNSUPPORTED, "%s: weight '%s' has dtype %s and no tensors of a known "
                   "quantized format (F8_E4M3, BF16, F16 or F32 expected; or qweight/qzeros/"
                   "scales, weight_packed, weight + weight_scale_2, _blocks/_scales)",
                   c->label, tensor, vg_st_dtype_name(t->dtype));
}
