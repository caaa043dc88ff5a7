/*
 * The LUT: the dispatch cache in a file, so a boot can skip measuring.
 *
 * Format (text, version 1), one entry per line, then a checksum line:
 *
 *   voltgate-lut 1
 *   entry arch=70 policy=<16 hex> family=fp8 path=grouped n=1024 k=4096 groups=8 rows=3 plan=<id> us=12.345
 *   ...
 *   checksum fnv1a64=<16 hex>
 *
 * arch is the device arch (0 = cpu).  rows is the shape bucket
 * (vg_tune_bucket_rows of dense M, else of the rows per group: the rows
 * themselves inside the exact limits, a power of two above).  us is the median time the plan won with.  The
 * checksum is FNV-1a 64 over every byte before the checksum line.  Entries
 * are sorted, so the same cache always gives the same bytes.
 *
 * Export writes <path>.tmp.<pid>, fsyncs it, renames it over <path> and
 * fsyncs the folder: a crash at any point leaves either the old file or the
 * new one, never half of one.
 *
 * Import reads and checks the whole file before applying anything: a file
 * that is not a LUT, cut short or with a bad line is VG_ERR_FORMAT, one whose
 * checksum does not match is VG_ERR_CHECKSUM, and then nothing is applied.
 * Entries of another arch, of another policy (when one is asked for) or
 * naming a plan this build does not have (or that no longer applies to the
 * entry's shape) are skipped and counted in the report and the trace.
 * Applied entries are marked imported and count as measured for reuse and
 * for the frozen lookup; they are not counted as measurements.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "internal.h"
#include "voltgate/coord.h"

#define LUT_MAGIC "voltgate-lut"
#define LUT_VERSION 2          /* written; 1 is still read */
#define LUT_VERSION_OLDEST 1

/* The kernel build id.  The lead's Makefile may pass -DVG_BUILD_ID='"<git
 * sha>"'; without it, the compile date and time of this file stand in (a
 * rebuild then makes older LUTs stale, which is the safe side). */
#ifndef VG_BUILD_ID
#define VG_BUILD_ID "voltgate " __DATE__ " " __TIME__
#endif
/* Stamp of a version-1 entry, which says nothing about its build. */
#define LUT_UNSTAMPED UINT64_MAX

uint64_t vg_build_id(void)
{
    static const char id[] = VG_BUILD_ID;
    uint64_t h = vg_fnv1a64(id, sizeof id - 1, VG_FNV_OFFSET);
    return h && h != LUT_UNSTAMPED ? h : 1;
}

/* The folder that holds path ("." for a bare name, "/" at the root) into
 * dir; 0 when path does not fit (dir then holds it cut). */
static int parent_folder(const char *path, char *dir, size_t size)
{
    int fits = snprintf(dir, size, "%s", path) < (int)size;
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return fits;
}

/* ---- path templates (checked by config.c) ----------------------------------- */

vg_status vg_lut_expand_path(vg_device *dev, const char *tmpl, char *out, size_t size)
{
    char why[160];
    if (!vg_lut_template_valid(tmpl, why, sizeof why))
        return vg_fail(VG_ERR_CONFIG, "gemm_lut_path: %s", why);
    vg_coord_stats cs;
    int rank = vg_device_coord_stats(dev, &cs) == VG_OK && cs.attached ? cs.rank : 0;
    size_t n = 0;
    for (const char *p = tmpl; *p;) {
        char piece[32];
        const char *add = piece;
        size_t alen;
        if (strncmp(p, "{device}", 8) == 0) {
            snprintf(piece, sizeof piece, "%d", dev->ordinal);
            p += 8;
        } else if (strncmp(p, "{arch}", 6) == 0) {
            if (dev->arch == 0)
                snprintf(piece, sizeof piece, "cpu");
            else
                snprintf(piece, sizeof piece, "sm%d", dev->arch);
            p += 6;
        } else if (strncmp(p, "{rank}", 6) == 0) {
            snprintf(piece, sizeof piece, "%d", rank);
            p += 6;
        } else {
            piece[0] = *p++;
            piece[1] = '\0';
        }
        alen = strlen(add);
        if (n + alen >= size)
            return vg_fail(VG_ERR_CONFIG, "gemm_lut_path: '%s' expands past %zu characters",
                           tmpl, size - 1);
        memcpy(out + n, add, alen);
        n += alen;
    }
    out[n] = '\0';
    return VG_OK;
}

vg_status vg_lut_prepare_path(const char *path)
{
    char dir[4200];
    if (!parent_folder(path, dir, sizeof dir))
        return vg_fail(VG_ERR_INVALID_ARG, "gemm_lut_path %s: path too long", path);
    /* mkdir -p, one component at a time. */
    for (char *p = dir + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char keep = *p;
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return vg_fail(VG_ERR_IO, "gemm_lut_path %s: cannot create folder %s: %s", path,
                               dir, strerror(errno));
            *p = keep;
            if (keep == '\0')
                break;
        }
    }
    char what[4300];
    snprintf(what, sizeof what, "gemm_lut_path %s", path);
    return vg_check_output_path(what, path);
}
#define LUT_MAX_BYTES (64u << 20)

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

/* ---- import ---------------------------------------------------------------- */

typedef struct lut_entry {
    int arch;
    uint64_t policy;
    vg_family family;
    vg_path path;
    int32_t n, k, groups, rows;
    char plan[128];
    double us;
    uint64_t build, planset;  /* LUT_UNSTAMPED in a version-1 file */
    int32_t line;             /* in the file, for messages */
} lut_entry;

static int parse_hex64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    for (int i = 0; i < 16; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
        if (d < 0)
            return 0;
        v = v << 4 | (uint64_t)d;
    }
    *out = v;
    return 1;
}

/* The value of field `key` at *p ("key=value" up to the next blank or
 * the end); advances *p past it.  NULL when the line has another field
 * there. */
static const char *field(const char **p, const char *end, const char *key, size_t *vlen)
{
    size_t klen = strlen(key);
    if (*p < end && **p == ' ')
        (*p)++;
    if ((size_t)(end - *p) <= klen || memcmp(*p, key, klen) != 0 || (*p)[klen] != '=')
        return NULL;
    const char *v = *p + klen + 1;
    const char *stop = memchr(v, ' ', (size_t)(end - v));
    if (!stop)
        stop = end;
    *vlen = (size_t)(stop - v);
    *p = stop;
    return v;
}

/* One "entry ..." line (without its newline).  0, or -1 with why[] naming
 * the field that is wrong and what it holds. */
static int parse_entry(const char *line, size_t len, int version, lut_entry *e, char *why,
                       size_t wsize)
{
    static const char *const int_keys[] = {"n", "k", "groups", "rows"};
    int32_t *ints[] = {&e->n, &e->k, &e->groups, &e->rows};
    const char *p = line, *end = line + len;
    size_t vlen = 0;
    const char *v;
    long long num;
    char tmp[64];
    if (len < 5 || memcmp(line, "entry", 5) != 0) {
        snprintf(why, wsize, "the line does not start with 'entry'");
        return -1;
    }
    p += 5;
#define FIELD(key)                                                                            \
    if (!(v = field(&p, end, key, &vlen))) {                                                  \
        snprintf(why, wsize, "field '%s' is missing where expected", key);                    \
        return -1;                                                                            \
    }
#define BAD(key, want)                                                                        \
    do {                                                                                      \
        snprintf(why, wsize, "field '%s' is '%.*s' (want %s)", key, (int)(vlen > 40 ? 40 : vlen), \
                 v, want);                                                                    \
        return -1;                                                                            \
    } while (0)
    FIELD("arch");
    if (vg_parse_int(v, vlen, 0, 10000, &num) != 0)
        BAD("arch", "an integer 0..10000");
    e->arch = (int)num;
    FIELD("policy");
    if (vlen != 16 || !parse_hex64(v, &e->policy))
        BAD("policy", "16 hex digits");
    FIELD("family");
    snprintf(tmp, sizeof tmp, "%.*s", (int)(vlen < sizeof tmp ? vlen : sizeof tmp - 1), v);
    if (vlen >= sizeof tmp || vg_family_parse(tmp, &e->family) != VG_OK)
        BAD("family", "a weight family");
    FIELD("path");
    snprintf(tmp, sizeof tmp, "%.*s", (int)(vlen < sizeof tmp ? vlen : sizeof tmp - 1), v);
    if (vlen >= sizeof tmp || vg_path_parse(tmp, &e->path) != VG_OK)
        BAD("path", "a dispatch path");
    for (int i = 0; i < 4; i++) {
        FIELD(int_keys[i]);
        if (vg_parse_int(v, vlen, 1, INT32_MAX, &num) != 0)
            BAD(int_keys[i], "an integer 1..2147483647");
        *ints[i] = (int32_t)num;
    }
    FIELD("plan");
    if (vlen == 0 || vlen >= sizeof e->plan)
        BAD("plan", "a plan id");
    memcpy(e->plan, v, vlen);
    e->plan[vlen] = '\0';
    FIELD("us");
    char *stop = NULL;
    snprintf(tmp, sizeof tmp, "%.*s", (int)(vlen < sizeof tmp ? vlen : sizeof tmp - 1), v);
    e->us = vlen && vlen < sizeof tmp ? strtod(tmp, &stop) : -1.0;
    if (!stop || *stop || !(e->us >= 0.0) || e->us > 1e300)
        BAD("us", "a time in microseconds >= 0");
    e->build = e->planset = LUT_UNSTAMPED;
    if (version >= 2) {
        FIELD("build");
        if (vlen != 16 || !parse_hex64(v, &e->build))
            BAD("build", "16 hex digits");
        FIELD("planset");
        if (vlen != 16 || !parse_hex64(v, &e->planset))
            BAD("planset", "16 hex digits");
    }
#undef FIELD
#undef BAD
    if (p != end) {
        snprintf(why, wsize, "unexpected text after the last field: '%.40s'", p);
        return -1;
    }
    return 0;
}

/* Orders entries by their key (everything but plan, time and stamps), then
 * by line. */
static int cmp_entry_key(const void *pa, const void *pb)
{
    const lut_entry *a = *(const lut_entry *const *)pa, *b = *(const lut_entry *const *)pb;
    if (a->policy != b->policy)
        return a->policy < b->policy ? -1 : 1;
    const int32_t ka[] = {a->arch, a->family, a->path, a->n, a->k, a->groups, a->rows, a->line};
    const int32_t kb[] = {b->arch, b->family, b->path, b->n, b->k, b->groups, b->rows, b->line};
    for (int i = 0; i < 8; i++)
        if (ka[i] != kb[i])
            return ka[i] < kb[i] ? -1 : 1;
    return 0;
}

/* Two entries for one key: which one is meant cannot be known, so the
 * file is refused naming both lines. */
static vg_status refuse_duplicates(const char *file, const lut_entry *entries, size_t count)
{
    if (count < 2)
        return VG_OK;
    const lut_entry **order = malloc(count * sizeof *order);
    if (!order)
        return vg_fail(VG_ERR_NO_MEMORY, "lut %s: out of memory", file);
    for (size_t i = 0; i < count; i++)
        order[i] = &entries[i];
    qsort(order, count, sizeof *order, cmp_entry_key);
    vg_status st = VG_OK;
    for (size_t i = 1; i < count && st == VG_OK; i++) {
        const lut_entry *a = order[i - 1], *b = order[i];
        if (a->arch == b->arch && a->policy == b->policy && a->family == b->family &&
            a->path == b->path && a->n == b->n && a->k == b->k && a->groups == b->groups &&
            a->rows == b->rows)
            st = vg_fail(VG_ERR_FORMAT,
                         "lut %s: line %d and line %d are entries for the same shape (plan %s "
                         "and plan %s); nothing applied",
                         file, (int)a->line, (int)b->line, a->plan, b->plan);
    }
    free(order);
    return st;
}

/* Checks the whole text; fills a malloc'ed entry array. */
static vg_status parse_lut(const char *file, const char *buf, size_t len, lut_entry **out,
                           size_t *count, int *version_out)
{
    *out = NULL;
    *count = 0;
    char want[32];
    /* The newest version this build reads, unless the file names an older
     * one it still reads (the header is the same length for 1..9). */
    int version = LUT_VERSION;
    for (int v = LUT_VERSION_OLDEST; v < LUT_VERSION; v++) {
        snprintf(want, sizeof want, "%s %d\n", LUT_MAGIC, v);
        if (len >= strlen(want) && memcmp(buf, want, strlen(want)) == 0)
            version = v;
    }
    *version_out = version;
    int hlen = snprintf(want, sizeof want, "%s %d\n", LUT_MAGIC, version);
    if (strlen(buf) != len)
        return vg_fail(VG_ERR_FORMAT, "lut %s: not a voltgate LUT (binary data)", file);
    if (len == 0)
        return vg_fail(VG_ERR_FORMAT, "lut %s: truncated: the file is empty", file);
    if (len < (size_t)hlen && memcmp(buf, want, len) == 0)
        return vg_fail(VG_ERR_FORMAT, "lut %s: truncated: the file ends inside the header line",
                       file);
    if (len < (size_t)hlen || memcmp(buf, want, (size_t)hlen) != 0) {
        if (strncmp(buf, LUT_MAGIC " ", strlen(LUT_MAGIC) + 1) == 0)
            return vg_fail(VG_ERR_FORMAT, "lut %s: line 1: unsupported version (this build reads %d to %d)",
                           file, LUT_VERSION_OLDEST, LUT_VERSION);
        return vg_fail(VG_ERR_FORMAT, "lut %s: line 1: not a voltgate LUT (expected '%s %d')",
                       file, LUT_MAGIC, LUT_VERSION);
    }
    /* The checksum line is the last line, and the file ends with its newline. */
    static const char sum_prefix[] = "checksum fnv1a64=";
    const size_t sum_len = sizeof sum_prefix - 1 + 16 + 1;
    if (len < (size_t)hlen + sum_len || buf[len - 1] != '\n' ||
        memcmp(buf + len - sum_len, sum_prefix, sizeof sum_prefix - 1) != 0 ||
        buf[len - sum_len - 1] != '\n')
        return vg_fail(VG_ERR_FORMAT, "lut %s: truncated: the checksum line is missing at the end",
                       file);
    uint64_t want_sum;
    if (!parse_hex64(buf + len - 17, &want_sum))
        return vg_fail(VG_ERR_FORMAT, "lut %s: malformed checksum line", file);
    size_t body = len - sum_len;
    uint64_t got_sum = vg_fnv1a64(buf, body, VG_FNV_OFFSET);
    if (got_sum != want_sum)
        return vg_fail(VG_ERR_CHECKSUM,
                       "lut %s: checksum mismatch (file says %016" PRIx64 ", content is %016" PRIx64
                       "): the file was changed or damaged; nothing applied",
                       file, want_sum, got_sum);

    size_t cap = 0;
    lut_entry *entries = NULL;
    int lineno = 1;
    for (size_t pos = (size_t)hlen; pos < body;) {
        lineno++;
        const char *nl = memchr(buf + pos, '\n', body - pos);
        size_t llen = (size_t)(nl - (buf + pos));
        if (*count == cap) {
            cap = cap ? cap * 2 : 64;
            lut_entry *grown = realloc(entries, cap * sizeof *grown);
            if (!grown) {
                free(entries);
                return vg_fail(VG_ERR_NO_MEMORY, "lut %s: out of memory", file);
            }
            entries = grown;
        }
        char why[160];
        if (parse_entry(buf + pos, llen, version, &entries[*count], why, sizeof why) != 0) {
            free(entries);
            *count = 0;
            return vg_fail(VG_ERR_FORMAT, "lut %s: line %d: malformed entry: %s: '%.*s'", file,
                           lineno, why, (int)(llen > 60 ? 60 : llen), buf + pos);
        }
        entries[*count].line = lineno;
        (*count)++;
        pos += llen + 1;
    }
    vg_status st = refuse_duplicates(file, entries, *count);
    if (st != VG_OK) {
        free(entries);
        *count = 0;
        return st;
    }
    *out = entries;
    return VG_OK;
}

vg_status vg_lut_import(vg_device *dev, const char *path, uint64_t policy_hash,
                        vg_lut_report *report)
{
    if (!dev || !path)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_lut_import: NULL argument");
    return vg_lut_import_tuning(dev, &dev->tuning, path, policy_hash ? &policy_hash : NULL,
                                policy_hash ? 1 : 0, 0, report);
}

static int policy_accepted(uint64_t h, const uint64_t *policies, size_t n)
{
    if (!policies)
        return 1;
    for (size_t i = 0; i < n; i++)
        if (policies[i] == h)
            return 1;
    return 0;
}

vg_status vg_lut_import_tuning(vg_device *dev, vg_tuning *t, const char *path,
                               const uint64_t *policies, size_t npolicies, int flags,
                               vg_lut_report *report)
{
    vg_lut_report r = {0};
    if (report)
        *report = r;
    char *buf = NULL;
    size_t len = 0;
    char what[4200];
    snprintf(what, sizeof what, "lut %s", path);
    vg_status st = vg_read_whole_file(what, path, LUT_MAX_BYTES, &buf, &len);
    if (st != VG_OK)
        return st;
    lut_entry *entries = NULL;
    size_t count = 0;
    int version = 0;
    st = parse_lut(path, buf, len, &entries, &count, &version);
    free(buf);
    if (st != VG_OK)
        return st;

    const uint64_t build = vg_build_id();
    const int reuse = (flags & VG_LUT_REUSE_ACROSS_BUILDS) != 0;
    for (size_t i = 0; i < count && st == VG_OK; i++) {
        const lut_entry *e = &entries[i];
        if (e->arch != dev->arch) {
            r.skipped_arch++;
            continue;
        }
        if (!policy_accepted(e->policy, policies, npolicies)) {
            r.skipped_policy++;
            continue;
        }
        /* Stale stamps: another build or another plan table measured it. */
        int unstamped = e->build == LUT_UNSTAMPED;
        if (!reuse && (unstamped ? (flags & VG_LUT_STRICT_STAMPS) != 0 : e->build != build)) {
            r.skipped_build++;
            continue;
        }
        if (!reuse && !unstamped && e->planset != dev->planset) {
            r.skipped_planset++;
            continue;
        }
        const vg_plan *p = vg_device_find_plan(dev, e->plan);
        if (!p || !vg_plan_applies(p, e->family, e->path, e->rows)) {
            r.skipped_plan++;
            continue;
        }
        vg_cache_key key = {.policy = e->policy, .family = e->family, .path = e->path,
                            .n = e->n, .k = e->k, .groups = e->groups, .rows = e->rows};
        /* Keep a foreign origin, so a re-export does not restamp it as ours. */
        uint64_t b = unstamped || e->build != build ? e->build : 0;
        uint64_t ps = unstamped || e->planset != dev->planset ? e->planset : 0;
        st = vg_cache_put_stamped(&t->cache, &key, p, e->us, 1, b, ps, NULL);
        if (st == VG_OK)
            r.applied++;
    }
    free(entries);
    vg_trace_line(&dev->trace,
                  "vg-trace-lut action=import file=%s version=%d skipped_build=%llu "
                  "skipped_planset=%llu applied=%llu skipped_arch=%llu "
                  "skipped_policy=%llu skipped_plan=%llu",
                  path, version, (unsigned long long)r.skipped_build,
                  (unsigned long long)r.skipped_planset, (unsigned long long)r.applied,
                  (unsigned long long)r.skipped_arch, (unsigned long long)r.skipped_policy,
                  (unsigned long long)r.skipped_plan);
    if (report)
        *report = r;
    return st;
}

/* The LUT step at the start of a config-driven warm-up and of an engine's
 * open: expands cfg's
 * gemm_lut_path for dev into path[], prepares its folder (created, checked
 * writable: the error comes now, not at the export) and imports it when it
 * exists, only entries of `policies`.  path[0] is '\0' without a LUT. */
vg_status vg_lut_begin_for_config(vg_device *dev, vg_tuning *t, const vg_config *cfg,
                                  const uint64_t *policies, size_t npolicies, char *path,
                                  size_t size, vg_lut_report *lr)
{
    path[0] = '\0';
    memset(lr, 0, sizeof *lr);
    if (!cfg->f.gemm_lut_path)
        return VG_OK;
    vg_status st = vg_lut_expand_path(dev, cfg->f.gemm_lut_path, path, size);
    if (st == VG_OK)
        st = vg_lut_prepare_path(path);
    if (st != VG_OK) {
        path[0] = '\0';
        return st;
    }
    int flags = VG_LUT_STRICT_STAMPS |
                (cfg->f.reuse_lut_across_builds ? VG_LUT_REUSE_ACROSS_BUILDS : 0);
    if (access(path, F_OK) == 0)
        st = vg_lut_import_tuning(dev, t, path, policies, npolicies, flags, lr);
    return st;
}
