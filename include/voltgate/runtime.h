/*
 * voltgate runtime: devices, kernel_config, policy partitions, the dispatch
 * decision (measure / reuse / heuristic), freeze, trace, LUT and warm-up.
 * DESIGN.md gives the semantics; this header is the contract.
 */
#ifndef VOLTGATE_RUNTIME_H
#define VOLTGATE_RUNTIME_H

#include <stdint.h>

#include "voltgate/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exact tuning limits: at or under these sizes every row count is its own
 * measured shape. */
#define VG_TUNE_MAX_DENSE_M 64
#define VG_TUNE_MAX_GROUP_TOKENS 128
/* Above the exact limits, rows share power-of-two buckets (65..128 -> 128,
 * ...) up to this many rows: one measurement serves a prefill bucket, since
 * measuring every prefill length would never end.  Above it: heuristic. */
#define VG_TUNE_MAX_BUCKET_ROWS 16384

/* The rows a call of `rows` rows (dense M, or rows per group) on `path`
 * (after the reroute: grouped -> moe or loop) is cached, measured and looked up
 * under: `rows` itself inside the exact limits, the next power of two up
 * to VG_TUNE_MAX_BUCKET_ROWS, 0 above it or for rows <= 0 (never tuned). */
int32_t vg_tune_bucket_rows(vg_path path, int32_t rows);

typedef struct vg_device vg_device;
typedef struct vg_config vg_config;
typedef struct vg_engine vg_engine;

/* Per-family options (kernel_config "per_family": {"<family>": {...}}),
 * in this order; runtime/POLICY.md has the table of the families that read
 * each one.  Setting one for a family that does not read it is a config
 * error; one set for a family salts that family's policy hash only. */
typedef enum vg_family_option {
    VG_FOPT_TUNE_SMALL_SHAPES = 0,      /* every family: overrides fp8_tune_small_shapes */
    VG_FOPT_GROUPED_BMM_DECODE,         /* every family: overrides fp8_grouped_bmm_decode */
    VG_FOPT_TILES_WITHIN_SCALE_BLOCK,   /* fp8 only: measure only plans whose tile N and K
                                           divide the 128x128 scale block */
    VG_FOPT_COUNT
} vg_family_option;

/* ---- kernel_config ------------------------------------------------------ */
/* Parses the engine's kernel_config JSON.  On error returns VG_ERR_CONFIG and
 * vg_last_error() names the JSON path, e.g.
 * "sm70_runtime.freeze_tuning_after_warmup: expected boolean, got \"yes\"". */
vg_status vg_config_parse(const char *json, vg_config **out);
vg_status vg_config_load(const char *path, vg_config **out);
/* All fields at their defaults. */
vg_status vg_config_default(vg_config **out);
vg_status vg_config_free(vg_config *cfg);
/* The policy hash: over the fields that change kernel choice only.  This is
 * the hash of a family with no per_family option set (the same for every
 * such family); vg_config_family_policy_hash gives one family's, which is
 * what partitions the cache, the trace's policy= and the LUT. */
vg_status vg_config_policy_hash(const vg_config *cfg, uint64_t *hash);
vg_status vg_config_family_policy_hash(const vg_config *cfg, vg_family family, uint64_t *hash);
/* The families that read option o (a VG_FAMILY_BIT mask) and its JSON name. */
uint32_t vg_family_option_families(vg_family_option o);
const char *vg_family_option_name(vg_family_option o);
/* Canonical JSON of every field (for records); *json is malloc'ed. */
vg_status vg_config_to_json(const vg_config *cfg, char **json);

typedef struct vg_config_fields {
    int fp8_grouped_bmm_decode;      /* default 1 */
    int fp8_tune_small_shapes;       /* default 1 */
    int fp8_coordinated_tuning;      /* default 0 */
    int freeze_tuning_after_warmup;  /* default 0 */
    const char *gemm_lut_path;       /* default NULL; owned by the config; may hold the
                                        placeholders {device}, {arch}, {rank} */
    int reuse_lut_across_builds;     /* default 0 (sm70_runtime.*, not hashed) */
    int share_measured_plans_across_engines; /* default 0 (sm70_runtime.*, not hashed) */
    int per_family[VG_FAMILY_COUNT][VG_FOPT_COUNT]; /* -1 = not set (inherits) */
    int dequant_workspace_max_mib;   /* default -1 = no cap (sm70_fp8.native.*, hashed when set):
                                        the dequantize + cuBLAS plan is offered only where its
                                        workspace (the FP16 copy of one group's weight and
                                        cuBLAS's own) fits in this many MiB */
} vg_config_fields;
vg_status vg_config_get(const vg_config *cfg, vg_config_fields *out);

/* ---- devices -------------------------------------------------------------- */
/* backend "cpu" or "cuda"; VG_ERR_NO_DEVICE when cuda is absent. */
vg_status vg_device_open(const char *backend, int ordinal, vg_device **out);
vg_status vg_device_close(vg_device *dev);
/* "cpu" / "cuda", and the arch (0 for cpu, 70, 90, ...). */
vg_status vg_device_info(const vg_device *dev, const char **backend, int *arch);

/* Memory of the device's backend (host memory on cpu). */
vg_status vg_device_alloc(vg_device *dev, size_t bytes, void **ptr);
vg_status vg_device_free(vg_device *dev, void *ptr);
vg_status vg_device_upload(vg_device *dev, void *dst, const void *src, size_t bytes);
vg_status vg_device_download(vg_device *dev, void *dst, const void *src, size_t bytes);
vg_status vg_device_synchronize(vg_device *dev, void *stream);

/* ---- policy context --------------------------------------------------------
 * A per-thread stack (at most 16 deep; VG_ERR_LIMIT beyond): vg_gemm() uses
 * the innermost policy entered for its device (dev NULL at enter = for every
 * device), or the `default` partition outside any.  `default` has the
 * default field values but a hash of its own (runtime/POLICY.md), so it is
 * never an engine's partition.  vg_policy_leave() with nothing entered is
 * VG_ERR_STATE. */
vg_status vg_policy_enter(vg_device *dev, const vg_config *cfg);
vg_status vg_policy_leave(void);

/* ---- dispatch ------------------------------------------------------------- */
typedef enum vg_decision {
    VG_DECISION_MEASURE = 0,
    VG_DECISION_REUSE,
    VG_DECISION_HEURISTIC
} vg_decision;
const char *vg_decision_name(vg_decision d);

typedef struct vg_dispatch_info {
    vg_decision decision;
    const vg_plan *plan;       /* the plan that ran */
    vg_path path;              /* the path that ran (grouped may become moe or loop) */
    uint64_t policy_hash;
    double measured_us;        /* the winning time when decision == measure */
    const char *why;           /* short reason ("capturing", "frozen", ...) or "" */
    double dispatch_us;        /* time to decide, measuring included, launch excluded */
} vg_dispatch_info;

/* Decides a plan for the call and launches it.  `op` names the registered
 * operator (e.g. "gemm"); info may be NULL.  The path asked for in args may
 * be rerouted (grouped -> moe above GROUPED_DECODE_MAX_TOKENS tokens per
 * group, grouped -> loop with fp8_grouped_bmm_decode off); info->path says
 * which ran. */
vg_status vg_gemm(vg_device *dev, const char *op, const vg_gemm_args *args,
                  vg_dispatch_info *info);

/* Runs one named plan, bypassing the decision (golden verify --plan). */
vg_status vg_gemm_with_plan(vg_device *dev, const char *plan_id, const vg_gemm_args *args);
/* The plans of the device's backend that apply to (f, path, rows), in table
 * order: the first min(count, max) are written to plans[] (pointers into a
 * static table) and *count is the number that apply (max 0 just counts). */
vg_status vg_device_plans(vg_device *dev, vg_family f, vg_path path, int32_t rows,
                          const vg_plan **plans, size_t max, size_t *count);
/* Whether the device offers plan p to the runtime (its tuner, its rule and
 * vg_gemm_workspace_bytes): 1, or 0 with *why (may be NULL) saying why --
 * the dequantize + cuBLAS kind where cuBLAS did not load or start, or
 * VG_CUDA_DQBLAS=0.  A plan not offered still runs when forced by id where
 * its backend can run it (vg_gemm_with_plan). */
int vg_device_plan_offered(vg_device *dev, const vg_plan *p, const char **why);
/* Bytes of workspace the device must have for this call under any plan the
 * runtime may choose for it (offered at its rows, inside the policy's
 * dequant_workspace_max_mib): what a caller sizes once for its largest
 * layer. */
vg_status vg_gemm_workspace_bytes(vg_device *dev, const vg_gemm_args *args, size_t *bytes);
/* Bytes of workspace plan p needs for this call (vg_gemm_with_plan). */
vg_status vg_gemm_plan_workspace_bytes(vg_device *dev, const vg_plan *p,
                                       const vg_gemm_args *args, size_t *bytes);

/* ---- freeze and tuning state -------------------------------------------------- */
vg_status vg_device_freeze_tuning(vg_device *dev);
typedef struct vg_tuning_state {
    int frozen;
    uint64_t measured_before_freeze;  /* shapes measured before the freeze */
    uint64_t measured_after_freeze;   /* must stay 0 */
    uint64_t measured_total;
    uint64_t cache_entries;
} vg_tuning_state;
vg_status vg_device_tuning_state(vg_device *dev, vg_tuning_state *out);

/* Tests only: replaces the backend's timer so a test decides which plan
 * wins a measurement.  fn returns the time in microseconds (called once per
 * candidate, with args->path already rerouted; nothing is launched to time
 * it); NULL restores the real timer.  Set it before calls start: it is not
 * synchronised with concurrent vg_gemm() calls. */
typedef double (*vg_timer_fn)(const vg_plan *plan, const vg_gemm_args *args, void *user);
vg_status vg_device_set_timer(vg_device *dev, vg_timer_fn fn, void *user);

/* ---- trace ------------------------------------------------------------------ *
 * VG_GEMM_TRACE=1 (stderr) or VG_GEMM_TRACE=/path (append), read at
 * vg_device_open; vg_trace_set overrides it ("", "0" or NULL turns it off).
 * Line formats: runtime/POLICY.md.  Change the target while no call is in
 * flight on the device (the old file is closed). */
vg_status vg_trace_set(vg_device *dev, const char *target);

/* ---- LUT -------------------------------------------------------------------- */
typedef struct vg_lut_report {
    uint64_t applied;
    uint64_t skipped_arch;     /* measured on another arch */
    uint64_t skipped_policy;   /* another policy hash, when a policy was asked for */
    uint64_t skipped_plan;     /* names a plan that no longer exists */
    /* Stale entries (format version 2 stamps every entry): */
    uint64_t skipped_build;    /* measured by another kernel build (VG_BUILD_ID), or
                                  unstamped (version 1) under a config-driven import */
    uint64_t skipped_planset;  /* measured on another plan table of the backend */
} vg_lut_report;
/* policy_hash 0 exports every partition. Written to a temporary file and
 * renamed.  Format version 2 (runtime/POLICY.md); version 1 files are read.
 * vg_lut_import skips entries stamped by another build or plan set (unless
 * reuse_lut_across_builds applies: vg_warmup / engines read it from their
 * config) and applies unstamped version-1 entries, which it cannot date;
 * the config-driven imports skip those as stale too. */
vg_status vg_lut_export(vg_device *dev, const char *path, uint64_t policy_hash);
/* policy_hash 0 accepts every partition. */
vg_status vg_lut_import(vg_device *dev, const char *path, uint64_t policy_hash,
                        vg_lut_report *report);

/* ---- warm-up ------------------------------------------------------------------ */
typedef struct vg_layer {
    vg_family family;
    vg_path path;        /* dense, grouped (grouped decode sizes) or moe */
    int32_t n, k, groups;
} vg_layer;
typedef struct vg_warmup_report {
    uint64_t shapes_measured;
    uint64_t calls;
    int frozen;
} vg_warmup_report;
/* Enters cfg's policy itself (and leaves it), runs every grouped decode size
 * 1..16 tokens per group (grouped, loop and moe layers) and the dense decode
 * sizes M 1..64 for each layer, on device buffers with synthetic non-zero
 * weights, then freezes when freeze_tuning_after_warmup is on.  With
 * gemm_lut_path set: imports it first when the file exists (cfg's partition
 * only) and exports cfg's partition after the warm-up when it measured any
 * shape.  report->shapes_measured counts new measurements on the device. */
vg_status vg_warmup(vg_device *dev, const vg_config *cfg, const vg_layer *layers, int n,
                    vg_warmup_report *report);

/* ---- engines (issue 10) ---------------------------------------------------------
 * A serving process may host several engines on one device (a draft model
 * beside the target model, two models on one GPU).  Each engine owns its
 * policy (from its config), its measured set, its freeze state and its LUT
 * (gemm_lut_path expanded for the device); nothing leaks between engines,
 * even when their policies hash alike, unless both configs say
 * sm70_runtime.share_measured_plans_across_engines: then each reuses the
 * plans the other measured under the same policy hash (its own freeze and
 * counters stay its own).
 *
 * The device-level calls (vg_policy_enter, vg_warmup, vg_device_freeze_tuning,
 * vg_device_tuning_state, vg_lut_import/export) act on the device's implicit
 * default engine, which no vg_engine_* call touches.
 *
 * vg_engine_open copies cfg, expands and prepares its LUT path (folders
 * created, writability checked: VG_ERR_IO now, not at the export) and
 * imports the LUT when the file exists (cfg's partition; stale entries
 * skipped unless reuse_lut_across_builds).  vg_engine_enter pushes the
 * engine on this thread's policy stack (like vg_policy_enter, same depth
 * limit): vg_gemm on its device then decides with the engine's policy and
 * measured set; vg_engine_leave pops it.
 *
 * vg_engine_close waits for the engine's calls in flight, then frees its
 * state.  Handles stay valid until vg_device_close: a closed engine keeps a
 * small shell, so every later use (enter, a vg_gemm of a thread that still
 * has it entered, warm-up, freeze, state, close again) is VG_ERR_STATE, not a
 * crash.  vg_device_close closes every engine still open and frees the
 * shells; an engine handle must not be used after its device is closed. */
vg_status vg_engine_open(vg_device *dev, const vg_config *cfg, vg_engine **out);
vg_status vg_engine_close(vg_engine *engine);
vg_status vg_engine_enter(vg_engine *engine);
vg_status vg_engine_leave(void);
/* 0, 1, ... in open order on its device (replay names them engine<id>). */
vg_status vg_engine_id(const vg_engine *engine, int *id);
/* vg_warmup for the engine: runs inside it, exports its LUT when it
 * measured anything, freezes it when its config says so. */
vg_status vg_engine_warmup(vg_engine *engine, const vg_layer *layers, int n,
                           vg_warmup_report *report);
vg_status vg_engine_freeze_tuning(vg_engine *engine);
vg_status vg_engine_tuning_state(vg_engine *engine, vg_tuning_state *out);

/* ---- operator registry ---------------------------------------------------------- */
typedef struct vg_operator {
    const char *name;          /* "gemm", ... */
    const char *schema;        /* "gemm(Tensor x, QWeight w, Tensor? offsets, Policy native) -> Tensor" */
    int takes_native_policy;
} vg_operator;
vg_status vg_registry_list(const vg_operator **ops, size_t *count);
/* The operators listed as configured (taking a native policy argument). */
vg_status vg_registry_configured(const char *const **names, size_t *count);

#ifdef __cplusplus
}
#endif
#endif
