/*
 * The CPU reference GEMM: the oracle of the golden generator and the suites.
 *
 * Computes y[m][n] = sum_k x[m][k] * w[g][n][k] in FP64, summing k in
 * increasing order, from FP32 inputs (X as the kernels see it, i.e. already
 * rounded to FP16 and widened, and W already dequantized).
 *
 *   dense             all m rows with group 0 (groups >= 1; offsets unused).
 *   grouped/loop/moe  rows offsets[g] .. offsets[g+1]-1 with group g; the
 *                     offsets row must start at 0, never decrease and end at
 *                     m (groups + 1 entries).  The three paths compute the
 *                     same thing: they differ only in how kernels launch.
 */
#ifndef VOLTGATE_REFERENCE_H
#define VOLTGATE_REFERENCE_H

#include <stdint.h>

#include "voltgate/types.h"

#ifdef __cplusplus
extern "C" {
#endif

vg_status vg_reference_gemm(vg_path path, int32_t m, int32_t n, int32_t k, int32_t groups,
                            const int32_t *offsets, const float *x /* [m][k] */,
                            const float *w /* [groups][n][k], dequantized */,
                            double *y /* [m][n] */);

/* Checks an offsets row: groups + 1 entries, offsets[0] == 0, monotone,
 * offsets[groups] == m.  `what` names the caller in the error. */
vg_status vg_offsets_check(const int32_t *offsets, int32_t groups, int32_t m, const char *what);

#ifdef __cplusplus
}
#endif
#endif
