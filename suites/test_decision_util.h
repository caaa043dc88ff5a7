/*
 * Helpers shared by the runtime suites (test_decision, test_freeze,
 * test_trace, test_lut, test_warmup, test_policy): a scripted timer that
 * decides which plan wins a measurement, small layers on the cpu device and
 * config shortcuts.  Header-only (static) so each suite stays one binary.
 *
 * The expected winners are computed here from the kernel layer's plan
 * table (vg_cpu_plan_at + vg_plan_applies), never from the runtime under
 * test.
 */
#ifndef VOLTGATE_TEST_DECISION_UTIL_H
#define VOLTGATE_TEST_DECISION_UTIL_H

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernels.h"
#include "vgtest.h"
#include "voltgate/runtime.h"

/* ---- the scripted timer ----------------------------------------------------
 * The winner of a measurement of `rows` rows is the applicable plan at
 * index (rows * stride + offset) % count among the applicable cpu plans in
 * table order (or, with `forced` set, that plan whenever it applies).  The
 * winner takes 1.0 us, every other candidate 5.0 + its index. */
typedef struct script {
    int stride, offset;
    const vg_plan *forced;
    atomic_int calls;          /* timer calls (one per candidate timed) */
} script;

static inline int32_t script_rows(const vg_gemm_args *a) { return vg_gemm_max_group_rows(a); }

/* The cpu plans offered at (family, path, rows) (vg_plan_offered: they
 * apply and rows reach their min_rows), in table order: the candidates. */
static inline size_t cpu_candidates(vg_family f, vg_path path, int32_t rows, const vg_plan **out,
                             size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++) {
        const vg_plan *p = vg_cpu_plan_at(i);
        if (vg_plan_offered(p, f, path, rows) && n < max)
            out[n++] = p;
    }
    return n;
}

/* The shape bucket the spec (POLICY.md, "The decision") gives `rows` rows on
 * `path` (after the reroute), written out independently of the runtime's
 * vg_tune_bucket_rows: the rows themselves up to 64 dense / 128 per group,
 * then the next power of two up to 16384, and 0 (never tuned) above. */
/* The CPU backend's dense dequantize-once plan (the kind the cap and the
 * offer tests hide), NULL if the table has none. */
static inline const vg_plan *cpu_dense_dq_plan(void)
{
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        if (vg_cpu_plan_at(i)->kind == VG_KIND_DEQUANT_BLAS && vg_cpu_plan_at(i)->path == VG_PATH_DENSE)
            return vg_cpu_plan_at(i);
    return NULL;
}

static inline int32_t spec_bucket_rows(vg_path path, int32_t rows)
{
    static const int32_t powers[] = {128, 256, 512, 1024, 2048, 4096, 8192, 16384};
    if (rows <= 0)
        return 0;
    if (rows <= (path == VG_PATH_DENSE ? 64 : 128))
        return rows;
    for (size_t i = 0; i < sizeof powers / sizeof powers[0]; i++)
        if (rows <= powers[i])
            return powers[i];
    return 0;
}

/* The plan the script makes win for this call. */
static inline const vg_plan *script_winner(const script *s, vg_family f, vg_path path, int32_t rows)
{
    const vg_plan *c[64];
    size_t n = cpu_candidates(f, path, rows, c, 64);
    if (n == 0)
        return NULL;
    if (s->forced) {
        for (size_t i = 0; i < n; i++)
            if (c[i] == s->forced)
                return c[i];
    }
    return c[((size_t)rows * (size_t)s->stride + (size_t)s->offset) % n];
}

static inline double script_timer(const vg_plan *plan, const vg_gemm_args *a, void *user)
{
    script *s = user;
    atomic_fetch_add(&s->calls, 1);
    const vg_plan *win = script_winner(s, a->w.family, a->path, script_rows(a));
    if (plan == win)
        return 1.0;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        if (vg_cpu_plan_at(i) == plan)
            return 5.0 + (double)i;
    return 100.0;
}

/* ---- devices and configs ----------------------------------------------------- */

static inline vg_device *open_cpu(script *s)
{
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    assert_non_null(dev);
    vg_trace_set(dev, NULL);   /* the suites set their own trace target */
    if (s)
        assert_int_equal(vg_device_set_timer(dev, script_timer, s), VG_OK);
    return dev;
}

static inline vg_config *parse_cfg(const char *json)
{
    vg_config *cfg = NULL;
    vg_status st = vg_config_parse(json, &cfg);
    if (st != VG_OK)
        print_error("config %s: %s\n", json, vg_last_error());
    assert_int_equal(st, VG_OK);
    return cfg;
}

/* An engine config that differs from the defaults in no kernel field. */
#define CFG_ENGINE "{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":true}}}"
#define CFG_FREEZE "{\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true}}"

static inline uint64_t default_hash(void) { return vg_policy_default_partition()->hash; }

/* ---- layers -------------------------------------------------------------------- */

typedef struct test_layer {
    vg_layer_buffers b;
    vg_device *dev;
} test_layer;

static inline void layer_open(test_layer *t, vg_device *dev, vg_family f, vg_path path, int32_t n,
                       int32_t k, int32_t groups, int32_t max_rows)
{
    vg_layer l = {.family = f, .path = path, .n = n, .k = k, .groups = groups};
    t->dev = dev;
    vg_status st = vg_layer_buffers_alloc(dev, &l, max_rows, &t->b);
    if (st != VG_OK)
        print_error("layer: %s\n", vg_last_error());
    assert_int_equal(st, VG_OK);
}

static inline void layer_close(test_layer *t) { vg_layer_buffers_free(t->dev, &t->b); }

static inline vg_gemm_args layer_call(const test_layer *t, int32_t tokens)
{
    vg_gemm_args a;
    assert_int_equal(vg_layer_args(&t->b, tokens, &a), VG_OK);
    return a;
}

static inline const char *op_for(vg_path p)
{
    return p == VG_PATH_DENSE ? "gemm" : p == VG_PATH_MOE ? "moe_gemm" : "grouped_gemm";
}

/* vg_gemm that must succeed; returns its info. */
static inline vg_dispatch_info gemm_ok(vg_device *dev, const vg_gemm_args *a)
{
    vg_dispatch_info info;
    memset(&info, 0, sizeof info);
    vg_status st = vg_gemm(dev, op_for(a->path), a, &info);
    if (st != VG_OK)
        print_error("vg_gemm: %s: %s\n", vg_status_str(st), vg_last_error());
    assert_int_equal(st, VG_OK);
    assert_non_null(info.plan);
    return info;
}

/* One call of `rows` rows on layer `l` that must be decided `want`. */
static inline vg_dispatch_info expect_call(vg_device *dev, const test_layer *l, int32_t rows,
                                           vg_decision want)
{
    vg_gemm_args a = layer_call(l, rows);
    vg_dispatch_info info = gemm_ok(dev, &a);
    if (info.decision != want)
        print_error("%d rows: decision %d, expected %d\n", (int)rows, (int)info.decision,
                    (int)want);
    assert_int_equal(info.decision, want);
    return info;
}

/* Each of `count` row counts on layer `l` is reused with `plan`. */
static inline void expect_reused(vg_device *dev, const test_layer *l, const int32_t *rows,
                                 size_t count, const vg_plan *plan)
{
    for (size_t i = 0; i < count; i++)
        assert_ptr_equal(expect_call(dev, l, rows[i], VG_DECISION_REUSE).plan, plan);
}

static inline uint64_t measured_total(vg_device *dev)
{
    vg_tuning_state ts;
    assert_int_equal(vg_device_tuning_state(dev, &ts), VG_OK);
    return ts.measured_total;
}

/* Reads a whole file into a malloc'ed string ("" when missing). */
static inline char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    size_t got = fread(buf, 1, (size_t)n, f);
    buf[got] = '\0';
    fclose(f);
    return buf;
}

static inline void spit(const char *path, const char *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

#endif
