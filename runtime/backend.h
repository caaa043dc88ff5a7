/*
 * A device backend as the runtime sees it: the kernel layer's plans and
 * launcher plus memory, timing and capture state.  backend_cpu.c and
 * backend_cuda.c each fill one vg_backend_ops.
 */
#ifndef VOLTGATE_RUNTIME_BACKEND_H
#define VOLTGATE_RUNTIME_BACKEND_H

#include "voltgate/types.h"

/* How a candidate was timed, for the trace's candidate lines.  clock:
 * "graph" (cuda: a CUDA graph of back-to-back launches over `copies`
 * weight copies), "flush" (cuda's fallback: one launch at a time after an
 * L2 flush), "host" (cpu: the host clock, one launch at a time), "scripted"
 * (a test's timer, vg_device_set_timer).  copies: 0 unless "graph". */
typedef struct vg_timer_info {
    const char *clock;
    int copies;
} vg_timer_info;

typedef struct vg_backend_ops {
    const char *name;                    /* "cpu" or "cuda" */
    /* Opens device `ordinal`; *ctx is passed back to every call below. */
    vg_status (*open)(int ordinal, void **ctx, int *arch);
    void (*close)(void *ctx);

    size_t (*plan_count)(void);
    const vg_plan *(*plan_at)(size_t i);
    /* The fixed rule for a call of `rows` rows (M, or its largest group's);
     * `call`, when not NULL, is the call itself, whose groups' rows the rule
     * may weigh (moe routing is rarely even); NULL: every group at `rows`. */
    const vg_plan *(*heuristic)(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                                 const vg_gemm_args *call);
    /* The rule's plan for the call's own routing where it differs from its
     * plan for every group at `rows`, else NULL (heuristic(..., call) then
     * returns it); NULL op: the rule never weighs the routing.  Asked on
     * every grouped call, so it must be cheap. */
    const vg_plan *(*routing_plan)(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                                   const vg_gemm_args *call);
    /* The same rule without the plans that need a large workspace (the
     * dequantize + cuBLAS kind): where the policy's cap refuses those. */
    const vg_plan *(*heuristic_native)(vg_family f, vg_path path, int32_t rows, int32_t n,
                                       int32_t k, const vg_gemm_args *call);
    vg_status (*workspace_bytes)(const vg_plan *p, const vg_gemm_args *a, size_t *bytes);
    vg_status (*launch)(void *ctx, const vg_plan *p, const vg_gemm_args *a);

    /* Median microseconds of `reps` launches after `warmup` launches, timed
     * with the backend's clock (CUDA events on cuda); *how says which. */
    vg_status (*time_plan)(void *ctx, const vg_plan *p, const vg_gemm_args *a,
                           int warmup, int reps, double *median_us, vg_timer_info *how);
    /* Non-zero while `stream` is capturing a CUDA graph. */
    int (*stream_capturing)(void *ctx, void *stream);

    vg_status (*alloc)(void *ctx, size_t bytes, void **ptr);
    void (*free)(void *ctx, void *ptr);
    vg_status (*copy_to_device)(void *ctx, void *dst, const void *src, size_t bytes);
    vg_status (*copy_to_host)(void *ctx, void *dst, const void *src, size_t bytes);
    vg_status (*synchronize)(void *ctx, void *stream);
    /* 0 for a plan of a kind this device does not offer (the dequantize +
     * cuBLAS kind where cuBLAS does not load or start): never measured,
     * never counted in vg_gemm_workspace_bytes; *why (why may be NULL) then
     * says why, for the trace.  NULL: every plan is offered. */
    int (*plan_offered)(void *ctx, const vg_plan *p, const char **why);
    /* The version of a library whose kernels some plans run (cuBLAS for the
     * dequantize + cuBLAS kind; 0 where none is loaded).  NULL: none. */
    int (*library_version)(void);
} vg_backend_ops;

extern const vg_backend_ops vg_backend_cpu;
/* In a CPU-only build open() returns VG_ERR_NO_DEVICE. */
extern const vg_backend_ops vg_backend_cuda;

#endif
