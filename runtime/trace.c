/*
 * The decision trace.  VG_GEMM_TRACE=1 writes to stderr, any other non-empty
 * value (except 0) is a file path opened for append.  One line per decision:
 *
 *   vg-trace op=<name> family=<f> path=<p> m=<M> n=<N> k=<K> groups=<G>
 *            policy=<16 hex> decision=<measure|reuse|heuristic> plan=<id>
 *            measured=<shapes measured on this device so far> frozen=<0|1>
 *
 * (on one line).  Other kinds of line share the stream, with their own
 * prefixes so that a parser of decision lines skips them (vg-trace-coord,
 * coordinated tuning's rounds, is written by coord.c):
 *   vg-trace-note why=<reason> op=... family=... path=... m=... n=... k=... groups=... policy=...
 *     a measurement refused for a reason the decision line cannot show
 *     (today: the stream was capturing a CUDA graph);
 *   vg-trace-lut action=import file=<path> applied=<n> skipped_arch=<n>
 *                skipped_policy=<n> skipped_plan=<n>
 *   vg-trace-candidate op=... family=... path=... m=... n=... k=... groups=... policy=...
 *                plan=<id> us=<median> timer=<graph|flush|host|scripted> copies=<n>
 *     one per plan timed by a measurement (or by a coordinated one), before
 *     its decision line (none follows if the call then fails): the winner
 *     is the smallest us (for a coordinated one, of the ranks' maxima).  A
 *     plan the measurement does not rank reads us=none status=<vg_status>
 *     why=<vg_last_error(), to the end of the line> (status=0: the timer
 *     gave no usable time, e.g. NaN).  timer: graph = a CUDA graph of
 *     back-to-back launches rotating `copies` weight buffers (1: the
 *     caller's own, already 3x the L2), flush = one launch at a time after
 *     an L2 flush (its fallback), host = the CPU backend's clock, scripted =
 *     a test's timer.  A plan that applies to the shape but that the device
 *     does not offer (the dequantize + cuBLAS kind where cuBLAS did not load
 *     or VG_CUDA_DQBLAS=0) is never timed: its line reads us=none
 *     status=<VG_ERR_UNSUPPORTED> why=not offered: <the backend's reason>.
 *   vg-trace-offer backend=<name> device=<ordinal> kind=<plan kind> offered=0 why=<reason, to the end of the line>
 *     one per plan kind the device does not offer, when its trace opens
 *     (vg_device_open, vg_trace_set): the reason a kind never appears in a
 *     heuristic decision.
 *
 * Each line is formatted into a buffer and written with one write() on an
 * O_APPEND descriptor, so lines of concurrent threads (and processes) do not
 * interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

void vg_trace_init_from_env(vg_trace *t)
{
    atomic_init(&t->fd, -1);
    t->owned = 0;
    const char *env = getenv("VG_GEMM_TRACE");
    if (env && *env && vg_trace_open(t, env) != VG_OK)
        fprintf(stderr, "voltgate: VG_GEMM_TRACE ignored: %s\n", vg_last_error());
}

void vg_trace_close(vg_trace *t)
{
    int fd = atomic_exchange(&t->fd, -1);
    if (fd >= 0 && t->owned)
        close(fd);
    t->owned = 0;
}

vg_status vg_trace_open(vg_trace *t, const char *target)
{
    vg_trace_close(t);
    if (!target || !*target || strcmp(target, "0") == 0)
        return VG_OK;
    if (strcmp(target, "1") == 0) {
        atomic_store(&t->fd, STDERR_FILENO);
        return VG_OK;
    }
    int fd = open(target, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return vg_fail(VG_ERR_IO, "trace %s: %s", target, strerror(errno));
    t->owned = 1;
    atomic_store(&t->fd, fd);
    return VG_OK;
}

void vg_trace_line(vg_trace *t, const char *fmt, ...)
{
    int fd = atomic_load_explicit(&t->fd, memory_order_relaxed);
    if (fd < 0)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int len = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len > sizeof buf - 2)
        len = (int)sizeof buf - 2;
    buf[len++] = '\n';
    /* One write per line; a short write to a pipe is not retried, so a
     * line is either whole or cut, never mixed with another. */
    ssize_t w;
    do {
        w = write(fd, buf, (size_t)len);
    } while (w < 0 && errno == EINTR);
}

vg_status vg_trace_set(vg_device *dev, const char *target)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_trace_set: dev is NULL");
    vg_status st = vg_trace_open(&dev->trace, target);
    if (st == VG_OK)
        vg_trace_offers(dev);
    return st;
}

void vg_trace_offers(vg_device *dev)
{
    if (!vg_trace_on(&dev->trace) || !dev->ops->plan_offered)
        return;
    int said[VG_KIND_COUNT] = {0};
    size_t total = dev->ops->plan_count();
    for (size_t i = 0; i < total; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        const char *why = NULL;
        if (!p || (unsigned)p->kind >= VG_KIND_COUNT || said[p->kind] ||
            vg_device_plan_offered(dev, p, &why))
            continue;
        said[p->kind] = 1;
        vg_trace_line(&dev->trace, "vg-trace-offer backend=%s device=%d kind=%s offered=0 why=%s",
                      dev->ops->name, dev->ordinal, vg_plan_kind_name(p->kind),
                      why && *why ? why : "not offered");
    }
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

static const char *const reason_names[VG_REASON_COUNT] = {
    [VG_REASON_NONE] = "",
    [VG_REASON_EMPTY_CALL] = "empty call",
    [VG_REASON_OVER_LIMIT] = "over the tuning limit",
    [VG_REASON_UNEVEN_GROUPS] = "uneven groups: the rule's plan for this routing",
    [VG_REASON_CACHED] = "cached",
    [VG_REASON_SHARED] = "shared",
    [VG_REASON_FROZEN_NEXT_LARGER] = "frozen: next larger measured shape",
    [VG_REASON_FROZEN_NONE_ABOVE] = "frozen: no measured shape at or above",
    [VG_REASON_TUNING_OFF] = "tuning off",
    [VG_REASON_CAPTURING] = "capturing",
    [VG_REASON_MEASURED] = "measured",
    [VG_REASON_NO_CANDIDATE_TIMED] = "no candidate could be timed",
    [VG_REASON_COORD_MEASURED] = "coordinated: measured on every rank",
    [VG_REASON_COORD_NO_CANDIDATE_TIMED] = "coordinated: no candidate could be timed on every rank",
    [VG_REASON_COORD_RANK_TUNING_OFF] = "coordinated: a rank has tuning off",
    [VG_REASON_COORD_RANK_FROZEN] = "coordinated: a rank is frozen",
    [VG_REASON_COORD_RANK_CAPTURING] = "coordinated: a rank is capturing",
    [VG_REASON_DEQUANT_OVER_CAP] = "dequant+cublas workspace over dequant_workspace_max_mib",
};

const char *vg_reason_name(vg_reason r)
{
    return (unsigned)r < VG_REASON_COUNT && reason_names[r] ? reason_names[r] : "unknown";
}

const char *vg_permit_name(vg_measure_permit p)
{
    switch (p) {
    case VG_PERMIT_TUNING_OFF: return "tuning-off";
    case VG_PERMIT_FROZEN: return "frozen";
    case VG_PERMIT_CAPTURING: return "capturing";
    case VG_PERMIT_MEASURE: break;
    }
    return "none";
}

void vg_trace_decision(vg_device *dev, const char *op, const vg_gemm_args *args,
                       const vg_choice *c, uint64_t policy_hash)
{
    if (!vg_trace_on(&dev->trace))
        return;
    vg_trace_line(&dev->trace,
                  "vg-trace op=%s family=%s path=%s m=%d n=%d k=%d groups=%d policy=%016llx "
                  "decision=%s plan=%s measured=%llu frozen=%d",
                  op, vg_family_name(args->w.family), vg_path_name(c->path), (int)args->m,
                  (int)args->w.n, (int)args->w.k, (int)args->w.groups,
                  (unsigned long long)policy_hash, vg_decision_name(c->decision),
                  c->plan ? c->plan->id : "none",
                  (unsigned long long)atomic_load(&c->tuning->measured_total),
                  atomic_load(&c->tuning->frozen) ? 1 : 0);
}

void vg_trace_not_offered(vg_device *dev, const char *op, const vg_gemm_args *args,
                          const vg_choice *c, const vg_plan *p, const char *why)
{
    if (!vg_trace_on(&dev->trace))
        return;
    vg_trace_line(&dev->trace,
                  "vg-trace-candidate op=%s family=%s path=%s m=%d n=%d k=%d groups=%d "
                  "policy=%016llx plan=%s us=none status=%d why=not offered: %s",
                  op, vg_family_name(args->w.family), vg_path_name(c->path), (int)args->m,
                  (int)args->w.n, (int)args->w.k, (int)args->w.groups,
                  (unsigned long long)c->key.policy, p ? p->id : "none", (int)VG_ERR_UNSUPPORTED,
                  why && *why ? why : "the device does not offer it");
}

void vg_trace_candidate(vg_device *dev, const char *op, const vg_gemm_args *args,
                        const vg_choice *c, const vg_plan *p, vg_status st, double us,
                        const vg_timer_info *how)
{
    if (!vg_trace_on(&dev->trace))
        return;
    /* What the measurement ranks (vg_time_candidates): a time that is
     * negative, NaN or infinite is not ranked, so the trace says none. */
    char why[64];
    const char *because = vg_last_error();
    if (st == VG_OK) {
        if (us >= 0.0 && isfinite(us)) {
            vg_trace_line(&dev->trace,
                          "vg-trace-candidate op=%s family=%s path=%s m=%d n=%d k=%d groups=%d "
                          "policy=%016llx plan=%s us=%.3f timer=%s copies=%d",
                          op, vg_family_name(args->w.family), vg_path_name(c->path),
                          (int)args->m, (int)args->w.n, (int)args->w.k, (int)args->w.groups,
                          (unsigned long long)c->key.policy, p ? p->id : "none", us,
                          how->clock, how->copies);
            return;
        }
        snprintf(why, sizeof why, "the %s timer gave %g", how->clock, us);
        because = why;
    }
    vg_trace_line(&dev->trace,
                  "vg-trace-candidate op=%s family=%s path=%s m=%d n=%d k=%d groups=%d "
                  "policy=%016llx plan=%s us=none status=%d why=%s",
                  op, vg_family_name(args->w.family), vg_path_name(c->path), (int)args->m,
                  (int)args->w.n, (int)args->w.k, (int)args->w.groups,
                  (unsigned long long)c->key.policy, p ? p->id : "none", (int)st, because);
}
