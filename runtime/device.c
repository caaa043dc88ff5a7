/*
 * Devices: one context per device, holding the backend, its tuning state,
 * its trace, its workspace and the timer used by measurements.
 *
 * Closing a device is vg_device_close() (device_close.c): the layers above
 * (coordination, engines) let go of the device first, then
 * vg_device_destroy() here frees what the device itself owns.  So this file
 * calls nothing above the tuning state and the trace.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* The device workspace allocated at open: split-K partials of decode and
 * small prefill shapes fit; larger calls grow it (outside capture). */
#define VG_WORKSPACE_CPU (16u << 20)
#define VG_WORKSPACE_CUDA (64u << 20)

/* Repetitions of one candidate's timing: cpu launches are slow, so few;
 * cuda event timings are cheap, so more. */
#define VG_MEASURE_WARMUP_CPU 1
#define VG_MEASURE_REPS_CPU 3
#define VG_MEASURE_WARMUP_CUDA 3
#define VG_MEASURE_REPS_CUDA 10

vg_status vg_device_open(const char *backend, int ordinal, vg_device **out)
{
    if (!backend || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_open: NULL argument");
    *out = NULL;
    const vg_backend_ops *ops;
    if (strcmp(backend, "cpu") == 0)
        ops = &vg_backend_cpu;
    else if (strcmp(backend, "cuda") == 0)
        ops = &vg_backend_cuda;
    else
        return vg_fail(VG_ERR_INVALID_ARG, "unknown backend '%s' (expected cpu or cuda)",
                       backend);

    vg_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return vg_fail(VG_ERR_NO_MEMORY, "vg_device_open: out of memory");
    dev->ops = ops;
    dev->ordinal = ordinal;
    vg_status st = ops->open(ordinal, &dev->ctx, &dev->arch);
    if (st != VG_OK) {
        free(dev);
        return st;
    }
    dev->planset = vg_planset_hash(ops);
    if ((st = vg_tuning_init(&dev->tuning)) != VG_OK) {
        ops->close(dev->ctx);
        free(dev);
        return st;
    }
    if ((st = vg_cache_init(&dev->shared)) != VG_OK) {
        vg_tuning_destroy(&dev->tuning);
        ops->close(dev->ctx);
        free(dev);
        return st;
    }
    pthread_mutex_init(&dev->engines_lock, NULL);
    pthread_mutex_init(&dev->ws_lock, NULL);
    atomic_init(&dev->test_capturing, 0);
    int is_cpu = ops == &vg_backend_cpu;
    dev->measure_warmup = is_cpu ? VG_MEASURE_WARMUP_CPU : VG_MEASURE_WARMUP_CUDA;
    dev->measure_reps = is_cpu ? VG_MEASURE_REPS_CPU : VG_MEASURE_REPS_CUDA;
    dev->ws_bytes = is_cpu ? VG_WORKSPACE_CPU : VG_WORKSPACE_CUDA;
    if ((st = ops->alloc(dev->ctx, dev->ws_bytes, &dev->ws)) != VG_OK) {
        vg_device_destroy(dev);
        return st;
    }
    vg_trace_init_from_env(&dev->trace);
    vg_trace_offers(dev);
    *out = dev;
    return VG_OK;
}

void vg_device_destroy(vg_device *dev)
{
    vg_cache_destroy(&dev->shared);
    pthread_mutex_destroy(&dev->engines_lock);
    if (dev->ws)
        dev->ops->free(dev->ctx, dev->ws);
    vg_trace_close(&dev->trace);
    vg_tuning_destroy(&dev->tuning);
    pthread_mutex_destroy(&dev->ws_lock);
    dev->ops->close(dev->ctx);
    free(dev);
}

vg_status vg_device_info(const vg_device *dev, const char **backend, int *arch)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_info: dev is NULL");
    if (backend)
        *backend = dev->ops->name;
    if (arch)
        *arch = dev->arch;
    return VG_OK;
}

vg_status vg_device_alloc(vg_device *dev, size_t bytes, void **ptr)
{
    if (!dev || !ptr)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_alloc: NULL argument");
    return dev->ops->alloc(dev->ctx, bytes, ptr);
}

vg_status vg_device_free(vg_device *dev, void *ptr)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_free: dev is NULL");
    if (ptr)
        dev->ops->free(dev->ctx, ptr);
    return VG_OK;
}

vg_status vg_device_upload(vg_device *dev, void *dst, const void *src, size_t bytes)
{
    if (!dev || (bytes && (!dst || !src)))
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_upload: NULL argument");
    return dev->ops->copy_to_device(dev->ctx, dst, src, bytes);
}

vg_status vg_device_download(vg_device *dev, void *dst, const void *src, size_t bytes)
{
    if (!dev || (bytes && (!dst || !src)))
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_download: NULL argument");
    return dev->ops->copy_to_host(dev->ctx, dst, src, bytes);
}

vg_status vg_device_synchronize(vg_device *dev, void *stream)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_synchronize: dev is NULL");
    return dev->ops->synchronize(dev->ctx, stream);
}

vg_status vg_device_set_timer(vg_device *dev, vg_timer_fn fn, void *user)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_set_timer: dev is NULL");
    dev->timer = fn;
    dev->timer_user = fn ? user : NULL;
    return VG_OK;
}

vg_status vg_device_set_measure_reps(vg_device *dev, int warmup, int reps)
{
    if (!dev || warmup < 0 || reps < 1 || reps > 1024)
        return vg_fail(VG_ERR_INVALID_ARG, "measure reps: warmup %d >= 0, reps %d in 1..1024",
                       warmup, reps);
    dev->measure_warmup = warmup;
    dev->measure_reps = reps;
    return VG_OK;
}

vg_status vg_device_test_set_capturing(vg_device *dev, int capturing)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_test_set_capturing: dev is NULL");
    atomic_store(&dev->test_capturing, capturing ? 1 : 0);
    return VG_OK;
}

int vg_device_capturing(vg_device *dev, void *stream)
{
    if (atomic_load_explicit(&dev->test_capturing, memory_order_relaxed))
        return 1;
    return dev->ops->stream_capturing(dev->ctx, stream);
}

/* Makes the device workspace at least `need` bytes; ws_lock held.  Never
 * while capturing: an allocation inside a graph capture is not allowed. */
static vg_status ensure_workspace(vg_device *dev, size_t need, void *stream)
{
    if (dev->ws_bytes >= need)
        return VG_OK;
    if (vg_device_capturing(dev, stream))
        return vg_fail(VG_ERR_STATE,
                       "device workspace of %zu bytes is needed but the stream is capturing "
                       "(it has %zu; warm up before capturing or pass a workspace)",
                       need, dev->ws_bytes);
    void *grown = NULL;
    vg_status st = dev->ops->alloc(dev->ctx, need, &grown);
    if (st != VG_OK)
        return st;
    /* The old buffer may still be read by work queued on a stream. */
    dev->ops->synchronize(dev->ctx, stream);
    dev->ops->free(dev->ctx, dev->ws);
    dev->ws = grown;
    dev->ws_bytes = need;
    return VG_OK;
}

vg_status vg_device_launch(vg_device *dev, const vg_plan *p, const vg_gemm_args *args)
{
    if (args->workspace)
        return dev->ops->launch(dev->ctx, p, args);
    size_t need = 0;
    vg_status st = dev->ops->workspace_bytes(p, args, &need);
    if (st != VG_OK)
        return st;
    vg_gemm_args a = *args;
    if (need == 0) {
        /* Nothing is written there: no need to hold the lock. */
        a.workspace = dev->ws;
        a.workspace_bytes = dev->ws_bytes;
        return dev->ops->launch(dev->ctx, p, &a);
    }
    pthread_mutex_lock(&dev->ws_lock);
    st = ensure_workspace(dev, need, args->stream);
    if (st == VG_OK) {
        a.workspace = dev->ws;
        a.workspace_bytes = dev->ws_bytes;
        st = dev->ops->launch(dev->ctx, p, &a);
    }
    pthread_mutex_unlock(&dev->ws_lock);
    return st;
}

/* The scripted timer when a test set one, else the backend's, with the
 * device workspace when the caller passed none. */
vg_status vg_device_time_plan(vg_device *dev, const vg_plan *p, const vg_gemm_args *args,
                              double *us, vg_timer_info *how)
{
    vg_status st = VG_OK;
    if (dev->timer) {
        *us = dev->timer(p, args, dev->timer_user);
    } else if (args->workspace) {
        st = dev->ops->time_plan(dev->ctx, p, args, dev->measure_warmup, dev->measure_reps, us,
                                 how);
    } else {
        size_t need = 0;
        st = dev->ops->workspace_bytes(p, args, &need);
        vg_gemm_args a = *args;
        if (st == VG_OK) {
            pthread_mutex_lock(&dev->ws_lock);
            st = ensure_workspace(dev, need, args->stream);
            if (st == VG_OK) {
                a.workspace = dev->ws;
                a.workspace_bytes = dev->ws_bytes;
                st = dev->ops->time_plan(dev->ctx, p, &a, dev->measure_warmup,
                                         dev->measure_reps, us, how);
            }
            pthread_mutex_unlock(&dev->ws_lock);
        }
    }
    return st;
}

uint64_t vg_planset_hash(const vg_backend_ops *ops)
{
    uint64_t h = vg_fnv1a64("voltgate-planset-v1;", 20, VG_FNV_OFFSET);
    size_t count = ops->plan_count();
    for (size_t i = 0; i < count; i++) {
        const vg_plan *p = ops->plan_at(i);
        if (!p)
            continue;
        char buf[256];
        int n = snprintf(buf, sizeof buf, "%s;%d;%u;%d;%d;%d;%d;%d;%d;", p->id, (int)p->path,
                         (unsigned)p->families, (int)p->tile_m, (int)p->tile_n, (int)p->tile_k,
                         (int)p->stages, (int)p->split_k, (int)p->max_rows);
        h = vg_fnv1a64(buf, n > 0 && (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1, h);
        /* Fields added later salt the hash only where set, so plan sets
         * without them keep their hashes. */
        if (p->kind != VG_KIND_TILED || p->min_rows != 0) {
            n = snprintf(buf, sizeof buf, "kind=%d;min_rows=%d;", (int)p->kind, (int)p->min_rows);
            h = vg_fnv1a64(buf, (size_t)n, h);
        }
    }
    /* A plan that runs a library's kernels runs other code under another
     * version of it: LUT entries measured there are stale here. */
    int lib = ops->library_version ? ops->library_version() : 0;
    if (lib) {
        char buf[64];
        int n = snprintf(buf, sizeof buf, "library=%d;", lib);
        h = vg_fnv1a64(buf, (size_t)n, h);
    }
    /* 0 stands for "this build" in the cache and UINT64_MAX for an unstamped
     * LUT entry: the hash of a plan set is neither. */
    return h && h != UINT64_MAX ? h : 1;
}

const vg_plan *vg_device_find_plan(vg_device *dev, const char *id)
{
    size_t count = dev->ops->plan_count();
    for (size_t i = 0; i < count; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        if (p && strcmp(p->id, id) == 0)
            return p;
    }
    return NULL;
}

vg_status vg_device_plans(vg_device *dev, vg_family f, vg_path path, int32_t rows,
                          const vg_plan **plans, size_t max, size_t *count)
{
    if (!dev || !count || (max && !plans))
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_plans: NULL argument");
    if ((unsigned)f >= VG_FAMILY_COUNT || (unsigned)path >= VG_PATH_COUNT)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_plans: invalid family %d or path %d",
                       (int)f, (int)path);
    size_t n = 0, total = dev->ops->plan_count();
    for (size_t i = 0; i < total; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        if (!vg_plan_applies(p, f, path, rows))
            continue;
        if (n < max)
            plans[n] = p;
        n++;
    }
    *count = n;
    return VG_OK;
}

int vg_device_plan_offered(vg_device *dev, const vg_plan *p, const char **why)
{
    if (!dev || !p) {
        if (why)
            *why = "no device or no plan";
        return 0;
    }
    return !dev->ops->plan_offered || dev->ops->plan_offered(dev->ctx, p, why);
}

vg_status vg_gemm_plan_workspace_bytes(vg_device *dev, const vg_plan *p,
                                       const vg_gemm_args *args, size_t *bytes)
{
    if (!dev || !p || !args || !bytes)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_gemm_plan_workspace_bytes: NULL argument");
    return dev->ops->workspace_bytes(p, args, bytes);
}

vg_status vg_gemm_workspace_bytes(vg_device *dev, const vg_gemm_args *args, size_t *bytes)
{
    if (!dev || !args || !bytes)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_gemm_workspace_bytes: NULL argument");
    int32_t rows = vg_gemm_max_group_rows(args);
    /* Plans the runtime may choose: offered at these rows and, under the
     * policy this thread is in, inside its workspace cap. */
    const vg_family_policy *fp = vg_policy_family(vg_policy_current(dev), args->w.family);
    vg_choice cap = {.ws_cap_mib = fp->dequant_workspace_max_mib};
    /* On the path the call runs on with fp8_grouped_bmm_decode on (a
     * grouped call above 16 rows per group runs as moe), and for a grouped
     * call on loop too, where a policy with it off runs the call: a caller
     * sizes the workspace once, not once per policy, so the count must not
     * depend on the policy it was asked under. */
    vg_family_policy bmm_on = *fp;
    bmm_on.grouped_bmm_decode = 1;
    const vg_path routed = vg_route_path(&bmm_on, args->path, rows);
    size_t most = 0, total = dev->ops->plan_count();
    for (size_t i = 0; i < total; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        vg_gemm_args a = *args;
        a.path = routed;
        int applies = vg_plan_offered(p, args->w.family, a.path, rows);
        if (!applies && args->path == VG_PATH_GROUPED &&
            vg_plan_offered(p, args->w.family, VG_PATH_LOOP, rows)) {
            a.path = VG_PATH_LOOP;
            applies = 1;
        }
        cap.path = a.path;
        if (!applies || vg_plan_over_workspace_cap(dev, &cap, &a, p) ||
            !vg_device_plan_offered(dev, p, NULL))
            continue;
        size_t need = 0;
        if (dev->ops->workspace_bytes(p, &a, &need) == VG_OK && need > most)
            most = need;
    }
    *bytes = most;
    return VG_OK;
}
