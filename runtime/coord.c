/*
 * Coordinated tuning: the ranks of one tensor-parallel group agree on one
 * plan per shape (include/voltgate/coord.h has the contract).
 *
 * The communicator of a device lives in a small side table here rather than
 * in struct vg_device, so that the device, the decision and the cache know
 * nothing of it: decision.c makes one call (vg_coord_decide) after its own
 * decision, and only when the policy asks for coordination.  Entries are
 * never freed, only detached and reused: a call that looked an entry up can
 * never find it freed under it, and the table stays as small as the number
 * of devices that ever had a communicator.
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

/* What a rank can do in a round; the group takes the minimum. */
enum {
    CODE_TUNING_OFF = 0,      /* rule: heuristic */
    CODE_FROZEN = 1,          /* rule: frozen lookup (next larger, else heuristic) */
    CODE_CAPTURING = 2,       /* rule: frozen lookup, as the capture refusal */
    CODE_MEASURE = 3
};
#define RANK_BITS 20
#define RANK_MASK ((1 << RANK_BITS) - 1)
/* Candidates of one call a round can time (plan tables are far smaller). */
#define MAX_CANDIDATES 256
/* Hashes are sent in 62 bits so that their negation fits an int64. */
#define HASH_MASK ((UINT64_C(1) << 62) - 1)

static const char *code_name(int code)
{
    switch (code) {
    case CODE_TUNING_OFF: return "tuning-off";
    case CODE_FROZEN: return "frozen";
    case CODE_CAPTURING: return "capturing";
    }
    return "none";
}

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

/* ---- the non-measure rules (as decision.c applies them alone) --------------- */

static vg_status rule_heuristic(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
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

/* The frozen lookup: the next larger measured shape of the series, else the
 * heuristic. */
static vg_status rule_fallback(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                               const char *why)
{
    int32_t found_rows = 0;
    if (vg_cache_find_at_least(&c->tuning->cache, &c->key, &c->plan, &found_rows)) {
        c->decision = VG_DECISION_REUSE;
        c->why = why;
        return VG_OK;
    }
    return rule_heuristic(dev, args, c, why);
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

/* The candidates of the call in plan table order: their count, their hash,
 * and (when out is not NULL) the plans. */
static size_t candidates(vg_device *dev, const vg_gemm_args *args, const vg_choice *c,
                         const vg_plan **out, int64_t *hash)
{
    uint64_t h = vg_fnv1a64(dev->ops->name, strlen(dev->ops->name) + 1, VG_FNV_OFFSET);
    size_t n = 0, total = dev->ops->plan_count();
    for (size_t i = 0; i < total; i++) {
        const vg_plan *p = dev->ops->plan_at(i);
        if (!vg_plan_applies(p, args->w.family, c->path, c->rows))
            continue;
        h = vg_fnv1a64(p->id, strlen(p->id) + 1, h);
        if (out)
            out[n] = p;
        n++;
    }
    if (hash)
        *hash = (int64_t)(h & HASH_MASK);
    return n;
}

/* ---- one round ------------------------------------------------------------------ */

static void trace_round(vg_device *dev, const coord_entry *e, const char *op,
                        const vg_gemm_args *args, const vg_choice *c, uint64_t policy,
                        const char *outcome, int refused_by, int code, const vg_plan *local_best,
                        double slowest_us)
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
                  c->plan ? c->plan->id : "none", refused_by, code_name(code),
                  local_best ? local_best->id : "none", slowest_us, e->stats.all_frozen);
}

/* Measures together (the agreement said every rank can, and that every
 * rank has the same ncand candidates, at most MAX_CANDIDATES).  The caller
 * began the measurement; this ends it on every path. */
static vg_status measure_together(vg_device *dev, coord_entry *e, const char *op,
                                  const vg_policy *pol, const vg_gemm_args *args,
                                  vg_choice *c, double *winner_us, size_t ncand)
{
    vg_tuning *t = c->tuning;   /* the device's or an engine's (issue 10) */
    (void)pol;                  /* the partition is c->key.policy (per family) */
    const vg_plan *plans[MAX_CANDIDATES];
    double times[MAX_CANDIDATES];
    candidates(dev, args, c, plans, NULL);
    const vg_plan *local_best = NULL;
    double local_best_us = 0.0;
    for (size_t i = 0; i < ncand; i++) {
        double us = 0.0;
        /* A candidate that cannot run on some rank is no candidate for
         * anyone: +inf stays +inf through the maximum. */
        if (vg_device_time_plan(dev, op, c, plans[i], args, &us) != VG_OK || !(us >= 0.0) ||
            isinf(us))
            us = INFINITY;
        times[i] = us;
        if (isfinite(us) && (!local_best || us < local_best_us)) {
            local_best = plans[i];
            local_best_us = us;
        }
    }
    vg_status st = e->comm.allreduce_max_f64(times, (int)ncand, e->comm.handle);
    if (st != VG_OK) {
        vg_tuning_measure_end(t, &c->key, NULL, 0.0);
        return st;
    }
    /* The candidate whose slowest rank is fastest; the first in table order
     * on a tie.  Every rank computes this from the same numbers. */
    const vg_plan *best = NULL;
    double best_us = 0.0;
    for (size_t i = 0; i < ncand; i++)
        if (isfinite(times[i]) && (!best || times[i] < best_us)) {
            best = plans[i];
            best_us = times[i];
        }
    /* The slowest rank's time is stored, the same number on every rank, so
     * the LUTs agree byte for byte. */
    st = vg_tuning_measure_end(t, &c->key, best, best_us);
    if (st != VG_OK)
        return st;
    e->stats.measured++;
    if (!best) {
        st = rule_heuristic(dev, args, c, "coordinated: no candidate could be timed on every rank");
        if (st == VG_OK)
            trace_round(dev, e, op, args, c, c->key.policy, "untimed", -1, CODE_MEASURE, local_best,
                        0.0);
        return st;
    }
    if (best != local_best)
        e->stats.diverged++;
    c->decision = VG_DECISION_MEASURE;
    c->plan = best;
    c->why = "coordinated: measured on every rank";
    *winner_us = best_us;
    trace_round(dev, e, op, args, c, c->key.policy, "measured", -1, CODE_MEASURE, local_best,
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
    const vg_plan *cached = NULL;
    if (vg_cache_find(&t->cache, &c->key, &cached)) {
        c->decision = VG_DECISION_REUSE;
        c->plan = cached;
        c->why = "cached";
        *handled = 1;
        return VG_OK;
    }
    int frozen = atomic_load_explicit(&t->frozen, memory_order_acquire) ? 1 : 0;
    if (e->stats.all_frozen) {
        /* Every rank froze (a freeze is final): nobody can measure again
         * and no round is needed; the decision's own frozen lookup stands.
         * It cannot say MEASURE on a frozen device, but be safe. */
        if (c->decision != VG_DECISION_MEASURE)
            return VG_OK;
        *handled = 1;
        return rule_fallback(dev, args, c, "frozen: next larger measured shape");
    }

    /* What this rank can do, in the decision's own order of checks. */
    int code, began = 0;
    if (frozen)
        code = CODE_FROZEN;
    else if (!vg_policy_family(pol, args->w.family)->tune_small_shapes)
        code = CODE_TUNING_OFF;
    else if (vg_device_capturing(dev, args->stream))
        code = CODE_CAPTURING;
    else if (c->decision != VG_DECISION_MEASURE)
        code = CODE_FROZEN;   /* a refusal the checks above cannot name: be safe */
    else if ((began = vg_tuning_measure_begin(t)) == 0) {
        code = CODE_FROZEN;   /* a freeze landed since the decision */
        frozen = 1;
    } else
        code = CODE_MEASURE;

    int64_t cand_h = 0;
    size_t ncand = candidates(dev, args, c, NULL, &cand_h);
    if (ncand > MAX_CANDIDATES)
        code = CODE_TUNING_OFF;   /* cannot time them all: nobody measures */
    int64_t call_h = call_hash(c);
    int64_t v[8] = {((int64_t)code << RANK_BITS) | e->comm.rank,
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

    int group_code = (int)(v[0] >> RANK_BITS);
    int refused_by = (int)(v[0] & RANK_MASK);
    *handled = 1;
    if (group_code == CODE_MEASURE)
        return measure_together(dev, e, op, pol, args, c, winner_us, ncand);

    /* Someone cannot measure: nobody does, and every rank applies the same
     * rule, so the plan is the same everywhere. */
    if (began)
        vg_tuning_measure_end(t, &c->key, NULL, 0.0);
    e->stats.refused++;
    static const char *const why_of[] = {
        [CODE_TUNING_OFF] = "coordinated: a rank has tuning off",
        [CODE_FROZEN] = "coordinated: a rank is frozen",
        [CODE_CAPTURING] = "coordinated: a rank is capturing",
    };
    const char *why = why_of[group_code < CODE_MEASURE && group_code >= 0 ? group_code
                                                                           : CODE_FROZEN];
    st = group_code == CODE_TUNING_OFF ? rule_heuristic(dev, args, c, why)
                                       : rule_fallback(dev, args, c, why);
    if (st == VG_OK)
        trace_round(dev, e, op, args, c, c->key.policy, "refused", refused_by, group_code, NULL,
                    0.0);
    return st;
}

vg_status vg_coord_decide(vg_device *dev, const char *op, const vg_policy *pol,
                          const vg_gemm_args *args, vg_choice *c, double *winner_us,
                          int *handled)
{
    *handled = 0;
    if (!pol->coordinated_tuning || c->rows <= 0 || !c->within_limits)
        return VG_OK;
    /* The hot path: a cached shape is reused by every rank alike (their
     * caches agree by construction), with no round.  The "cached" reason is
     * decision.c's; if it ever changes, the round below still finds the
     * shape in the cache, only slower. */
    if (c->decision == VG_DECISION_REUSE && strcmp(c->why, "cached") == 0)
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
