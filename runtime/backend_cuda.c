/*
 * The cuda backend over the vg_cuda_* entry points of kernels/kernels.h.
 * Pure C: the CUDA runtime is only ever touched inside kernels/cuda/.  In a
 * CPU-only build every vg_cuda_* call returns VG_ERR_NO_DEVICE, so open()
 * fails cleanly and nothing else is reached.
 *
 * The context remembers the ordinal; each call that touches memory or
 * launches first makes it the current device, so one process may hold
 * devices of several ordinals.
 */
#include <stdlib.h>

#include "backend.h"
#include "kernels.h"

typedef struct cuda_ctx {
    int ordinal;
} cuda_ctx;

static vg_status cuda_open(int ordinal, void **ctx, int *arch)
{
    int count = 0;
    vg_status st = vg_cuda_device_count(&count);
    if (st != VG_OK)
        return st;
    if (ordinal < 0 || ordinal >= count)
        return vg_fail(VG_ERR_NO_DEVICE, "cuda backend: device %d does not exist (%d present)",
                       ordinal, count);
    if ((st = vg_cuda_device_arch(ordinal, arch)) != VG_OK)
        return st;
    if ((st = vg_cuda_set_device(ordinal)) != VG_OK)
        return st;
    if ((st = vg_cuda_plan_table_check()) != VG_OK)
        return st;
    /* Loads cuBLAS (once per process) and makes the device's first handle
     * now, outside any capture; where cuBLAS does not load or start, the
     * dequantize + cuBLAS plans are not offered (the heuristic skips them;
     * the trace says why on a vg-trace-offer line when it opens, and on a
     * vg-trace-candidate line of every measurement). */
    int blas = 0;
    const char *why = NULL;
    (void)vg_cuda_blas_prepare(&blas, &why);
    cuda_ctx *c = malloc(sizeof *c);
    if (!c)
        return vg_fail(VG_ERR_NO_MEMORY, "cuda backend: out of memory");
    c->ordinal = ordinal;
    *ctx = c;
    return VG_OK;
}

static void cuda_close(void *ctx) { free(ctx); }

static vg_status current(void *ctx) { return vg_cuda_set_device(((cuda_ctx *)ctx)->ordinal); }

static vg_status cuda_launch(void *ctx, const vg_plan *p, const vg_gemm_args *a)
{
    vg_status st = current(ctx);
    return st != VG_OK ? st : vg_cuda_gemm(p, a);
}

static vg_status cuda_time_plan(void *ctx, const vg_plan *p, const vg_gemm_args *a, int warmup,
                                int reps, double *median_us, vg_timer_info *how)
{
    how->copies = 0;
    vg_status st = current(ctx);
    if (st == VG_OK)
        st = vg_cuda_time_plan(p, a, warmup, reps, median_us, &how->copies);
    how->clock = how->copies > 0 ? "graph" : "flush";
    return st;
}

static int cuda_capturing(void *ctx, void *stream)
{
    int capturing = 0;
    if (current(ctx) != VG_OK || vg_cuda_stream_capturing(stream, &capturing) != VG_OK)
        return 0;
    return capturing;
}

static vg_status cuda_alloc(void *ctx, size_t bytes, void **ptr)
{
    vg_status st = current(ctx);
    return st != VG_OK ? st : vg_cuda_alloc(bytes, ptr);
}

static void cuda_free(void *ctx, void *ptr)
{
    if (ptr && current(ctx) == VG_OK)
        vg_cuda_free(ptr);
}

static vg_status cuda_to_device(void *ctx, void *dst, const void *src, size_t bytes)
{
    vg_status st = current(ctx);
    return st != VG_OK ? st : vg_cuda_copy_to_device(dst, src, bytes);
}

static vg_status cuda_to_host(void *ctx, void *dst, const void *src, size_t bytes)
{
    vg_status st = current(ctx);
    return st != VG_OK ? st : vg_cuda_copy_to_host(dst, src, bytes);
}

static int cuda_plan_offered(void *ctx, const vg_plan *p, const char **why)
{
    if (current(ctx) != VG_OK) {
        if (why)
            *why = "the device cannot be made current";
        return 0;
    }
    return vg_cuda_plan_offered(p, why);
}

static vg_status cuda_sync(void *ctx, void *stream)
{
    vg_status st = current(ctx);
    return st != VG_OK ? st : vg_cuda_synchronize(stream);
}

const vg_backend_ops vg_backend_cuda = {
    .name = "cuda",
    .open = cuda_open,
    .close = cuda_close,
    .plan_count = vg_cuda_plan_count,
    .plan_at = vg_cuda_plan_at,
    .heuristic = vg_cuda_heuristic,
    .heuristic_native = vg_cuda_heuristic_native,
    .routing_plan = vg_cuda_routing_plan,
    .workspace_bytes = vg_cuda_workspace_bytes,
    .launch = cuda_launch,
    .time_plan = cuda_time_plan,
    .stream_capturing = cuda_capturing,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .copy_to_device = cuda_to_device,
    .copy_to_host = cuda_to_host,
    .synchronize = cuda_sync,
    .library_version = vg_cuda_blas_version,
    .plan_offered = cuda_plan_offered,
};
