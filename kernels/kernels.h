/*
 * The kernel layer's boundary: what each backend's kernels offer to the
 * runtime.  Nothing here knows about policy, cache or trace.
 *
 * A backend exposes a fixed table of plans (data), one heuristic rule, a
 * workspace query and a launcher that runs any path (dense, grouped, loop,
 * moe) with a plan that vg_plan_applies() to it.  Every launcher validates its
 * arguments with vg_gemm_check_args() and returns an error without launching
 * when they are bad.
 */
#ifndef VOLTGATE_KERNELS_H
#define VOLTGATE_KERNELS_H

#include "voltgate/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Shapes, pointers, scale shape, alignment, offsets (monotone, from 0 to m)
 * and output type.  Host-side; reads offsets_host only. */
vg_status vg_gemm_check_args(const vg_gemm_args *a);
/* Token tiles of tile_m rows a call makes, each group's rows rounded up to
 * whole tiles (dense: ceil(m / tile_m)), with the groups that have rows in
 * *busy (may be NULL).  A grouped call's offsets_host must be valid. */
int32_t vg_gemm_row_tiles(const vg_gemm_args *a, int32_t tile_m, int32_t *busy);

/* A batch of a call's groups with rows, in group order: the dequantize +
 * cuBLAS kind makes one FP16 copy per slot and multiplies a batch with one
 * cuBLAS grouped GEMM, whose groups are the runs of slots of equal rows. */
#define VG_GEMM_MAX_BATCH 8
typedef struct vg_group_batch {
    int32_t slots;                        /* groups with rows in the batch */
    int32_t group[VG_GEMM_MAX_BATCH];     /* each slot's group */
    int32_t row0[VG_GEMM_MAX_BATCH];      /* its first row of X and Y */
    int32_t rows[VG_GEMM_MAX_BATCH];      /* its rows (> 0) */
    int32_t runs;                         /* runs of equal rows, in slot order */
    int32_t run_slots[VG_GEMM_MAX_BATCH]; /* slots per run */
} vg_group_batch;
/* The next batch of up to `batch` (1 to VG_GEMM_MAX_BATCH) groups with rows
 * from group *next on (dense: one group of M rows), into *b; *next moves past
 * its last group.  1 when a batch was filled, 0 when no group with rows is
 * left (empty groups are skipped: they cost nothing).  A grouped call's
 * offsets_host must be valid. */
int vg_gemm_next_batch(const vg_gemm_args *a, int batch, int32_t *next, vg_group_batch *b);

/* ---- CPU backend (kernels/cpu/) ---------------------------------------- */
size_t vg_cpu_plan_count(void);
const vg_plan *vg_cpu_plan_at(size_t i);
/* The fixed rule used when nothing measured applies.  Never NULL for a
 * valid family/path. */
const vg_plan *vg_cpu_heuristic(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                               const vg_gemm_args *call);
/* The rule without the dequantize-once plans (a policy's workspace cap). */
const vg_plan *vg_cpu_heuristic_native(vg_family f, vg_path path, int32_t rows, int32_t n,
                                       int32_t k, const vg_gemm_args *call);
vg_status vg_cpu_workspace_bytes(const vg_plan *p, const vg_gemm_args *a, size_t *bytes);
vg_status vg_cpu_gemm(const vg_plan *p, const vg_gemm_args *a);

/* ---- CUDA backend (kernels/cuda/, built when CUDA is found) ------------ */
/* Every function below returns VG_ERR_NO_DEVICE in a CPU-only build. */
vg_status vg_cuda_device_count(int *count);
/* arch as 10*major+minor (70, 90, ...) of the current device. */
vg_status vg_cuda_device_arch(int ordinal, int *arch);
size_t vg_cuda_plan_count(void);
const vg_plan *vg_cuda_plan_at(size_t i);
const vg_plan *vg_cuda_heuristic(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                               const vg_gemm_args *call);
/* VG_ERR_INTERNAL, naming it, when the rule can name a plan id the plan
 * table does not have (the cuda backend's open fails on it). */
vg_status vg_cuda_plan_table_check(void);
/* The rule as if the device did not offer the dequantize + cuBLAS kind. */
const vg_plan *vg_cuda_heuristic_native(vg_family f, vg_path path, int32_t rows, int32_t n,
                                        int32_t k, const vg_gemm_args *call);
/* The same rule for a device with smem_limit bytes of opt-in shared memory
 * per block, compute capability major sm_major, that takes the dequantize
 * + cuBLAS kind from dq_rows rows (0: the kind is not offered;
 * vg_cuda_heuristic: the current device's facts).  `call`, where not NULL,
 * is the call, whose groups' rows the rule weighs for grouped calls (moe
 * routing is rarely even: KERNELS.md D43); NULL: every group at `rows`. */
const vg_plan *vg_cuda_heuristic_for(vg_family f, vg_path path, int32_t rows, int32_t n,
                                     int32_t k, int smem_limit, int dq_rows, int sm_major,
                                     const vg_gemm_args *call);
/* The rule's plan for a grouped call's own routing where it differs from
 * its plan for every group at `rows` (the largest group's); NULL where the
 * routing does not change it.  vg_cuda_heuristic_for(..., call) returns it
 * when it is not NULL.  Cheap: the runtime asks it on every grouped call
 * (KERNELS.md D43). */
const vg_plan *vg_cuda_routing_plan(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                                    const vg_gemm_args *call);
const vg_plan *vg_cuda_routing_plan_for(vg_family f, vg_path path, int32_t rows, int32_t n,
                                        int sm_major, const vg_gemm_args *call);
/* Rows (M, or rows of the largest group) from which the rule takes the
 * dequantize + cuBLAS plan where the device offers it (KERNELS.md D34,
 * D36): SM80+ from 129, where the H100 crossover had the mid decode plans
 * ahead of it up to 128 rows and level with it (fp8) or behind (nvfp4) at
 * 256; SM70/75 from 256, by the V100 model (its DRAM makes the copy ~3x
 * dearer against its tensor cores). */
#define VG_CUDA_DQBLAS_ROWS_SM80 129
#define VG_CUDA_DQBLAS_ROWS_SM70 256
/* Whether the current device offers the dequantize + cuBLAS kind to the
 * runtime (cuBLAS starts on it, and VG_CUDA_DQBLAS is unset or 1; 0 takes
 * it off), asked once per device; *why says why not.
 * Creates the device's first cuBLAS handle either way (a plan forced by id
 * runs without the offer): call it outside any graph capture (the cuda
 * backend's open does). */
vg_status vg_cuda_blas_prepare(int *offered, const char **why);
/* Offered by default: the kind runs when forced (vg_gemm_with_plan, golden
 * --plan all, the suites) whatever this says; the tuner and the rule take
 * it only when offered. */
#ifndef VG_CUDA_DQBLAS_DEFAULT
#define VG_CUDA_DQBLAS_DEFAULT 1
#endif
/* The batched plan (cuda.grouped.dqcublas.g8, KERNELS.md D47) is offered
 * where the kind is and VG_CUDA_DQBLAS_BATCHED=1, or by default where this
 * is 1.  Off by default: offered, it is in what vg_gemm_workspace_bytes
 * counts, up to 8 FP16 copies of a group's W where the one-group plan
 * needs 1 (a caller sizes for the largest), for a plan that wins or loses
 * by the routing (D47).  Like the kind, it runs when forced whatever this
 * says; the fixed rule does not name it. */
#ifndef VG_CUDA_DQBLAS_BATCHED_DEFAULT
#define VG_CUDA_DQBLAS_BATCHED_DEFAULT 0
#endif
/* 0 for a plan of a kind the current device does not offer to the runtime;
 * then *why (when why is not NULL) says why (vg_cuda_blas_prepare's reason). */
int vg_cuda_plan_offered(const vg_plan *p, const char **why);
/* For the suites: whether the batched dequantize + cuBLAS plan's grouped
 * GEMM has run (1), been refused (-1, FP32 output only: then one
 * cublasGemmEx per group) or not been asked yet (0), by output type
 * (y_f16: 1 FP16, 0 FP32); *loaded (may be NULL): whether the loaded
 * cuBLAS has cublasGemmGroupedBatchedEx (12.5 and later). */
int vg_cuda_dqblas_grouped_state(int y_f16, int *loaded);
/* cuBLAS's version (cublasGetVersion) once a handle exists, else 0. */
int vg_cuda_blas_version(void);
/* cuBLAS is loaded at run time, not linked (libvoltgate loads where it is
 * missing; the dequantize + cuBLAS kind is then not offered, and forced by
 * id it returns VG_ERR_UNSUPPORTED).  Loaded once per process at the first
 * use: VG_CUBLAS_LIBRARY's path or name when set (only that one: a path that
 * does not exist simulates a machine without cuBLAS), else the soname of
 * the toolkit voltgate was built with (libcublas.so.<CUBLAS_VER_MAJOR>),
 * else libcublas.so.  VG_OK with *library what was loaded; else
 * VG_ERR_UNSUPPORTED and *why (as vg_last_error()) names each library tried
 * with dlerror().  Needs no device. */
vg_status vg_cuda_blas_load(const char **library, const char **why);
/* Whether `library` loads and has every cuBLAS function the kind calls,
 * without keeping it: VG_OK, else VG_ERR_UNSUPPORTED with vg_last_error()
 * naming the library and dlerror().  For the loader's tests; needs no
 * device. */
vg_status vg_cuda_blas_probe(const char *library);
int vg_cuda_plan_smem(const vg_plan *p, vg_family f);
vg_status vg_cuda_workspace_bytes(const vg_plan *p, const vg_gemm_args *a, size_t *bytes);
/* Enqueues on a->stream; graph-capturable (no allocation, no sync). */
vg_status vg_cuda_gemm(const vg_plan *p, const vg_gemm_args *a);
/* Device utilities, so that no C file outside kernels/cuda/ includes the
 * CUDA runtime. */
vg_status vg_cuda_set_device(int ordinal);
vg_status vg_cuda_alloc(size_t bytes, void **ptr);
vg_status vg_cuda_free(void *ptr);
vg_status vg_cuda_copy_to_device(void *dst, const void *src, size_t bytes);
vg_status vg_cuda_copy_to_host(void *dst, const void *src, size_t bytes);
vg_status vg_cuda_synchronize(void *stream);
/* *capturing = 1 while `stream` is capturing a CUDA graph. */
vg_status vg_cuda_stream_capturing(void *stream, int *capturing);
/* *pdl = 1 when the decode kernels launch with programmatic dependent
 * launch on the current device (SM90+, unless VG_CUDA_PDL=0): a property of
 * the launch, not of the plan, that benchmark records name. */
vg_status vg_cuda_decode_pdl(int *pdl);
/* Microseconds of one launch of plan p as a serving step sees it: the
 * median over `reps` samples, after `warmup`, of a CUDA graph of
 * back-to-back launches on rotating copies of a's weights (together 3x the
 * L2, at most 64 copies), over its launch count (CUDA events).  Writes a->y
 * and the workspace; the caller's stream is ordered after it.  VG_ERR_STATE
 * while a->stream is capturing.  It captures a graph on a private stream:
 * a device-wide synchronize from another thread meanwhile fails (CUDA
 * forbids it while any stream captures) and this timer falls back to one
 * launch at a time after an L2 flush.  *copies (copies may be NULL): the
 * weight buffers the graph rotated over (1: the caller's own, already 3x
 * the L2), 0 when it fell back, so that a trace, and a test, can tell
 * which timer ranked the plans. */
vg_status vg_cuda_time_plan(const vg_plan *p, const vg_gemm_args *a, int warmup, int reps,
                            double *median_us, int *copies);

#ifdef __cplusplus
}
#endif
#endif
