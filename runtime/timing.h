/* Small statistics shared by the backends' timers and the benchmarks. */
#ifndef VOLTGATE_RUNTIME_TIMING_H
#define VOLTGATE_RUNTIME_TIMING_H

#include <stddef.h>

/* The most repetitions one timing may take (stack arrays). */
#define VG_TIMING_MAX_REPS 1024

/* Median of n samples (n >= 1); sorts a copy, leaves `samples` as is.
 * For an even n, the mean of the two middle values. */
double vg_median(const double *samples, size_t n);

#endif
