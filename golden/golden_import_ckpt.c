/*
 * golden import: the checkpoint -- one safetensors file, or a model folder
 * with model.safetensors.index.json whose shards open on first use -- and
 * the quantization settings of the folder's config.json /
 * quantize_config.json / hf_quant_config.json.  Separate from the format
 * readers: every reader resolves its tensors here, by name, and none of
 * them knows whether a folder or a file is behind it.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "golden_import.h"

#define MAX_SHARDS 4096
#define MAX_JSON_BYTES (64u << 20)

void golden_import_ckpt_close(ckpt *c)
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
 * when `optional`).  A file that exists but does not parse is an error, and
 * so is anything but a regular file (vg_read_whole_file: a FIFO would make
 * a plain open wait for a writer). */
static vg_status read_json(const char *dir, const char *name, int optional, cJSON **out)
{
    *out = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    if (optional && lstat(path, &sb) != 0 && errno == ENOENT)
        return VG_OK;
    char *buf = NULL;
    size_t len = 0;
    vg_status r = vg_read_whole_file(path, path, MAX_JSON_BYTES, &buf, &len);
    if (r != VG_OK)
        return r;
    *out = cJSON_ParseWithLength(buf, len);
    free(buf);
    if (!*out || !cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return vg_fail(VG_ERR_FORMAT, "%s: not a JSON object", path);
    }
    return VG_OK;
}

vg_status golden_import_ckpt_open(const vg_golden_import_args *a, ckpt *c)
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
int golden_import_ckpt_has(const ckpt *c, const char *name)
{
    if (c->weight_map)
        return cJSON_GetObjectItemCaseSensitive(c->weight_map, name) != NULL;
    for (size_t i = 0; i < c->single->count; i++)
        if (!strcmp(c->single->tensors[i].name, name))
            return 1;
    return 0;
}

/* The tensor `name`, opening its shard on first use. */
vg_status golden_import_ckpt_find(ckpt *c, const char *name, const vg_safetensors **st,
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

static void lower_copy(char *dst, size_t len, const char *src)
{
    size_t i = 0;
    for (; src[i] && i + 1 < len; i++)
        dst[i] = (char)(src[i] >= 'A' && src[i] <= 'Z' ? src[i] + 32 : src[i]);
    dst[i] = '\0';
}

void golden_import_read_quant_cfg(const ckpt *c, quant_cfg *q)
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
