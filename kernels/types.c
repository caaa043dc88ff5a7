/* Names, weight layouts and plan applicability: the small facts every layer
 * shares. */
#include "voltgate/types.h"

#include <stdio.h>
#include <string.h>

#include "voltgate/family.h"

static const char *const path_names[VG_PATH_COUNT] = {
    "dense", "grouped", "loop", "moe"};

const char *vg_family_name(vg_family f)
{
    const vg_family_desc *d = vg_family_desc_of(f);
    return d ? d->name : NULL;
}

const char *vg_path_name(vg_path p)
{
    return (unsigned)p < VG_PATH_COUNT ? path_names[p] : NULL;
}

vg_status vg_family_parse(const char *name, vg_family *out)
{
    char expected[128] = "";
    size_t used = 0;
    for (int i = 0; i < VG_FAMILY_COUNT; i++) {
        const char *fam = vg_family_desc_of((vg_family)i)->name;
        if (name && strcmp(name, fam) == 0) {
            *out = (vg_family)i;
            return VG_OK;
        }
        if (used < sizeof expected)
            used += (size_t)snprintf(expected + used, sizeof expected - used, "%s%s",
                                     i == 0 ? "" : i + 1 < VG_FAMILY_COUNT ? ", " : " or ", fam);
    }
    return vg_fail(VG_ERR_NOT_FOUND, "unknown family '%s' (expected %s)",
                   name ? name : "(null)", expected);
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

/* The layout follows the family's row (include/voltgate/family.h): w_q holds
 * elems_per_unit elements per unit along K, the scale array follows the
 * scale rule, the zero points share its shape. */
vg_status vg_weight_layout_of(vg_family f, int32_t n, int32_t k, vg_weight_layout *out)
{
    if (!out || n <= 0 || k <= 0)
        return vg_fail(VG_ERR_INVALID_ARG, "weight layout: N=%d K=%d must be positive",
                       (int)n, (int)k);
    const vg_family_desc *d = vg_family_desc_of(f);
    if (!d)
        return vg_fail(VG_ERR_INVALID_ARG, "weight layout: invalid family %d", (int)f);
    memset(out, 0, sizeof *out);
    int32_t per_unit = vg_family_elems_per_unit(d);
    if (k % per_unit)
        return vg_fail(VG_ERR_UNSUPPORTED, "%s: K=%d is not a multiple of %d", d->name, (int)k,
                       (int)per_unit);
    out->q_bytes = (size_t)n * (size_t)(k / per_unit) * d->q.bytes;
    switch (d->scale_rule) {
    case VG_SCALE_NONE:
        return VG_OK;
    case VG_SCALE_ROW_GROUP:
        out->scale_rows = n;
        out->scale_cols = ceil_div(k, d->group);
        break;
    case VG_SCALE_BLOCK:
        out->scale_rows = ceil_div(n, d->group);
        out->scale_cols = ceil_div(k, d->group);
        break;
    }
    size_t scales = (size_t)out->scale_rows * (size_t)out->scale_cols;
    out->scale_bytes = scales * d->scale.bytes;
    out->zero_bytes = scales * d->zero.bytes;
    return VG_OK;
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
