/*
 * The CPU-only build's stand-ins for kernels/cuda/cuda_bench.h: each says
 * there is no device.  (kernels/cuda/bench_peer.cu is the real one.)
 */
#include "cuda/cuda_bench.h"

#if !VG_WITH_CUDA
#include <string.h>

static vg_status absent(void)
{
    return vg_fail(VG_ERR_NO_DEVICE, "no CUDA device: voltgate was built without CUDA");
}

vg_status vg_cuda_stream_create(void **stream) { if (stream) *stream = NULL; return absent(); }
vg_status vg_cuda_stream_destroy(void *stream) { (void)stream; return absent(); }
vg_status vg_cuda_graph_begin(void *stream) { (void)stream; return absent(); }
vg_status vg_cuda_graph_end(void *stream, void **exec) { (void)stream; if (exec) *exec = NULL; return absent(); }
vg_status vg_cuda_graph_launch(void *exec, void *stream) { (void)exec; (void)stream; return absent(); }
vg_status vg_cuda_graph_destroy(void *exec) { (void)exec; return absent(); }
vg_status vg_cuda_memset(void *ptr, int byte, size_t bytes) { (void)ptr; (void)byte; (void)bytes; return absent(); }
vg_status vg_cuda_copy_d2d(void *dst, const void *src, size_t bytes, void *stream)
{
    (void)dst; (void)src; (void)bytes; (void)stream;
    return absent();
}
vg_status vg_cuda_timer_create(void **timer) { if (timer) *timer = NULL; return absent(); }
vg_status vg_cuda_timer_start(void *timer, void *stream) { (void)timer; (void)stream; return absent(); }
vg_status vg_cuda_timer_stop(void *timer, void *stream) { (void)timer; (void)stream; return absent(); }
vg_status vg_cuda_timer_elapsed_us(void *timer, double *us) { (void)timer; (void)us; return absent(); }
vg_status vg_cuda_timer_destroy(void *timer) { (void)timer; return absent(); }
vg_status vg_cuda_info_get(int ordinal, vg_cuda_info *out)
{
    (void)ordinal;
    if (out)
        memset(out, 0, sizeof *out);
    return absent();
}
vg_status vg_cuda_arch_list(char *buf, size_t len)
{
    if (buf && len)
        buf[0] = 0;
    return absent();
}
vg_status vg_cuda_copy_bandwidth(size_t bytes, int reps, double *median_gbs, double *samples)
{
    (void)bytes; (void)reps; (void)median_gbs; (void)samples;
    return absent();
}
vg_status vg_cuda_stream_ceiling(size_t bytes, int reps, double *median_us)
{
    (void)bytes; (void)reps; (void)median_us;
    return absent();
}
vg_status vg_cublas_create(vg_cublas **h) { if (h) *h = NULL; return absent(); }
vg_status vg_cublas_destroy(vg_cublas *h) { (void)h; return absent(); }
vg_status vg_cublas_gemm(vg_cublas *h, void *stream, int bf16, int batched, int groups, int m,
                         int n, int k, const void *x, const void *w, void *y)
{
    (void)h; (void)stream; (void)bf16; (void)batched; (void)groups; (void)m; (void)n; (void)k;
    (void)x; (void)w; (void)y;
    return absent();
}
vg_status vg_cuda_upload_half(void *dst, const float *src, size_t count, int bf16)
{
    (void)dst; (void)src; (void)count; (void)bf16;
    return absent();
}
#else
/* The CUDA build has the real functions; keep this unit non-empty. */
typedef int vg_cuda_bench_absent_unused;
#endif
