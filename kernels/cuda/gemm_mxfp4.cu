/*
 * Every plan's kernel for the mxfp4 family (DeqMXFP4), in plan-list order
 * (plan_list.h, plan_kernels.cuh); gemm.cu's table launches them.
 * Decode plans launch DeqMXFP4Words (a step's scales in one load) where the scale rows allow it, DeqMXFP4 otherwise (KERNELS.md D14, D15).
 */
#include "plan_kernels.cuh"

VG_FAMILY_KERNELS(mxfp4, DeqMXFP4, DeqMXFP4Words)
