/* The clock and the median shared by the backends' timers, the tuner's
 * dispatch timing and the benchmarks: one monotonic clock and one median,
 * so every figure they print is measured and summarised the same way. */
#ifndef VOLTGATE_KERNELS_TIMING_H
#define VOLTGATE_KERNELS_TIMING_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" { /* the CUDA sources (kernels/cuda/) use them too */
#endif

/* The most repetitions one timing may take (stack arrays). */
#define VG_TIMING_MAX_REPS 1024

/* Microseconds on CLOCK_MONOTONIC: only differences mean anything (it never
 * jumps with the wall clock, so an interval cannot come out negative). */
double vg_now_us(void);

/* Median of n samples (n >= 1); sorts a copy, leaves `samples` as is.
 * For an even n, the mean of the two middle values. */
double vg_median(const double *samples, size_t n);

#ifdef __cplusplus
}
#endif

#endif
