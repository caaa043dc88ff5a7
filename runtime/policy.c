/*
 * Policy: the hash that partitions the dispatch cache, and the per-thread
 * stack of entered policies.
 *
 * The hash (see runtime/POLICY.md) is FNV-1a 64 over a canonical string
 * built from the fields that change kernel choice, in the fixed order of
 * policy_fields[] below, each written as "<json path>=<0|1>;" after the
 * prefix "voltgate-policy-v1;".  Since it is built from the parsed values,
 * the key order and whitespace of the JSON cannot change it.
 *
 *   hashed (each one changes which kernel runs):
 *     sm70_fp8.native.fp8_grouped_bmm_decode  grouped decode: one launch or loop
 *     sm70_fp8.native.fp8_tune_small_shapes   measured plan or heuristic plan
 *     sm70_fp8.native.fp8_coordinated_tuning  plan agreed across ranks or local
 *   not hashed (no kernel reads them):
 *     sm70_runtime.freeze_tuning_after_warmup only stops later measurements
 *     gemm_lut_path                           where the cache is stored
 *
 * Every field applies to every family today (DESIGN.md: each family is
 * tuned and frozen by the same switches); the `families` column is kept so a
 * per-family option (issue 10) only salts the hash of the families it reads.
 *
 * The `default` partition (outside any vg_policy_enter) has default field
 * values but hashes the string "voltgate-policy-v1;default", so it is never
 * the partition of an engine, even one whose config is all defaults.
 * A hash that comes out 0 is mapped to 1: 0 means "every partition" in the
 * LUT calls.
 */
#include <string.h>

#include "internal.h"

typedef struct policy_field {
    const char *path;
    size_t offset;            /* into vg_config_fields */
    uint32_t families;        /* families whose kernel choice it changes */
} policy_field;

static const policy_field policy_fields[] = {
    {"sm70_fp8.native.fp8_grouped_bmm_decode",
     offsetof(vg_config_fields, fp8_grouped_bmm_decode), VG_ALL_FAMILIES},
    {"sm70_fp8.native.fp8_tune_small_shapes",
     offsetof(vg_config_fields, fp8_tune_small_shapes), VG_ALL_FAMILIES},
    {"sm70_fp8.native.fp8_coordinated_tuning",
     offsetof(vg_config_fields, fp8_coordinated_tuning), VG_ALL_FAMILIES},
};

#define POLICY_PREFIX "voltgate-policy-v1;"

uint64_t vg_fnv1a64(const void *data, size_t len, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static uint64_t nonzero(uint64_t h) { return h ? h : 1; }

static uint64_t hash_fields(const vg_config_fields *f)
{
    uint64_t h = vg_fnv1a64(POLICY_PREFIX, strlen(POLICY_PREFIX), VG_FNV_OFFSET);
    for (size_t i = 0; i < sizeof policy_fields / sizeof policy_fields[0]; i++) {
        int v = *(const int *)((const char *)f + policy_fields[i].offset) ? 1 : 0;
        h = vg_fnv1a64(policy_fields[i].path, strlen(policy_fields[i].path), h);
        h = vg_fnv1a64(v ? "=1;" : "=0;", 3, h);
    }
    return nonzero(h);
}

vg_status vg_config_policy_hash(const vg_config *cfg, uint64_t *hash)
{
    if (!cfg || !hash)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_policy_hash: NULL argument");
    *hash = hash_fields(&cfg->f);
    return VG_OK;
}

void vg_policy_from_config(const vg_config *cfg, vg_policy *out)
{
    out->hash = hash_fields(&cfg->f);
    out->grouped_bmm_decode = cfg->f.fp8_grouped_bmm_decode;
    out->tune_small_shapes = cfg->f.fp8_tune_small_shapes;
    out->coordinated_tuning = cfg->f.fp8_coordinated_tuning;
}

/* ---- the per-thread stack ------------------------------------------------ */

#define POLICY_STACK_MAX 16

typedef struct entered {
    const vg_device *dev;     /* NULL = applies to every device */
    vg_policy pol;
    vg_engine *engine;        /* NULL = the device's implicit default engine */
} entered;

static _Thread_local entered stack[POLICY_STACK_MAX];
static _Thread_local int depth;

static pthread_once_t default_once = PTHREAD_ONCE_INIT;
static vg_policy default_policy;

/* The default partition: default field values, its own hash. */
static void default_init(void)
{
    static const char s[] = POLICY_PREFIX "default";
    default_policy.hash = nonzero(vg_fnv1a64(s, sizeof s - 1, VG_FNV_OFFSET));
    default_policy.grouped_bmm_decode = 1;
    default_policy.tune_small_shapes = 1;
    default_policy.coordinated_tuning = 0;
}

const vg_policy *vg_policy_default_partition(void)
{
    pthread_once(&default_once, default_init);
    return &default_policy;
}

const vg_policy *vg_policy_current(const vg_device *dev)
{
    for (int i = depth - 1; i >= 0; i--)
        if (stack[i].dev == NULL || stack[i].dev == dev)
            return &stack[i].pol;
    return vg_policy_default_partition();
}

const vg_policy *vg_policy_current_engine(const vg_device *dev, vg_engine **engine)
{
    for (int i = depth - 1; i >= 0; i--)
        if (stack[i].dev == NULL || stack[i].dev == dev) {
            *engine = stack[i].engine;
            return &stack[i].pol;
        }
    *engine = NULL;
    return vg_policy_default_partition();
}

vg_status vg_engine_enter(vg_engine *e)
{
    if (!e || e->magic != VG_ENGINE_MAGIC)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_engine_enter: not an engine");
    if (atomic_load(&e->closed))
        return vg_fail(VG_ERR_STATE, "vg_engine_enter: engine %d is closed", e->id);
    if (depth >= POLICY_STACK_MAX)
        return vg_fail(VG_ERR_LIMIT, "vg_engine_enter: more than %d nested policies",
                       POLICY_STACK_MAX);
    stack[depth].dev = e->dev;
    stack[depth].pol = e->pol;
    stack[depth].engine = e;
    depth++;
    return VG_OK;
}

vg_status vg_engine_leave(void)
{
    if (depth == 0 || !stack[depth - 1].engine)
        return vg_fail(VG_ERR_STATE, "vg_engine_leave: the innermost entry is not an engine");
    depth--;
    return VG_OK;
}

vg_status vg_policy_enter(vg_device *dev, const vg_config *cfg)
{
    if (!cfg)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_policy_enter: cfg is NULL");
    if (depth >= POLICY_STACK_MAX)
        return vg_fail(VG_ERR_LIMIT, "vg_policy_enter: more than %d nested policies",
                       POLICY_STACK_MAX);
    stack[depth].dev = dev;
    stack[depth].engine = NULL;
    vg_policy_from_config(cfg, &stack[depth].pol);
    depth++;
    return VG_OK;
}

vg_status vg_policy_leave(void)
{
    if (depth == 0)
        return vg_fail(VG_ERR_STATE, "vg_policy_leave: no policy entered on this thread");
    depth--;
    return VG_OK;
}
