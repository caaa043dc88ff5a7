/*
 * Every plan's kernel for the nvfp4 family (DeqNVFP4), in plan-list order
 * (plan_list.h, plan_kernels.cuh); gemm.cu's table launches them.
 * Decode plans launch DeqNVFP4Words (a step's scales in one load) where the scale rows allow it, DeqNVFP4 otherwise (KERNELS.md D14, D15).
 */
#include "plan_kernels.cuh"

VG_FAMILY_KERNELS(nvfp4, DeqNVFP4, DeqNVFP4Words)
