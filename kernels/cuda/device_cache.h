/*
 * Answers about the current device that the dispatch path reads on every
 * call (its arch, SM count, shared-memory limit; a kernel's occupancy or the
 * PTX it was compiled from), asked of the CUDA runtime once per device and
 * kept for the process: a GEMM of a few microseconds cannot pay a runtime
 * query each time, and the answers do not change while the process runs.
 */
#ifndef VG_CUDA_DEVICE_CACHE_H
#define VG_CUDA_DEVICE_CACHE_H

#include <cuda_runtime.h>

#include <atomic>

/* Device ordinals whose answers are kept; a higher one is asked each time. */
constexpr int kVgCachedDevices = 64;

/* The current device's answer: known[dev] where asked before (0: not yet),
 * else ask(dev), kept when positive.  A failed query (ask returns 0 or less)
 * gives fallback, is not kept, and its error is cleared so that the next
 * launch's check does not report it; so does a failed cudaGetDevice. */
template <class Ask>
int vg_cuda_per_device(std::atomic<int> (&known)[kVgCachedDevices], Ask ask, int fallback)
{
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) {
        (void)cudaGetLastError();
        return fallback;
    }
    const bool kept = dev >= 0 && dev < kVgCachedDevices;
    int v = kept ? known[dev].load(std::memory_order_relaxed) : 0;
    if (v > 0)
        return v;
    v = ask(dev);
    if (v <= 0) {
        (void)cudaGetLastError();
        return fallback;
    }
    if (kept)
        known[dev].store(v, std::memory_order_relaxed);
    return v;
}

/* A device attribute of the current device (cudaDeviceGetAttribute), once
 * per device; fallback where it cannot be asked. */
template <cudaDeviceAttr A>
int vg_cuda_device_attr(int fallback)
{
    static std::atomic<int> known[kVgCachedDevices];
    return vg_cuda_per_device(
        known,
        [](int dev) {
            int v = 0;
            return cudaDeviceGetAttribute(&v, A, dev) == cudaSuccess ? v : 0;
        },
        fallback);
}

#endif
