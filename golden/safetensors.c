/* The safetensors reader; safetensors.h describes the checks. */
#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"

static const struct {
    const char *name;
    size_t size;
} DTYPES[VG_ST_DTYPE_COUNT] = {
    [VG_ST_BOOL] = {"BOOL", 1},       [VG_ST_U8] = {"U8", 1},     [VG_ST_I8] = {"I8", 1},
    [VG_ST_F8_E4M3] = {"F8_E4M3", 1}, [VG_ST_F8_E5M2] = {"F8_E5M2", 1},
    [VG_ST_I16] = {"I16", 2},         [VG_ST_U16] = {"U16", 2},   [VG_ST_F16] = {"F16", 2},
    [VG_ST_BF16] = {"BF16", 2},       [VG_ST_I32] = {"I32", 4},   [VG_ST_U32] = {"U32", 4},
    [VG_ST_F32] = {"F32", 4},         [VG_ST_I64] = {"I64", 8},   [VG_ST_U64] = {"U64", 8},
    [VG_ST_F64] = {"F64", 8},
};

const char *vg_st_dtype_name(vg_st_dtype t)
{
    return (unsigned)t < VG_ST_DTYPE_COUNT ? DTYPES[t].name : NULL;
}

size_t vg_st_dtype_size(vg_st_dtype t)
{
    return (unsigned)t < VG_ST_DTYPE_COUNT ? DTYPES[t].size : 0;
}

vg_status vg_st_close(vg_safetensors *st)
{
    if (!st)
        return VG_OK;
    for (size_t i = 0; i < st->count; i++)
        free(st->tensors[i].name);
    free(st->tensors);
    free(st->path);
    free(st);
    return VG_OK;
}

/* A JSON number that is a non-negative integer below 2^53 (exact in a
 * double, which is how cJSON keeps numbers). */
static int json_uint(const cJSON *v, uint64_t *out)
{
    if (!cJSON_IsNumber(v))
        return 0;
    double d = v->valuedouble;
    if (!(d >= 0.0 && d < 9007199254740992.0) || d != (double)(uint64_t)d)
        return 0;
    *out = (uint64_t)d;
    return 1;
}

static int cmp_begin(const void *a, const void *b)
{
    const vg_st_tensor *x = *(vg_st_tensor *const *)a, *y = *(vg_st_tensor *const *)b;
    return x->begin < y->begin ? -1 : x->begin > y->begin ? 1 : (x->end > y->end) - (x->end < y->end);
}

/* Validates header JSON of hlen bytes for a data section of data_len
 * bytes.  `label` names the file in messages. */
static vg_status parse_header(const char *label, const char *json, size_t hlen,
                              uint64_t data_len, vg_safetensors *st)
{
    cJSON *root = cJSON_ParseWithLength(json, hlen);
    if (!root)
        return vg_fail_one_line(VG_ERR_FORMAT, "%s: header is not valid JSON (near byte %ld)",
                                label,
                                cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - json) : -1L);
    vg_status s = VG_OK;
    if (!cJSON_IsObject(root)) {
        s = vg_fail_one_line(VG_ERR_FORMAT, "%s: header is not a JSON object", label);
        goto out;
    }
    size_t n = 0;
    for (cJSON *e = root->child; e; e = e->next)
        n += strcmp(e->string ? e->string : "", "__metadata__") != 0;
    st->tensors = calloc(n ? n : 1, sizeof *st->tensors);
    if (!st->tensors) {
        s = vg_fail_one_line(VG_ERR_NO_MEMORY, "%s: out of memory", label);
        goto out;
    }
    for (cJSON *e = root->child; e; e = e->next) {
        const char *name = e->string ? e->string : "";
        if (!strcmp(name, "__metadata__")) {
            if (!cJSON_IsObject(e)) {
                s = vg_fail_one_line(VG_ERR_FORMAT, "%s: __metadata__ is not an object", label);
                goto out;
            }
            for (cJSON *m = e->child; m; m = m->next)
                if (!cJSON_IsString(m)) {
                    s = vg_fail_one_line(VG_ERR_FORMAT, "%s: __metadata__.%s is not a string",
                                         label, m->string ? m->string : "?");
                    goto out;
                }
            continue;
        }
        for (size_t i = 0; i < st->count; i++)
            if (!strcmp(st->tensors[i].name, name)) {
                s = vg_fail_one_line(VG_ERR_FORMAT, "%s: tensor '%s' is listed twice", label, name);
                goto out;
            }
        vg_st_tensor *t = &st->tensors[st->count];
        if (!cJSON_IsObject(e)) {
            s = vg_fail_one_line(VG_ERR_FORMAT, "%s: tensor '%s': entry is not an object", label,
                                 name);
            goto out;
        }
        const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(e, "shape");
        const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
        if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off)) {
            s = vg_fail_one_line(VG_ERR_FORMAT,
                        "%s: tensor '%s': needs \"dtype\" (string), \"shape\" and "
                        "\"data_offsets\" (arrays)", label, name);
            goto out;
        }
        int found = -1;
        for (int d = 0; d < VG_ST_DTYPE_COUNT; d++)
            if (!strcmp(dt->valuestring, DTYPES[d].name))
                found = d;
        if (found < 0) {
            s = vg_fail_one_line(VG_ERR_FORMAT, "%s: tensor '%s': unknown dtype '%.32s'", label,
                                 name, dt->valuestring);
            goto out;
        }
        t->dtype = (vg_st_dtype)found;
        int rank = cJSON_GetArraySize(sh);
        if (rank > VG_ST_MAX_RANK) {
            s = vg_fail_one_line(VG_ERR_FORMAT, "%s: tensor '%s': rank %d exceeds %d", label, name,
                                 rank, VG_ST_MAX_RANK);
            goto out;
        }
        t->rank = rank;
        /* element count, overflow-checked against the data section */
        uint64_t count = 1;
        int i = 0;
        for (const cJSON *d = sh->child; d; d = d->next, i++) {
            uint64_t v;
            if (!json_uint(d, &v)) {
                s = vg_fail_one_line(VG_ERR_FORMAT,
                                     "%s: tensor '%s': shape[%d] is not a non-negative "
                                     "integer",
                                     label, name, i);
                goto out;
            }
            t->shape[i] = (int64_t)v;
            if (v && count > UINT64_MAX / v) {
                s = vg_fail_one_line(VG_ERR_FORMAT, "%s: tensor '%s': shape product overflows",
                                     label, name);
                goto out;
            }
            count *= v;
        }
        uint64_t b, en;
        if (cJSON_GetArraySize(off) != 2 || !json_uint(off->child, &b) ||
            !json_uint(off->child->next, &en)) {
            s = vg_fail_one_line(VG_ERR_FORMAT,
                                 "%s: tensor '%s': data_offsets must be two non-negative "
                                 "integers",
                                 label, name);
            goto out;
        }
        if (b > en || en > data_len) {
            s = vg_fail_one_line(VG_ERR_FORMAT,
                                 "%s: tensor '%s': data_offsets [%llu, %llu] outside the "
                                 "data section of %llu bytes",
                                 label, name, (unsigned long long)b, (unsigned long long)en,
                                 (unsigned long long)data_len);
            goto out;
        }
        size_t es = DTYPES[found].size;
        if (count > UINT64_MAX / es || count * es != en - b) {
            s = vg_fail_one_line(VG_ERR_FORMAT,
                                 "%s: tensor '%s': shape holds %llu elements of %zu bytes "
                                 "but data_offsets span %llu bytes",
                                 label, name, (unsigned long long)count, es,
                                 (unsigned long long)(en - b));
            goto out;
        }
        t->begin = b;
        t->end = en;
        t->name = strdup(name);
        if (!t->name) {
            s = vg_fail_one_line(VG_ERR_NO_MEMORY, "%s: out of memory", label);
            goto out;
        }
        st->count++;
    }
    /* no two tensors may share bytes (empty tensors share nothing) */
    if (st->count > 1) {
        vg_st_tensor **order = malloc(st->count * sizeof *order);
        if (!order) {
            s = vg_fail_one_line(VG_ERR_NO_MEMORY, "%s: out of memory", label);
            goto out;
        }
        for (size_t i = 0; i < st->count; i++)
            order[i] = &st->tensors[i];
        qsort(order, st->count, sizeof *order, cmp_begin);
        uint64_t reach = 0;
        const char *reach_name = NULL;
        for (size_t i = 0; i < st->count && s == VG_OK; i++) {
            if (order[i]->begin == order[i]->end)
                continue;
            if (reach_name && order[i]->begin < reach)
                s = vg_fail_one_line(VG_ERR_FORMAT, "%s: tensors '%s' and '%s' overlap", label,
                                     reach_name, order[i]->name);
            if (order[i]->end > reach) {
                reach = order[i]->end;
                reach_name = order[i]->name;
            }
        }
        free(order);
    }
out:
    cJSON_Delete(root);
    return s;
}

/* Header length from the first 8 bytes; checks it against `size`. */
static vg_status header_len(const char *label, const uint8_t *b8, uint64_t size, uint64_t *out)
{
    if (size < 8)
        return vg_fail_one_line(VG_ERR_FORMAT, "%s: %llu bytes, too short for a safetensors header",
                       label, (unsigned long long)size);
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = (n << 8) | b8[i];
    if (n < 2 || n > VG_ST_MAX_HEADER)
        return vg_fail_one_line(VG_ERR_FORMAT, "%s: header length %llu is not sane (2 to %u bytes)",
                                label, (unsigned long long)n, VG_ST_MAX_HEADER);
    if (n > size - 8)
        return vg_fail_one_line(VG_ERR_FORMAT,
                                "%s: header length %llu runs past the end of the %llu-byte "
                                "file",
                                label, (unsigned long long)n, (unsigned long long)size);
    *out = n;
    return VG_OK;
}

vg_status vg_st_parse(const void *bytes, size_t size, vg_safetensors **out)
{
    if (!bytes || !out)
        return vg_fail_one_line(VG_ERR_INVALID_ARG, "safetensors: NULL argument");
    *out = NULL;
    uint64_t n;
    vg_status s = header_len("safetensors", bytes, size, &n);
    if (s != VG_OK)
        return s;
    vg_safetensors *st = calloc(1, sizeof *st);
    if (!st)
        return vg_fail_one_line(VG_ERR_NO_MEMORY, "safetensors: out of memory");
    st->header_len = n;
    st->data_start = 8 + n;
    st->data_len = size - 8 - n;
    st->mem = bytes;
    s = parse_header("safetensors", (const char *)bytes + 8, (size_t)n, st->data_len, st);
    if (s != VG_OK) {
        vg_st_close(st);
        return s;
    }
    *out = st;
    return VG_OK;
}

vg_status vg_st_open(const char *path, vg_safetensors **out)
{
    if (!path || !out)
        return vg_fail_one_line(VG_ERR_INVALID_ARG, "safetensors: NULL argument");
    *out = NULL;
    int fd;
    vg_status os = vg_open_regular_file(path, path, &fd);
    if (os != VG_OK)
        return vg_fail_one_line(os, "%s", vg_last_error());
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        close(fd);
        return vg_fail_one_line(VG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        fclose(fp);
        return vg_fail_one_line(VG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    uint64_t size = (uint64_t)sb.st_size, n;
    uint8_t b8[8] = {0};
    size_t got = fread(b8, 1, 8, fp);
    vg_status s = header_len(path, b8, got < 8 ? got : size, &n);
    if (s != VG_OK) {
        fclose(fp);
        return s;
    }
    char *json = malloc((size_t)n);
    vg_safetensors *st = calloc(1, sizeof *st);
    if (!json || !st) {
        free(json);
        free(st);
        fclose(fp);
        return vg_fail_one_line(VG_ERR_NO_MEMORY, "%s: out of memory for a %llu-byte header", path,
                       (unsigned long long)n);
    }
    if (fread(json, 1, (size_t)n, fp) != (size_t)n) {
        free(json);
        free(st);
        fclose(fp);
        return vg_fail_one_line(VG_ERR_IO, "%s: short read of the header", path);
    }
    fclose(fp);
    st->header_len = n;
    st->data_start = 8 + n;
    st->data_len = size - 8 - n;
    st->path = strdup(path);
    s = st->path ? parse_header(path, json, (size_t)n, st->data_len, st)
                 : vg_fail_one_line(VG_ERR_NO_MEMORY, "%s: out of memory", path);
    free(json);
    if (s != VG_OK) {
        vg_st_close(st);
        return s;
    }
    *out = st;
    return VG_OK;
}

vg_status vg_st_find(const vg_safetensors *st, const char *name, const vg_st_tensor **out)
{
    if (!st || !name || !out)
        return vg_fail_one_line(VG_ERR_INVALID_ARG, "safetensors: NULL argument");
    for (size_t i = 0; i < st->count; i++)
        if (!strcmp(st->tensors[i].name, name)) {
            *out = &st->tensors[i];
            return VG_OK;
        }
    return vg_fail_one_line(VG_ERR_NOT_FOUND, "%s: no tensor named '%s' (%zu tensors in the file)",
                   st->path ? st->path : "safetensors", name, st->count);
}

vg_status vg_st_read(const vg_safetensors *st, const vg_st_tensor *t, void *dst, size_t bytes)
{
    if (!st || !t || (!dst && bytes))
        return vg_fail_one_line(VG_ERR_INVALID_ARG, "safetensors: NULL argument");
    if (bytes != t->end - t->begin)
        return vg_fail_one_line(VG_ERR_INVALID_ARG,
                                "safetensors: tensor '%s' has %llu bytes, not %zu", t->name,
                                (unsigned long long)(t->end - t->begin), bytes);
    return vg_st_read_at(st, t, 0, dst, bytes);
}

vg_status vg_st_read_at(const vg_safetensors *st, const vg_st_tensor *t, uint64_t offset,
                        void *dst, size_t bytes)
{
    if (!st || !t || (!dst && bytes))
        return vg_fail_one_line(VG_ERR_INVALID_ARG, "safetensors: NULL argument");
    if (offset > t->end - t->begin || bytes > t->end - t->begin - offset)
        return vg_fail_one_line(VG_ERR_INVALID_ARG,
                                "safetensors: tensor '%s' has %llu bytes; %zu bytes "
                                "at %llu lie outside it",
                                t->name, (unsigned long long)(t->end - t->begin), bytes,
                                (unsigned long long)offset);
    if (st->mem) {
        memcpy(dst, st->mem + st->data_start + t->begin + offset, bytes);
        return VG_OK;
    }
    FILE *fp = fopen(st->path, "rb");
    if (!fp)
        return vg_fail_one_line(VG_ERR_IO, "%s: cannot open: %s", st->path, strerror(errno));
    int ok = fseeko(fp, (off_t)(st->data_start + t->begin + offset), SEEK_SET) == 0 &&
             fread(dst, 1, bytes, fp) == bytes;
    fclose(fp);
    if (!ok)
        return vg_fail_one_line(VG_ERR_IO, "%s: short read of tensor '%s' (file changed?)",
                                st->path, t->name);
    return VG_OK;
}
