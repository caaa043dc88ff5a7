/*
 * Issue 10, per-family options: the table of which families read each
 * per_family option (runtime/POLICY.md) walked option by option and family
 * by family: set for a family that reads it, it is accepted and salts that
 * family's policy hash only; set for one that does not, it is a config
 * error naming the path.  Then each option's effect on the decision.
 */
#include <inttypes.h>

#include "test_decision_util.h"

/* The table as POLICY.md documents it (not read from the code). */
static const struct {
    const char *name;
    uint32_t families;
} table[] = {
    {"tune_small_shapes", VG_ALL_FAMILIES},
    {"grouped_bmm_decode", VG_ALL_FAMILIES},
    {"tiles_within_scale_block", VG_FAMILY_BIT(VG_FAMILY_FP8)},
};
#define NOPTS (sizeof table / sizeof table[0])

/* The hash of the all-defaults config (POLICY.md). */
#define DEFAULT_HASH 0xc1904c564cdc313cull

static void table_walk(void **state)
{
    (void)state;
    assert_int_equal(NOPTS, VG_FOPT_COUNT);
    for (size_t o = 0; o < NOPTS; o++) {
        assert_string_equal(vg_family_option_name((vg_family_option)o), table[o].name);
        assert_int_equal(vg_family_option_families((vg_family_option)o), table[o].families);
        for (int f = 0; f < VG_FAMILY_COUNT; f++) {
            const char *fam = vg_family_name((vg_family)f);
            for (int v = 0; v < 2; v++) {
                char json[256];
                snprintf(json, sizeof json, "{\"per_family\":{\"%s\":{\"%s\":%s}}}", fam,
                         table[o].name, v ? "true" : "false");
                vg_config *cfg = NULL;
                vg_status st = vg_config_parse(json, &cfg);
                if (!(table[o].families & VG_FAMILY_BIT(f))) {
                    assert_int_equal(st, VG_ERR_CONFIG);
                    char want[256];
                    snprintf(want, sizeof want,
                             "per_family.%s.%s: does not apply to family %s (read only by: fp8)",
                             fam, table[o].name, fam);
                    assert_string_equal(vg_last_error(), want);
                    continue;
                }
                if (st != VG_OK)
                    fail_msg("%s: %s", json, vg_last_error());
                uint64_t base = 0, mine = 0, other = 0;
                assert_int_equal(vg_config_policy_hash(cfg, &base), VG_OK);
                assert_int_equal(base, DEFAULT_HASH);   /* the global hash is untouched */
                assert_int_equal(vg_config_family_policy_hash(cfg, (vg_family)f, &mine), VG_OK);
                assert_true(mine != DEFAULT_HASH);      /* salts its own family */
                for (int g = 0; g < VG_FAMILY_COUNT; g++) {
                    if (g == f)
                        continue;
                    vg_config_family_policy_hash(cfg, (vg_family)g, &other);
                    assert_int_equal(other, DEFAULT_HASH);   /* never the others */
                }
                /* true and false are different partitions */
                vg_config *flip = NULL;
                snprintf(json, sizeof json, "{\"per_family\":{\"%s\":{\"%s\":%s}}}", fam,
                         table[o].name, v ? "false" : "true");
                assert_int_equal(vg_config_parse(json, &flip), VG_OK);
                uint64_t fh = 0;
                vg_config_family_policy_hash(flip, (vg_family)f, &fh);
                assert_true(fh != mine);
                /* to_json keeps it and parses back to the same hash */
                char *out = NULL;
                assert_int_equal(vg_config_to_json(cfg, &out), VG_OK);
                vg_config *back = parse_cfg(out);
                uint64_t bh = 0;
                vg_config_family_policy_hash(back, (vg_family)f, &bh);
                assert_int_equal(bh, mine);
                free(out);
                vg_config_free(back);
                vg_config_free(flip);
                vg_config_free(cfg);
            }
        }
    }
}

static void expect_error(const char *json, const char *msg)
{
    vg_config *cfg = NULL;
    assert_int_equal(vg_config_parse(json, &cfg), VG_ERR_CONFIG);
    assert_null(cfg);
    assert_string_equal(vg_last_error(), msg);
}

static void errors(void **state)
{
    (void)state;
    expect_error("{\"per_family\":{\"int3\":{}}}",
                 "per_family.int3: unknown family (expected one of: fp16, awq, fp8, mxfp4, nvfp4)");
    expect_error("{\"per_family\":{\"fp8\":{\"fast\":true}}}",
                 "per_family.fp8.fast: unknown key (expected one of: tune_small_shapes, "
                 "grouped_bmm_decode, tiles_within_scale_block)");
    expect_error("{\"per_family\":{\"fp8\":{\"tune_small_shapes\":1}}}",
                 "per_family.fp8.tune_small_shapes: expected boolean, got 1");
    expect_error("{\"per_family\":{\"fp8\":true}}", "per_family.fp8: expected object, got true");
    expect_error("{\"per_family\":[]}", "per_family: expected object, got array");
    expect_error("{\"per_family\":{\"fp8\":{},\"fp8\":{}}}", "per_family.fp8: duplicate key");
    /* an empty per_family changes nothing */
    vg_config *cfg = parse_cfg("{\"per_family\":{\"awq\":{}}}");
    uint64_t h = 0;
    vg_config_family_policy_hash(cfg, VG_FAMILY_AWQ, &h);
    assert_int_equal(h, DEFAULT_HASH);
    vg_config_free(cfg);
}

/* The trace's policy= is the call's family hash. */
static uint64_t trace_policy(const char *trace_text, const char *family)
{
    char want[64];
    snprintf(want, sizeof want, "family=%s ", family);
    const char *line = strstr(trace_text, want);
    assert_non_null(line);
    const char *p = strstr(line, " policy=");
    assert_non_null(p);
    return strtoull(p + 8, NULL, 16);
}

static void tune_off_for_one_family(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char trace[700];
    snprintf(trace, sizeof trace, "%s/trace.txt", dir);
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    assert_int_equal(vg_trace_set(dev, trace), VG_OK);
    vg_config *cfg = parse_cfg("{\"per_family\":{\"awq\":{\"tune_small_shapes\":false}}}");
    assert_int_equal(vg_policy_enter(dev, cfg), VG_OK);
    test_layer awq, fp8;
    layer_open(&awq, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, 32, 64, 1, 4);
    layer_open(&fp8, dev, VG_FAMILY_FP8, VG_PATH_DENSE, 32, 64, 1, 4);
    vg_gemm_args a = layer_call(&awq, 2), b = layer_call(&fp8, 2);
    vg_dispatch_info ia = gemm_ok(dev, &a), ib = gemm_ok(dev, &b);
    assert_int_equal(ia.decision, VG_DECISION_HEURISTIC);
    assert_string_equal(ia.why, "tuning off");
    assert_int_equal(ib.decision, VG_DECISION_MEASURE);
    uint64_t awq_hash = 0;
    vg_config_family_policy_hash(cfg, VG_FAMILY_AWQ, &awq_hash);
    assert_int_equal(ia.policy_hash, awq_hash);
    assert_int_equal(ib.policy_hash, DEFAULT_HASH);
    char *t = slurp(trace);
    assert_int_equal(trace_policy(t, "awq"), awq_hash);
    assert_int_equal(trace_policy(t, "fp8"), DEFAULT_HASH);
    free(t);
    vg_policy_leave();
    layer_close(&awq);
    layer_close(&fp8);
    vg_config_free(cfg);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

static void grouped_off_for_one_family(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    vg_config *cfg = parse_cfg("{\"per_family\":{\"nvfp4\":{\"grouped_bmm_decode\":false}}}");
    assert_int_equal(vg_policy_enter(dev, cfg), VG_OK);
    test_layer nv, fp8;
    layer_open(&nv, dev, VG_FAMILY_NVFP4, VG_PATH_GROUPED, 32, 64, 2, 4);
    layer_open(&fp8, dev, VG_FAMILY_FP8, VG_PATH_GROUPED, 32, 64, 2, 4);
    vg_gemm_args a = layer_call(&nv, 2), b = layer_call(&fp8, 2);
    assert_int_equal(gemm_ok(dev, &a).path, VG_PATH_LOOP);
    assert_int_equal(gemm_ok(dev, &b).path, VG_PATH_GROUPED);
    vg_policy_leave();
    layer_close(&nv);
    layer_close(&fp8);
    vg_config_free(cfg);
    vg_device_close(dev);
}

/* tiles_within_scale_block: the k256 plan would win the script, but is not
 * a candidate for fp8 with the option on (it still is for awq). */
static void tiles_within_scale_block(void **state)
{
    (void)state;
    const vg_plan *k256 = NULL;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        if (strcmp(vg_cpu_plan_at(i)->id, "cpu.dense.m8n32k256.sk4") == 0)
            k256 = vg_cpu_plan_at(i);
    assert_non_null(k256);
    script sc = {.stride = 1, .forced = k256};
    vg_device *dev = open_cpu(&sc);
    vg_config *cfg = parse_cfg("{\"per_family\":{\"fp8\":{\"tiles_within_scale_block\":true}}}");
    assert_int_equal(vg_policy_enter(dev, cfg), VG_OK);
    test_layer fp8, awq;
    layer_open(&fp8, dev, VG_FAMILY_FP8, VG_PATH_DENSE, 32, 256, 1, 4);
    layer_open(&awq, dev, VG_FAMILY_AWQ, VG_PATH_DENSE, 32, 256, 1, 4);
    vg_gemm_args a = layer_call(&fp8, 2), b = layer_call(&awq, 2);
    vg_dispatch_info ia = gemm_ok(dev, &a), ib = gemm_ok(dev, &b);
    assert_int_equal(ia.decision, VG_DECISION_MEASURE);
    assert_true(ia.plan != k256);
    assert_int_equal(128 % ia.plan->tile_k, 0);
    assert_int_equal(128 % ia.plan->tile_n, 0);
    assert_true(ib.plan == k256);
    vg_policy_leave();
    layer_close(&fp8);
    layer_close(&awq);
    vg_config_free(cfg);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(table_walk),
        cmocka_unit_test(errors),
        cmocka_unit_test(tune_off_for_one_family),
        cmocka_unit_test(grouped_off_for_one_family),
        cmocka_unit_test(tiles_within_scale_block),
    };
    return VGTEST_MAIN("per_family", tests);
}
