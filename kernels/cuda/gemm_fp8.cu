/*
 * Every plan's kernel for the fp8 family (DeqFP8), in plan-list order
 * (plan_list.h, plan_kernels.cuh); gemm.cu's table launches them.
 * Byte-wise scales only.
 */
#include "plan_kernels.cuh"

VG_FAMILY_KERNELS(fp8, DeqFP8, void)
