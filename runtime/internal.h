/*
 * The runtime's internal picture: the device context, its tuning state (the
 * dispatch cache, the freeze and the measured counters), the policy in force
 * on a thread, and the helpers the runtime files share.  Nothing here is
 * public API; tools/bench_dispatch.c and the runtime suites include it to
 * reach the decision alone and the test hooks.
 *
 * Ownership: a vg_device owns one vg_tuning (its implicit default engine)
 * and every vg_engine (engine.c) owns another; the decision code only ever
 * sees the vg_tuning of the call (vg_choice.tuning).
 */
#ifndef VOLTGATE_RUNTIME_INTERNAL_H
#define VOLTGATE_RUNTIME_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "backend.h"
#include "voltgate/runtime.h"

/* ---- policy -------------------------------------------------------------- */

/* The part of a kernel_config that the decision reads, plus its hash. */
/* What one family reads of the policy (per_family options applied). */
typedef struct vg_family_policy {
    uint64_t hash;            /* this family's partition: the cache key, trace, LUT */
    int grouped_bmm_decode;
    int tune_small_shapes;
    int tiles_within_scale_block;   /* fp8 only */
    int dequant_workspace_max_mib;  /* -1: no cap */
} vg_family_policy;

typedef struct vg_policy {
    uint64_t hash;            /* a family without per_family options (vg_config_policy_hash) */
    int grouped_bmm_decode;   /* grouped decode in one launch (else loop) */
    int tune_small_shapes;    /* measuring allowed at all */
    int coordinated_tuning;   /* ranks agree on one plan (issue 8) */
    vg_family_policy fam[VG_FAMILY_COUNT];
} vg_policy;

/* The family's part of pol (the base fields for an out-of-range family). */
static inline const vg_family_policy *vg_policy_family(const vg_policy *pol, vg_family f)
{
    return (unsigned)f < VG_FAMILY_COUNT ? &pol->fam[f] : &pol->fam[0];
}
/* The distinct family hashes of pol (at most VG_FAMILY_COUNT); returns the count. */
size_t vg_policy_hashes(const vg_policy *pol, uint64_t *out);

/* The partition used outside any vg_policy_enter(): default field values,
 * but its own hash (see POLICY.md), so work done outside an engine never
 * lands in an engine's partition even when that engine uses the defaults. */
const vg_policy *vg_policy_default_partition(void);

/* The innermost policy this thread entered for `dev` (or for any device,
 * dev NULL at enter), else &vg_policy_default. */
const vg_policy *vg_policy_current(const vg_device *dev);
/* The same, and the engine of that entry (NULL: the device's implicit
 * default engine, dev->tuning). */
const vg_policy *vg_policy_current_engine(const vg_device *dev, vg_engine **engine);

/* Fills a vg_policy from a parsed config (hash included). */
void vg_policy_from_config(const vg_config *cfg, vg_policy *out);

/* The FNV-1a 64 hash the policy, the LUT checksum and the cache use. */
uint64_t vg_fnv1a64(const void *data, size_t len, uint64_t seed);
#define VG_FNV_OFFSET 0xcbf29ce484222325ull

/* ---- config (config.c) ----------------------------------------------------- */
struct vg_config {
    vg_config_fields f;
    char *lut_path;           /* f.gemm_lut_path points here */
};

/* gemm_lut_path templates: 1 when every {...} is {device}, {arch} or
 * {rank}; else 0 and `why` says what is wrong. */
int vg_lut_template_valid(const char *tmpl, char *why, size_t size);

/* ---- dispatch cache (cache.c) ---------------------------------------------- */

/* One cached plan for one number of rows of a series. */
typedef struct vg_cache_item {
    int32_t rows;             /* the bucket of dense M or of rows per group */
    const vg_plan *plan;
    double time_us;           /* the winning median when it was measured */
    int imported;             /* 1 when it came from a LUT */
    /* Where the plan was measured: 0, 0 = by this build on this plan set;
     * else the stamps of the LUT entry it came from (a foreign entry kept
     * under reuse_lut_across_builds keeps its origin when exported again). */
    uint64_t build, planset;
} vg_cache_item;

/* Every cached row count of one (policy, family, path, n, k, groups), kept
 * sorted by rows so that the exact and the next-larger lookups are one
 * binary search. */
typedef struct vg_series {
    uint64_t policy;
    int32_t n, k, groups;
    uint8_t family, path, used;
    vg_cache_item *items;
    size_t count, cap;
} vg_series;

typedef struct vg_cache {
    pthread_rwlock_t lock;    /* readers: every lookup; writer: insert, import */
    vg_series *slots;         /* open addressing, power-of-two size */
    size_t nslots, nused;
    uint64_t entries;         /* items over all series */
} vg_cache;

typedef struct vg_cache_key {
    uint64_t policy;
    vg_family family;
    vg_path path;
    int32_t n, k, groups, rows;
} vg_cache_key;

vg_status vg_cache_init(vg_cache *c);
void vg_cache_destroy(vg_cache *c);
/* Exact lookup; 1 and *plan set when cached. Takes the read lock. */
int vg_cache_find(vg_cache *c, const vg_cache_key *key, const vg_plan **plan);
/* The cached item with the smallest rows >= key->rows in the key's series
 * (key->rows itself included).  Takes the read lock. */
int vg_cache_find_at_least(vg_cache *c, const vg_cache_key *key, const vg_plan **plan,
                           int32_t *found_rows);
/* Inserts or replaces.  *was_new = 1 when the shape was not cached yet.
 * Takes the write lock. */
vg_status vg_cache_put(vg_cache *c, const vg_cache_key *key, const vg_plan *plan,
                       double time_us, int imported, int *was_new);
/* The same with the origin stamps of a LUT entry (see vg_cache_item). */
vg_status vg_cache_put_stamped(vg_cache *c, const vg_cache_key *key, const vg_plan *plan,
                               double time_us, int imported, uint64_t build, uint64_t planset,
                               int *was_new);
/* Calls fn for every item (policy 0 = every partition) under the read lock. */
typedef void (*vg_cache_visit_fn)(const vg_series *s, const vg_cache_item *it, void *user);
void vg_cache_visit(vg_cache *c, uint64_t policy, vg_cache_visit_fn fn, void *user);
uint64_t vg_cache_entries(vg_cache *c);

/* ---- tuning state (freeze.c) ----------------------------------------------- */
typedef struct vg_tuning {
    vg_cache cache;
    /* state_lock guards in_flight and the before/after counters; frozen and
     * measured_total are atomics so the hot path and the trace read them
     * without a lock. */
    pthread_mutex_t state_lock;
    pthread_cond_t idle;              /* signalled when in_flight drops to 0 */
    atomic_int frozen;
    int in_flight;                    /* measurements started, not recorded */
    atomic_uint_fast64_t measured_total;
    uint64_t measured_before_freeze;
    uint64_t measured_after_freeze;   /* stays 0 by construction; counted anyway */
    int freeze_done;                  /* the freeze returned (in-flight ones landed) */
    /* share_measured_plans_across_engines: the device's pool of plans that
     * sharing engines measured (keyed by policy hash like any cache), or
     * NULL for a tuning state that shares nothing (the default). */
    vg_cache *shared;
} vg_tuning;

vg_status vg_tuning_init(vg_tuning *t);
void vg_tuning_destroy(vg_tuning *t);
/* Starts a measurement: 0 when the tuning state is frozen (then nothing may
 * be measured), 1 otherwise, and the freeze waits until it ends. */
int vg_tuning_measure_begin(vg_tuning *t);
/* Ends it; records the result (plan NULL = nothing recorded).  Returns the
 * status of the cache insert. */
vg_status vg_tuning_measure_end(vg_tuning *t, const vg_cache_key *key, const vg_plan *plan,
                                double time_us);
vg_status vg_tuning_freeze(vg_tuning *t);
/* The counters, the freeze and the cache size, read as one snapshot. */
void vg_tuning_read_state(vg_tuning *t, vg_tuning_state *out);

/* ---- trace (trace.c) -------------------------------------------------------- */
typedef struct vg_trace {
    atomic_int fd;            /* -1 = off */
    int owned;                /* 1 when fd was opened by us (a file) */
} vg_trace;

void vg_trace_init_from_env(vg_trace *t);
void vg_trace_close(vg_trace *t);
vg_status vg_trace_open(vg_trace *t, const char *target);
static inline int vg_trace_on(vg_trace *t) { return atomic_load_explicit(&t->fd, memory_order_relaxed) >= 0; }
/* Writes one formatted line (newline added) with a single write(). */
void vg_trace_line(vg_trace *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* ---- the device ---------------------------------------------------------- */
struct vg_device {
    const vg_backend_ops *ops;
    void *ctx;
    int arch;
    int ordinal;
    uint64_t planset;                 /* vg_planset_hash(ops), at open */

    vg_tuning tuning;
    vg_trace trace;

    /* Scripted timer (tests) or NULL for the backend's timer. */
    vg_timer_fn timer;
    void *timer_user;
    int measure_warmup, measure_reps;

    /* Test hook: non-zero makes every stream look like it is capturing. */
    atomic_int test_capturing;

    /* Engines (engine.c): every engine ever opened on the device, closed
     * ones kept as shells until vg_device_close so a stale handle reads
     * VG_ERR_STATE rather than freed memory.  `shared` is the pool of
     * plans measured by engines that share (share_measured_plans_...). */
    pthread_mutex_t engines_lock;
    vg_engine *engines;
    int engines_opened;
    vg_cache shared;

    /* The device's own workspace, used when args->workspace is NULL.  The
     * lock is held for a whole launch that uses it, so concurrent calls never
     * share partials (on cuda the launch is only enqueued: one stream at a
     * time may use the device workspace; pass your own otherwise). */
    pthread_mutex_t ws_lock;
    void *ws;
    size_t ws_bytes;
};

/* Frees what the device itself owns (vg_device_close lets the layers
 * above go first). */
void vg_device_destroy(vg_device *dev);
/* The hash of a backend's plan table (ids and every tile field, in table
 * order), never 0: a LUT entry of another plan set is stale. */
uint64_t vg_planset_hash(const vg_backend_ops *ops);
/* The device backend's plan of that id, or NULL. */
const vg_plan *vg_device_find_plan(vg_device *dev, const char *id);

/* Non-zero while args->stream is capturing (or the test hook says so). */
int vg_device_capturing(vg_device *dev, void *stream);

/* Launches `p` with args (the path already rerouted), using the device
 * workspace when args->workspace is NULL and growing it outside capture. */
vg_status vg_device_launch(vg_device *dev, const vg_plan *p, const vg_gemm_args *args);

/* Times one plan with the scripted timer or the backend's, using the device
 * workspace when args has none.  No trace: the measurement writes it. */
vg_status vg_device_time_plan(vg_device *dev, const vg_plan *p, const vg_gemm_args *args,
                              double *us, vg_timer_info *how);

/* Test hook for the capture refusal on the cpu backend. */
vg_status vg_device_test_set_capturing(vg_device *dev, int capturing);
/* Measurement repetitions (defaults per backend). */
vg_status vg_device_set_measure_reps(vg_device *dev, int warmup, int reps);

/* ---- decision (decision.c) ------------------------------------------------- */

/* Why a call got its decision.  vg_dispatch_info.why and the tests read the
 * words of vg_reason_name(), so a reason keeps its words once published. */
typedef enum vg_reason {
    VG_REASON_NONE,                   /* "" : MEASURE still to be done */
    VG_REASON_EMPTY_CALL,
    VG_REASON_OVER_LIMIT,
    VG_REASON_UNEVEN_GROUPS,
    VG_REASON_CACHED,
    VG_REASON_SHARED,
    VG_REASON_FROZEN_NEXT_LARGER,
    VG_REASON_FROZEN_NONE_ABOVE,
    VG_REASON_TUNING_OFF,
    VG_REASON_CAPTURING,
    VG_REASON_MEASURED,
    VG_REASON_NO_CANDIDATE_TIMED,
    VG_REASON_COORD_MEASURED,
    VG_REASON_COORD_NO_CANDIDATE_TIMED,
    VG_REASON_COORD_RANK_TUNING_OFF,
    VG_REASON_COORD_RANK_FROZEN,
    VG_REASON_COORD_RANK_CAPTURING,
    VG_REASON_DEQUANT_OVER_CAP,       /* a note: the heuristic's plan needed more workspace
                                         than dequant_workspace_max_mib */
    VG_REASON_COUNT
} vg_reason;

/* The words of a reason (trace.c holds the table). */
const char *vg_reason_name(vg_reason r);

/* Whether a call may measure now, by the decision's checks in its order
 * (frozen, tuning off, capturing).  Lower is stricter: a group of ranks
 * that must agree applies the minimum of its members (coord.c). */
typedef enum vg_measure_permit {
    VG_PERMIT_TUNING_OFF = 0,         /* rule: the heuristic */
    VG_PERMIT_FROZEN = 1,             /* rule: the next larger measured shape, else the heuristic */
    VG_PERMIT_CAPTURING = 2,          /* rule: as frozen */
    VG_PERMIT_MEASURE = 3
} vg_measure_permit;

/* The refusal a vg-trace-coord line names (reason=): "tuning-off",
 * "frozen", "capturing", or "none" for MEASURE. */
const char *vg_permit_name(vg_measure_permit p);

/* What vg_dispatch_decide() found, before any measurement. */
typedef struct vg_choice {
    vg_decision decision;     /* MEASURE means "measure now", plan NULL */
    const vg_plan *plan;
    vg_path path;             /* after the reroute (vg_route_path) */
    int32_t rows;             /* the call's M or rows per group (key.rows is its bucket) */
    int within_limits;        /* there is a bucket: tuning may apply */
    vg_reason why;
    vg_cache_key key;
    vg_tuning *tuning;        /* whose measured set: the device's or an engine's */
    int ws_cap_mib;           /* the policy's dequant_workspace_max_mib (-1: none) */
    vg_reason note;           /* a fact the trace adds on a vg-trace-note line (NONE: none) */
} vg_choice;

/* The path a call of `path` with `rows` rows per group runs on under the
 * family policy fp: grouped becomes loop where fp's grouped_bmm_decode is
 * off, and moe (the grouped kernels with the call's own offsets) above
 * GROUPED_DECODE_MAX_TOKENS rows per group, where the grouped path's
 * precomputed-offsets decode plans stop; every other path is kept. */
vg_path vg_route_path(const vg_family_policy *fp, vg_path path, int32_t rows);

/* The decision alone: reroute, limits, cache lookup, freeze and capture
 * checks.  No measurement, no launch, no trace: vg_gemm() calls it first,
 * and the dispatch benchmark times it alone. */
vg_status vg_dispatch_decide(vg_device *dev, const vg_policy *pol, const vg_gemm_args *args,
                             vg_choice *out);
/* The same on a given tuning state (an engine's); the above uses dev->tuning. */
vg_status vg_dispatch_decide_in(vg_device *dev, vg_tuning *t, const vg_policy *pol,
                                const vg_gemm_args *args, vg_choice *out);

/* The rules, for a caller that must decide with others (coord.c) rather
 * than alone.  Each fills c (decision, plan, why) like the decision does. */

/* 1 and c set to REUSE (cached) when c's shape is in its tuning state. */
int vg_decide_cached(vg_choice *c);
/* The checks of the decision that may forbid measuring, in its order. */
vg_measure_permit vg_decide_permit(vg_device *dev, const vg_choice *c, const vg_policy *pol,
                                   const vg_gemm_args *args);
/* The rule of a permit other than MEASURE: the heuristic (tuning off) or
 * the next larger measured shape, else the heuristic; `reuse_why` and
 * `heuristic_why` name the outcome. */
vg_status vg_decide_refused(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                            vg_measure_permit permit, vg_reason reuse_why,
                            vg_reason heuristic_why);
/* The heuristic plan for c. */
/* Non-zero when plan p needs more workspace for the call than the policy's
 * cap (c->ws_cap_mib) allows; vg_last_error() then says how much. */
int vg_plan_over_workspace_cap(vg_device *dev, const vg_choice *c, const vg_gemm_args *args,
                               const vg_plan *p);
vg_status vg_decide_heuristic(vg_device *dev, const vg_gemm_args *args, vg_choice *c,
                              vg_reason why);

/* The plans a measurement of c times, in plan table order: every plan
 * that applies, less those the family's policy excludes
 * (tiles_within_scale_block).  Returns their count; stores at most max. */
size_t vg_measure_candidates(vg_device *dev, const vg_policy *pol, const vg_gemm_args *args,
                             const vg_choice *c, const vg_plan **out, size_t max);
/* Times plans[0..n) in order, one vg-trace-candidate line each; times[i]
 * is INFINITY for a plan that cannot be ranked (an error, NaN, < 0, inf). */
void vg_time_candidates(vg_device *dev, const char *op, const vg_choice *c,
                        const vg_gemm_args *args, const vg_plan *const *plans, size_t n,
                        double *times);
/* The plan of the smallest finite time (the first in table order on a
 * tie), its time in *us; NULL when none is finite. */
const vg_plan *vg_fastest_candidate(const vg_plan *const *plans, const double *times, size_t n,
                                    double *us);
/* Measures c alone (begin, time every candidate, keep the fastest, end);
 * on return c is MEASURE with the winner, or the frozen rule when a freeze
 * won the race, or the heuristic when nothing could be timed. */
vg_status vg_decide_measure(vg_device *dev, const char *op, const vg_policy *pol,
                            const vg_gemm_args *args, vg_choice *c, double *winner_us);

/* ---- engines (engine.c) ------------------------------------------------------ */
#define VG_ENGINE_MAGIC 0x56474e45u   /* "VGNE" */
struct vg_engine {
    uint32_t magic;
    int id;                           /* 0, 1, ... in open order on the device */
    vg_device *dev;
    vg_config *cfg;                   /* the engine's own copy */
    vg_policy pol;
    vg_tuning tuning;
    char lut[4200];                   /* gemm_lut_path expanded, "" without */
    atomic_int closed;
    atomic_int in_flight;             /* calls using the engine right now */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    vg_engine *next;
};
/* VG_OK when e is an engine handle (open or closed), else
 * VG_ERR_INVALID_ARG naming fn. */
vg_status vg_engine_check(const vg_engine *e, const char *fn);
/* 1 and the engine counted in flight, or 0 (closed: vg_fail set). */
int vg_engine_acquire(vg_engine *e);
void vg_engine_release(vg_engine *e);
/* Device close: closes and frees every engine of the device. */
void vg_engines_destroy(vg_device *dev);

/* The trace line of one decision. */
void vg_trace_decision(vg_device *dev, const char *op, const vg_gemm_args *args,
                       const vg_choice *c, uint64_t policy_hash);
/* The trace line of one candidate timed for a measurement: its plan and
 * median (or the status that refused it) and how it was timed. */
void vg_trace_candidate(vg_device *dev, const char *op, const vg_gemm_args *args,
                        const vg_choice *c, const vg_plan *p, vg_status st, double us,
                        const vg_timer_info *how);
/* The candidate line of a plan that applies to the measured shape but that
 * the device does not offer (never timed): us=none, status
 * VG_ERR_UNSUPPORTED, why= the backend's reason. */
void vg_trace_not_offered(vg_device *dev, const char *op, const vg_gemm_args *args,
                          const vg_choice *c, const vg_plan *p, const char *why);
/* One vg-trace-offer line per plan kind the device does not offer, with
 * the backend's reason: written when the device's trace opens (at
 * vg_device_open and vg_trace_set), so that a trace whose decisions are all
 * heuristic still says why a kind is never chosen. */
void vg_trace_offers(vg_device *dev);

/* ---- registry (registry.c) --------------------------------------------------- */
/* The registered operator named `name`, or NULL. */
const vg_operator *vg_registry_find(const char *name);
/* Checks that every operator of ops[] taking a native policy is in names[];
 * returns VG_ERR_NOT_FOUND naming the first one missing. */
vg_status vg_registry_check(const vg_operator *ops, size_t n, const char *const *names,
                            size_t count);

/* ---- LUT (lut.c; the writer lut_export.c, the reader lut_import.c) ------------ */
/* Test hook: called with the temporary file's path right before the rename;
 * a test points it at a function that _exit()s to simulate a crash. */
extern void (*vg_lut_before_rename_hook)(const char *tmp_path);

/* The kernel build id: FNV-1a 64 of VG_BUILD_ID (a -D string; default the
 * compile date and time of lut.c), never 0. */
uint64_t vg_build_id(void);

/* Expands the placeholders for dev: {device} = ordinal, {arch} = "cpu" or
 * "sm<arch>", {rank} = the rank of the device's communicator (0 without). */
vg_status vg_lut_expand_path(vg_device *dev, const char *tmpl, char *out, size_t size);
/* Creates the parent folders of path and checks that the LUT can be
 * written there (the folder is writable, path is not a folder): the error
 * comes at start, not at the first export. */
vg_status vg_lut_prepare_path(const char *path);

/* Import / export on one tuning state (the device's own or an engine's).
 * flags: VG_LUT_STRICT_STAMPS skips unstamped (version 1) entries as
 * stale; VG_LUT_REUSE_ACROSS_BUILDS applies entries of another build or
 * plan set (reuse_lut_across_builds).  policies: NULL = every partition,
 * else the npolicies hashes accepted. */
#define VG_LUT_STRICT_STAMPS 1
#define VG_LUT_REUSE_ACROSS_BUILDS 2
vg_status vg_lut_import_tuning(vg_device *dev, vg_tuning *t, const char *path,
                               const uint64_t *policies, size_t npolicies, int flags,
                               vg_lut_report *report);
vg_status vg_lut_export_tuning(vg_device *dev, vg_tuning *t, const char *path,
                               uint64_t policy_hash);
/* The partitions of `policies` (NULL: all) of one tuning state. */
vg_status vg_lut_export_policies(vg_device *dev, vg_tuning *t, const char *path,
                                 const uint64_t *policies, size_t npolicies);
/* Expands, prepares and imports cfg's gemm_lut_path for a warm-up or an
 * engine (see there). */
vg_status vg_lut_begin_for_config(vg_device *dev, vg_tuning *t, const vg_config *cfg,
                                  const uint64_t *policies, size_t npolicies, char *path,
                                  size_t size, vg_lut_report *lr);

/* ---- warm-up buffers (warmup.c), shared with the replay tool ------------------ */
/* Device buffers for one layer: synthetic non-zero weights of every group,
 * X and Y for up to max_rows_per_group rows per group, and one offsets row
 * per token count 1..GROUPED_DECODE_MAX_TOKENS (plus one for any count
 * asked through vg_layer_args). */
typedef struct vg_layer_buffers {
    vg_layer layer;
    int32_t max_rows_per_group;
    void *q, *scale, *zero;
    uint16_t *x;
    float *y;
    int32_t *offsets_dev;             /* [(max_rows_per_group)][groups+1] */
    int32_t *offsets_host;
} vg_layer_buffers;

vg_status vg_layer_buffers_alloc(vg_device *dev, const vg_layer *layer,
                                 int32_t max_rows_per_group, vg_layer_buffers *out);
void vg_layer_buffers_free(vg_device *dev, vg_layer_buffers *b);
/* Arguments of one call of the layer with `tokens` rows per group (dense:
 * M = tokens).  tokens must be 1..max_rows_per_group. */
vg_status vg_layer_args(const vg_layer_buffers *b, int32_t tokens, vg_gemm_args *out);

#endif
