/*
 * kernel_config parsing: defaults, every field, and every error message
 * (unknown key, wrong type, out of range, duplicate, bad JSON), each naming
 * its JSON path exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test_decision_util.h"

/* Parses json, expects VG_ERR_CONFIG and exactly `msg`. */
static void expect_error(const char *json, const char *msg)
{
    vg_config *cfg = (vg_config *)0x1;
    vg_status st = vg_config_parse(json, &cfg);
    if (st != VG_ERR_CONFIG || strcmp(vg_last_error(), msg) != 0)
        print_error("json %s\n  got  %s: %s\n  want %s\n", json, vg_status_str(st),
                    vg_last_error(), msg);
    assert_int_equal(st, VG_ERR_CONFIG);
    assert_string_equal(vg_last_error(), msg);
    assert_null(cfg);
}

static void defaults(void **state)
{
    (void)state;
    vg_config *a = parse_cfg("{}"), *b = NULL;
    assert_int_equal(vg_config_default(&b), VG_OK);
    vg_config_fields fa, fb;
    assert_int_equal(vg_config_get(a, &fa), VG_OK);
    assert_int_equal(vg_config_get(b, &fb), VG_OK);
    vg_config_fields want = {.fp8_grouped_bmm_decode = 1, .fp8_tune_small_shapes = 1,
                             .fp8_coordinated_tuning = 0, .freeze_tuning_after_warmup = 0,
                             .gemm_lut_path = NULL};
    const vg_config_fields *all[] = {&fa, &fb};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(all[i]->fp8_grouped_bmm_decode, want.fp8_grouped_bmm_decode);
        assert_int_equal(all[i]->fp8_tune_small_shapes, want.fp8_tune_small_shapes);
        assert_int_equal(all[i]->fp8_coordinated_tuning, want.fp8_coordinated_tuning);
        assert_int_equal(all[i]->freeze_tuning_after_warmup, want.freeze_tuning_after_warmup);
        assert_null(all[i]->gemm_lut_path);
    }
    vg_config_free(a);
    vg_config_free(b);
}

static void every_field(void **state)
{
    (void)state;
    vg_config *cfg = parse_cfg(
        "{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":false,"
        "\"fp8_tune_small_shapes\":false,\"fp8_coordinated_tuning\":true,"
        "\"dequant_workspace_max_mib\":512}},"
        "\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true},"
        "\"gemm_lut_path\":\"/tmp/x.lut\"}");
    vg_config_fields f;
    assert_int_equal(vg_config_get(cfg, &f), VG_OK);
    assert_int_equal(f.fp8_grouped_bmm_decode, 0);
    assert_int_equal(f.fp8_tune_small_shapes, 0);
    assert_int_equal(f.fp8_coordinated_tuning, 1);
    assert_int_equal(f.freeze_tuning_after_warmup, 1);
    assert_int_equal(f.dequant_workspace_max_mib, 512);
    assert_string_equal(f.gemm_lut_path, "/tmp/x.lut");

    /* to_json is canonical and parses back to the same fields and hash. */
    char *json = NULL;
    assert_int_equal(vg_config_to_json(cfg, &json), VG_OK);
    assert_string_equal(json,
                        "{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":false,"
                        "\"fp8_tune_small_shapes\":false,\"fp8_coordinated_tuning\":true,"
                        "\"dequant_workspace_max_mib\":512}},"
                        "\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true,"
                        "\"reuse_lut_across_builds\":false,"
                        "\"share_measured_plans_across_engines\":false},"
                        "\"gemm_lut_path\":\"/tmp/x.lut\"}");
    vg_config *back = parse_cfg(json);
    uint64_t h1, h2;
    vg_config_policy_hash(cfg, &h1);
    vg_config_policy_hash(back, &h2);
    assert_true(h1 == h2);
    free(json);
    vg_config_free(back);
    vg_config_free(cfg);

    cfg = parse_cfg("{\"gemm_lut_path\":null}");
    assert_int_equal(vg_config_get(cfg, &f), VG_OK);
    assert_int_equal(f.dequant_workspace_max_mib, -1); /* the default: no cap */
    assert_int_equal(vg_config_to_json(cfg, &json), VG_OK);
    assert_non_null(strstr(json, "\"gemm_lut_path\":null"));
    assert_non_null(strstr(json, "\"dequant_workspace_max_mib\":null"));
    free(json);
    vg_config_free(cfg);
}

static void wrong_types(void **state)
{
    (void)state;
    expect_error("{\"sm70_runtime\":{\"freeze_tuning_after_warmup\":\"yes\"}}",
                 "sm70_runtime.freeze_tuning_after_warmup: expected boolean, got \"yes\"");
    expect_error("{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":1}}}",
                 "sm70_fp8.native.fp8_grouped_bmm_decode: expected boolean, got 1");
    expect_error("{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":null}}}",
                 "sm70_fp8.native.fp8_tune_small_shapes: expected boolean, got null");
    expect_error("{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":[true]}}}",
                 "sm70_fp8.native.fp8_coordinated_tuning: expected boolean, got array");
    expect_error("{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":0.5}}}",
                 "sm70_fp8.native.fp8_coordinated_tuning: expected boolean, got 0.5");
    expect_error("{\"sm70_runtime\":{\"freeze_tuning_after_warmup\":{}}}",
                 "sm70_runtime.freeze_tuning_after_warmup: expected boolean, got object");
    expect_error("{\"gemm_lut_path\":5}", "gemm_lut_path: expected string or null, got 5");
    expect_error("{\"gemm_lut_path\":false}",
                 "gemm_lut_path: expected string or null, got false");
    expect_error("{\"sm70_fp8\":[]}", "sm70_fp8: expected object, got array");
    expect_error("{\"sm70_fp8\":{\"native\":true}}", "sm70_fp8.native: expected object, got true");
    expect_error("{\"sm70_runtime\":\"fast\"}", "sm70_runtime: expected object, got \"fast\"");
    expect_error("[1,2]", "kernel_config: expected object, got array");
    expect_error("\"x\"", "kernel_config: expected object, got \"x\"");
}

/* dequant_workspace_max_mib: a whole number of MiB or null (its hash:
 * test_policy.c, dequant_cap_salts_hash_only_when_set). */
static void dequant_workspace_cap(void **state)
{
    (void)state;
    expect_error("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":-1}}}",
                 "sm70_fp8.native.dequant_workspace_max_mib: out of range: -1 (0 to 1048576 "
                 "MiB, or null)");
    expect_error("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":1048577}}}",
                 "sm70_fp8.native.dequant_workspace_max_mib: out of range: 1048577 (0 to 1048576 "
                 "MiB, or null)");
    expect_error("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":1.5}}}",
                 "sm70_fp8.native.dequant_workspace_max_mib: expected integer MiB, got 1.5");
    expect_error("{\"sm70_fp8\":{\"native\":{\"dequant_workspace_max_mib\":\"1G\"}}}",
                 "sm70_fp8.native.dequant_workspace_max_mib: expected integer MiB or null, got "
                 "\"1G\"");
}

static void unknown_keys(void **state)
{
    (void)state;
    expect_error("{\"sm70_fp9\":{}}",
                 "sm70_fp9: unknown key (expected one of: sm70_fp8, sm70_runtime, gemm_lut_path, "
                 "per_family)");
    expect_error("{\"sm70_fp8\":{\"nativ\":{}}}",
                 "sm70_fp8.nativ: unknown key (expected one of: native)");
    expect_error("{\"sm70_fp8\":{\"native\":{\"fp8_tune_big_shapes\":true}}}",
                 "sm70_fp8.native.fp8_tune_big_shapes: unknown key (expected one of: "
                 "fp8_grouped_bmm_decode, fp8_tune_small_shapes, fp8_coordinated_tuning, "
                 "dequant_workspace_max_mib)");
    expect_error("{\"sm70_runtime\":{\"freeze\":true}}",
                 "sm70_runtime.freeze: unknown key (expected one of: freeze_tuning_after_warmup, "
                 "reuse_lut_across_builds, share_measured_plans_across_engines)");
    /* A field in the wrong section is unknown there. */
    expect_error("{\"sm70_runtime\":{\"fp8_tune_small_shapes\":true}}",
                 "sm70_runtime.fp8_tune_small_shapes: unknown key (expected one of: "
                 "freeze_tuning_after_warmup, reuse_lut_across_builds, "
                 "share_measured_plans_across_engines)");
}

static void out_of_range_and_duplicates(void **state)
{
    (void)state;
    expect_error("{\"gemm_lut_path\":\"\"}",
                 "gemm_lut_path: out of range: empty path (use null for no LUT)");
    size_t n = 4001;
    char *json = malloc(n + 64);
    int len = sprintf(json, "{\"gemm_lut_path\":\"");
    memset(json + len, 'a', n);
    strcpy(json + len + n, "\"}");
    expect_error(json, "gemm_lut_path: out of range: 4001 characters, at most 4000");
    json[len + 4000] = '"';
    strcpy(json + len + 4000 + 1, "}");
    vg_config *ok = parse_cfg(json);   /* 4000 is fine */
    vg_config_free(ok);
    free(json);
    expect_error("{\"gemm_lut_path\":null,\"gemm_lut_path\":\"a\"}", "gemm_lut_path: duplicate key");
    expect_error("{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":true,"
                 "\"fp8_tune_small_shapes\":false}}}",
                 "sm70_fp8.native.fp8_tune_small_shapes: duplicate key");
}

static void bad_json(void **state)
{
    (void)state;
    /* Past cJSON's nesting limit: said as such, not as a syntax error. */
    size_t deep = 100000;
    char *nest = malloc(2 * deep + 1);
    memset(nest, '[', deep);
    memset(nest + deep, ']', deep);
    nest[2 * deep] = '\0';
    expect_error(nest, "kernel_config: nesting deeper than 1000 levels (at offset 1000)");
    free(nest);
    /* \u0000 would end the C string cJSON hands back: the path would be
     * cut short without a word. */
    expect_error("{\"gemm_lut_path\":\"/tmp/a\\u0000b.lut\"}",
                 "kernel_config: the string at offset 17 holds \\u0000 (a NUL character), "
                 "which no field takes");
    vg_config *esc = parse_cfg("{\"gemm_lut_path\":\"/tmp/a\\\\u0000b.lut\"}");
    vg_config_fields ef;
    vg_config_get(esc, &ef);
    assert_string_equal(ef.gemm_lut_path, "/tmp/a\\u0000b.lut");  /* a backslash, then text */
    vg_config_free(esc);
    const char *docs[] = {"", "{", "{\"sm70_fp8\":", "{} trailing", "{'a':1}", "nul"};
    for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
        vg_config *cfg = NULL;
        assert_int_equal(vg_config_parse(docs[i], &cfg), VG_ERR_CONFIG);
        assert_null(cfg);
        assert_true(strncmp(vg_last_error(), "kernel_config: invalid JSON at offset ", 38) == 0);
    }
    vg_config *cfg = NULL;
    assert_int_equal(vg_config_parse(NULL, &cfg), VG_ERR_INVALID_ARG);
}

static void load_file(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/cfg.json", dir);
    vg_config *cfg = NULL;
    assert_int_equal(vg_config_load(path, &cfg), VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), path));

    const char *bad = "{\"sm70_runtime\":{\"freeze_tuning_after_warmup\":\"yes\"}}\n";
    spit(path, bad, strlen(bad));
    assert_int_equal(vg_config_load(path, &cfg), VG_ERR_CONFIG);
    char want[800];
    snprintf(want, sizeof want,
             "sm70_runtime.freeze_tuning_after_warmup: expected boolean, got \"yes\" (in %s)",
             path);
    assert_string_equal(vg_last_error(), want);

    const char *good = "{\n  \"sm70_runtime\": {\"freeze_tuning_after_warmup\": true}\n}\n";
    spit(path, good, strlen(good));
    assert_int_equal(vg_config_load(path, &cfg), VG_OK);
    vg_config_fields f;
    vg_config_get(cfg, &f);
    assert_int_equal(f.freeze_tuning_after_warmup, 1);
    vg_config_free(cfg);
    vgtest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(defaults),
        cmocka_unit_test(every_field),
        cmocka_unit_test(wrong_types),
        cmocka_unit_test(unknown_keys),
        cmocka_unit_test(dequant_workspace_cap),
        cmocka_unit_test(out_of_range_and_duplicates),
        cmocka_unit_test(bad_json),
        cmocka_unit_test(load_file),
    };
    return VGTEST_MAIN("config", tests);
}
