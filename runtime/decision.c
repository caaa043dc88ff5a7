/*
 * The dispatch decision: for each call, measure, reuse or heuristic
 * (DESIGN.md, "The runtime").
 *
 *   1. Reroute (vg_route_path): grouped becomes loop when the policy's
 *      fp8_grouped_bmm_decode is off, and moe above GROUPED_DECODE_MAX_TOKENS
 *      rows per group (one launch of the grouped kernels over the call's
 *      offsets: 1.5-2.3x the per-group loop at 17-256 rows, kernels/cuda/
 *      KERNELS.md D37).
 *   2. The rows are M on dense, the rows of the largest group elsewhere.
 *      The shape bucket (vg_tune_bucket_rows) is the rows themselves
 *      inside the exact limits (dense M <= VG_TUNE_MAX_DENSE_M, rows per
 *      group <= VG_TUNE_MAX_GROUP_TOKENS), else the next power of two up
 *      to VG_TUNE_MAX_BUCKET_ROWS.  The cache key, the measurement, the
 *      frozen lookup, the LUT and coordinated rounds all use the bucket.
 *   3. Beyond VG_TUNE_MAX_BUCKET_ROWS: heuristic, always (nothing there is
 *      measured and nothing there is looked up, frozen or not).  Likewise
 *      where the backend's rule picks another plan for the call's own
 *      groups than for every group at its largest group's rows: the key
 *      cannot tell the routings apart (rule_sees_uneven_groups).
 *   4. Cached for (policy, family, path, n, k, groups, bucket): reuse.
 *   5. Frozen device: the plan of the next larger measured bucket of the
 *      same series (reuse), else the heuristic.  Never measure.
 *   6. Tuning off (fp8_tune_small_shapes false): heuristic.
 *   7. The stream is capturing a graph: measuring would launch and time
 *      outside the graph's order, so it is refused; the call falls back to
 *      the next larger measured shape or the heuristic and the trace says
 *      "capturing" on a vg-trace-note line.
 *   The heuristic's plan, when it needs more workspace than the policy's
 *      dequant_workspace_max_mib, gives way to the rule's native plan
 *      (a vg-trace-note says so); a measurement refuses such a candidate.
 *   8. Otherwise measure: time every plan that applies to the bucket's
 *      rows, so the winner can run every call of the bucket (the backend's
 *      timer: warm-up launches, repeated launches, median; or the test's
 *      scripted timer), keep the fastest (the first in table order on a tie) with its
 *      time in the cache, then run it for the call.  The candidates are
 *      timed on the call that triggered the measurement (its actual rows),
 *      not on a synthetic call of the bucket's rows: the caller's buffers
 *      are the only ones sized for this layer, timing a bucket's rows would
 *      need scratch inputs and outputs of up to VG_TUNE_MAX_BUCKET_ROWS
 *      rows per call, and the plan ranking inside one power-of-two bucket
 *      is what the first call of the bucket sees.
 *
 * The freeze check of step 5 is repeated inside the measurement protocol
 * (freeze.c), so a freeze that lands between the lookup and the measurement
 * still wins.
 *
 * These rules and the candidate-timing loop exist once, here: a
 * coordinated round (coord.c) calls them and adds only the agreement, so
 * a rule changed here changes every rank alike.  vg_gemm() (gemm.c) runs
 * the decision, the agreement and the measurement in that order.
 */
#include <math.h>
#include <stdlib.h>

#include "internal.h"

vg_path vg_route_path(const vg_family_policy *fp, vg_path path, int32_t rows)
{
    if (path != VG_PATH_GROUPED)
        return path;
    if (!fp->grouped_bmm_decode)
        return VG_PATH_LOOP;
    return rows > GROUPED_DECODE_MAX_TOKENS ? VG_PATH_MOE : VG_PATH_GROUPED;
}

int32_t vg_tune_bucket_rows(vg_path path, int32_t rows)
{
    int32_t exact_limit = path == VG_PATH_DENSE ? VG_TUNE_MAX_DENSE_M : VG_TUNE_MAX_GROUP_TOKENS;
    if (rows <= 0 || rows > VG_TUNE_MAX_BUCKET_ROWS)
        return 0;
    if (rows <= exact_limit)
        return rows;
    int32_t bucket = 1;
    while (bucket < rows)
        bucket *= 2;
    return bucket;
}

/* Non-zero when plan p needs more workspace for this call than the
 * policy's dequant_workspace_max_mib allows; the message in
 * vg_last_error() then says how much. */
int vg_plan_over_workspace_cap(vg_device *dev, const vg_choice *c, const vg_gemm_args *args,
                               const vg_plan *p)
{
    if (!p || p->kind != VG_KIND_DEQUANT_BLAS || c->ws_cap_mib < 0)
        return 0;
    vg_gemm_args a = *args;
    a.path = c->path;
    size_t need = 0;
    if (dev->ops->workspace_bytes(p, &a, &need) != VG_OK)
        return 1;
    if (need <= ((size_t)c->ws_cap_mib << 20))
        return 0;
    vg_fail(VG_ERR_LIMIT, "%s needs %.1f MiB of workspace, over dequant_workspace_max_mib=%d",
            p->id, (double)need / (1 << 20), c->ws_cap_mib);
    return 1;
}

vg_status vg_decide_heuristic(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                              vg_reason why)
{
    c->decision = VG_DECISION_HEURISTIC;
    c->why = why;
    c->plan = dev->ops->heuristic(args->w.family, c->path, c->rows, args->w.n, args->w.k, args);
    if (vg_plan_over_workspace_cap(dev, c, args, c->plan)) {
        c->note = VG_REASON_DEQUANT_OVER_CAP;
        c->plan =
            dev->ops->heuristic_native(args->w.family, c->path, c->rows, args->w.n, args->w.k, args);
    }
    if (!c->plan)
        return vg_fail(VG_ERR_UNSUPPORTED, "%s backend has no plan for %s/%s with %d rows",
                       dev->ops->name, vg_family_name(args->w.family), vg_path_name(c->path),
                       (int)c->rows);
    return VG_OK;
}

vg_status vg_decide_refused(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                            vg_measure_permit permit, vg_reason reuse_why,
                            vg_reason heuristic_why)
{
    int32_t found_rows = 0;
    if (permit != VG_PERMIT_TUNING_OFF &&
        vg_cache_find_at_least(&c->tuning->cache, &c->key, &c->plan, &found_rows)) {
        c->decision = VG_DECISION_REUSE;
        c->why = reuse_why;
        return VG_OK;
    }
    return vg_decide_heuristic(dev, args, c, heuristic_why);
}

/* The local decision's words for each refusal: {reuse, heuristic}. */
static const vg_reason refusal_reasons[][2] = {
    [VG_PERMIT_TUNING_OFF] = {VG_REASON_TUNING_OFF, VG_REASON_TUNING_OFF},
    [VG_PERMIT_FROZEN] = {VG_REASON_FROZEN_NEXT_LARGER, VG_REASON_FROZEN_NONE_ABOVE},
    [VG_PERMIT_CAPTURING] = {VG_REASON_CAPTURING, VG_REASON_CAPTURING},
};

static vg_status refused_alone(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                               vg_measure_permit permit)
{
    return vg_decide_refused(dev, args, c, permit, refusal_reasons[permit][0],
                             refusal_reasons[permit][1]);
}

int vg_decide_cached(vg_choice *c)
{
    if (!vg_cache_find(&c->tuning->cache, &c->key, &c->plan))
        return 0;
    c->decision = VG_DECISION_REUSE;
    c->why = VG_REASON_CACHED;
    return 1;
}

vg_measure_permit vg_decide_permit(vg_device *dev, const vg_choice *c, const vg_policy *pol,
                                   const vg_gemm_args *args)
{
    if (atomic_load_explicit(&c->tuning->frozen, memory_order_acquire))
        return VG_PERMIT_FROZEN;
    if (!vg_policy_family(pol, args->w.family)->tune_small_shapes)
        return VG_PERMIT_TUNING_OFF;
    if (vg_device_capturing(dev, args->stream))
        return VG_PERMIT_CAPTURING;
    return VG_PERMIT_MEASURE;
}

vg_status vg_dispatch_decide(vg_device *dev, const vg_policy *pol, const vg_gemm_args *args,
                             vg_choice *c)
{
    return vg_dispatch_decide_in(dev, &dev->tuning, pol, args, c);
}

/* Whether the backend's rule picks another plan for this call's own groups
 * than for every group at the largest group's rows (its routing_plan).  The
 * routing then decides, and the cache key (the largest group's bucket)
 * cannot tell two routings apart: a plan measured on an even call of the
 * bucket would serve a skewed one, or the other way round. */
static int rule_sees_uneven_groups(vg_device *dev, const vg_gemm_args *args, const vg_choice *c)
{
    if (c->path == VG_PATH_DENSE || !args->offsets_host || !dev->ops->routing_plan)
        return 0;
    return dev->ops->routing_plan(args->w.family, c->path, c->rows, args->w.n, args->w.k, args) !=
           NULL;
}

vg_status vg_dispatch_decide_in(vg_device *dev, vg_tuning *t, const vg_policy *pol,
                                const vg_gemm_args *args, vg_choice *c)
{
    const vg_family_policy *fp = vg_policy_family(pol, args->w.family);
    c->tuning = t;
    c->plan = NULL;
    c->why = VG_REASON_NONE;
    c->note = VG_REASON_NONE;
    c->ws_cap_mib = fp->dequant_workspace_max_mib;
    c->rows = vg_gemm_max_group_rows(args);
    c->path = vg_route_path(fp, args->path, c->rows);
    int32_t bucket = vg_tune_bucket_rows(c->path, c->rows);
    c->within_limits = bucket > 0;
    c->key = (vg_cache_key){.policy = fp->hash, .family = args->w.family, .path = c->path,
                            .n = args->w.n, .k = args->w.k, .groups = args->w.groups,
                            .rows = bucket};

    if (c->rows <= 0)
        return vg_decide_heuristic(dev, args, c, VG_REASON_EMPTY_CALL);
    if (!c->within_limits)
        return vg_decide_heuristic(dev, args, c, VG_REASON_OVER_LIMIT);
    if (rule_sees_uneven_groups(dev, args, c))
        return vg_decide_heuristic(dev, args, c, VG_REASON_UNEVEN_GROUPS);
    if (vg_decide_cached(c))
        return VG_OK;
    /* A sharing engine reuses what another sharing engine measured under
     * the same policy hash (and keeps it, imported, in its own set). */
    double shared_us = 0.0;
    if (t->shared && vg_cache_find(t->shared, &c->key, &c->plan) &&
        vg_cache_put(&t->cache, &c->key, c->plan, shared_us, 1, NULL) == VG_OK) {
        c->decision = VG_DECISION_REUSE;
        c->why = VG_REASON_SHARED;
        return VG_OK;
    }
    vg_measure_permit permit = vg_decide_permit(dev, c, pol, args);
    if (permit != VG_PERMIT_MEASURE)
        return refused_alone(dev, args, c, permit);
    c->decision = VG_DECISION_MEASURE;
    return VG_OK;
}

size_t vg_measure_candidates(vg_device *dev, const vg_policy *pol, const vg_gemm_args *args,
                             const vg_choice *c, const vg_plan **out, size_t max)
{
    /* per_family.fp8.tiles_within_scale_block: only plans whose tiles stay
     * inside one 128x128 scale block along N and K. */
    int within_block = vg_policy_family(pol, args->w.family)->tiles_within_scale_block;
    size_t n = 0, total = dev->ops->plan_count();
    for (size_t i = 0; i < total; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        if (!vg_plan_offered(p, args->w.family, c->path, c->key.rows) ||
            !vg_device_plan_offered(dev, p, NULL))
            continue;
        if (within_block && (p->tile_n <= 0 || p->tile_k <= 0 || 128 % p->tile_n != 0 ||
                             128 % p->tile_k != 0))
            continue;
        if (n < max)
            out[n] = p;
        n++;
    }
    return n;
}

void vg_time_candidates(vg_device *dev, const char *op, const vg_choice *c,
                        const vg_gemm_args *args, const vg_plan *const *plans, size_t n,
                        double *times)
{
    /* The plans that apply here but that the device does not offer are no
     * candidates; a line each says why (cuBLAS missing, VG_CUDA_DQBLAS=0). */
    if (vg_trace_on(&dev->trace) && dev->ops->plan_offered) {
        size_t total = dev->ops->plan_count();
        for (size_t i = 0; i < total; i++) {
            const vg_plan *p = dev->ops->plan_at(i);
            const char *why = NULL;
            if (vg_plan_offered(p, args->w.family, c->path, c->key.rows) &&
                !vg_device_plan_offered(dev, p, &why))
                vg_trace_not_offered(dev, op, args, c, p, why);
        }
    }
    for (size_t i = 0; i < n; i++) {
        double us = 0.0;
        vg_timer_info how = {"scripted", 0};
        /* Over the workspace cap: refused, and the trace says so. */
        vg_status st = vg_plan_over_workspace_cap(dev, c, args, plans[i])
                           ? VG_ERR_LIMIT
                           : vg_device_time_plan(dev, plans[i], args, &us, &how);
        /* Every candidate, refused ones too, gets its line: the trace
         * shows why the winner won. */
        vg_trace_candidate(dev, op, args, c, plans[i], st, us, &how);
        /* A candidate that cannot run this shape is not a candidate (and,
         * in a coordinated round, +inf stays +inf through the maximum). */
        times[i] = st == VG_OK && us >= 0.0 && isfinite(us) ? us : INFINITY;
    }
}

const vg_plan *vg_fastest_candidate(const vg_plan *const *plans, const double *times, size_t n,
                                    double *us)
{
    const vg_plan *best = NULL;
    for (size_t i = 0; i < n; i++)
        if (isfinite(times[i]) && (!best || times[i] < *us)) {
            best = plans[i];
            *us = times[i];
        }
    return best;
}

vg_status vg_decide_measure(vg_device *dev, const char *op, const vg_policy *pol,
                            const vg_gemm_args *args, vg_choice *c, double *winner_us)
{
    vg_tuning *t = c->tuning;
    if (!vg_tuning_measure_begin(t))
        return refused_alone(dev, args, c, VG_PERMIT_FROZEN);
    size_t max = dev->ops->plan_count();
    const vg_plan **plans = max ? malloc(max * sizeof *plans) : NULL;
    double *times = max ? malloc(max * sizeof *times) : NULL;
    if (max && (!plans || !times)) {
        free(plans);
        free(times);
        vg_tuning_measure_end(t, &c->key, NULL, 0.0);
        return vg_fail(VG_ERR_NO_MEMORY, "measurement: out of memory");
    }
    size_t n = vg_measure_candidates(dev, pol, args, c, plans, max);
    vg_time_candidates(dev, op, c, args, plans, n, times);
    double best_us = 0.0;
    const vg_plan *best = vg_fastest_candidate(plans, times, n, &best_us);
    free(plans);
    free(times);
    vg_status st = vg_tuning_measure_end(t, &c->key, best, best_us);
    if (st == VG_OK && best && t->shared)
        st = vg_cache_put(t->shared, &c->key, best, best_us, 0, NULL);
    if (st != VG_OK)
        return st;
    if (!best)
        return vg_decide_heuristic(dev, args, c, VG_REASON_NO_CANDIDATE_TIMED);
    c->decision = VG_DECISION_MEASURE;
    c->plan = best;
    c->why = VG_REASON_MEASURED;
    *winner_us = best_us;
    return VG_OK;
}
