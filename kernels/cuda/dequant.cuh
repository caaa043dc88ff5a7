/*
 * Dequantizer policies: the one part of the GEMM mainloop that differs per
 * weight family (see gemm_kernel.cuh for the mainloop).
 *
 * The mainloop keeps W tiles in shared memory as the raw bytes of the
 * family's layout (types.h).  For each MMA step a thread needs 16
 * consecutive K elements of one weight row as eight FP16 pairs; a policy
 * turns the raw bytes of those 16 elements into that form:
 *
 *   kBits          bits per element in memory (16, 8 or 4)
 *   decode_words(w, s, out)  the same from the raw bytes held in registers
 *   decode16(p, s, out)
 *                  p: the 16 elements' raw bytes in shared memory (16*kBits/8
 *                  bytes, 8-byte aligned at least); s: the "pre-scale" of
 *                  this row and K range (prescale() below); out[j] = FP16x2
 *                  of elements 2j (low half) and 2j+1 (high half).
 *   kPreScale      prescale(w, g, n, k) is read for each decode16 call (a
 *                  scale that varies along a row faster than kScaleK)
 *   kPostPerBlock  postscale() is the same for all rows of a 128-row block
 *   kPostScale     the MMA output over one kScaleK-long K block is multiplied
 *                  by postscale(w, g, n, kb) before it is added to the FP32
 *                  accumulator: the block scale stays in FP32, exact.
 *   epilogue(w)    one factor applied to the output (nvfp4's tensor scale,
 *                  fp8's VG_F8_POST).
 *   kPairs         which two of a row's elements decode_words puts in one
 *                  FP16x2 (VgPairs below); the decode kernel permutes X to
 *                  match.  decode16 always keeps the natural pairs.
 *
 * The decode kernel (decode_kernel.cuh) reads scales per 128-long K step
 * instead, for the two weight rows a thread holds, in two parts:
 *   load_step(w, g, n0, n1, k0, q, r)
 *                  issues the loads only: r (StepRaw) keeps the scale bits as
 *                  loaded.  n0, n1 are valid rows, k0 < K a multiple of 128.
 *   ready_step(r, q0, q1, s)
 *                  turns them into s.pre[i][h] (the pre-scale of row i's 16
 *                  elements in half h of the step: K k0 + 64h + 16q_i ..)
 *                  and, where kPostScale, s.post[i] (the post-scale of row i
 *                  over the step, which lies in one kScaleK block).
 *                  q0 = q1 = q on SM80+; SM70's loop passes its two chunks.
 *                  The kernel loads a step's scales with its W, steps ahead;
 *                  its mid decode plans ready them only when they compute
 *                  the step (an instruction that reads a loaded value waits
 *                  for the load, and the warp with it), its decode plans
 *                  right after the load (KERNELS.md D39).
 *
 * fp8 (the first family): E4M3 to FP16 by bits alone -- the seven magnitude
 * bits shifted right by one land on FP16's exponent and mantissa and give
 * the value times 2^-8 exactly (subnormals included, the biases differ by 8;
 * the NaN codes 0x7F/0xFF come out as 1.875, the quantizer never makes
 * them).  The 2^8 is the epilogue factor (VG_F8_POST).  On SM89+ the
 * hardware cvt.rn.f16x2.e4m3x2 does the same in one instruction per pair.  The suite checks
 * this decode against vg_e4m3_to_f32 for every code.
 */
#ifndef VG_CUDA_DEQUANT_CUH
#define VG_CUDA_DEQUANT_CUH

#include <stdint.h>

#include "voltgate/formats.h"
#include "voltgate/types.h"

/* The pairs of elements decode_words puts in out[] (Deq::kPairs):
 *   VG_PAIRS_NATURAL  out[j] = elements 2j, 2j + 1
 *   VG_PAIRS_NIBBLE   out[4t + i] = elements 8t + i, 8t + i + 4
 *   VG_PAIRS_STRIDE2  out[4t + i] = elements 8t + c, 8t + c + 2 with
 *                     c = (i & 1) + 4 (i >> 1): 0,2  1,3  4,6  5,7 */
enum VgPairs { VG_PAIRS_NATURAL = 0, VG_PAIRS_NIBBLE = 1, VG_PAIRS_STRIDE2 = 2 };

/* The weight as the kernels see it: one group's buffers are found at
 * g * (per-group bytes) from the base pointers. */
struct KWeight {
    const uint8_t *q;
    const uint8_t *scale;
    const uint8_t *zero;
    float tensor_scale;
    int32_t n, k;
    size_t q_group_bytes, scale_group_bytes, zero_group_bytes;
    int32_t scale_cols;       /* columns of the scale array (per row / per 128 rows) */
    int32_t scale_vec_ok;     /* scale rows hold whole steps, each step's scales aligned to their
                               * size (DeqMXFP4Words: 4 bytes, DeqNVFP4Words: 8) */
    size_t q_row_bytes;       /* bytes of one weight row */
};

/* One 128-long K step's scale bits for a thread's two weight rows as
 * load_step loaded them, per family: fp8 the FP32 block scale in w[0][0];
 * nvfp4 the E4M3 codes of half h in w[i][h] (the aligned layout: the row's
 * eight codes of the step in w[i][0..1]); mxfp4 the four E8M0 exponents in
 * w[i][0]; awq the FP16 zero in w[i][0] and scale in w[i][1].  out is
 * SM70's: the bits of the rows whose sums it holds (post_out below). */
struct StepRaw {
    uint32_t w[2][2];
    uint32_t out[2][2];
};

/* The scales of one 128-long K step for a thread's two weight rows. */
struct StepScales {
    uint32_t pre[2][2]; /* [row][half]: decode_words' s */
    float post[2];      /* [row] */
    /* SM70's decode loop only (decode_kernel.cuh): its MMA leaves a thread
     * the sums of two other rows than the one it decodes, whose
     * post-scales these are. */
    float post_out[2];
};

/* The scales of a run of kPreRun elements (the elements one pre-scale
 * covers) of one weight row, for SM70's tiled kernel, which dequantizes a
 * stage's W once per block (gemm_kernel.cuh decode_stage_w): decode16's
 * pre-scale for the run and the post-scale of its scale block, from one
 * set of loads; the values prescale() and postscale() give.  Only where
 * that saves loads (Deq::kRunScales: mxfp4, whose two read a block's four
 * exponents each); the other families keep prescale() and postscale()
 * (fp8 and awq this way measured 3-5 % more instructions and 8-16 bytes
 * of spill in the V100 model's mid tiles, for one load less per column). */
struct RunScales {
    uint32_t pre;
    float post;
};

/* ---- FP16 ------------------------------------------------------------------ */
struct DeqFP16 {
    static constexpr int kBits = 16;
    static constexpr int kPairs = VG_PAIRS_NATURAL;
    static constexpr bool kPreScale = false;
    static constexpr bool kPostScale = false;
    static constexpr bool kPostPerBlock = false;
    static constexpr bool kRunScales = false;
    static constexpr int kScaleK = 128;
    static __device__ __forceinline__ uint32_t prescale(const KWeight &, int, int, int) { return 0; }
    static __device__ __forceinline__ void load_step(const KWeight &, int, int, int, int, int, StepRaw &) {}
    static __device__ __forceinline__ void ready_step(const StepRaw &, int, int, StepScales &s) { s = StepScales{}; }
    static __device__ __forceinline__ void decode_words(const uint32_t w[8], uint32_t, uint32_t out[8])
    {
#pragma unroll
        for (int i = 0; i < 8; i++)
            out[i] = w[i];
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t s, uint32_t out[8])
    {
        const uint4 a = *reinterpret_cast<const uint4 *>(p);
        const uint4 b = *reinterpret_cast<const uint4 *>(p + 16);
        const uint32_t w[8] = {a.x, a.y, a.z, a.w, b.x, b.y, b.z, b.w};
        decode_words(w, s, out);
    }
    static __device__ __forceinline__ float postscale(const KWeight &, int, int, int) { return 1.0f; }
    static __device__ __forceinline__ float epilogue(const KWeight &) { return 1.0f; }
};

/* ---- block FP8 (E4M3, FP32 scale per 128x128) -------------------------------- */

/* Two E4M3 codes (bytes lo and hi of the selector) to an FP16x2 holding the
 * values times 2^-8. */
static __device__ __forceinline__ uint32_t e4m3_high_bytes_to_f16x2_scaled(uint32_t t)
{
    return (t & 0x80008000u) | ((t >> 1) & 0x3F803F80u);
}

static __device__ __forceinline__ uint32_t e4m3x2_to_f16x2_scaled(uint32_t word, uint32_t sel)
{
    /* each code in the high byte of a 16-bit lane */
    return e4m3_high_bytes_to_f16x2_scaled(__byte_perm(word, 0u, sel));
}

/* SM89+ converts two E4M3 codes to FP16 in one instruction (exact values,
 * not scaled); the bit trick above serves SM70..SM86.  VG_F8_POST undoes
 * the decode's scaling, once, in the epilogue (a power of two: exact);
 * carried by each block scale, it was a multiply that read the scale load
 * right after it was issued, and the warp waited there (KERNELS.md D42). */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define VG_F8_HW_CVT 1
#define VG_F8_POST 1.0f
static __device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint16_t two)
{
    uint32_t out;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(out) : "h"(two));
    return out;
}
/* Both 16-bit halves of a word of four E4M3 codes, split inside the asm:
 * written as two 16-bit C operands, nvcc masks and shifts each half of the
 * word's computation apart (kernels/cuda/KERNELS.md D13). */
static __device__ __forceinline__ void e4m3x4_to_f16x2(uint32_t four, uint32_t &lo, uint32_t &hi)
{
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}\n"
        : "=r"(lo), "=r"(hi)
        : "r"(four));
}
#else
#define VG_F8_HW_CVT 0
#define VG_F8_POST 256.0f
#endif

struct DeqFP8 {
    static constexpr int kBits = 8;
    static constexpr int kPairs = VG_PAIRS_NATURAL;
    static constexpr bool kPreScale = false;
    static constexpr bool kPostScale = true;
    static constexpr bool kPostPerBlock = true; /* one scale for 128 rows */
    static constexpr bool kRunScales = false;
    static constexpr int kScaleK = VG_FP8_BLOCK;
    static __device__ __forceinline__ uint32_t prescale(const KWeight &, int, int, int) { return 0; }
    /* A warp's 16 rows lie in one 128-row scale block: one scale per step. */
    static __device__ __forceinline__ void load_step(const KWeight &w, int g, int n0, int, int k0, int, StepRaw &r)
    {
        r.w[0][0] = __float_as_uint(block_scale(w, g, n0, k0 / VG_FP8_BLOCK));
    }
    static __device__ __forceinline__ void ready_step(const StepRaw &r, int, int, StepScales &s)
    {
        s.post[0] = s.post[1] = __uint_as_float(r.w[0][0]);
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t s, uint32_t out[8])
    {
        const uint4 v = *reinterpret_cast<const uint4 *>(p);
        const uint32_t w[4] = {v.x, v.y, v.z, v.w};
        decode_words(w, s, out);
    }
    static __device__ __forceinline__ void decode_words(const uint32_t w[4], uint32_t, uint32_t out[8])
    {
#pragma unroll
        for (int i = 0; i < 4; i++) {
#if VG_F8_HW_CVT
            out[2 * i] = e4m3x2_to_f16x2((uint16_t)(w[i] & 0xFFFFu));  /* bytes 0, 1 */
            out[2 * i + 1] = e4m3x2_to_f16x2((uint16_t)(w[i] >> 16));  /* bytes 2, 3 */
#else
            out[2 * i] = e4m3x2_to_f16x2_scaled(w[i], 0x1404u);     /* bytes 0, 1 */
            out[2 * i + 1] = e4m3x2_to_f16x2_scaled(w[i], 0x3424u); /* bytes 2, 3 */
#endif
        }
    }
    static __device__ __forceinline__ float block_scale(const KWeight &w, int g, int n, int kb)
    {
        const float *s = reinterpret_cast<const float *>(w.scale + (size_t)g * w.scale_group_bytes);
        return __ldg(s + (size_t)(n / VG_FP8_BLOCK) * w.scale_cols + kb);
    }
    static __device__ __forceinline__ float postscale(const KWeight &w, int g, int n, int kb)
    {
        return block_scale(w, g, n, kb);
    }
    static __device__ __forceinline__ float epilogue(const KWeight &) { return VG_F8_POST; }
};

/* ---- the 4-bit element decoders, shared by NVFP4, MXFP4 (E2M1) and AWQ ------ */

/* Byte b = two E2M1 codes (low nibble first) to an FP16x2 of their values
 * times 2^-14: the three magnitude bits land on FP16's two low exponent bits
 * and top mantissa bit (E2M1's subnormal 0.5 becomes FP16's subnormal
 * 2^-15, exact), the sign on bit 15.  Two multiplies place both nibbles at
 * once: b * 0x200200 = b<<9 | b<<21 (magnitudes), b * 0x1001000 = b<<12 |
 * b<<24 (signs); the fields do not overlap. */
static __device__ __forceinline__ uint32_t e2m1x2_to_f16x2_scaled(uint32_t b)
{
    return ((b * 0x00200200u) & 0x0E000E00u) | ((b * 0x01001000u) & 0x80008000u);
}

/* The elements in nibbles i and i + 4 of word w (VG_PAIRS_NIBBLE) to an
 * FP16x2 of their values times 2^-14, as above.  The two sit 16 bits
 * apart, so one shift of the whole word moves both signs to bits 15 and 31
 * and another both magnitudes to bits 9-11 and 25-27: two shifts and two
 * masks, no byte extraction and no multiply (the byte pair above costs
 * about six instructions with its extraction; the 4-bit families are bound
 * by instructions, kernels/cuda/KERNELS.md D12). */
static __device__ __forceinline__ uint32_t e2m1_nibble_pair_to_f16x2_scaled(uint32_t w, int i)
{
    const uint32_t sign = (w << (12 - 4 * i)) & 0x80008000u;
    const uint32_t mag = (i == 3 ? w >> 3 : w << (9 - 4 * i)) & 0x0E000E00u;
    return sign | mag;
}

/* SM89+: E2M1 through the hardware E4M3 convert.  An E2M1 code's sign on
 * E4M3's sign bit and its three magnitude bits on E4M3's two low exponent
 * bits and top mantissa bit give the value times 2^-6 exactly (the biases
 * differ by 6; E2M1's subnormal 0.5 becomes E4M3's subnormal 2^-7; no NaN
 * code can arise).  The low nibbles of a word's four bytes become one word
 * of E4M3 bytes by two shifts and two masks, the high nibbles by one shift
 * and two masks, and each 16-bit half then converts in one instruction:
 * the pairs are the elements two apart (VG_PAIRS_STRIDE2).  In sm_90 SASS
 * a word of eight codes takes 13 instructions (four converts, two PRMT
 * for the high halves) against the nibble pairs' 16, and the 4-bit rows
 * on the H200 took about 1.5 % less time (geomean; kernels/cuda/KERNELS.md
 * D13). */
#if VG_F8_HW_CVT
#define VG_E2M1_PAIRS VG_PAIRS_STRIDE2
static __device__ __forceinline__ void e2m1x8_to_f16x2_via_e4m3(uint32_t w, uint32_t out[4])
{
    const uint32_t lo = ((w << 4) & 0x80808080u) | ((w << 2) & 0x1C1C1C1Cu); /* elements 0, 2, 4, 6 */
    const uint32_t hi = (w & 0x80808080u) | ((w >> 2) & 0x1C1C1C1Cu);        /* elements 1, 3, 5, 7 */
    e4m3x4_to_f16x2(lo, out[0], out[2]);
    e4m3x4_to_f16x2(hi, out[1], out[3]);
}
#else
#define VG_E2M1_PAIRS VG_PAIRS_NIBBLE
#endif

/* The power of two decode_words leaves on an E2M1 value with the pairs P:
 * the pre-scales of load_step carry its inverse. */
template <int P>
static __host__ __device__ constexpr int e2m1_decode_exp() { return P == VG_PAIRS_STRIDE2 ? -6 : -14; }

/* Sixteen E2M1 codes (two words) times the FP16x2 pre-scale s, which
 * carries the 2^-e2m1_decode_exp() the decode leaves out (the products are
 * exact: see the families' prescale), in the pairs P. */
template <int P>
static __device__ __forceinline__ void e2m1x16_decode(const uint32_t w[2], uint32_t s, uint32_t out[8])
{
    static_assert(P != VG_PAIRS_STRIDE2 || VG_F8_HW_CVT, "the stride-2 pairs come from the SM89+ convert only");
    const __half2 sc = *reinterpret_cast<const __half2 *>(&s);
#pragma unroll
    for (int t = 0; t < 2; t++) {
        uint32_t pair[4];
#if VG_F8_HW_CVT
        if constexpr (P == VG_PAIRS_STRIDE2) {
            e2m1x8_to_f16x2_via_e4m3(w[t], pair);
        } else
#endif
        {
#pragma unroll
            for (int i = 0; i < 4; i++)
                pair[i] = P == VG_PAIRS_NIBBLE ? e2m1_nibble_pair_to_f16x2_scaled(w[t], i)
                                               : e2m1x2_to_f16x2_scaled((w[t] >> (8 * i)) & 0xFFu);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            __half2 h = __hmul2(*reinterpret_cast<__half2 *>(&pair[i]), sc);
            out[4 * t + i] = *reinterpret_cast<uint32_t *>(&h);
        }
    }
}

/* FP16x2 bits of 2^e in both halves, for -14 <= e <= 15; 0 below.  The
 * pre-scales that need it only multiply an E2M1 decode (at most 6 * 2^-14),
 * and for e <= -15 that product is under half FP16's least subnormal, so it
 * rounds to zero whatever the scale: FP16's subnormal scales are never
 * needed, and the branch-free form costs two instructions. */
static __device__ __forceinline__ uint32_t f16x2_pow2(int e)
{
    const uint32_t b = (uint32_t)max(e + 15, 0) << 10;
    return b | (b << 16);
}

/* ---- NVFP4 (E2M1, E4M3 scale per 16, FP32 tensor scale) ----------------------
 * The pre-scale is the E4M3 scale s times 2^6 in FP16 (at most 448 * 64):
 * with the decode's 2^-14 the FP16 product is v * s * 2^-8, whose lowest
 * bit (>= 2^-18) and size (<= 10.5) fit FP16, so it is exact; the epilogue
 * multiplies by 2^8 and the tensor scale. */
struct DeqNVFP4 {
    static constexpr int kBits = 4;
    static constexpr int kPairs = VG_E2M1_PAIRS;
    static constexpr bool kPreScale = true;
    static constexpr bool kPostScale = false;
    static constexpr bool kPostPerBlock = false;
    static constexpr bool kRunScales = false;
    static constexpr int kScaleK = 128;
    /* The E4M3 codes in the high bytes of t's two 16-bit lanes to FP16x2
     * s * 2^(-8 - E), E the decode's power of two: the fp8 bit decode gives
     * s * 2^-8 (exact, subnormals included) and one multiply by 2^-E
     * (exact: at most 448 * 64, and at least 2^-11 for E = -6).  With
     * either decode the product is v * s * 2^-8.  The float conversion
     * this replaces made nvfp4 wo_a 15.8 us instead of 12.6 (KERNELS.md
     * D14). */
    template <int E>
    static __device__ __forceinline__ uint32_t scale_high_bytes(uint32_t t)
    {
        uint32_t b = e4m3_high_bytes_to_f16x2_scaled(t);
        const __half2 h = __hmul2(*reinterpret_cast<const __half2 *>(&b), __float2half2_rn((float)(1 << -E)));
        return *reinterpret_cast<const uint32_t *>(&h);
    }
    /* The E4M3 code c (low byte) to that scale in both halves. */
    template <int E>
    static __device__ __forceinline__ uint32_t scale_code(uint32_t c)
    {
        return scale_high_bytes<E>(__byte_perm(c, 0u, 0x0404u));
    }
    /* decode16's pre-scale (its decode leaves 2^-14) */
    static __device__ __forceinline__ uint32_t prescale(const KWeight &w, int g, int n, int k)
    {
        const uint8_t *s = w.scale + (size_t)g * w.scale_group_bytes;
        return scale_code<-14>(__ldg(s + (size_t)n * w.scale_cols + k / VG_NVFP4_GROUP));
    }
    /* Half h of the step holds the 16-groups k0/16 + 4h + q. */
    static __device__ __forceinline__ void load_step(const KWeight &w, int g, int n0, int n1, int k0, int q,
                                                     StepRaw &r)
    {
        const uint8_t *base = w.scale + (size_t)g * w.scale_group_bytes;
        const int last = w.scale_cols - 1;
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const uint8_t *row = base + (size_t)(i ? n1 : n0) * w.scale_cols;
#pragma unroll
            for (int h = 0; h < 2; h++)
                r.w[i][h] = __ldg(row + min(k0 / VG_NVFP4_GROUP + 4 * h + q, last));
        }
    }
    static __device__ __forceinline__ void ready_step(const StepRaw &r, int, int, StepScales &s)
    {
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                s.pre[i][h] = scale_code<e2m1_decode_exp<kPairs>()>(r.w[i][h]);
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t s, uint32_t out[8])
    {
        const uint2 v = *reinterpret_cast<const uint2 *>(p);
        const uint32_t w[2] = {v.x, v.y};
        e2m1x16_decode<VG_PAIRS_NATURAL>(w, s, out);
    }
    static __device__ __forceinline__ void decode_words(const uint32_t w[2], uint32_t s, uint32_t out[8])
    {
        e2m1x16_decode<kPairs>(w, s, out);
    }
    static __device__ __forceinline__ float postscale(const KWeight &, int, int, int) { return 1.0f; }
    static __device__ __forceinline__ float epilogue(const KWeight &w) { return w.tensor_scale * 256.0f; }
};

/* NVFP4 for the decode kernel when every scale row is 8-byte aligned and a
 * whole number of steps long (KWeight.scale_vec_ok): a row's eight scale
 * codes of the step in one load, the thread's two (q and 4 + q) picked by
 * one byte permute and decoded together, where the byte-wise load_step
 * issues two loads and two decodes per row.  A separate type, picked by
 * the launcher, as DeqMXFP4Words. */
struct DeqNVFP4Words : DeqNVFP4 {
    static __device__ __forceinline__ void load_step(const KWeight &w, int g, int n0, int n1, int k0, int,
                                                     StepRaw &r)
    {
        const uint8_t *base = w.scale + (size_t)g * w.scale_group_bytes + k0 / VG_NVFP4_GROUP;
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const uint2 v = __ldg(reinterpret_cast<const uint2 *>(base + (size_t)(i ? n1 : n0) * w.scale_cols));
            r.w[i][0] = v.x, r.w[i][1] = v.y;
        }
    }
    static __device__ __forceinline__ void ready_step(const StepRaw &r, int q0, int q1, StepScales &s)
    {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const int q = i ? q1 : q0;
            /* codes q and 4 + q in the high bytes of the two 16-bit lanes */
            const uint32_t both = scale_high_bytes<e2m1_decode_exp<kPairs>()>(
                __byte_perm(r.w[i][0], r.w[i][1], (uint32_t)((4 + q) << 12 | q << 4)));
            s.pre[i][0] = __byte_perm(both, 0u, 0x1010u);
            s.pre[i][1] = __byte_perm(both, 0u, 0x3232u);
        }
    }
};

/* ---- MXFP4 (E2M1, E8M0 per 32) -------------------------------------------------
 * The E8M0 exponent can leave FP16's range, so it is split: per 128-long K
 * block the largest of the four exponents E is applied after the MMA in
 * FP32 (postscale, 2^(E-127)), and each group's 2^(e-E) <= 1 before it in
 * FP16, as the pre-scale 2^(e-E+14) that also undoes the decode's 2^-14
 * (exact unless v * 2^(e-E) falls below FP16's subnormals, i.e. for groups
 * more than about 2^23 below the block's largest, whose contribution is
 * then lost).  The decode kernel's E4M3-convert decode (SM89+) leaves
 * 2^-6, not 2^-14: its products are v * 2^(e-E+8), exact down to 2^-28
 * below the block's largest, and step_scales moves the 2^8 into the
 * post-scale. */
struct DeqMXFP4 {
    static constexpr int kBits = 4;
    static constexpr int kPairs = VG_E2M1_PAIRS;
    static constexpr bool kPreScale = true;
    static constexpr bool kPostScale = true;
    static constexpr bool kPostPerBlock = false;
    static constexpr bool kRunScales = true; /* run_scales below, over kPreRun elements */
    static constexpr int kPreRun = VG_MXFP4_GROUP;
    static constexpr int kScaleK = 128;
    static __device__ __forceinline__ int block_max_exp(const KWeight &w, int g, int n, int kb)
    {
        const uint8_t *s = w.scale + (size_t)g * w.scale_group_bytes + (size_t)n * w.scale_cols;
        int e = 0;
        for (int i = 0; i < 4; i++) {
            const int c = kb * 4 + i;
            if (c < w.scale_cols) {
                const int v = __ldg(s + c);
                e = v > e ? v : e;
            }
        }
        return e;
    }
    static __device__ __forceinline__ uint32_t prescale(const KWeight &w, int g, int n, int k)
    {
        const uint8_t *s = w.scale + (size_t)g * w.scale_group_bytes + (size_t)n * w.scale_cols;
        const int e = __ldg(s + k / VG_MXFP4_GROUP);
        return f16x2_pow2(e - block_max_exp(w, g, n, k / 128) + 14);
    }
    /* Row r's scales for a step from its four exponents ew (byte i: the
     * step's 32-group i): the largest as the post-scale, half h holds the
     * 32-groups 2h + q/2.  The post-scale is built from bits (the code 0xFF,
     * NaN in E8M0, gives infinity): vg_e8m0_to_f32's NaN test cost mxfp4
     * wo_a 3 % (KERNELS.md D15). */
    static __device__ __forceinline__ void step_scales(uint32_t ew, int q, int r, StepScales &s)
    {
        const int emax = max(max((int)(ew & 0xFFu), (int)((ew >> 8) & 0xFFu)),
                             max((int)((ew >> 16) & 0xFFu), (int)(ew >> 24)));
        s.post[r] = __uint_as_float(emax ? (uint32_t)emax << 23 : 0x00400000u); /* 0: 2^-127 */
        /* decode_words leaves 2^(14 + e2m1_decode_exp) more than decode16's
         * 2^-14, which the pre-scale undoes: 2^8 with the E4M3 convert
         * (the FP16 products reach 6 * 2^8), taken out here, exactly. */
        constexpr int extra = 14 + e2m1_decode_exp<kPairs>();
        if constexpr (extra != 0)
            s.post[r] *= 1.0f / (float)(1 << extra);
#pragma unroll
        for (int h = 0; h < 2; h++)
            s.pre[r][h] = f16x2_pow2((int)((ew >> (16 * h + 8 * (q >> 1))) & 0xFFu) - emax + 14);
    }
    /* The step is one 128 block: its four exponents, a byte each (groups
     * past the row read 0).  DeqMXFP4Words reads them as one word. */
    static __device__ __forceinline__ void load_step(const KWeight &w, int g, int n0, int n1, int k0, int,
                                                     StepRaw &r)
    {
        const uint8_t *base = w.scale + (size_t)g * w.scale_group_bytes;
        const int c0 = k0 / VG_MXFP4_GROUP;
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const uint8_t *row = base + (size_t)(i ? n1 : n0) * w.scale_cols;
            uint32_t ew = 0;
#pragma unroll
            for (int b = 0; b < 4; b++)
                if (c0 + b < w.scale_cols)
                    ew |= (uint32_t)__ldg(row + c0 + b) << (8 * b);
            r.w[i][0] = ew;
        }
    }
    static __device__ __forceinline__ void ready_step(const StepRaw &r, int q0, int q1, StepScales &s)
    {
        step_scales(r.w[0][0], q0, 0, s);
        step_scales(r.w[1][0], q1, 1, s);
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t s, uint32_t out[8])
    {
        DeqNVFP4::decode16(p, s, out);
    }
    static __device__ __forceinline__ void decode_words(const uint32_t w[2], uint32_t s, uint32_t out[8])
    {
        e2m1x16_decode<kPairs>(w, s, out);
    }
    static __device__ __forceinline__ float postscale(const KWeight &w, int g, int n, int kb)
    {
        return vg_e8m0_to_f32((uint8_t)block_max_exp(w, g, n, kb));
    }
    /* prescale and postscale read the block's four exponents each (and
     * prescale its own a fifth time); run_scales once for both, for the
     * 32 elements of an exponent (kPreRun). */
    static __device__ __forceinline__ RunScales run_scales(const KWeight &w, int g, int n, int k)
    {
        const uint8_t *s = w.scale + (size_t)g * w.scale_group_bytes + (size_t)n * w.scale_cols;
        const int c0 = k / 128 * 4, own = k / VG_MXFP4_GROUP;
        int e = 0, e_own = 0;
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int c = c0 + i;
            if (c < w.scale_cols) {
                const int v = __ldg(s + c);
                e = v > e ? v : e;
                e_own = c == own ? v : e_own;
            }
        }
        return {f16x2_pow2(e_own - e + 14), vg_e8m0_to_f32((uint8_t)e)};
    }
    static __device__ __forceinline__ float epilogue(const KWeight &) { return 1.0f; }
};

/* MXFP4 for the decode kernel when every scale row is 4-byte aligned and
 * a whole number of steps long (KWeight.scale_vec_ok): a step's four
 * exponents in one 32-bit load.  A separate type, not a run-time branch in
 * load_step: the launcher picks it (gemm.cu), and mxfp4 wo_a took 14.2 us
 * with the branch, 12.6 without (four byte loads: 15.4). */
struct DeqMXFP4Words : DeqMXFP4 {
    static __device__ __forceinline__ void load_step(const KWeight &w, int g, int n0, int n1, int k0, int,
                                                     StepRaw &r)
    {
        const uint8_t *base = w.scale + (size_t)g * w.scale_group_bytes;
        const int c0 = k0 / VG_MXFP4_GROUP;
#pragma unroll
        for (int i = 0; i < 2; i++)
            r.w[i][0] = __ldg(reinterpret_cast<const uint32_t *>(base + (size_t)(i ? n1 : n0) * w.scale_cols + c0));
    }
};

/* ---- AWQ (INT4 in AWQ nibble order, FP16 scale and zero per 128) ----------------
 * q - zero in FP16 before the MMA (q an integer in [0, 15]: the same FP16
 * subtraction AWQ's kernels make), the FP16 scale after it in FP32: the
 * scale is one per 128 along K, i.e. per decode step, so this saves a
 * multiply per element pair (awq wo_a 11.0 us against 11.8) and rounds
 * once less than AWQ's FP16 product.  prescale packs the zero in both
 * halves.  AWQ's order puts logical elements 2j and 2j+1 in nibbles j and
 * j+4, so one mask picks a pair, and OR-ing 0x6400 (FP16 1024) into each
 * half makes 1024 + q exactly.  Nibbles 1 and 3 are masked where they lie
 * (bits 4-7 of the word or of the word shifted by 8), giving 1024 + 16q,
 * and one FMA by 1/16 minus 64 leaves q, exactly: one shift per word where
 * three shifts were (awq 4096x14336 M=1 15.52 -> 14.66 us, wo_a 8 tokens
 * 9.85 -> 9.66 on the H200; kernels/cuda/KERNELS.md D16). */
struct DeqAWQ {
    static constexpr int kBits = 4;
    static constexpr int kPairs = VG_PAIRS_NATURAL;
    static constexpr bool kPreScale = true;
    static constexpr bool kPostScale = true;
    static constexpr bool kPostPerBlock = false;
    static constexpr bool kRunScales = false;
    static constexpr int kScaleK = VG_AWQ_GROUP;
    /* The FP16 zero and scale of row n's K group kb, as loaded. */
    static __device__ __forceinline__ uint32_t zero_bits(const KWeight &w, int g, int n, int kb)
    {
        const uint16_t *z = reinterpret_cast<const uint16_t *>(w.zero + (size_t)g * w.zero_group_bytes);
        return __ldg(z + (size_t)n * w.scale_cols + kb);
    }
    static __device__ __forceinline__ uint32_t scale_bits(const KWeight &w, int g, int n, int kb)
    {
        const uint16_t *s = reinterpret_cast<const uint16_t *>(w.scale + (size_t)g * w.scale_group_bytes);
        return __ldg(s + (size_t)n * w.scale_cols + kb);
    }
    static __device__ __forceinline__ uint32_t prescale(const KWeight &w, int g, int n, int k)
    {
        return zero_bits(w, g, n, k / VG_AWQ_GROUP) * 0x10001u;
    }
    /* The step is one 128 group: one scale and zero per row. */
    static __device__ __forceinline__ void load_step(const KWeight &w, int g, int n0, int n1, int k0, int,
                                                     StepRaw &r)
    {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            r.w[i][0] = zero_bits(w, g, i ? n1 : n0, k0 / VG_AWQ_GROUP);
            r.w[i][1] = scale_bits(w, g, i ? n1 : n0, k0 / VG_AWQ_GROUP);
        }
    }
    static __device__ __forceinline__ void ready_step(const StepRaw &r, int, int, StepScales &s)
    {
#pragma unroll
        for (int i = 0; i < 2; i++) {
            s.pre[i][0] = s.pre[i][1] = r.w[i][0] * 0x10001u;
            s.post[i] = __half2float(__ushort_as_half((unsigned short)r.w[i][1]));
        }
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t zz, uint32_t out[8])
    {
        const uint2 v = *reinterpret_cast<const uint2 *>(p);
        const uint32_t w[2] = {v.x, v.y};
        decode_words(w, zz, out);
    }
    static __device__ __forceinline__ void decode_words(const uint32_t w[2], uint32_t zz, uint32_t out[8])
    {
        const __half2 ze2 = *reinterpret_cast<const __half2 *>(&zz);
        const __half2 k1024 = __float2half2_rn(1024.0f);
        const __half2 k16th = __float2half2_rn(0.0625f), km64 = __float2half2_rn(-64.0f);
#pragma unroll
        for (int i = 0; i < 2; i++) {
            const uint32_t hi = w[i] >> 8;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                uint32_t qm = ((j < 2 ? w[i] : hi) & (j & 1 ? 0x00F000F0u : 0x000F000Fu)) | 0x64006400u;
                const __half2 x = *reinterpret_cast<__half2 *>(&qm);
                const __half2 q = j & 1 ? __hfma2(x, k16th, km64) : __hsub2(x, k1024); /* exact */
                __half2 h = __hsub2(q, ze2);
                out[4 * i + j] = *reinterpret_cast<uint32_t *>(&h);
            }
        }
    }
    static __device__ __forceinline__ float postscale(const KWeight &w, int g, int n, int kb)
    {
        return __half2float(__ushort_as_half((unsigned short)scale_bits(w, g, n, kb)));
    }
    static __device__ __forceinline__ float epilogue(const KWeight &) { return 1.0f; }
};

#endif
