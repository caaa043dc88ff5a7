/*
 * The LUT's reader: a LUT file (lut_format.h) into the dispatch cache.
 *
 * Import reads and checks the whole file before applying anything: a file
 * that is not a LUT, cut short or with a bad line is VG_ERR_FORMAT, one whose
 * checksum does not match is VG_ERR_CHECKSUM, and then nothing is applied.
 * Entries of another arch, of another policy (when one is asked for) or
 * naming a plan this build does not have (or that no longer applies to the
 * entry's shape) are skipped and counted in the report and the trace.
 * Applied entries are marked imported and count as measured for reuse and
 * for the frozen lookup; they are not counted as measurements.
 *
 * Separate from the writer (lut_export.c): they share only the format.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "internal.h"
#include "lut_format.h"

#define LUT_MAX_BYTES (64u << 20)

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
        /* the line's own text only: p is not NUL-terminated at end */
        const int shown = end - p < 40 ? (int)(end - p) : 40;
        snprintf(why, wsize, "unexpected text after the last field: '%.*s'", shown, p);
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
