/*
 * The CUDA entry points of a CPU-only build (CUDA=0 or no nvcc found): each
 * one says there is no device, so callers take the same path as on a machine
 * without a GPU.  Compiled instead of kernels/cuda/ (see the Makefile).
 */
#include "kernels.h"

static vg_status absent(void)
{
    return vg_fail(VG_ERR_NO_DEVICE, "no CUDA device: voltgate was built without CUDA");
}

vg_status vg_cuda_device_count(int *count)
{
    if (count)
        *count = 0;
    return absent();
}
vg_status vg_cuda_device_arch(int ordinal, int *arch) { (void)ordinal; (void)arch; return absent(); }
size_t vg_cuda_plan_count(void) { return 0; }
const vg_plan *vg_cuda_plan_at(size_t i) { (void)i; return NULL; }
const vg_plan *vg_cuda_heuristic(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                               const vg_gemm_args *call)
{
    (void)f; (void)path; (void)rows; (void)n; (void)k; (void)call;
    return NULL;
}
const vg_plan *vg_cuda_heuristic_native(vg_family f, vg_path path, int32_t rows, int32_t n,
                                        int32_t k, const vg_gemm_args *call)
{
    return vg_cuda_heuristic(f, path, rows, n, k, call);
}
const vg_plan *vg_cuda_heuristic_for(vg_family f, vg_path path, int32_t rows, int32_t n,
                                     int32_t k, int smem_limit, int dq_rows, int sm_major,
                                     const vg_gemm_args *call)
{
    (void)f; (void)path; (void)rows; (void)n; (void)k; (void)smem_limit; (void)dq_rows;
    (void)sm_major; (void)call;
    return NULL;
}
const vg_plan *vg_cuda_routing_plan(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                                    const vg_gemm_args *call)
{
    (void)f; (void)path; (void)rows; (void)n; (void)k; (void)call;
    return NULL;
}
const vg_plan *vg_cuda_routing_plan_for(vg_family f, vg_path path, int32_t rows, int32_t n,
                                        int sm_major, const vg_gemm_args *call)
{
    (void)f; (void)path; (void)rows; (void)n; (void)sm_major; (void)call;
    return NULL;
}
vg_status vg_cuda_blas_prepare(int *offered, const char **why)
{
    if (offered)
        *offered = 0;
    if (why)
        *why = "built without CUDA";
    return absent();
}
int vg_cuda_blas_version(void) { return 0; }
int vg_cuda_dqblas_grouped_state(int y_f16, int *loaded)
{
    (void)y_f16;
    if (loaded)
        *loaded = 0;
    return 0;
}
vg_status vg_cuda_blas_load(const char **library, const char **why)
{
    if (library)
        *library = "";
    if (why)
        *why = "built without CUDA";
    return absent();
}
vg_status vg_cuda_blas_probe(const char *library) { (void)library; return absent(); }
vg_status vg_cuda_plan_table_check(void) { return absent(); }
int vg_cuda_plan_offered(const vg_plan *p, const char **why)
{
    (void)p;
    if (why)
        *why = "built without CUDA";
    return 0;
}
int vg_cuda_plan_smem(const vg_plan *p, vg_family f) { (void)p; (void)f; return -1; }
vg_status vg_cuda_workspace_bytes(const vg_plan *p, const vg_gemm_args *a, size_t *bytes)
{
    (void)p; (void)a; (void)bytes;
    return absent();
}
vg_status vg_cuda_gemm(const vg_plan *p, const vg_gemm_args *a) { (void)p; (void)a; return absent(); }
vg_status vg_cuda_set_device(int ordinal) { (void)ordinal; return absent(); }
vg_status vg_cuda_alloc(size_t bytes, void **ptr) { (void)bytes; (void)ptr; return absent(); }
vg_status vg_cuda_free(void *ptr) { (void)ptr; return absent(); }
vg_status vg_cuda_copy_to_device(void *dst, const void *src, size_t bytes)
{
    (void)dst; (void)src; (void)bytes;
    return absent();
}
vg_status vg_cuda_copy_to_host(void *dst, const void *src, size_t bytes)
{
    (void)dst; (void)src; (void)bytes;
    return absent();
}
vg_status vg_cuda_synchronize(void *stream) { (void)stream; return absent(); }
vg_status vg_cuda_decode_pdl(int *pdl)
{
    if (pdl)
        *pdl = 0;
    return absent();
}
vg_status vg_cuda_stream_capturing(void *stream, int *capturing)
{
    (void)stream;
    if (capturing)
        *capturing = 0;
    return absent();
}
vg_status vg_cuda_time_plan(const vg_plan *p, const vg_gemm_args *a, int warmup, int reps,
                            double *median_us, int *copies)
{
    (void)p; (void)a; (void)warmup; (void)reps; (void)median_us;
    if (copies)
        *copies = 0;
    return absent();
}
