/*
 * The dequantize-once + cuBLAS plan kind (VG_KIND_DEQUANT_BLAS), as gemm.cu's
 * launcher calls it: one bandwidth-bound kernel writes a group's W as FP16
 * [N][K] into the call's workspace, then cublasGemmEx multiplies X by it
 * with FP32 accumulation (kernels/cuda/KERNELS.md, "Dequantize + cuBLAS").
 *
 * The workspace holds, 256-byte aligned: for a plan that batches groups,
 * the pointer table cuBLAS's grouped GEMM reads; the FP16 copies of up to
 * `batch` groups (none for fp16, whose W is already FP16); then cuBLAS's
 * own workspace.  The copies are reused batch after batch on the call's
 * stream, so a call never needs more than `batch` of them, whatever G.
 */
#ifndef VG_CUDA_DEQUANT_BLAS_H
#define VG_CUDA_DEQUANT_BLAS_H

#include <stddef.h>

#include "dequant.cuh"
#include "voltgate/types.h"

/* The current device's compute-capability major, looked up once per device
 * (0: no device); gemm.cu defines it, the dispatch path reads it. */
int vg_cuda_device_major(void);

/* Bytes of workspace a call with weights of this family and per-group
 * shape needs under the kind's plan that takes `batch` groups per cuBLAS
 * call (the plan's stages), for a call of `groups` groups (dense: 1). */
size_t vg_dqblas_workspace_bytes(vg_family f, int32_t n, int32_t k, int batch, int32_t groups);

/* Runs the call (any path: dense one GEMM; loop, grouped and moe the groups
 * with rows, from offsets_host: batch 1, one dequantization and one
 * cublasGemmEx per group; batch B, one dequantization launch per B groups
 * and one cublasGemmGroupedBatchedEx for them).  The arguments are checked
 * by the caller (vg_cuda_gemm), the workspace too. */
vg_status vg_dqblas_gemm(const vg_gemm_args *a, const KWeight &kw, int batch);

/* Whether cuBLAS works on the current device: loads cuBLAS (once per
 * process, kernels.h vg_cuda_blas_load), then creates this device's first
 * handle (so that a later call inside a graph capture, where a handle cannot
 * be created, finds one).  On failure *why says what failed: the library
 * and dlerror() where cuBLAS did not load. */
int vg_dqblas_available(const char **why);

/* Whether the current device offers the kind to the runtime: its
 * vg_cuda_blas_prepare found cuBLAS working and VG_CUDA_DQBLAS not 0. */
int vg_dqblas_offered_here(void);

#endif
