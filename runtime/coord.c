/*
 * Coordinated tuning: the ranks of one tensor-parallel group agree on one
 * plan per shape (include/voltgate/coord.h has the contract).
 *
 * The communicator of a device lives in a small side table here rather than
 * in struct vg_device, so that the device, the decision and the cache know
 * nothing of it: vg_gemm() (gemm.c) makes one call (vg_coord_decide) after
 * the decision, and only when the policy asks for coordination.  Entries
 * are never freed, only detached and reused: a call that looked an entry up
 * can never find it freed under it, and the table stays as small as the
 * number of devices that ever had a communicator.
 *
 * The rules, the candidate list and the timing loop are the decision's
 * (decision.c): this file adds only the agreement, so that a rule changed
 * there changes every rank alike.
 *
 * One round, on every rank alike:
 *
 *   agreement  allreduce_min_i64 of
 *                [0] code << 20 | rank   code: what this rank can do
 *                                        (3 measure, 2 capturing, 1 frozen,
 *                                        0 tuning off); the minimum is the
 *                                        group's rule, its low bits the
 *                                        lowest rank that imposed it
 *                [1] frozen              1 on every rank = all frozen
 *                [2],[3] call hash, its negation
 *                [4],[5] candidate hash, its negation
 *                [6],[7] group size, its negation
 *              (a value and its negation both reduced by MIN give the
 *              minimum and minus the maximum: equal means every rank sent
 *              the same value, with one collective instead of two).
 *   measure    each rank times its candidates in plan table order (a failed
 *              timing counts as +inf), allreduce_max_f64 of the times, the
 *              winner is the first candidate of the smallest finite maximum.
 *
 * A rank that began a measurement (vg_tuning_measure_begin) before the round
 * ends it with vg_tuning_measure_end on every way out, so a freeze waiting on
 * it is never left hanging.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "coord_internal.h"

/* What a rank can do in a round is the decision's vg_measure_permit; the
 * group takes the minimum (the enum is ordered for it). */
#define RANK_BITS 20
#define RANK_MASK ((1 << RANK_BITS) - 1)
/* Candidates of one call a round can time (plan tables are far smaller). */
#define MAX_CANDIDATES 256
/* Hashes are sent in 62 bits so that their negation fits an int64. */
#define HASH_MASK ((UINT64_C(1) << 62) - 1)

/* ---- the side table -------------------------------------------------------- */

typedef struct coord_entry {
    struct coord_entry *next;
    vg_device *dev;             /* NULL once the device was closed */
    pthread_mutex_t call_lock;  /* one round at a time per device */
    int attached;
    vg_comm comm;
    vg_coord_stats stats;       /* attached/rank/size filled at read time */
} coord_entry;

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static coord_entry *table;
/* Entries attached now: 0 lets every call skip the table lock. */
static atomic_int attached_count;

/* The entry of dev (attached or not), or NULL.  table_lock held. */
static coord_entry *find_locked(const vg_device *dev)
{
    for (coord_entry *e = table; e; e = e->next)
        if (e->dev == dev)
            return e;
    return NULL;
}

static coord_entry *find(const vg_device *dev)
{
    pthread_mutex_lock(&table_lock);
    coord_entry *e = find_locked(dev);
    pthread_mutex_unlock(&table_lock);
    return e;
}

vg_status vg_device_set_comm(vg_device *dev, const vg_comm *comm)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_set_comm: dev is NULL");
    if (comm) {
        if (!comm->allreduce_max_f64 || !comm->allreduce_min_i64)
            return vg_fail(VG_ERR_INVALID_ARG,
                           "vg_device_set_comm: allreduce_max_f64 and allreduce_min_i64 must "
                           "both be set");
        if (comm->size < 1 || comm->size > RANK_MASK || comm->rank < 0 ||
            comm->rank >= comm->size)
            return vg_fail(VG_ERR_INVALID_ARG,
                           "vg_device_set_comm: rank %d of size %d (want 0 <= rank < size <= %d)",
                           comm->rank, comm->size, RANK_MASK);
    }
    pthread_mutex_lock(&table_lock);
    coord_entry *e = find_locked(dev);
    if (!e && comm) {
        /* Reuse a closed device's entry before growing the table. */
        for (e = table; e && e->dev; e = e->next)
            ;
        if (!e) {
            e = calloc(1, sizeof *e);
            if (!e) {
                pthread_mutex_unlock(&table_lock);
                return vg_fail(VG_ERR_NO_MEMORY, "vg_device_set_comm: out of memory");
            }
            pthread_mutex_init(&e->call_lock, NULL);
            e->next = table;
            table = e;
        }
        e->dev = dev;
    }
    if (e) {
        /* A round in progress finishes with the communicator it started on. */
        pthread_mutex_lock(&e->call_lock);
        if (e->attached)
            atomic_fetch_sub(&attached_count, 1);
        e->attached = comm != NULL;
        if (comm) {
            e->comm = *comm;
            memset(&e->stats, 0, sizeof e->stats);
            atomic_fetch_add(&attached_count, 1);
        }
        pthread_mutex_unlock(&e->call_lock);
    }
    pthread_mutex_unlock(&table_lock);
    return VG_OK;
}

void vg_coord_device_closed(vg_device *dev)
{
    if (!dev)
        return;
    pthread_mutex_lock(&table_lock);
    coord_entry *e = find_locked(dev);
    if (e) {
        pthread_mutex_lock(&e->call_lock);
        if (e->attached)
            atomic_fetch_sub(&attached_count, 1);
        e->attached = 0;
        e->dev = NULL;
        pthread_mutex_unlock(&e->call_lock);
    }
    pthread_mutex_unlock(&table_lock);
}

vg_status vg_device_coord_stats(vg_device *dev, vg_coord_stats *out)
{
    if (!dev || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_coord_stats: NULL argument");
    memset(out, 0, sizeof *out);
    coord_entry *e = find(dev);
    if (!e)
        return VG_OK;
    pthread_mutex_lock(&e->call_lock);
    *out = e->stats;
    out->attached = e->attached;
    out->rank = e->attached ? e->comm.rank : 0;
    out->size = e->attached ? e->comm.size : 0;
    pthread_mutex_unlock(&e->call_lock);
    return VG_OK;
}

/* ---- hashes ------------------------------------------------------------------ */

static int64_t call_hash(const vg_choice *c)
{
    char s[128];
    int len = snprintf(s, sizeof s, "family=%d path=%d n=%d k=%d groups=%d rows=%d",
                       (int)c->key.family, (int)c->key.path, (int)c->key.n, (int)c->key.k,
                       (int)c->key.groups, (int)c->key.rows);
    return (int64_t)(vg_fnv1a64(s, (size_t)len, VG_FNV_OFFSET) & HASH_MASK);
}

/* The hash of the call's candidates (the decision's list, in order). */
static int64_t candidates_hash(vg_device *dev, const vg_plan *const *plans, size_t n)
{
    uint64_t h = vg_fnv1a64(dev->ops->name, strlen(dev->ops->name) + 1, VG_FNV_OFFSET);
    for (size_t i = 0; i < n; i++)
        h = vg_fnv1a64(plans[i]->id, strlen(plans[i]->id) + 1, h);
    return (int64_t)(h & HASH_MASK);
}

/* ---- one round ------------------------------------------------------------------ */

static void trace_round(vg_device *dev, const coord_entry *e, const char *op,
                        const vg_gemm_args *args, const vg_choice *c, uint64_t policy,
                        const char *outcome, int refused_by, vg_measure_permit permit,
                        const vg_plan *local_best, double slowest_us)
{
    if (!vg_trace_on(&dev->trace))
        return;
    vg_trace_line(&dev->trace,
                  "vg-trace-coord rank=%d size=%d op=%s family=%s path=%s m=%d n=%d k=%d "
                  "groups=%d policy=%016" PRIx64 " outcome=%s decision=%s plan=%s "
                  "refused_by=%d reason=%s local_best=%s slowest_us=%.6g all_frozen=%d",
                  e->comm.rank, e->comm.size, op, vg_family_name(args->w.family),
                  vg_path_name(c->path), (int)args->m, (int)args->w.n, (int)args->w.k,
                  (int)args->w.groups, policy, outcome, vg_decision_name(c->decision),
                  c->plan ? c->plan->id : "none", refused_by, vg_permit_name(permit),
                  local_best ? local_best->id : "none", slowest_us, e->stats.all_frozen);
}

/* Measures together (the agreement said every rank can, and that every
 * rank has the same ncand candidates, plans[], at most MAX_CANDIDATES).
 * The caller began the measurement; this ends it on every path. */
static vg_status measure_together(vg_device *dev, coord_entry *e, const char *op,
                                  const vg_gemm_args *args, vg_choice *c, double *winner_us,
                                  const vg_plan *const *plans, size_t ncand)
{
    vg_tuning *t = c->tuning;   /* the device's or an engine's (issue 10) */
    double times[MAX_CANDIDATES];
    vg_time_candidates(dev, op, c, args, plans, ncand, times);
    double local_best_us = 0.0;
    const vg_plan *local_best = vg_fastest_candidate(plans, times, ncand, &local_best_us);
    vg_status st = e->comm.allreduce_max_f64(times, (int)ncand, e->comm.handle);
    if (st != VG_OK) {
        vg_tuning_measure_end(t, &c->key, NULL, 0.0);
        return st;
    }
    /* The candidate whose slowest rank is fastest: every rank computes it
     * from the same numbers. */
    double best_us = 0.0;
    const vg_plan *best = vg_fastest_candidate(plans, times, ncand, &best_us);
    /* The slowest rank's time is stored, the same number on every rank, so
     * the LUTs agree byte for byte. */
    st = vg_tuning_measure_end(t, &c->key, best, best_us);
    if (st != VG_OK)
        return st;
    e->stats.measured++;
    if (!best) {
        st = vg_decide_heuristic(dev, args, c, VG_REASON_COORD_NO_CANDIDATE_TIMED);
        if (st == VG_OK)
            trace_round(dev, e, op, args, c, c->key.policy, "untimed", -1, VG_PERMIT_MEASURE,
                        local_best, 0.0);
        return st;
    }
    if (best != local_best)
        e->stats.diverged++;
    c->decision = VG_DECISION_MEASURE;
    c->plan = best;
    c->why = VG_REASON_COORD_MEASURED;
    *winner_us = best_us;
    trace_round(dev, e, op, args, c, c->key.policy, "measured", -1, VG_PERMIT_MEASURE, local_best,
                best_us);
    return VG_OK;
}

static vg_status round_locked(vg_device *dev, coord_entry *e, const char *op,
                              const vg_policy *pol, const vg_gemm_args *args, vg_choice *c,
                              double *winner_us, int *handled)
{
    vg_tuning *t = c->tuning;   /* the device's or an engine's (issue 10) */
    /* Another thread of this rank may have stored the shape since the
     * decision looked: reuse it, as every rank then does. */
    if (vg_decide_cached(c)) {
        *handled = 1;
        return VG_OK;
    }
    if (e->stats.all_frozen) {
        /* Every rank froze (a freeze is final): nobody can measure again
         * and no round is needed; the decision's own frozen lookup stands.
         * It cannot say MEASURE on a frozen device, but be safe. */
        if (c->decision != VG_DECISION_MEASURE)
            return VG_OK;
        *handled = 1;
        return vg_decide_refused(dev, args, c, VG_PERMIT_FROZEN, VG_REASON_FROZEN_NEXT_LARGER,
                                 VG_REASON_FROZEN_NONE_ABOVE);
    }

    /* What this rank can do: the decision's own checks. */
    int began = 0;
    vg_measure_permit permit = vg_decide_permit(dev, c, pol, args);
    int frozen = permit == VG_PERMIT_FROZEN;
    if (permit == VG_PERMIT_MEASURE) {
        if (c->decision != VG_DECISION_MEASURE)
            permit = VG_PERMIT_FROZEN;   /* a refusal the checks cannot name: be safe */
        else if ((began = vg_tuning_measure_begin(t)) == 0) {
            permit = VG_PERMIT_FROZEN;   /* a freeze landed since the decision */
            frozen = 1;
        }
    }

    const vg_plan *plans[MAX_CANDIDATES];
    size_t ncand = vg_measure_candidates(dev, pol, args, c, plans, MAX_CANDIDATES);
    int64_t cand_h = candidates_hash(dev, plans, ncand < MAX_CANDIDATES ? ncand : MAX_CANDIDATES);
    if (ncand > MAX_CANDIDATES)
        permit = VG_PERMIT_TUNING_OFF;   /* cannot time them all: nobody measures */
    int64_t call_h = call_hash(c);
    int64_t v[8] = {((int64_t)permit << RANK_BITS) | e->comm.rank,
                    frozen,
                    call_h, -call_h,
                    cand_h, -cand_h,
                    e->comm.size, -(int64_t)e->comm.size};
    vg_status st = e->comm.allreduce_min_i64(v, 8, e->comm.handle);
    e->stats.agreements++;
    if (st != VG_OK) {
        if (began)
            vg_tuning_measure_end(t, &c->key, NULL, 0.0);
        return st;
    }
    const char *mismatch = NULL;
    if (v[6] != -v[7])
        mismatch = "the ranks disagree on the group size";
    else if (v[2] != -v[3])
        mismatch = "the ranks are at different calls (every rank must issue the calls that "
                   "may measure in the same order, with the same config and starting cache)";
    else if (v[4] != -v[5])
        mismatch = "the ranks have different candidate plans (plan tables differ: use the "
                   "same build and backend on every rank)";
    if (mismatch) {
        if (began)
            vg_tuning_measure_end(t, &c->key, NULL, 0.0);
        return vg_fail(VG_ERR_STATE,
                       "coordinated tuning, rank %d of %d, %s/%s n=%d k=%d groups=%d rows=%d: %s",
                       e->comm.rank, e->comm.size, vg_family_name(args->w.family),
                       vg_path_name(c->path), (int)args->w.n, (int)args->w.k,
                       (int)args->w.groups, (int)c->rows, mismatch);
    }
    if (v[1] == 1)
        e->stats.all_frozen = 1;

    int64_t group_code = v[0] >> RANK_BITS;
    int refused_by = (int)(v[0] & RANK_MASK);
    *handled = 1;
    if (group_code == VG_PERMIT_MEASURE)
        return measure_together(dev, e, op, args, c, winner_us, plans, ncand);

    /* Someone cannot measure: nobody does, and every rank applies the
     * decision's rule for the group's refusal, so the plan is the same
     * everywhere. */
    if (began)
        vg_tuning_measure_end(t, &c->key, NULL, 0.0);
    e->stats.refused++;
    static const vg_reason why_of[] = {
        [VG_PERMIT_TUNING_OFF] = VG_REASON_COORD_RANK_TUNING_OFF,
        [VG_PERMIT_FROZEN] = VG_REASON_COORD_RANK_FROZEN,
        [VG_PERMIT_CAPTURING] = VG_REASON_COORD_RANK_CAPTURING,
    };
    vg_measure_permit group_permit = group_code >= 0 && group_code < VG_PERMIT_MEASURE
                                         ? (vg_measure_permit)group_code
                                         : VG_PERMIT_FROZEN;
    vg_reason why = why_of[group_permit];
    st = vg_decide_refused(dev, args, c, group_permit, why, why);
    if (st == VG_OK)
        trace_round(dev, e, op, args, c, c->key.policy, "refused", refused_by, group_permit, NULL,
                    0.0);
    return st;
}

vg_status vg_coord_decide(vg_device *dev, const char *op, const vg_policy *pol,
                          const vg_gemm_args *args, vg_choice *c, double *winner_us,
                          int *handled)
{
    *handled = 0;
    /* A call the rule decides by its own routing (uneven groups) needs no
     * round: the rule is a function of the call, and the ranks of a tensor
     * parallel group see the same routing. */
    if (!pol->coordinated_tuning || c->rows <= 0 || !c->within_limits ||
        c->why == VG_REASON_UNEVEN_GROUPS)
        return VG_OK;
    /* The hot path: a cached shape is reused by every rank alike (their
     * caches agree by construction), with no round. */
    if (c->why == VG_REASON_CACHED)
        return VG_OK;
    if (atomic_load_explicit(&attached_count, memory_order_acquire) == 0)
        return VG_OK;
    coord_entry *e = find(dev);
    if (!e)
        return VG_OK;
    pthread_mutex_lock(&e->call_lock);
    vg_status st = VG_OK;
    if (e->attached && e->dev == dev)
        st = round_locked(dev, e, op ? op : "?", pol, args, c, winner_us, handled);
    pthread_mutex_unlock(&e->call_lock);
    return st;
}
