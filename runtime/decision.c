/*
 * The dispatch decision: for each call, measure, reuse or heuristic
 * (DESIGN.md, "The runtime").
 *
 *   1. Reroute: grouped becomes loop above GROUPED_DECODE_MAX_TOKENS rows
 *      per group, or when the policy's fp8_grouped_bmm_decode is off.
 *   2. The shape bucket is the rows: M on dense, the rows of the largest
 *      group elsewhere.  Inside the tuning limits means dense M <=
 *      VG_TUNE_MAX_DENSE_M, or rows per group <= VG_TUNE_MAX_GROUP_TOKENS.
 *   3. Beyond the limits: heuristic, always (nothing there is measured and
 *      nothing there is looked up, frozen or not).
 *   4. Cached for (policy, family, path, n, k, groups, rows): reuse.
 *   5. Frozen device: the plan of the next larger measured shape of the
 *      same series (reuse), else the heuristic.  Never measure.
 *   6. Tuning off (fp8_tune_small_shapes false): heuristic.
 *   7. The stream is capturing a graph: measuring would launch and time
 *      outside the graph's order, so it is refused; the call falls back to
 *      the next larger measured shape or the heuristic and the trace says
 *      "capturing" on a vg-trace-note line.
 *   8. Otherwise measure: time every plan that applies (the backend's timer:
 *      warm-up launches, repeated launches, median; or the test's scripted
 *      timer), keep the fastest (the first in table order on a tie) with its
 *      time in the cache, then run it for the call.
 *
 * The freeze check of step 5 is repeated inside the measurement protocol
 * (freeze.c), so a freeze that lands between the lookup and the measurement
 * still wins.
 */
#include <string.h>
#include <time.h>

#include "coord_internal.h"
#include "internal.h"
#include "kernels.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

const char *vg_decision_name(vg_decision d)
{
    switch (d) {
    case VG_DECISION_MEASURE: return "measure";
    case VG_DECISION_REUSE: return "reuse";
    case VG_DECISION_HEURISTIC: return "heuristic";
    }
    return "unknown";
}

static vg_status heuristic(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                           const char *why)
{
    c->decision = VG_DECISION_HEURISTIC;
    c->why = why;
    c->plan = dev->ops->heuristic(args->w.family, c->path, c->rows, args->w.n, args->w.k);
    if (!c->plan)
        return vg_fail(VG_ERR_UNSUPPORTED, "%s backend has no plan for %s/%s with %d rows",
                       dev->ops->name, vg_family_name(args->w.family), vg_path_name(c->path),
                       (int)c->rows);
    return VG_OK;
}

/* Step 5 and the capture fallback: the next larger measured shape of the
 * series, else the heuristic. */
static vg_status fallback(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                          const char *why_reuse, const char *why_heuristic)
{
    int32_t found_rows = 0;
    if (vg_cache_find_at_least(&c->tuning->cache, &c->key, &c->plan, &found_rows)) {
        c->decision = VG_DECISION_REUSE;
        c->why = why_reuse;
        return VG_OK;
    }
    return heuristic(dev, args, c, why_heuristic);
}

vg_status vg_dispatch_decide(vg_device *dev, const vg_policy *pol, const vg_gemm_args *args,
                             vg_choice *c)
{
    return vg_dispatch_decide_in(dev, &dev->tuning, pol, args, c);
}

vg_status vg_dispatch_decide_in(vg_device *dev, vg_tuning *t, const vg_policy *pol,
                                const vg_gemm_args *args, vg_choice *c)
{
    const vg_family_policy *fp = vg_policy_family(pol, args->w.family);
    c->tuning = t;
    c->plan = NULL;
    c->why = "";
    c->path = args->path;
    c->rows = vg_gemm_max_group_rows(args);
    if (c->path == VG_PATH_GROUPED &&
        (!fp->grouped_bmm_decode || c->rows > GROUPED_DECODE_MAX_TOKENS))
        c->path = VG_PATH_LOOP;
    c->within_limits = c->path == VG_PATH_DENSE ? c->rows <= VG_TUNE_MAX_DENSE_M
                                                : c->rows <= VG_TUNE_MAX_GROUP_TOKENS;
    c->key = (vg_cache_key){.policy = fp->hash, .family = args->w.family, .path = c->path,
                            .n = args->w.n, .k = args->w.k, .groups = args->w.groups,
                            .rows = c->rows};

    if (c->rows <= 0)
        return heuristic(dev, args, c, "empty call");
    if (!c->within_limits)
        return heuristic(dev, args, c, "over the tuning limit");
    if (vg_cache_find(&t->cache, &c->key, &c->plan)) {
        c->decision = VG_DECISION_REUSE;
        c->why = "cached";
        return VG_OK;
    }
    /* A sharing engine reuses what another sharing engine measured under
     * the same policy hash (and keeps it, imported, in its own set). */
    double shared_us = 0.0;
    if (t->shared && vg_cache_find(t->shared, &c->key, &c->plan) &&
        vg_cache_put(&t->cache, &c->key, c->plan, shared_us, 1, NULL) == VG_OK) {
        c->decision = VG_DECISION_REUSE;
        c->why = "shared";
        return VG_OK;
    }
    if (atomic_load_explicit(&t->frozen, memory_order_acquire))
        return fallback(dev, args, c, "frozen: next larger measured shape",
                        "frozen: no measured shape at or above");
    if (!fp->tune_small_shapes)
        return heuristic(dev, args, c, "tuning off");
    if (vg_device_capturing(dev, args->stream))
        return fallback(dev, args, c, "capturing", "capturing");
    c->decision = VG_DECISION_MEASURE;
    return VG_OK;
}

/* Step 8.  `args` has the rerouted path.  On return c->decision is MEASURE
 * with the winner, or the frozen fallback when a freeze won the race. */
static vg_status measure(vg_device *dev, const char *op, const vg_policy *pol,
                         const vg_gemm_args *args, vg_choice *c, double *winner_us)
{
    /* per_family.fp8.tiles_within_scale_block: only plans whose tiles stay
     * inside one 128x128 scale block along N and K. */
    int within_block = vg_policy_family(pol, args->w.family)->tiles_within_scale_block;
    vg_tuning *t = c->tuning;
    if (!vg_tuning_measure_begin(t))
        return fallback(dev, args, c, "frozen: next larger measured shape",
                        "frozen: no measured shape at or above");
    const vg_plan *best = NULL;
    double best_us = 0.0;
    size_t count = dev->ops->plan_count();
    for (size_t i = 0; i < count; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        if (!vg_plan_applies(p, args->w.family, c->path, c->rows))
            continue;
        if (within_block && (p->tile_n <= 0 || p->tile_k <= 0 || 128 % p->tile_n != 0 ||
                             128 % p->tile_k != 0))
            continue;
        double us = 0.0;
        /* A candidate that cannot run this shape is not a candidate. */
        if (vg_device_time_plan(dev, op, c, p, args, &us) != VG_OK || !(us >= 0.0))
            continue;
        if (!best || us < best_us) {
            best = p;
            best_us = us;
        }
    }
    vg_status st = vg_tuning_measure_end(t, &c->key, best, best_us);
    if (st == VG_OK && best && t->shared)
        st = vg_cache_put(t->shared, &c->key, best, best_us, 0, NULL);
    if (st != VG_OK)
        return st;
    if (!best)
        return heuristic(dev, args, c, "no candidate could be timed");
    c->decision = VG_DECISION_MEASURE;
    c->plan = best;
    c->why = "measured";
    *winner_us = best_us;
    return VG_OK;
}

static vg_status gemm_in(vg_device *dev, vg_tuning *t, const vg_policy *pol, const char *op,
                         const vg_gemm_args *args, vg_dispatch_info *info);

vg_status vg_gemm(vg_device *dev, const char *op, const vg_gemm_args *args,
                  vg_dispatch_info *info)
{
    if (!dev || !op || !args)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_gemm: NULL argument");
    vg_engine *eng = NULL;
    const vg_policy *pol = vg_policy_current_engine(dev, &eng);
    if (!eng)
        return gemm_in(dev, &dev->tuning, pol, op, args, info);
    /* An engine entered on this thread: its measured set, counted in flight
     * so that vg_engine_close waits for this call. */
    if (!vg_engine_acquire(eng))
        return VG_ERR_STATE;
    vg_status st = gemm_in(dev, &eng->tuning, pol, op, args, info);
    vg_engine_release(eng);
    return st;
}

static vg_status gemm_in(vg_device *dev, vg_tuning *t, const vg_policy *pol, const char *op,
                         const vg_gemm_args *args, vg_dispatch_info *info)
{
    if (!dev || !op || !args)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_gemm: NULL argument");
    if (!vg_registry_find(op))
        return vg_fail(VG_ERR_NOT_FOUND, "vg_gemm: operator '%s' is not registered", op);
    vg_status st = vg_gemm_check_args(args);
    if (st != VG_OK)
        return st;

    /* The clock is read only when the caller wants the figure. */
    double t0 = info ? now_us() : 0.0;
    vg_choice c;
    if ((st = vg_dispatch_decide_in(dev, t, pol, args, &c)) != VG_OK)
        return st;
    vg_gemm_args a = *args;
    a.path = c.path;
    double us = 0.0;
    /* fp8_coordinated_tuning: the ranks of the device's communicator agree
     * on the decision (coord.c, issue 8); without a communicator, or for a
     * shape that needs no agreement, it leaves c alone. */
    int agreed = 0;
    if (pol->coordinated_tuning &&
        (st = vg_coord_decide(dev, op, pol, &a, &c, &us, &agreed)) != VG_OK)
        return st;
    if (!agreed && c.decision == VG_DECISION_MEASURE && (st = measure(dev, op, pol, &a, &c, &us)) != VG_OK)
        return st;

    if (vg_trace_on(&dev->trace)) {
        if (strcmp(c.why, "capturing") == 0)
            vg_trace_line(&dev->trace,
                          "vg-trace-note why=capturing op=%s family=%s path=%s m=%d n=%d k=%d "
                          "groups=%d policy=%016llx",
                          op, vg_family_name(a.w.family), vg_path_name(c.path), (int)a.m,
                          (int)a.w.n, (int)a.w.k, (int)a.w.groups,
                          (unsigned long long)c.key.policy);
        vg_trace_decision(dev, op, &a, &c, c.key.policy);
    }
    if (info) {
        info->decision = c.decision;
        info->plan = c.plan;
        info->path = c.path;
        info->policy_hash = c.key.policy;
        info->measured_us = us;
        info->why = c.why;
        info->dispatch_us = now_us() - t0;
    }
    return vg_device_launch(dev, c.plan, &a);
}

static const vg_plan *find_plan(vg_device *dev, const char *id)
{
    size_t count = dev->ops->plan_count();
    for (size_t i = 0; i < count; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        if (p && strcmp(p->id, id) == 0)
            return p;
    }
    return NULL;
}

/* For lut.c: the device's plan of that id, or NULL. */
const vg_plan *vg_device_find_plan(vg_device *dev, const char *id)
{
    return find_plan(dev, id);
}

vg_status vg_gemm_with_plan(vg_device *dev, const char *plan_id, const vg_gemm_args *args)
{
    if (!dev || !plan_id || !args)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_gemm_with_plan: NULL argument");
    const vg_plan *p = find_plan(dev, plan_id);
    if (!p)
        return vg_fail(VG_ERR_NOT_FOUND, "plan '%s' is not a %s plan", plan_id, dev->ops->name);
    vg_status st = vg_gemm_check_args(args);
    if (st != VG_OK)
        return st;
    int32_t rows = vg_gemm_max_group_rows(args);
    if (!vg_plan_applies(p, args->w.family, args->path, rows))
        return vg_fail(VG_ERR_UNSUPPORTED, "plan '%s' does not apply to %s/%s with %d rows",
                       plan_id, vg_family_name(args->w.family), vg_path_name(args->path),
                       (int)rows);
    return vg_device_launch(dev, p, args);
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

vg_status vg_gemm_workspace_bytes(vg_device *dev, const vg_gemm_args *args, size_t *bytes)
{
    if (!dev || !args || !bytes)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_gemm_workspace_bytes: NULL argument");
    int32_t rows = vg_gemm_max_group_rows(args);
    size_t most = 0, total = dev->ops->plan_count();
    for (size_t i = 0; i < total; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        /* A grouped call may run as loop (rerouted), so count both. */
        vg_gemm_args a = *args;
        int applies = vg_plan_applies(p, args->w.family, args->path, rows);
        if (!applies && args->path == VG_PATH_GROUPED &&
            vg_plan_applies(p, args->w.family, VG_PATH_LOOP, rows)) {
            a.path = VG_PATH_LOOP;
            applies = 1;
        }
        if (!applies)
            continue;
        size_t need = 0;
        if (dev->ops->workspace_bytes(p, &a, &need) == VG_OK && need > most)
            most = need;
    }
    *bytes = most;
    return VG_OK;
}
