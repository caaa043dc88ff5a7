/*
 * The decode kernel's configuration (DecodeCfg: its tile, steps in flight,
 * shared memory and register budget, all from the plan's template
 * parameters) and its two loads: W words straight from global memory
 * (ldg_words) and X fragments from the ring in the Deq's pair order
 * (x_in_pairs).  The kernel itself and its design: decode_kernel.cuh.
 */
#ifndef VG_CUDA_DECODE_CFG_CUH
#define VG_CUDA_DECODE_CFG_CUH

#include "kernel_common.cuh"

template <class Deq, int NI, int WK, int MT, int UU, int WN = 1>
struct DecodeCfg {
    static_assert(WN == 1 || WK <= 15, "one named barrier per K group: ids 1..WK of 16");
    static_assert(WK * WN <= 32, "at most 1024 threads per block");
    static constexpr int kThreads = WK * WN * 32;
    static constexpr int kWarpN = 16 * NI; /* weight rows per warp */
    static constexpr int BN = kWarpN * WN; /* weight rows per block */
    static constexpr int BM = 8 * MT;  /* tokens per block */
    static constexpr int kStepK = 128;
    static constexpr int kWords = 16 * Deq::kBits / 32; /* one row's 16 elements */
    /* Steps in flight per warp; fp16's steps are twice fp8's bytes (and
     * registers), so it keeps half as many. */
    static constexpr int U = Deq::kBits == 16 ? (UU / 2 > 1 ? UU / 2 : 1) : UU;
    /* Steps of W in flight per warp (registers; X keeps U slots in shared
     * memory): a 4-bit family's step is half fp8's bytes, so it runs twice
     * as many ahead for the same bytes in flight and the same registers --
     * up to 4: 8 steps with their scales spill under the register cap
     * below (and measured 22 us against 12.6 at wo_a before the cap). */
    static constexpr int UW = Deq::kBits == 4 && U <= 2 ? 2 * U : U;
    /* K steps a warp takes in a row before the next warp's: a 4-bit step
     * is 64 bytes of a weight row, and two in a row make the warp's loads
     * of a row one 128-byte run (nvfp4 wo_a 12.63 -> 11.86 us, d4096
     * 10.01 -> 9.63; fp8, whose step is already 128 bytes, 10.55 -> 10.77:
     * kernels/cuda/KERNELS.md D7). */
    static constexpr int PR = Deq::kBits == 4 ? 2 : 1;
    static constexpr int kXStride = kStepK + 8; /* halves; 272 bytes: a fragment read hits 8 distinct banks */
    static constexpr int kXSlot = BM * kXStride; /* one step's X, halves */
    static constexpr int kXSmem = WK * U * kXSlot * 2;
    static constexpr int kRedSmem = (WK - 1) * BM * BN * 4;
    static constexpr int kSmem = kXSmem + kRedSmem;
    /* Blocks per SM the register budget must allow (__launch_bounds__):
     * for 16-row plans, 16 warps' worth, i.e. at most 128 registers per
     * thread.  Left to itself nvcc gives some of them 80 registers (W
     * loads issued late: fp8 wo_a 11.6 us against 11.0 at 128) and others
     * 150-190 (3 blocks per SM: fp8 4096x14336 with 8 warps, U=4: 23.1 us
     * against 17.2).  32-row plans keep nvcc's choice: the cap made the
     * 4-warp one slower (fp8 wo_a 12.2 us against 11.2 at its own 184) and
     * others spill.  H200, kernels/cuda/KERNELS.md D3.  Mid decode plans
     * (MT > 2) keep nvcc's choice too (D36); the 16-warp budget counts
     * all WK x WN warps of a block. */
#if VG_QUADPAIR
    /* SM70 holds twice the sums per thread (kAccE) and, for a per-row
     * post-scale, two more scales per step: a plan whose W
     * registers, sums, scales and ~56 others come near the 128-register
     * cap (fp8 with 16 tokens or 4 steps in flight, awq, mxfp4) keeps 12
     * warps per SM instead of 16, or 8 past 160, rather than spill (in
     * whole blocks: an 8-warp plan keeps one block, 8 warps, once past
     * 120).  8 warps still hold 32 KB or more of W per SM, against the
     * ~7 KB a V100 needs in flight. */
    static constexpr int kRegEstimate = UW * NI * 4 * kWords + NI * MT * 8 * (Deq::kPostScale ? 2 : 1) +
                                        (Deq::kPostScale && !Deq::kPostPerBlock ? UW * NI * 2 : 0) + 56;
    static constexpr int kMinBlocks =
        NI == 1 && WK * WN < 16 && MT <= 2 ? (kRegEstimate > 160 ? 8 : kRegEstimate > 120 ? 12 : 16) / (WK * WN)
                                           : 1;
#else
    static constexpr int kMinBlocks = NI == 1 && WK * WN < 16 && MT <= 2 ? 16 / (WK * WN) : 1;
#endif
    /* X copies a thread keeps in flight together below SM80 (no cp.async:
     * each copy is a load and a store, decode_kernel.cuh's load_x): two
     * where a warp's W in flight takes 32 registers or fewer (but not in
     * the 8-row plans of a family with per-row scales), one elsewhere.  Two
     * cost 8 registers; with them the sm_70 build spilled in the plans with
     * 64 W registers (fp8 with 4 steps, the 32-row 4-bit ones) and in
     * mxfp4's 8-row plans with 4 steps (held to 128), and with four in most
     * 16-row plans. */
    static constexpr int kXBatch =
        UW * NI * 4 * kWords <= 32 && (MT > 1 || !(Deq::kPostScale && !Deq::kPostPerBlock)) ? 2 : 1;
};

/* W words from global memory at p through the read-only path (16-byte
 * aligned for 4 and 8 words, 8-byte for 2).  On SM80+ the load skips L1
 * (W is read once; L1 keeps X, which every block of a group reads) and asks
 * L2 for the whole 256-byte segment, the rest of which the block's next
 * warps read (they take the next steps of the same rows): 1-4 % faster
 * than plain __ldg on the H200 for fp8, awq, mxfp4 and nvfp4
 * (kernels/cuda/KERNELS.md D4). */
template <int W>
static __device__ __forceinline__ void ldg_words(const uint8_t *p, uint32_t out[W])
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    if constexpr (W == 2) {
        asm("ld.global.nc.L1::no_allocate.L2::256B.v2.u32 {%0,%1}, [%2];\n"
            : "=r"(out[0]), "=r"(out[1])
            : "l"(p));
    } else {
#pragma unroll
        for (int i = 0; i < W / 4; i++)
            asm("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n"
                : "=r"(out[4 * i]), "=r"(out[4 * i + 1]), "=r"(out[4 * i + 2]), "=r"(out[4 * i + 3])
                : "l"(p + 16 * i));
    }
#else
    if constexpr (W == 2) {
        const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
        out[0] = v.x;
        out[1] = v.y;
    } else {
#pragma unroll
        for (int i = 0; i < W / 4; i++) {
            const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p) + i);
            out[4 * i] = v.x;
            out[4 * i + 1] = v.y;
            out[4 * i + 2] = v.z;
            out[4 * i + 3] = v.w;
        }
    }
#endif
}

/* 16 FP16 of X at p (16-byte aligned, shared memory) as eight pairs in the
 * order Deq::decode_words puts the weight's (dequant.cuh, VgPairs), so
 * that pair register s of X meets pair register s of W in an MMA. */
template <int kPairs>
static __device__ __forceinline__ void x_in_pairs(const uint16_t *p, uint32_t out[8])
{
    const uint4 *xp = reinterpret_cast<const uint4 *>(p);
#pragma unroll
    for (int t = 0; t < 2; t++) {
        const uint4 v = xp[t];
        if constexpr (kPairs == VG_PAIRS_NIBBLE) {
            out[4 * t] = __byte_perm(v.x, v.z, 0x5410u);
            out[4 * t + 1] = __byte_perm(v.x, v.z, 0x7632u);
            out[4 * t + 2] = __byte_perm(v.y, v.w, 0x5410u);
            out[4 * t + 3] = __byte_perm(v.y, v.w, 0x7632u);
        } else if constexpr (kPairs == VG_PAIRS_STRIDE2) {
            out[4 * t] = __byte_perm(v.x, v.y, 0x5410u);
            out[4 * t + 1] = __byte_perm(v.x, v.y, 0x7632u);
            out[4 * t + 2] = __byte_perm(v.z, v.w, 0x5410u);
            out[4 * t + 3] = __byte_perm(v.z, v.w, 0x7632u);
        } else {
            out[4 * t] = v.x, out[4 * t + 1] = v.y, out[4 * t + 2] = v.z, out[4 * t + 3] = v.w;
        }
    }
}

#endif
