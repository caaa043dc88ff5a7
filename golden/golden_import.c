/*
 * golden import: a case from a real checkpoint, taken as stored.
 *
 * The codes, scales and zeros of the file become the golden weight bit for
 * bit, repacked into our family's layout (types.h), and w_dequant -- what the
 * FP64 reference multiplies -- is computed from the SOURCE tensors with the
 * source format's own dequantization rule, never by running our dequantizer
 * on the repacked data: a repacking error then shows as a verify failure
 * instead of hiding in both.  golden/SCHEMA.md ("Imported checkpoints") has
 * each format's tensors and rule, with the code it was read from.
 *
 * A BF16/F16/F32 weight is taken as an fp16 weight when every value is an
 * FP16 (as stored), or quantized to --family when one is given.
 *
 * Tensors resolve in one safetensors file or through a model folder's
 * model.safetensors.index.json (only the shards a tensor needs are opened).
 * Experts: per-expert 2-D tensors named by a pattern with "{e}", or a fused
 * [E][...] tensor, become the groups of a grouped/loop/moe case.
 */
#include "voltgate/golden.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "safetensors.h"
#include "sha256.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"

/* ---- source formats ------------------------------------------------------------ */

typedef enum src_format {
    SRC_FP8,            /* DeepSeek-V3: F8_E4M3 weight, F32 weight_scale_inv per 128x128 */
    SRC_FLOAT,          /* BF16 / F16 / F32 weight */
    SRC_AWQ,            /* AutoAWQ GEMM */
    SRC_GPTQ,           /* AutoGPTQ / GPTQModel checkpoint_format "gptq" (v1) */
    SRC_GPTQ_V2,        /* GPTQModel checkpoint_format "gptq_v2" */
    SRC_NVFP4_MODELOPT, /* NVIDIA ModelOpt NVFP4 */
    SRC_NVFP4_CT,       /* compressed-tensors nvfp4-pack-quantized */
    SRC_MXFP4,          /* gpt-oss MXFP4 experts */
    SRC_COUNT
} src_format;

static const char *const SRC_NAMES[SRC_COUNT] = {
    "fp8-deepseek", "float", "awq", "gptq", "gptq_v2", "nvfp4-modelopt", "nvfp4-ct",
    "mxfp4-gptoss"};

const char *vg_golden_import_format_names(void)
{
    return "fp8-deepseek, float, awq, gptq, gptq_v2, nvfp4-modelopt, nvfp4-ct, mxfp4-gptoss";
}

/* ---- the checkpoint: one file, or a folder with an index --------------------------- */

#define MAX_SHARDS 4096
#define MAX_JSON_BYTES (64u << 20)

typedef struct shard {
    char *file;            /* name as weight_map gives it (no folder) */
    vg_safetensors *st;
} shard;

typedef struct ckpt {
    const char *label;     /* the file or folder named in messages */
    char *dir;             /* folder of the index / of the file */
    vg_safetensors *single;
    cJSON *index;          /* model.safetensors.index.json */
    const cJSON *weight_map;
    shard *shards;
    int nshards;
    cJSON *config;         /* config.json, when present */
    cJSON *hf_quant;       /* hf_quant_config.json (ModelOpt), when present */
    cJSON *quantize_cfg;   /* quantize_config.json (AutoGPTQ), when present */
} ckpt;

static void ckpt_close(ckpt *c)
{
    vg_st_close(c->single);
    for (int i = 0; i < c->nshards; i++) {
        free(c->shards[i].file);
        vg_st_close(c->shards[i].st);
    }
    free(c->shards);
    cJSON_Delete(c->index);
    cJSON_Delete(c->config);
    cJSON_Delete(c->hf_quant);
    cJSON_Delete(c->quantize_cfg);
    free(c->dir);
    memset(c, 0, sizeof *c);
}

/* Reads dir/name as JSON into *out; a missing file leaves *out NULL (only
 * when `optional`).  A file that exists but does not parse is an error. */
static vg_status read_json(const char *dir, const char *name, int optional, cJSON **out)
{
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        if (optional && errno == ENOENT)
            return VG_OK;
        return vg_fail(VG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size < 0 ||
        (uint64_t)sb.st_size > MAX_JSON_BYTES) {
        fclose(fp);
        return vg_fail(VG_ERR_FORMAT, "%s: not a regular file of at most %u bytes", path,
                       MAX_JSON_BYTES);
    }
    size_t len = (size_t)sb.st_size;
    char *buf = malloc(len + 1);
    if (!buf) {
        fclose(fp);
        return vg_fail(VG_ERR_NO_MEMORY, "%s: out of memory", path);
    }
    size_t got = fread(buf, 1, len, fp);
    fclose(fp);
    if (got != len) {
        free(buf);
        return vg_fail(VG_ERR_IO, "%s: short read", path);
    }
    *out = cJSON_ParseWithLength(buf, len);
    free(buf);
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return vg_fail(VG_ERR_FORMAT, "%s: not a JSON object", path);
    }
    return VG_OK;
}

static vg_status ckpt_open(const vg_golden_import_args *a, ckpt *c)
{
    memset(c, 0, sizeof *c);
    vg_status r;
    if (a->safetensors) {
        c->label = a->safetensors;
        const char *slash = strrchr(a->safetensors, '/');
        c->dir = slash ? strndup(a->safetensors, (size_t)(slash - a->safetensors))
                       : strdup(".");
        if (!c->dir)
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        if ((r = vg_st_open(a->safetensors, &c->single)) != VG_OK)
            return r;
    } else {
        c->label = a->checkpoint;
        if (!(c->dir = strdup(a->checkpoint)))
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        struct stat sb;
        if (stat(a->checkpoint, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return vg_fail(VG_ERR_IO, "%s: not a folder (--checkpoint takes a model folder)",
                           a->checkpoint);
        if ((r = read_json(c->dir, "model.safetensors.index.json", 1, &c->index)) != VG_OK)
            return r;
        if (c->index) {
            c->weight_map = cJSON_GetObjectItemCaseSensitive(c->index, "weight_map");
            if (!cJSON_IsObject(c->weight_map))
                return vg_fail(VG_ERR_FORMAT, "%s/model.safetensors.index.json: no "
                               "\"weight_map\" object", c->dir);
            for (const cJSON *e = c->weight_map->child; e; e = e->next)
                if (!cJSON_IsString(e) || !e->valuestring[0] || strchr(e->valuestring, '/') ||
                    !strcmp(e->valuestring, "..") || !strcmp(e->valuestring, "."))
                    return vg_fail(VG_ERR_FORMAT, "%s/model.safetensors.index.json: weight_map "
                                   "entry '%s' is not a shard file name in the folder",
                                   c->dir, e->string ? e->string : "?");
        } else {
            char path[4096];
            snprintf(path, sizeof path, "%s/model.safetensors", c->dir);
            if ((r = vg_st_open(path, &c->single)) != VG_OK) {
                char why[1024];
                snprintf(why, sizeof why, "%s", vg_last_error());
                return vg_fail(r, "%s: no model.safetensors.index.json, and %s", c->dir, why);
            }
        }
    }
    if ((r = read_json(c->dir, "config.json", 1, &c->config)) != VG_OK ||
        (r = read_json(c->dir, "hf_quant_config.json", 1, &c->hf_quant)) != VG_OK ||
        (r = read_json(c->dir, "quantize_config.json", 1, &c->quantize_cfg)) != VG_OK)
        return r;
    return VG_OK;
}

/* Whether the checkpoint lists a tensor (no error when it does not). */
static int ckpt_has(const ckpt *c, const char *name)
{
    if (c->weight_map)
        return cJSON_GetObjectItemCaseSensitive(c->weight_map, name) != NULL;
    for (size_t i = 0; i < c->single->count; i++)
        if (!strcmp(c->single->tensors[i].name, name))
            return 1;
    return 0;
}

/* The tensor `name`, opening its shard on first use. */
static vg_status ckpt_find(ckpt *c, const char *name, const vg_safetensors **st,
                           const vg_st_tensor **t)
{
    if (!c->weight_map) {
        *st = c->single;
        return vg_st_find(c->single, name, t);
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(c->weight_map, name);
    if (!e)
        return vg_fail(VG_ERR_NOT_FOUND, "%s: no tensor named '%s' in "
                       "model.safetensors.index.json", c->label, name);
    const char *file = e->valuestring;
    int i = 0;
    while (i < c->nshards && strcmp(c->shards[i].file, file))
        i++;
    if (i == c->nshards) {
        if (c->nshards == MAX_SHARDS)
            return vg_fail(VG_ERR_LIMIT, "%s: more than %d shards", c->label, MAX_SHARDS);
        if (!c->shards && !(c->shards = calloc(MAX_SHARDS, sizeof *c->shards)))
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", c->dir, file);
        vg_safetensors *s = NULL;
        vg_status r = vg_st_open(path, &s);
        if (r != VG_OK) {
            char why[1024];
            snprintf(why, sizeof why, "%s", vg_last_error());
            return vg_fail(r, "tensor '%s': its shard '%s' (model.safetensors.index.json) "
                           "cannot be used: %s", name, file, why);
        }
        if (!(c->shards[i].file = strdup(file))) {
            vg_st_close(s);
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        }
        c->shards[i].st = s;
        c->nshards++;
    }
    *st = c->shards[i].st;
    vg_status r = vg_st_find(*st, name, t);
    if (r != VG_OK)
        return vg_fail(r, "tensor '%s': model.safetensors.index.json puts it in shard '%s', "
                       "which has no such tensor", name, file);
    return VG_OK;
}

/* A string or number field of a JSON object ("" / 0 when absent). */
static const char *json_str(const cJSON *o, const char *key)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsString(v) ? v->valuestring : "";
}

static int json_int(const cJSON *o, const char *key, int dflt)
{
    const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    return cJSON_IsNumber(v) ? (int)v->valuedouble : dflt;
}

/* The quantization section of the folder's configs, as far as we use it. */
typedef struct quant_cfg {
    char method[64];            /* quant_method / quant_algo, lower case */
    char checkpoint_format[32]; /* gptq, gptq_v2 */
    char version[32];           /* AutoAWQ: gemm, gemv, ... */
    int group_size;             /* 0 when not given */
    int bits;                   /* 0 when not given */
    char where[64];             /* the file it came from */
} quant_cfg;

static void lower_copy(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++)
        dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32 : src[i]);
    dst[i] = '\0';
}

static void read_quant_cfg(const ckpt *c, quant_cfg *q)
{
    memset(q, 0, sizeof *q);
    const cJSON *qc = c->config ? cJSON_GetObjectItemCaseSensitive(c->config,
                                                                   "quantization_config")
                                : NULL;
    if (cJSON_IsObject(qc)) {
        snprintf(q->where, sizeof q->where, "config.json");
        lower_copy(q->method, sizeof q->method, json_str(qc, "quant_method"));
        lower_copy(q->checkpoint_format, sizeof q->checkpoint_format,
                   json_str(qc, "checkpoint_format"));
        q->group_size = json_int(qc, "group_size", 0);
        q->bits = json_int(qc, "bits", 0);
        lower_copy(q->version, sizeof q->version, json_str(qc, "version"));
    }
    if (c->quantize_cfg) {
        if (!q->where[0])
            snprintf(q->where, sizeof q->where, "quantize_config.json");
        if (!q->method[0])
            lower_copy(q->method, sizeof q->method, json_str(c->quantize_cfg, "quant_method"));
        if (!q->checkpoint_format[0])
            lower_copy(q->checkpoint_format, sizeof q->checkpoint_format,
                       json_str(c->quantize_cfg, "checkpoint_format"));
        if (!q->group_size)
            q->group_size = json_int(c->quantize_cfg, "group_size", 0);
        if (!q->bits)
            q->bits = json_int(c->quantize_cfg, "bits", 0);
    }
    const cJSON *hq = c->hf_quant ? cJSON_GetObjectItemCaseSensitive(c->hf_quant, "quantization")
                                  : NULL;
    if (cJSON_IsObject(hq) && !q->method[0]) {
        snprintf(q->where, sizeof q->where, "hf_quant_config.json");
        lower_copy(q->method, sizeof q->method, json_str(hq, "quant_algo"));
        q->group_size = json_int(hq, "group_size", 0);
    }
}

/* ---- the import state ----------------------------------------------------------------- */

typedef struct imp {
    const vg_golden_import_args *a;
    ckpt c;
    quant_cfg q;
    src_format fmt;
    vg_golden_file *f;
    int32_t groups;         /* G of the output */
    int started;
    float *wfloat;          /* SRC_FLOAT: the values, all groups, until the end */
    vg_st_dtype float_dtype;
    char tensors[8192];     /* source tensors read, for the provenance */
    char detected[2048];    /* how the format was chosen */
} imp;

static void note_tensor(imp *im, const char *name)
{
    size_t used = strlen(im->tensors);
    if (used + strlen(name) + 2 < sizeof im->tensors) {
        if (strstr(im->tensors, name) && used)
            return;
        snprintf(im->tensors + used, sizeof im->tensors - used, "%s%s", used ? "," : "", name);
    } else if (used + 4 < sizeof im->tensors && !strstr(im->tensors, ",...")) {
        strcat(im->tensors, ",...");
    }
}

static const char *dims(int rank, const int64_t *shape, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "[%lld]", (long long)shape[i]);
    if (rank == 0)
        snprintf(buf, len, "[] (a scalar)");
    return buf;
}

/* Opens tensor `name`, checks its dtype and full shape (`want`, rank
 * `rank`; -1 in want matches any extent, `what` explains the shape in the
 * message), and reads the part of expert `e` (e >= 0: the first dimension
 * is experts and is not in `want`) into a new buffer.  Scalars: rank 0 also
 * matches a [1]. */
static vg_status load(imp *im, const char *name, vg_st_dtype dt, int rank, const int64_t *want,
                      const char *what, int64_t e, void **out, int64_t *shape_out)
{
    *out = NULL;
    const vg_safetensors *st;
    const vg_st_tensor *t;
    vg_status r = ckpt_find(&im->c, name, &st, &t);
    if (r != VG_OK)
        return r;
    note_tensor(im, name);
    int lead = e >= 0 ? 1 : 0;
    int ok = t->dtype == dt;
    int trank = t->rank - lead;
    int scalar_as_one = rank == 0 && trank == 1 && t->shape[lead] == 1;
    if (ok && !scalar_as_one) {
        ok = trank == rank;
        for (int i = 0; ok && i < rank; i++)
            ok = want[i] < 0 || t->shape[lead + i] == want[i];
    }
    if (ok && lead)
        ok = t->rank >= 1 && e < t->shape[0];
    if (!ok) {
        char have[160], exp[160];
        dims(t->rank, t->shape, have, sizeof have);
        if (lead) {
            int64_t full[VG_ST_MAX_RANK + 1];
            full[0] = e + 1;
            for (int i = 0; i < rank && i < VG_ST_MAX_RANK; i++)
                full[i + 1] = want[i];
            dims(rank + 1, full, exp, sizeof exp);
            char *p = strchr(exp, ']');
            if (p) { /* "[E]..." reads better than the expert count we need */
                memmove(exp + 3, p + 1, strlen(p + 1) + 1);
                memcpy(exp, "[E]", 3);
            }
        } else {
            dims(rank, want, exp, sizeof exp);
        }
        for (char *p = exp; (p = strstr(p, "-1")); p++)
            p[0] = '*', memmove(p + 1, p + 2, strlen(p + 2) + 1);
        return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' is %s %s; expected %s %s (%s)%s",
                       im->c.label, name, vg_st_dtype_name(t->dtype), have, vg_st_dtype_name(dt),
                       exp, what,
                       lead && t->rank >= 1 && e >= t->shape[0] ? ": too few experts" : "");
    }
    uint64_t bytes = (t->end - t->begin) / (uint64_t)(lead ? t->shape[0] : 1);
    if (lead && t->shape[0] == 0)
        bytes = 0;
    if (bytes > ((uint64_t)1 << 31))
        return vg_fail(VG_ERR_LIMIT, "%s: tensor '%s' is too big for a golden case", im->c.label,
                       name);
    void *buf = malloc(bytes ? (size_t)bytes : 1);
    if (!buf)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory for tensor '%s'", name);
    r = vg_st_read_at(st, t, (uint64_t)(lead ? e : 0) * bytes, buf, (size_t)bytes);
    if (r != VG_OK) {
        free(buf);
        return r;
    }
    if (shape_out)
        for (int i = 0; i < trank && i < VG_ST_MAX_RANK; i++)
            shape_out[i] = t->shape[lead + i];
    *out = buf;
    return VG_OK;
}

/* Rank and shape of a tensor without reading it. */
static vg_status peek(imp *im, const char *name, const vg_st_tensor **t)
{
    const vg_safetensors *st;
    return ckpt_find(&im->c, name, &st, t);
}

/* out = a followed by b; an empty string when it would not fit (names are
 * bounded by the caller, so that never names a real tensor). */
static void join(char *out, size_t len, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb + 1 > len) {
        out[0] = '\0';
        return;
    }
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
}

static uint32_t rd_u32(const void *p, size_t i)
{
    uint32_t v;
    memcpy(&v, (const uint8_t *)p + 4 * i, 4);
    return v;
}

static uint16_t rd_u16(const void *p, size_t i)
{
    uint16_t v;
    memcpy(&v, (const uint8_t *)p + 2 * i, 2);
    return v;
}

static float rd_f32(const void *p, size_t i)
{
    return vg_bits_f32(rd_u32(p, i));
}

/* Sets the weight's family and shape on the first group and allocates all
 * groups; later groups must have the same shape. */
static vg_status imp_begin(imp *im, vg_family family, int64_t n, int64_t k, int32_t g,
                           const char *base)
{
    vg_golden_file *f = im->f;
    if (im->started) {
        if (n != f->n || k != f->k)
            return vg_fail(VG_ERR_FORMAT, "%s: '%s' (group %d) is %lld x %lld; the groups "
                           "before it are %d x %d", im->c.label, base, (int)g, (long long)n,
                           (long long)k, (int)f->n, (int)f->k);
        return VG_OK;
    }
    if (n < 1 || k < 1 || n > VG_GOLDEN_MAX_DIM || k > VG_GOLDEN_MAX_DIM ||
        (uint64_t)n * (uint64_t)k * (uint64_t)im->groups > ((uint64_t)1 << 28))
        return vg_fail(VG_ERR_LIMIT, "%s: '%s' is %d x %lld x %lld: empty or too big for a "
                       "golden case", im->c.label, base, (int)im->groups, (long long)n,
                       (long long)k);
    f->family = family;
    f->n = (int32_t)n;
    f->k = (int32_t)k;
    f->groups = im->groups;
    vg_status r = vg_weight_layout_of(family, f->n, f->k, &f->layout);
    if (r != VG_OK) {
        char why[512];
        snprintf(why, sizeof why, "%s", vg_last_error());
        return vg_fail(r, "%s: '%s': %s: the %s family's packing cannot hold this K",
                       im->c.label, base, why, vg_family_name(family));
    }
    size_t G = (size_t)im->groups;
    f->w_q = calloc(G, f->layout.q_bytes);
    f->w_scale = f->layout.scale_bytes ? calloc(G, f->layout.scale_bytes) : NULL;
    f->w_zero = f->layout.zero_bytes ? calloc(G, f->layout.zero_bytes) : NULL;
    f->w_dequant = calloc(G * (size_t)n * (size_t)k, sizeof(float));
    f->w_tensor_scale = 1.0f;
    if (!f->w_q || (f->layout.scale_bytes && !f->w_scale) ||
        (f->layout.zero_bytes && !f->w_zero) || !f->w_dequant)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    im->started = 1;
    return VG_OK;
}

/* The awq family groups K by 128: a source whose group size is another is
 * refused by name.  `rows` scale rows were found for K. */
static vg_status check_group_128(imp *im, const char *tensor, int64_t k, int64_t rows)
{
    if (im->q.group_size && im->q.group_size != VG_AWQ_GROUP &&
        !(im->q.group_size == -1 && k <= VG_AWQ_GROUP))
        return vg_fail(VG_ERR_UNSUPPORTED, "%s: %s says group_size %d: the awq family takes "
                       "group size %d along K only", im->c.label, im->q.where,
                       im->q.group_size, VG_AWQ_GROUP);
    if (rows == (k + VG_AWQ_GROUP - 1) / VG_AWQ_GROUP)
        return VG_OK;
    if (rows > 0 && k % rows == 0)
        return vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s' holds %lld groups along K = %lld: "
                       "group size %lld; the awq family takes group size %d only",
                       im->c.label, tensor, (long long)rows, (long long)k,
                       (long long)(k / rows), VG_AWQ_GROUP);
    return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' holds %lld groups along K = %lld, which "
                   "is no group size; the awq family takes group size %d", im->c.label, tensor,
                   (long long)rows, (long long)k, VG_AWQ_GROUP);
}

static vg_status fp16_scales_finite(imp *im, const char *name, const void *s, int64_t rows,
                                    int64_t cols)
{
    for (int64_t i = 0; i < rows * cols; i++)
        if (!isfinite(vg_fp16_to_f32(rd_u16(s, (size_t)i))))
            return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] is not finite "
                           "(a NaN or infinite scale)", im->c.label, name,
                           (long long)(i / cols), (long long)(i % cols));
    return VG_OK;
}

/* ---- AWQ and GPTQ -> awq ------------------------------------------------------------- */

/* Writes group g of the awq family from per-(k, n) codes, per-(group, n)
 * zeros and FP16 scale bits of the source; w_dequant from the source rule
 * w = (q - z) * s.  code(k, n), zero(r, n), scale(r, n) read the source. */
typedef struct int4_src {
    const void *qweight, *qzeros, *scales;
    int64_t n, k, rows;
    int gptq, v1;
} int4_src;

static uint8_t int4_code(const int4_src *s, int64_t k, int64_t n)
{
    if (s->gptq) /* [K/8][N], along K in order: nibble i is k = 8r + i */
        return (uint8_t)((rd_u32(s->qweight, (size_t)((k / 8) * s->n + n)) >> (4 * (k % 8))) &
                         0xFu);
    /* AWQ [K][N/8] along N: column 8c + j lives in nibble REVERSE[j] */
    return vg_awq_unpack(rd_u32(s->qweight, (size_t)(k * (s->n / 8) + n / 8)), (int)(n % 8));
}

static uint8_t int4_zero(const int4_src *s, int64_t r, int64_t n)
{
    uint32_t word = rd_u32(s->qzeros, (size_t)(r * (s->n / 8) + n / 8));
    if (!s->gptq)
        return vg_awq_unpack(word, (int)(n % 8));
    uint8_t z = (uint8_t)((word >> (4 * (n % 8))) & 0xFu); /* along N in order */
    return s->v1 ? (uint8_t)((z + 1) & 0xFu) : z;          /* v1 stores zero - 1 */
}

static void int4_fill(imp *im, const int4_src *s, int32_t g)
{
    vg_golden_file *f = im->f;
    const int64_t N = s->n, K = s->k, SC = f->layout.scale_cols;
    uint32_t *q = (uint32_t *)f->w_q + (size_t)g * (size_t)(N * K / 8);
    uint16_t *sc = (uint16_t *)f->w_scale + (size_t)g * (size_t)(N * SC);
    uint16_t *zp = (uint16_t *)f->w_zero + (size_t)g * (size_t)(N * SC);
    float *wd = f->w_dequant + (size_t)g * (size_t)(N * K);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t r = 0; r < SC; r++) {
            sc[n * SC + r] = rd_u16(s->scales, (size_t)(r * N + n));
            zp[n * SC + r] = vg_f32_to_fp16((float)int4_zero(s, r, n));
        }
        for (int64_t k0 = 0; k0 < K; k0 += 8) {
            uint8_t codes[8];
            for (int j = 0; j < 8; j++)
                codes[j] = int4_code(s, k0 + j, n);
            q[n * (K / 8) + k0 / 8] = vg_awq_pack8(codes);
        }
        for (int64_t k = 0; k < K; k++) {
            int64_t r = k / VG_AWQ_GROUP;
            double scale = vg_fp16_to_f32(rd_u16(s->scales, (size_t)(r * N + n)));
            wd[n * K + k] = (float)(((double)int4_code(s, k, n) - (double)int4_zero(s, r, n)) *
                                    scale);
        }
    }
}

static vg_status import_int4(imp *im, const char *base, int32_t g)
{
    char nq[1024], nz[1024], ns[1024], ngi[1024];
    join(nq, sizeof nq, base, ".qweight");
    join(nz, sizeof nz, base, ".qzeros");
    join(ns, sizeof ns, base, ".scales");
    join(ngi, sizeof ngi, base, ".g_idx");
    int gptq = im->fmt != SRC_AWQ;
    int4_src s = {0};
    s.gptq = gptq;
    s.v1 = im->fmt == SRC_GPTQ;
    int64_t qs[2], any2[2] = {-1, -1};
    void *gi = NULL;
    vg_status r = load(im, nq, VG_ST_I32, 2, any2,
                       gptq ? "GPTQ qweight [K/8][N]" : "AWQ qweight [K][N/8]", -1,
                       (void **)&s.qweight, qs);
    if (r != VG_OK)
        goto out;
    s.n = gptq ? qs[1] : qs[0 + 1] * 8;
    s.k = gptq ? qs[0] * 8 : qs[0];
    if (s.n % 8) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s': N = %lld is not a multiple of 8, so its "
                    "qzeros cannot pack 8 per word", im->c.label, nq, (long long)s.n);
        goto out;
    }
    if (s.k % 8) {
        r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s': K = %lld: the awq family packs 8 "
                    "values of K per word, so K must be a multiple of 8", im->c.label, nq,
                    (long long)s.k);
        goto out;
    }
    int64_t ss[2];
    int64_t want_s[2] = {-1, s.n};
    if ((r = load(im, ns, VG_ST_F16, 2, want_s, "scales [K/group][N]", -1, (void **)&s.scales,
                  ss)) != VG_OK)
        goto out;
    s.rows = ss[0];
    if ((r = check_group_128(im, ns, s.k, s.rows)) != VG_OK)
        goto out;
    int64_t want_z[2] = {s.rows, s.n / 8};
    if ((r = load(im, nz, VG_ST_I32, 2, want_z, "qzeros [K/group][N/8]", -1, (void **)&s.qzeros,
                  NULL)) != VG_OK)
        goto out;
    if ((r = fp16_scales_finite(im, ns, s.scales, s.rows, s.n)) != VG_OK)
        goto out;
    if (gptq && ckpt_has(&im->c, ngi)) {
        int64_t want_g[1] = {s.k};
        if ((r = load(im, ngi, VG_ST_I32, 1, want_g, "g_idx [K]", -1, &gi, NULL)) != VG_OK)
            goto out;
        for (int64_t k = 0; k < s.k; k++) {
            int32_t v = (int32_t)rd_u32(gi, (size_t)k);
            if (v != k / VG_AWQ_GROUP) {
                r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s': g_idx[%lld] = %d, not "
                            "%lld / %d = %lld: an act-order (desc_act) checkpoint permutes "
                            "K across groups, which the awq family (groups of 128 in K order) "
                            "cannot hold", im->c.label, ngi, (long long)k, (int)v, (long long)k,
                            VG_AWQ_GROUP, (long long)(k / VG_AWQ_GROUP));
                goto out;
            }
        }
    }
    if ((r = imp_begin(im, VG_FAMILY_AWQ, s.n, s.k, g, base)) != VG_OK)
        goto out;
    int4_fill(im, &s, g);
out:
    free((void *)s.qweight);
    free((void *)s.qzeros);
    free((void *)s.scales);
    free(gi);
    return r;
}

/* ---- NVFP4 (ModelOpt, compressed-tensors) -> nvfp4 --------------------------------- */

static vg_status e4m3_scales_ok(imp *im, const char *name, const uint8_t *s, int64_t rows,
                                int64_t cols)
{
    for (int64_t i = 0; i < rows * cols; i++)
        if ((s[i] & 0x7F) == 0x7F)
            return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] is an E4M3 NaN "
                           "(a NaN scale)", im->c.label, name, (long long)(i / cols),
                           (long long)(i % cols));
    return VG_OK;
}

static vg_status import_nvfp4(imp *im, const char *base, int32_t g)
{
    int ct = im->fmt == SRC_NVFP4_CT;
    char nw[1024], ns[1024], ng[1024];
    /* ModelOpt: P.weight, P.weight_scale, P.weight_scale_2;
     * compressed-tensors: P.weight_packed, P.weight_scale, P.weight_global_scale */
    snprintf(nw, sizeof nw, "%s.%s", base, ct ? "weight_packed" : "weight");
    join(ns, sizeof ns, base, ".weight_scale");
    snprintf(ng, sizeof ng, "%s.%s", base, ct ? "weight_global_scale" : "weight_scale_2");
    void *q = NULL, *s = NULL, *gs = NULL;
    int64_t qs[2], any2[2] = {-1, -1};
    vg_status r = load(im, nw, VG_ST_U8, 2, any2, "E2M1 pairs [N][K/2]", -1, &q, qs);
    if (r != VG_OK)
        goto out;
    int64_t N = qs[0], K = qs[1] * 2;
    int64_t SC = (K + VG_NVFP4_GROUP - 1) / VG_NVFP4_GROUP;
    int64_t want_s[2] = {N, SC};
    if ((r = load(im, ns, VG_ST_F8_E4M3, 2, want_s, "E4M3 scale per 16 along K [N][K/16]", -1,
                  &s, NULL)) != VG_OK)
        goto out;
    if ((r = load(im, ng, VG_ST_F32, 0, NULL,
                  ct ? "F32 global scale [1], the reciprocal" : "F32 per-tensor scale", -1, &gs,
                  NULL)) != VG_OK)
        goto out;
    if ((r = e4m3_scales_ok(im, ns, s, N, SC)) != VG_OK)
        goto out;
    float gv = rd_f32(gs, 0);
    if (!isfinite(gv) || !(gv > 0.0f)) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' is %g: a %s must be finite and > 0",
                    im->c.label, ng, (double)gv, ct ? "global scale" : "per-tensor scale");
        goto out;
    }
    /* our family holds one FP32 tensor scale, applied as a multiplier: the
     * compressed-tensors global scale divides, so its reciprocal goes in */
    float ts = ct ? 1.0f / gv : gv;
    if (!isfinite(ts) || !(ts > 0.0f)) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' is %g: its reciprocal is not a finite "
                    "FP32", im->c.label, ng, (double)gv);
        goto out;
    }
    int first = !im->started;
    if ((r = imp_begin(im, VG_FAMILY_NVFP4, N, K, g, base)) != VG_OK)
        goto out;
    vg_golden_file *f = im->f;
    if (first) {
        f->w_tensor_scale = ts;
    } else if (f->w_tensor_scale != ts) {
        r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s' is %g, the groups before it %g: the "
                    "nvfp4 family holds one tensor scale for all groups", im->c.label, ng,
                    (double)gv, (double)(ct ? 1.0f / f->w_tensor_scale : f->w_tensor_scale));
        goto out;
    }
    memcpy((uint8_t *)f->w_q + (size_t)g * f->layout.q_bytes, q, f->layout.q_bytes);
    memcpy((uint8_t *)f->w_scale + (size_t)g * f->layout.scale_bytes, s, f->layout.scale_bytes);
    const uint8_t *qb = q, *sb = s;
    float *wd = f->w_dequant + (size_t)g * (size_t)(N * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            uint8_t byte = qb[n * (K / 2) + k / 2];
            float e = vg_e2m1_to_f32((k & 1) ? (uint8_t)(byte >> 4) : (uint8_t)(byte & 0xF));
            float blk = vg_e4m3_to_f32(sb[n * SC + k / VG_NVFP4_GROUP]);
            /* each source's own order: ModelOpt scales the block scale by
             * weight_scale_2 in FP32 first; compressed-tensors divides the block
             * scale by the global scale in FP32 first; then the element */
            float scale = ct ? blk / gv : blk * gv;
            wd[n * K + k] = (float)((double)e * (double)scale);
        }
out:
    free(q);
    free(s);
    free(gs);
    return r;
}

/* ---- gpt-oss MXFP4 -> mxfp4 ------------------------------------------------------------ */

typedef enum row_pick { ROWS_ALL, ROWS_GATE, ROWS_UP } row_pick;

static vg_status import_mxfp4(imp *im, const char *base, int64_t e, int32_t g, row_pick rows)
{
    char nb[1024], ns[1024];
    /* transformers' names end in _blocks/_scales, the original checkpoint's in .blocks/.scales */
    join(nb, sizeof nb, base, "_blocks");
    join(ns, sizeof ns, base, "_scales");
    if (!ckpt_has(&im->c, nb)) {
        join(nb, sizeof nb, base, ".blocks");
        join(ns, sizeof ns, base, ".scales");
    }
    void *b = NULL, *s = NULL;
    int64_t bs[3], want_b[3] = {-1, -1, 16};
    vg_status r = load(im, nb, VG_ST_U8, 3, want_b, "E2M1 blocks [N][K/32][16]", e, &b, bs);
    if (r != VG_OK)
        goto out;
    int64_t N = bs[0], NB = bs[1], K = NB * 32;
    int64_t want_s[2] = {N, NB};
    if ((r = load(im, ns, VG_ST_U8, 2, want_s, "E8M0 scales [N][K/32]", e, &s, NULL)) != VG_OK)
        goto out;
    const uint8_t *sb = s, *bb = b;
    for (int64_t i = 0; i < N * NB; i++)
        if (sb[i] == 0xFF) {
            r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] is E8M0 code 255, "
                        "a NaN scale", im->c.label, ns, (long long)(i / NB), (long long)(i % NB));
            goto out;
        }
    if (rows != ROWS_ALL && N % 2) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' has %lld rows: an interleaved gate_up "
                    "weight has an even count", im->c.label, nb, (long long)N);
        goto out;
    }
    int64_t NO = rows == ROWS_ALL ? N : N / 2;
    if ((r = imp_begin(im, VG_FAMILY_MXFP4, NO, K, g, base)) != VG_OK)
        goto out;
    vg_golden_file *f = im->f;
    uint8_t *q = (uint8_t *)f->w_q + (size_t)g * f->layout.q_bytes;
    uint8_t *sc = (uint8_t *)f->w_scale + (size_t)g * f->layout.scale_bytes;
    float *wd = f->w_dequant + (size_t)g * (size_t)(NO * K);
    for (int64_t o = 0; o < NO; o++) {
        /* gate_up: even rows are gate, odd rows up (swiglu takes x[..., ::2], x[..., 1::2]) */
        int64_t n = rows == ROWS_ALL ? o : 2 * o + (rows == ROWS_UP);
        /* a row's 16-byte blocks back to back are our row: element 2j low nibble */
        memcpy(q + o * (K / 2), bb + n * NB * 16, (size_t)(K / 2));
        memcpy(sc + o * NB, sb + n * NB, (size_t)NB);
        for (int64_t k = 0; k < K; k++) {
            uint8_t byte = bb[n * NB * 16 + k / 2];
            double v = vg_e2m1_to_f32((k & 1) ? (uint8_t)(byte >> 4) : (uint8_t)(byte & 0xF));
            /* ldexp(e2m1, scale - 127) */
            wd[o * K + k] = (float)ldexp(v, (int)sb[n * NB + k / 32] - 127);
            if (!isfinite(wd[o * K + k])) {
                r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] scales a value "
                            "beyond FP32", im->c.label, ns, (long long)n, (long long)(k / 32));
                goto out;
            }
        }
    }
out:
    free(b);
    free(s);
    return r;
}

/* ---- DeepSeek FP8 -> fp8 ---------------------------------------------------------------- */

static vg_status import_fp8(imp *im, const char *name, int64_t e, int32_t g)
{
    char sname[1024];
    if (im->a->scale && !im->a->experts)
        snprintf(sname, sizeof sname, "%s", im->a->scale);
    else
        join(sname, sizeof sname, name, "_scale_inv");
    void *q = NULL, *s = NULL;
    int64_t qs[2], any2[2] = {-1, -1};
    vg_status r = load(im, name, VG_ST_F8_E4M3, 2, any2, "E4M3 [N][K]", e, &q, qs);
    if (r != VG_OK)
        goto out;
    int64_t N = qs[0], K = qs[1];
    int64_t SR = (N + 127) / 128, SC = (K + 127) / 128;
    int64_t want_s[2] = {SR, SC};
    if (!ckpt_has(&im->c, sname)) {
        r = vg_fail(VG_ERR_NOT_FOUND, "%s: no tensor named '%s' (an F8_E4M3 weight needs its F32 "
                    "block scale; give --scale)", im->c.label, sname);
        goto out;
    }
    const vg_st_tensor *st;
    int64_t es = e;
    if ((r = peek(im, sname, &st)) != VG_OK)
        goto out;
    if (e >= 0 && st->rank == 2)
        es = -1; /* one scale for a fused weight would be unusual, but take it as stored */
    if ((r = load(im, sname, VG_ST_F32, 2, want_s,
                  "ceil(N/128) x ceil(K/128), the DeepSeek weight_scale_inv", es, &s, NULL)) !=
        VG_OK) {
        if (strstr(vg_last_error(), "expected F32")) {
            char why[1024];
            snprintf(why, sizeof why, "%s", vg_last_error());
            r = vg_fail(r, "%s; scale '%s' must be F32 [%lld][%lld]", why, sname,
                        (long long)SR, (long long)SC);
        }
        goto out;
    }
    for (int64_t i = 0; i < SR * SC; i++)
        if (!isfinite(rd_f32(s, (size_t)i))) {
            r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element %lld is not finite (a NaN "
                        "scale)", im->c.label, sname, (long long)i);
            goto out;
        }
    const uint8_t *qb = q;
    for (int64_t i = 0; i < N * K; i++)
        if ((qb[i] & 0x7F) == 0x7F) {
            r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element %lld is an E4M3 NaN", im->c.label,
                        name, (long long)i);
            goto out;
        }
    if ((r = imp_begin(im, VG_FAMILY_FP8, N, K, g, name)) != VG_OK)
        goto out;
    vg_golden_file *f = im->f;
    memcpy((uint8_t *)f->w_q + (size_t)g * f->layout.q_bytes, q, f->layout.q_bytes);
    memcpy((uint8_t *)f->w_scale + (size_t)g * f->layout.scale_bytes, s, f->layout.scale_bytes);
    float *wd = f->w_dequant + (size_t)g * (size_t)(N * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) /* weight_scale_inv multiplies, despite its name */
            wd[n * K + k] = (float)((double)vg_e4m3_to_f32(qb[n * K + k]) *
                                    (double)rd_f32(s, (size_t)((n / 128) * SC + k / 128)));
out:
    free(q);
    free(s);
    return r;
}

/* ---- BF16 / F16 / F32 ------------------------------------------------------------------ */

static vg_status import_float(imp *im, const char *name, int64_t e, int32_t g)
{
    const vg_st_tensor *t;
    vg_status r = peek(im, name, &t);
    if (r != VG_OK)
        return r;
    vg_st_dtype dt = t->dtype;
    void *raw = NULL;
    int64_t ws[2], any2[2] = {-1, -1};
    if ((r = load(im, name, dt, 2, any2, "[N][K]", e, &raw, ws)) != VG_OK)
        return r;
    int64_t N = ws[0], K = ws[1];
    vg_golden_file *f = im->f;
    if (!im->started) {
        if (N < 1 || K < 1 || N > VG_GOLDEN_MAX_DIM || K > VG_GOLDEN_MAX_DIM ||
            (uint64_t)N * (uint64_t)K * (uint64_t)im->groups > ((uint64_t)1 << 28)) {
            free(raw);
            return vg_fail(VG_ERR_LIMIT, "%s: tensor '%s' shape %dx%lldx%lld is empty or too big "
                           "for a golden case", im->c.label, name, (int)im->groups, (long long)N,
                           (long long)K);
        }
        im->wfloat = malloc((size_t)im->groups * (size_t)(N * K) * sizeof(float));
        if (!im->wfloat) {
            free(raw);
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        }
        f->n = (int32_t)N;
        f->k = (int32_t)K;
        im->float_dtype = dt;
        im->started = 1;
    } else if (N != f->n || K != f->k || dt != im->float_dtype) {
        free(raw);
        return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' (group %d) is %s %lld x %lld; the groups "
                       "before it are %s %d x %d", im->c.label, name, (int)g,
                       vg_st_dtype_name(dt), (long long)N, (long long)K,
                       vg_st_dtype_name(im->float_dtype), (int)f->n, (int)f->k);
    }
    float *w = im->wfloat + (size_t)g * (size_t)(N * K);
    for (int64_t i = 0; i < N * K; i++) {
        w[i] = dt == VG_ST_F32 ? rd_f32(raw, (size_t)i)
             : dt == VG_ST_F16 ? vg_fp16_to_f32(rd_u16(raw, (size_t)i))
                               : vg_bf16_to_f32(rd_u16(raw, (size_t)i));
        if (!isfinite(w[i])) {
            free(raw);
            return vg_fail(VG_ERR_FORMAT, "%s: weight '%s' element %lld is not finite",
                           im->c.label, name, (long long)i);
        }
    }
    free(raw);
    return VG_OK;
}

/* After every group: the float values as an fp16 weight (each must be an
 * FP16 exactly), or quantized to --family. */
static vg_status finish_float(imp *im)
{
    vg_golden_file *f = im->f;
    size_t elems = (size_t)im->groups * (size_t)f->n * (size_t)f->k;
    f->groups = im->groups;
    if (im->a->have_family) {
        vg_qweight q;
        memset(&q, 0, sizeof q);
        vg_status r = vg_quantize(im->a->family, im->wfloat, im->groups, f->n, f->k, &q);
        if (r != VG_OK)
            return r;
        f->family = im->a->family;
        f->layout = q.layout;
        f->w_q = q.q;
        f->w_scale = q.scale;
        f->w_zero = q.zero;
        f->w_tensor_scale = f->family == VG_FAMILY_NVFP4 ? q.w.tensor_scale : 1.0f;
        if (!(f->w_dequant = malloc(elems * sizeof(float))))
            return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
        vg_weight w = vg_golden_weight(f);
        return vg_dequantize(&w, f->w_dequant);
    }
    f->family = VG_FAMILY_FP16;
    vg_status r = vg_weight_layout_of(VG_FAMILY_FP16, f->n, f->k, &f->layout);
    if (r != VG_OK)
        return r;
    uint16_t *q = malloc(elems * sizeof(uint16_t));
    if (!q)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    f->w_q = q;
    for (size_t i = 0; i < elems; i++) {
        q[i] = vg_f32_to_fp16(im->wfloat[i]);
        if (vg_fp16_to_f32(q[i]) != im->wfloat[i])
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: '%s' element %zu (group %zu) is %.9g, not an "
                           "FP16 value: a %s weight imports as stored into fp16 only when every "
                           "value is one; give --family to quantize it", im->c.label,
                           im->a->weight ? im->a->weight : im->a->experts,
                           i % ((size_t)f->n * (size_t)f->k), i / ((size_t)f->n * (size_t)f->k),
                           (double)im->wfloat[i], vg_st_dtype_name(im->float_dtype));
    }
    f->w_dequant = im->wfloat; /* the stored values themselves */
    im->wfloat = NULL;
    f->w_tensor_scale = 1.0f;
    return VG_OK;
}

/* ---- detection ----------------------------------------------------------------------------- */

static vg_status parse_format(const char *name, src_format *out)
{
    for (int i = 0; i < SRC_COUNT; i++)
        if (!strcmp(name, SRC_NAMES[i])) {
            *out = (src_format)i;
            return VG_OK;
        }
    return vg_fail(VG_ERR_INVALID_ARG, "import: unknown --format '%s' (%s)", name,
                   vg_golden_import_format_names());
}

/* Chooses the source format of the weight `base` (a tensor or a module
 * prefix) from the tensors present and the folder's quantization config;
 * `*tensor` gets the name a single-tensor format reads. */
static vg_status detect(imp *im, const char *base, char *tensor, size_t tlen)
{
    char nm[600];
    snprintf(tensor, tlen, "%s", base);
    const ckpt *c = &im->c;
    const quant_cfg *q = &im->q;
    if (im->a->format) {
        vg_status r = parse_format(im->a->format, &im->fmt);
        if (r != VG_OK)
            return r;
        snprintf(im->detected, sizeof im->detected, "--format %s", im->a->format);
        if ((im->fmt == SRC_FP8 || im->fmt == SRC_FLOAT) && !ckpt_has(c, base)) {
            join(nm, sizeof nm, base, ".weight");
            if (ckpt_has(c, nm))
                snprintf(tensor, tlen, "%s", nm);
        }
        size_t bl = strlen(tensor);
        if ((im->fmt == SRC_NVFP4_MODELOPT || im->fmt == SRC_NVFP4_CT) && bl > 7 &&
            !strcmp(tensor + bl - 7, ".weight"))
            tensor[bl - 7] = '\0'; /* these formats' tensors hang off the module prefix */
        return VG_OK;
    }
    char cfg[256] = "";
    if (q->method[0])
        snprintf(cfg, sizeof cfg, "; %s quant_method %s%s%s", q->where, q->method,
                 q->checkpoint_format[0] ? ", checkpoint_format " : "", q->checkpoint_format);
    join(nm, sizeof nm, base, ".qweight");
    if (ckpt_has(c, nm)) {
        const vg_st_tensor *tq, *ts;
        char ns[600];
        join(ns, sizeof ns, base, ".scales");
        vg_status r;
        if ((r = peek(im, nm, &tq)) != VG_OK || (r = peek(im, ns, &ts)) != VG_OK)
            return r;
        int awq_shape = tq->rank == 2 && ts->rank == 2 && tq->shape[1] * 8 == ts->shape[1];
        int gptq_shape = tq->rank == 2 && ts->rank == 2 && tq->shape[1] == ts->shape[1];
        if (!strcmp(q->method, "awq") || (!q->method[0] && awq_shape && !gptq_shape)) {
            im->fmt = SRC_AWQ;
        } else if (!strcmp(q->method, "gptq") || (!q->method[0] && gptq_shape)) {
            im->fmt = !strcmp(q->checkpoint_format, "gptq_v2") ? SRC_GPTQ_V2 : SRC_GPTQ;
        } else {
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: '%s' has qweight/scales, but neither the "
                           "AWQ ([K][N/8], [K/g][N]) nor the GPTQ ([K/8][N], [K/g][N]) shapes%s "
                           "(give --format)", c->label, base, cfg);
        }
        if (im->fmt == SRC_AWQ && q->version[0] && strcmp(q->version, "gemm"))
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: %s says AWQ version '%s': only the GEMM "
                           "packing (version gemm) is read", c->label, q->where, q->version);
        if (q->bits && q->bits != 4)
            return vg_fail(VG_ERR_UNSUPPORTED, "%s: %s says bits %d: the awq family takes 4-bit "
                           "weights only", c->label, q->where, q->bits);
        snprintf(im->detected, sizeof im->detected, "tensors %s.qweight/.qzeros/.scales (%s "
                 "shapes)%s%s", base, im->fmt == SRC_AWQ ? "AWQ" : "GPTQ", cfg,
                 im->fmt == SRC_GPTQ && !q->checkpoint_format[0]
                     ? "; no checkpoint_format: gptq (v1) assumed" : "");
        return VG_OK;
    }
    join(nm, sizeof nm, base, ".weight_packed");
    if (ckpt_has(c, nm)) {
        im->fmt = SRC_NVFP4_CT;
        snprintf(im->detected, sizeof im->detected, "tensors %s.weight_packed/.weight_scale/"
                 ".weight_global_scale%s", base, cfg);
        return VG_OK;
    }
    char nb1[600], nb2[600];
    join(nb1, sizeof nb1, base, "_blocks");
    join(nb2, sizeof nb2, base, ".blocks");
    if (ckpt_has(c, nb1) || ckpt_has(c, nb2)) {
        im->fmt = SRC_MXFP4;
        snprintf(im->detected, sizeof im->detected, "tensors %s%s/_scales%s", base,
                 ckpt_has(c, nb1) ? "_blocks" : ".blocks", cfg);
        return VG_OK;
    }
    if (!ckpt_has(c, base)) {
        join(nm, sizeof nm, base, ".weight");
        if (ckpt_has(c, nm))
            snprintf(tensor, tlen, "%s", nm);
    }
    const vg_st_tensor *t;
    vg_status r = peek(im, tensor, &t);
    if (r != VG_OK)
        return r;
    char ns2[600];
    join(ns2, sizeof ns2, tensor, "_scale_2");
    if (t->dtype == VG_ST_U8 && ckpt_has(c, ns2)) {
        im->fmt = SRC_NVFP4_MODELOPT;
        size_t bl = strlen(tensor);
        if (bl > 7 && !strcmp(tensor + bl - 7, ".weight"))
            tensor[bl - 7] = '\0';
        snprintf(im->detected, sizeof im->detected, "tensors %s (U8) with _scale/_scale_2%s",
                 base, cfg);
        return VG_OK;
    }
    if (t->dtype == VG_ST_F8_E4M3) {
        im->fmt = SRC_FP8;
        snprintf(im->detected, sizeof im->detected, "tensor %s is F8_E4M3", tensor);
        return VG_OK;
    }
    if (t->dtype == VG_ST_F32 || t->dtype == VG_ST_F16 || t->dtype == VG_ST_BF16) {
        im->fmt = SRC_FLOAT;
        snprintf(im->detected, sizeof im->detected, "tensor %s is %s%s", tensor,
                 vg_st_dtype_name(t->dtype),
                 im->a->have_family ? " (quantized to --family)" : "");
        return VG_OK;
    }
    return vg_fail(VG_ERR_UNSUPPORTED, "%s: weight '%s' has dtype %s and no tensors of a known "
                   "quantized format (F8_E4M3, BF16, F16 or F32 expected; or qweight/qzeros/"
                   "scales, weight_packed, weight + weight_scale_2, _blocks/_scales)",
                   c->label, tensor, vg_st_dtype_name(t->dtype));
}

/* ---- provenance ----------------------------------------------------------------------------- */

static vg_status file_sha256(const char *path, char hex[65])
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return vg_fail(VG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    vg_sha256_ctx c;
    vg_sha256_init(&c);
    static uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        vg_sha256_update(&c, buf, n);
    int bad = ferror(fp);
    fclose(fp);
    if (bad)
        return vg_fail(VG_ERR_IO, "%s: read error", path);
    uint8_t d[32];
    vg_sha256_final(&c, d);
    vg_sha256_to_hex(d, hex);
    return VG_OK;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static vg_status build_provenance(imp *im, const char *rows_note)
{
    enum { CAP = 60000 }; /* under HDF5's 64 KiB attribute limit */
    char *p = malloc(CAP);
    if (!p)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    size_t used = (size_t)snprintf(p, CAP, "format=%s; family=%s; detected: %s; tensors=%s%s",
                                   SRC_NAMES[im->fmt], vg_family_name(im->f->family),
                                   im->detected, im->tensors, rows_note);
    int count = im->c.weight_map ? im->c.nshards : 1;
    for (int i = 0; i < count && used + 1 < CAP; i++) {
        const char *path = im->c.weight_map ? im->c.shards[i].st->path : im->c.single->path;
        char hex[65];
        vg_status r = file_sha256(path, hex);
        if (r != VG_OK) {
            free(p);
            return r;
        }
        used += (size_t)snprintf(p + used, CAP - used, "%s%s sha256=%s", i ? ", " : "; files=",
                                 base_name(path), hex);
    }
    if (used >= CAP) /* snprintf stopped at the end; say so rather than cut a hash silently */
        memcpy(p + CAP - 5, " ...", 5);
    im->f->provenance = p;
    return VG_OK;
}

/* ---- the case ------------------------------------------------------------------------------- */

static vg_status make_case(const vg_golden_import_args *a, vg_golden_file *f, const char *label,
                           const char *weight)
{
    f->cases = calloc(1, sizeof *f->cases);
    if (!f->cases)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    f->ncases = 1;
    vg_golden_case *c = &f->cases[0];
    if (f->path == VG_PATH_MOE)
        snprintf(c->name, sizeof c->name, "r0");
    else
        snprintf(c->name, sizeof c->name, f->path == VG_PATH_DENSE ? "m%03d" : "t%02d",
                 (int)a->tokens);
    c->y_dtype = VG_DTYPE_F32;
    c->x_seed = a->seed;
    c->tokens = malloc((size_t)f->groups * sizeof(int32_t));
    if (f->path != VG_PATH_DENSE)
        c->offsets = malloc(((size_t)f->groups + 1) * sizeof(int32_t));
    if (!c->tokens || (f->path != VG_PATH_DENSE && !c->offsets))
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    int64_t m = 0;
    for (int32_t g = 0; g < f->groups; g++) {
        c->tokens[g] = a->routing ? a->routing[g] : a->tokens;
        if (c->offsets)
            c->offsets[g] = (int32_t)m;
        m += c->tokens[g];
    }
    if (c->offsets)
        c->offsets[f->groups] = (int32_t)m;
    if (m < 1 || m > VG_GOLDEN_MAX_DIM)
        return vg_fail(VG_ERR_INVALID_ARG, "import: the routing gives %lld tokens in all "
                       "(1 to %d)", (long long)m, VG_GOLDEN_MAX_DIM);
    c->m = (int32_t)m;
    c->x = malloc((size_t)c->m * (size_t)f->k * sizeof(uint16_t));
    if (!c->x)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    vg_status r = vg_golden_synth_x(a->seed, c->name, c->m, f->k, c->x);
    if (r == VG_OK)
        r = vg_golden_check_bounds(label, f);
    if (r != VG_OK)
        return r;
    if ((r = vg_golden_compute_reference(f, c)) != VG_OK) {
        /* an all-zero or overflowing reference: name the checkpoint */
        char why[600];
        snprintf(why, sizeof why, "%s", vg_last_error());
        return vg_fail(r, "%s: weight '%s': %s", label, weight, why);
    }
    return VG_OK;
}

/* The name of expert e from a pattern with "{e}". */
static vg_status expert_name(const char *pattern, int64_t e, char *out, size_t len)
{
    const char *at = strstr(pattern, "{e}");
    if (!at)
        return vg_fail(VG_ERR_INVALID_ARG, "import: --experts '%s' has no {e}", pattern);
    int n = snprintf(out, len, "%.*s%lld%s", (int)(at - pattern), pattern, (long long)e, at + 3);
    if (n < 0 || (size_t)n >= len)
        return vg_fail(VG_ERR_INVALID_ARG, "import: --experts name too long");
    return VG_OK;
}

vg_status vg_golden_import(const vg_golden_import_args *a, vg_golden_file *out)
{
    if (!a || !out || (!a->safetensors == !a->checkpoint) || (!a->weight == !a->experts))
        return vg_fail(VG_ERR_INVALID_ARG, "import: give --safetensors FILE or --checkpoint DIR, "
                       "and --weight NAME or --experts PATTERN");
    memset(out, 0, sizeof *out);
    if (strlen(a->weight ? a->weight : a->experts) > 400)
        return vg_fail(VG_ERR_INVALID_ARG, "import: a weight name of more than 400 bytes");
    if (!vg_path_name(a->path) || a->tokens < 0 || a->tokens > VG_GOLDEN_MAX_DIM ||
        (!a->routing && a->tokens < 1))
        return vg_fail(VG_ERR_INVALID_ARG, "import: bad path or token count");
    if (a->routing && a->path != VG_PATH_MOE)
        return vg_fail(VG_ERR_INVALID_ARG, "import: a routing is for --path moe");
    row_pick rows = ROWS_ALL;
    if (a->rows && !strcmp(a->rows, "gate"))
        rows = ROWS_GATE;
    else if (a->rows && !strcmp(a->rows, "up"))
        rows = ROWS_UP;
    else if (a->rows && strcmp(a->rows, "all"))
        return vg_fail(VG_ERR_INVALID_ARG, "import: --rows '%s' (all, gate or up)", a->rows);
    imp *im = calloc(1, sizeof *im);
    if (!im)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    im->a = a;
    im->f = out;
    vg_golden_file *f = out;
    vg_status r = ckpt_open(a, &im->c);
    if (r != VG_OK)
        goto fail;
    read_quant_cfg(&im->c, &im->q);

    /* the groups: per-expert names, or the experts of a fused 3-D tensor */
    char first[600], tensor[600];
    int64_t e0 = 0, e1 = 1;
    int fused = 0;
    if (a->experts) {
        if (a->have_expert_range) {
            e0 = a->expert_begin;
            e1 = a->expert_end;
        } else { /* every expert the checkpoint has, counted by its first tensor */
            e0 = 0;
            e1 = 0;
        }
        if ((r = expert_name(a->experts, e0, first, sizeof first)) != VG_OK)
            goto fail;
    } else {
        snprintf(first, sizeof first, "%s", a->weight);
    }
    if ((r = detect(im, first, tensor, sizeof tensor)) != VG_OK)
        goto fail;
    if (a->experts && !a->have_expert_range) {
        char nm[600], probe[700];
        for (e1 = 0; e1 < VG_GOLDEN_MAX_GROUPS + 1; e1++) {
            if (expert_name(a->experts, e1, nm, sizeof nm) != VG_OK)
                break;
            const char *suffix = im->fmt == SRC_AWQ || im->fmt == SRC_GPTQ ||
                                         im->fmt == SRC_GPTQ_V2 ? ".qweight"
                               : im->fmt == SRC_NVFP4_CT ? ".weight_packed"
                               : im->fmt == SRC_MXFP4 ? "_blocks"
                               : im->fmt == SRC_NVFP4_MODELOPT || strcmp(tensor, first)
                                   ? ".weight" : "";
            snprintf(probe, sizeof probe, "%s%s", nm, suffix);
            if (!ckpt_has(&im->c, probe) &&
                !(im->fmt == SRC_MXFP4 && (snprintf(probe, sizeof probe, "%s.blocks", nm),
                                           ckpt_has(&im->c, probe))))
                break;
        }
    }
    if (!a->experts) {
        /* a fused [E][...] tensor: its first dimension is the experts */
        const vg_st_tensor *t = NULL;
        char lead[700];
        if (im->fmt == SRC_MXFP4) {
            join(lead, sizeof lead, tensor, "_blocks");
            if (!ckpt_has(&im->c, lead))
                join(lead, sizeof lead, tensor, ".blocks");
        } else {
            snprintf(lead, sizeof lead, "%s", tensor);
        }
        if ((im->fmt == SRC_FP8 || im->fmt == SRC_FLOAT || im->fmt == SRC_MXFP4) &&
            (r = peek(im, lead, &t)) != VG_OK)
            goto fail;
        if (t && t->rank == (im->fmt == SRC_MXFP4 ? 4 : 3)) {
            fused = 1;
            e0 = a->have_expert_range ? a->expert_begin : 0;
            e1 = a->have_expert_range ? a->expert_end : t->shape[0];
            if (e1 > t->shape[0]) {
                r = vg_fail(VG_ERR_INVALID_ARG, "%s: tensor '%s' has %lld experts; "
                            "--experts-range asks up to %lld", im->c.label, lead,
                            (long long)t->shape[0], (long long)e1);
                goto fail;
            }
        } else if (a->have_expert_range) {
            r = vg_fail(VG_ERR_INVALID_ARG, "import: --experts-range needs --experts PATTERN or "
                        "a fused [E][...] weight");
            goto fail;
        } else if (t && im->fmt != SRC_MXFP4 && t->rank != 2) {
            r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s' has rank %d; a weight is [N][K] or "
                        "[G][N][K]", im->c.label, tensor, t->rank);
            goto fail;
        }
    }
    if (e1 <= e0 || e1 - e0 > VG_GOLDEN_MAX_GROUPS) {
        r = vg_fail(VG_ERR_INVALID_ARG, "%s: experts %lld:%lld: no expert found, or more than %d",
                    im->c.label, (long long)e0, (long long)e1, VG_GOLDEN_MAX_GROUPS);
        goto fail;
    }
    im->groups = (int32_t)(e1 - e0);
    if (a->have_family && im->fmt != SRC_FLOAT &&
        a->family != (im->fmt == SRC_FP8 ? VG_FAMILY_FP8
                      : im->fmt == SRC_MXFP4 ? VG_FAMILY_MXFP4
                      : im->fmt == SRC_NVFP4_CT || im->fmt == SRC_NVFP4_MODELOPT
                          ? VG_FAMILY_NVFP4
                          : VG_FAMILY_AWQ)) {
        r = vg_fail(VG_ERR_UNSUPPORTED, "%s: weight '%s' is %s: it imports as stored, not as %s",
                    im->c.label, tensor, SRC_NAMES[im->fmt], vg_family_name(a->family));
        goto fail;
    }
    if (rows != ROWS_ALL && im->fmt != SRC_MXFP4) {
        r = vg_fail(VG_ERR_INVALID_ARG, "import: --rows is for fused gate_up weights "
                    "(mxfp4-gptoss)");
        goto fail;
    }
    if (a->routing && a->routing_count != im->groups) {
        r = vg_fail(VG_ERR_INVALID_ARG, "import: --routing has %d counts for %d experts",
                    (int)a->routing_count, (int)im->groups);
        goto fail;
    }
    f->path = a->path;
    if (f->path == VG_PATH_DENSE && im->groups != 1) {
        r = vg_fail(VG_ERR_INVALID_ARG, "%s: weight '%s' has %d groups: use --path grouped, "
                    "loop or moe", im->c.label, tensor, (int)im->groups);
        goto fail;
    }
    for (int32_t g = 0; g < im->groups && r == VG_OK; g++) {
        int64_t e = e0 + g;
        char name[600];
        if (a->experts) {
            if ((r = expert_name(a->experts, e, name, sizeof name)) != VG_OK)
                break;
            if (strcmp(tensor, first) && (im->fmt == SRC_FP8 || im->fmt == SRC_FLOAT ||
                                          im->fmt == SRC_NVFP4_MODELOPT)) {
                /* the first expert resolved "<name>.weight" */
                if (im->fmt != SRC_NVFP4_MODELOPT)
                    strncat(name, ".weight", sizeof name - strlen(name) - 1);
            }
        } else {
            snprintf(name, sizeof name, "%s", tensor);
        }
        int64_t fe = fused ? e : -1;
        switch (im->fmt) {
        case SRC_FP8: r = import_fp8(im, name, fe, g); break;
        case SRC_FLOAT: r = import_float(im, name, fe, g); break;
        case SRC_AWQ:
        case SRC_GPTQ:
        case SRC_GPTQ_V2: r = import_int4(im, name, g); break;
        case SRC_NVFP4_MODELOPT:
        case SRC_NVFP4_CT: r = import_nvfp4(im, name, g); break;
        case SRC_MXFP4: r = import_mxfp4(im, name, fe, g, rows); break;
        case SRC_COUNT: break;
        }
    }
    if (r == VG_OK && im->fmt == SRC_FLOAT)
        r = finish_float(im);
    if (r != VG_OK)
        goto fail;
    f->groups = im->groups;
    /* the reader's bounds, before the reference is computed and written */
    if ((r = vg_golden_check_bounds(im->c.label, f)) != VG_OK)
        goto fail;
    f->seed = a->seed;
    f->weights_stored = 1;
    snprintf(f->generator, sizeof f->generator, "%s", VG_GOLDEN_GENERATOR);
    snprintf(f->source, sizeof f->source, "safetensors:%s:%s", base_name(im->c.label),
             a->experts ? a->experts : a->weight);
    char rows_note[160] = "";
    if (im->fmt == SRC_MXFP4 || fused || a->experts)
        snprintf(rows_note, sizeof rows_note, "; experts=%lld:%lld%s", (long long)e0,
                 (long long)e1,
                 im->fmt != SRC_MXFP4 ? ""
                 : rows == ROWS_ALL ? "; rows=all (gate_up weights interleave: even rows gate, "
                                      "odd rows up)"
                 : rows == ROWS_GATE ? "; rows=gate (the even rows)" : "; rows=up (the odd rows)");
    if ((r = build_provenance(im, rows_note)) != VG_OK ||
        (r = make_case(a, f, im->c.label, a->experts ? a->experts : a->weight)) != VG_OK)
        goto fail;
    ckpt_close(&im->c);
    free(im->wfloat);
    free(im);
    return VG_OK;
fail:
    ckpt_close(&im->c);
    free(im->wfloat);
    free(im);
    vg_golden_free(out);
    return r;
}
