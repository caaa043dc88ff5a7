/* Names, weight layouts and plan applicability: the small facts every layer
 * shares. */
#include "voltgate/types.h"

#include <string.h>

static const char *const family_names[VG_FAMILY_COUNT] = {
    "fp16", "awq", "fp8", "mxfp4", "nvfp4"};
static const char *const path_names[VG_PATH_COUNT] = {
    "dense", "grouped", "loop", "moe"};

const char *vg_family_name(vg_family f)
{
    return (unsigned)f < VG_FAMILY_COUNT ? family_names[f] : NULL;
}

const char *vg_path_name(vg_path p)
{
    return (unsigned)p < VG_PATH_COUNT ? path_names[p] : NULL;
}

vg_status vg_family_parse(const char *name, vg_family *out)
{
    for (int i = 0; name && i < VG_FAMILY_COUNT; i++)
        if (strcmp(name, family_names[i]) == 0) {
            *out = (vg_family)i;
            return VG_OK;
        }
    return vg_fail(VG_ERR_NOT_FOUND,
                   "unknown family '%s' (expected fp16, awq, fp8, mxfp4 or nvfp4)",
                   name ? name : "(null)");
}

vg_status vg_path_parse(const char *name, vg_path *out)
{
    for (int i = 0; name && i < VG_PATH_COUNT; i++)
        if (strcmp(name, path_names[i]) == 0) {
            *out = (vg_path)i;
            return VG_OK;
        }
    return vg_fail(VG_ERR_NOT_FOUND,
                   "unknown path '%s' (expected dense, grouped, loop or moe)",
                   name ? name : "(null)");
}

static int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

vg_status vg_weight_layout_of(vg_family f, int32_t n, int32_t k, vg_weight_layout *out)
{
    if (!out || n <= 0 || k <= 0)
        return vg_fail(VG_ERR_INVALID_ARG, "weight layout: N=%d K=%d must be positive",
                       (int)n, (int)k);
    memset(out, 0, sizeof *out);
    size_t nk = (size_t)n * (size_t)k;
    switch (f) {
    case VG_FAMILY_FP16:
        out->q_bytes = nk * 2;
        return VG_OK;
    case VG_FAMILY_FP8:
        out->q_bytes = nk;
        out->scale_rows = ceil_div(n, VG_FP8_BLOCK);
        out->scale_cols = ceil_div(k, VG_FP8_BLOCK);
        out->scale_bytes = (size_t)out->scale_rows * (size_t)out->scale_cols * sizeof(float);
        return VG_OK;
    case VG_FAMILY_AWQ:
        if (k % 8)
            return vg_fail(VG_ERR_UNSUPPORTED, "awq: K=%d is not a multiple of 8", (int)k);
        out->q_bytes = nk / 2;
        out->scale_rows = n;
        out->scale_cols = ceil_div(k, VG_AWQ_GROUP);
        out->scale_bytes = (size_t)n * (size_t)out->scale_cols * 2;
        out->zero_bytes = out->scale_bytes;
        return VG_OK;
    case VG_FAMILY_MXFP4:
    case VG_FAMILY_NVFP4: {
        if (k % 2)
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: K=%d is not even", vg_family_name(f), (int)k);
        int32_t group = f == VG_FAMILY_MXFP4 ? VG_MXFP4_GROUP : VG_NVFP4_GROUP;
        out->q_bytes = nk / 2;
        out->scale_rows = n;
        out->scale_cols = ceil_div(k, group);
        out->scale_bytes = (size_t)n * (size_t)out->scale_cols;
        return VG_OK;
    }
    case VG_FAMILY_COUNT:
        break;
    }
    return vg_fail(VG_ERR_INVALID_ARG, "weight layout: invalid family %d", (int)f);
}

int32_t vg_gemm_max_group_rows(const vg_gemm_args *a)
{
    if (a->path == VG_PATH_DENSE || !a->offsets_host)
        return a->m;
    int32_t best = 0;
    for (int32_t g = 0; g < a->w.groups; g++) {
        int32_t rows = a->offsets_host[g + 1] - a->offsets_host[g];
        if (rows > best)
            best = rows;
    }
    return best;
}

int vg_plan_applies(const vg_plan *p, vg_family f, vg_path path, int32_t rows)
{
    if (!p || (unsigned)f >= VG_FAMILY_COUNT || !(p->families & VG_FAMILY_BIT(f)))
        return 0;
    vg_path kernel_path = (path == VG_PATH_DENSE || path == VG_PATH_LOOP)
                              ? VG_PATH_DENSE
                              : VG_PATH_GROUPED;
    if (p->path != kernel_path)
        return 0;
    if (path == VG_PATH_GROUPED && rows > GROUPED_DECODE_MAX_TOKENS)
        return 0;
    return p->max_rows == 0 || rows <= p->max_rows;
}

int vg_plan_offered(const vg_plan *p, vg_family f, vg_path path, int32_t rows)
{
    return vg_plan_applies(p, f, path, rows) && (p->min_rows <= 0 || rows >= p->min_rows);
}

const char *vg_plan_kind_name(vg_plan_kind k)
{
    static const char *const names[VG_KIND_COUNT] = {
        [VG_KIND_TILED] = "tiled",
        [VG_KIND_DECODE] = "decode",
        [VG_KIND_DEQUANT_BLAS] = "dequant+cublas",
    };
    return (unsigned)k < VG_KIND_COUNT ? names[k] : "unknown";
}
