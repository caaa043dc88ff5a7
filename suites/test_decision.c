/*
 * The dispatch decision on the cpu backend: measure / reuse / heuristic,
 * the scripted timer choosing winners, the tuning limits and the
 * power-of-two buckets above them, tuning off, the capture refusal, the
 * candidates on the trace, the grouped -> loop switch, plans by id, workspace.
 */
#include <math.h>

#include "test_decision_util.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"

#define N 64
#define K 128

/* Measure picks exactly the scripted winner, with its time; the same shape
 * again is reuse without timing anything. */
static void measure_then_reuse(void **state)
{
    (void)state;
    for (int offset = 0; offset < 3; offset++) {
        script s = {.stride = 1, .offset = offset};
        vg_device *dev = open_cpu(&s);
        test_layer l;
        layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 8);
        vg_gemm_args a = layer_call(&l, 3);
        const vg_plan *cand[64];
        size_t ncand = cpu_candidates(VG_FAMILY_FP8, VG_PATH_DENSE, 3, cand, 64);
        assert_true(ncand >= 2);

        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.decision, VG_DECISION_MEASURE);
        assert_ptr_equal(info.plan, cand[(3 + (size_t)offset) % ncand]);
        vgtest_assert_near(info.measured_us, 1.0, 0.0);
        assert_int_equal(atomic_load(&s.calls), (int)ncand);
        assert_int_equal(measured_total(dev), 1);

        info = gemm_ok(dev, &a);
        assert_int_equal(info.decision, VG_DECISION_REUSE);
        assert_ptr_equal(info.plan, cand[(3 + (size_t)offset) % ncand]);
        assert_int_equal(atomic_load(&s.calls), (int)ncand);
        assert_int_equal(measured_total(dev), 1);
        layer_close(&l);
        vg_device_close(dev);
    }
}

/* Every row count is its own shape: each one measured once, with its own
 * winner. */
static void each_rows_value_is_a_shape(void **state)
{
    (void)state;
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, N, K, 1, 20);
    for (int32_t m = 1; m <= 20; m++) {
        vg_gemm_args a = layer_call(&l, m);
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.decision, VG_DECISION_MEASURE);
        assert_ptr_equal(info.plan, script_winner(&s, VG_FAMILY_AWQ, VG_PATH_DENSE, m));
    }
    assert_int_equal(measured_total(dev), 20);
    for (int32_t m = 1; m <= 20; m++) {
        vg_gemm_args a = layer_call(&l, m);
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.decision, VG_DECISION_REUSE);
        assert_ptr_equal(info.plan, script_winner(&s, VG_FAMILY_AWQ, VG_PATH_DENSE, m));
    }
    assert_int_equal(measured_total(dev), 20);
    layer_close(&l);
    vg_device_close(dev);
}

/* Beyond the bucket range (rows > VG_TUNE_MAX_BUCKET_ROWS, dense or per
 * group): the heuristic, never a measurement.  Just above the exact limits
 * (dense M > 64, > 128 rows per group) the call is measured in its bucket.
 * Small N and K keep the 16385-row calls cheap. */
static void beyond_limits_is_heuristic(void **state)
{
    (void)state;
    enum { EDGE_N = 32, EDGE_K = 32 };
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    test_layer d, g;
    layer_open(&d, dev, VG_FAMILY_FP16, VG_PATH_DENSE, EDGE_N, EDGE_K, 1,
               VG_TUNE_MAX_BUCKET_ROWS + 1);
    layer_open(&g, dev, VG_FAMILY_FP8, VG_PATH_GROUPED, EDGE_N, EDGE_K, 2,
               VG_TUNE_MAX_BUCKET_ROWS + 1);

    vg_gemm_args a = layer_call(&d, VG_TUNE_MAX_DENSE_M);
    assert_int_equal(gemm_ok(dev, &a).decision, VG_DECISION_MEASURE);
    a = layer_call(&d, VG_TUNE_MAX_DENSE_M + 1);
    assert_int_equal(gemm_ok(dev, &a).decision, VG_DECISION_MEASURE);
    a = layer_call(&d, VG_TUNE_MAX_BUCKET_ROWS);
    assert_int_equal(gemm_ok(dev, &a).decision, VG_DECISION_MEASURE);
    a = layer_call(&d, VG_TUNE_MAX_BUCKET_ROWS + 1);
    vg_dispatch_info info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_string_equal(info.why, "over the tuning limit");
    assert_ptr_equal(info.plan, vg_cpu_heuristic(VG_FAMILY_FP16, VG_PATH_DENSE,
                                                 VG_TUNE_MAX_BUCKET_ROWS + 1, EDGE_N, EDGE_K, NULL));

    a = layer_call(&g, VG_TUNE_MAX_GROUP_TOKENS);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_int_equal(info.path, VG_PATH_MOE);
    a = layer_call(&g, VG_TUNE_MAX_GROUP_TOKENS + 1);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_int_equal(info.path, VG_PATH_MOE);
    a = layer_call(&g, VG_TUNE_MAX_BUCKET_ROWS + 1);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_int_equal(info.path, VG_PATH_MOE);
    assert_ptr_equal(info.plan, vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_MOE,
                                                 VG_TUNE_MAX_BUCKET_ROWS + 1, EDGE_N, EDGE_K, NULL));
    assert_int_equal(measured_total(dev), 5);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

/* Above the exact limits one measurement serves a power-of-two bucket:
 * M=100 is measured (the 128 bucket, timed on the call's own 100 rows),
 * M=120, 65 and 128 reuse its plan without timing anything, M=129 is the
 * next bucket; at and under the limit every M stays its own shape. */
static void bucket_measures_then_reuses(void **state)
{
    (void)state;
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    test_layer l, g;
    layer_open(&l, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, N, K, 1, 300);
    layer_open(&g, dev, VG_FAMILY_FP8, VG_PATH_GROUPED, N, K, 2, 300);

    const vg_plan *won = expect_call(dev, &l, 100, VG_DECISION_MEASURE).plan;
    assert_ptr_equal(won, script_winner(&s, VG_FAMILY_AWQ, VG_PATH_DENSE, 100));
    int timed = atomic_load(&s.calls);
    assert_true(timed >= 2);
    const int32_t same_bucket[] = {120, 65, 128, 100};
    expect_reused(dev, &l, same_bucket, sizeof same_bucket / sizeof same_bucket[0], won);
    assert_string_equal(expect_call(dev, &l, 127, VG_DECISION_REUSE).why, "cached");
    assert_int_equal(atomic_load(&s.calls), timed);
    assert_int_equal(measured_total(dev), 1);

    assert_ptr_equal(expect_call(dev, &l, 129, VG_DECISION_MEASURE).plan,
                     script_winner(&s, VG_FAMILY_AWQ, VG_PATH_DENSE, 129));
    expect_call(dev, &l, 256, VG_DECISION_REUSE);
    expect_call(dev, &l, VG_TUNE_MAX_DENSE_M, VG_DECISION_MEASURE);
    expect_call(dev, &l, VG_TUNE_MAX_DENSE_M - 1, VG_DECISION_MEASURE);
    assert_int_equal(measured_total(dev), 4);

    /* Per group (grouped, rerouted to moe): 129..256 rows share the 256
     * bucket. */
    assert_int_equal(expect_call(dev, &g, 200, VG_DECISION_MEASURE).path, VG_PATH_MOE);
    assert_ptr_equal(expect_call(dev, &g, 129, VG_DECISION_REUSE).plan,
                     script_winner(&s, VG_FAMILY_FP8, VG_PATH_MOE, 200));
    expect_call(dev, &g, 257, VG_DECISION_MEASURE);
    assert_int_equal(measured_total(dev), 6);
    layer_close(&l);
    layer_close(&g);
    vg_device_close(dev);
}

/* fp8_tune_small_shapes=false: heuristic, nothing timed. */
static void tuning_off_is_heuristic(void **state)
{
    (void)state;
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    vg_config *cfg = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":false}}}");
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_MXFP4, VG_PATH_DENSE, N, K, 1, 4);
    assert_int_equal(vg_policy_enter(dev, cfg), VG_OK);
    vg_gemm_args a = layer_call(&l, 4);
    vg_dispatch_info info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_string_equal(info.why, "tuning off");
    assert_ptr_equal(info.plan, vg_cpu_heuristic(VG_FAMILY_MXFP4, VG_PATH_DENSE, 4, N, K, NULL));
    assert_int_equal(atomic_load(&s.calls), 0);
    assert_int_equal(vg_policy_leave(), VG_OK);
    layer_close(&l);
    vg_config_free(cfg);
    vg_device_close(dev);
}

/* While the stream captures: no measurement; the next larger measured
 * shape when there is one, else the heuristic; the trace says why. */
static void capture_refuses_measure(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char trace[600];
    snprintf(trace, sizeof trace, "%s/trace", dir);
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    assert_int_equal(vg_trace_set(dev, trace), VG_OK);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_NVFP4, VG_PATH_DENSE, N, K, 1, 8);

    vg_gemm_args a = layer_call(&l, 6);
    vg_dispatch_info measured = gemm_ok(dev, &a);   /* M=6 measured, before capture */
    assert_int_equal(measured.decision, VG_DECISION_MEASURE);
    int calls = atomic_load(&s.calls);

    assert_int_equal(vg_device_test_set_capturing(dev, 1), VG_OK);
    a = layer_call(&l, 2);
    vg_dispatch_info info = gemm_ok(dev, &a);       /* under 6: reuse M=6's plan */
    assert_int_equal(info.decision, VG_DECISION_REUSE);
    assert_string_equal(info.why, "capturing");
    assert_ptr_equal(info.plan, measured.plan);
    a = layer_call(&l, 7);
    info = gemm_ok(dev, &a);                        /* above every measured: heuristic */
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_string_equal(info.why, "capturing");
    assert_ptr_equal(info.plan, vg_cpu_heuristic(VG_FAMILY_NVFP4, VG_PATH_DENSE, 7, N, K, NULL));
    assert_int_equal(atomic_load(&s.calls), calls);
    assert_int_equal(measured_total(dev), 1);

    assert_int_equal(vg_device_test_set_capturing(dev, 0), VG_OK);
    info = gemm_ok(dev, &a);                        /* after capture: measured */
    assert_int_equal(info.decision, VG_DECISION_MEASURE);

    char *text = slurp(trace);
    assert_non_null(strstr(text, "vg-trace-note why=capturing op=gemm family=nvfp4 path=dense "
                                 "m=2 n=64 k=128 groups=1 policy="));
    assert_non_null(strstr(text, "vg-trace-note why=capturing op=gemm family=nvfp4 path=dense "
                                 "m=7 n=64 k=128"));
    free(text);
    layer_close(&l);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* The value of plan `id` on the trace's candidate line for it, after
 * "plan=<id> us=": its median, or -1 when no such line. */
static double candidate_us(const char *text, const char *id, char *timer, size_t timer_size)
{
    char key[200];
    snprintf(key, sizeof key, " plan=%s us=", id);
    const char *hit = strstr(text, key);
    if (!hit)
        return -1.0;
    double us = -1.0;
    char fmt[40];
    snprintf(fmt, sizeof fmt, "%%lf timer=%%%zus", timer_size - 1);
    if (sscanf(hit + strlen(key), fmt, &us, timer) != 2)
        return -1.0;
    return us;
}

/* The trace's text after dev, tracing to trace, measured an fp8 dense
 * layer (left open in l) at 3 rows; info: the call's decision. */
static char *measure_traced(vg_device *dev, const char *trace, test_layer *l, vg_dispatch_info *info)
{
    assert_int_equal(vg_trace_set(dev, trace), VG_OK);
    layer_open(l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 8);
    vg_gemm_args a = layer_call(l, 3);
    *info = gemm_ok(dev, &a);
    assert_int_equal(info->decision, VG_DECISION_MEASURE);
    assert_int_equal(vg_device_synchronize(dev, NULL), VG_OK);
    char *text = slurp(trace);
    assert_non_null(text);
    return text;
}

/* A measurement writes one vg-trace-candidate line per plan it timed,
 * before its decision line, with the time the timer gave and which timer:
 * the scripted one's exact values, then the host clock's, whose smallest is
 * the plan the decision line names. */
static void trace_names_every_candidate(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char trace[600];
    const vg_plan *cand[64];
    size_t ncand = cpu_candidates(VG_FAMILY_FP8, VG_PATH_DENSE, 3, cand, 64);
    assert_true(ncand >= 2);
    for (int scripted = 1; scripted >= 0; scripted--) {
        snprintf(trace, sizeof trace, "%s/trace%d", dir, scripted);
        script s = {.stride = 1, .offset = 1};
        vg_device *dev = open_cpu(scripted ? &s : NULL);
        test_layer l;
        vg_dispatch_info info;
        char *text = measure_traced(dev, trace, &l, &info);
        const char *decision = strstr(text, "vg-trace op=gemm");
        assert_non_null(decision);
        size_t lines = 0;
        for (const char *q = text; (q = strstr(q, "vg-trace-candidate ")) != NULL; q++) {
            assert_true(q < decision);
            static const char head[] = "vg-trace-candidate op=gemm family=fp8 path=dense m=3 "
                                       "n=64 k=128 groups=1 policy=";
            assert_int_equal(strncmp(q, head, sizeof head - 1), 0);
            lines++;
        }
        assert_int_equal(lines, ncand);
        double fastest_us = INFINITY, winner_us = -1.0;
        for (size_t i = 0; i < ncand; i++) {
            char timer[16] = "";
            double us = candidate_us(text, cand[i]->id, timer, sizeof timer);
            if (scripted) {
                /* script_timer: 1.0 for its winner, 5 + table index else */
                double want = cand[i] == script_winner(&s, VG_FAMILY_FP8, VG_PATH_DENSE, 3) ? 1.0 : -1.0;
                for (size_t t = 0; want < 0 && t < vg_cpu_plan_count(); t++)
                    if (vg_cpu_plan_at(t) == cand[i])
                        want = 5.0 + (double)t;
                vgtest_assert_near(us, want, 1e-9);
                assert_string_equal(timer, "scripted");
            } else {
                assert_true(us > 0.0 && isfinite(us));
                assert_string_equal(timer, "host");
            }
            fastest_us = fmin(fastest_us, us);
            if (cand[i] == info.plan)
                winner_us = us;
        }
        /* The winner is a smallest time on the trace (the trace rounds to
         * the nanosecond, so a tie there may hide a finer difference). */
        vgtest_assert_near(winner_us, fastest_us, 0.0);
        char named[200];
        snprintf(named, sizeof named, "decision=measure plan=%s ", info.plan->id);
        assert_non_null(strstr(decision, named));
        free(text);
        layer_close(&l);
        vg_device_close(dev);
    }
    vgtest_rmtree(dir);
    free(dir);
}

/* A timer that gives the first candidate NaN, the second -1 and the rest
 * 2 us (user: the candidates). */
static double unusable_first_two(const vg_plan *plan, const vg_gemm_args *args, void *user)
{
    (void)args;
    const vg_plan *const *cand = user;
    return plan == cand[0] ? NAN : plan == cand[1] ? -1.0 : 2.0;
}

/* A time the measurement cannot rank (NaN, negative) reads us=none on the
 * trace, and the winner is the first of the others. */
static void trace_marks_unranked_candidates(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char trace[600];
    snprintf(trace, sizeof trace, "%s/trace", dir);
    const vg_plan *cand[64];
    size_t ncand = cpu_candidates(VG_FAMILY_FP8, VG_PATH_DENSE, 3, cand, 64);
    assert_true(ncand >= 3);
    vg_device *dev = open_cpu(NULL);
    assert_int_equal(vg_device_set_timer(dev, unusable_first_two, cand), VG_OK);
    test_layer l;
    vg_dispatch_info info;
    char *text = measure_traced(dev, trace, &l, &info);
    assert_ptr_equal(info.plan, cand[2]);
    char want[300];
    for (int i = 0; i < 2; i++) {
        snprintf(want, sizeof want, " plan=%s us=none status=0 why=the scripted timer gave %s\n",
                 cand[i]->id, i == 0 ? "nan" : "-1");
        assert_non_null(strstr(text, want));
    }
    snprintf(want, sizeof want, " plan=%s us=2.000 timer=scripted copies=0\n", cand[2]->id);
    assert_non_null(strstr(text, want));
    free(text);
    layer_close(&l);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

static double always_infinite(const vg_plan *plan, const vg_gemm_args *args, void *user)
{
    (void)plan;
    (void)args;
    (void)user;
    return INFINITY;
}

/* +inf is no time, as NaN is: it reads us=none and is not ranked, so a
 * measurement whose every candidate timed +inf takes the heuristic, as a
 * coordinated round does. */
static void infinite_times_are_not_ranked(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char trace[600];
    snprintf(trace, sizeof trace, "%s/trace", dir);
    vg_device *dev = open_cpu(NULL);
    assert_int_equal(vg_device_set_timer(dev, always_infinite, NULL), VG_OK);
    assert_int_equal(vg_trace_set(dev, trace), VG_OK);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 8);
    vg_gemm_args a = layer_call(&l, 3);
    vg_dispatch_info info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_string_equal(info.why, "no candidate could be timed");
    assert_int_equal(vg_device_synchronize(dev, NULL), VG_OK);
    char *text = slurp(trace);
    assert_non_null(text);
    assert_non_null(strstr(text, " us=none status=0 why=the scripted timer gave inf\n"));
    assert_null(strstr(text, " us=inf"));
    free(text);
    layer_close(&l);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* fp8_grouped_bmm_decode on: grouped runs as one grouped launch, on the
 * layer's offsets rows up to 16 tokens per group and as moe (the call's own
 * offsets) above; off: always the loop. */
static void grouped_switch(void **state)
{
    (void)state;
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_GROUPED, N, K, 4, 18);
    vg_config *on = parse_cfg(CFG_ENGINE);
    vg_config *off = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":false}}}");

    assert_int_equal(vg_policy_enter(dev, on), VG_OK);
    for (int32_t t = 1; t <= 18; t++) {
        vg_gemm_args a = layer_call(&l, t);
        vg_dispatch_info info = gemm_ok(dev, &a);
        vg_path want = t <= GROUPED_DECODE_MAX_TOKENS ? VG_PATH_GROUPED : VG_PATH_MOE;
        assert_int_equal(info.path, want);
        assert_int_equal(info.plan->path, VG_PATH_GROUPED);
        assert_ptr_equal(info.plan, script_winner(&s, VG_FAMILY_FP8, want, t));
    }
    vg_policy_leave();

    assert_int_equal(vg_policy_enter(dev, off), VG_OK);
    for (int32_t t = 1; t <= 18; t++) {
        vg_gemm_args a = layer_call(&l, t);
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.path, VG_PATH_LOOP);
        assert_int_equal(info.plan->path, VG_PATH_DENSE);
    }
    vg_policy_leave();
    vg_config_free(on);
    vg_config_free(off);
    layer_close(&l);
    vg_device_close(dev);
}

/* A rule that weighs the routing, as the CUDA rule does for moe: the cpu
 * rule, but uneven_plan for a call whose groups do not all have the
 * largest group's rows. */
static const vg_plan *uneven_plan;
static const vg_plan *routing_row(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                                  const vg_gemm_args *call)
{
    (void)f, (void)path, (void)n, (void)k;
    int32_t busy = 0;
    return call && call->offsets_host && vg_gemm_row_tiles(call, 1, &busy) != busy * rows
               ? uneven_plan
               : NULL;
}
static const vg_plan *routing_rule(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                                   const vg_gemm_args *call)
{
    const vg_plan *p = routing_row(f, path, rows, n, k, call);
    return p ? p : vg_cpu_heuristic(f, path, rows, n, k, call);
}

/* The cache key holds the largest group's rows only, so where the rule
 * picks another plan for a call's own routing than for every group at those
 * rows, the rule decides (why "uneven groups"), neither reusing what an
 * even call of the bucket measured nor measuring for it; even calls still
 * measure and reuse.  A rule blind to the routing (the cpu rule) changes
 * nothing. */
static void uneven_groups_take_the_rule(void **state)
{
    (void)state;
    enum { G = 4, T = 8 };
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    const vg_plan *cand[64];
    size_t n = cpu_candidates(VG_FAMILY_FP8, VG_PATH_GROUPED, T, cand, 64);
    assert_true(n >= 2);
    const vg_plan *winner = script_winner(&s, VG_FAMILY_FP8, VG_PATH_GROUPED, T);
    uneven_plan = cand[0] == winner ? cand[1] : cand[0];
    static vg_backend_ops weighs_routing;
    const vg_backend_ops *cpu_ops = dev->ops;
    weighs_routing = *dev->ops;
    weighs_routing.heuristic = routing_rule;
    weighs_routing.routing_plan = routing_row;
    dev->ops = &weighs_routing;

    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_GROUPED, N, K, G, T);
    vg_dispatch_info info = expect_call(dev, &l, T, VG_DECISION_MEASURE);
    assert_ptr_equal(info.plan, winner);
    const uint64_t measured = measured_total(dev);

    /* rows 8, 2, 0, 3: the same largest group, so the same cache key */
    static const int32_t uneven[G + 1] = {0, 8, 10, 10, 13};
    vg_gemm_args a = layer_call(&l, T);
    a.m = uneven[G];
    a.offsets = uneven;   /* backend memory is host memory on cpu */
    a.offsets_host = uneven;
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_string_equal(info.why, "uneven groups: the rule's plan for this routing");
    assert_ptr_equal(info.plan, uneven_plan);
    assert_int_equal(measured_total(dev), measured);

    assert_ptr_equal(expect_call(dev, &l, T, VG_DECISION_REUSE).plan, winner);
    dev->ops = cpu_ops;
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_REUSE);
    assert_ptr_equal(info.plan, winner);
    assert_int_equal(measured_total(dev), measured);
    layer_close(&l);
    vg_device_close(dev);
}

/* The call really runs: a real quantized weight through vg_gemm on the
 * grouped path (rerouted or not) matches the FP64 reference. */
static void grouped_result_matches_reference(void **state)
{
    (void)state;
    enum { G = 3, T = 5, M = G * T };
    float *w = malloc(sizeof(float) * G * N * K), *xf = malloc(sizeof(float) * M * K);
    uint16_t *x = malloc(sizeof(uint16_t) * M * K);
    float *y = malloc(sizeof(float) * M * N), *wd = malloc(sizeof(float) * G * N * K);
    double *ref = malloc(sizeof(double) * M * N);
    unsigned seed = 12345;
    for (int i = 0; i < G * N * K; i++) {
        seed = seed * 1103515245u + 12345u;
        w[i] = ((float)(seed >> 16 & 0x7fff) / 32768.0f - 0.5f);
    }
    for (int i = 0; i < M * K; i++) {
        x[i] = (uint16_t)(0x3000 + (i * 37 % 512));   /* FP16 in [0.125, 0.25) */
        int e = (x[i] >> 10) & 31, mant = x[i] & 1023;
        xf[i] = ldexpf(1.0f + (float)mant / 1024.0f, e - 15);
    }
    vg_qweight q;
    assert_int_equal(vg_quantize(VG_FAMILY_FP8, w, G, N, K, &q), VG_OK);
    assert_int_equal(vg_dequantize(&q.w, wd), VG_OK);
    int32_t offsets[G + 1];
    for (int g = 0; g <= G; g++)
        offsets[g] = g * T;
    assert_int_equal(vg_reference_gemm(VG_PATH_GROUPED, M, N, K, G, offsets, xf, wd, ref),
                     VG_OK);

    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    const char *cfgs[] = {CFG_ENGINE,
                          "{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":false}}}"};
    for (int c = 0; c < 2; c++) {
        vg_config *cfg = parse_cfg(cfgs[c]);
        assert_int_equal(vg_policy_enter(dev, cfg), VG_OK);
        vg_gemm_args a = {.path = VG_PATH_GROUPED, .m = M, .w = q.w, .offsets = offsets,
                          .offsets_host = offsets, .x = x, .y = y, .y_dtype = VG_DTYPE_F32};
        for (int i = 0; i < M * N; i++)
            y[i] = NAN;
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.path, c == 0 ? VG_PATH_GROUPED : VG_PATH_LOOP);
        double norm = 0;
        for (int i = 0; i < M * N; i++) {
            vgtest_assert_near(y[i], ref[i], 1e-3 + 1e-3 * fabs(ref[i]));
            norm += ref[i] * ref[i];
        }
        assert_true(norm > 0);
        vg_policy_leave();
        vg_config_free(cfg);
    }
    vg_device_close(dev);
    vg_qweight_free(&q);
    free(w); free(xf); free(x); free(y); free(wd); free(ref);
}

static void unknown_operator_and_bad_args(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 2);
    vg_gemm_args a = layer_call(&l, 1);
    assert_int_equal(vg_gemm(dev, "not_an_op", &a, NULL), VG_ERR_NOT_FOUND);
    assert_non_null(strstr(vg_last_error(), "not_an_op"));
    a.x = NULL;
    assert_int_equal(vg_gemm(dev, "gemm", &a, NULL), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_gemm(NULL, "gemm", &a, NULL), VG_ERR_INVALID_ARG);
    assert_int_equal(measured_total(dev), 0);
    layer_close(&l);
    vg_device_close(dev);
}

static void plans_and_with_plan(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    const vg_plan *got[64], *want[64];
    size_t count = 0;
    assert_int_equal(vg_device_plans(dev, VG_FAMILY_FP8, VG_PATH_GROUPED, 4, got, 64, &count),
                     VG_OK);
    /* vg_device_plans lists every plan that applies, offered at these rows
     * or not (golden --plan all runs them all) */
    size_t n = 0;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        if (vg_plan_applies(vg_cpu_plan_at(i), VG_FAMILY_FP8, VG_PATH_GROUPED, 4))
            want[n++] = vg_cpu_plan_at(i);
    assert_true(n > cpu_candidates(VG_FAMILY_FP8, VG_PATH_GROUPED, 4, got, 64));
    assert_int_equal(vg_device_plans(dev, VG_FAMILY_FP8, VG_PATH_GROUPED, 4, got, 64, &count),
                     VG_OK);
    assert_int_equal(count, n);
    for (size_t i = 0; i < n; i++)
        assert_ptr_equal(got[i], want[i]);

    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_GROUPED, N, K, 2, 4);
    vg_gemm_args a = layer_call(&l, 4);
    assert_int_equal(vg_gemm_with_plan(dev, want[0]->id, &a), VG_OK);
    assert_int_equal(vg_gemm_with_plan(dev, "cpu.no.such.plan", &a), VG_ERR_NOT_FOUND);
    assert_non_null(strstr(vg_last_error(), "cpu.no.such.plan"));
    const vg_plan *dense = NULL;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        if (vg_cpu_plan_at(i)->path == VG_PATH_DENSE)
            dense = vg_cpu_plan_at(i);
    assert_int_equal(vg_gemm_with_plan(dev, dense->id, &a), VG_ERR_UNSUPPORTED);
    layer_close(&l);
    vg_device_close(dev);
}

/* The device workspace serves calls without one; it grows outside capture
 * and refuses to grow while capturing. */
static void device_workspace(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    const vg_plan *sk = NULL;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++) {
        const vg_plan *p = vg_cpu_plan_at(i);
        if (p->path == VG_PATH_DENSE && p->split_k > 1 && (!p->max_rows || p->max_rows >= 16))
            sk = p;
    }
    assert_non_null(sk);
    /* split_k * 16 rows * n floats > 16 MiB */
    int32_t n = (int32_t)((17u << 20) / (4u * 16u * (unsigned)sk->split_k)) + 64;
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP16, VG_PATH_DENSE, n, 8, 1, 16);
    vg_gemm_args a = layer_call(&l, 16);
    size_t need = 0;
    assert_int_equal(vg_cpu_workspace_bytes(sk, &a, &need), VG_OK);
    assert_true(need > dev->ws_bytes);
    assert_int_equal(vg_device_test_set_capturing(dev, 1), VG_OK);
    assert_int_equal(vg_gemm_with_plan(dev, sk->id, &a), VG_ERR_STATE);
    assert_non_null(strstr(vg_last_error(), "capturing"));
    assert_int_equal(vg_device_test_set_capturing(dev, 0), VG_OK);
    assert_int_equal(vg_gemm_with_plan(dev, sk->id, &a), VG_OK);
    assert_true(dev->ws_bytes >= need);
    size_t bytes = 0;
    assert_int_equal(vg_gemm_workspace_bytes(dev, &a, &bytes), VG_OK);
    assert_true(bytes >= need);
    layer_close(&l);
    vg_device_close(dev);
}

/* The dequantize-once plan (VG_KIND_DEQUANT_BLAS) and the policy's cap on
 * its workspace, dequant_workspace_max_mib: the cap hides the plan from
 * vg_gemm_workspace_bytes, from a measurement (its candidate line says why)
 * and from the heuristic (which takes the native rule's plan, and a
 * vg-trace-note says why), so a capped engine never needs the FP16 copy. */
static void dequant_workspace_cap(void **state)
{
    (void)state;
    enum { ROWS = 300, DN = 64, DK = 4096 }; /* the copy: 64 x 4096 x 2 = 0.5 MiB */
    const vg_plan *dq = cpu_dense_dq_plan();
    assert_non_null(dq);
    char *dir = vgtest_mkdtemp();
    char trace[600];
    snprintf(trace, sizeof trace, "%s/trace", dir);
    script s = {.forced = dq};   /* the dequantize-once plan is the fastest when timed */
    vg_device *dev = open_cpu(&s);
    assert_int_equal(vg_trace_set(dev, trace), VG_OK);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, DN, DK, 1, ROWS);
    vg_gemm_args a = layer_call(&l, ROWS);

    vg_config *off = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":false}}}");
    vg_config *off_capped = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":"
                                      "false,\"dequant_workspace_max_mib\":0}}}");
    vg_config *capped = parse_cfg("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":0}}}");
    vg_config *roomy = parse_cfg("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":1}}}");
    size_t bytes = 0;

    /* no cap: the heuristic takes the copy at these rows, the workspace counts it */
    assert_int_equal(vg_policy_enter(dev, off), VG_OK);
    vg_dispatch_info info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_ptr_equal(info.plan, dq);
    assert_int_equal(vg_gemm_workspace_bytes(dev, &a, &bytes), VG_OK);
    assert_true(bytes >= (size_t)DN * DK * 2);
    assert_int_equal(vg_policy_leave(), VG_OK);

    /* capped at 0 MiB: the native rule's plan, and the trace says why */
    assert_int_equal(vg_policy_enter(dev, off_capped), VG_OK);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_int_equal(info.plan->kind, VG_KIND_TILED);
    assert_int_equal(vg_gemm_workspace_bytes(dev, &a, &bytes), VG_OK);
    assert_true(bytes < (size_t)DN * DK * 2);
    assert_int_equal(vg_policy_leave(), VG_OK);

    /* measuring under the cap: the plan the timer favours is refused */
    assert_int_equal(vg_policy_enter(dev, capped), VG_OK);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_true(info.plan != dq);
    assert_int_equal(vg_policy_leave(), VG_OK);
    /* ... and with room for the copy, it wins */
    assert_int_equal(vg_policy_enter(dev, roomy), VG_OK);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_ptr_equal(info.plan, dq);
    assert_int_equal(vg_policy_leave(), VG_OK);

    char *text = slurp(trace);
    assert_non_null(strstr(text, "vg-trace-note why=dequant+cublas workspace over "
                                 "dequant_workspace_max_mib op=gemm family=fp8 path=dense m=300"));
    char want[200];
    snprintf(want, sizeof want, "plan=%s us=none status=%d why=%s needs 0.5 MiB of workspace, "
             "over dequant_workspace_max_mib=0", dq->id, (int)VG_ERR_LIMIT, dq->id);
    assert_non_null(strstr(text, want));
    free(text);
    vg_config_free(off);
    vg_config_free(off_capped);
    vg_config_free(capped);
    vg_config_free(roomy);
    layer_close(&l);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

static void decision_names(void **state)
{
    (void)state;
    assert_string_equal(vg_decision_name(VG_DECISION_MEASURE), "measure");
    assert_string_equal(vg_decision_name(VG_DECISION_REUSE), "reuse");
    assert_string_equal(vg_decision_name(VG_DECISION_HEURISTIC), "heuristic");
}

/* vg_gemm_workspace_bytes of a grouped call does not depend on the policy
 * it is asked under: a caller sizes one workspace and calls under policies
 * with fp8_grouped_bmm_decode on (grouped, or moe above 16 tokens per
 * group) and off (loop), and it covers every plan either may run.  On the
 * CPU and on CUDA (skipped without a device), where the grouped split-K
 * plans need more than the loop's, so a count of the loop alone falls
 * short. */
static void workspace_same_under_either_policy_on(const char *backend)
{
    vg_config *off = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":false}}}");
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open(backend, 0, &dev), VG_OK);
    static const int32_t tokens[] = {1, 4, 16, 17, 64};
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        test_layer l;
        layer_open(&l, dev, (vg_family)f, VG_PATH_GROUPED, 1024, 4096, 8, 64);
        for (size_t i = 0; i < sizeof tokens / sizeof tokens[0]; i++) {
            vg_gemm_args a = layer_call(&l, tokens[i]);
            size_t on_bytes = 0, off_bytes = 0;
            assert_int_equal(vg_gemm_workspace_bytes(dev, &a, &on_bytes), VG_OK);
            assert_int_equal(vg_policy_enter(dev, off), VG_OK);
            assert_int_equal(vg_gemm_workspace_bytes(dev, &a, &off_bytes), VG_OK);
            vg_policy_leave();
            assert_int_equal(on_bytes, off_bytes);
            /* every plan either policy may run fits in it */
            const vg_path paths[] = {tokens[i] > GROUPED_DECODE_MAX_TOKENS ? VG_PATH_MOE
                                                                          : VG_PATH_GROUPED,
                                     VG_PATH_LOOP};
            for (int p = 0; p < 2; p++) {
                const vg_plan *plans[256];
                size_t n = 0;
                assert_int_equal(vg_device_plans(dev, (vg_family)f, paths[p], tokens[i], plans,
                                                 256, &n), VG_OK);
                vg_gemm_args pa = a;
                pa.path = paths[p];
                for (size_t j = 0; j < n && j < 256; j++) {
                    size_t need = 0;
                    if (!vg_plan_offered(plans[j], (vg_family)f, paths[p], tokens[i]) ||
                        !vg_device_plan_offered(dev, plans[j], NULL))
                        continue;
                    assert_int_equal(vg_gemm_plan_workspace_bytes(dev, plans[j], &pa, &need), VG_OK);
                    if (need > on_bytes)
                        print_error("%s %s t=%d: plan %s needs %zu, counted %zu\n",
                                    vg_family_name((vg_family)f), vg_path_name(paths[p]),
                                    (int)tokens[i], plans[j]->id, need, on_bytes);
                    assert_true(need <= on_bytes);
                }
            }
        }
        layer_close(&l);
    }
    vg_device_close(dev);
    vg_config_free(off);
}

static void workspace_same_under_either_policy_cpu(void **state)
{
    (void)state;
    workspace_same_under_either_policy_on("cpu");
}

static void workspace_same_under_either_policy_cuda(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    workspace_same_under_either_policy_on("cuda");
}

static void cuda_open_fails_cleanly_without_device(void **state)
{
    (void)state;
    if (vgtest_have_cuda()) {
        vgtest_skip("a CUDA device is present");
    }
    vg_device *dev = (vg_device *)0x1;
    assert_int_equal(vg_device_open("cuda", 0, &dev), VG_ERR_NO_DEVICE);
    assert_null(dev);
    assert_int_equal(vg_device_open("tpu", 0, &dev), VG_ERR_INVALID_ARG);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(measure_then_reuse),
        cmocka_unit_test(each_rows_value_is_a_shape),
        cmocka_unit_test(beyond_limits_is_heuristic),
        cmocka_unit_test(bucket_measures_then_reuses),
        cmocka_unit_test(tuning_off_is_heuristic),
        cmocka_unit_test(capture_refuses_measure),
        cmocka_unit_test(trace_names_every_candidate),
        cmocka_unit_test(trace_marks_unranked_candidates),
        cmocka_unit_test(infinite_times_are_not_ranked),
        cmocka_unit_test(grouped_switch),
        cmocka_unit_test(uneven_groups_take_the_rule),
        cmocka_unit_test(grouped_result_matches_reference),
        cmocka_unit_test(unknown_operator_and_bad_args),
        cmocka_unit_test(plans_and_with_plan),
        cmocka_unit_test(device_workspace),
        cmocka_unit_test(dequant_workspace_cap),
        cmocka_unit_test(decision_names),
        cmocka_unit_test(workspace_same_under_either_policy_cpu),
        cmocka_unit_test(workspace_same_under_either_policy_cuda),
        cmocka_unit_test(cuda_open_fails_cleanly_without_device),
    };
    return VGTEST_MAIN("decision", tests);
}
