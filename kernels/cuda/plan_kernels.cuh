/*
 * The plan list's kernels for one family: each gemm_<family>.cu is one line,
 * VG_FAMILY_KERNELS(name, Deq, DeqWords), which instantiates every plan's
 * kernel for that family (plan_list.h) and exports, in list order,
 *
 *   vg_gemm_launch_<name>[]  the launch function (NULL for a plan without a
 *                            kernel of its own: dequantize + cuBLAS)
 *   vg_gemm_smem_<name>[]    its dynamic shared memory per block (0 there)
 *
 * which gemm.cu's table reads by plan index (vg_family order).  One
 * translation unit per family, so a build compiles them in parallel
 * (KERNELS.md D35).
 */
#ifndef VG_CUDA_PLAN_KERNELS_CUH
#define VG_CUDA_PLAN_KERNELS_CUH

#include <cuda_runtime.h>

#include <atomic>
#include <type_traits>

#include "decode_kernel.cuh"
#include "device_cache.h"
#include "gemm_kernel.cuh"
#include "plan_list.h"

typedef cudaError_t (*vg_launch_fn)(const KParams &p, dim3 grid, cudaStream_t s);

/* Programmatic dependent launch for the decode kernels (gemm.cu). */
bool vg_cuda_pdl_enabled();

#define VG_FAMILY_KERNEL_DECLS(name)                                                    \
    extern const vg_launch_fn vg_gemm_launch_##name[];                                  \
    extern const int vg_gemm_smem_##name[];
VG_FAMILY_KERNEL_DECLS(fp16)
VG_FAMILY_KERNEL_DECLS(awq)
VG_FAMILY_KERNEL_DECLS(fp8)
VG_FAMILY_KERNEL_DECLS(mxfp4)
VG_FAMILY_KERNEL_DECLS(nvfp4)

namespace {

/* Whether the kernel that runs for func on the current device was compiled
 * from PTX for compute_70 to 7.4 (below 7.5): the Volta code path
 * (VG_QUADPAIR), on a V100 (its sm_70 SASS) or wherever only that PTX was
 * built (ci/sm70 hopper's objects on a later GPU).  known: that function's
 * PTX version by device; a failed query says no (the full reservation,
 * always safe). */
template <class F>
bool runs_volta_code(F func, std::atomic<int> (&known)[kVgCachedDevices])
{
    const int ptx = vg_cuda_per_device(
        known,
        [func](int) {
            cudaFuncAttributes attr;
            return cudaFuncGetAttributes(&attr, func) == cudaSuccess ? attr.ptxVersion : 0;
        },
        0);
    return ptx >= 70 && ptx < 75;
}

/* One instantiation: sets its shared-memory limit when it needs more than
 * the default 48 KiB (not a stream operation, so capture-safe) and
 * launches.  The Volta code path gets two stage buffers' worth
 * (GemmCfg::kSmemTwoBuffers), the shared memory it touches. */
template <class Deq, int BM, int BN, int BK, int WM, int WN, int WK, int ST>
cudaError_t launch_one(const KParams &p, dim3 grid, cudaStream_t s)
{
    using C = GemmCfg<Deq, BM, BN, BK, WM, WN, WK, ST>;
    auto kern = vg_gemm_kernel<Deq, BM, BN, BK, WM, WN, WK, ST>;
    static std::atomic<int> ptx_version[kVgCachedDevices];
    const int smem = runs_volta_code(kern, ptx_version) ? C::kSmemTwoBuffers : C::kSmem;
    if (smem > 48 * 1024) {
        cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess)
            return e;
    }
    kern<<<grid, C::kThreads, smem, s>>>(p);
    return cudaGetLastError();
}

/* A launch with programmatic dependent launch where vg_cuda_pdl_enabled()
 * says so (KERNELS.md D2, D40); attr is the configuration's one attribute
 * and must outlive the launch. */
static inline cudaLaunchConfig_t pdl_launch_config(dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                                                   cudaLaunchAttribute *attr)
{
    attr->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr->val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = vg_cuda_pdl_enabled() ? 1 : 0;
    return cfg;
}

/* The register-streaming decode kernel (decode_kernel.cuh), with PDL. */
template <class Deq, int NI, int WK, int MT, int U, int WN>
cudaError_t launch_decode(const KParams &p, dim3 grid, cudaStream_t s)
{
    using C = DecodeCfg<Deq, NI, WK, MT, U, WN>;
    auto kern = vg_decode_kernel<Deq, NI, WK, MT, U, WN>;
    if (C::kSmem > 48 * 1024) {
        cudaError_t e =
            cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, C::kSmem);
        if (e != cudaSuccess)
            return e;
    }
    cudaLaunchAttribute attr;
    const cudaLaunchConfig_t cfg = pdl_launch_config(grid, dim3(C::kThreads), C::kSmem, s, &attr);
    return cudaLaunchKernelEx(&cfg, kern, p);
}

/* mxfp4 and nvfp4 read a step's scales of a row in one load when the
 * scale rows allow it (DeqWords: DeqMXFP4Words, DeqNVFP4Words), byte by
 * byte otherwise (Deq). */
template <class Deq, class DeqWords, int NI, int WK, int MT, int U, int WN>
cudaError_t launch_decode_scale_words(const KParams &p, dim3 grid, cudaStream_t s)
{
    return p.w.scale_vec_ok ? launch_decode<DeqWords, NI, WK, MT, U, WN>(p, grid, s)
                            : launch_decode<Deq, NI, WK, MT, U, WN>(p, grid, s);
}

/* A family's decode launcher: launch_decode, or launch_decode_scale_words
 * where the family has a word-scale variant (DeqWords not void). */
template <class Deq, class DeqWords, int NI, int WK, int MT, int U, int WN = 1>
cudaError_t launch_decode_family(const KParams &p, dim3 grid, cudaStream_t s)
{
    if constexpr (std::is_void<DeqWords>::value)
        return launch_decode<Deq, NI, WK, MT, U, WN>(p, grid, s);
    else
        return launch_decode_scale_words<Deq, DeqWords, NI, WK, MT, U, WN>(p, grid, s);
}

} /* namespace */

/* The list's entries as this family's launch functions and shared-memory
 * sizes (the byte-scale variant's size for decode, as the table always
 * had: DecodeCfg's shared memory does not depend on the scale loads). */
#define VG_FK_LAUNCH_DECODE_(path, tile_m, tile_n, WK, U, split, max_rows)              \
    launch_decode_family<VgFamDeq, VgFamDeqWords, tile_n / 16, WK, tile_m / 8, U>,
#define VG_FK_LAUNCH_DECODE_WN_(path, tile_m, tile_n, WN, WK, U, split, max_rows)      \
    launch_decode_family<VgFamDeq, VgFamDeqWords, tile_n / (16 * WN), WK, tile_m / 8, U, WN>,
#define VG_FK_LAUNCH_TILED_(path, name, BM, BN, BK, ST, split, max_rows, WM, WN, WK)    \
    launch_one<VgFamDeq, BM, BN, BK, WM, WN, WK, ST>,
#define VG_FK_LAUNCH_DQBLAS_(path, groups) nullptr,
#define VG_FK_SMEM_DECODE_(path, tile_m, tile_n, WK, U, split, max_rows)                \
    DecodeCfg<VgFamDeq, tile_n / 16, WK, tile_m / 8, U>::kSmem,
#define VG_FK_SMEM_DECODE_WN_(path, tile_m, tile_n, WN, WK, U, split, max_rows)        \
    DecodeCfg<VgFamDeq, tile_n / (16 * WN), WK, tile_m / 8, U, WN>::kSmem,
#define VG_FK_SMEM_TILED_(path, name, BM, BN, BK, ST, split, max_rows, WM, WN, WK)      \
    GemmCfg<VgFamDeq, BM, BN, BK, WM, WN, WK, ST>::kSmem,
#define VG_FK_SMEM_DQBLAS_(path, groups) 0,

#define VG_FAMILY_KERNELS(name, Deq, DeqWords)                                          \
    namespace {                                                                         \
    using VgFamDeq = Deq;                                                               \
    using VgFamDeqWords = DeqWords;                                                     \
    }                                                                                   \
    const vg_launch_fn vg_gemm_launch_##name[] = {VG_CUDA_PLAN_LIST(                    \
        VG_FK_LAUNCH_DECODE_, VG_FK_LAUNCH_DECODE_WN_, VG_FK_LAUNCH_TILED_,             \
        VG_FK_LAUNCH_DQBLAS_)};                                                         \
    const int vg_gemm_smem_##name[] = {                                                 \
        VG_CUDA_PLAN_LIST(VG_FK_SMEM_DECODE_, VG_FK_SMEM_DECODE_WN_, VG_FK_SMEM_TILED_, \
                          VG_FK_SMEM_DQBLAS_)};                                         \
    static_assert(sizeof vg_gemm_launch_##name / sizeof vg_gemm_launch_##name[0] ==     \
                      VG_CUDA_PLAN_COUNT,                                               \
                  #name ": one launch function per plan of the list");                  \
    static_assert(sizeof vg_gemm_smem_##name / sizeof vg_gemm_smem_##name[0] ==         \
                      VG_CUDA_PLAN_COUNT,                                               \
                  #name ": one shared-memory size per plan of the list");

#endif
