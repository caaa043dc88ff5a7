/*
 * One call, from the decision to the launch: vg_gemm() decides
 * (decision.c), lets the ranks agree when the policy coordinates
 * (coord.c), measures when the decision says so (decision.c again), writes
 * the trace and launches.  It sits above both so that neither the decision
 * nor the agreement calls the other's caller.
 */
#include <string.h>

#include "coord_internal.h"
#include "internal.h"
#include "kernels.h"
#include "timing.h"

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
    double t0 = info ? vg_now_us() : 0.0;
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
    if (!agreed && c.decision == VG_DECISION_MEASURE &&
        (st = vg_decide_measure(dev, op, pol, &a, &c, &us)) != VG_OK)
        return st;

    if (vg_trace_on(&dev->trace)) {
        const vg_reason notes[] = {c.why == VG_REASON_CAPTURING ? c.why : VG_REASON_NONE, c.note};
        for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
            if (notes[i] != VG_REASON_NONE)
                vg_trace_line(&dev->trace,
                              "vg-trace-note why=%s op=%s family=%s path=%s m=%d n=%d k=%d "
                              "groups=%d policy=%016llx",
                              vg_reason_name(notes[i]), op, vg_family_name(a.w.family),
                              vg_path_name(c.path), (int)a.m, (int)a.w.n, (int)a.w.k,
                              (int)a.w.groups, (unsigned long long)c.key.policy);
        vg_trace_decision(dev, op, &a, &c, c.key.policy);
    }
    if (info) {
        info->decision = c.decision;
        info->plan = c.plan;
        info->path = c.path;
        info->policy_hash = c.key.policy;
        info->measured_us = us;
        info->why = vg_reason_name(c.why);
        info->dispatch_us = vg_now_us() - t0;
    }
    return vg_device_launch(dev, c.plan, &a);
}

vg_status vg_gemm_with_plan(vg_device *dev, const char *plan_id, const vg_gemm_args *args)
{
    if (!dev || !plan_id || !args)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_gemm_with_plan: NULL argument");
    const vg_plan *p = vg_device_find_plan(dev, plan_id);
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
