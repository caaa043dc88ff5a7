/*
 * golden import: a case from a real checkpoint tensor.
 *
 * An F8_E4M3 weight (DeepSeek style) is taken exactly as stored, with its
 * F32 block scale `weight_scale_inv` [ceil(N/128)][ceil(K/128)] as the fp8
 * family's scale; a BF16/F16/F32 weight is widened to FP32 and quantized to
 * the family asked for.  Activations are synthetic (SCHEMA.md), the
 * reference is the FP64 one on the dequantized weight, as for generated
 * cases.
 */
#include "voltgate/golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* Reads the weight's (G, N, K) from a rank-2 or rank-3 shape. */
static vg_status weight_shape(const char *file, const vg_st_tensor *t, int32_t *g, int32_t *n,
                              int32_t *k)
{
    if (t->rank != 2 && t->rank != 3)
        return vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %d; a weight is [N][K] or "
                       "[G][N][K]", file, t->name, t->rank);
    int64_t G = t->rank == 3 ? t->shape[0] : 1, N = t->shape[t->rank - 2],
            K = t->shape[t->rank - 1];
    if (G < 1 || N < 1 || K < 1 || G > VG_GOLDEN_MAX_GROUPS || N > VG_GOLDEN_MAX_DIM ||
        K > VG_GOLDEN_MAX_DIM || (uint64_t)(G * N * K) > ((uint64_t)1 << 28))
        return vg_fail(VG_ERR_LIMIT, "%s: tensor '%s' shape %lldx%lldx%lld is empty or too big "
                       "for a golden case", file, t->name, (long long)G, (long long)N,
                       (long long)K);
    *g = (int32_t)G;
    *n = (int32_t)N;
    *k = (int32_t)K;
    return VG_OK;
}

static vg_status import_fp8(const vg_golden_import_args *a, const vg_safetensors *st,
                            const vg_st_tensor *wt, vg_golden_file *f)
{
    char scale_name[512];
    if (a->scale)
        snprintf(scale_name, sizeof scale_name, "%s", a->scale);
    else
        snprintf(scale_name, sizeof scale_name, "%s_scale_inv", a->weight);
    const vg_st_tensor *s;
    vg_status r = vg_st_find(st, scale_name, &s);
    if (r != VG_OK) {
        char why[512]; /* copied: vg_fail overwrites vg_last_error's buffer */
        snprintf(why, sizeof why, "%s", vg_last_error());
        return vg_fail(r, "%s (an F8_E4M3 weight needs its F32 block scale; give --scale)", why);
    }
    int want_rank = f->groups > 1 || wt->rank == 3 ? 3 : 2;
    int64_t sr = f->layout.scale_rows, sc = f->layout.scale_cols;
    int ok = s->dtype == VG_ST_F32 && (s->rank == want_rank || (s->rank == 2 && f->groups == 1));
    if (ok) {
        int64_t gs = s->rank == 3 ? s->shape[0] : 1;
        ok = gs == f->groups && s->shape[s->rank - 2] == sr && s->shape[s->rank - 1] == sc;
    }
    if (!ok)
        return vg_fail(VG_ERR_FORMAT, "%s: scale '%s' must be F32 [%s%lld][%lld] "
                       "(ceil(N/128) x ceil(K/128)); found %s of rank %d",
                       a->safetensors, scale_name, f->groups > 1 ? "G][" : "", (long long)sr,
                       (long long)sc, vg_st_dtype_name(s->dtype), s->rank);
    size_t G = (size_t)f->groups;
    f->w_q = malloc(G * f->layout.q_bytes);
    f->w_scale = malloc(G * f->layout.scale_bytes);
    if (!f->w_q || !f->w_scale)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    if ((r = vg_st_read(st, wt, f->w_q, G * f->layout.q_bytes)) != VG_OK ||
        (r = vg_st_read(st, s, f->w_scale, G * f->layout.scale_bytes)) != VG_OK)
        return r;
    const float *sv = f->w_scale;
    for (size_t i = 0; i < G * f->layout.scale_bytes / sizeof(float); i++)
        if (!isfinite(sv[i]))
            return vg_fail(VG_ERR_FORMAT, "%s: scale '%s' element %zu is not finite",
                           a->safetensors, scale_name, i);
    const uint8_t *qv = f->w_q;
    for (size_t i = 0; i < G * f->layout.q_bytes; i++)
        if ((qv[i] & 0x7F) == 0x7F)
            return vg_fail(VG_ERR_FORMAT, "%s: weight '%s' element %zu is an E4M3 NaN",
                           a->safetensors, a->weight, i);
    f->w_tensor_scale = 1.0f;
    return VG_OK;
}

static vg_status import_float(const vg_golden_import_args *a, const vg_safetensors *st,
                              const vg_st_tensor *wt, vg_golden_file *f)
{
    size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
    size_t es = vg_st_dtype_size(wt->dtype);
    void *raw = malloc(elems * es);
    float *w = malloc(elems * sizeof(float));
    if (!raw || !w) {
        free(raw);
        free(w);
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    }
    vg_status r = vg_st_read(st, wt, raw, elems * es);
    for (size_t i = 0; r == VG_OK && i < elems; i++) {
        if (wt->dtype == VG_ST_F32) {
            uint32_t u;
            memcpy(&u, (uint8_t *)raw + 4 * i, 4);
            w[i] = vg_bits_f32(u);
        } else {
            uint16_t h;
            memcpy(&h, (uint8_t *)raw + 2 * i, 2);
            w[i] = wt->dtype == VG_ST_F16 ? vg_fp16_to_f32(h) : vg_bf16_to_f32(h);
        }
        if (!isfinite(w[i]))
            r = vg_fail(VG_ERR_FORMAT, "%s: weight '%s' element %zu is not finite",
                        a->safetensors, a->weight, i);
    }
    free(raw);
    vg_qweight q;
    memset(&q, 0, sizeof q);
    if (r == VG_OK)
        r = vg_quantize(f->family, w, f->groups, f->n, f->k, &q);
    free(w);
    if (r != VG_OK)
        return r;
    f->w_q = q.q;
    f->w_scale = q.scale;
    f->w_zero = q.zero;
    f->w_tensor_scale = f->family == VG_FAMILY_NVFP4 ? q.w.tensor_scale : 1.0f;
    return VG_OK;
}

vg_status vg_golden_import(const vg_golden_import_args *a, vg_golden_file *out)
{
    if (!a || !out || !a->safetensors || !a->weight)
        return vg_fail(VG_ERR_INVALID_ARG, "import: --safetensors and --weight are required");
    memset(out, 0, sizeof *out);
    if (!vg_path_name(a->path) || a->tokens < 1 || a->tokens > VG_GOLDEN_MAX_DIM)
        return vg_fail(VG_ERR_INVALID_ARG, "import: bad path or token count");
    vg_safetensors *st = NULL;
    vg_status r = vg_st_open(a->safetensors, &st);
    if (r != VG_OK)
        return r;
    const vg_st_tensor *wt;
    vg_golden_file *f = out;
    if ((r = vg_st_find(st, a->weight, &wt)) != VG_OK)
        goto fail;
    if ((r = weight_shape(a->safetensors, wt, &f->groups, &f->n, &f->k)) != VG_OK)
        goto fail;
    if (wt->dtype == VG_ST_F8_E4M3) {
        if (a->have_family && a->family != VG_FAMILY_FP8) {
            r = vg_fail(VG_ERR_UNSUPPORTED, "%s: weight '%s' is F8_E4M3: it imports as fp8 "
                        "only, not %s", a->safetensors, a->weight, vg_family_name(a->family));
            goto fail;
        }
        f->family = VG_FAMILY_FP8;
    } else if (wt->dtype == VG_ST_F32 || wt->dtype == VG_ST_F16 || wt->dtype == VG_ST_BF16) {
        if (!a->have_family) {
            r = vg_fail(VG_ERR_INVALID_ARG, "%s: weight '%s' is %s: give --family to quantize it",
                        a->safetensors, a->weight, vg_st_dtype_name(wt->dtype));
            goto fail;
        }
        f->family = a->family;
    } else {
        r = vg_fail(VG_ERR_UNSUPPORTED, "%s: weight '%s' has dtype %s (F8_E4M3, BF16, F16 or "
                    "F32 expected)", a->safetensors, a->weight, vg_st_dtype_name(wt->dtype));
        goto fail;
    }
    f->path = a->path;
    if (f->path == VG_PATH_DENSE && f->groups != 1) {
        r = vg_fail(VG_ERR_INVALID_ARG, "%s: weight '%s' has %d groups: use --path grouped, "
                    "loop or moe", a->safetensors, a->weight, (int)f->groups);
        goto fail;
    }
    if ((r = vg_weight_layout_of(f->family, f->n, f->k, &f->layout)) != VG_OK)
        goto fail;
    if ((r = vg_golden_check_bounds(a->safetensors, f)) != VG_OK)
        goto fail;
    f->seed = a->seed;
    f->weights_stored = 1;
    snprintf(f->generator, sizeof f->generator, "%s", VG_GOLDEN_GENERATOR);
    snprintf(f->source, sizeof f->source, "safetensors:%s:%s", base_name(a->safetensors),
             a->weight);
    r = wt->dtype == VG_ST_F8_E4M3 ? import_fp8(a, st, wt, f) : import_float(a, st, wt, f);
    if (r != VG_OK)
        goto fail;
    size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
    f->w_dequant = malloc(elems * sizeof(float));
    if (!f->w_dequant) {
        r = vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        goto fail;
    }
    vg_weight w = vg_golden_weight(f);
    if ((r = vg_dequantize(&w, f->w_dequant)) != VG_OK)
        goto fail;

    /* one case: tokens per group (dense: M) of synthetic activations */
    f->cases = calloc(1, sizeof *f->cases);
    if (!f->cases) {
        r = vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        goto fail;
    }
    f->ncases = 1;
    vg_golden_case *c = &f->cases[0];
    snprintf(c->name, sizeof c->name, f->path == VG_PATH_DENSE ? "m%03d" : "t%02d",
             (int)a->tokens);
    c->y_dtype = VG_DTYPE_F32;
    c->m = a->tokens * f->groups;
    c->x_seed = a->seed;
    c->tokens = malloc((size_t)f->groups * sizeof(int32_t));
    c->x = malloc((size_t)c->m * (size_t)f->k * sizeof(uint16_t));
    if (f->path != VG_PATH_DENSE)
        c->offsets = malloc(((size_t)f->groups + 1) * sizeof(int32_t));
    if (!c->tokens || !c->x || (f->path != VG_PATH_DENSE && !c->offsets)) {
        r = vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        goto fail;
    }
    for (int32_t g = 0; g < f->groups; g++)
        c->tokens[g] = a->tokens;
    if (c->offsets)
        for (int32_t g = 0; g <= f->groups; g++)
            c->offsets[g] = g * a->tokens;
    if ((r = vg_golden_synth_x(a->seed, c->name, c->m, f->k, c->x)) != VG_OK)
        goto fail;
    if ((r = vg_golden_check_bounds(a->safetensors, f)) != VG_OK)
        goto fail;
    if ((r = vg_golden_compute_reference(f, c)) != VG_OK) {
        char why[600];
        snprintf(why, sizeof why, "%s", vg_last_error());
        r = vg_fail(r, "%s: weight '%s': %s", a->safetensors, a->weight, why);
        goto fail;
    }
    vg_st_close(st);
    return VG_OK;
fail:
    vg_st_close(st);
    vg_golden_free(out);
    return r;
}
