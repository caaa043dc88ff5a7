/*
 * Concurrent calls on one device: launches that share the device workspace
 * (split-K partials, args->workspace NULL) from several threads give the
 * same bytes as one thread alone; threads measuring with the real cpu timer
 * at once keep the cache and the counters consistent.
 */
#include <pthread.h>

#include "test_decision_util.h"

#define N 256
#define K 512
#define M 16
#define THREADS 4
#define ROUNDS 30

typedef struct job {
    vg_device *dev;
    const vg_plan *plan;
    vg_weight w;
    uint16_t *x;
    float *y;
    const float *want;
    int bad;
} job;

static void *run_job(void *p)
{
    job *j = p;
    for (int r = 0; r < ROUNDS; r++) {
        for (int i = 0; i < M * N; i++)
            j->y[i] = -1.0f;
        vg_gemm_args a = {.path = VG_PATH_DENSE, .m = M, .w = j->w, .x = j->x, .y = j->y,
                          .y_dtype = VG_DTYPE_F32};
        if (vg_gemm_with_plan(j->dev, j->plan->id, &a) != VG_OK ||
            memcmp(j->y, j->want, sizeof(float) * M * N) != 0)
            j->bad++;
    }
    return NULL;
}

static void shared_workspace_is_not_shared_at_once(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    const vg_plan *sk = NULL;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++) {
        const vg_plan *p = vg_cpu_plan_at(i);
        if (vg_plan_applies(p, VG_FAMILY_FP8, VG_PATH_DENSE, M) && p->split_k > 1)
            sk = p;
    }
    assert_non_null(sk);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, M);
    job jobs[THREADS];
    float *want[THREADS];
    for (int t = 0; t < THREADS; t++) {
        /* each thread its own X (different values) and Y */
        uint16_t *x = malloc(sizeof(uint16_t) * M * K);
        for (int i = 0; i < M * K; i++)
            x[i] = (uint16_t)(0x2c00 + ((i * 131 + t * 977) % 1024));
        float *y = malloc(sizeof(float) * M * N);
        want[t] = malloc(sizeof(float) * M * N);
        vg_gemm_args a = {.path = VG_PATH_DENSE, .m = M, .x = x, .y = want[t],
                          .y_dtype = VG_DTYPE_F32};
        a.w = layer_call(&l, 1).w;
        assert_int_equal(vg_gemm_with_plan(dev, sk->id, &a), VG_OK);   /* alone */
        jobs[t] = (job){.dev = dev, .plan = sk, .w = a.w, .x = x, .y = y, .want = want[t]};
    }
    assert_true(memcmp(want[0], want[1], sizeof(float) * M * N) != 0);
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, run_job, &jobs[t]);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(jobs[t].bad, 0);
        free(jobs[t].x);
        free(jobs[t].y);
        free(want[t]);
    }
    layer_close(&l);
    vg_device_close(dev);
}

typedef struct measurer {
    vg_device *dev;
    test_layer *layer;
    int first, count, bad;
} measurer;

static void *run_measurer(void *p)
{
    measurer *m = p;
    float *y = malloc(sizeof(float) * 24 * (size_t)m->layer->b.layer.n);
    for (int i = 0; i < m->count; i++) {
        vg_gemm_args a;
        vg_layer_args(&m->layer->b, m->first + i, &a);
        a.y = y;   /* each thread its own output */
        vg_dispatch_info info;
        if (vg_gemm(m->dev, "gemm", &a, &info) != VG_OK || !info.plan)
            m->bad++;
    }
    free(y);
    return NULL;
}

/* 4 threads measure overlapping shapes with the real timer: every shape
 * is counted once and ends up cached. */
static void concurrent_real_measurements(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, 64, 128, 1, 24);
    measurer ms[THREADS];
    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++) {
        ms[t] = (measurer){.dev = dev, .layer = &l, .first = 1 + t * 4, .count = 12};
        pthread_create(&th[t], NULL, run_measurer, &ms[t]);
    }
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(ms[t].bad, 0);
    vg_tuning_state ts;
    vg_device_tuning_state(dev, &ts);
    assert_int_equal(ts.measured_total, 24);   /* M = 1..24, each once */
    assert_int_equal(ts.cache_entries, 24);
    for (int32_t m = 1; m <= 24; m++) {
        vg_gemm_args a = layer_call(&l, m);
        assert_int_equal(gemm_ok(dev, &a).decision, VG_DECISION_REUSE);
    }
    layer_close(&l);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(shared_workspace_is_not_shared_at_once),
        cmocka_unit_test(concurrent_real_measurements),
    };
    return VGTEST_MAIN("concurrency", tests);
}
