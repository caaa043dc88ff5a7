/*
 * The golden generator's random numbers: xoshiro256** seeded through
 * splitmix64 (Blackman and Vigna), Gaussians by Marsaglia's polar method.  Never rand():
 * the same seed must give the same bytes on every libc and every machine.
 * Only integer arithmetic, +, -, *, /, sqrt and exact frexp are used (no
 * libm log/sin/cos), so results do not depend on the machine's libm.
 */
#ifndef VOLTGATE_GOLDEN_PRNG_H
#define VOLTGATE_GOLDEN_PRNG_H

#include <stdint.h>

typedef struct vg_rng {
    uint64_t s[4];
    int have_spare;      /* the polar method makes two normals per draw */
    double spare;
} vg_rng;

uint64_t vg_splitmix64(uint64_t *state);
/* Seeds from (seed, stream): distinct streams are independent sequences. */
void vg_rng_seed(vg_rng *r, uint64_t seed, uint64_t stream);
uint64_t vg_rng_u64(vg_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double vg_rng_uniform(vg_rng *r);
/* Uniform integer in [0, n), n > 0 (rejection, no modulo bias). */
uint64_t vg_rng_below(vg_rng *r, uint64_t n);
/* Standard normal. */
double vg_rng_normal(vg_rng *r);
/* exp(x) from +, *, / and exact ldexp, reproducible on every libm; for
 * |x| < 700. */
double vg_portable_exp(double x);
/* A stream id from a short name, so callers can write vg_rng_stream("x/m064"). */
uint64_t vg_rng_stream(const char *name);

#endif
