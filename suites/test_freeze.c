/*
 * The freeze: after vg_device_freeze_tuning() no call measures, from any
 * thread, whatever the family, path or shape; the frozen lookup returns the
 * plan of the next larger measured shape of the same partition, family and
 * path, or the heuristic, exactly.  And a freeze that lands while threads
 * are measuring still wins: nothing is measured after it returns.  These
 * run on the cpu device with a scripted timer; on a GPU the same lookup is
 * checked for all five families on the CUDA backend with real measurements
 * (frozen_on_cuda_every_family; skipped without a device).
 */
#include <pthread.h>

#include "test_decision_util.h"

#define N 32
#define K 32
#define G 2
#define MAX_TOKENS 140   /* above VG_TUNE_MAX_GROUP_TOKENS: the 256 bucket */
#define MAX_DENSE 80     /* above VG_TUNE_MAX_DENSE_M: the 128 bucket */
#define THREADS 8
#define CALLS_PER_THREAD 1500

/* What the test itself remembers of the measurements (the oracle). */
typedef struct measured_shape {
    vg_family family;
    vg_path path;        /* after the reroute */
    int32_t n, rows;     /* rows: the shape bucket it was measured for */
    const vg_plan *plan;
} measured_shape;

typedef struct world {
    vg_device *dev;
    script s;
    /* per family: a dense layer and a grouped layer, at two widths */
    test_layer dense[VG_FAMILY_COUNT][2], grouped[VG_FAMILY_COUNT][2];
    measured_shape shapes[512];
    int nshapes;
} world;

static const int32_t widths[2] = {N, 2 * N};

static void world_open(world *w)
{
    memset(w, 0, sizeof *w);
    w->s.stride = 1;
    w->dev = open_cpu(&w->s);
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int i = 0; i < 2; i++) {
            layer_open(&w->dense[f][i], w->dev, (vg_family)f, VG_PATH_DENSE, widths[i], K, 1,
                       MAX_DENSE);
            layer_open(&w->grouped[f][i], w->dev, (vg_family)f, VG_PATH_GROUPED, widths[i], K, G,
                       MAX_TOKENS);
        }
}

static void world_close(world *w)
{
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int i = 0; i < 2; i++) {
            layer_close(&w->dense[f][i]);
            layer_close(&w->grouped[f][i]);
        }
    vg_device_close(w->dev);
}

static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* One random call: any family, any path, rows on both sides of the limits.
 * moe gets unequal groups through its own offsets row (offs[3]). */
static vg_gemm_args random_call(world *w, uint32_t *seed, int32_t *offs)
{
    vg_family f = (vg_family)(next_rand(seed) % VG_FAMILY_COUNT);
    int wi = (int)(next_rand(seed) % 2);
    vg_path path = (vg_path)(next_rand(seed) % VG_PATH_COUNT);
    if (path == VG_PATH_DENSE)
        return layer_call(&w->dense[f][wi], 1 + (int32_t)(next_rand(seed) % MAX_DENSE));
    int32_t t = 1 + (int32_t)(next_rand(seed) % MAX_TOKENS);
    vg_gemm_args a = layer_call(&w->grouped[f][wi], t);
    if (path == VG_PATH_MOE) {
        /* group 0 takes t rows, group 1 takes a random share up to t */
        offs[0] = 0;
        offs[1] = t;
        offs[2] = t + (int32_t)(next_rand(seed) % (uint32_t)(t + 1));
        a.m = offs[2];
        a.offsets = a.offsets_host = offs;
    }
    a.path = path;
    return a;
}

static vg_path rerouted(const vg_gemm_args *a, int32_t rows)
{
    if (a->path == VG_PATH_GROUPED && rows > GROUPED_DECODE_MAX_TOKENS)
        return VG_PATH_MOE;
    return a->path;
}

typedef const vg_plan *(*heuristic_fn)(vg_family f, vg_path path, int32_t rows, int32_t n,
                                       int32_t k, const vg_gemm_args *call);

/* The spec, written out: what a frozen device that measured `shapes` must
 * answer for this call, with its backend's heuristic. */
static void expected_of(const measured_shape *shapes, int nshapes, heuristic_fn heuristic,
                        const vg_gemm_args *a, vg_decision *d, const vg_plan **p)
{
    int32_t rows = vg_gemm_max_group_rows(a);
    vg_path path = rerouted(a, rows);
    int32_t bucket = spec_bucket_rows(path, rows);
    const measured_shape *best = NULL;
    for (int i = 0; bucket > 0 && i < nshapes; i++) {
        const measured_shape *m = &shapes[i];
        if (m->family == a->w.family && m->path == path && m->n == a->w.n && m->rows >= bucket &&
            (!best || m->rows < best->rows))
            best = m;
    }
    if (best) {
        *d = VG_DECISION_REUSE;
        *p = best->plan;
    } else {
        *d = VG_DECISION_HEURISTIC;
        *p = heuristic(a->w.family, path, rows, a->w.n, a->w.k, a);
    }
}

static void expected(const world *w, const vg_gemm_args *a, vg_decision *d, const vg_plan **p)
{
    expected_of(w->shapes, w->nshapes, vg_cpu_heuristic, a, d, p);
}

/* Measures `count` random shapes before the freeze, remembering winners. */
static void measure_some(world *w, uint32_t seed, int count)
{
    int32_t offs[3];
    while (w->nshapes < count) {
        vg_gemm_args a = random_call(w, &seed, offs);
        vg_dispatch_info info = gemm_ok(w->dev, &a);
        if (info.decision != VG_DECISION_MEASURE)
            continue;
        assert_ptr_equal(info.plan, script_winner(&w->s, a.w.family, info.path,
                                                  vg_gemm_max_group_rows(&a)));
        w->shapes[w->nshapes++] = (measured_shape){
            a.w.family, info.path, a.w.n,
            spec_bucket_rows(info.path, vg_gemm_max_group_rows(&a)), info.plan};
    }
}

/* A fixed, hand-picked case first: measured M = 2, 5, 9; then every M. */
static void frozen_lookup_exact(void **state)
{
    (void)state;
    world w;
    world_open(&w);
    const int32_t ms[] = {2, 5, 9};
    const vg_plan *won[3];
    for (int i = 0; i < 3; i++) {
        vg_gemm_args a = layer_call(&w.dense[VG_FAMILY_FP8][0], ms[i]);
        vg_dispatch_info info = gemm_ok(w.dev, &a);
        assert_int_equal(info.decision, VG_DECISION_MEASURE);
        won[i] = info.plan;
    }
    assert_int_equal(vg_device_freeze_tuning(w.dev), VG_OK);
    int calls = atomic_load(&w.s.calls);
    for (int32_t m = 1; m <= MAX_DENSE; m++) {
        vg_gemm_args a = layer_call(&w.dense[VG_FAMILY_FP8][0], m);
        vg_dispatch_info info = gemm_ok(w.dev, &a);
        if (m <= 9) {
            assert_int_equal(info.decision, VG_DECISION_REUSE);
            assert_ptr_equal(info.plan, won[m <= 2 ? 0 : m <= 5 ? 1 : 2]);
        } else {
            assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
            assert_ptr_equal(info.plan, vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, m, N, K, NULL));
        }
        /* Another width, another family, another partition: nothing measured there. */
        a = layer_call(&w.dense[VG_FAMILY_FP8][1], m);
        assert_int_equal(gemm_ok(w.dev, &a).decision, VG_DECISION_HEURISTIC);
        a = layer_call(&w.dense[VG_FAMILY_AWQ][0], m);
        assert_int_equal(gemm_ok(w.dev, &a).decision, VG_DECISION_HEURISTIC);
    }
    vg_config *cfg = parse_cfg(CFG_ENGINE);
    vg_policy_enter(w.dev, cfg);
    vg_gemm_args a = layer_call(&w.dense[VG_FAMILY_FP8][0], 2);
    assert_int_equal(gemm_ok(w.dev, &a).decision, VG_DECISION_HEURISTIC);
    vg_policy_leave();
    vg_config_free(cfg);
    assert_int_equal(atomic_load(&w.s.calls), calls);

    vg_tuning_state ts;
    assert_int_equal(vg_device_tuning_state(w.dev, &ts), VG_OK);
    assert_int_equal(ts.frozen, 1);
    assert_int_equal(ts.measured_before_freeze, 3);
    assert_int_equal(ts.measured_after_freeze, 0);
    assert_int_equal(ts.measured_total, 3);
    assert_int_equal(ts.cache_entries, 3);
    assert_int_equal(vg_device_freeze_tuning(w.dev), VG_OK);   /* idempotent */
    world_close(&w);
}

/* Above the exact limits the frozen lookup works on buckets: with the 256
 * bucket measured (M=250), a frozen device answers M=200 and M=129 (the
 * same bucket) and M=40 (the next larger measured bucket) with its plan,
 * M=257 (the 512 bucket, nothing at or above it) with the heuristic, and
 * M above VG_TUNE_MAX_BUCKET_ROWS with the heuristic without a lookup. */
static void frozen_reuses_next_larger_bucket(void **state)
{
    (void)state;
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_NVFP4, VG_PATH_DENSE, N, K, 1, VG_TUNE_MAX_BUCKET_ROWS + 1);
    const vg_plan *won = expect_call(dev, &l, 250, VG_DECISION_MEASURE).plan;
    assert_ptr_equal(won, script_winner(&s, VG_FAMILY_NVFP4, VG_PATH_DENSE, 250));
    assert_int_equal(vg_device_freeze_tuning(dev), VG_OK);
    int calls = atomic_load(&s.calls);

    const int32_t reused[] = {200, 129, 256, 40};
    expect_reused(dev, &l, reused, sizeof reused / sizeof reused[0], won);
    const int32_t heuristic[] = {257, VG_TUNE_MAX_BUCKET_ROWS, VG_TUNE_MAX_BUCKET_ROWS + 1};
    for (size_t i = 0; i < sizeof heuristic / sizeof heuristic[0]; i++)
        assert_ptr_equal(expect_call(dev, &l, heuristic[i], VG_DECISION_HEURISTIC).plan,
                         vg_cpu_heuristic(VG_FAMILY_NVFP4, VG_PATH_DENSE, heuristic[i], N, K, NULL));
    assert_int_equal(atomic_load(&s.calls), calls);
    vg_tuning_state ts;
    assert_int_equal(vg_device_tuning_state(dev, &ts), VG_OK);
    assert_int_equal(ts.measured_total, 1);
    assert_int_equal(ts.measured_after_freeze, 0);
    layer_close(&l);
    vg_device_close(dev);
}

typedef struct worker {
    world *w;
    uint32_t seed;
    atomic_int *measures, *mismatches, *calls;
    atomic_int *freeze_done;      /* race test: set once the freeze returned */
    int check_expected;
} worker;

static void *run_worker(void *p)
{
    worker *k = p;
    int32_t offs[3];
    /* each thread its own output rows: only the runtime is shared */
    size_t most = (size_t)(MAX_TOKENS * 2 > MAX_DENSE ? MAX_TOKENS * 2 : MAX_DENSE) * 2 * N;
    float *y = malloc(sizeof(float) * most);
    for (int i = 0; i < CALLS_PER_THREAD; i++) {
        vg_gemm_args a = random_call(k->w, &k->seed, offs);
        a.y = y;
        int after = k->freeze_done ? atomic_load(k->freeze_done) : 1;
        vg_dispatch_info info;
        if (vg_gemm(k->w->dev, op_for(a.path), &a, &info) != VG_OK) {
            atomic_fetch_add(k->mismatches, 1);
            continue;
        }
        atomic_fetch_add(k->calls, 1);
        if (info.decision == VG_DECISION_MEASURE && after)
            atomic_fetch_add(k->measures, 1);
        if (k->check_expected) {
            vg_decision d;
            const vg_plan *plan;
            expected(k->w, &a, &d, &plan);
            if (d != info.decision || plan != info.plan)
                atomic_fetch_add(k->mismatches, 1);
        }
    }
    free(y);
    return NULL;
}

/* 8 threads, 12000 random calls over every family and path on both sides
 * of the limits, after the freeze: zero measure, every answer as specified. */
static void frozen_from_eight_threads(void **state)
{
    (void)state;
    world w;
    world_open(&w);
    measure_some(&w, 0x1234567u, 60);
    assert_int_equal(vg_device_freeze_tuning(w.dev), VG_OK);
    int timer_calls = atomic_load(&w.s.calls);
    atomic_int measures = 0, mismatches = 0, calls = 0;
    pthread_t th[THREADS];
    worker k[THREADS];
    for (int i = 0; i < THREADS; i++) {
        k[i] = (worker){.w = &w, .seed = 0x9e3779b9u * (uint32_t)(i + 1), .measures = &measures,
                        .mismatches = &mismatches, .calls = &calls, .check_expected = 1};
        pthread_create(&th[i], NULL, run_worker, &k[i]);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&calls), THREADS * CALLS_PER_THREAD);
    assert_int_equal(atomic_load(&measures), 0);
    assert_int_equal(atomic_load(&mismatches), 0);
    assert_int_equal(atomic_load(&w.s.calls), timer_calls);
    vg_tuning_state ts;
    vg_device_tuning_state(w.dev, &ts);
    assert_int_equal(ts.measured_after_freeze, 0);
    assert_int_equal(ts.measured_total, 60);
    world_close(&w);
}

/* The freeze lands while 8 threads are measuring: no call that starts after
 * the freeze returned measures, and no measurement is recorded after it. */
static void freeze_races_measurements(void **state)
{
    (void)state;
    world w;
    world_open(&w);
    atomic_int measures = 0, mismatches = 0, calls = 0, done = 0;
    pthread_t th[THREADS];
    worker k[THREADS];
    for (int i = 0; i < THREADS; i++) {
        k[i] = (worker){.w = &w, .seed = 0x85ebca6bu * (uint32_t)(i + 3), .measures = &measures,
                        .mismatches = &mismatches, .calls = &calls, .freeze_done = &done};
        pthread_create(&th[i], NULL, run_worker, &k[i]);
    }
    while (atomic_load(&calls) < THREADS * 50)   /* let measurements start */
        ;
    assert_int_equal(vg_device_freeze_tuning(w.dev), VG_OK);
    vg_tuning_state at_freeze;
    vg_device_tuning_state(w.dev, &at_freeze);
    atomic_store(&done, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&mismatches), 0);
    assert_int_equal(atomic_load(&measures), 0);
    vg_tuning_state ts;
    vg_device_tuning_state(w.dev, &ts);
    assert_true(at_freeze.measured_before_freeze > 0);
    assert_int_equal(ts.measured_total, at_freeze.measured_before_freeze);
    assert_int_equal(ts.measured_after_freeze, 0);
    world_close(&w);
}

/* The freeze on the CUDA backend, every family: real measurements (the
 * back-to-back timer, so the winners are whatever the GPU says, remembered
 * from each call's answer), then the freeze, then every row count of a
 * dense and a grouped layer per family: never measure; the plan of the
 * next larger measured shape of the same family, path and N, else the CUDA
 * heuristic, exactly. */
static void frozen_on_cuda_every_family(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    enum { CN = 256, CK = 512, CG = 2, ROWS = 24 };
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cuda", 0, &dev), VG_OK);
    vg_trace_set(dev, NULL);
    test_layer dense[VG_FAMILY_COUNT], grouped[VG_FAMILY_COUNT];
    measured_shape shapes[4 * VG_FAMILY_COUNT];
    int nshapes = 0;
    static const int32_t dense_measured[] = {2, 9}, grouped_measured[] = {3, 8};
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        layer_open(&dense[f], dev, (vg_family)f, VG_PATH_DENSE, CN, CK, 1, ROWS);
        layer_open(&grouped[f], dev, (vg_family)f, VG_PATH_GROUPED, CN, CK, CG, ROWS);
        for (int i = 0; i < 2; i++) {
            const test_layer *l[2] = {&dense[f], &grouped[f]};
            const int32_t rows[2] = {dense_measured[i], grouped_measured[i]};
            for (int j = 0; j < 2; j++) {
                vg_gemm_args a = layer_call(l[j], rows[j]);
                vg_dispatch_info info = gemm_ok(dev, &a);
                assert_int_equal(info.decision, VG_DECISION_MEASURE);
                assert_string_equal(info.plan->backend, "cuda");
                shapes[nshapes++] = (measured_shape){(vg_family)f, info.path, CN, rows[j], info.plan};
            }
        }
    }
    assert_int_equal(measured_total(dev), (uint64_t)nshapes);
    assert_int_equal(vg_device_freeze_tuning(dev), VG_OK);
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int32_t r = 1; r <= ROWS; r++) {
            const test_layer *l[2] = {&dense[f], &grouped[f]};
            for (int j = 0; j < 2; j++) {
                vg_gemm_args a = layer_call(l[j], r);
                vg_dispatch_info info = gemm_ok(dev, &a);
                vg_decision d;
                const vg_plan *plan;
                expected_of(shapes, nshapes, vg_cuda_heuristic, &a, &d, &plan);
                if (info.decision != d || info.plan != plan) {
                    print_error("%s %s rows %d: %s %s, expected %s %s\n",
                                vg_family_name((vg_family)f), vg_path_name(info.path), (int)r,
                                vg_decision_name(info.decision), info.plan->id,
                                vg_decision_name(d), plan ? plan->id : "(none)");
                    fail();
                }
            }
        }
    vg_tuning_state ts;
    assert_int_equal(vg_device_tuning_state(dev, &ts), VG_OK);
    assert_int_equal(ts.frozen, 1);
    assert_int_equal(ts.measured_after_freeze, 0);
    assert_int_equal(ts.measured_total, (uint64_t)nshapes);
    assert_int_equal(vg_device_synchronize(dev, NULL), VG_OK);
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        layer_close(&dense[f]);
        layer_close(&grouped[f]);
    }
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(frozen_lookup_exact),
        cmocka_unit_test(frozen_reuses_next_larger_bucket),
        cmocka_unit_test(frozen_on_cuda_every_family),
        cmocka_unit_test(frozen_from_eight_threads),
        cmocka_unit_test(freeze_races_measurements),
    };
    return VGTEST_MAIN("freeze", tests);
}
