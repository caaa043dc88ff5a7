/*
 * The decision trace: VG_GEMM_TRACE=1 (stderr) and =/path (append), the
 * exact line format parsed field by field, the running measured count and
 * frozen flag, and whole lines from concurrent threads.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <unistd.h>

#include "test_decision_util.h"

typedef struct trace_rec {
    char op[32], family[16], path[16], decision[16], plan[128];
    int m, n, k, groups, frozen;
    uint64_t policy;
    unsigned long long measured;
} trace_rec;

/* Strict parse of one decision line (no trailing newline): every field,
 * in order, nothing else. */
static int parse_line(const char *line, trace_rec *r)
{
    char policy[17];
    int used = -1;
    int got = sscanf(line,
                     "vg-trace op=%31[^ ] family=%15[^ ] path=%15[^ ] m=%d n=%d k=%d groups=%d "
                     "policy=%16[0-9a-f] decision=%15[^ ] plan=%127[^ ] measured=%llu frozen=%d%n",
                     r->op, r->family, r->path, &r->m, &r->n, &r->k, &r->groups, policy,
                     r->decision, r->plan, &r->measured, &r->frozen, &used);
    if (got != 12 || used != (int)strlen(line) || strlen(policy) != 16)
        return 0;
    r->policy = strtoull(policy, NULL, 16);
    return 1;
}

/* The decision lines of a trace file, parsed; *count of them; fails the
 * test on any "vg-trace " line that does not parse. */
static trace_rec *read_trace(const char *path, int *count)
{
    char *text = slurp(path);
    int cap = 64, n = 0;
    trace_rec *recs = malloc(sizeof *recs * (size_t)cap);
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "vg-trace ", 9) != 0)
            continue;
        if (n == cap)
            recs = realloc(recs, sizeof *recs * (size_t)(cap *= 2));
        if (!parse_line(line, &recs[n])) {
            print_error("unparsable trace line: '%s'\n", line);
            fail();
        }
        n++;
    }
    free(text);
    *count = n;
    return recs;
}

static void expect_rec(const trace_rec *r, const char *op, const char *family, const char *path,
                       int m, int n, int k, int groups, uint64_t policy, const char *decision,
                       const char *plan, unsigned long long measured, int frozen)
{
    assert_string_equal(r->op, op);
    assert_string_equal(r->family, family);
    assert_string_equal(r->path, path);
    assert_int_equal(r->m, m);
    assert_int_equal(r->n, n);
    assert_int_equal(r->k, k);
    assert_int_equal(r->groups, groups);
    assert_true(r->policy == policy);
    assert_string_equal(r->decision, decision);
    assert_string_equal(r->plan, plan);
    assert_int_equal(r->measured, measured);
    assert_int_equal(r->frozen, frozen);
}

static void parser_is_strict(void **state)
{
    (void)state;
    trace_rec r;
    const char *good = "vg-trace op=gemm family=fp8 path=dense m=3 n=64 k=128 groups=1 "
                       "policy=0123456789abcdef decision=measure plan=cpu.x measured=1 frozen=0";
    assert_true(parse_line(good, &r));
    assert_false(parse_line("vg-trace op=gemm family=fp8 path=dense m=3 n=64 k=128 groups=1 "
                            "policy=0123456789abcdef decision=measure plan=cpu.x measured=1",
                            &r));
    assert_false(parse_line("vg-trace op=gemm family=fp8 path=dense m=3 n=64 k=128 groups=1 "
                            "policy=0123456789abcde decision=measure plan=cpu.x measured=1 "
                            "frozen=0", &r));
    char extra[400];
    snprintf(extra, sizeof extra, "%s why=x", good);
    assert_false(parse_line(extra, &r));
}

/* VG_GEMM_TRACE=/path appends one exact line per decision. */
static void env_path_exact_lines(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/trace.log", dir);
    spit(path, "earlier line\n", 13);
    setenv("VG_GEMM_TRACE", path, 1);
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    unsetenv("VG_GEMM_TRACE");
    script s = {.stride = 1};
    vg_device_set_timer(dev, script_timer, &s);
    vg_config *cfg = parse_cfg(CFG_ENGINE);
    uint64_t h;
    vg_config_policy_hash(cfg, &h);

    test_layer d, g;
    layer_open(&d, dev, VG_FAMILY_FP8, VG_PATH_DENSE, 64, 128, 1, 70);
    layer_open(&g, dev, VG_FAMILY_AWQ, VG_PATH_GROUPED, 32, 64, 4, 20);
    vg_policy_enter(dev, cfg);
    vg_gemm_args a = layer_call(&d, 3);
    vg_dispatch_info i1 = gemm_ok(dev, &a);               /* measure */
    vg_dispatch_info i2 = gemm_ok(dev, &a);               /* reuse */
    a = layer_call(&d, 70);
    vg_dispatch_info i3 = gemm_ok(dev, &a);               /* the 128 bucket: measure */
    a = layer_call(&g, 20);
    vg_dispatch_info i4 = gemm_ok(dev, &a);               /* grouped -> moe, measure */
    vg_policy_leave();
    a = layer_call(&d, 3);
    vg_dispatch_info i5 = gemm_ok(dev, &a);               /* default partition: measure */
    vg_device_freeze_tuning(dev);
    a = layer_call(&d, 2);
    vg_dispatch_info i6 = gemm_ok(dev, &a);               /* frozen: next larger (3) */

    int n = 0;
    trace_rec *r = read_trace(path, &n);
    assert_int_equal(n, 6);
    expect_rec(&r[0], "gemm", "fp8", "dense", 3, 64, 128, 1, h, "measure", i1.plan->id, 1, 0);
    expect_rec(&r[1], "gemm", "fp8", "dense", 3, 64, 128, 1, h, "reuse", i2.plan->id, 1, 0);
    expect_rec(&r[2], "gemm", "fp8", "dense", 70, 64, 128, 1, h, "measure", i3.plan->id, 2, 0);
    expect_rec(&r[3], "grouped_gemm", "awq", "moe", 80, 32, 64, 4, h, "measure", i4.plan->id, 3,
               0);
    expect_rec(&r[4], "gemm", "fp8", "dense", 3, 64, 128, 1, default_hash(), "measure",
               i5.plan->id, 4, 0);
    expect_rec(&r[5], "gemm", "fp8", "dense", 2, 64, 128, 1, default_hash(), "reuse",
               i6.plan->id, 4, 1);
    assert_ptr_equal(i6.plan, i5.plan);
    char *text = slurp(path);
    assert_true(strncmp(text, "earlier line\n", 13) == 0);   /* appended, not truncated */
    free(text);
    free(r);
    vg_config_free(cfg);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* VG_GEMM_TRACE=1 writes to stderr. */
static void env_one_is_stderr(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/stderr.txt", dir);
    fflush(stderr);
    int saved = dup(2);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 2);
    close(fd);
    setenv("VG_GEMM_TRACE", "1", 1);
    vg_device *dev = NULL;
    vg_status st = vg_device_open("cpu", 0, &dev);
    unsetenv("VG_GEMM_TRACE");
    test_layer d;
    if (st == VG_OK) {
        /* above the bucket range: heuristic, nothing timed */
        layer_open(&d, dev, VG_FAMILY_FP16, VG_PATH_DENSE, 64, 64, 1, VG_TUNE_MAX_BUCKET_ROWS + 1);
        vg_gemm_args a = layer_call(&d, VG_TUNE_MAX_BUCKET_ROWS + 1);
        vg_gemm(dev, "gemm", &a, NULL);
    }
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    assert_int_equal(st, VG_OK);
    int n = 0;
    trace_rec *r = read_trace(path, &n);
    assert_int_equal(n, 1);
    assert_string_equal(r[0].decision, "heuristic");
    assert_int_equal(r[0].m, VG_TUNE_MAX_BUCKET_ROWS + 1);
    free(r);
    layer_close(&d);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* Bucketed calls on the trace: m= is the call's own M; the first call of
 * the 128 bucket measures, the next one reuses its plan, a call above the
 * bucket range is heuristic. */
typedef struct trace_dir {
    char *dir;
    char path[600];   /* <dir>/trace.log */
} trace_dir;

static int trace_dir_open(void **state)
{
    trace_dir *t = calloc(1, sizeof *t);
    t->dir = vgtest_mkdtemp();
    snprintf(t->path, sizeof t->path, "%s/trace.log", t->dir);
    *state = t;
    return 0;
}

static int trace_dir_close(void **state)
{
    trace_dir *t = *state;
    vgtest_rmtree(t->dir);
    free(t->dir);
    free(t);
    return 0;
}

static void bucket_decisions_traced(void **state)
{
    const char *path = ((trace_dir *)*state)->path;
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    assert_int_equal(vg_trace_set(dev, path), VG_OK);
    test_layer d;
    layer_open(&d, dev, VG_FAMILY_MXFP4, VG_PATH_DENSE, 32, 32, 1, VG_TUNE_MAX_BUCKET_ROWS + 1);
    const vg_plan *won = expect_call(dev, &d, 100, VG_DECISION_MEASURE).plan;
    assert_ptr_equal(expect_call(dev, &d, 120, VG_DECISION_REUSE).plan, won);
    const vg_plan *rule =
        expect_call(dev, &d, VG_TUNE_MAX_BUCKET_ROWS + 1, VG_DECISION_HEURISTIC).plan;

    int n = 0;
    trace_rec *r = read_trace(path, &n);
    assert_int_equal(n, 3);
    uint64_t h = default_hash();
    expect_rec(&r[0], "gemm", "mxfp4", "dense", 100, 32, 32, 1, h, "measure", won->id, 1, 0);
    expect_rec(&r[1], "gemm", "mxfp4", "dense", 120, 32, 32, 1, h, "reuse", won->id, 1, 0);
    expect_rec(&r[2], "gemm", "mxfp4", "dense", VG_TUNE_MAX_BUCKET_ROWS + 1, 32, 32, 1, h,
               "heuristic", rule->id, 1, 0);
    char *text = slurp(path);
    assert_non_null(strstr(text, "vg-trace-candidate op=gemm family=mxfp4 path=dense m=100 "));
    free(text);
    free(r);
    layer_close(&d);
    vg_device_close(dev);
}

static void set_and_off(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[600], bad[700];
    snprintf(path, sizeof path, "%s/t.log", dir);
    snprintf(bad, sizeof bad, "%s/no/such/dir/t.log", dir);
    vg_device *dev = open_cpu(NULL);
    test_layer d;
    layer_open(&d, dev, VG_FAMILY_FP16, VG_PATH_DENSE, 64, 64, 1, 100);
    vg_gemm_args a = layer_call(&d, 100);
    assert_int_equal(vg_trace_set(dev, bad), VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), bad));
    assert_int_equal(vg_trace_set(dev, path), VG_OK);
    gemm_ok(dev, &a);
    assert_int_equal(vg_trace_set(dev, ""), VG_OK);
    gemm_ok(dev, &a);
    assert_int_equal(vg_trace_set(dev, path), VG_OK);
    gemm_ok(dev, &a);
    assert_int_equal(vg_trace_set(dev, "0"), VG_OK);
    gemm_ok(dev, &a);
    int n = 0;
    free(read_trace(path, &n));
    assert_int_equal(n, 2);
    layer_close(&d);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

/* A backend that offers no dequantize-once plan, with a reason (as the
 * cuda backend where cuBLAS did not load): the cpu backend with its
 * plan_offered set, and its rule as if the kind were not offered (the cuda
 * rule asks the same question itself). */
#define NOT_OFFERED_WHY "dequant+cublas: cuBLAS not loaded: libcublas.so.99: test"
static int refuse_dequant(void *ctx, const vg_plan *p, const char **why)
{
    (void)ctx;
    if (p->kind != VG_KIND_DEQUANT_BLAS)
        return 1;
    if (why)
        *why = NOT_OFFERED_WHY;
    return 0;
}

/* The trace says why a kind is not offered: a vg-trace-offer line when the
 * trace opens, and a candidate line (us=none) in every measurement whose
 * rows it would apply to; the kind is never chosen nor counted in the
 * workspace. */
static void not_offered_kind_traced(void **state)
{
    (void)state;
    enum { ROWS = 300, DN = 64, DK = 4096 }; /* the copy: 64 x 4096 x 2 = 0.5 MiB */
    const vg_plan *dq = cpu_dense_dq_plan();
    assert_non_null(dq);
    char *dir = vgtest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/t.log", dir);
    script s = {.forced = dq}; /* the timer would make it win */
    vg_device *dev = open_cpu(&s);
    static vg_backend_ops refusing;
    refusing = *dev->ops;
    refusing.plan_offered = refuse_dequant;
    refusing.heuristic = refusing.heuristic_native;
    dev->ops = &refusing;
    assert_int_equal(vg_trace_set(dev, path), VG_OK);
    test_layer d;
    layer_open(&d, dev, VG_FAMILY_FP8, VG_PATH_DENSE, DN, DK, 1, ROWS);
    vg_gemm_args a = layer_call(&d, ROWS);
    vg_dispatch_info info = gemm_ok(dev, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_true(info.plan != dq);
    size_t bytes = 0;
    assert_int_equal(vg_gemm_workspace_bytes(dev, &a, &bytes), VG_OK);
    assert_true(bytes < (size_t)DN * DK * 2);

    char *text = slurp(path);
    assert_non_null(strstr(text, "vg-trace-offer backend=cpu device=0 kind=dequant+cublas "
                                 "offered=0 why=" NOT_OFFERED_WHY "\n"));
    char want[300];
    snprintf(want, sizeof want,
             "m=%d n=%d k=%d groups=1 policy=%016llx plan=%s us=none status=%d why=not offered: "
             NOT_OFFERED_WHY "\n",
             ROWS, DN, DK, (unsigned long long)info.policy_hash, dq->id, (int)VG_ERR_UNSUPPORTED);
    assert_non_null(strstr(text, want));
    /* one offer line: one kind is not offered */
    const char *first = strstr(text, "vg-trace-offer ");
    assert_null(strstr(first + 1, "vg-trace-offer "));
    /* the decision lines still parse */
    int n = 0;
    free(read_trace(path, &n));
    assert_int_equal(n, 1);
    free(text);
    layer_close(&d);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

typedef struct tracer {
    vg_device *dev;
    test_layer *layer;
    int calls;
} tracer;

static void *trace_thread(void *p)
{
    tracer *t = p;
    /* each thread its own output rows: only the runtime is shared */
    float *y = malloc(sizeof(float) * 8 * (size_t)t->layer->b.layer.n);
    for (int i = 0; i < t->calls; i++) {
        vg_gemm_args a;
        vg_layer_args(&t->layer->b, 1 + i % 8, &a);
        a.y = y;
        vg_gemm(t->dev, "gemm", &a, NULL);
    }
    free(y);
    return NULL;
}

/* 4 threads tracing into one file: every line whole and parsable. */
static void concurrent_lines_do_not_interleave(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char path[600];
    snprintf(path, sizeof path, "%s/t.log", dir);
    script s = {.stride = 1};
    vg_device *dev = open_cpu(&s);
    assert_int_equal(vg_trace_set(dev, path), VG_OK);
    test_layer d;
    layer_open(&d, dev, VG_FAMILY_FP8, VG_PATH_DENSE, 32, 128, 1, 8);
    pthread_t th[4];
    tracer t = {.dev = dev, .layer = &d, .calls = 300};
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, trace_thread, &t);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    int n = 0;
    trace_rec *r = read_trace(path, &n);
    assert_int_equal(n, 4 * 300);
    int measures = 0;
    for (int i = 0; i < n; i++)
        measures += strcmp(r[i].decision, "measure") == 0;
    assert_true(measures >= 8);             /* each of M = 1..8 measured at least once */
    assert_int_equal(measured_total(dev), 8);
    free(r);
    layer_close(&d);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parser_is_strict),
        cmocka_unit_test(env_path_exact_lines),
        cmocka_unit_test(env_one_is_stderr),
        cmocka_unit_test_setup_teardown(bucket_decisions_traced, trace_dir_open, trace_dir_close),
        cmocka_unit_test(set_and_off),
        cmocka_unit_test(not_offered_kind_traced),
        cmocka_unit_test(concurrent_lines_do_not_interleave),
    };
    return VGTEST_MAIN("trace", tests);
}
