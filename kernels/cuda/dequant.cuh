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
 *   epilogue(w)    one factor applied to the output (nvfp4's tensor scale).
 *
 * fp8 (the first family): E4M3 to FP16 by bits alone -- the seven magnitude
 * bits shifted right by one land on FP16's exponent and mantissa and give
 * the value times 2^-8 exactly (subnormals included, the biases differ by 8;
 * the NaN codes 0x7F/0xFF come out as 1.875, the quantizer never makes
 * them).  The 2^8 is folded into the FP32 block scale.  On SM89+ the
 * hardware cvt.rn.f16x2.e4m3x2 does the same in one instruction per pair.  The suite checks
 * this decode against vg_e4m3_to_f32 for every code.
 */
#ifndef VG_CUDA_DEQUANT_CUH
#define VG_CUDA_DEQUANT_CUH

#include <stdint.h>

#include "voltgate/formats.h"
#include "voltgate/types.h"

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
    size_t q_row_bytes;       /* bytes of one weight row */
};

/* ---- FP16 ------------------------------------------------------------------ */
struct DeqFP16 {
    static constexpr int kBits = 16;
    static constexpr bool kPreScale = false;
    static constexpr bool kPostScale = false;
    static constexpr bool kPostPerBlock = false;
    static constexpr int kScaleK = 128;
    static __device__ __forceinline__ uint32_t prescale(const KWeight &, int, int, int) { return 0; }
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
static __device__ __forceinline__ uint32_t e4m3x2_to_f16x2_scaled(uint32_t word, uint32_t sel)
{
    uint32_t t = __byte_perm(word, 0u, sel); /* each code in the high byte of a 16-bit lane */
    return (t & 0x80008000u) | ((t >> 1) & 0x3F803F80u);
}

/* SM89+ converts two E4M3 codes to FP16 in one instruction (exact values,
 * not scaled); the bit trick above serves SM70..SM86.  VG_F8_POST is the
 * factor the block scale carries to undo the decode's scaling. */
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
#define VG_F8_HW_CVT 1
#define VG_F8_POST 1.0f
static __device__ __forceinline__ uint32_t e4m3x2_to_f16x2(uint16_t two)
{
    uint32_t out;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(out) : "h"(two));
    return out;
}
#else
#define VG_F8_HW_CVT 0
#define VG_F8_POST 256.0f
#endif

struct DeqFP8 {
    static constexpr int kBits = 8;
    static constexpr bool kPreScale = false;
    static constexpr bool kPostScale = true;
    static constexpr bool kPostPerBlock = true; /* one scale for 128 rows */
    static constexpr int kScaleK = VG_FP8_BLOCK;
    static __device__ __forceinline__ uint32_t prescale(const KWeight &, int, int, int) { return 0; }
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
    static __device__ __forceinline__ float postscale(const KWeight &w, int g, int n, int kb)
    {
        const float *s = reinterpret_cast<const float *>(w.scale + (size_t)g * w.scale_group_bytes);
        return __ldg(s + (size_t)(n / VG_FP8_BLOCK) * w.scale_cols + kb) * VG_F8_POST;
    }
    static __device__ __forceinline__ float epilogue(const KWeight &) { return 1.0f; }
};

/* ---- NVFP4 (E2M1, E4M3 scale per 16, FP32 tensor scale) ----------------------
 * e2m1 * e4m3 has at most 2 + 4 significant bits and lies in [2^-10, 2688]:
 * exact in FP16, so the per-16 scale is applied before the MMA and only the
 * tensor scale after it. */
static __device__ __forceinline__ uint32_t e2m1_to_f16_bits(uint32_t nib)
{
    return vg_e2m1_to_fp16((uint8_t)nib);
}

struct DeqNVFP4 {
    static constexpr int kBits = 4;
    static constexpr bool kPreScale = true;
    static constexpr bool kPostScale = false;
    static constexpr bool kPostPerBlock = false;
    static constexpr int kScaleK = 128;
    /* FP16x2 of the decoded E4M3 scale, both halves. */
    static __device__ __forceinline__ uint32_t prescale(const KWeight &w, int g, int n, int k)
    {
        const uint8_t *s = w.scale + (size_t)g * w.scale_group_bytes;
        const uint8_t c = __ldg(s + (size_t)n * w.scale_cols + k / VG_NVFP4_GROUP);
        const __half h = __float2half_rn(vg_e4m3_to_f32(c)); /* exact: E4M3 fits FP16 */
        const uint16_t b = __half_as_ushort(h);
        return (uint32_t)b | ((uint32_t)b << 16);
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t s, uint32_t out[8])
    {
        const uint2 v = *reinterpret_cast<const uint2 *>(p);
        const uint32_t w[2] = {v.x, v.y};
        decode_words(w, s, out);
    }
    static __device__ __forceinline__ void decode_words(const uint32_t w[2], uint32_t s, uint32_t out[8])
    {
        const __half2 sc = *reinterpret_cast<const __half2 *>(&s);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const uint32_t byte = (w[i] >> (8 * j)) & 0xFFu; /* element 2j low nibble */
                uint32_t pair = e2m1_to_f16_bits(byte & 0xFu) | (e2m1_to_f16_bits(byte >> 4) << 16);
                __half2 h = __hmul2(*reinterpret_cast<__half2 *>(&pair), sc);
                out[4 * i + j] = *reinterpret_cast<uint32_t *>(&h);
            }
    }
    static __device__ __forceinline__ float postscale(const KWeight &, int, int, int) { return 1.0f; }
    static __device__ __forceinline__ float epilogue(const KWeight &w) { return w.tensor_scale; }
};

/* ---- MXFP4 (E2M1, E8M0 per 32) -------------------------------------------------
 * The E8M0 exponent can leave FP16's range, so it is split: per 128-long K
 * block the largest of the four exponents E is applied after the MMA in
 * FP32 (postscale, 2^(E-127)), and each group's 2^(e-E) <= 1 before it in
 * FP16 (exact unless it falls below FP16's subnormals, i.e. for groups more
 * than 2^24 below the block's largest, whose contribution is then lost). */
struct DeqMXFP4 {
    static constexpr int kBits = 4;
    static constexpr bool kPreScale = true;
    static constexpr bool kPostScale = true;
    static constexpr bool kPostPerBlock = false;
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
        const int emax = block_max_exp(w, g, n, k / 128);
        const float f = exp2f((float)(e - emax)); /* a power of two <= 1 */
        const uint16_t b = __half_as_ushort(__float2half_rn(f));
        return (uint32_t)b | ((uint32_t)b << 16);
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t s, uint32_t out[8])
    {
        DeqNVFP4::decode16(p, s, out);
    }
    static __device__ __forceinline__ void decode_words(const uint32_t w[2], uint32_t s, uint32_t out[8])
    {
        DeqNVFP4::decode_words(w, s, out);
    }
    static __device__ __forceinline__ float postscale(const KWeight &w, int g, int n, int kb)
    {
        return vg_e8m0_to_f32((uint8_t)block_max_exp(w, g, n, kb));
    }
    static __device__ __forceinline__ float epilogue(const KWeight &) { return 1.0f; }
};

/* ---- AWQ (INT4 in AWQ nibble order, FP16 scale and zero per 128) ----------------
 * w = (q - zero) * scale in FP16 (q - zero is an exact integer in [-15, 15];
 * the product rounds once, as in AWQ's own kernels). prescale packs the
 * FP16 scale (low half) and zero (high half). */
struct DeqAWQ {
    static constexpr int kBits = 4;
    static constexpr bool kPreScale = true;
    static constexpr bool kPostScale = false;
    static constexpr bool kPostPerBlock = false;
    static constexpr int kScaleK = 128;
    static __device__ __forceinline__ uint32_t prescale(const KWeight &w, int g, int n, int k)
    {
        const uint16_t *s = reinterpret_cast<const uint16_t *>(w.scale + (size_t)g * w.scale_group_bytes);
        const uint16_t *z = reinterpret_cast<const uint16_t *>(w.zero + (size_t)g * w.zero_group_bytes);
        const size_t i = (size_t)n * w.scale_cols + k / VG_AWQ_GROUP;
        return (uint32_t)__ldg(s + i) | ((uint32_t)__ldg(z + i) << 16);
    }
    static __device__ __forceinline__ void decode16(const uint8_t *p, uint32_t sz, uint32_t out[8])
    {
        const uint2 v = *reinterpret_cast<const uint2 *>(p);
        const uint32_t w[2] = {v.x, v.y};
        decode_words(w, sz, out);
    }
    static __device__ __forceinline__ void decode_words(const uint32_t w[2], uint32_t sz, uint32_t out[8])
    {
        const __half sc = __ushort_as_half((uint16_t)(sz & 0xFFFFu));
        const __half ze = __ushort_as_half((uint16_t)(sz >> 16));
        const __half2 sc2 = __halves2half2(sc, sc);
        const __half2 ze2 = __halves2half2(ze, ze);
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < 4; j++) {
                /* logical elements 2j, 2j+1 of word i */
                const uint32_t lo = (w[i] >> (4 * vg_awq_reverse(2 * j))) & 0xFu;
                const uint32_t hi = (w[i] >> (4 * vg_awq_reverse(2 * j + 1))) & 0xFu;
                __half2 q = __halves2half2(__uint2half_rn(lo), __uint2half_rn(hi));
                __half2 h = __hmul2(__hsub2(q, ze2), sc2);
                out[4 * i + j] = *reinterpret_cast<uint32_t *>(&h);
            }
    }
    static __device__ __forceinline__ float postscale(const KWeight &, int, int, int) { return 1.0f; }
    static __device__ __forceinline__ float epilogue(const KWeight &) { return 1.0f; }
};

#endif
