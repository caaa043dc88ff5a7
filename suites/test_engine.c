/*
 * Issue 10, engines: two engines on one device with the same policy hash
 * keep separate measured sets, freeze states and LUTs; sharing only when
 * both configs say so; the device-level (implicit default engine) calls are
 * untouched by engines; a closed engine is VG_ERR_STATE, never a crash; close
 * waits for calls in flight; one frozen and one tuning engine used from
 * several threads at once.
 */
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#include "test_decision_util.h"

#define N 32
#define K 64
#define G 4

static const vg_layer layers[] = {
    {.family = VG_FAMILY_FP8, .path = VG_PATH_GROUPED, .n = N, .k = K, .groups = G},
    {.family = VG_FAMILY_AWQ, .path = VG_PATH_DENSE, .n = N, .k = K, .groups = 1},
};
#define NLAYERS 2
#define WARM_SHAPES (GROUPED_DECODE_MAX_TOKENS + VG_TUNE_MAX_DENSE_M)

static vg_engine *open_engine(vg_device *dev, const char *json)
{
    vg_config *cfg = parse_cfg(json);
    vg_engine *e = NULL;
    vg_status st = vg_engine_open(dev, cfg, &e);
    if (st != VG_OK)
        print_error("engine open: %s\n", vg_last_error());
    assert_int_equal(st, VG_OK);
    vg_config_free(cfg);   /* the engine keeps its own copy */
    return e;
}

static vg_tuning_state engine_state(vg_engine *e)
{
    vg_tuning_state ts;
    assert_int_equal(vg_engine_tuning_state(e, &ts), VG_OK);
    return ts;
}

/* One call of the dense awq layer with m rows inside engine e. */
static vg_decision call_in(vg_engine *e, test_layer *l, int m)
{
    assert_int_equal(vg_engine_enter(e), VG_OK);
    vg_gemm_args a = layer_call(l, m);
    vg_dispatch_info info = gemm_ok(l->dev, &a);
    assert_int_equal(vg_engine_leave(), VG_OK);
    return info.decision;
}

/* Same config, same policy hash: nothing leaks between the engines, nor
 * into or out of the device's default engine. */
static void engines_do_not_leak(void **state)
{
    (void)state;
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_engine *a = open_engine(dev, CFG_FREEZE), *b = open_engine(dev, CFG_FREEZE);
    int ida = -1, idb = -1;
    vg_engine_id(a, &ida);
    vg_engine_id(b, &idb);
    assert_int_equal(ida, 0);
    assert_int_equal(idb, 1);
    vg_warmup_report r;
    assert_int_equal(vg_engine_warmup(a, layers, NLAYERS, &r), VG_OK);
    assert_int_equal(r.shapes_measured, WARM_SHAPES);
    assert_int_equal(r.frozen, 1);
    assert_int_equal(engine_state(a).measured_total, WARM_SHAPES);
    assert_int_equal(engine_state(a).frozen, 1);
    /* b: nothing measured, not frozen (a's freeze is a's) */
    assert_int_equal(engine_state(b).measured_total, 0);
    assert_int_equal(engine_state(b).frozen, 0);
    /* the device's default engine neither */
    assert_int_equal(measured_total(dev), 0);
    vg_tuning_state ds;
    vg_device_tuning_state(dev, &ds);
    assert_int_equal(ds.frozen, 0);

    test_layer l;
    layer_open(&l, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, N, K, 1, 8);
    assert_int_equal(call_in(a, &l, 3), VG_DECISION_REUSE);
    assert_int_equal(call_in(b, &l, 3), VG_DECISION_MEASURE);   /* same hash, own set */
    assert_int_equal(call_in(b, &l, 3), VG_DECISION_REUSE);
    /* a device-level call inside the same policy is the default engine's */
    vg_config *cfg = parse_cfg(CFG_FREEZE);
    assert_int_equal(vg_policy_enter(dev, cfg), VG_OK);
    vg_gemm_args args = layer_call(&l, 3);
    assert_int_equal(gemm_ok(dev, &args).decision, VG_DECISION_MEASURE);
    vg_policy_leave();
    vg_config_free(cfg);
    /* freezing the device freezes neither engine */
    assert_int_equal(vg_device_freeze_tuning(dev), VG_OK);
    assert_int_equal(call_in(b, &l, 5), VG_DECISION_MEASURE);
    assert_int_equal(engine_state(b).measured_total, 2);
    layer_close(&l);
    assert_int_equal(vg_engine_close(a), VG_OK);
    assert_int_equal(vg_engine_close(b), VG_OK);
    vg_device_close(dev);
}

#define CFG_SHARE "{\"sm70_runtime\":{\"share_measured_plans_across_engines\":true}}"

static void sharing_needs_both_configs(void **state)
{
    (void)state;
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_engine *a = open_engine(dev, CFG_SHARE), *b = open_engine(dev, CFG_SHARE);
    vg_engine *c = open_engine(dev, CFG_ENGINE);   /* does not share */
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, N, K, 1, 8);
    assert_int_equal(call_in(a, &l, 2), VG_DECISION_MEASURE);
    assert_int_equal(call_in(b, &l, 2), VG_DECISION_REUSE);     /* a's plan */
    assert_int_equal(engine_state(b).measured_total, 0);
    assert_int_equal(call_in(c, &l, 2), VG_DECISION_MEASURE);   /* c never sees it */
    assert_int_equal(call_in(c, &l, 4), VG_DECISION_MEASURE);
    assert_int_equal(call_in(a, &l, 4), VG_DECISION_MEASURE);   /* nor a c's */
    layer_close(&l);
    vg_device_close(dev);   /* closes the engines still open */
}

static void closed_engine_is_an_error(void **state)
{
    (void)state;
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_engine *e = open_engine(dev, CFG_ENGINE);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, N, K, 1, 8);
    assert_int_equal(vg_engine_enter(e), VG_OK);
    assert_int_equal(vg_engine_close(e), VG_OK);
    /* still entered on this thread: the call is refused, nothing runs */
    vg_gemm_args a = layer_call(&l, 1);
    assert_int_equal(vg_gemm(dev, "gemm", &a, NULL), VG_ERR_STATE);
    assert_non_null(strstr(vg_last_error(), "engine 0 is closed"));
    assert_int_equal(vg_engine_leave(), VG_OK);
    assert_int_equal(vg_engine_enter(e), VG_ERR_STATE);
    vg_warmup_report r;
    assert_int_equal(vg_engine_warmup(e, layers, NLAYERS, &r), VG_ERR_STATE);
    assert_int_equal(vg_engine_freeze_tuning(e), VG_ERR_STATE);
    vg_tuning_state ts;
    assert_int_equal(vg_engine_tuning_state(e, &ts), VG_ERR_STATE);
    assert_int_equal(vg_engine_close(e), VG_ERR_STATE);
    assert_int_equal(atomic_load(&sc.calls), 0);
    /* not an engine at all */
    assert_int_equal(vg_engine_close(NULL), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_engine_enter(NULL), VG_ERR_INVALID_ARG);
    /* leave without an engine entered */
    assert_int_equal(vg_engine_leave(), VG_ERR_STATE);
    layer_close(&l);
    vg_device_close(dev);
}

/* ---- close waits for a call in flight ------------------------------------ */

static atomic_int in_timer;

static double slow_timer(const vg_plan *p, const vg_gemm_args *a, void *user)
{
    (void)p;
    (void)a;
    (void)user;
    atomic_store(&in_timer, 1);
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    return 1.0;
}

typedef struct slow_call {
    vg_engine *e;
    test_layer *l;
    vg_status st;
} slow_call;

static void *slow_thread(void *arg)
{
    slow_call *s = arg;
    vg_engine_enter(s->e);
    vg_gemm_args a;
    vg_layer_args(&s->l->b, 2, &a);
    s->st = vg_gemm(s->l->dev, "gemm", &a, NULL);
    vg_engine_leave();
    return NULL;
}

static void close_waits_for_in_flight(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    vg_device_set_timer(dev, slow_timer, NULL);
    vg_engine *e = open_engine(dev, CFG_ENGINE);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, N, K, 1, 8);
    slow_call s = {.e = e, .l = &l, .st = VG_ERR_INTERNAL};
    atomic_store(&in_timer, 0);
    pthread_t th;
    pthread_create(&th, NULL, slow_thread, &s);
    while (!atomic_load(&in_timer))
        usleep(1000);
    assert_int_equal(vg_engine_close(e), VG_OK);   /* waits for the measurement */
    pthread_join(th, NULL);
    assert_int_equal(s.st, VG_OK);
    layer_close(&l);
    vg_device_close(dev);
}

/* ---- one frozen, one tuning engine, several threads -------------------------- */

#define THREADS 6
#define CALLS 400

typedef struct worker {
    vg_engine *e;
    vg_device *dev;
    int frozen_engine;
    unsigned seed;
    int measures, bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    test_layer l;   /* per-thread buffers: only the runtime is shared */
    vg_layer spec = {.family = VG_FAMILY_AWQ, .path = VG_PATH_DENSE, .n = N, .k = K, .groups = 1};
    if (vg_layer_buffers_alloc(w->dev, &spec, 96, &l.b) != VG_OK) {
        w->bad++;
        return NULL;
    }
    l.dev = w->dev;
    if (vg_engine_enter(w->e) != VG_OK) {
        w->bad++;
        return NULL;
    }
    for (int i = 0; i < CALLS; i++) {
        int m = 1 + (int)(rand_r(&w->seed) % 96);
        vg_gemm_args a;
        vg_dispatch_info info;
        if (vg_layer_args(&l.b, m, &a) != VG_OK || vg_gemm(w->dev, "gemm", &a, &info) != VG_OK) {
            w->bad++;
            continue;
        }
        if (info.decision == VG_DECISION_MEASURE)
            w->measures++;
    }
    vg_engine_leave();
    vg_layer_buffers_free(w->dev, &l.b);
    return NULL;
}

static void frozen_and_tuning_engines_from_threads(void **state)
{
    (void)state;
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_engine *frozen = open_engine(dev, CFG_FREEZE), *tuning = open_engine(dev, CFG_FREEZE);
    vg_layer dense = {.family = VG_FAMILY_AWQ, .path = VG_PATH_DENSE, .n = N, .k = K, .groups = 1};
    vg_warmup_report r;
    assert_int_equal(vg_engine_warmup(frozen, &dense, 1, &r), VG_OK);
    assert_int_equal(r.frozen, 1);
    uint64_t frozen_measured = engine_state(frozen).measured_total;

    worker w[THREADS];
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.e = i % 2 ? tuning : frozen, .dev = dev, .frozen_engine = !(i % 2),
                        .seed = 1234u + (unsigned)i};
        pthread_create(&th[i], NULL, work, &w[i]);
    }
    int tuning_measures = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(w[i].bad, 0);
        if (w[i].frozen_engine)
            assert_int_equal(w[i].measures, 0);
        else
            tuning_measures += w[i].measures;
    }
    vg_tuning_state fs = engine_state(frozen), ts = engine_state(tuning);
    assert_int_equal(fs.measured_total, frozen_measured);
    assert_int_equal(fs.measured_after_freeze, 0);
    /* the tuning engine measured the M <= 64 it saw and the 128 bucket of
     * M 65..96 (two threads may both measure one new shape; it is counted
     * once) */
    assert_true(tuning_measures > 0);
    assert_true(ts.measured_total > 0 && ts.measured_total <= (uint64_t)tuning_measures);
    assert_true(ts.measured_total <= VG_TUNE_MAX_DENSE_M + 1);
    assert_int_equal(ts.frozen, 0);
    assert_int_equal(measured_total(dev), 0);
    /* now freeze the tuning one from here: it stops too */
    assert_int_equal(vg_engine_freeze_tuning(tuning), VG_OK);
    vg_device_close(dev);
}

/* Each engine's LUT is its own file ({device}/{arch} expanded at open). */
static void engine_luts(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char ja[900], jb[900], pa[900];
    snprintf(ja, sizeof ja, "{\"gemm_lut_path\":\"%s/a/{arch}-{device}.lut\"}", dir);
    snprintf(jb, sizeof jb, "{\"gemm_lut_path\":\"%s/b/{arch}.lut\"}", dir);
    snprintf(pa, sizeof pa, "%s/a/cpu-0.lut", dir);
    vg_layer dense = {.family = VG_FAMILY_AWQ, .path = VG_PATH_DENSE, .n = N, .k = K, .groups = 1};
    for (int boot = 0; boot < 2; boot++) {
        script sc = {.stride = 1};
        vg_device *dev = open_cpu(&sc);
        vg_engine *a = open_engine(dev, ja);
        vg_warmup_report r;
        assert_int_equal(vg_engine_warmup(a, &dense, 1, &r), VG_OK);
        assert_int_equal(r.shapes_measured, boot == 0 ? VG_TUNE_MAX_DENSE_M : 0);
        assert_int_equal(access(pa, R_OK), 0);
        /* b has its own (absent) LUT: measures on both boots */
        vg_engine *b = open_engine(dev, jb);
        vg_engine_close(b);
        vg_device_close(dev);
    }
    /* an unwritable LUT path fails at engine open */
    char bad[900], file[900];
    snprintf(file, sizeof file, "%s/plain", dir);
    spit(file, "x", 1);
    snprintf(bad, sizeof bad, "{\"gemm_lut_path\":\"%s/plain/x.lut\"}", dir);
    vg_device *dev = open_cpu(NULL);
    vg_config *cfg = parse_cfg(bad);
    vg_engine *e = (vg_engine *)1;
    assert_int_equal(vg_engine_open(dev, cfg, &e), VG_ERR_IO);
    assert_null(e);
    vg_config_free(cfg);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(engines_do_not_leak),
        cmocka_unit_test(sharing_needs_both_configs),
        cmocka_unit_test(closed_engine_is_an_error),
        cmocka_unit_test(close_waits_for_in_flight),
        cmocka_unit_test(frozen_and_tuning_engines_from_threads),
        cmocka_unit_test(engine_luts),
    };
    return VGTEST_MAIN("engine", tests);
}
