/* Internal to the CPU backend (kernels/cpu/). */
#ifndef VOLTGATE_KERNELS_CPU_H
#define VOLTGATE_KERNELS_CPU_H

#include "kernels.h"

/* Largest tiles any CPU plan uses (the kernel's scratch is sized by them). */
#define VG_CPU_MAX_TILE_M 64
#define VG_CPU_MAX_TILE_N 64
#define VG_CPU_MAX_TILE_K 256

#define VG_CPU_MAX_SPLIT_K 16

/* Rows from which the CPU heuristic dequantizes once (plans.c). */
#define VG_CPU_DQ_HEURISTIC_ROWS 256

/* A plan the CPU kernel can run: backend "cpu", path dense or grouped,
 * tile_n 32 or 64, the other tiles within the maxima above.  A copy of a
 * table entry (from a LUT, say) passes as well as the entry itself. */
vg_status vg_cpu_plan_check(const vg_plan *p, const char *what);

#endif
