/*
 * voltgate numeric formats: bit-exact encode and decode of every element and
 * scale format the weight families use, usable from C and from CUDA device
 * code alike (every function is `static inline`, and `__host__ __device__`
 * when compiled by nvcc).
 *
 * Only integer and bit operations, int-to-float conversion and products with
 * exact powers of two are used, so the results do not depend on libm, on the
 * compiler's rounding of constants or on flush-to-zero of FP32 subnormals
 * (the only FP32 subnormal ever produced is 2^-127, the E8M0 code 0, built
 * from its bits).
 *
 * Formats (OCP 8-bit FP spec v1.0 and OCP MX spec v1.0 for the small ones):
 *   FP16   IEEE binary16.  Encoding: round to nearest even, overflow -> inf,
 *          NaN stays NaN (quiet, sign and top payload bits kept).
 *   BF16   top half of FP32.  Encoding: RNE, overflow -> inf, NaN stays NaN.
 *   E4M3   OCP "fn": bias 7, 3 mantissa bits, max +-448, subnormals down to
 *          2^-9, S.1111.111 (0x7F, 0xFF) is NaN, no infinities.
 *   E5M2   bias 15, 2 mantissa bits, max +-57344, subnormals down to 2^-16,
 *          infinities (0x7C, 0xFC) and NaNs (exponent 31, mantissa != 0).
 *   E2M1   FP4: bias 1, 1 mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and the
 *          negatives; no inf, no NaN.  A nibble; bit 3 is the sign.
 *   E8M0   unsigned power-of-two scale 2^(c-127), c = 0..254; 0xFF is NaN.
 *
 * Encoders of the FP8 formats take `nan_on_overflow`:
 *   0 (saturating, what the quantizers use): a finite value beyond the
 *     largest code, and an infinity, become +-max (448 / 57344).
 *   1 (OCP "non-saturating"): E4M3 overflow and inf become NaN (0x7F|sign);
 *     E5M2 overflow and inf become +-inf.
 * "Overflow" is decided after rounding: E4M3 values below 464 (the midpoint
 * between 448 and the would-be 480) round to 448; 464 itself is a tie that
 * goes to even, i.e. to 448 as well.  NaN always encodes as 0x7F.
 *
 * INT4 in the AWQ order: eight 4-bit values per 32-bit word, logical element
 * AWQ_ORDER[j] = {0,2,4,6,1,3,5,7}[j] stored in nibble j (bits 4j..4j+3), so
 * logical element i is read from nibble REVERSE[i] = {0,4,1,5,2,6,3,7}[i].
 */
#ifndef VOLTGATE_FORMATS_H
#define VOLTGATE_FORMATS_H

#include <stdint.h>
#if !defined(__CUDA_ARCH__)
#include <string.h>
#endif

#if defined(__CUDACC__)
#define VG_HD static inline __host__ __device__
#else
#define VG_HD static inline
#endif

#define VG_E4M3_MAX 448.0f
#define VG_E5M2_MAX 57344.0f
#define VG_E2M1_MAX 6.0f

/* ---- bit casts ----------------------------------------------------------- */

VG_HD uint32_t vg_f32_bits(float f)
{
#if defined(__CUDA_ARCH__)
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
#endif
}

VG_HD float vg_bits_f32(uint32_t u)
{
#if defined(__CUDA_ARCH__)
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
#endif
}

/* 2^e for e in the FP32 normal range [-126, 127], built from its bits. */
VG_HD float vg__pow2(int e)
{
    return vg_bits_f32((uint32_t)(e + 127) << 23);
}

/* ---- generic small-float machinery ----------------------------------------
 * A "minifloat" here is sign | exponent (ebits) | mantissa (mbits) with IEEE
 * style subnormals at exponent field 0.  The special codes (inf, NaN) of each
 * format are handled by its own wrapper. */

/* v >> s rounded to nearest, ties to even; 0 < s <= 31. */
VG_HD uint32_t vg__shift_rne(uint32_t v, int s)
{
    uint32_t q = v >> s;
    uint32_t rem = v & ((1u << s) - 1u);
    uint32_t half = 1u << (s - 1);
    if (rem > half || (rem == half && (q & 1u)))
        q++;
    return q;
}

/* Magnitude code (exponent and mantissa fields, no sign) nearest to the
 * finite FP32 magnitude `absbits`, ties to even.  The result may exceed the
 * format's largest code: the caller decides what overflow means.  A mantissa
 * rounding up carries into the exponent field, which is exactly the next
 * binade (and turns the largest subnormal into the smallest normal). */
VG_HD uint32_t vg__mini_encode_mag(uint32_t absbits, int mbits, int bias)
{
    uint32_t efield = absbits >> 23;
    if (efield == 0)
        return 0; /* FP32 zero or subnormal: far below half of any target subnormal */
    int e = (int)efield - 127;
    uint32_t mant = absbits & 0x7FFFFFu;
    int emin = 1 - bias;
    if (e >= emin) /* normal in the target (or overflowing) */
        return vg__shift_rne(((uint32_t)(e + bias) << 23) | mant, 23 - mbits);
    /* subnormal in the target: shift the full significand further right */
    int s = 23 - mbits + (emin - e);
    if (s > 25)
        return 0; /* below a quarter of the smallest subnormal */
    return vg__shift_rne(mant | 0x800000u, s);
}

/* FP32 value of a finite minifloat magnitude code (no sign, no specials). */
VG_HD float vg__mini_decode_mag(uint32_t mag, int mbits, int bias)
{
    uint32_t efield = mag >> mbits;
    uint32_t mant = mag & ((1u << mbits) - 1u);
    if (efield == 0) /* subnormal: mant * 2^(emin - mbits), exact */
        return (float)mant * vg__pow2(1 - bias - mbits);
    return vg_bits_f32((((uint32_t)((int)efield - bias + 127)) << 23) | (mant << (23 - mbits)));
}

VG_HD float vg__with_sign(float f, uint32_t negative)
{
    return negative ? vg_bits_f32(vg_f32_bits(f) | 0x80000000u) : f;
}

#define VG__F32_QNAN 0x7FC00000u

/* ---- FP16 ------------------------------------------------------------------ */

VG_HD float vg_fp16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t mag = h & 0x7FFFu;
    if ((mag >> 10) == 0x1F) /* inf or NaN: payload moves to the top */
        return vg_bits_f32(sign | 0x7F800000u | ((mag & 0x3FFu) << 13));
    return vg__with_sign(vg__mini_decode_mag(mag, 10, 15), sign);
}

VG_HD uint16_t vg_f32_to_fp16(float f)
{
    uint32_t u = vg_f32_bits(f);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u) /* NaN: quiet it, keep the top payload bits */
        return (uint16_t)(sign | 0x7E00u | ((a >> 13) & 0x3FFu));
    if (a == 0x7F800000u)
        return (uint16_t)(sign | 0x7C00u);
    uint32_t mag = vg__mini_encode_mag(a, 10, 15);
    if (mag >= 0x7C00u)
        mag = 0x7C00u; /* overflow -> inf */
    return (uint16_t)(sign | mag);
}

/* ---- BF16 ------------------------------------------------------------------ */

VG_HD float vg_bf16_to_f32(uint16_t b)
{
    return vg_bits_f32((uint32_t)b << 16);
}

VG_HD uint16_t vg_f32_to_bf16(float f)
{
    uint32_t u = vg_f32_bits(f);
    if ((u & 0x7FFFFFFFu) > 0x7F800000u) /* NaN: quiet it so it cannot truncate to inf */
        return (uint16_t)((u >> 16) | 0x0040u);
    /* RNE on the low 16 bits; a carry into the exponent gives the next
     * binade, or inf from the largest finite values. */
    return (uint16_t)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

/* ---- FP8 E4M3 (OCP fn) ------------------------------------------------------ */

VG_HD float vg_e4m3_to_f32(uint8_t c)
{
    uint32_t mag = c & 0x7Fu;
    if (mag == 0x7Fu)
        return vg_bits_f32(((uint32_t)(c & 0x80u) << 24) | VG__F32_QNAN);
    return vg__with_sign(vg__mini_decode_mag(mag, 3, 7), c & 0x80u);
}

VG_HD uint8_t vg_f32_to_e4m3(float f, int nan_on_overflow)
{
    uint32_t u = vg_f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return 0x7Fu;
    uint32_t mag = a == 0x7F800000u ? 0xFFu : vg__mini_encode_mag(a, 3, 7);
    if (mag > 0x7Eu)
        mag = nan_on_overflow ? 0x7Fu : 0x7Eu;
    return (uint8_t)(sign | mag);
}

/* ---- FP8 E5M2 ----------------------------------------------------------------- */

VG_HD float vg_e5m2_to_f32(uint8_t c)
{
    uint32_t sign = (uint32_t)(c & 0x80u) << 24;
    uint32_t mag = c & 0x7Fu;
    if (mag >= 0x7Cu) /* exponent 31: inf (mantissa 0) or NaN */
        return vg_bits_f32(sign | (mag == 0x7Cu ? 0x7F800000u : VG__F32_QNAN));
    return vg__with_sign(vg__mini_decode_mag(mag, 2, 15), sign);
}

VG_HD uint8_t vg_f32_to_e5m2(float f, int nan_on_overflow)
{
    uint32_t u = vg_f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 24) & 0x80u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return 0x7Fu;
    uint32_t mag = a == 0x7F800000u ? 0xFFu : vg__mini_encode_mag(a, 2, 15);
    if (mag > 0x7Bu)
        mag = nan_on_overflow ? 0x7Cu : 0x7Bu; /* +-inf or +-57344 */
    return (uint8_t)(sign | mag);
}

/* ---- FP4 E2M1 ----------------------------------------------------------------- */

VG_HD float vg_e2m1_to_f32(uint8_t nibble)
{
    return vg__with_sign(vg__mini_decode_mag(nibble & 0x7u, 1, 1), nibble & 0x8u);
}

/* RNE; saturates to +-6 (inf too).  NaN has no code: it encodes as +6
 * (0x7), as PTX cvt.satfinite does, so that it stays visibly large. */
VG_HD uint8_t vg_f32_to_e2m1(float f)
{
    uint32_t u = vg_f32_bits(f);
    uint8_t sign = (uint8_t)((u >> 28) & 0x8u);
    uint32_t a = u & 0x7FFFFFFFu;
    if (a > 0x7F800000u)
        return 0x7u;
    uint32_t mag = a == 0x7F800000u ? 0x7u : vg__mini_encode_mag(a, 1, 1);
    if (mag > 0x7u)
        mag = 0x7u;
    return (uint8_t)(sign | mag);
}

/* ---- E8M0 scale ------------------------------------------------------------------ */

VG_HD float vg_e8m0_to_f32(uint8_t c)
{
    if (c == 0xFFu)
        return vg_bits_f32(VG__F32_QNAN);
    if (c == 0)
        return vg_bits_f32(0x00400000u); /* 2^-127, an FP32 subnormal */
    return vg_bits_f32((uint32_t)c << 23);
}

/* The smallest power of two >= |f|, as E8M0, clamped to [2^-127, 2^127]:
 * a power of two encodes exactly, anything else rounds the exponent UP (so a
 * scale s = e8m0(x) always satisfies |x| <= s, never clips).  Zero and
 * values below 2^-127 give code 0; NaN and inf give 0xFF (NaN).  The OCP MX
 * rule floor(log2(amax)) - emax_elem is a choice of the quantizer, which
 * passes the power of two it wants (see kernels/quant.c). */
VG_HD uint8_t vg_f32_to_e8m0(float f)
{
    uint32_t a = vg_f32_bits(f) & 0x7FFFFFFFu;
    if (a >= 0x7F800000u)
        return 0xFFu;
    uint32_t efield = a >> 23;
    if (efield == 0) /* zero or FP32 subnormal: 2^-127 or 2^-126 */
        return (uint8_t)(a > 0x00400000u ? 1u : 0u);
    uint32_t c = efield + ((a & 0x7FFFFFu) ? 1u : 0u);
    return (uint8_t)(c > 254u ? 254u : c);
}

/* ---- INT4 in the AWQ order ---------------------------------------------------------- */

/* Logical element stored in nibble j: {0,2,4,6,1,3,5,7}[j]. */
VG_HD int vg_awq_order(int j) { return ((j & 3) << 1) | (j >> 2); }
/* Nibble holding logical element i: {0,4,1,5,2,6,3,7}[i]. */
VG_HD int vg_awq_reverse(int i) { return (i >> 1) | ((i & 1) << 2); }

/* Packs eight 4-bit values (logical order, only the low nibble of each
 * is used) into one word in the AWQ nibble order. */
VG_HD uint32_t vg_awq_pack8(const uint8_t v[8])
{
    uint32_t w = 0;
    for (int j = 0; j < 8; j++)
        w |= (uint32_t)(v[vg_awq_order(j)] & 0xFu) << (4 * j);
    return w;
}

/* Logical element i (0..7) of a packed word. */
VG_HD uint8_t vg_awq_unpack(uint32_t word, int i)
{
    return (uint8_t)((word >> (4 * vg_awq_reverse(i))) & 0xFu);
}

/* ---- fast paths for the kernels -------------------------------------------------------
 * E4M3 -> FP16 without branches: the seven magnitude bits shifted left by 7
 * land on FP16's exponent and mantissa fields; because the biases differ by
 * 8 the FP16 value is exactly the E4M3 value times 2^-8, subnormals
 * included.  Multiply by 256 (or fold 2^8 into the block scale) after the
 * MMA.  Not valid for the NaN codes 0x7F/0xFF (they come out as 480*2^-8). */
VG_HD uint16_t vg_e4m3_to_fp16_scaled(uint8_t c)
{
    return (uint16_t)(((uint16_t)(c & 0x80u) << 8) | ((uint16_t)(c & 0x7Fu) << 7));
}

/* E2M1 -> FP16 bits, exact (a 16-entry table as a switch-free expression). */
VG_HD uint16_t vg_e2m1_to_fp16(uint8_t nibble)
{
    /* magnitudes 0, 0.5, 1, 1.5, 2, 3, 4, 6 */
    uint32_t m = nibble & 0x7u;
    uint32_t bits = m == 0 ? 0u
                  : m == 1 ? 0x3800u
                           : ((((m >> 1) + 14u) << 10) | ((m & 1u) << 9));
    return (uint16_t)(((uint32_t)(nibble & 0x8u) << 12) | bits);
}

#endif
