/*
 * Every plan's kernel for the awq family (DeqAWQ), in plan-list order
 * (plan_list.h, plan_kernels.cuh); gemm.cu's table launches them.
 * Byte-wise scales only.
 */
#include "plan_kernels.cuh"

VG_FAMILY_KERNELS(awq, DeqAWQ, void)
