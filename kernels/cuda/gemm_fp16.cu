/*
 * Every plan's kernel for the fp16 family (DeqFP16), in plan-list order
 * (plan_list.h, plan_kernels.cuh); gemm.cu's table launches them.
 * Byte-wise scales only.
 */
#include "plan_kernels.cuh"

VG_FAMILY_KERNELS(fp16, DeqFP16, void)
