/*
 * The cpu backend: the kernels of kernels/cpu/ on host memory.  Launches
 * are synchronous, there is no stream and nothing ever captures; the timer
 * is CLOCK_MONOTONIC around each launch, and the median of the repetitions
 * is the plan's time (a launch over 20 ms is timed once: see
 * cpu_time_plan).
 */
#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "kernels.h"
#include "timing.h"

static vg_status cpu_open(int ordinal, void **ctx, int *arch)
{
    if (ordinal != 0)
        return vg_fail(VG_ERR_NOT_FOUND, "cpu backend: device %d does not exist (only 0)",
                       ordinal);
    *ctx = NULL;
    *arch = 0;
    return VG_OK;
}

static void cpu_close(void *ctx) { (void)ctx; }

static vg_status cpu_launch(void *ctx, const vg_plan *p, const vg_gemm_args *a)
{
    (void)ctx;
    return vg_cpu_gemm(p, a);
}

/* A launch longer than this is timed once (see cpu_time_plan). */
#define VG_CPU_LONG_LAUNCH_US 20000.0

static vg_status cpu_time_plan(void *ctx, const vg_plan *p, const vg_gemm_args *a, int warmup,
                               int reps, double *median_us, vg_timer_info *how)
{
    (void)ctx;
    *how = (vg_timer_info){"host", 0};
    if (reps < 1 || reps > VG_TIMING_MAX_REPS)
        return vg_fail(VG_ERR_INVALID_ARG, "cpu time_plan: reps %d out of 1..%d", reps,
                       VG_TIMING_MAX_REPS);
    for (int i = 0; i < warmup; i++) {
        double t0 = vg_now_us();
        vg_status st = vg_cpu_gemm(p, a);
        if (st != VG_OK)
            return st;
        /* A launch this long is its own warm-up (its working set is far
         * beyond the caches, and scheduling noise is a small fraction of
         * it): its time is the sample.  This keeps a measurement of a
         * full-size layer on 2 cores at one launch per candidate. */
        double took = vg_now_us() - t0;
        if (i == 0 && took > VG_CPU_LONG_LAUNCH_US) {
            *median_us = took;
            return VG_OK;
        }
    }
    double samples[VG_TIMING_MAX_REPS];
    for (int i = 0; i < reps; i++) {
        double t0 = vg_now_us();
        vg_status st = vg_cpu_gemm(p, a);
        if (st != VG_OK)
            return st;
        samples[i] = vg_now_us() - t0;
    }
    *median_us = vg_median(samples, (size_t)reps);
    return VG_OK;
}

static int cpu_capturing(void *ctx, void *stream)
{
    (void)ctx; (void)stream;
    return 0;
}

static vg_status cpu_alloc(void *ctx, size_t bytes, void **ptr)
{
    (void)ctx;
    /* 64-byte aligned, rounded up so aligned_alloc's size rule holds. */
    size_t size = (bytes + 63) & ~(size_t)63;
    *ptr = aligned_alloc(64, size ? size : 64);
    if (!*ptr)
        return vg_fail(VG_ERR_NO_MEMORY, "cpu backend: cannot allocate %zu bytes", bytes);
    return VG_OK;
}

static void cpu_free(void *ctx, void *ptr)
{
    (void)ctx;
    free(ptr);
}

static vg_status cpu_copy(void *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes)
        memcpy(dst, src, bytes);
    return VG_OK;
}

static vg_status cpu_sync(void *ctx, void *stream)
{
    (void)ctx; (void)stream;
    return VG_OK;
}

const vg_backend_ops vg_backend_cpu = {
    .name = "cpu",
    .open = cpu_open,
    .close = cpu_close,
    .plan_count = vg_cpu_plan_count,
    .plan_at = vg_cpu_plan_at,
    .heuristic = vg_cpu_heuristic,
    .heuristic_native = vg_cpu_heuristic_native,
    .workspace_bytes = vg_cpu_workspace_bytes,
    .launch = cpu_launch,
    .time_plan = cpu_time_plan,
    .stream_capturing = cpu_capturing,
    .alloc = cpu_alloc,
    .free = cpu_free,
    .copy_to_device = cpu_copy,
    .copy_to_host = cpu_copy,
    .synchronize = cpu_sync,
};
