/*
 * Issue 10, LUT side: gemm_lut_path templates ({device}, {arch}, {rank}),
 * folders created and unwritable paths refused at the start of a warm-up,
 * stale entries (another kernel build, another plan set, unstamped
 * version-1 files) skipped and counted unless reuse_lut_across_builds, and
 * an applied LUT plus the freeze measuring nothing.
 */
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_decision_util.h"
#include "voltgate/coord.h"

#define N 32
#define K 64

static const vg_layer layer = {.family = VG_FAMILY_FP8, .path = VG_PATH_DENSE, .n = N, .k = K,
                               .groups = 1};
#define SHAPES VG_TUNE_MAX_DENSE_M

static uint64_t fnv(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

static void put_file(const char *path, const char *text) { spit(path, text, strlen(text)); }

/* Every `from` replaced by `to`, then the checksum line made right again. */
static char *rewrite(const char *text, const char *from, const char *to)
{
    size_t cap = strlen(text) * 2 + 128, n = 0, fl = strlen(from), tl = strlen(to);
    char *out = malloc(cap);
    for (const char *p = text; *p;) {
        if (fl && strncmp(p, from, fl) == 0) {
            memcpy(out + n, to, tl);
            n += tl;
            p += fl;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    char *sum = strstr(out, "checksum fnv1a64=");
    assert_non_null(sum);
    size_t body = (size_t)(sum - out);
    sprintf(out + body, "checksum fnv1a64=%016" PRIx64 "\n", fnv(out, body));
    return out;
}

/* The value after "key=" in the last vg-trace-lut line of the trace file. */
static long lut_trace_field(const char *trace, const char *key)
{
    char *t = slurp(trace);
    assert_non_null(t);
    char *line = NULL;
    for (char *p = strstr(t, "vg-trace-lut "); p; p = strstr(p + 1, "vg-trace-lut "))
        line = p;
    assert_non_null(line);
    char want[64];
    snprintf(want, sizeof want, " %s=", key);
    char *at = strstr(line, want);
    assert_non_null(at);
    long v = strtol(at + strlen(want), NULL, 10);
    free(t);
    return v;
}

static vg_warmup_report warm(vg_device *dev, const char *json)
{
    vg_config *cfg = parse_cfg(json);
    vg_warmup_report r;
    vg_status st = vg_warmup(dev, cfg, &layer, 1, &r);
    if (st != VG_OK)
        print_error("warm-up: %s\n", vg_last_error());
    assert_int_equal(st, VG_OK);
    vg_config_free(cfg);
    return r;
}

/* ---- templates -------------------------------------------------------------- */

static vg_status fake_max(double *b, int n, void *h) { (void)b; (void)n; (void)h; return VG_OK; }
static vg_status fake_min(int64_t *b, int n, void *h) { (void)b; (void)n; (void)h; return VG_OK; }

static void template_expands_and_creates_folders(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char json[900], want[900];
    snprintf(json, sizeof json,
             "{\"gemm_lut_path\":\"%s/a/{arch}/dev{device}/rank{rank}.lut\"}", dir);
    /* without a communicator: rank 0 */
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_warmup_report r = warm(dev, json);
    assert_int_equal(r.shapes_measured, SHAPES);
    snprintf(want, sizeof want, "%s/a/cpu/dev0/rank0.lut", dir);
    assert_int_equal(access(want, R_OK), 0);
    vg_device_close(dev);

    /* rank 3 of 4 reads and writes its own file */
    dev = open_cpu(&sc);
    vg_comm comm = {.handle = NULL, .rank = 3, .size = 4, .allreduce_max_f64 = fake_max,
                    .allreduce_min_i64 = fake_min};
    assert_int_equal(vg_device_set_comm(dev, &comm), VG_OK);
    r = warm(dev, json);
    assert_int_equal(r.shapes_measured, SHAPES);   /* rank 0's file is not rank 3's */
    snprintf(want, sizeof want, "%s/a/cpu/dev0/rank3.lut", dir);
    assert_int_equal(access(want, R_OK), 0);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

static void expect_config_error(const char *json, const char *msg)
{
    vg_config *cfg = NULL;
    assert_int_equal(vg_config_parse(json, &cfg), VG_ERR_CONFIG);
    assert_null(cfg);
    if (strcmp(vg_last_error(), msg) != 0)
        fail_msg("got '%s', want '%s'", vg_last_error(), msg);
}

static void template_errors(void **state)
{
    (void)state;
    expect_config_error("{\"gemm_lut_path\":\"/x/{host}.lut\"}",
                        "gemm_lut_path: unknown placeholder '{host}' (expected {device}, "
                        "{arch} or {rank})");
    expect_config_error("{\"gemm_lut_path\":\"/x/{rank.lut\"}",
                        "gemm_lut_path: unterminated placeholder at character 4");
    expect_config_error("{\"gemm_lut_path\":\"/x/rank}.lut\"}",
                        "gemm_lut_path: '}' without '{' at character 8");
    expect_config_error("{\"gemm_lut_path\":\"/x/{}.lut\"}",
                        "gemm_lut_path: unknown placeholder '{}' (expected {device}, {arch} "
                        "or {rank})");
}

/* A LUT path that cannot be written fails the warm-up before any call. */
static void unwritable_path_fails_at_start(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char file[700], json[900];
    snprintf(file, sizeof file, "%s/plain", dir);
    put_file(file, "not a folder\n");
    snprintf(json, sizeof json, "{\"gemm_lut_path\":\"%s/plain/sub/boot.lut\"}", dir);
    vg_config *cfg = parse_cfg(json);
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_warmup_report r = {.calls = 99};
    assert_int_equal(vg_warmup(dev, cfg, &layer, 1, &r), VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), "cannot create folder"));
    assert_non_null(strstr(vg_last_error(), "plain/sub"));
    assert_int_equal(atomic_load(&sc.calls), 0);   /* nothing ran */
    vg_tuning_state ts;
    vg_device_tuning_state(dev, &ts);
    assert_int_equal(ts.measured_total, 0);
    vg_config_free(cfg);

    /* the path itself a folder */
    snprintf(json, sizeof json, "{\"gemm_lut_path\":\"%s\"}", dir);
    cfg = parse_cfg(json);
    assert_int_equal(vg_warmup(dev, cfg, &layer, 1, &r), VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), "is a folder"));
    vg_config_free(cfg);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* ---- stale entries -------------------------------------------------------- */

typedef struct stale_fx {
    char *dir;
    char lut[700], trace[700], json[900], json_reuse[900];
    char *text;               /* the LUT a first boot wrote */
} stale_fx;

static int stale_setup(void **state)
{
    stale_fx *f = calloc(1, sizeof *f);
    f->dir = vgtest_mkdtemp();
    snprintf(f->lut, sizeof f->lut, "%s/boot.lut", f->dir);
    snprintf(f->trace, sizeof f->trace, "%s/trace.txt", f->dir);
    snprintf(f->json, sizeof f->json, "{\"gemm_lut_path\":\"%s\"}", f->lut);
    snprintf(f->json_reuse, sizeof f->json_reuse,
             "{\"gemm_lut_path\":\"%s\",\"sm70_runtime\":{\"reuse_lut_across_builds\":true}}",
             f->lut);
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    assert_int_equal(warm(dev, f->json).shapes_measured, SHAPES);
    vg_device_close(dev);
    f->text = slurp(f->lut);
    assert_non_null(f->text);
    assert_true(strncmp(f->text, "voltgate-lut 2\n", 15) == 0);
    assert_non_null(strstr(f->text, " build="));
    assert_non_null(strstr(f->text, " planset="));
    *state = f;
    return 0;
}

static int stale_teardown(void **state)
{
    stale_fx *f = *state;
    vgtest_rmtree(f->dir);
    free(f->dir);
    free(f->text);
    free(f);
    return 0;
}

/* The build stamp every entry of f->text carries. */
static void stamp_of(const char *text, const char *key, char out[17])
{
    char want[32];
    snprintf(want, sizeof want, " %s=", key);
    const char *at = strstr(text, want);
    assert_non_null(at);
    memcpy(out, at + strlen(want), 16);
    out[16] = '\0';
}

/* Boots a device on the LUT now in f->lut with `json`; returns what it measured. */
static uint64_t boot(stale_fx *f, const char *json)
{
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    unlink(f->trace);
    assert_int_equal(vg_trace_set(dev, f->trace), VG_OK);
    uint64_t m = warm(dev, json).shapes_measured;
    vg_device_close(dev);
    return m;
}

static void same_build_applies(void **state)
{
    stale_fx *f = *state;
    assert_int_equal(boot(f, f->json), 0);
    assert_int_equal(lut_trace_field(f->trace, "applied"), SHAPES);
    assert_int_equal(lut_trace_field(f->trace, "skipped_build"), 0);
    assert_int_equal(lut_trace_field(f->trace, "skipped_planset"), 0);
    assert_int_equal(lut_trace_field(f->trace, "version"), 2);
}

static void other_build_is_stale(void **state)
{
    stale_fx *f = *state;
    char b[17], from[40];
    stamp_of(f->text, "build", b);
    snprintf(from, sizeof from, "build=%s", b);
    char *other = rewrite(f->text, from,
                          strcmp(b, "00000000deadbeef") ? "build=00000000deadbeef"
                                                        : "build=00000000feedf00d");
    put_file(f->lut, other);
    /* skipped, counted, measured again */
    assert_int_equal(boot(f, f->json), SHAPES);
    assert_int_equal(lut_trace_field(f->trace, "skipped_build"), SHAPES);
    assert_int_equal(lut_trace_field(f->trace, "applied"), 0);
    /* vg_lut_import says the same in its report */
    vg_device *dev = open_cpu(NULL);
    put_file(f->lut, other);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(dev, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.skipped_build, SHAPES);
    assert_int_equal(r.applied, 0);
    vg_device_close(dev);
    /* reuse_lut_across_builds: applied, nothing measured */
    put_file(f->lut, other);
    assert_int_equal(boot(f, f->json_reuse), 0);
    assert_int_equal(lut_trace_field(f->trace, "applied"), SHAPES);
    free(other);
}

static void other_planset_is_stale(void **state)
{
    stale_fx *f = *state;
    char p[17], from[40];
    stamp_of(f->text, "planset", p);
    snprintf(from, sizeof from, "planset=%s", p);
    char *other = rewrite(f->text, from,
                          strcmp(p, "0000000000000abc") ? "planset=0000000000000abc"
                                                        : "planset=0000000000000def");
    put_file(f->lut, other);
    assert_int_equal(boot(f, f->json), SHAPES);
    assert_int_equal(lut_trace_field(f->trace, "skipped_planset"), SHAPES);
    assert_int_equal(lut_trace_field(f->trace, "applied"), 0);
    put_file(f->lut, other);
    assert_int_equal(boot(f, f->json_reuse), 0);
    free(other);
}

/* A version-1 file (no stamps): vg_lut_import applies it; the warm-up's
 * config-driven import skips it as stale unless reuse_lut_across_builds. */
static void version1_file(void **state)
{
    stale_fx *f = *state;
    char b[17], p[17], from[80];
    stamp_of(f->text, "build", b);
    stamp_of(f->text, "planset", p);
    snprintf(from, sizeof from, " build=%s planset=%s", b, p);
    char *v1a = rewrite(f->text, from, "");
    char *v1 = rewrite(v1a, "voltgate-lut 2\n", "voltgate-lut 1\n");
    free(v1a);
    assert_null(strstr(v1, "build="));
    put_file(f->lut, v1);
    vg_device *dev = open_cpu(NULL);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(dev, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.applied, SHAPES);
    /* re-exported, the entries stay marked as of unknown origin */
    char again[800];
    snprintf(again, sizeof again, "%s/again.lut", f->dir);
    assert_int_equal(vg_lut_export(dev, again, 0), VG_OK);
    char *t = slurp(again);
    assert_non_null(strstr(t, "build=ffffffffffffffff"));
    free(t);
    vg_device_close(dev);

    assert_int_equal(boot(f, f->json), SHAPES);
    assert_int_equal(lut_trace_field(f->trace, "skipped_build"), SHAPES);
    assert_int_equal(lut_trace_field(f->trace, "version"), 1);
    put_file(f->lut, v1);
    assert_int_equal(boot(f, f->json_reuse), 0);
    free(v1);
}

/* An applied LUT marks its shapes measured: with the freeze on, serving
 * every warm-up shape and a smaller-than-measured one measures nothing. */
static void applied_lut_with_freeze_measures_nothing(void **state)
{
    stale_fx *f = *state;
    put_file(f->lut, f->text);
    char json[1000];
    snprintf(json, sizeof json,
             "{\"gemm_lut_path\":\"%s\",\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true}}",
             f->lut);
    script sc = {.stride = 1};
    vg_device *dev = open_cpu(&sc);
    vg_warmup_report r = warm(dev, json);
    assert_int_equal(r.shapes_measured, 0);
    assert_int_equal(r.frozen, 1);
    vg_config *cfg = parse_cfg(json);
    assert_int_equal(vg_policy_enter(dev, cfg), VG_OK);
    test_layer l;
    layer_open(&l, dev, layer.family, layer.path, N, K, 1, SHAPES);
    for (int m = 1; m <= SHAPES; m++) {
        vg_gemm_args a = layer_call(&l, m);
        vg_dispatch_info info = gemm_ok(dev, &a);
        assert_int_equal(info.decision, VG_DECISION_REUSE);
    }
    layer_close(&l);
    vg_policy_leave();
    assert_int_equal(atomic_load(&sc.calls), 0);
    vg_config_free(cfg);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(template_expands_and_creates_folders),
        cmocka_unit_test(template_errors),
        cmocka_unit_test(unwritable_path_fails_at_start),
        cmocka_unit_test_setup_teardown(same_build_applies, stale_setup, stale_teardown),
        cmocka_unit_test_setup_teardown(other_build_is_stale, stale_setup, stale_teardown),
        cmocka_unit_test_setup_teardown(other_planset_is_stale, stale_setup, stale_teardown),
        cmocka_unit_test_setup_teardown(version1_file, stale_setup, stale_teardown),
        cmocka_unit_test_setup_teardown(applied_lut_with_freeze_measures_nothing, stale_setup,
                                        stale_teardown),
    };
    return VGTEST_MAIN("lut_stale", tests);
}
