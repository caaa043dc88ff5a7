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
 *     sm70_fp8.native.dequant_workspace_max_mib  which plans are offered (only when
 *                                             set: "=<MiB>;" after the three above)
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
#include <stdio.h>
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

/* The hash of family `fam` (-1: a family with no per_family option): the
 * global fields the family reads, then "per_family.<fam>.<option>=<v>;" for
 * every option set for it, in option order.  A family with none set hashes
 * the string of policy v1 exactly, so configs without per_family keep
 * their hashes. */
static uint64_t hash_fields(const vg_config_fields *f, int fam)
{
    uint64_t h = vg_fnv1a64(POLICY_PREFIX, strlen(POLICY_PREFIX), VG_FNV_OFFSET);
    for (size_t i = 0; i < sizeof policy_fields / sizeof policy_fields[0]; i++) {
        if (fam >= 0 && !(policy_fields[i].families & VG_FAMILY_BIT(fam)))
            continue;
        int v = *(const int *)((const char *)f + policy_fields[i].offset) ? 1 : 0;
        h = vg_fnv1a64(policy_fields[i].path, strlen(policy_fields[i].path), h);
        h = vg_fnv1a64(v ? "=1;" : "=0;", 3, h);
    }
    /* The workspace cap changes which plans are offered; hashed only when
     * set, so configs without it keep their hashes. */
    if (f->dequant_workspace_max_mib >= 0) {
        char buf[96];
        int n = snprintf(buf, sizeof buf, "sm70_fp8.native.dequant_workspace_max_mib=%d;",
                         f->dequant_workspace_max_mib);
        h = vg_fnv1a64(buf, (size_t)n, h);
    }
    if (fam >= 0)
        for (int o = 0; o < VG_FOPT_COUNT; o++) {
            int v = f->per_family[fam][o];
            if (v < 0)
                continue;
            char buf[128];
            int n = snprintf(buf, sizeof buf, "per_family.%s.%s=%d;",
                             vg_family_name((vg_family)fam),
                             vg_family_option_name((vg_family_option)o), v ? 1 : 0);
            h = vg_fnv1a64(buf, (size_t)n, h);
        }
    return nonzero(h);
}

vg_status vg_config_policy_hash(const vg_config *cfg, uint64_t *hash)
{
    if (!cfg || !hash)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_policy_hash: NULL argument");
    *hash = hash_fields(&cfg->f, -1);
    return VG_OK;
}

vg_status vg_config_family_policy_hash(const vg_config *cfg, vg_family family, uint64_t *hash)
{
    if (!cfg || !hash || (unsigned)family >= VG_FAMILY_COUNT)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_family_policy_hash: bad argument");
    *hash = hash_fields(&cfg->f, (int)family);
    return VG_OK;
}

size_t vg_policy_hashes(const vg_policy *pol, uint64_t *out)
{
    size_t n = 0;
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        size_t j = 0;
        while (j < n && out[j] != pol->fam[f].hash)
            j++;
        if (j == n)
            out[n++] = pol->fam[f].hash;
    }
    return n;
}

static int pick(int override, int global) { return override >= 0 ? override : global; }

void vg_policy_from_config(const vg_config *cfg, vg_policy *out)
{
    const vg_config_fields *f = &cfg->f;
    out->hash = hash_fields(f, -1);
    out->grouped_bmm_decode = f->fp8_grouped_bmm_decode;
    out->tune_small_shapes = f->fp8_tune_small_shapes;
    out->coordinated_tuning = f->fp8_coordinated_tuning;
    for (int fam = 0; fam < VG_FAMILY_COUNT; fam++) {
        vg_family_policy *p = &out->fam[fam];
        p->hash = hash_fields(f, fam);
        p->tune_small_shapes = pick(f->per_family[fam][VG_FOPT_TUNE_SMALL_SHAPES],
                                    f->fp8_tune_small_shapes);
        p->grouped_bmm_decode = pick(f->per_family[fam][VG_FOPT_GROUPED_BMM_DECODE],
                                     f->fp8_grouped_bmm_decode);
        p->tiles_within_scale_block = pick(f->per_family[fam][VG_FOPT_TILES_WITHIN_SCALE_BLOCK], 0);
        p->dequant_workspace_max_mib = f->dequant_workspace_max_mib;
    }
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
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        default_policy.fam[f] = (vg_family_policy){.hash = default_policy.hash,
                                                   .grouped_bmm_decode = 1,
                                                   .tune_small_shapes = 1,
                                                   .dequant_workspace_max_mib = -1};
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
