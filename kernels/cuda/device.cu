/*
 * CUDA device utilities behind kernels.h, so that no C file outside
 * kernels/cuda/ includes the CUDA runtime: device count and arch, memory,
 * copies, synchronization, capture state, and the plan timer.
 */
#include <cuda_runtime.h>

#include <mutex>

#include <stdint.h>
#include <stdlib.h>

#include "kernels.h"
#include "timing.h"

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

static int device_l2_bytes(void)
{
    int dev = 0, l2 = 0;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev) != cudaSuccess || l2 <= 0) {
        (void)cudaGetLastError();
        return 0;
    }
    return l2;
}

/* A device buffer twice the L2 size, written before each timed launch of
 * the fallback timer so that the weights come from DRAM.  Made once, kept
 * for the process; NULL (no flush) when it cannot be made. */
static void *l2_flush_buffer(size_t *bytes)
{
    static void *buf = NULL;
    static size_t size = 0;
    static std::once_flag once;
    std::call_once(once, [] {
        int l2 = device_l2_bytes();
        if (l2 <= 0)
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

static size_t round_up_256(size_t n) { return (n + 255) & ~(size_t)255; }

/* Copies of one call's weights (codes, scales, zeros), enough of them that
 * together they hold three times the L2: a launch on copy i finds nothing of
 * copy i in L2 because the launches before it read the others, as a layer
 * of a serving step finds its weights (the layers between evicted them).
 * At most MAX_WEIGHT_COPIES: weights under 3 x L2 / 64 (2.8 MB on an H200)
 * are partly timed from L2.  count 1 means the weights alone are that
 * large: no copies, the caller's.  Each buffer keeps its address modulo 256
 * in the copy, so the kernels take the same vector or byte load paths as on
 * the caller's pointers. */
struct weight_copies {
    void *pool;
    int count;
    size_t q_bytes, scale_bytes, zero_bytes;
    size_t q_at, scale_at, zero_at, stride; /* offsets inside one copy */
};

enum { MAX_WEIGHT_COPIES = 64 };

static size_t misalign(const void *p) { return (size_t)((uintptr_t)p & 255); }

static vg_status weight_copies_make(const vg_gemm_args *a, cudaStream_t s, weight_copies *wc)
{
    *wc = weight_copies{};
    wc->count = 1;
    vg_weight_layout lay;
    vg_status st = vg_weight_layout_of(a->w.family, a->w.n, a->w.k, &lay);
    if (st != VG_OK)
        return st;
    size_t groups = a->w.groups > 0 ? (size_t)a->w.groups : 1;
    wc->q_bytes = lay.q_bytes * groups;
    wc->scale_bytes = a->w.scale ? lay.scale_bytes * groups : 0;
    wc->zero_bytes = a->w.zero ? lay.zero_bytes * groups : 0;
    const size_t q_room = round_up_256(misalign(a->w.q) + wc->q_bytes);
    const size_t scale_room = round_up_256(misalign(a->w.scale) + wc->scale_bytes);
    wc->q_at = misalign(a->w.q);
    wc->scale_at = q_room + misalign(a->w.scale);
    wc->zero_at = q_room + scale_room + misalign(a->w.zero);
    wc->stride = q_room + scale_room + round_up_256(misalign(a->w.zero) + wc->zero_bytes);
    size_t want = 3 * (size_t)device_l2_bytes();
    size_t count = wc->stride ? (want + wc->stride - 1) / wc->stride : 1;
    if (count <= 1)
        return VG_OK;
    if (count > MAX_WEIGHT_COPIES)
        count = MAX_WEIGHT_COPIES;
    cudaError_t e = cudaMalloc(&wc->pool, count * wc->stride);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        wc->pool = NULL;
        return vg_fail(VG_ERR_NO_MEMORY, "cuda time plan: %zu weight copies of %zu bytes: %s",
                       count, wc->stride, cudaGetErrorString(e));
    }
    wc->count = (int)count;
    char *base = static_cast<char *>(wc->pool);
    for (size_t i = 0; i < count && e == cudaSuccess; i++, base += wc->stride) {
        e = cudaMemcpyAsync(base + wc->q_at, a->w.q, wc->q_bytes, cudaMemcpyDeviceToDevice, s);
        if (e == cudaSuccess && wc->scale_bytes)
            e = cudaMemcpyAsync(base + wc->scale_at, a->w.scale, wc->scale_bytes,
                                cudaMemcpyDeviceToDevice, s);
        if (e == cudaSuccess && wc->zero_bytes)
            e = cudaMemcpyAsync(base + wc->zero_at, a->w.zero, wc->zero_bytes,
                                cudaMemcpyDeviceToDevice, s);
    }
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* or the fallback's launches would report it */
        return cuda_fail(e, "cuda time plan: weight copies");
    }
    return VG_OK;
}

/* The weights of launch i: copy i % count, or the caller's. */
static void weight_copies_point(const weight_copies *wc, int i, vg_gemm_args *b)
{
    if (!wc->pool)
        return;
    char *base = static_cast<char *>(wc->pool) + (size_t)(i % wc->count) * wc->stride;
    b->w.q = base + wc->q_at;
    b->w.scale = wc->scale_bytes ? base + wc->scale_at : b->w.scale;
    b->w.zero = wc->zero_bytes ? base + wc->zero_at : b->w.zero;
}

/* The median of n event timings (cudaEventElapsedTime's floats, held as
 * doubles) by vg_median (timing.h), rounded back to float so that the
 * figure is, bit for bit, the one of the float median (qsort of the floats,
 * 0.5f * (a + b) for an even n) this replaced.  Same order, same
 * convention (the mean of the two middle samples for an even n); only the
 * mean's precision differed: for timings a >= b >= 0 with b >= a / 2^28,
 * a + b is exact in double, and halving then rounding to float gives
 * 0.5f * (a + b); for b < a / 2^28 (never, for two timings of one plan), b
 * is under a sixteenth of a's float ulp and both give 0.5f * a. */
static double median_ms(const double *ms, int n)
{
    return (double)(float)vg_median(ms, (size_t)n);
}

/* Back to back, as `voltgate bench` times a row and as a serving step runs
 * its layers: a CUDA graph of one launch per weight copy (at least two), on
 * a private stream (the caller's may be the legacy stream, which cannot
 * capture) ordered after the caller's work; a sample is one replay's time
 * over its launches.  Timing one launch after an L2 flush instead (the
 * fallback below) ranked plans differently from the bench: on the H200 it
 * picked plans 10-50 % slower back to back than the heuristic's in 8 of 54
 * rows (kernels/cuda/KERNELS.md D17). */
static vg_status time_back_to_back(const vg_plan *p, const vg_gemm_args *a, int warmup, int reps,
                                   double *median_us, int *copies, int *set_up_failed)
{
    *set_up_failed = 0;
    cudaStream_t caller = static_cast<cudaStream_t>(a->stream), s = NULL;
    cudaEvent_t ready = NULL, *ev = NULL;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    double *ms = NULL;
    weight_copies wc = {};
    wc.count = 1;
    int made = 0;
    vg_status st = VG_OK;
    cudaError_t e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    if (e == cudaSuccess)
        e = cudaEventCreateWithFlags(&ready, cudaEventDisableTiming);
    if (e == cudaSuccess)
        e = cudaEventRecord(ready, caller);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent(s, ready, 0);
    if (e != cudaSuccess) {
        *set_up_failed = 1;
        goto out;
    }
    if ((st = weight_copies_make(a, s, &wc)) != VG_OK) {
        *set_up_failed = 1;
        goto out;
    }
    {
        int launches = wc.count < 2 ? 2 : wc.count;
        vg_gemm_args b = *a;
        b.stream = s;
        if ((e = cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)) != cudaSuccess) {
            *set_up_failed = 1;
            goto out;
        }
        for (int i = 0; i < launches && st == VG_OK; i++) {
            weight_copies_point(&wc, i, &b);
            st = vg_cuda_gemm(p, &b);
        }
        /* Ended on every way out, or the stream stays capturing. */
        cudaError_t end = cudaStreamEndCapture(s, &graph);
        if (st != VG_OK) {
            (void)cudaGetLastError();
            /* A launch refused inside a capture that broke (another thread
             * synchronized the device): the fallback tells the real story. */
            *set_up_failed = end != cudaSuccess;
            goto out;
        }
        /* Uploaded now, so that the first replay is not the one that pays
         * for it (warmup may be 0). */
        if ((e = end) != cudaSuccess ||
            (e = cudaGraphInstantiateWithFlags(&exec, graph, 0)) != cudaSuccess ||
            (e = cudaGraphUpload(exec, s)) != cudaSuccess) {
            *set_up_failed = 1;
            goto out;
        }
        ev = static_cast<cudaEvent_t *>(calloc((size_t)reps * 2, sizeof(cudaEvent_t)));
        ms = static_cast<double *>(calloc((size_t)reps, sizeof(double)));
        if (!ev || !ms) {
            st = vg_fail(VG_ERR_NO_MEMORY, "cuda time plan: %d reps", reps);
            goto out;
        }
        for (; made < reps * 2 && e == cudaSuccess; made++)
            e = cudaEventCreate(&ev[made]);
        if (e != cudaSuccess) {
            made--;
            goto out;
        }
        for (int i = 0; i < warmup && e == cudaSuccess; i++)
            e = cudaGraphLaunch(exec, s);
        for (int i = 0; i < reps && e == cudaSuccess; i++) {
            e = cudaEventRecord(ev[2 * i], s);
            if (e == cudaSuccess)
                e = cudaGraphLaunch(exec, s);
            if (e == cudaSuccess)
                e = cudaEventRecord(ev[2 * i + 1], s);
        }
        if (e == cudaSuccess)
            e = cudaEventSynchronize(ev[2 * reps - 1]);
        for (int i = 0; i < reps && e == cudaSuccess; i++) {
            float t = 0;
            e = cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]);
            ms[i] = t;
        }
        if (e == cudaSuccess) {
            *median_us = 1e3 * median_ms(ms, reps) / launches;
            *copies = wc.count;
        }
    }
out:
    /* The caller's later work (the chosen plan's launch into the same y and
     * workspace) waits for the timing launches. */
    if (s && ready && cudaEventRecord(ready, s) == cudaSuccess)
        (void)cudaStreamWaitEvent(caller, ready, 0);
    if (s)
        (void)cudaStreamSynchronize(s);
    for (int i = 0; i < made; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    if (exec)
        cudaGraphExecDestroy(exec);
    if (graph)
        cudaGraphDestroy(graph);
    if (wc.pool)
        cudaFree(wc.pool);
    if (ready)
        cudaEventDestroy(ready);
    if (s)
        cudaStreamDestroy(s);
    if (st != VG_OK)
        return st;
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return cuda_fail(e, "cuda time plan");
    }
    return VG_OK;
}

/* The fallback: each rep one launch on the caller's stream, timed by its own
 * event pair after an L2 flush outside the pair. */
static vg_status time_single_launches(const vg_plan *p, const vg_gemm_args *a, int warmup,
                                      int reps, double *median_us)
{
    vg_status st = VG_OK;
    cudaStream_t s = static_cast<cudaStream_t>(a->stream);
    for (int i = 0; i < warmup; i++)
        if ((st = vg_cuda_gemm(p, a)) != VG_OK)
            return st;
    cudaEvent_t *ev = static_cast<cudaEvent_t *>(calloc((size_t)reps * 2, sizeof(cudaEvent_t)));
    double *ms = static_cast<double *>(calloc((size_t)reps, sizeof(double)));
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
    for (int i = 0; i < reps && e == cudaSuccess && st == VG_OK; i++) {
        float t = 0;
        e = cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]);
        ms[i] = t;
    }
    if (e == cudaSuccess && st == VG_OK)
        *median_us = 1e3 * median_ms(ms, reps);
    for (int i = 0; i < made; i++)
        cudaEventDestroy(ev[i]);
    free(ev);
    free(ms);
    if (st != VG_OK)
        return st;
    return e == cudaSuccess ? VG_OK : cuda_fail(e, "cuda time plan");
}

/* Back to back over weight copies (time_back_to_back); one launch at a time
 * after an L2 flush only when that cannot be set up (the copies do not fit
 * in device memory, or the graph cannot be captured).
 * Refused while the caller's stream is capturing (events could not be read
 * and the launches would land in the graph). */
vg_status vg_cuda_time_plan(const vg_plan *p, const vg_gemm_args *a, int warmup, int reps,
                            double *median_us, int *copies)
{
    if (!p || !a || !median_us || reps < 1 || warmup < 0)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda time plan: bad arguments");
    int rotated = 0;
    if (copies)
        *copies = 0;
    int capturing = 0;
    vg_status st = vg_cuda_stream_capturing(a->stream, &capturing);
    if (st != VG_OK)
        return st;
    if (capturing)
        return vg_fail(VG_ERR_STATE, "cuda time plan: the stream is capturing a graph");
    int set_up_failed = 0;
    st = time_back_to_back(p, a, warmup, reps, median_us, &rotated, &set_up_failed);
    if (!set_up_failed) {
        if (st == VG_OK && copies)
            *copies = rotated;
        return st;
    }
    return time_single_launches(p, a, warmup, reps, median_us);
}

} /* extern "C" */
