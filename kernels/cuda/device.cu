/*
 * CUDA device utilities behind kernels.h, so that no C file outside
 * kernels/cuda/ includes the CUDA runtime: device count and arch, memory,
 * copies, synchronization, capture state, and the plan timer.
 */
#include <cuda_runtime.h>

#include <mutex>

#include <stdlib.h>

#include "kernels.h"

static vg_status cuda_fail(cudaError_t e, const char *what)
{
    return vg_fail(VG_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
}

extern "C" {

vg_status vg_cuda_device_count(int *count)
{
    if (!count)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda device count: NULL argument");
    *count = 0;
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n <= 0) {
        (void)cudaGetLastError(); /* clear the sticky "no device" */
        return vg_fail(VG_ERR_NO_DEVICE, "no CUDA device: %s",
                       e != cudaSuccess ? cudaGetErrorString(e) : "none found");
    }
    *count = n;
    return VG_OK;
}

vg_status vg_cuda_device_arch(int ordinal, int *arch)
{
    if (!arch)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda device arch: NULL argument");
    int major = 0, minor = 0;
    cudaError_t e = cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, ordinal);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, ordinal);
    if (e != cudaSuccess)
        return vg_fail(VG_ERR_NO_DEVICE, "cuda device %d: %s", ordinal, cudaGetErrorString(e));
    *arch = major * 10 + minor;
    return VG_OK;
}

vg_status vg_cuda_set_device(int ordinal)
{
    cudaError_t e = cudaSetDevice(ordinal);
    if (e != cudaSuccess)
        return vg_fail(VG_ERR_NO_DEVICE, "cuda device %d: %s", ordinal, cudaGetErrorString(e));
    return VG_OK;
}

vg_status vg_cuda_alloc(size_t bytes, void **ptr)
{
    if (!ptr)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda alloc: NULL argument");
    *ptr = NULL;
    cudaError_t e = cudaMalloc(ptr, bytes ? bytes : 1);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *ptr = NULL;
        return vg_fail(VG_ERR_NO_MEMORY, "cuda alloc of %zu bytes: %s", bytes,
                       cudaGetErrorString(e));
    }
    return VG_OK;
}

vg_status vg_cuda_free(void *ptr)
{
    if (!ptr)
        return VG_OK;
    cudaError_t e = cudaFree(ptr);
    return e == cudaSuccess ? VG_OK : cuda_fail(e, "cuda free");
}

vg_status vg_cuda_copy_to_device(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return VG_OK;
    if (!dst || !src)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda copy to device: NULL pointer");
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice);
    return e == cudaSuccess ? VG_OK : cuda_fail(e, "cuda copy to device");
}

vg_status vg_cuda_copy_to_host(void *dst, const void *src, size_t bytes)
{
    if (bytes == 0)
        return VG_OK;
    if (!dst || !src)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda copy to host: NULL pointer");
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost);
    return e == cudaSuccess ? VG_OK : cuda_fail(e, "cuda copy to host");
}

vg_status vg_cuda_synchronize(void *stream)
{
    cudaError_t e = stream ? cudaStreamSynchronize(static_cast<cudaStream_t>(stream))
                           : cudaDeviceSynchronize();
    return e == cudaSuccess ? VG_OK : cuda_fail(e, "cuda synchronize");
}

vg_status vg_cuda_stream_capturing(void *stream, int *capturing)
{
    if (!capturing)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda stream capturing: NULL argument");
    cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &cs);
    if (e != cudaSuccess) {
        *capturing = 0;
        return cuda_fail(e, "cuda stream capturing");
    }
    *capturing = cs != cudaStreamCaptureStatusNone;
    return VG_OK;
}

static int cmp_float(const void *a, const void *b)
{
    float x = *static_cast<const float *>(a), y = *static_cast<const float *>(b);
    return x < y ? -1 : x > y;
}

/* A device buffer twice the L2 size, written before each timed rep so that
 * the weights come from DRAM as they do in a serving step (a weight that
 * stayed in L2 favours plans that lose from DRAM).  Made once, kept for the
 * process; NULL (no flush) when it cannot be made. */
static void *l2_flush_buffer(size_t *bytes)
{
    static void *buf = NULL;
    static size_t size = 0;
    static std::once_flag once;
    std::call_once(once, [] {
        int dev = 0, l2 = 0;
        if (cudaGetDevice(&dev) != cudaSuccess ||
            cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess || l2 <= 0)
            return;
        if (cudaMalloc(&buf, 2 * (size_t)l2) != cudaSuccess) {
            (void)cudaGetLastError();
            buf = NULL;
            return;
        }
        size = 2 * (size_t)l2;
    });
    *bytes = size;
    return buf;
}

/* Each rep is timed by its own event pair on the call's stream, after an L2
 * flush outside the pair; the median of the reps is returned.  Refused while the stream is capturing (events
 * could not be read and the launches would land in the graph). */
vg_status vg_cuda_time_plan(const vg_plan *p, const vg_gemm_args *a, int warmup, int reps,
                            double *median_us)
{
    if (!p || !a || !median_us || reps < 1 || warmup < 0)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda time plan: bad arguments");
    int capturing = 0;
    vg_status st = vg_cuda_stream_capturing(a->stream, &capturing);
    if (st != VG_OK)
        return st;
    if (capturing)
        return vg_fail(VG_ERR_STATE, "cuda time plan: the stream is capturing a graph");
    cudaStream_t s = static_cast<cudaStream_t>(a->stream);
    for (int i = 0; i < warmup; i++)
        if ((st = vg_cuda_gemm(p, a)) != VG_OK)
            return st;
    cudaEvent_t *ev = static_cast<cudaEvent_t *>(calloc((size_t)reps * 2, sizeof(cudaEvent_t)));
    float *ms = static_cast<float *>(calloc((size_t)reps, sizeof(float)));
    if (!ev || !ms) {
        free(ev);
        free(ms);
        return vg_fail(VG_ERR_NO_MEMORY, "cuda time plan: %d reps", reps);
    }
    size_t flush_bytes = 0;
    void *flush = l2_flush_buffer(&flush_bytes);
    cudaError_t e = cudaSuccess;
    int made = 0;
    for (; made < reps * 2 && e == cudaSuccess; made++)
        e = cudaEventCreate(&ev[made]);
    if (e != cudaSuccess)
        made--;
    for (int i = 0; i < reps && e == cudaSuccess && st == VG_OK; i++) {
        if (flush)
            e = cudaMemsetAsync(flush, i & 0xFF, flush_bytes, s);
        if (e == cudaSuccess)
            e = cudaEventRecord(ev[2 * i], s);
        if (e == cudaSuccess)
            st = vg_cuda_gemm(p, a);
        if (e == cudaSuccess && st == VG_OK)
            e = cudaEventRecord(ev[2 * i + 1], s);
    }
    if (e == cudaSuccess && st == VG_OK)
        e = cudaEventSynchronize(ev[2 * reps - 1]);
    for (int i = 0; i < reps && e == cudaSuccess && st == VG_OK; i++)
        e = cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]);
    if (e == cudaSuccess && st == VG_OK) {
        qsort(ms, (size_t)reps, sizeof(float), cmp_float);
        *median_us = reps % 2 ? 1e3 * ms[reps / 2] : 0.5e3 * (ms[reps / 2 - 1] + ms[reps / 2]);
    }
    for (int i = 0; i < made; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    if (st != VG_OK)
        return st;
    return e == cudaSuccess ? VG_OK : cuda_fail(e, "cuda time plan");
}

} /* extern "C" */
