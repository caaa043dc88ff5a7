/*
 * CUDA helpers for the benchmark and the GPU suites, in C, so that no file
 * outside kernels/cuda/ includes a CUDA header: streams, graph capture and
 * replay, event timers, device facts, the device-to-device copy bandwidth,
 * and the cuBLAS peers (FP16/BF16 GEMMs on weights dequantized beforehand).
 *
 * Implemented in kernels/cuda/bench_peer.cu; in a CPU-only build
 * kernels/cuda_bench_absent.c makes every function return VG_ERR_NO_DEVICE.
 */
#ifndef VOLTGATE_CUDA_BENCH_H
#define VOLTGATE_CUDA_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "voltgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- streams and graphs -------------------------------------------------- */
vg_status vg_cuda_stream_create(void **stream);
vg_status vg_cuda_stream_destroy(void *stream);
/* Starts capturing `stream` (global mode). */
vg_status vg_cuda_graph_begin(void *stream);
/* Ends the capture and instantiates it; *exec is a cudaGraphExec_t. */
vg_status vg_cuda_graph_end(void *stream, void **exec);
vg_status vg_cuda_graph_launch(void *exec, void *stream);
vg_status vg_cuda_graph_destroy(void *exec);

/* ---- memory -------------------------------------------------------------- */
/* Returns when the bytes are written, so a poison before a launch on any
 * stream (the bench's is non-blocking) is never overtaken. */
vg_status vg_cuda_memset(void *ptr, int byte, size_t bytes);
/* Device-to-device copy on `stream`. */
vg_status vg_cuda_copy_d2d(void *dst, const void *src, size_t bytes, void *stream);

/* ---- timing ----------------------------------------------------------------- */
/* An event pair on one stream. */
vg_status vg_cuda_timer_create(void **timer);
vg_status vg_cuda_timer_start(void *timer, void *stream);
vg_status vg_cuda_timer_stop(void *timer, void *stream);
/* Waits for the stop event; microseconds between start and stop. */
vg_status vg_cuda_timer_elapsed_us(void *timer, double *us);
vg_status vg_cuda_timer_destroy(void *timer);

/* ---- device facts ------------------------------------------------------------ */
typedef struct vg_cuda_info {
    char name[128];
    int arch;              /* 10*major + minor */
    int sms;
    size_t l2_bytes;
    size_t mem_bytes;
    int driver_version;    /* cudaDriverGetVersion: 13000 = 13.0 */
    int runtime_version;
    char driver[32];       /* NVML-free: "" when unknown */
} vg_cuda_info;
vg_status vg_cuda_info_get(int ordinal, vg_cuda_info *out);
/* The SM list the CUDA code was built for ("75 80 90"), from nvcc's
 * __CUDA_ARCH_LIST__. */
vg_status vg_cuda_arch_list(char *buf, size_t len);

/* Median bandwidth in GB/s (bytes read + bytes written over time) of `reps`
 * device-to-device copies of `bytes`, each timed by events after 3
 * warm-ups; every sample (GB/s) goes to samples[reps] when non-NULL. */
vg_status vg_cuda_copy_bandwidth(size_t bytes, int reps, double *median_gbs, double *samples);

/* Median microseconds per launch of the streaming-ceiling kernel over
 * `bytes` (bench_peer.cu): a plain streaming read of that many bytes that,
 * like a GEMM layer, waits for the kernel before it (loads, wait, two
 * dependent loads, the rest), launched the way the decode kernel is (PDL
 * or plain); `reps` graph replays. */
vg_status vg_cuda_stream_ceiling(size_t bytes, int reps, double *median_us);

/* ---- cuBLAS peers --------------------------------------------------------------
 * Y_g[m][n] = X_g[m][k] * W_g[n][k]^T for g < groups, all row-major, X, W
 * and Y in FP16 (bf16 = 0) or BF16 (bf16 = 1), FP32 compute.  `batched`
 * makes one cublasGemmStridedBatchedEx call (strides m*k, n*k, m*n); else
 * one cublasGemmEx per group.  The handle owns a cuBLAS workspace so the
 * calls can be captured in a graph. */
typedef struct vg_cublas vg_cublas;
vg_status vg_cublas_create(vg_cublas **h);
vg_status vg_cublas_destroy(vg_cublas *h);
vg_status vg_cublas_gemm(vg_cublas *h, void *stream, int bf16, int batched, int groups, int m,
                         int n, int k, const void *x, const void *w, void *y);

/* FP32 host values to FP16 / BF16 bits on the device: dst[count]. */
vg_status vg_cuda_upload_half(void *dst, const float *src, size_t count, int bf16);

#ifdef __cplusplus
}
#endif
#endif
