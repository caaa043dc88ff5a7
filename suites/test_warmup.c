/*
 * Warm-up and the policy partition.
 *
 * The old bug, shown and caught: a warm-up that ran outside the engine's
 * context measured into `default`; serving, inside the engine's policy,
 * then measured every shape again on live requests.  vg_warmup() enters
 * the engine's policy itself, so serving after it only reuses.
 */
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

typedef struct serving {
    test_layer grouped, dense;
} serving;

static void serving_open(serving *s, vg_device *dev)
{
    layer_open(&s->grouped, dev, VG_FAMILY_FP8, VG_PATH_GROUPED, N, K, G, 32);
    layer_open(&s->dense, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, N, K, 1, 80);
}

static void serving_close(serving *s)
{
    layer_close(&s->grouped);
    layer_close(&s->dense);
}

/* Serving calls of every warm-up shape; counts each decision. */
static void serve_decode(vg_device *dev, serving *s, int counts[3], uint64_t want_policy)
{
    for (int32_t t = 1; t <= GROUPED_DECODE_MAX_TOKENS; t++) {
        vg_gemm_args a = layer_call(&s->grouped, t);
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_true(info.policy_hash == want_policy);
        counts[info.decision]++;
    }
    for (int32_t m = 1; m <= VG_TUNE_MAX_DENSE_M; m++) {
        vg_gemm_args a = layer_call(&s->dense, m);
        vg_dispatch_info info = gemm_ok(dev, &a);
        counts[info.decision]++;
    }
}

/* The fix: warm-up inside the engine's policy; serving only reuses. */
static void warmup_in_engine_policy_then_serving_reuses(void **state)
{
    (void)state;
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_config *cfg = parse_cfg(CFG_ENGINE);
    uint64_t h;
    vg_config_policy_hash(cfg, &h);
    vg_warmup_report r;
    assert_int_equal(vg_warmup(dev, cfg, layers, NLAYERS, &r), VG_OK);
    assert_int_equal(r.shapes_measured, WARM_SHAPES);
    assert_int_equal(r.calls, WARM_SHAPES);
    assert_int_equal(r.frozen, 0);
    assert_true(vg_policy_current(dev)->hash == default_hash());   /* left again */

    serving s;
    serving_open(&s, dev);
    vg_policy_enter(dev, cfg);
    int counts[3] = {0};
    serve_decode(dev, &s, counts, h);
    vg_policy_leave();
    assert_int_equal(counts[VG_DECISION_REUSE], WARM_SHAPES);
    assert_int_equal(counts[VG_DECISION_MEASURE], 0);
    assert_int_equal(measured_total(dev), WARM_SHAPES);
    serving_close(&s);
    vg_config_free(cfg);
    vg_device_close(dev);
}

/* The old bug: the same warm-up shapes run outside any engine context land
 * in `default`, and serving in the engine's policy measures them again. */
static void warmup_outside_engine_measures_into_default(void **state)
{
    (void)state;
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_config *cfg = parse_cfg(CFG_ENGINE);
    uint64_t h;
    vg_config_policy_hash(cfg, &h);
    serving s;
    serving_open(&s, dev);

    int warm[3] = {0};
    serve_decode(dev, &s, warm, default_hash());      /* the old warm-up: no policy entered */
    assert_int_equal(warm[VG_DECISION_MEASURE], WARM_SHAPES);
    assert_int_equal(measured_total(dev), WARM_SHAPES);

    vg_policy_enter(dev, cfg);
    int counts[3] = {0};
    serve_decode(dev, &s, counts, h);
    vg_policy_leave();
    /* Serving measured everything again: the bug, visible in the counts. */
    assert_int_equal(counts[VG_DECISION_MEASURE], WARM_SHAPES);
    assert_int_equal(measured_total(dev), 2 * WARM_SHAPES);
    serving_close(&s);
    vg_config_free(cfg);
    vg_device_close(dev);
}

/* Caught: vg_warmup() called from outside any engine context, or with
 * another policy entered on the thread, still measures in cfg's partition. */
static void warmup_enters_policy_itself(void **state)
{
    (void)state;
    for (int with_other = 0; with_other < 2; with_other++) {
        script sc = {.stride = 1};
        vg_device *dev = open_cpu(&sc);
        vg_config *cfg = parse_cfg(CFG_ENGINE);
        vg_config *other = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}}");
        uint64_t h;
        vg_config_policy_hash(cfg, &h);
        if (with_other)
            vg_policy_enter(dev, other);
        vg_warmup_report r;
        assert_int_equal(vg_warmup(dev, cfg, layers, NLAYERS, &r), VG_OK);
        if (with_other) {
            uint64_t ho;
            vg_config_policy_hash(other, &ho);
            assert_true(vg_policy_current(dev)->hash == ho);   /* caller's stack intact */
            vg_policy_leave();
        }
        serving s;
        serving_open(&s, dev);
        vg_policy_enter(dev, cfg);
        int counts[3] = {0};
        serve_decode(dev, &s, counts, h);
        vg_policy_leave();
        assert_int_equal(counts[VG_DECISION_MEASURE], 0);
        assert_int_equal(measured_total(dev), WARM_SHAPES);
        serving_close(&s);
        vg_config_free(cfg);
        vg_config_free(other);
        vg_device_close(dev);
    }
}

/* freeze_tuning_after_warmup: after the warm-up nothing is measured, not
 * even a new shape (a prefill tail of 20 tokens per group, run as moe). */
static void freeze_after_warmup(void **state)
{
    (void)state;
    for (int freeze = 0; freeze < 2; freeze++) {
        script sc = {.stride = 1};
        vg_device *dev = open_cpu(&sc);
        vg_config *cfg = parse_cfg(freeze ? CFG_FREEZE : CFG_ENGINE);
        vg_warmup_report r;
        assert_int_equal(vg_warmup(dev, cfg, layers, NLAYERS, &r), VG_OK);
        assert_int_equal(r.frozen, freeze);
        serving s;
        serving_open(&s, dev);
        vg_policy_enter(dev, cfg);
        vg_gemm_args a = layer_call(&s.grouped, 20);
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.path, VG_PATH_MOE);
        assert_int_equal(info.decision, freeze ? VG_DECISION_HEURISTIC : VG_DECISION_MEASURE);
        vg_policy_leave();
        vg_tuning_state ts;
        vg_device_tuning_state(dev, &ts);
        assert_int_equal(ts.frozen, freeze);
        assert_int_equal(ts.measured_total, WARM_SHAPES + (freeze ? 0 : 1));
        assert_int_equal(ts.measured_after_freeze, 0);
        if (freeze)
            assert_int_equal(ts.measured_before_freeze, WARM_SHAPES);
        serving_close(&s);
        vg_config_free(cfg);
        vg_device_close(dev);
    }
}

/* fp8_grouped_bmm_decode=false: the warm-up measures the loop path, and
 * serving's grouped decode (rerouted to loop) reuses it. */
static void warmup_with_grouped_decode_off(void **state)
{
    (void)state;
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_config *cfg = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":false}}}");
    vg_warmup_report r;
    assert_int_equal(vg_warmup(dev, cfg, layers, 1, &r), VG_OK);
    assert_int_equal(r.shapes_measured, GROUPED_DECODE_MAX_TOKENS);
    serving s;
    serving_open(&s, dev);
    vg_policy_enter(dev, cfg);
    for (int32_t t = 1; t <= GROUPED_DECODE_MAX_TOKENS; t++) {
        vg_gemm_args a = layer_call(&s.grouped, t);
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.path, VG_PATH_LOOP);
        assert_int_equal(info.decision, VG_DECISION_REUSE);
    }
    vg_policy_leave();
    serving_close(&s);
    vg_config_free(cfg);
    vg_device_close(dev);
}

/* gemm_lut_path: the first boot measures and writes the LUT; the second
 * boot imports it and measures nothing. */
static void warmup_with_lut_path(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char json[800];
    snprintf(json, sizeof json, "{\"gemm_lut_path\":\"%s/boot.lut\"}", dir);
    vg_config *cfg = parse_cfg(json);
    for (int boot = 0; boot < 2; boot++) {
        script sc = {.stride = 1};
        vg_device *dev = open_cpu(&sc);
        vg_warmup_report r;
        assert_int_equal(vg_warmup(dev, cfg, layers, NLAYERS, &r), VG_OK);
        assert_int_equal(r.shapes_measured, boot == 0 ? WARM_SHAPES : 0);
        assert_int_equal(r.calls, WARM_SHAPES);
        if (boot == 1)
            assert_int_equal(atomic_load(&sc.calls), 0);
        vg_device_close(dev);
    }
    vg_config_free(cfg);
    vgtest_rmtree(dir);
    free(dir);
}

/* With the cpu's real timer on tiny shapes: every warm-up shape measured,
 * a moe layer included, with a positive winning time. */
static void real_timer_and_moe(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    vg_layer moe = {.family = VG_FAMILY_NVFP4, .path = VG_PATH_MOE, .n = 32, .k = 32, .groups = 2};
    vg_config *cfg = parse_cfg(CFG_ENGINE);
    vg_warmup_report r;
    assert_int_equal(vg_warmup(dev, cfg, &moe, 1, &r), VG_OK);
    assert_int_equal(r.shapes_measured, GROUPED_DECODE_MAX_TOKENS);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP16, VG_PATH_DENSE, 32, 32, 1, 2);
    vg_gemm_args a = layer_call(&l, 2);
    vg_dispatch_info info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_true(info.measured_us > 0.0);
    layer_close(&l);
    vg_config_free(cfg);
    vg_device_close(dev);
}

static void bad_layers(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    vg_config *cfg = parse_cfg("{}");
    vg_layer bad = {.family = VG_FAMILY_FP8, .path = VG_PATH_GROUPED, .n = 32, .k = 32, .groups = 0};
    assert_int_equal(vg_warmup(dev, cfg, &bad, 1, NULL), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "groups"));
    vg_layer odd = {.family = VG_FAMILY_AWQ, .path = VG_PATH_DENSE, .n = 32, .k = 12, .groups = 1};
    assert_int_equal(vg_warmup(dev, cfg, &odd, 1, NULL), VG_ERR_UNSUPPORTED);
    assert_int_equal(vg_warmup(dev, NULL, &odd, 1, NULL), VG_ERR_INVALID_ARG);
    assert_true(vg_policy_current(dev)->hash == default_hash());
    vg_config_free(cfg);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(warmup_in_engine_policy_then_serving_reuses),
        cmocka_unit_test(warmup_outside_engine_measures_into_default),
        cmocka_unit_test(warmup_enters_policy_itself),
        cmocka_unit_test(freeze_after_warmup),
        cmocka_unit_test(warmup_with_grouped_decode_off),
        cmocka_unit_test(warmup_with_lut_path),
        cmocka_unit_test(real_timer_and_moe),
        cmocka_unit_test(bad_layers),
    };
    return VGTEST_MAIN("warmup", tests);
}
