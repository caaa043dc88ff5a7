/*
 * kernel_config: the JSON an engine passes, parsed with cJSON.
 *
 *   {"sm70_fp8":{"native":{"fp8_grouped_bmm_decode":true,
 *                          "fp8_tune_small_shapes":true,
 *                          "fp8_coordinated_tuning":false,
 *                          "dequant_workspace_max_mib":null}},
 *    "sm70_runtime":{"freeze_tuning_after_warmup":false,
 *                    "reuse_lut_across_builds":false,
 *                    "share_measured_plans_across_engines":false},
 *    "gemm_lut_path":null}
 *
 * gemm_lut_path may hold the placeholders {device}, {arch} and {rank}
 * (lut.c expands them); any other {...} is refused here, naming the field
 * (vg_lut_template_valid, which lut.c calls again on the template it is
 * given).
 *
 * Every key is optional (a missing key keeps its default).  An unknown key,
 * a wrong type, a duplicate key or a value out of range is VG_ERR_CONFIG
 * with vg_last_error() naming the JSON path first, for example
 *   sm70_runtime.freeze_tuning_after_warmup: expected boolean, got "yes"
 * The schema is the table below; config.c has no other knowledge of fields.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "fileio.h"
#include "internal.h"

/* Longest gemm_lut_path accepted (PATH_MAX less the ".tmp.<pid>" suffix). */
#define VG_LUT_PATH_MAX 4000

static const char *const placeholders[] = {"device", "arch", "rank"};

int vg_lut_template_valid(const char *tmpl, char *why, size_t size)
{
    for (const char *p = tmpl; *p; p++) {
        if (*p == '}') {
            snprintf(why, size, "'}' without '{' at character %zu", (size_t)(p - tmpl) + 1);
            return 0;
        }
        if (*p != '{')
            continue;
        const char *end = strchr(p, '}');
        if (!end) {
            snprintf(why, size, "unterminated placeholder at character %zu",
                     (size_t)(p - tmpl) + 1);
            return 0;
        }
        size_t len = (size_t)(end - p - 1);
        int known = 0;
        for (size_t i = 0; i < sizeof placeholders / sizeof placeholders[0]; i++)
            if (strlen(placeholders[i]) == len && memcmp(p + 1, placeholders[i], len) == 0)
                known = 1;
        if (!known) {
            snprintf(why, size,
                     "unknown placeholder '{%.*s}' (expected {device}, {arch} or {rank})",
                     (int)(len > 40 ? 40 : len), p + 1);
            return 0;
        }
        p = end;
    }
    return 1;
}

typedef enum { FIELD_BOOL, FIELD_PATH, FIELD_PER_FAMILY, FIELD_MIB } field_kind;

/* The largest MiB count a FIELD_MIB takes (1 TiB). */
#define VG_CONFIG_MIB_MAX (1 << 20)

/* One leaf of the schema: its JSON path, its kind and where it lands. */
typedef struct field_spec {
    const char *path;         /* dotted JSON path */
    field_kind kind;
    size_t offset;            /* into vg_config_fields (FIELD_BOOL, FIELD_MIB) */
    int def;
} field_spec;

static const field_spec fields[] = {
    {"sm70_fp8.native.fp8_grouped_bmm_decode", FIELD_BOOL,
     offsetof(vg_config_fields, fp8_grouped_bmm_decode), 1},
    {"sm70_fp8.native.fp8_tune_small_shapes", FIELD_BOOL,
     offsetof(vg_config_fields, fp8_tune_small_shapes), 1},
    {"sm70_fp8.native.fp8_coordinated_tuning", FIELD_BOOL,
     offsetof(vg_config_fields, fp8_coordinated_tuning), 0},
    {"sm70_fp8.native.dequant_workspace_max_mib", FIELD_MIB,
     offsetof(vg_config_fields, dequant_workspace_max_mib), -1},
    {"sm70_runtime.freeze_tuning_after_warmup", FIELD_BOOL,
     offsetof(vg_config_fields, freeze_tuning_after_warmup), 0},
    {"sm70_runtime.reuse_lut_across_builds", FIELD_BOOL,
     offsetof(vg_config_fields, reuse_lut_across_builds), 0},
    {"sm70_runtime.share_measured_plans_across_engines", FIELD_BOOL,
     offsetof(vg_config_fields, share_measured_plans_across_engines), 0},
    {"gemm_lut_path", FIELD_PATH, 0, 0},
    {"per_family", FIELD_PER_FAMILY, 0, 0},
};

static void describe(const cJSON *v, char *buf, size_t size);

/* The per-family options: JSON name and the families that read each one
 * (runtime/POLICY.md has the same table; test_per_family walks it). */
static const struct {
    const char *name;
    uint32_t families;
} family_options[VG_FOPT_COUNT] = {
    [VG_FOPT_TUNE_SMALL_SHAPES] = {"tune_small_shapes", VG_ALL_FAMILIES},
    [VG_FOPT_GROUPED_BMM_DECODE] = {"grouped_bmm_decode", VG_ALL_FAMILIES},
    [VG_FOPT_TILES_WITHIN_SCALE_BLOCK] = {"tiles_within_scale_block",
                                          VG_FAMILY_BIT(VG_FAMILY_FP8)},
};

uint32_t vg_family_option_families(vg_family_option o)
{
    return (unsigned)o < VG_FOPT_COUNT ? family_options[o].families : 0;
}

const char *vg_family_option_name(vg_family_option o)
{
    return (unsigned)o < VG_FOPT_COUNT ? family_options[o].name : "unknown";
}

/* "per_family": {"<family>": {"<option>": bool, ...}, ...} */
static vg_status walk_per_family(const cJSON *obj, vg_config *cfg)
{
    char got[64], path[256], list[256];
    if (!cJSON_IsObject(obj)) {
        describe(obj, got, sizeof got);
        return vg_fail(VG_ERR_CONFIG, "per_family: expected object, got %s", got);
    }
    for (const cJSON *fam = obj->child; fam; fam = fam->next) {
        const char *key = fam->string ? fam->string : "";
        snprintf(path, sizeof path, "per_family.%s", key);
        for (const cJSON *o = obj->child; o != fam; o = o->next)
            if (o->string && strcmp(o->string, key) == 0)
                return vg_fail(VG_ERR_CONFIG, "%s: duplicate key", path);
        vg_family f;
        if (vg_family_parse(key, &f) != VG_OK)
            return vg_fail(VG_ERR_CONFIG,
                           "%s: unknown family (expected one of: fp16, awq, fp8, mxfp4, nvfp4)",
                           path);
        if (!cJSON_IsObject(fam)) {
            describe(fam, got, sizeof got);
            return vg_fail(VG_ERR_CONFIG, "%s: expected object, got %s", path, got);
        }
        for (const cJSON *item = fam->child; item; item = item->next) {
            const char *opt = item->string ? item->string : "";
            char leafpath[300];
            snprintf(leafpath, sizeof leafpath, "%s.%s", path, opt);
            for (const cJSON *o = fam->child; o != item; o = o->next)
                if (o->string && strcmp(o->string, opt) == 0)
                    return vg_fail(VG_ERR_CONFIG, "%s: duplicate key", leafpath);
            int which = -1;
            list[0] = '\0';
            for (int i = 0; i < VG_FOPT_COUNT; i++) {
                size_t used = strlen(list);
                snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
                         family_options[i].name);
                if (strcmp(opt, family_options[i].name) == 0)
                    which = i;
            }
            if (which < 0)
                return vg_fail(VG_ERR_CONFIG, "%s: unknown key (expected one of: %s)", leafpath,
                               list);
            if (!(family_options[which].families & VG_FAMILY_BIT(f))) {
                char fams[128] = "";
                for (int g = 0; g < VG_FAMILY_COUNT; g++)
                    if (family_options[which].families & VG_FAMILY_BIT(g)) {
                        size_t used = strlen(fams);
                        snprintf(fams + used, sizeof fams - used, "%s%s", used ? ", " : "",
                                 vg_family_name((vg_family)g));
                    }
                return vg_fail(VG_ERR_CONFIG,
                               "%s: does not apply to family %s (read only by: %s)", leafpath,
                               key, fams);
            }
            if (!cJSON_IsBool(item)) {
                describe(item, got, sizeof got);
                return vg_fail(VG_ERR_CONFIG, "%s: expected boolean, got %s", leafpath, got);
            }
            cfg->f.per_family[f][which] = cJSON_IsTrue(item) ? 1 : 0;
        }
    }
    return VG_OK;
}
#define NFIELDS (sizeof fields / sizeof fields[0])

/* A short rendering of a JSON value for "got ..." ("yes" quoted, 1, null,
 * array, object). */
static void describe(const cJSON *v, char *buf, size_t size)
{
    if (cJSON_IsString(v)) {
        const char *s = v->valuestring ? v->valuestring : "";
        if (strlen(s) > 40)
            snprintf(buf, size, "\"%.40s...\"", s);
        else
            snprintf(buf, size, "\"%s\"", s);
    } else if (cJSON_IsNumber(v)) {
        snprintf(buf, size, "%.17g", v->valuedouble);
    } else if (cJSON_IsBool(v)) {
        snprintf(buf, size, "%s", cJSON_IsTrue(v) ? "true" : "false");
    } else if (cJSON_IsNull(v)) {
        snprintf(buf, size, "null");
    } else if (cJSON_IsArray(v)) {
        snprintf(buf, size, "array");
    } else {
        snprintf(buf, size, "object");
    }
}

static void join(char *out, size_t size, const char *prefix, const char *key)
{
    if (prefix[0])
        snprintf(out, size, "%s.%s", prefix, key);
    else
        snprintf(out, size, "%s", key);
}

/* The schema keys directly under `prefix` ("" = the root), as a list for the
 * unknown-key message; also says whether `key` is one of them. */
static int known_child(const char *prefix, const char *key, char *list, size_t size)
{
    size_t plen = strlen(prefix);
    int found = 0;
    list[0] = '\0';
    for (size_t i = 0; i < NFIELDS; i++) {
        const char *p = fields[i].path;
        if (plen) {
            if (strncmp(p, prefix, plen) != 0 || p[plen] != '.')
                continue;
            p += plen + 1;
        }
        size_t len = strcspn(p, ".");
        char child[128];
        snprintf(child, sizeof child, "%.*s", (int)len, p);
        if (strstr(list, child) == NULL) {   /* de-duplicate the list */
            size_t used = strlen(list);
            snprintf(list + used, size - used, "%s%s", used ? ", " : "", child);
        }
        if (strcmp(child, key) == 0)
            found = 1;
    }
    return found;
}

static const field_spec *leaf(const char *path)
{
    for (size_t i = 0; i < NFIELDS; i++)
        if (strcmp(fields[i].path, path) == 0)
            return &fields[i];
    return NULL;
}

/* Walks one object of the document against the schema. */
static vg_status walk(const cJSON *obj, const char *prefix, vg_config *cfg)
{
    char got[64], path[256], list[256];
    if (!cJSON_IsObject(obj)) {
        describe(obj, got, sizeof got);
        return vg_fail(VG_ERR_CONFIG, "%s: expected object, got %s",
                       prefix[0] ? prefix : "kernel_config", got);
    }
    for (const cJSON *item = obj->child; item; item = item->next) {
        const char *key = item->string ? item->string : "";
        join(path, sizeof path, prefix, key);
        /* cJSON keeps both copies of a repeated key; which one wins would be
         * an accident of its implementation, so refuse. */
        for (const cJSON *other = obj->child; other != item; other = other->next)
            if (other->string && strcmp(other->string, key) == 0)
                return vg_fail(VG_ERR_CONFIG, "%s: duplicate key", path);
        if (!known_child(prefix, key, list, sizeof list))
            return vg_fail(VG_ERR_CONFIG, "%s: unknown key (expected one of: %s)", path,
                           list);
        const field_spec *f = leaf(path);
        if (!f) {
            vg_status st = walk(item, path, cfg);
            if (st != VG_OK)
                return st;
            continue;
        }
        describe(item, got, sizeof got);
        if (f->kind == FIELD_PER_FAMILY) {
            vg_status st = walk_per_family(item, cfg);
            if (st != VG_OK)
                return st;
        } else if (f->kind == FIELD_BOOL) {
            if (!cJSON_IsBool(item))
                return vg_fail(VG_ERR_CONFIG, "%s: expected boolean, got %s", path, got);
            *(int *)((char *)&cfg->f + f->offset) = cJSON_IsTrue(item) ? 1 : 0;
        } else if (f->kind == FIELD_MIB) {
            int v = f->def;
            if (!cJSON_IsNull(item)) {
                if (!cJSON_IsNumber(item))
                    return vg_fail(VG_ERR_CONFIG, "%s: expected integer MiB or null, got %s",
                                   path, got);
                double d = item->valuedouble;
                if (d != (double)(long long)d)
                    return vg_fail(VG_ERR_CONFIG, "%s: expected integer MiB, got %s", path, got);
                if (d < 0 || d > VG_CONFIG_MIB_MAX)
                    return vg_fail(VG_ERR_CONFIG, "%s: out of range: %s (0 to %d MiB, or null)",
                                   path, got, VG_CONFIG_MIB_MAX);
                v = (int)d;
            }
            *(int *)((char *)&cfg->f + f->offset) = v;
        } else {
            if (cJSON_IsNull(item))
                continue;
            if (!cJSON_IsString(item))
                return vg_fail(VG_ERR_CONFIG, "%s: expected string or null, got %s", path,
                               got);
            size_t len = strlen(item->valuestring);
            if (len == 0)
                return vg_fail(VG_ERR_CONFIG,
                               "%s: out of range: empty path (use null for no LUT)", path);
            if (len > VG_LUT_PATH_MAX)
                return vg_fail(VG_ERR_CONFIG,
                               "%s: out of range: %zu characters, at most %d", path, len,
                               VG_LUT_PATH_MAX);
            char why[160];
            if (!vg_lut_template_valid(item->valuestring, why, sizeof why))
                return vg_fail(VG_ERR_CONFIG, "%s: %s", path, why);
            free(cfg->lut_path);
            cfg->lut_path = strdup(item->valuestring);
            if (!cfg->lut_path)
                return vg_fail(VG_ERR_NO_MEMORY, "kernel_config: out of memory");
        }
    }
    return VG_OK;
}

static vg_config *config_new(void)
{
    vg_config *cfg = calloc(1, sizeof *cfg);
    if (!cfg)
        return NULL;
    for (size_t i = 0; i < NFIELDS; i++)
        if (fields[i].kind == FIELD_BOOL || fields[i].kind == FIELD_MIB)
            *(int *)((char *)&cfg->f + fields[i].offset) = fields[i].def;
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int o = 0; o < VG_FOPT_COUNT; o++)
            cfg->f.per_family[f][o] = -1;
    return cfg;
}

vg_status vg_config_default(vg_config **out)
{
    if (!out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_default: out is NULL");
    *out = config_new();
    return *out ? VG_OK : vg_fail(VG_ERR_NO_MEMORY, "kernel_config: out of memory");
}

/* What cJSON would misreport: the deepest nesting of [ and { outside
 * strings (cJSON stops at CJSON_NESTING_LIMIT and names only the offset;
 * *too_deep_at is where the limit was first passed), and the first string holding the
 * escape \u0000 (cJSON ends the C string there, so a path would be cut
 * short without a word; *nul_at is the string's offset, else left as is). */
static int scan_json(const char *json, size_t *nul_at, size_t *too_deep_at)
{
    int depth = 0, deepest = 0;
    const char *string_start = NULL;
    for (const char *p = json; *p; p++) {
        if (string_start) {
            if (*p == '\\') {
                if (p[1] == 'u' && strncmp(p + 2, "0000", 4) == 0 && *nul_at == (size_t)-1)
                    *nul_at = (size_t)(string_start - json);
                if (p[1])
                    p++;
            } else if (*p == '"') {
                string_start = NULL;
            }
        } else if (*p == '"') {
            string_start = p;
        } else if (*p == '[' || *p == '{') {
            if (++depth > deepest) {
                deepest = depth;
                if (deepest == CJSON_NESTING_LIMIT + 1)
                    *too_deep_at = (size_t)(p - json);
            }
        } else if (*p == ']' || *p == '}') {
            depth--;
        }
    }
    return deepest;
}

vg_status vg_config_parse(const char *json, vg_config **out)
{
    if (!json || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_parse: NULL argument");
    *out = NULL;
    size_t nul_at = (size_t)-1, too_deep_at = 0;
    int depth = scan_json(json, &nul_at, &too_deep_at);
    if (depth > CJSON_NESTING_LIMIT)
        return vg_fail(VG_ERR_CONFIG,
                       "kernel_config: nesting deeper than %d levels (at offset %zu)",
                       CJSON_NESTING_LIMIT, too_deep_at);
    if (nul_at != (size_t)-1)
        return vg_fail(VG_ERR_CONFIG,
                       "kernel_config: the string at offset %zu holds \\u0000 (a NUL "
                       "character), which no field takes", nul_at);
    const char *end = NULL;
    cJSON *doc = cJSON_ParseWithOpts(json, &end, 1);
    if (!doc) {
        size_t at = end ? (size_t)(end - json) : 0;
        return vg_fail(VG_ERR_CONFIG, "kernel_config: invalid JSON at offset %zu near '%.20s'",
                       at, end ? end : "");
    }
    vg_config *cfg = config_new();
    if (!cfg) {
        cJSON_Delete(doc);
        return vg_fail(VG_ERR_NO_MEMORY, "kernel_config: out of memory");
    }
    vg_status st = walk(doc, "", cfg);
    cJSON_Delete(doc);
    if (st != VG_OK) {
        vg_config_free(cfg);
        return st;
    }
    cfg->f.gemm_lut_path = cfg->lut_path;
    *out = cfg;
    return VG_OK;
}

vg_status vg_config_load(const char *path, vg_config **out)
{
    if (!path || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_load: NULL argument");
    *out = NULL;
    char what[4200];
    snprintf(what, sizeof what, "kernel_config %s", path);
    char *buf = NULL;
    size_t len = 0;
    vg_status rst = vg_read_whole_file(what, path, 16u << 20, &buf, &len);
    if (rst != VG_OK)
        return rst;
    if (strlen(buf) != len) {
        free(buf);
        return vg_fail(VG_ERR_CONFIG, "kernel_config %s: contains a NUL byte", path);
    }
    vg_status st = vg_config_parse(buf, out);
    free(buf);
    if (st != VG_OK) {
        /* Keep the JSON path first; name the file after it. */
        char detail[900];
        snprintf(detail, sizeof detail, "%s", vg_last_error());
        return vg_fail(st, "%s (in %s)", detail, path);
    }
    return VG_OK;
}

vg_status vg_config_free(vg_config *cfg)
{
    if (cfg) {
        free(cfg->lut_path);
        free(cfg);
    }
    return VG_OK;
}

vg_status vg_config_get(const vg_config *cfg, vg_config_fields *out)
{
    if (!cfg || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_get: NULL argument");
    *out = cfg->f;
    return VG_OK;
}

vg_status vg_config_to_json(const vg_config *cfg, char **json)
{
    if (!cfg || !json)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_config_to_json: NULL argument");
    cJSON *root = cJSON_CreateObject();
    cJSON *fp8 = cJSON_AddObjectToObject(root, "sm70_fp8");
    cJSON *native = fp8 ? cJSON_AddObjectToObject(fp8, "native") : NULL;
    cJSON *rt = cJSON_AddObjectToObject(root, "sm70_runtime");
    if (!native || !rt) {
        cJSON_Delete(root);
        return vg_fail(VG_ERR_NO_MEMORY, "kernel_config: out of memory");
    }
    cJSON_AddBoolToObject(native, "fp8_grouped_bmm_decode", cfg->f.fp8_grouped_bmm_decode);
    cJSON_AddBoolToObject(native, "fp8_tune_small_shapes", cfg->f.fp8_tune_small_shapes);
    cJSON_AddBoolToObject(native, "fp8_coordinated_tuning", cfg->f.fp8_coordinated_tuning);
    if (cfg->f.dequant_workspace_max_mib >= 0)
        cJSON_AddNumberToObject(native, "dequant_workspace_max_mib",
                                cfg->f.dequant_workspace_max_mib);
    else
        cJSON_AddNullToObject(native, "dequant_workspace_max_mib");
    cJSON_AddBoolToObject(rt, "freeze_tuning_after_warmup", cfg->f.freeze_tuning_after_warmup);
    cJSON_AddBoolToObject(rt, "reuse_lut_across_builds", cfg->f.reuse_lut_across_builds);
    cJSON_AddBoolToObject(rt, "share_measured_plans_across_engines",
                          cfg->f.share_measured_plans_across_engines);
    if (cfg->lut_path)
        cJSON_AddStringToObject(root, "gemm_lut_path", cfg->lut_path);
    else
        cJSON_AddNullToObject(root, "gemm_lut_path");
    /* per_family only when some option is set, in table order. */
    cJSON *pf = NULL;
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        cJSON *fo = NULL;
        for (int o = 0; o < VG_FOPT_COUNT; o++) {
            int v = cfg->f.per_family[f][o];
            if (v < 0)
                continue;
            if (!pf)
                pf = cJSON_AddObjectToObject(root, "per_family");
            if (pf && !fo)
                fo = cJSON_AddObjectToObject(pf, vg_family_name((vg_family)f));
            if (fo)
                cJSON_AddBoolToObject(fo, family_options[o].name, v);
        }
    }
    *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return *json ? VG_OK : vg_fail(VG_ERR_NO_MEMORY, "kernel_config: out of memory");
}
