/*
 * What every CUDA GEMM kernel shares: the launch parameters (KParams), the
 * SM80+ asynchronous copies and SM90 grid dependency control (plain loads
 * and no-ops where the arch has none), and the tensor-core MMAs with their
 * per-arch forms (VG_QUADPAIR: SM70's m8n8k4 layout).  The tiled mainloop
 * (gemm_kernel.cuh) and the decode kernel (decode_kernel.cuh) include it.
 */
#ifndef VG_CUDA_KERNEL_COMMON_CUH
#define VG_CUDA_KERNEL_COMMON_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "dequant.cuh"
/* Everything one launch needs; passed by value. */
struct KParams {
    const uint16_t *x;        /* [m][k] FP16 */
    void *y;                  /* [m][n] */
    int y_f16;
    float *ws;                /* split-K partials [split][m][n] */
    KWeight w;
    int32_t m;
    const int32_t *offsets;   /* device copy; NULL for dense */
    int32_t mtiles;           /* M tiles per group (grouped) */
    int32_t k_per_split;      /* multiple of BK */
    int x_vec_ok;             /* X rows may be read 16 bytes at a time */
    int w_vec_ok;             /* W rows likewise */
    /* The host's routing leaves some of a group's M tiles empty (decode
     * kernel).  Last, so that adding it moved no other field: the tiled
     * kernels, which do not read it, compile as before (one of SM70's
     * spilled when the fields after mtiles moved). */
    int32_t empty_tiles;
};

/* ---- small device helpers ---------------------------------------------------- */

static __device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

static __device__ __forceinline__ void cp_async16(void *dst, const void *src)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
#else
    *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
#endif
}

/* Programmatic dependent launch (SM90+).  A kernel launched with the
 * programmatic-serialization attribute may start while the kernel before it
 * in the stream still runs; grid_dep_wait() blocks until that kernel has
 * finished and its writes are visible, so everything read before it must
 * not come from an earlier kernel (the weights and their scales, never X,
 * offsets or the output).  grid_dep_launch() lets the next such kernel
 * start once every block of this one has called it.  Both are no-ops on
 * older archs and when the kernel was launched without the attribute. */
static __device__ __forceinline__ void grid_dep_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

static __device__ __forceinline__ void grid_dep_launch()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* The same through L1 (.ca): data several blocks of one SM read again. */
static __device__ __forceinline__ void cp_async16_l1(void *dst, const void *src)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.ca.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(dst)), "l"(src));
#else
    *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
#endif
}

static __device__ __forceinline__ void cp_async_commit()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::);
#endif
}

template <int N>
static __device__ __forceinline__ void cp_async_wait()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
#endif
}

/* Below SM80 there is no cp.async: each copy above is a load into
 * registers and a store, and the store waits for its load, so a thread
 * that copies T pieces in a row waits for memory T times.  A kernel that
 * copies several pieces per thread there issues all their loads first
 * (ld_global16_nc: through L1 and read-only, for data no thread of the
 * kernel writes) and then the stores (st_shared16): one wait per batch.
 * Both are volatile, which keeps nvcc's order; ptxas schedules on its own
 * (in the sm_70 decode loops the pairs stay load, load, store, store; a
 * prologue copy had a store move ahead of a later load). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
#define VG_CP_ASYNC 1
#else
#define VG_CP_ASYNC 0
#endif

static __device__ __forceinline__ uint4 ld_global16_nc(const void *src)
{
    uint4 v;
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(src));
    return v;
}

static __device__ __forceinline__ void st_shared16(uint32_t dst, uint4 v)
{
    asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(dst), "r"(v.x), "r"(v.y), "r"(v.z),
                 "r"(v.w)
                 : "memory");
}

/* SM70 (Volta) runs both mainloops in mma884's own layout (VG_QUADPAIR:
 * the decode kernel's and vg_gemm_kernel's comments say how); later archs
 * use m16n8k16. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700 && __CUDA_ARCH__ < 750
#define VG_QUADPAIR 1
#else
#define VG_QUADPAIR 0
#endif

/* Volta's own MMA: each quadpair p (lanes 4p..4p+3 and 4p+16..4p+19)
 * multiplies its 8x4 A by its 4x8 B into its 8x8 D.  Thread i of the
 * quadpair (i = lane%4, +4 for lanes 16..31) holds row i of A and column i
 * of B, four consecutive K each (a0/b0: K 0,1; a1/b1: K 2,3), and D's
 * elements j = 0..7 at row (lane&1) + (j&2) + 4*(lane>=16), column
 * (j&4) + (lane&2) + (j&1).  The four quadpairs are independent products.
 * Only SM70 runs it at speed (later archs emulate it).  D elements 0-3 are
 * d0[], 4-7 d1[]: the tiled kernel keeps them in two 4-float fragments. */
static __device__ __forceinline__ void mma884(float d0[4], float d1[4], uint32_t a0, uint32_t a1,
                                              uint32_t b0, uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700
    asm volatile(
        "mma.sync.aligned.m8n8k4.row.col.f32.f16.f16.f32 {%0,%1,%2,%3,%4,%5,%6,%7}, "
        "{%8,%9}, {%10,%11}, {%0,%1,%2,%3,%4,%5,%6,%7};\n"
        : "+f"(d0[0]), "+f"(d0[1]), "+f"(d0[2]), "+f"(d0[3]), "+f"(d1[0]), "+f"(d1[1]), "+f"(d1[2]),
          "+f"(d1[3])
        : "r"(a0), "r"(a1), "r"(b0), "r"(b1));
#endif
}

/* c += A(16x16) * B(16x8), fragments in the m16n8k16 layout:
 * a0 (row r, k 2q..2q+1), a1 (row r+8, same k), a2 (row r, k 2q+8..),
 * a3 (row r+8, k 2q+8..); b0 (k 2q.., col r), b1 (k 2q+8.., col r);
 * c0,c1 (row r, cols 2q, 2q+1), c2,c3 (row r+8, same cols); r = lane/4. */
static __device__ __forceinline__ void mma16816(float c[4], const uint32_t a[4], uint32_t b0,
                                                uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#elif defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(b0));
    asm volatile(
        "mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[2]), "r"(a[3]), "r"(b1));
#else
    /* Any other arch, SM70 included (its mainloops use mma884 in their own
     * layout instead, VG_QUADPAIR): FP32 FMA through shuffles, same
     * fragment layout. */
    const int lane = threadIdx.x & 31;
    const int q = lane & 3;
#pragma unroll
    for (int qs = 0; qs < 4; qs++) {
        const int srca = (lane & ~3) | qs;
        uint32_t av[4];
#pragma unroll
        for (int j = 0; j < 4; j++)
            av[j] = __shfl_sync(0xFFFFFFFFu, a[j], srca);
#pragma unroll
        for (int jc = 0; jc < 2; jc++) {
            const int srcb = (2 * q + jc) * 4 + qs;
            const uint32_t bv0 = __shfl_sync(0xFFFFFFFFu, b0, srcb);
            const uint32_t bv1 = __shfl_sync(0xFFFFFFFFu, b1, srcb);
            const float2 x0 = __half22float2(*reinterpret_cast<const __half2 *>(&av[0]));
            const float2 x1 = __half22float2(*reinterpret_cast<const __half2 *>(&av[1]));
            const float2 x2 = __half22float2(*reinterpret_cast<const __half2 *>(&av[2]));
            const float2 x3 = __half22float2(*reinterpret_cast<const __half2 *>(&av[3]));
            const float2 y0 = __half22float2(*reinterpret_cast<const __half2 *>(&bv0));
            const float2 y1 = __half22float2(*reinterpret_cast<const __half2 *>(&bv1));
            c[jc] += x0.x * y0.x + x0.y * y0.y + x2.x * y1.x + x2.y * y1.y;
            c[2 + jc] += x1.x * y0.x + x1.y * y0.y + x3.x * y1.x + x3.y * y1.y;
        }
    }
#endif
}

#endif
