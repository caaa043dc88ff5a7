/* The FP64 reference GEMM (see include/voltgate/reference.h). */
#include "voltgate/reference.h"

#include <stddef.h>

vg_status vg_offsets_check(const int32_t *offsets, int32_t groups, int32_t m, const char *what)
{
    if (!offsets)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: the group offsets row is NULL", what);
    if (offsets[0] != 0)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: offsets[0] is %d, must be 0", what,
                       (int)offsets[0]);
    for (int32_t g = 0; g < groups; g++) {
        if (offsets[g + 1] < offsets[g])
            return vg_fail(VG_ERR_INVALID_ARG,
                           "%s: offsets decrease at group %d (%d then %d)", what, (int)g,
                           (int)offsets[g], (int)offsets[g + 1]);
        if (offsets[g + 1] > m)
            return vg_fail(VG_ERR_INVALID_ARG, "%s: offsets[%d] = %d is beyond M = %d", what,
                           (int)(g + 1), (int)offsets[g + 1], (int)m);
    }
    if (offsets[groups] != m)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: offsets[%d] = %d, must equal M = %d", what,
                       (int)groups, (int)offsets[groups], (int)m);
    return VG_OK;
}

/* y[r][j] for rows r0..r1-1 against one group's weight. */
static void gemm_rows(int32_t r0, int32_t r1, int32_t n, int32_t k, const float *x,
                      const float *wg, double *y)
{
    for (int32_t r = r0; r < r1; r++) {
        const float *xr = x + (size_t)r * (size_t)k;
        for (int32_t j = 0; j < n; j++) {
            const float *wj = wg + (size_t)j * (size_t)k;
            double acc = 0.0;
            for (int32_t kk = 0; kk < k; kk++)
                acc += (double)xr[kk] * (double)wj[kk];
            y[(size_t)r * (size_t)n + (size_t)j] = acc;
        }
    }
}

vg_status vg_reference_gemm(vg_path path, int32_t m, int32_t n, int32_t k, int32_t groups,
                            const int32_t *offsets, const float *x, const float *w, double *y)
{
    if ((unsigned)path >= VG_PATH_COUNT)
        return vg_fail(VG_ERR_INVALID_ARG, "reference gemm: invalid path %d", (int)path);
    if (m < 0 || n <= 0 || k <= 0)
        return vg_fail(VG_ERR_INVALID_ARG,
                       "reference gemm: M=%d must be >= 0, N=%d and K=%d must be positive",
                       (int)m, (int)n, (int)k);
    if (groups < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "reference gemm: groups=%d must be at least 1",
                       (int)groups);
    if (!w || (m > 0 && (!x || !y)))
        return vg_fail(VG_ERR_INVALID_ARG, "reference gemm: %s is NULL",
                       !w ? "W" : !x ? "X" : "Y");
    if (path == VG_PATH_DENSE) {
        gemm_rows(0, m, n, k, x, w, y);
        return VG_OK;
    }
    vg_status st = vg_offsets_check(offsets, groups, m, "reference gemm");
    if (st != VG_OK)
        return st;
    size_t per_group = (size_t)n * (size_t)k;
    for (int32_t g = 0; g < groups; g++)
        gemm_rows(offsets[g], offsets[g + 1], n, k, x, w + (size_t)g * per_group, y);
    return VG_OK;
}
