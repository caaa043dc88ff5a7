/*
 * voltgate bench --dispatch: what one dispatch decision costs.
 *
 * The decision is timed alone through vg_policy_current() and
 * vg_dispatch_decide() (runtime/internal.h), what vg_gemm() calls first:
 * the thread's policy, reroute, tuning limits,
 * cache lookup under the read lock, freeze and capture checks.  No launch
 * and no measurement is inside the timed loop (a launch would dwarf it).
 * Rows:
 *   cached           a measured shape on a tuning device (decision reuse)
 *   cached-2threads  the same from 2 threads at once (read-lock contention)
 *   frozen-exact     frozen device, the measured shape itself (reuse)
 *   frozen-larger    frozen device, a smaller shape served by the next
 *                    larger measured one (reuse)
 *   frozen-beyond    frozen device, beyond the bucket range (heuristic)
 *   trace-line       one decision plus its trace line written to /dev/null
 *                    (the line's own cost is trace-line minus cached)
 * Each sample is the mean over a batch of decisions; the figure is the
 * median sample, in nanoseconds per decision.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "bench_dispatch.h"
#include "fileio.h"
#include "internal.h"
#include "timing.h"
#include "tools.h"

#define MAX_BATCHES 1001

typedef struct bench_row {
    const char *name;
    vg_gemm_args args;
    vg_decision decision;
    const char *plan;
    double samples_ns[MAX_BATCHES];
    int nsamples;
} bench_row;

static double now_ns(void)
{
    return vg_now_us() * 1e3;
}

/* Script: every candidate costs its table index, so measuring is instant. */
static double instant_timer(const vg_plan *plan, const vg_gemm_args *a, void *user)
{
    (void)a; (void)user;
    return (double)(plan->tile_m + plan->split_k);
}

typedef struct run_ctx {
    vg_device *dev;
    const vg_config *cfg;
    const vg_gemm_args *args;
    int batch, with_trace;
    const char *op;
    double *samples;
    int nsamples;
    int bad;                   /* decisions that were not the expected one */
    vg_decision want;
} run_ctx;

static void run_batches(run_ctx *r)
{
    vg_choice c;
    for (int s = 0; s < r->nsamples; s++) {
        double t0 = now_ns();
        for (int i = 0; i < r->batch; i++) {
            /* as vg_gemm: the thread's policy, then the decision */
            const vg_policy *pol = vg_policy_current(r->dev);
            vg_dispatch_decide(r->dev, pol, r->args, &c);
            if (r->with_trace)
                vg_trace_decision(r->dev, r->op, r->args, &c, c.key.policy);
        }
        r->samples[s] = (now_ns() - t0) / r->batch;
        r->bad += c.decision != r->want;
    }
}

/* A second thread enters the same policy first: the stack is per thread. */
static void *run_thread(void *p)
{
    run_ctx *r = p;
    vg_policy_enter(r->dev, r->cfg);
    run_batches(r);
    vg_policy_leave();
    return NULL;
}

static void row_stats(const bench_row *row, double *med, double *lo, double *hi)
{
    *med = vg_median(row->samples_ns, (size_t)row->nsamples);
    *lo = *hi = row->samples_ns[0];
    for (int i = 1; i < row->nsamples; i++) {
        if (row->samples_ns[i] < *lo) *lo = row->samples_ns[i];
        if (row->samples_ns[i] > *hi) *hi = row->samples_ns[i];
    }
}

static int write_json(const char *path, const vg_config *cfg, uint64_t hash, bench_row *rows,
                      int nrows)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tool", "bench");
    cJSON_AddStringToObject(root, "build", tool_build_id());
    cJSON_AddStringToObject(root, "backend", "cpu");
    cJSON_AddNullToObject(root, "gpu");
    cJSON_AddNullToObject(root, "driver");
    cJSON_AddNullToObject(root, "cuda_version");
    cJSON_AddStringToObject(root, "arch_list", "");
    char hex[17];
    snprintf(hex, sizeof hex, "%016" PRIx64, hash);
    cJSON_AddStringToObject(root, "policy_hash", hex);
    char *cj = NULL;
    vg_config_to_json(cfg, &cj);
    cJSON_AddItemToObject(root, "config", cj ? cJSON_Parse(cj) : cJSON_CreateObject());
    free(cj);
    cJSON_AddNullToObject(root, "copy_bandwidth_gbs");
    cJSON *arr = cJSON_AddArrayToObject(root, "rows");
    for (int i = 0; i < nrows; i++) {
        bench_row *b = &rows[i];
        double med, lo, hi;
        row_stats(b, &med, &lo, &hi);
        int32_t tokens = vg_gemm_max_group_rows(&b->args);
        char name[160];
        snprintf(name, sizeof name, "dispatch/%s/%s/%s/t%d", b->name, vg_path_name(b->args.path),
                 vg_family_name(b->args.w.family), (int)tokens);
        cJSON *r = cJSON_CreateObject();
        cJSON_AddStringToObject(r, "name", name);
        cJSON_AddStringToObject(r, "kind", "dispatch");
        cJSON_AddStringToObject(r, "path", vg_path_name(b->args.path));
        cJSON_AddStringToObject(r, "family", vg_family_name(b->args.w.family));
        cJSON_AddNumberToObject(r, "m", b->args.m);
        cJSON_AddNumberToObject(r, "n", b->args.w.n);
        cJSON_AddNumberToObject(r, "k", b->args.w.k);
        cJSON_AddNumberToObject(r, "groups", b->args.w.groups);
        cJSON_AddNumberToObject(r, "tokens", tokens);
        cJSON_AddStringToObject(r, "plan", b->plan);
        cJSON_AddStringToObject(r, "decision", vg_decision_name(b->decision));
        cJSON *samples = cJSON_AddArrayToObject(r, "samples_us");
        for (int s = 0; s < b->nsamples; s++)
            cJSON_AddItemToArray(samples, cJSON_CreateNumber(b->samples_ns[s] / 1000.0));
        cJSON_AddNumberToObject(r, "median_us", med / 1000.0);
        cJSON_AddNumberToObject(r, "min_us", lo / 1000.0);
        cJSON_AddNumberToObject(r, "max_us", hi / 1000.0);
        cJSON_AddNumberToObject(r, "bytes", 0);
        cJSON_AddNumberToObject(r, "flops", 0);
        cJSON_AddNullToObject(r, "bandwidth_fraction");
        cJSON_AddNullToObject(r, "max_rel_rms");
        cJSON_AddItemToArray(arr, r);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    FILE *f = text ? fopen(path, "w") : NULL;
    int ok = f && fputs(text, f) >= 0 && fputc('\n', f) != EOF;
    if (f && fclose(f) != 0)
        ok = 0;
    free(text);
    return ok;
}

int vg_bench_dispatch_main(int argc, char **argv)
{
    const char *json = NULL;
    long batches = 201, batch = 20000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--dispatch") == 0)
            continue;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: voltgate bench --dispatch [--json FILE] [--batches N] [--batch N]\n"
                   "Median nanoseconds per dispatch decision (vg_dispatch_decide alone, no\n"
                   "launch) on the cpu device: a cached shape, the same from 2 threads, a\n"
                   "frozen device (exact, next larger, beyond the limits), and a decision plus\n"
                   "its trace line written to /dev/null.  Defaults: 201 batches of 20000.\n");
            return VG_EXIT_OK;
        }
        if (i + 1 < argc && strcmp(argv[i], "--json") == 0) {
            json = argv[++i];
            if (vg_check_output_path("--json", json) != VG_OK) {
                fprintf(stderr, "voltgate bench --dispatch: %s\n", vg_last_error());
                return VG_EXIT_USAGE;
            }
        } else if (i + 1 < argc && strcmp(argv[i], "--batches") == 0) {
            long long v = 0;
            int bad = vg_parse_int(argv[++i], (size_t)-1, 1, MAX_BATCHES, &v);
            batches = (long)v;
            if (bad) {
                fprintf(stderr, "voltgate bench --dispatch: --batches must be 1..%d\n", MAX_BATCHES);
                return VG_EXIT_USAGE;
            }
        } else if (i + 1 < argc && strcmp(argv[i], "--batch") == 0) {
            long long v = 0;
            int bad = vg_parse_int(argv[++i], (size_t)-1, 1, 10000000, &v);
            batch = (long)v;
            if (bad) {
                fprintf(stderr, "voltgate bench --dispatch: --batch must be 1..10000000\n");
                return VG_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "voltgate bench --dispatch: unknown argument '%s' (try --help)\n",
                    argv[i]);
            return VG_EXIT_USAGE;
        }
    }

    vg_device *dev = NULL;
    vg_config *cfg = NULL;
    if (vg_device_open("cpu", 0, &dev) != VG_OK || vg_config_default(&cfg) != VG_OK) {
        fprintf(stderr, "voltgate bench --dispatch: %s\n", vg_last_error());
        vg_device_close(dev);
        return VG_EXIT_FAIL;
    }
    vg_trace_set(dev, NULL);
    vg_device_set_timer(dev, instant_timer, NULL);
    /* An fp8 grouped layer of 8 groups (wo_a's path and group count; the
     * decision's cost does not depend on N and K, so a small layer keeps
     * the one measuring call cheap). */
    vg_layer layer = {.family = VG_FAMILY_FP8, .path = VG_PATH_GROUPED, .n = 64, .k = 128,
                      .groups = 8};
    vg_layer_buffers lb = {0};
    int rc = VG_EXIT_FAIL;
    bench_row *rows = calloc(6, sizeof *rows);
    if (!rows || vg_layer_buffers_alloc(dev, &layer, 16, &lb) != VG_OK) {
        fprintf(stderr, "voltgate bench --dispatch: %s\n", vg_last_error());
        goto out;
    }
    vg_policy_enter(dev, cfg);
    const vg_policy *pol = vg_policy_current(dev);
    vg_gemm_args measured, smaller, beyond;
    vg_layer_args(&lb, 8, &measured);
    vg_layer_args(&lb, 2, &smaller);
    vg_dispatch_info info;
    if (vg_gemm(dev, "grouped_gemm", &measured, &info) != VG_OK ||
        info.decision != VG_DECISION_MEASURE) {
        fprintf(stderr, "voltgate bench --dispatch: setup: %s\n", vg_last_error());
        goto out;
    }
    beyond = measured;
    beyond.path = VG_PATH_DENSE;   /* dense, M beyond the buckets: decided, never launched */
    beyond.w.groups = 1;
    beyond.m = VG_TUNE_MAX_BUCKET_ROWS + 1;
    beyond.offsets = beyond.offsets_host = NULL;

    struct {
        const char *name;
        vg_gemm_args *args;
        vg_decision want;
        int threads, trace, freeze;
    } plan[] = {
        {"cached", &measured, VG_DECISION_REUSE, 1, 0, 0},
        {"cached-2threads", &measured, VG_DECISION_REUSE, 2, 0, 0},
        {"trace-line", &measured, VG_DECISION_REUSE, 1, 1, 0},
        {"frozen-exact", &measured, VG_DECISION_REUSE, 1, 0, 1},
        {"frozen-larger", &smaller, VG_DECISION_REUSE, 1, 0, 1},
        {"frozen-beyond", &beyond, VG_DECISION_HEURISTIC, 1, 0, 1},
    };
    int nrows = 6, bad = 0;
    printf("dispatch decision cost (vg_policy_current + vg_dispatch_decide, no launch; cpu "
           "device;\n"
           "%ld batches of %ld decisions; ns per decision)\n", batches, batch);
    for (int i = 0; i < nrows; i++) {
        if (plan[i].freeze)
            vg_device_freeze_tuning(dev);
        if (plan[i].trace && vg_trace_set(dev, "/dev/null") != VG_OK) {
            fprintf(stderr, "voltgate bench --dispatch: %s\n", vg_last_error());
            goto out;
        }
        bench_row *row = &rows[i];
        row->name = plan[i].name;
        row->args = *plan[i].args;
        row->nsamples = (int)batches;
        run_ctx ctx[2];
        pthread_t th;
        double *extra = NULL;
        for (int t = 0; t < plan[i].threads; t++) {
            /* thread 1 records into a scratch array; thread 0 into the row */
            if (t == 1)
                extra = malloc(sizeof(double) * (size_t)batches);
            ctx[t] = (run_ctx){.dev = dev, .cfg = cfg, .args = plan[i].args, .batch = (int)batch,
                               .with_trace = plan[i].trace, .op = "grouped_gemm",
                               .samples = t ? extra : row->samples_ns,
                               .nsamples = (int)batches, .want = plan[i].want};
        }
        if (plan[i].threads == 2)
            pthread_create(&th, NULL, run_thread, &ctx[1]);
        run_batches(&ctx[0]);
        if (plan[i].threads == 2) {
            pthread_join(th, NULL);
            bad += ctx[1].bad;
        }
        free(extra);
        bad += ctx[0].bad;
        if (ctx[0].bad)
            fprintf(stderr, "voltgate bench --dispatch: %s: %d batches ended on an unexpected "
                            "decision\n", plan[i].name, ctx[0].bad);
        vg_choice c;
        vg_dispatch_decide(dev, pol, plan[i].args, &c);
        row->decision = c.decision;
        row->plan = c.plan ? c.plan->id : "none";
        if (plan[i].trace)
            vg_trace_set(dev, NULL);
        double med, lo, hi;
        row_stats(row, &med, &lo, &hi);
        printf("  %-16s %-9s median %7.1f ns  (min %.1f, max %.1f)  %s m=%d n=%d k=%d groups=%d "
               "plan=%s\n",
               row->name, vg_decision_name(row->decision), med, lo, hi,
               vg_path_name(row->args.path), (int)row->args.m, (int)row->args.w.n,
               (int)row->args.w.k, (int)row->args.w.groups, row->plan);
    }
    double cached, trace, lo, hi;
    row_stats(&rows[0], &cached, &lo, &hi);
    row_stats(&rows[2], &trace, &lo, &hi);
    printf("  trace line alone: %.1f ns (trace-line minus cached)\n", trace - cached);
    printf("  target: < 200 ns per cached decision: %s\n", cached < 200.0 ? "met" : "NOT met");
    if (bad) {
        fprintf(stderr, "voltgate bench --dispatch: %d batches ended on an unexpected decision\n",
                bad);
        goto out;
    }
    if (json && !write_json(json, cfg, pol->hash, rows, nrows)) {
        fprintf(stderr, "voltgate bench --dispatch: cannot write %s\n", json);
        goto out;
    }
    rc = VG_EXIT_OK;
out:
    vg_policy_leave();
    vg_layer_buffers_free(dev, &lb);
    free(rows);
    vg_config_free(cfg);
    vg_device_close(dev);
    return rc;
}
