/*
 * Numeric formats (include/voltgate/formats.h): every code of every small
 * format decoded and checked against a value computed here from the format's
 * definition (sign, exponent, mantissa, ldexp); round trips of every encoder
 * over all codes; round-to-nearest-even at every midpoint between adjacent
 * codes; saturation, overflow and NaN handling; the AWQ nibble order.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vgtest.h"
#include "voltgate/formats.h"

/* ---- reference decoders, from the format definitions ------------------------ */

/* A generic IEEE-like minifloat: 1 sign bit, ebits exponent, mbits mantissa,
 * bias, subnormals at exponent 0.  Specials are left to the callers. */
static double ref_minifloat(unsigned code, int ebits, int mbits, int bias)
{
    unsigned sign = (code >> (ebits + mbits)) & 1u;
    unsigned e = (code >> mbits) & ((1u << ebits) - 1u);
    unsigned m = code & ((1u << mbits) - 1u);
    double v = e == 0 ? ldexp((double)m, 1 - bias - mbits)
                      : ldexp((double)((1u << mbits) + m), (int)e - bias - mbits);
    return sign ? -v : v;
}

static double ref_e4m3(unsigned c)
{
    if ((c & 0x7Fu) == 0x7Fu)
        return NAN;
    return ref_minifloat(c, 4, 3, 7);
}

static double ref_e5m2(unsigned c)
{
    unsigned e = (c >> 2) & 31u, m = c & 3u;
    if (e == 31)
        return m ? NAN : ((c & 0x80u) ? -INFINITY : INFINITY);
    return ref_minifloat(c, 5, 2, 15);
}

static double ref_fp16(unsigned h)
{
    unsigned e = (h >> 10) & 31u, m = h & 0x3FFu;
    if (e == 31)
        return m ? NAN : ((h & 0x8000u) ? -INFINITY : INFINITY);
    return ref_minifloat(h, 5, 10, 15);
}

static double ref_bf16(unsigned b)
{
    unsigned e = (b >> 7) & 255u, m = b & 0x7Fu;
    if (e == 255)
        return m ? NAN : ((b & 0x8000u) ? -INFINITY : INFINITY);
    return ref_minifloat(b, 8, 7, 127);
}

/* Same value, including the sign of zero and NaN-ness. */
static void assert_same_value(double got, double want, const char *what, unsigned code)
{
    if (isnan(want)) {
        if (!isnan(got)) {
            print_error("%s code 0x%X: got %g, want NaN\n", what, code, got);
            fail();
        }
        return;
    }
    if (got != want || signbit(got) != signbit(want)) {
        print_error("%s code 0x%X: got %.10g, want %.10g\n", what, code, got, want);
        fail();
    }
}

/* ---- every code decoded ------------------------------------------------------- */

static void e4m3_all_codes_decode(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 256; c++)
        assert_same_value(vg_e4m3_to_f32((uint8_t)c), ref_e4m3(c), "e4m3", c);
    /* the landmarks of the OCP definition, written out */
    assert_true(vg_e4m3_to_f32(0x7E) == 448.0f);
    assert_true(vg_e4m3_to_f32(0xFE) == -448.0f);
    assert_true(vg_e4m3_to_f32(0x01) == 0x1p-9f);
    assert_true(vg_e4m3_to_f32(0x08) == 0x1p-6f);
    assert_true(vg_e4m3_to_f32(0x38) == 1.0f);
    assert_true(isnan(vg_e4m3_to_f32(0x7F)) && isnan(vg_e4m3_to_f32(0xFF)));
}

static void e5m2_all_codes_decode(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 256; c++)
        assert_same_value(vg_e5m2_to_f32((uint8_t)c), ref_e5m2(c), "e5m2", c);
    assert_true(vg_e5m2_to_f32(0x7B) == 57344.0f);
    assert_true(vg_e5m2_to_f32(0x01) == 0x1p-16f);
    assert_true(vg_e5m2_to_f32(0x3C) == 1.0f);
    assert_true(isinf(vg_e5m2_to_f32(0x7C)) && vg_e5m2_to_f32(0xFC) < 0);
    assert_true(isnan(vg_e5m2_to_f32(0x7D)) && isnan(vg_e5m2_to_f32(0x7E)) &&
                isnan(vg_e5m2_to_f32(0xFF)));
}

static void e2m1_all_codes_decode(void **state)
{
    (void)state;
    static const double want[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};
    for (unsigned c = 0; c < 16; c++) {
        double w = (c & 8u) ? -want[c & 7u] : want[c & 7u];
        assert_same_value(vg_e2m1_to_f32((uint8_t)c), w, "e2m1", c);
        assert_same_value(vg_e2m1_to_f32((uint8_t)c), ref_minifloat(c, 2, 1, 1), "e2m1 def", c);
        /* the high nibble is ignored */
        assert_same_value(vg_e2m1_to_f32((uint8_t)(c | 0xF0u)), w, "e2m1 high bits", c);
    }
}

static void e8m0_codes_decode(void **state)
{
    (void)state;
    assert_true(vg_e8m0_to_f32(0) == (float)ldexp(1.0, -127));
    assert_true(vg_e8m0_to_f32(127) == 1.0f);
    assert_true(vg_e8m0_to_f32(128) == 2.0f);
    assert_true(vg_e8m0_to_f32(254) == (float)ldexp(1.0, 127));
    assert_true(isnan(vg_e8m0_to_f32(0xFF)));
    for (unsigned c = 0; c < 255; c++)
        assert_same_value(vg_e8m0_to_f32((uint8_t)c), ldexp(1.0, (int)c - 127), "e8m0", c);
}

static void fp16_all_codes_decode(void **state)
{
    (void)state;
    for (unsigned h = 0; h < 65536; h++)
        assert_same_value(vg_fp16_to_f32((uint16_t)h), ref_fp16(h), "fp16", h);
}

static void bf16_all_codes_decode(void **state)
{
    (void)state;
    for (unsigned b = 0; b < 65536; b++)
        assert_same_value(vg_bf16_to_f32((uint16_t)b), ref_bf16(b), "bf16", b);
}

/* ---- round trips ---------------------------------------------------------------- */

static void e4m3_round_trip(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 256; c++) {
        if ((c & 0x7Fu) == 0x7Fu)
            continue;
        float v = (float)ref_e4m3(c);
        assert_int_equal(vg_f32_to_e4m3(v, 0), c);
        assert_int_equal(vg_f32_to_e4m3(v, 1), c);
    }
}

static void e5m2_round_trip(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 256; c++) {
        double v = ref_e5m2(c);
        if (isnan(v))
            continue;
        if (isinf(v)) { /* inf saturates, or stays inf with the flag */
            assert_int_equal(vg_f32_to_e5m2((float)v, 0), (c & 0x80u) | 0x7Bu);
            assert_int_equal(vg_f32_to_e5m2((float)v, 1), c);
            continue;
        }
        assert_int_equal(vg_f32_to_e5m2((float)v, 0), c);
        assert_int_equal(vg_f32_to_e5m2((float)v, 1), c);
    }
}

static void e2m1_round_trip(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 16; c++)
        assert_int_equal(vg_f32_to_e2m1((float)ref_minifloat(c, 2, 1, 1)), c);
}

static void e8m0_round_trip(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 255; c++)
        assert_int_equal(vg_f32_to_e8m0((float)ldexp(1.0, (int)c - 127)), c);
}

static void fp16_round_trip(void **state)
{
    (void)state;
    for (unsigned h = 0; h < 65536; h++) {
        double v = ref_fp16(h);
        if (!isnan(v))
            assert_int_equal(vg_f32_to_fp16((float)v), h);
    }
}

static void bf16_round_trip(void **state)
{
    (void)state;
    for (unsigned b = 0; b < 65536; b++) {
        double v = ref_bf16(b);
        if (!isnan(v))
            assert_int_equal(vg_f32_to_bf16((float)v), b);
    }
}

/* ---- RNE at every midpoint ------------------------------------------------------------
 * For adjacent finite codes lo < hi (positive magnitudes, consecutive code
 * numbers), the midpoint goes to the one with the even code, and the floats
 * just below/above it go down/up.  Both signs. */
typedef unsigned (*enc_fn)(float);
typedef double (*dec_fn)(unsigned);

static unsigned enc_e4m3(float f) { return vg_f32_to_e4m3(f, 0); }
static unsigned enc_e5m2(float f) { return vg_f32_to_e5m2(f, 0); }
static unsigned enc_e2m1(float f) { return vg_f32_to_e2m1(f); }
static unsigned enc_fp16(float f) { return vg_f32_to_fp16(f); }
static unsigned enc_bf16(float f) { return vg_f32_to_bf16(f); }
static double dec_e2m1(unsigned c) { return ref_minifloat(c, 2, 1, 1); }

static void check_ties(const char *what, enc_fn enc, dec_fn dec, unsigned max_code,
                       unsigned sign_bit)
{
    for (unsigned lo = 0; lo < max_code; lo++) {
        unsigned hi = lo + 1;
        double a = dec(lo), b = dec(hi);
        float mid = (float)((a + b) / 2); /* exact: one more mantissa bit than the format */
        assert_true((double)mid == (a + b) / 2);
        unsigned even = (lo & 1u) ? hi : lo;
        float below = nextafterf(mid, 0.0f), above = nextafterf(mid, INFINITY);
        for (int neg = 0; neg < 2; neg++) {
            float s = neg ? -1.0f : 1.0f;
            unsigned sb = neg ? sign_bit : 0;
            unsigned got_mid = enc(s * mid), got_below = enc(s * below), got_above = enc(s * above);
            if (got_mid != (even | sb) || got_below != (lo | sb) || got_above != (hi | sb)) {
                print_error("%s: between 0x%X (%g) and 0x%X (%g), sign %d: mid -> 0x%X "
                            "(want 0x%X), below -> 0x%X, above -> 0x%X\n",
                            what, lo, a, hi, b, neg, got_mid, even | sb, got_below, got_above);
                fail();
            }
        }
    }
}

static void e4m3_rne_ties(void **state)
{
    (void)state;
    check_ties("e4m3", enc_e4m3, ref_e4m3, 0x7E, 0x80);
}

static void e5m2_rne_ties(void **state)
{
    (void)state;
    check_ties("e5m2", enc_e5m2, ref_e5m2, 0x7B, 0x80);
}

static void e2m1_rne_ties(void **state)
{
    (void)state;
    check_ties("e2m1", enc_e2m1, dec_e2m1, 0x7, 0x8);
    /* the ties written out: 0.25->0, 0.75->1, 1.25->1, 1.75->2, 2.5->2, 3.5->4, 5->4 */
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(0.25f)) == 0.0f);
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(0.75f)) == 1.0f);
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(1.25f)) == 1.0f);
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(1.75f)) == 2.0f);
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(2.5f)) == 2.0f);
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(3.5f)) == 4.0f);
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(5.0f)) == 4.0f);
    assert_true(vg_e2m1_to_f32(vg_f32_to_e2m1(-5.0f)) == -4.0f);
}

static void fp16_rne_ties(void **state)
{
    (void)state;
    check_ties("fp16", enc_fp16, ref_fp16, 0x7BFF, 0x8000);
    /* written out: 1 + 2^-11 is a tie between 1 and 1 + 2^-10 -> 1 (even) */
    assert_int_equal(vg_f32_to_fp16(1.0f + 0x1p-11f), 0x3C00);
    assert_int_equal(vg_f32_to_fp16(1.0f + 3 * 0x1p-11f), 0x3C02);
    /* half the smallest subnormal is a tie with zero -> 0 */
    assert_int_equal(vg_f32_to_fp16(0x1p-25f), 0x0000);
    assert_int_equal(vg_f32_to_fp16(0x1.8p-25f), 0x0001);
}

static void bf16_rne_ties(void **state)
{
    (void)state;
    check_ties("bf16", enc_bf16, ref_bf16, 0x7F7F, 0x8000);
    assert_int_equal(vg_f32_to_bf16(1.0f + 0x1p-8f), 0x3F80);       /* tie -> even */
    assert_int_equal(vg_f32_to_bf16(1.0f + 3 * 0x1p-8f), 0x3F82);   /* tie -> even (up) */
    assert_int_equal(vg_f32_to_bf16(0x1p-134f), 0x0000);            /* half the smallest subnormal: tie -> 0 */
    assert_int_equal(vg_f32_to_bf16(0x1.8p-134f), 0x0001);
}

/* ---- saturation, overflow and NaN ------------------------------------------------------- */

static void e4m3_saturation_and_nan(void **state)
{
    (void)state;
    /* 449 and 463.9 round to 448; 464 is the tie with the would-be 480 -> 448 */
    assert_int_equal(vg_f32_to_e4m3(449.0f, 1), 0x7E);
    assert_int_equal(vg_f32_to_e4m3(463.9f, 1), 0x7E);
    assert_int_equal(vg_f32_to_e4m3(464.0f, 1), 0x7E);
    /* beyond: saturate, or NaN with the flag */
    assert_int_equal(vg_f32_to_e4m3(464.1f, 0), 0x7E);
    assert_int_equal(vg_f32_to_e4m3(464.1f, 1), 0x7F);
    assert_int_equal(vg_f32_to_e4m3(-1e30f, 0), 0xFE);
    assert_int_equal(vg_f32_to_e4m3(-1e30f, 1), 0xFF);
    assert_int_equal(vg_f32_to_e4m3(INFINITY, 0), 0x7E);
    assert_int_equal(vg_f32_to_e4m3(-INFINITY, 0), 0xFE);
    assert_int_equal(vg_f32_to_e4m3(INFINITY, 1), 0x7F);
    assert_int_equal(vg_f32_to_e4m3(NAN, 0), 0x7F);
    assert_int_equal(vg_f32_to_e4m3(-NAN, 1), 0x7F);
    /* underflow: below half the smallest subnormal -> signed zero */
    assert_int_equal(vg_f32_to_e4m3(0x1p-11f, 0), 0x00);
    assert_int_equal(vg_f32_to_e4m3(-0x1p-11f, 0), 0x80);
    assert_int_equal(vg_f32_to_e4m3(0x1p-140f, 0), 0x00); /* FP32 subnormal */
    assert_int_equal(vg_f32_to_e4m3(-0.0f, 0), 0x80);
}

static void e5m2_saturation_and_inf(void **state)
{
    (void)state;
    /* 61440 is the tie between 57344 (0x7B) and 65536 (0x7C, even): overflow */
    assert_int_equal(vg_f32_to_e5m2(61439.0f, 1), 0x7B);
    assert_int_equal(vg_f32_to_e5m2(61440.0f, 0), 0x7B);
    assert_int_equal(vg_f32_to_e5m2(61440.0f, 1), 0x7C);
    assert_int_equal(vg_f32_to_e5m2(1e6f, 0), 0x7B);
    assert_int_equal(vg_f32_to_e5m2(-1e6f, 1), 0xFC);
    assert_int_equal(vg_f32_to_e5m2(-INFINITY, 0), 0xFB);
    assert_int_equal(vg_f32_to_e5m2(-INFINITY, 1), 0xFC);
    assert_int_equal(vg_f32_to_e5m2(NAN, 0), 0x7F);
    assert_true(isnan(vg_e5m2_to_f32(vg_f32_to_e5m2(NAN, 1))));
}

static void e2m1_saturation(void **state)
{
    (void)state;
    assert_int_equal(vg_f32_to_e2m1(6.9f), 0x7);
    assert_int_equal(vg_f32_to_e2m1(7.0f), 0x7);
    assert_int_equal(vg_f32_to_e2m1(1e20f), 0x7);
    assert_int_equal(vg_f32_to_e2m1(-1e20f), 0xF);
    assert_int_equal(vg_f32_to_e2m1(INFINITY), 0x7);
    assert_int_equal(vg_f32_to_e2m1(-INFINITY), 0xF);
    assert_int_equal(vg_f32_to_e2m1(NAN), 0x7); /* documented: NaN -> +6 */
    assert_int_equal(vg_f32_to_e2m1(0.2f), 0x0);
    assert_int_equal(vg_f32_to_e2m1(-0.2f), 0x8);
}

static void e8m0_encode_rounds_up(void **state)
{
    (void)state;
    assert_int_equal(vg_f32_to_e8m0(1.0f), 127);
    assert_int_equal(vg_f32_to_e8m0(1.5f), 128);  /* not a power of two: up */
    assert_int_equal(vg_f32_to_e8m0(0.75f), 127);
    assert_int_equal(vg_f32_to_e8m0(2.0000002f), 129);
    assert_int_equal(vg_f32_to_e8m0(-4.0f), 129); /* magnitude */
    assert_int_equal(vg_f32_to_e8m0(0.0f), 0);
    assert_int_equal(vg_f32_to_e8m0((float)ldexp(1.0, -127)), 0);
    assert_int_equal(vg_f32_to_e8m0((float)ldexp(1.0, -130)), 0);
    assert_int_equal(vg_f32_to_e8m0((float)ldexp(1.5, -127)), 1);
    assert_int_equal(vg_f32_to_e8m0((float)ldexp(1.0, 127)), 254);
    assert_int_equal(vg_f32_to_e8m0(3.0e38f), 254); /* clamped */
    assert_int_equal(vg_f32_to_e8m0(INFINITY), 0xFF);
    assert_int_equal(vg_f32_to_e8m0(NAN), 0xFF);
}

static void fp16_overflow_and_nan(void **state)
{
    (void)state;
    assert_int_equal(vg_f32_to_fp16(65504.0f), 0x7BFF);
    assert_int_equal(vg_f32_to_fp16(65519.0f), 0x7BFF);
    assert_int_equal(vg_f32_to_fp16(65520.0f), 0x7C00); /* tie with 65536 -> even -> inf */
    assert_int_equal(vg_f32_to_fp16(1e6f), 0x7C00);
    assert_int_equal(vg_f32_to_fp16(-1e6f), 0xFC00);
    assert_int_equal(vg_f32_to_fp16(INFINITY), 0x7C00);
    assert_int_equal(vg_f32_to_fp16(-INFINITY), 0xFC00);
    /* NaN stays NaN (quiet), sign kept, signalling payloads too */
    uint16_t qn = vg_f32_to_fp16(NAN);
    assert_true((qn & 0x7C00) == 0x7C00 && (qn & 0x3FF) != 0);
    uint32_t snan_bits = 0xFF800001u; /* negative signalling NaN, payload in the low bit */
    float snan;
    memcpy(&snan, &snan_bits, sizeof snan);
    uint16_t sn = vg_f32_to_fp16(snan);
    assert_true((sn & 0xFC00) == 0xFC00 && (sn & 0x3FF) != 0);
    assert_int_equal(vg_f32_to_fp16(0x1p-26f), 0x0000);
    assert_int_equal(vg_f32_to_fp16(-0.0f), 0x8000);
}

static void bf16_overflow_and_nan(void **state)
{
    (void)state;
    assert_int_equal(vg_f32_to_bf16(3.4028235e38f), 0x7F80); /* FLT_MAX rounds up to inf */
    assert_int_equal(vg_f32_to_bf16(-INFINITY), 0xFF80);
    uint32_t snan_bits = 0x7F800001u; /* truncation alone would give inf */
    float snan;
    memcpy(&snan, &snan_bits, sizeof snan);
    uint16_t b = vg_f32_to_bf16(snan);
    assert_true((b & 0x7F80) == 0x7F80 && (b & 0x7F) != 0);
}

/* ---- the kernels' fast decoders --------------------------------------------------------- */

static void fast_decoders_match(void **state)
{
    (void)state;
    for (unsigned c = 0; c < 256; c++) {
        double want = ref_e4m3(c);
        if (isnan(want))
            continue;
        double got = (double)vg_fp16_to_f32(vg_e4m3_to_fp16_scaled((uint8_t)c)) * 256.0;
        assert_same_value(got, want, "e4m3 -> fp16 * 2^8", c);
    }
    for (unsigned c = 0; c < 16; c++)
        assert_same_value(vg_fp16_to_f32(vg_e2m1_to_fp16((uint8_t)c)), dec_e2m1(c),
                          "e2m1 -> fp16", c);
}

/* ---- AWQ packing ----------------------------------------------------------------------- */

static void awq_pack_order(void **state)
{
    (void)state;
    uint8_t v[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    /* nibble j holds logical element {0,2,4,6,1,3,5,7}[j]: nibbles from the low
     * end read 0,2,4,6,1,3,5,7 */
    assert_int_equal(vg_awq_pack8(v), 0x75316420u);
    for (int i = 0; i < 8; i++)
        assert_int_equal(vg_awq_unpack(0x75316420u, i), i);
    /* logical element 1 is in nibble 4, element 4 in nibble 2 */
    assert_int_equal(vg_awq_unpack(0x000F0000u, 1), 15);
    assert_int_equal(vg_awq_unpack(0x00000F00u, 4), 15);
    assert_int_equal(vg_awq_unpack(0x00000F00u, 2), 0);
}

static void awq_pack_round_trip(void **state)
{
    (void)state;
    uint32_t seed = 12345u;
    for (int t = 0; t < 10000; t++) {
        uint8_t v[8];
        for (int i = 0; i < 8; i++) {
            seed = seed * 1664525u + 1013904223u;
            v[i] = (uint8_t)(seed >> 28);
        }
        uint32_t w = vg_awq_pack8(v);
        for (int i = 0; i < 8; i++)
            assert_int_equal(vg_awq_unpack(w, i), v[i]);
    }
    uint8_t high[8] = {0xF3, 0x10, 0, 0, 0, 0, 0, 0}; /* only low nibbles are packed */
    assert_int_equal(vg_awq_pack8(high), 0x3u);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(e4m3_all_codes_decode),
        cmocka_unit_test(e5m2_all_codes_decode),
        cmocka_unit_test(e2m1_all_codes_decode),
        cmocka_unit_test(e8m0_codes_decode),
        cmocka_unit_test(fp16_all_codes_decode),
        cmocka_unit_test(bf16_all_codes_decode),
        cmocka_unit_test(e4m3_round_trip),
        cmocka_unit_test(e5m2_round_trip),
        cmocka_unit_test(e2m1_round_trip),
        cmocka_unit_test(e8m0_round_trip),
        cmocka_unit_test(fp16_round_trip),
        cmocka_unit_test(bf16_round_trip),
        cmocka_unit_test(e4m3_rne_ties),
        cmocka_unit_test(e5m2_rne_ties),
        cmocka_unit_test(e2m1_rne_ties),
        cmocka_unit_test(fp16_rne_ties),
        cmocka_unit_test(bf16_rne_ties),
        cmocka_unit_test(e4m3_saturation_and_nan),
        cmocka_unit_test(e5m2_saturation_and_inf),
        cmocka_unit_test(e2m1_saturation),
        cmocka_unit_test(e8m0_encode_rounds_up),
        cmocka_unit_test(fp16_overflow_and_nan),
        cmocka_unit_test(bf16_overflow_and_nan),
        cmocka_unit_test(fast_decoders_match),
        cmocka_unit_test(awq_pack_order),
        cmocka_unit_test(awq_pack_round_trip),
    };
    return VGTEST_MAIN("formats", tests);
}
