/* golden/sha256.c against the FIPS 180-2 test vectors, and golden/prng.c
 * against the published splitmix64 / xoshiro256** outputs. */
#include "vgtest.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "prng.h"
#include "sha256.h"

static void check(const void *data, size_t len, const char *want)
{
    char hex[65];
    vg_sha256_hex(data, len, hex);
    assert_string_equal(hex, want);
}

/* FIPS 180-2 appendix B.1: "abc" */
static void test_sha256_abc(void **state)
{
    (void)state;
    check("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

/* the empty message */
static void test_sha256_empty(void **state)
{
    (void)state;
    check("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* FIPS 180-2 appendix B.2: the 448-bit two-block message */
static void test_sha256_two_blocks(void **state)
{
    (void)state;
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    check(m, strlen(m), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

/* FIPS 180-2 appendix B.3: one million 'a', fed in uneven pieces so that
 * the streaming path's block carry-over is exercised */
static void test_sha256_million_a_streamed(void **state)
{
    (void)state;
    char *m = malloc(1000000);
    assert_non_null(m);
    memset(m, 'a', 1000000);
    check(m, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    vg_sha256_ctx c;
    vg_sha256_init(&c);
    size_t done = 0, step = 1;
    while (done < 1000000) {
        size_t take = step < 1000000 - done ? step : 1000000 - done;
        vg_sha256_update(&c, m + done, take);
        done += take;
        step = step * 7 % 193 + 1; /* 1, 8, 57, ... pieces of every length mod 64 */
    }
    uint8_t d[32];
    char hex[65];
    vg_sha256_final(&c, d);
    vg_sha256_to_hex(d, hex);
    assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(m);
}

/* lengths around the padding boundary (55, 56, 63, 64 bytes) differ */
static void test_sha256_padding_edges(void **state)
{
    (void)state;
    char buf[130];
    memset(buf, 'x', sizeof buf);
    char prev[65] = "", hex[65];
    for (size_t len = 54; len <= 66; len++) {
        vg_sha256_hex(buf, len, hex);
        assert_string_not_equal(hex, prev);
        strcpy(prev, hex);
    }
    /* 64 'x': cross-checked with coreutils sha256sum */
    check(buf, 64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c");
}

/* splitmix64 from state 0: the reference implementation's first outputs */
static void test_splitmix64_reference(void **state)
{
    (void)state;
    uint64_t s = 0;
    assert_true(vg_splitmix64(&s) == 0xe220a8397b1dcdafull);
    assert_true(vg_splitmix64(&s) == 0x6e789e6aa1b965f4ull);
    assert_true(vg_splitmix64(&s) == 0x06c45d188009454full);
}

/* xoshiro256** from state {1, 2, 3, 4} */
static void test_xoshiro_reference(void **state)
{
    (void)state;
    vg_rng r;
    r.s[0] = 1;
    r.s[1] = 2;
    r.s[2] = 3;
    r.s[3] = 4;
    r.have_spare = 0;
    assert_true(vg_rng_u64(&r) == 11520ull);
    assert_true(vg_rng_u64(&r) == 0ull);
    assert_true(vg_rng_u64(&r) == 1509978240ull);
    assert_true(vg_rng_u64(&r) == 1215971899390074240ull);
}

/* The normals are standard: mean, variance and tails of 200000 draws. */
static void test_normal_moments(void **state)
{
    (void)state;
    vg_rng r;
    vg_rng_seed(&r, 42, vg_rng_stream("test"));
    double s1 = 0, s2 = 0;
    int beyond3 = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double z = vg_rng_normal(&r);
        s1 += z;
        s2 += z * z;
        beyond3 += fabs(z) > 3.0;
    }
    double mean = s1 / n, var = s2 / n - mean * mean;
    vgtest_assert_near(mean, 0.0, 0.01);
    vgtest_assert_near(var, 1.0, 0.02);
    /* P(|z| > 3) = 0.0027 */
    vgtest_assert_near(beyond3 / (double)n, 0.0027, 0.0006);
}

/* the portable exp agrees with libm closely (it only needs to be
 * reproducible, but a wrong one would skew the distribution) */
static void test_portable_exp(void **state)
{
    (void)state;
    for (double x = -20.0; x <= 20.0; x += 0.173)
        vgtest_assert_near(vg_portable_exp(x) / exp(x), 1.0, 1e-14);
}

/* the same seed and stream give the same numbers; another stream does not */
static void test_streams(void **state)
{
    (void)state;
    vg_rng a, b, c;
    vg_rng_seed(&a, 7, vg_rng_stream("weight"));
    vg_rng_seed(&b, 7, vg_rng_stream("weight"));
    vg_rng_seed(&c, 7, vg_rng_stream("x/m001"));
    int same_c = 0;
    for (int i = 0; i < 100; i++) {
        uint64_t va = vg_rng_u64(&a);
        assert_true(va == vg_rng_u64(&b));
        same_c += va == vg_rng_u64(&c);
    }
    assert_int_equal(same_c, 0);
    for (int i = 0; i < 1000; i++)
        assert_true(vg_rng_below(&a, 13) < 13);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sha256_abc),
        cmocka_unit_test(test_sha256_empty),
        cmocka_unit_test(test_sha256_two_blocks),
        cmocka_unit_test(test_sha256_million_a_streamed),
        cmocka_unit_test(test_sha256_padding_edges),
        cmocka_unit_test(test_splitmix64_reference),
        cmocka_unit_test(test_xoshiro_reference),
        cmocka_unit_test(test_normal_moments),
        cmocka_unit_test(test_portable_exp),
        cmocka_unit_test(test_streams),
    };
    return VGTEST_MAIN("golden_sha256", tests);
}
