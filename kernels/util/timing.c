/* The monotonic clock and the median of timing samples (see timing.h). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "timing.h"

double vg_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double vg_median(const double *samples, size_t n)
{
    if (n == 0)
        return 0.0;
    double stack_copy[64];
    double *v = n <= 64 ? stack_copy : malloc(n * sizeof *v);
    if (!v)
        return samples[0];
    memcpy(v, samples, n * sizeof *v);
    qsort(v, n, sizeof *v, cmp_double);
    double m = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    if (v != stack_copy)
        free(v);
    return m;
}
