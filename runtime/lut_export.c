/*
 * The LUT's writer: the dispatch cache (all of it, or the partitions asked
 * for) as a LUT file (lut_format.h), sorted so the same cache always gives
 * the same bytes.
 *
 * Export writes <path>.tmp.<pid>, fsyncs it, renames it over <path> and
 * fsyncs the folder (vg_write_file_atomic): a crash at any point leaves
 * either the old file or the new one, never half of one.
 *
 * Separate from the reader (lut_import.c): they share only the format.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "internal.h"
#include "lut_format.h"

void (*vg_lut_before_rename_hook)(const char *tmp_path) = NULL;

/* ---- export ---------------------------------------------------------------- */

typedef struct lut_row {
    uint64_t policy;
    int32_t family, path, n, k, groups, rows;
    const char *plan;
    double us;
    uint64_t build, planset;
} lut_row;

typedef struct row_list {
    lut_row *rows;
    size_t count, cap;
    int oom;
    const uint64_t *want;     /* NULL = every partition visited */
    size_t nwant;
} row_list;

static void collect(const vg_series *s, const vg_cache_item *it, void *user)
{
    row_list *l = user;
    if (l->want) {
        size_t i = 0;
        while (i < l->nwant && l->want[i] != s->policy)
            i++;
        if (i == l->nwant)
            return;
    }
    if (l->count == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        lut_row *grown = realloc(l->rows, cap * sizeof *grown);
        if (!grown) {
            l->oom = 1;
            return;
        }
        l->rows = grown;
        l->cap = cap;
    }
    l->rows[l->count++] = (lut_row){.policy = s->policy, .family = s->family, .path = s->path,
                                    .n = s->n, .k = s->k, .groups = s->groups,
                                    .rows = it->rows, .plan = it->plan->id, .us = it->time_us,
                                    .build = it->build, .planset = it->planset};
}

static int cmp_row(const void *pa, const void *pb)
{
    const lut_row *a = pa, *b = pb;
    if (a->policy != b->policy)
        return a->policy < b->policy ? -1 : 1;
    const int32_t ka[] = {a->family, a->path, a->n, a->k, a->groups, a->rows};
    const int32_t kb[] = {b->family, b->path, b->n, b->k, b->groups, b->rows};
    for (int i = 0; i < 6; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* A growing text buffer. */
typedef struct text {
    char *buf;
    size_t len, cap;
    int oom;
} text;

static void appendf(text *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void appendf(text *t, const char *fmt, ...)
{
    if (t->oom)
        return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        /* Before the first growth buf is NULL: NULL + 0 is undefined. */
        int n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->oom = 1;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = (t->cap ? t->cap * 2 : 4096) + (size_t)n;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            t->oom = 1;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
}

vg_status vg_lut_export(vg_device *dev, const char *path, uint64_t policy_hash)
{
    if (!dev || !path || !*path)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_lut_export: NULL argument or empty path");
    return vg_lut_export_tuning(dev, &dev->tuning, path, policy_hash);
}

vg_status vg_lut_export_tuning(vg_device *dev, vg_tuning *tuning, const char *path,
                               uint64_t policy_hash)
{
    return vg_lut_export_policies(dev, tuning, path, policy_hash ? &policy_hash : NULL,
                                  policy_hash ? 1 : 0);
}

vg_status vg_lut_export_policies(vg_device *dev, vg_tuning *tuning, const char *path,
                                 const uint64_t *policies, size_t npolicies)
{
    row_list list = {.want = policies, .nwant = npolicies};
    vg_cache_visit(&tuning->cache, 0, collect, &list);
    if (list.oom) {
        free(list.rows);
        return vg_fail(VG_ERR_NO_MEMORY, "lut %s: out of memory", path);
    }
    if (list.count) /* rows is NULL when nothing was cached */
        qsort(list.rows, list.count, sizeof *list.rows, cmp_row);

    text t = {0};
    appendf(&t, "%s %d\n", LUT_MAGIC, LUT_VERSION);
    for (size_t i = 0; i < list.count; i++) {
        const lut_row *r = &list.rows[i];
        appendf(&t,
                "entry arch=%d policy=%016" PRIx64 " family=%s path=%s n=%d k=%d groups=%d "
                "rows=%d plan=%s us=%.6g build=%016" PRIx64 " planset=%016" PRIx64 "\n",
                dev->arch, r->policy, vg_family_name((vg_family)r->family),
                vg_path_name((vg_path)r->path), (int)r->n, (int)r->k, (int)r->groups,
                (int)r->rows, r->plan, r->us, r->build ? r->build : vg_build_id(),
                r->planset ? r->planset : dev->planset);
    }
    free(list.rows);
    uint64_t sum = vg_fnv1a64(t.buf, t.len, VG_FNV_OFFSET);
    appendf(&t, "checksum fnv1a64=%016" PRIx64 "\n", sum);
    if (t.oom) {
        free(t.buf);
        return vg_fail(VG_ERR_NO_MEMORY, "lut %s: out of memory", path);
    }

    char what[4200];
    snprintf(what, sizeof what, "lut %s", path);
    vg_status st = vg_write_file_atomic(what, path, t.buf, t.len, vg_lut_before_rename_hook);
    free(t.buf);
    return st;
}
