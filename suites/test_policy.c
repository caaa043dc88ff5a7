/*
 * The policy hash (invariant under key order and whitespace, sensitive to
 * each kernel-choice field, blind to the others), the per-thread policy
 * stack, and the partitions of the dispatch cache.
 */
#include <pthread.h>

#include "test_decision_util.h"

static uint64_t hash_of(const char *json)
{
    vg_config *cfg = parse_cfg(json);
    uint64_t h = 0;
    assert_int_equal(vg_config_policy_hash(cfg, &h), VG_OK);
    vg_config_free(cfg);
    return h;
}

/* FNV-1a 64, written again here so the test does not trust the code under
 * test for the documented canonical form. */
static uint64_t fnv(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 0x100000001b3ull;
    }
    return h;
}

static void canonical_form(void **state)
{
    (void)state;
    /* POLICY.md: FNV-1a 64 of this string for the defaults. */
    uint64_t want = fnv("voltgate-policy-v1;"
                        "sm70_fp8.native.fp8_grouped_bmm_decode=1;"
                        "sm70_fp8.native.fp8_tune_small_shapes=1;"
                        "sm70_fp8.native.fp8_coordinated_tuning=0;");
    assert_true(hash_of("{}") == want);
    assert_true(default_hash() == fnv("voltgate-policy-v1;default"));
}

/* dequant_workspace_max_mib changes which plans are offered: set, it
 * appends "<path>=<MiB>;" to the canonical string (POLICY.md); unset (or
 * null), every config keeps the hash it had before the field existed. */
static void dequant_cap_salts_hash_only_when_set(void **state)
{
    (void)state;
    static const char base[] = "voltgate-policy-v1;"
                               "sm70_fp8.native.fp8_grouped_bmm_decode=1;"
                               "sm70_fp8.native.fp8_tune_small_shapes=1;"
                               "sm70_fp8.native.fp8_coordinated_tuning=0;";
    assert_true(hash_of("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":null}}}") ==
                fnv(base));
    char want[512];
    snprintf(want, sizeof want, "%ssm70_fp8.native.dequant_workspace_max_mib=512;", base);
    assert_true(hash_of("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":512}}}") ==
                fnv(want));
    snprintf(want, sizeof want, "%ssm70_fp8.native.dequant_workspace_max_mib=0;", base);
    assert_true(hash_of("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":0}}}") ==
                fnv(want));
}

static void key_order_and_whitespace(void **state)
{
    (void)state;
    const char *same[] = {
        "{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":true,\"fp8_tune_small_shapes\":false,"
        "\"fp8_coordinated_tuning\":true}},\"sm70_runtime\":{\"freeze_tuning_after_warmup\":false},"
        "\"gemm_lut_path\":null}",
        "{\"gemm_lut_path\":null,\"sm70_runtime\":{\"freeze_tuning_after_warmup\":false},"
        "\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true,\"fp8_tune_small_shapes\":false,"
        "\"fp8_grouped_bmm_decode\":true}}}",
        "  {\n\t\"sm70_fp8\" : { \"native\" :\n {\"fp8_tune_small_shapes\" :false ,\r\n"
        "\"fp8_coordinated_tuning\": true}} }  \n",
        "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true,\"fp8_tune_small_shapes\":false}}}",
    };
    uint64_t h0 = hash_of(same[0]);
    for (size_t i = 1; i < sizeof same / sizeof same[0]; i++)
        assert_true(hash_of(same[i]) == h0);
}

/* Each of the three kernel-choice fields changes the hash on its own; all
 * eight combinations differ from each other and from `default`. */
static void each_kernel_field_changes_hash(void **state)
{
    (void)state;
    static const char *names[] = {"fp8_grouped_bmm_decode", "fp8_tune_small_shapes",
                                  "fp8_coordinated_tuning"};
    uint64_t seen[8];
    for (int bits = 0; bits < 8; bits++) {
        char json[400];
        snprintf(json, sizeof json, "{\"sm70_fp8\":{\"native\":{\"%s\":%s,\"%s\":%s,\"%s\":%s}}}",
                 names[0], bits & 1 ? "true" : "false", names[1], bits & 2 ? "true" : "false",
                 names[2], bits & 4 ? "true" : "false");
        seen[bits] = hash_of(json);
        assert_true(seen[bits] != default_hash());
        assert_true(seen[bits] != 0);
        for (int j = 0; j < bits; j++)
            assert_true(seen[j] != seen[bits]);
    }
    /* And one field at a time against the defaults. */
    uint64_t d = hash_of("{}");
    for (int i = 0; i < 3; i++) {
        char json[200];
        int def = i == 2 ? 0 : 1;
        snprintf(json, sizeof json, "{\"sm70_fp8\":{\"native\":{\"%s\":%s}}}", names[i],
                 def ? "false" : "true");
        assert_true(hash_of(json) != d);
        snprintf(json, sizeof json, "{\"sm70_fp8\":{\"native\":{\"%s\":%s}}}", names[i],
                 def ? "true" : "false");
        assert_true(hash_of(json) == d);
    }
}

/* freeze_tuning_after_warmup and gemm_lut_path change no kernel choice. */
static void other_fields_do_not_change_hash(void **state)
{
    (void)state;
    uint64_t d = hash_of("{}");
    assert_true(hash_of("{\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true}}") == d);
    assert_true(hash_of("{\"sm70_runtime\":{\"freeze_tuning_after_warmup\":false}}") == d);
    assert_true(hash_of("{\"gemm_lut_path\":\"/a/b.lut\"}") == d);
    assert_true(hash_of("{\"gemm_lut_path\":\"/c.lut\",\"sm70_runtime\":{"
                        "\"freeze_tuning_after_warmup\":true}}") == d);
}

static void stack_nesting(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL), *other = open_cpu(NULL);
    vg_config *a = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}}");
    vg_config *b = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":false}}}");
    uint64_t ha, hb;
    vg_config_policy_hash(a, &ha);
    vg_config_policy_hash(b, &hb);

    assert_true(vg_policy_current(dev)->hash == default_hash());
    assert_int_equal(vg_policy_enter(dev, a), VG_OK);
    assert_true(vg_policy_current(dev)->hash == ha);
    assert_true(vg_policy_current(other)->hash == default_hash());  /* bound to dev */
    assert_int_equal(vg_policy_enter(dev, b), VG_OK);
    assert_true(vg_policy_current(dev)->hash == hb);
    assert_int_equal(vg_policy_current(dev)->tune_small_shapes, 0);
    assert_int_equal(vg_policy_leave(), VG_OK);
    assert_true(vg_policy_current(dev)->hash == ha);
    assert_int_equal(vg_policy_enter(NULL, b), VG_OK);              /* any device */
    assert_true(vg_policy_current(other)->hash == hb);
    assert_true(vg_policy_current(dev)->hash == hb);
    assert_int_equal(vg_policy_leave(), VG_OK);
    assert_int_equal(vg_policy_leave(), VG_OK);
    assert_true(vg_policy_current(dev)->hash == default_hash());
    assert_int_equal(vg_policy_leave(), VG_ERR_STATE);
    assert_int_equal(vg_policy_enter(dev, NULL), VG_ERR_INVALID_ARG);

    int entered = 0;
    vg_status st;
    while ((st = vg_policy_enter(dev, a)) == VG_OK)
        entered++;
    assert_int_equal(st, VG_ERR_LIMIT);
    assert_true(entered >= 8);
    while (entered--)
        assert_int_equal(vg_policy_leave(), VG_OK);
    vg_config_free(a);
    vg_config_free(b);
    vg_device_close(dev);
    vg_device_close(other);
}

typedef struct seen_arg {
    vg_device *dev;
    uint64_t hash;
} seen_arg;

static void *other_thread(void *p)
{
    seen_arg *s = p;
    s->hash = vg_policy_current(s->dev)->hash;
    return NULL;
}

static void stack_is_per_thread(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    vg_config *a = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}}");
    assert_int_equal(vg_policy_enter(dev, a), VG_OK);
    seen_arg s = {.dev = dev};
    pthread_t t;
    pthread_create(&t, NULL, other_thread, &s);
    pthread_join(t, NULL);
    assert_true(s.hash == default_hash());
    assert_int_equal(vg_policy_leave(), VG_OK);
    vg_config_free(a);
    vg_device_close(dev);
}

/* The cache is partitioned: a shape measured under one policy is measured
 * again under another, and reused when the first is entered again. */
static void cache_partitions(void **state)
{
    (void)state;
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, 64, 128, 1, 4);
    vg_gemm_args a = layer_call(&l, 4);
    vg_config *e1 = parse_cfg("{}");
    vg_config *e2 = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}}");
    /* freeze/lut differ but the partition is the same as e1's */
    vg_config *e1b = parse_cfg("{\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true},"
                               "\"gemm_lut_path\":\"/nonexistent/x.lut\"}");

    vg_dispatch_info info = gemm_ok(dev, &a);          /* default */
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_true(info.policy_hash == default_hash());
    vg_policy_enter(dev, e1);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);  /* {} is not `default` */
    vg_policy_leave();
    vg_policy_enter(dev, e2);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    vg_policy_leave();
    vg_policy_enter(dev, e1b);
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_REUSE);
    vg_policy_leave();
    info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_REUSE);
    assert_int_equal(measured_total(dev), 3);
    vg_config_free(e1);
    vg_config_free(e2);
    vg_config_free(e1b);
    layer_close(&l);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(canonical_form),
        cmocka_unit_test(dequant_cap_salts_hash_only_when_set),
        cmocka_unit_test(key_order_and_whitespace),
        cmocka_unit_test(each_kernel_field_changes_hash),
        cmocka_unit_test(other_fields_do_not_change_hash),
        cmocka_unit_test(stack_nesting),
        cmocka_unit_test(stack_is_per_thread),
        cmocka_unit_test(cache_partitions),
    };
    return VGTEST_MAIN("policy", tests);
}
