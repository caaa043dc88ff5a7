/*
 * golden import: the tensor plumbing every format reader shares -- reading
 * one source tensor with its dtype and shape checked (one expert of a fused
 * tensor when asked), noting it for the provenance, and starting the golden
 * weight (family, shape, buffers for all groups) on the first group.
 * Separate from the readers so that each of them holds only its format's
 * rule.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_import.h"

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
vg_status golden_import_load(imp *im, const char *name, vg_st_dtype dt, int rank,
                             const int64_t *want, const char *what, int64_t e, void **out,
                             int64_t *shape_out)
{
    *out = NULL;
    const vg_safetensors *st;
    const vg_st_tensor *t;
    vg_status r = golden_import_ckpt_find(&im->c, name, &st, &t);
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
vg_status golden_import_peek(imp *im, const char *name, const vg_st_tensor **t)
{
    const vg_safetensors *st;
    return golden_import_ckpt_find(&im->c, name, &st, t);
}

/* out = a followed by b; an empty string when it would not fit (names are
 * bounded by the caller, so that never names a real tensor). */
void golden_import_join(char *out, size_t len, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la + lb + 1 > len) {
        out[0] = '\0';
        return;
    }
    memcpy(out, a, la);
    memcpy(out + la, b, lb + 1);
}

/* Sets the weight's family and shape on the first group and allocates all
 * groups; later groups must have the same shape. */
vg_status golden_import_begin(imp *im, vg_family family, int64_t n, int64_t k, int32_t g,
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
