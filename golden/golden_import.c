/*
 * golden import: a case from a real checkpoint, taken as stored.
 *
 * The codes, scales and zeros of the file become the golden weight bit for
 * bit, repacked into our family's layout (types.h), and w_dequant -- what the
 * FP64 reference multiplies -- is computed from the SOURCE tensors with the
 * source format's own dequantization rule, never by running our dequantizer
 * on the repacked data: a repacking error then shows as a verify failure
 * instead of hiding in both.  golden/SCHEMA.md ("Imported checkpoints") has
 * each format's tensors and rule, with the code it was read from.
 *
 * A BF16/F16/F32 weight is taken as an fp16 weight when every value is an
 * FP16 (as stored), or quantized to --family when one is given.
 *
 * Tensors resolve in one safetensors file or through a model folder's
 * model.safetensors.index.json (only the shards a tensor needs are opened).
 * Experts: per-expert 2-D tensors named by a pattern with "{e}", or a fused
 * [E][...] tensor, become the groups of a grouped/loop/moe case.
 *
 * This file is the driver, vg_golden_import: the arguments, the groups (the
 * experts), one source-format reader per group, and the finished file.  The
 * parts live beside it, each one concern (golden_import.h declares them):
 *   golden_import_ckpt.c    the checkpoint (file, folder, index, configs)
 *   golden_import_tensor.c  reading one tensor, checked; starting the weight
 *   golden_import_detect.c  which source format a weight is
 *   golden_import_awq.c     AutoAWQ / GPTQ        -> awq
 *   golden_import_nvfp4.c   ModelOpt / c-t NVFP4  -> nvfp4
 *   golden_import_mxfp4.c   gpt-oss MXFP4         -> mxfp4
 *   golden_import_fp8.c     DeepSeek FP8          -> fp8
 *   golden_import_float.c   BF16 / F16 / F32      -> fp16, or --family
 *   golden_import_case.c    the provenance and the case (X, reference)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_import.h"

const char *const golden_import_src_names[SRC_COUNT] = {
    "fp8-deepseek", "float", "awq", "gptq", "gptq_v2", "nvfp4-modelopt", "nvfp4-ct",
    "mxfp4-gptoss"};

const char *vg_golden_import_format_names(void)
{
    return "fp8-deepseek, float, awq, gptq, gptq_v2, nvfp4-modelopt, nvfp4-ct, mxfp4-gptoss";
}

/* The name of expert e from a pattern with "{e}". */
vg_status golden_import_expert_name(const char *pattern, int64_t e, char *out, size_t len)
{
    const char *at = strstr(pattern, "{e}");
    if (!at)
        return vg_fail(VG_ERR_INVALID_ARG, "import: --experts '%s' has no {e}", pattern);
    int n = snprintf(out, len, "%.*s%lld%s", (int)(at - pattern), pattern, (long long)e, at + 3);
    if (n < 0 || (size_t)n >= len)
        return vg_fail(VG_ERR_INVALID_ARG, "import: --experts name too long");
    return VG_OK;
}

vg_status vg_golden_import(const vg_golden_import_args *a, vg_golden_file *out)
{
    if (!a || !out || (!a->safetensors == !a->checkpoint) || (!a->weight == !a->experts))
        return vg_fail(VG_ERR_INVALID_ARG, "import: give --safetensors FILE or --checkpoint DIR, "
                       "and --weight NAME or --experts PATTERN");
    memset(out, 0, sizeof *out);
    if (strlen(a->weight ? a->weight : a->experts) > 400)
        return vg_fail(VG_ERR_INVALID_ARG, "import: a weight name of more than 400 bytes");
    if (!vg_path_name(a->path) || a->tokens < 0 || a->tokens > VG_GOLDEN_MAX_DIM ||
        (!a->routing && a->tokens < 1))
        return vg_fail(VG_ERR_INVALID_ARG, "import: bad path or token count");
    if (a->routing && a->path != VG_PATH_MOE)
        return vg_fail(VG_ERR_INVALID_ARG, "import: a routing is for --path moe");
    row_pick rows = ROWS_ALL;
    if (a->rows && !strcmp(a->rows, "gate"))
        rows = ROWS_GATE;
    else if (a->rows && !strcmp(a->rows, "up"))
        rows = ROWS_UP;
    else if (a->rows && strcmp(a->rows, "all"))
        return vg_fail(VG_ERR_INVALID_ARG, "import: --rows '%s' (all, gate or up)", a->rows);
    imp *im = calloc(1, sizeof *im);
    if (!im)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    im->a = a;
    im->f = out;
    vg_golden_file *f = out;
    vg_status r = golden_import_ckpt_open(a, &im->c);
    if (r != VG_OK)
        goto fail;
    golden_import_read_quant_cfg(&im->c, &im->q);

    /* the groups: per-expert names, or the experts of a fused 3-D tensor */
    char first[600], tensor[600];
    int64_t e0 = 0, e1 = 1;
    int fused = 0;
    if (a->experts) {
        if (a->have_expert_range) {
            e0 = a->expert_begin;
            e1 = a->expert_end;
        } else { /* every expert the checkpoint has, counted by its first tensor */
            e0 = 0;
            e1 = 0;
        }
        if ((r = golden_import_expert_name(a->experts, e0, first, sizeof first)) != VG_OK)
            goto fail;
    } else {
        snprintf(first, sizeof first, "%s", a->weight);
    }
    if ((r = golden_import_detect(im, first, tensor, sizeof tensor)) != VG_OK)
        goto fail;
    if (a->experts && !a->have_expert_range) {
        char nm[600], probe[700];
        for (e1 = 0; e1 < VG_GOLDEN_MAX_GROUPS + 1; e1++) {
            if (golden_import_expert_name(a->experts, e1, nm, sizeof nm) != VG_OK)
                break;
            const char *suffix = im->fmt == SRC_AWQ || im->fmt == SRC_GPTQ ||
                                         im->fmt == SRC_GPTQ_V2 ? ".qweight"
                               : im->fmt == SRC_NVFP4_CT ? ".weight_packed"
                               : im->fmt == SRC_MXFP4 ? "_blocks"
                               : im->fmt == SRC_NVFP4_MODELOPT || strcmp(tensor, first)
                                   ? ".weight" : "";
            snprintf(probe, sizeof probe, "%s%s", nm, suffix);
            if (!golden_import_ckpt_has(&im->c, probe) &&
                !(im->fmt == SRC_MXFP4 && (snprintf(probe, sizeof probe, "%s.blocks", nm),
                                           golden_import_ckpt_has(&im->c, probe))))
                break;
        }
    }
    if (!a->experts) {
        /* a fused [E][...] tensor: its first dimension is the experts */
        const vg_st_tensor *t = NULL;
        char lead[700];
        if (im->fmt == SRC_MXFP4) {
            golden_import_join(lead, sizeof lead, tensor, "_blocks");
            if (!golden_import_ckpt_has(&im->c, lead))
                golden_import_join(lead, sizeof lead, tensor, ".blocks");
        } else {
            snprintf(lead, sizeof lead, "%s", tensor);
        }
        if ((im->fmt == SRC_FP8 || im->fmt == SRC_FLOAT || im->fmt == SRC_MXFP4) &&
            (r = golden_import_peek(im, lead, &t)) != VG_OK)
            goto fail;
        if (t && t->rank == (im->fmt == SRC_MXFP4 ? 4 : 3)) {
            fused = 1;
            e0 = a->have_expert_range ? a->expert_begin : 0;
            e1 = a->have_expert_range ? a->expert_end : t->shape[0];
            if (e1 > t->shape[0]) {
                r = vg_fail(VG_ERR_INVALID_ARG, "%s: tensor '%s' has %lld experts; "
                            "--experts-range asks up to %lld", im->c.label, lead,
                            (long long)t->shape[0], (long long)e1);
                goto fail;
            }
        } else if (a->have_expert_range) {
            r = vg_fail(VG_ERR_INVALID_ARG, "import: --experts-range needs --experts PATTERN or "
                        "a fused [E][...] weight");
            goto fail;
        } else if (t && im->fmt != SRC_MXFP4 && t->rank != 2) {
            r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %d; a weight is [N][K] or "
                        "[G][N][K]", im->c.label, tensor, t->rank);
            goto fail;
        }
    }
    if (e1 <= e0 || e1 - e0 > VG_GOLDEN_MAX_GROUPS) {
        r = vg_fail(VG_ERR_INVALID_ARG, "%s: experts %lld:%lld: no expert found, or more than %d",
                    im->c.label, (long long)e0, (long long)e1, VG_GOLDEN_MAX_GROUPS);
        goto fail;
    }
    im->groups = (int32_t)(e1 - e0);
    if (a->have_family && im->fmt != SRC_FLOAT &&
        a->family != (im->fmt == SRC_FP8 ? VG_FAMILY_FP8
                      : im->fmt == SRC_MXFP4 ? VG_FAMILY_MXFP4
                      : im->fmt == SRC_NVFP4_CT || im->fmt == SRC_NVFP4_MODELOPT
                          ? VG_FAMILY_NVFP4
                          : VG_FAMILY_AWQ)) {
        r = vg_fail(VG_ERR_UNSUPPORTED, "%s: weight '%s' is %s: it imports as stored, not as %s",
                    im->c.label, tensor, golden_import_src_names[im->fmt],
                    vg_family_name(a->family));
        goto fail;
    }
    if (a->scale && im->fmt != SRC_FP8) {
        r = vg_fail(VG_ERR_INVALID_ARG, "%s: --scale names an F8_E4M3 weight's scale; weight '%s' "
                    "is %s", im->c.label, tensor, golden_import_src_names[im->fmt]);
        goto fail;
    }
    if (a->scale && a->experts && !strstr(a->scale, "{e}")) {
        r = vg_fail(VG_ERR_INVALID_ARG, "import: with --experts, --scale names each expert's scale "
                    "through {e}, as --experts does ('%s' has none)", a->scale);
        goto fail;
    }
    if (rows != ROWS_ALL && im->fmt != SRC_MXFP4) {
        r = vg_fail(VG_ERR_INVALID_ARG, "import: --rows is for fused gate_up weights "
                    "(mxfp4-gptoss)");
        goto fail;
    }
    if (a->routing && a->routing_count != im->groups) {
        r = vg_fail(VG_ERR_INVALID_ARG, "import: --routing has %d counts for %d experts",
                    (int)a->routing_count, (int)im->groups);
        goto fail;
    }
    f->path = a->path;
    if (f->path == VG_PATH_DENSE && im->groups != 1) {
        r = vg_fail(VG_ERR_INVALID_ARG, "%s: weight '%s' has %d groups: use --path grouped, "
                    "loop or moe", im->c.label, tensor, (int)im->groups);
        goto fail;
    }
    for (int32_t g = 0; g < im->groups && r == VG_OK; g++) {
        int64_t e = e0 + g;
        char name[600];
        if (a->experts) {
            if ((r = golden_import_expert_name(a->experts, e, name, sizeof name)) != VG_OK)
                break;
            if (strcmp(tensor, first) && (im->fmt == SRC_FP8 || im->fmt == SRC_FLOAT ||
                                          im->fmt == SRC_NVFP4_MODELOPT)) {
                /* the first expert resolved "<name>.weight" */
                if (im->fmt != SRC_NVFP4_MODELOPT)
                    strncat(name, ".weight", sizeof name - strlen(name) - 1);
            }
        } else {
            snprintf(name, sizeof name, "%s", tensor);
        }
        int64_t fe = fused ? e : -1;
        im->expert = e;
        switch (im->fmt) {
        case SRC_FP8: r = golden_import_fp8(im, name, fe, g); break;
        case SRC_FLOAT: r = golden_import_float(im, name, fe, g); break;
        case SRC_AWQ:
        case SRC_GPTQ:
        case SRC_GPTQ_V2: r = golden_import_int4(im, name, g); break;
        case SRC_NVFP4_MODELOPT:
        case SRC_NVFP4_CT: r = golden_import_nvfp4(im, name, g); break;
        case SRC_MXFP4: r = golden_import_mxfp4(im, name, fe, g, rows); break;
        case SRC_COUNT: break;
        }
    }
    if (r == VG_OK && im->fmt == SRC_FLOAT)
        r = golden_import_finish_float(im);
    if (r != VG_OK)
        goto fail;
    f->groups = im->groups;
    /* A scale that takes a weight past FP16 (a corrupt checkpoint: real
     * scales are near 1/448 or a power of two near it) would put inf in the
     * dequantize + cuBLAS plans' FP16 copy (and, for the families whose
     * scale is applied before the MMA, on the tensor-core operands), so
     * `--plan all` could not pass the case: refused here, naming it. */
    {
        const int64_t per = (int64_t)f->n * f->k;
        for (int64_t i = 0; i < per * im->groups; i++)
            if (fabsf(f->w_dequant[i]) > 65504.0f) {
                r = vg_fail(VG_ERR_FORMAT, "%s: weight '%s' group %lld row %lld column %lld "
                            "dequantizes to %g, past FP16's largest value 65504 (a scale out "
                            "of range?): the dequantize + cuBLAS plans hold the weight as FP16",
                            im->c.label, tensor, (long long)(i / per),
                            (long long)(i % per / f->k), (long long)(i % f->k),
                            (double)f->w_dequant[i]);
                goto fail;
            }
    }
    /* the reader's bounds, before the reference is computed and written */
    if ((r = vg_golden_check_bounds(im->c.label, f)) != VG_OK)
        goto fail;
    f->seed = a->seed;
    f->weights_stored = 1;
    snprintf(f->generator, sizeof f->generator, "%s", VG_GOLDEN_GENERATOR);
    snprintf(f->source, sizeof f->source, "safetensors:%s:%s", base_name(im->c.label),
             a->experts ? a->experts : a->weight);
    char rows_note[160] = "";
    if (im->fmt == SRC_MXFP4 || fused || a->experts)
        snprintf(rows_note, sizeof rows_note, "; experts=%lld:%lld%s", (long long)e0,
                 (long long)e1,
                 im->fmt != SRC_MXFP4 ? ""
                 : rows == ROWS_ALL ? "; rows=all (gate_up weights interleave: even rows gate, "
                                      "odd rows up)"
                 : rows == ROWS_GATE ? "; rows=gate (the even rows)" : "; rows=up (the odd rows)");
    if ((r = golden_import_provenance(im, rows_note)) != VG_OK ||
        (r = golden_import_make_case(a, f, im->c.label, a->experts ? a->experts : a->weight)) !=
            VG_OK)
        goto fail;
    golden_import_ckpt_close(&im->c);
    free(im->wfloat);
    free(im);
    return VG_OK;
fail:
    golden_import_ckpt_close(&im->c);
    free(im->wfloat);
    free(im);
    vg_golden_free(out);
    return r;
}
