/* xoshiro256** 1.0 and splitmix64, public-domain algorithms by David
 * Blackman and Sebastiano Vigna (prng.di.unimi.it), re-typed here. */
#include "prng.h"

#include <math.h>

uint64_t vg_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void vg_rng_seed(vg_rng *r, uint64_t seed, uint64_t stream)
{
    uint64_t st = seed ^ (stream * 0xd1342543de82ef95ull);
    for (int i = 0; i < 4; i++)
        r->s[i] = vg_splitmix64(&st);
    r->have_spare = 0;
    r->spare = 0.0;
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t vg_rng_u64(vg_rng *r)
{
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double vg_rng_uniform(vg_rng *r)
{
    return (double)(vg_rng_u64(r) >> 11) * 0x1.0p-53;
}

uint64_t vg_rng_below(vg_rng *r, uint64_t n)
{
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t v;
    do
        v = vg_rng_u64(r);
    while (v >= limit);
    return v % n;
}

/* Natural log from +, *, / only (frexp and ldexp are exact), so that the
 * Gaussians do not depend on the libm of the machine: the same seed must
 * give the same weights on the CI runner and on the GPU machine.  Not
 * correctly rounded (about 1e-16 relative error), only reproducible. */
static double portable_log(double x)
{
    int e;
    double m = frexp(x, &e); /* x = m * 2^e, m in [0.5, 1) */
    if (m < 0.70710678118654752440) {
        m *= 2.0;
        e -= 1;
    }
    /* log m = 2 atanh(s) = 2 s (1 + s^2/3 + s^4/5 + ...), |s| <= 0.1716,
     * s^2 <= 0.0295: 11 terms leave less than 1e-17 */
    double s = (m - 1.0) / (m + 1.0), s2 = s * s;
    double sum = 1.0 / 21.0;
    static const double inv_odd[10] = {1.0 / 19.0, 1.0 / 17.0, 1.0 / 15.0, 1.0 / 13.0,
                                       1.0 / 11.0, 1.0 / 9.0,  1.0 / 7.0,  1.0 / 5.0,
                                       1.0 / 3.0,  1.0};
    for (int i = 0; i < 10; i++)
        sum = sum * s2 + inv_odd[i];
    sum *= s;
    return 2.0 * sum + (double)e * 0.69314718055994530942;
}

double vg_portable_exp(double x)
{
    /* x = k ln2 + r, |r| <= ln2/2; exp(r) by its Taylor series */
    double kf = floor(x / 0.69314718055994530942 + 0.5);
    double r = x - kf * 0.69314718055994530942;
    double term = 1.0, sum = 1.0;
    for (int i = 1; i <= 20; i++) {
        term *= r / (double)i;
        sum += term;
    }
    return ldexp(sum, (int)kf);
}

/* Marsaglia's polar method: only sqrt (correctly rounded by IEEE 754) and
 * portable_log, no sin/cos. */
double vg_rng_normal(vg_rng *r)
{
    if (r->have_spare) {
        r->have_spare = 0;
        return r->spare;
    }
    double u, v, s;
    do {
        u = 2.0 * vg_rng_uniform(r) - 1.0;
        v = 2.0 * vg_rng_uniform(r) - 1.0;
        s = u * u + v * v;
    } while (s >= 1.0 || s == 0.0);
    double f = sqrt(-2.0 * portable_log(s) / s);
    r->spare = v * f;
    r->have_spare = 1;
    return u * f;
}

uint64_t vg_rng_stream(const char *name)
{
    /* FNV-1a, 64 bit */
    uint64_t h = 0xcbf29ce484222325ull;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++)
        h = (h ^ *p) * 0x100000001b3ull;
    return h;
}
