/*
 * vg_gemm_check_args(): the one validation every launcher runs before it
 * touches Y.  Each check has its own message naming what is wrong.
 * vg_gemm_row_tiles(): what a backend's rule reads of how a call's rows
 * fall into its groups.  vg_gemm_next_batch(): the groups with rows, a
 * batch at a time (the dequantize + cuBLAS kind).
 */
#include "kernels.h"

#include "voltgate/family.h"

#include <math.h>
#include <stdint.h>


static int misaligned(const void *p, size_t align)
{
    return ((uintptr_t)p % align) != 0;
}

vg_status vg_gemm_check_args(const vg_gemm_args *a)
{
    if (!a)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm: arguments are NULL");
    if ((unsigned)a->path >= VG_PATH_COUNT)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm: invalid path %d", (int)a->path);
    const vg_weight *w = &a->w;
    const vg_family_desc *d = vg_family_desc_of(w->family);
    if (!d)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm: invalid family %d", (int)w->family);
    const char *fam = d->name;
    if (a->m < 0)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: M=%d is negative", fam, (int)a->m);
    if (w->n <= 0 || w->k <= 0)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: N=%d and K=%d must be positive", fam,
                       (int)w->n, (int)w->k);
    if (w->groups < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: groups=%d must be at least 1", fam,
                       (int)w->groups);
    if (a->path == VG_PATH_DENSE && w->groups != 1)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: the dense path takes 1 group, not %d", fam,
                       (int)w->groups);
    vg_weight_layout lay;
    vg_status st = vg_weight_layout_of(w->family, w->n, w->k, &lay);
    if (st != VG_OK)
        return st;
    if (!w->q)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: weight codes (w.q) are NULL", fam);
    if (lay.scale_bytes && !w->scale)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: weight scales (w.scale) are NULL", fam);
    if (lay.zero_bytes && !w->zero)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: weight zero points (w.zero) are NULL", fam);
    /* Unit alignment of each buffer (the CUDA kernels load wider). */
    size_t q_align = d->q.bytes, s_align = d->scale.bytes ? d->scale.bytes : 1,
           z_align = d->zero.bytes ? d->zero.bytes : 1;
    if (misaligned(w->q, q_align))
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: w.q is not %zu-byte aligned", fam, q_align);
    if (w->scale && misaligned(w->scale, s_align))
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: w.scale is not %zu-byte aligned", fam,
                       s_align);
    if (w->zero && misaligned(w->zero, z_align))
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: w.zero is not %zu-byte aligned", fam,
                       z_align);
    if (d->tensor_scale && !(isfinite(w->tensor_scale) && w->tensor_scale > 0.0f))
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: tensor_scale %g must be finite and > 0", fam,
                       (double)w->tensor_scale);
    if (a->y_dtype != VG_DTYPE_F32 && a->y_dtype != VG_DTYPE_F16)
        return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: invalid output dtype %d", fam,
                       (int)a->y_dtype);
    if (a->m > 0) {
        if (!a->x)
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: X is NULL", fam);
        if (!a->y)
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: Y is NULL", fam);
        if (misaligned(a->x, 2))
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: X is not 2-byte aligned", fam);
        if (misaligned(a->y, a->y_dtype == VG_DTYPE_F32 ? 4 : 2))
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s: Y is not aligned to its dtype", fam);
    }
    if (a->path != VG_PATH_DENSE) {
        const char *path = vg_path_name(a->path);
        if (!a->offsets)
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s %s: offsets (backend copy) are NULL",
                           path, fam);
        if (!a->offsets_host)
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s %s: offsets_host are NULL", path, fam);
        const int32_t *o = a->offsets_host;
        if (o[0] != 0)
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s %s: offsets[0] is %d, must be 0", path,
                           fam, (int)o[0]);
        for (int32_t g = 0; g < w->groups; g++) {
            if (o[g + 1] < o[g])
                return vg_fail(VG_ERR_INVALID_ARG,
                               "gemm %s %s: offsets decrease at group %d (%d then %d)", path, fam,
                               (int)g, (int)o[g], (int)o[g + 1]);
            if (o[g + 1] > a->m)
                return vg_fail(VG_ERR_INVALID_ARG,
                               "gemm %s %s: offsets[%d] = %d is beyond M = %d", path, fam,
                               (int)(g + 1), (int)o[g + 1], (int)a->m);
        }
        if (o[w->groups] != a->m)
            return vg_fail(VG_ERR_INVALID_ARG, "gemm %s %s: offsets[%d] = %d, must equal M = %d",
                           path, fam, (int)w->groups, (int)o[w->groups], (int)a->m);
    }
    return VG_OK;
}

int32_t vg_gemm_row_tiles(const vg_gemm_args *a, int32_t tile_m, int32_t *busy)
{
    int32_t tiles = 0, groups = 0;
    if (tile_m > 0) {
        if (a->path == VG_PATH_DENSE || !a->offsets_host) {
            tiles = (a->m + tile_m - 1) / tile_m;
            groups = a->m > 0;
        } else {
            for (int32_t g = 0; g < a->w.groups; g++) {
                const int32_t rows = a->offsets_host[g + 1] - a->offsets_host[g];
                if (rows > 0) {
                    tiles += (rows + tile_m - 1) / tile_m;
                    groups++;
                }
            }
        }
    }
    if (busy)
        *busy = groups;
    return tiles;
}

int vg_gemm_next_batch(const vg_gemm_args *a, int batch, int32_t *next, vg_group_batch *b)
{
    const int dense = a->path == VG_PATH_DENSE || !a->offsets_host;
    const int32_t groups = dense ? 1 : a->w.groups;
    batch = batch < 1 ? 1 : (batch > VG_GEMM_MAX_BATCH ? VG_GEMM_MAX_BATCH : batch);
    b->slots = 0;
    b->runs = 0;
    for (; *next < groups && b->slots < batch; (*next)++) {
        const int32_t g = *next;
        const int32_t r0 = dense ? 0 : a->offsets_host[g];
        const int32_t rows = dense ? a->m : a->offsets_host[g + 1] - r0;
        if (rows <= 0)
            continue;
        const int32_t s = b->slots++;
        b->group[s] = g;
        b->row0[s] = r0;
        b->rows[s] = rows;
        if (s > 0 && b->rows[s - 1] == rows)
            b->run_slots[b->runs - 1]++;
        else
            b->run_slots[b->runs++] = 1;
    }
    return b->slots > 0;
}
