/*
 * Stress: 8 threads issue a million dispatch decisions (vg_gemm on the cpu
 * backend, tiny shapes, the scripted timer so that a measurement costs
 * nothing) over every family and path, rows on both sides of the grouped
 * reroute and the tuning limit, empty calls (M = 0), and four policies
 * (outside any engine, two engine configs, one with tuning off), while a
 * ninth thread freezes the device while they are still measuring.
 *
 * What must hold (DESIGN.md, "Freeze"):
 *   - no call that starts after vg_device_freeze_tuning() returned decides
 *     `measure`, and the timer is never called after it returned;
 *   - the counters agree: measured_after_freeze 0, measured_total ==
 *     measured_before_freeze == cache entries == distinct shapes the
 *     threads saw measured;
 *   - the trace (a file, every decision) agrees: after the point where every
 *     thread has seen the freeze, no `decision=measure`, every line
 *     frozen=1 and measured=<measured_before_freeze>;
 *   - no cache entry is lost: every shape measured before the freeze is
 *     answered `reuse` (cached, with the plan the timer made win) after it;
 *   - no data race: the suite is in the Makefile's TSAN_SUITES.
 *
 * VG_STRESS_CALLS overrides the number of calls (default 1,000,000; under
 * ThreadSanitizer 100,000 and under AddressSanitizer 250,000, so the
 * sanitizer runs stay bounded).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "vgtest.h"
#include "voltgate/runtime.h"

#define THREADS 8
#define NPOLICY 4        /* 0: outside any engine; 1..3: configs below */
#define N0 16
#define K 16
#define G 2
#define MAX_ROWS 72      /* dense M up to 72 (> VG_TUNE_MAX_DENSE_M) */
#define MAX_TOKENS 18    /* tokens per group up to 18 (> GROUPED_DECODE_MAX_TOKENS) */
#define MAX_MEASURED 8192

#if defined(__SANITIZE_THREAD__)
#define DEFAULT_CALLS 30000
#elif defined(__SANITIZE_ADDRESS__)
#define DEFAULT_CALLS 250000
#else
#define DEFAULT_CALLS 1000000
#endif

static const char *const policy_json[NPOLICY] = {
    NULL,
    "{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":true}}}",
    "{\"sm70_fp8\":{\"native\":{\"fp8_grouped_bmm_decode\":false}}}",
    "{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":false}}}",
};

/* ---- the scripted timer ------------------------------------------------------------ */

static vg_device *g_dev;
static atomic_long g_timer_calls;

/* The winner of (family, path, rows): applicable plan number
 * (rows * 7 + family) % count in table order; 1 us, the others 5 us + i. */
static int32_t kept_rows(uint8_t path_ran, int32_t rows);

/* The timer's favourite for a call: one per measured shape (so per bucket:
 * two threads measuring one bucket with different rows agree). */
static const vg_plan *winner(vg_family f, vg_path path, int32_t rows)
{
    rows = kept_rows((uint8_t)path, rows);
    const vg_plan *plans[64];
    size_t n = 0;
    if (vg_device_plans(g_dev, f, path, rows, plans, 64, &n) != VG_OK || n == 0)
        return NULL;
    if (n > 64)
        n = 64;
    /* the candidates: the plans offered at these rows */
    size_t offered = 0;
    for (size_t i = 0; i < n; i++)
        if (vg_plan_offered(plans[i], f, path, rows))
            plans[offered++] = plans[i];
    if (offered == 0)
        return NULL;
    return plans[((size_t)rows * 7u + (size_t)f) % offered];
}

static double timer(const vg_plan *plan, const vg_gemm_args *a, void *user)
{
    (void)user;
    atomic_fetch_add(&g_timer_calls, 1);
    const vg_plan *w = winner(a->w.family, a->path, vg_gemm_max_group_rows(a));
    return plan == w ? 1.0 : 5.0 + (double)(plan->tile_m + plan->split_k);
}

/* ---- the world ----------------------------------------------------------------------- */

typedef struct measured {
    uint8_t policy, family, path_asked, path_ran;
    int32_t n, rows;
    const vg_plan *plan;
} measured;

typedef struct worker {
    int id;
    uint32_t seed;
    long calls;
    /* the shared layers with this thread's own Y (the GEMMs write Y:
     * threads must not share it; weights, X and offsets are read-only) */
    vg_layer_buffers dense[VG_FAMILY_COUNT][2], grouped[VG_FAMILY_COUNT][2];
    int32_t offs[G + 1];
    void *ws;                 /* own split-K workspace (the device's is one lock) */
    size_t ws_bytes;
    /* what this thread saw */
    long decisions[3], measures_after, errors, empty_calls;
    measured seen[MAX_MEASURED];
    int nseen;
    char first_error[256];
} worker;

static vg_config *g_cfg[NPOLICY];
static atomic_long g_calls_done;
static atomic_int g_freeze_done, g_acks;
static long g_total_calls;

static uint32_t next_rand(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static const char *op_for(vg_path p)
{
    return p == VG_PATH_DENSE ? "gemm" : p == VG_PATH_MOE ? "moe_gemm" : "grouped_gemm";
}

/* The call for (family, width, path, rows) on w's buffers. */
static vg_gemm_args make_call(worker *w, vg_family f, int wi, vg_path path, int32_t rows)
{
    vg_gemm_args a;
    if (path == VG_PATH_DENSE) {
        int32_t m = rows;
        assert_int_equal(vg_layer_args(&w->dense[f][wi], m > 0 ? m : 1, &a), VG_OK);
        a.m = m;   /* M = 0: an empty call on valid buffers */
        return a;
    }
    assert_int_equal(vg_layer_args(&w->grouped[f][wi], rows, &a), VG_OK);
    if (path == VG_PATH_MOE) {
        /* group 0 takes `rows`, group 1 a share up to rows (0 included) */
        w->offs[0] = 0;
        w->offs[1] = rows;
        w->offs[2] = rows + (int32_t)(next_rand(&w->seed) % (uint32_t)(rows + 1));
        a.m = w->offs[2];
        a.offsets = a.offsets_host = w->offs;
    }
    a.path = path;
    return a;
}

static void note_error(worker *w, const char *what)
{
    if (!w->errors++)
        snprintf(w->first_error, sizeof w->first_error, "%s: %s", what, vg_last_error());
}

static void *run_worker(void *p)
{
    worker *w = p;
    int acked = 0;
    for (long i = 0; i < w->calls; i++) {
        int after = atomic_load(&g_freeze_done);
        if (after && !acked) {
            /* every line this thread traced so far is written */
            atomic_fetch_add(&g_acks, 1);
            acked = 1;
        }
        uint32_t r = next_rand(&w->seed);
        vg_family f = (vg_family)(r % VG_FAMILY_COUNT);
        int wi = (int)((r >> 4) & 1);
        vg_path path = (vg_path)((r >> 5) % VG_PATH_COUNT);
        int pol = (int)((r >> 8) % NPOLICY);
        int32_t rows;
        if (path == VG_PATH_DENSE) {
            unsigned s = (r >> 12) % 64;
            rows = s == 0 ? 0 : s < 60 ? (int32_t)(1 + (r >> 18) % 12)
                                       : (int32_t)(60 + (r >> 18) % (MAX_ROWS - 59));
        } else {
            rows = 1 + (int32_t)((r >> 12) % MAX_TOKENS);
        }
        vg_gemm_args a = make_call(w, f, wi, path, rows);
        /* one call in eight uses the device workspace (and its lock) */
        if ((r >> 28) != 0) {
            a.workspace = w->ws;
            a.workspace_bytes = w->ws_bytes;
        }
        if (pol && vg_policy_enter(g_dev, g_cfg[pol]) != VG_OK) {
            note_error(w, "vg_policy_enter");
            continue;
        }
        vg_dispatch_info info;
        vg_status st = vg_gemm(g_dev, op_for(path), &a, &info);
        if (pol)
            vg_policy_leave();
        atomic_fetch_add_explicit(&g_calls_done, 1, memory_order_relaxed);
        if (st != VG_OK) {
            note_error(w, "vg_gemm");
            continue;
        }
        w->decisions[info.decision]++;
        if (a.m == 0) {
            w->empty_calls++;
            if (info.decision != VG_DECISION_HEURISTIC)
                note_error(w, "an empty call was not heuristic");
        }
        if (info.decision == VG_DECISION_MEASURE) {
            if (after)
                w->measures_after++;
            if (w->nseen < MAX_MEASURED)
                w->seen[w->nseen++] = (measured){(uint8_t)pol, (uint8_t)f, (uint8_t)path,
                                                 (uint8_t)info.path, a.w.n,
                                                 vg_gemm_max_group_rows(&a), info.plan};
        }
    }
    if (!acked)
        atomic_fetch_add(&g_acks, 1);
    return NULL;
}

typedef struct freezer {
    long at_calls;
    long timer_calls_at_freeze;
    off_t trace_at_freeze, trace_all_acked;
    const char *trace;
    double freeze_seconds;
} freezer;

static off_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? sb.st_size : -1;
}

static void *run_freezer(void *p)
{
    freezer *fz = p;
    while (atomic_load(&g_calls_done) < fz->at_calls)
        usleep(200);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    vg_device_freeze_tuning(g_dev);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    fz->freeze_seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;
    fz->timer_calls_at_freeze = atomic_load(&g_timer_calls);
    fz->trace_at_freeze = file_size(fz->trace);
    atomic_store(&g_freeze_done, 1);
    while (atomic_load(&g_acks) < THREADS)
        sched_yield();
    fz->trace_all_acked = file_size(fz->trace);
    return NULL;
}

/* ---- trace parsing -------------------------------------------------------------------- */

typedef struct trace_counts {
    long lines, measure_before, measure_between, measure_after;
    long after_lines, after_not_frozen, after_wrong_count;
} trace_counts;

static void parse_trace(const char *path, off_t at_freeze, off_t all_acked,
                        uint64_t measured_before, trace_counts *c)
{
    memset(c, 0, sizeof *c);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    char line[1200];
    off_t pos = 0;
    while (fgets(line, sizeof line, f)) {
        off_t start = pos;
        pos += (off_t)strlen(line);
        if (strncmp(line, "vg-trace ", 9) != 0)
            continue;   /* notes and LUT lines */
        c->lines++;
        const char *d = strstr(line, " decision=");
        const char *m = strstr(line, " measured=");
        const char *fr = strstr(line, " frozen=");
        assert_non_null(d);
        assert_non_null(m);
        assert_non_null(fr);
        int is_measure = strncmp(d + 10, "measure ", 8) == 0;
        if (start < at_freeze)
            c->measure_before += is_measure;
        else if (start < all_acked)
            c->measure_between += is_measure;
        else {
            c->after_lines++;
            c->measure_after += is_measure;
            if (fr[8] != '1')
                c->after_not_frozen++;
            if (strtoull(m + 10, NULL, 10) != measured_before)
                c->after_wrong_count++;
        }
    }
    fclose(f);
}

/* ---- the test --------------------------------------------------------------------------- */

/* The rows a measurement is kept under (POLICY.md, "The decision", written
 * out here for this suite's rows): dense M above 64 in power-of-two
 * buckets, everything else exact.  Two threads may measure one bucket at
 * once with different rows (nothing serializes measurements of one key);
 * the cache keeps one entry, so shapes are told apart by bucket. */
static int32_t kept_rows(uint8_t path_ran, int32_t rows)
{
    if (path_ran != VG_PATH_DENSE || rows <= 64)
        return rows;
    int32_t b = 128;
    while (b < rows)
        b *= 2;
    return b;
}

static int same_shape(const measured *a, const measured *b)
{
    return a->policy == b->policy && a->family == b->family && a->path_ran == b->path_ran &&
           a->n == b->n && kept_rows(a->path_ran, a->rows) == kept_rows(b->path_ran, b->rows);
}

static void million_decisions_across_a_freeze(void **state)
{
    (void)state;
    const char *env = getenv("VG_STRESS_CALLS");
    g_total_calls = env ? atol(env) : DEFAULT_CALLS;
    assert_true(g_total_calls >= THREADS * 100);

    assert_int_equal(vg_device_open("cpu", 0, &g_dev), VG_OK);
    assert_int_equal(vg_device_set_timer(g_dev, timer, NULL), VG_OK);
    for (int i = 1; i < NPOLICY; i++)
        assert_int_equal(vg_config_parse(policy_json[i], &g_cfg[i]), VG_OK);
    /* the trace: every decision, in RAM where there is a tmpfs */
    char trace[512];
    const char *tdir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(trace, sizeof trace, "%s/vg-stress-trace-%ld", tdir, (long)getpid());
    unlink(trace);
    assert_int_equal(vg_trace_set(g_dev, trace), VG_OK);

    static worker w[THREADS];
    static vg_layer_buffers shared_dense[VG_FAMILY_COUNT][2], shared_grouped[VG_FAMILY_COUNT][2];
    memset(w, 0, sizeof w);
    const int32_t widths[2] = {N0, 2 * N0};
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int i = 0; i < 2; i++) {
            vg_layer ld = {(vg_family)f, VG_PATH_DENSE, widths[i], K, 1};
            vg_layer lg = {(vg_family)f, VG_PATH_GROUPED, widths[i], K, G};
            assert_int_equal(vg_layer_buffers_alloc(g_dev, &ld, MAX_ROWS, &shared_dense[f][i]),
                             VG_OK);
            assert_int_equal(
                vg_layer_buffers_alloc(g_dev, &lg, MAX_TOKENS, &shared_grouped[f][i]), VG_OK);
        }
    for (int t = 0; t < THREADS; t++) {
        w[t].id = t;
        w[t].seed = 0x9e3779b9u * (uint32_t)(t + 1);
        w[t].calls = g_total_calls / THREADS + (t < g_total_calls % THREADS);
        for (int f = 0; f < VG_FAMILY_COUNT; f++)
            for (int i = 0; i < 2; i++) {
                w[t].dense[f][i] = shared_dense[f][i];
                w[t].grouped[f][i] = shared_grouped[f][i];
                size_t yd = (size_t)MAX_ROWS * (size_t)widths[i] * 4;
                size_t yg = (size_t)MAX_TOKENS * G * (size_t)widths[i] * 4;
                void *y = NULL;
                assert_int_equal(vg_device_alloc(g_dev, yd, &y), VG_OK);
                w[t].dense[f][i].y = y;
                assert_int_equal(vg_device_alloc(g_dev, yg, &y), VG_OK);
                w[t].grouped[f][i].y = y;
            }
        /* the largest workspace any call of the run can ask for */
        size_t most = 0;
        for (int f = 0; f < VG_FAMILY_COUNT; f++) {
            vg_gemm_args a = make_call(&w[t], (vg_family)f, 1, VG_PATH_DENSE, MAX_ROWS);
            size_t need = 0;
            assert_int_equal(vg_gemm_workspace_bytes(g_dev, &a, &need), VG_OK);
            most = need > most ? need : most;
            for (int32_t tok = 1; tok <= MAX_TOKENS; tok++) {
                a = make_call(&w[t], (vg_family)f, 1, VG_PATH_GROUPED, tok);
                assert_int_equal(vg_gemm_workspace_bytes(g_dev, &a, &need), VG_OK);
                most = need > most ? need : most;
                a.path = VG_PATH_MOE;
                w[t].offs[2] = 2 * tok;
                a.m = 2 * tok;
                a.offsets = a.offsets_host = w[t].offs;
                assert_int_equal(vg_gemm_workspace_bytes(g_dev, &a, &need), VG_OK);
                most = need > most ? need : most;
            }
        }
        w[t].ws_bytes = most ? most : 64;
        assert_int_equal(vg_device_alloc(g_dev, w[t].ws_bytes, &w[t].ws), VG_OK);
    }
    atomic_store(&g_calls_done, 0);
    atomic_store(&g_freeze_done, 0);
    atomic_store(&g_acks, 0);
    atomic_store(&g_timer_calls, 0);
    /* early enough that measurements are still going on when it lands (the
     * shapes are first seen over the first ~5% of the calls) */
    freezer fz = {.at_calls = g_total_calls / 100, .trace = trace};

    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    pthread_t th[THREADS], fth;
    assert_int_equal(pthread_create(&fth, NULL, run_freezer, &fz), 0);
    for (int t = 0; t < THREADS; t++)
        assert_int_equal(pthread_create(&th[t], NULL, run_worker, &w[t]), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    pthread_join(fth, NULL);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9;

    long dec[3] = {0, 0, 0}, after = 0, errors = 0, empty = 0;
    for (int t = 0; t < THREADS; t++) {
        for (int d = 0; d < 3; d++)
            dec[d] += w[t].decisions[d];
        after += w[t].measures_after;
        empty += w[t].empty_calls;
        if (w[t].errors) {
            print_error("thread %d: %ld errors, first: %s\n", t, w[t].errors, w[t].first_error);
            errors += w[t].errors;
        }
    }
    vg_tuning_state ts;
    assert_int_equal(vg_device_tuning_state(g_dev, &ts), VG_OK);
    print_message("%ld calls by %d threads in %.2f s (%.0f calls/s); freeze after %ld calls "
                  "took %.3f ms\n",
                  (long)atomic_load(&g_calls_done), THREADS, secs,
                  (double)atomic_load(&g_calls_done) / secs, fz.at_calls,
                  fz.freeze_seconds * 1e3);
    print_message("decisions: measure %ld, reuse %ld, heuristic %ld (empty calls %ld); "
                  "measure after the freeze %ld\n",
                  dec[VG_DECISION_MEASURE], dec[VG_DECISION_REUSE], dec[VG_DECISION_HEURISTIC],
                  empty, after);
    print_message("tuning state: frozen %d, measured before %llu, after %llu, total %llu, cache "
                  "entries %llu; timer calls %ld at the freeze, %ld at the end\n",
                  ts.frozen, (unsigned long long)ts.measured_before_freeze,
                  (unsigned long long)ts.measured_after_freeze,
                  (unsigned long long)ts.measured_total, (unsigned long long)ts.cache_entries,
                  fz.timer_calls_at_freeze, (long)atomic_load(&g_timer_calls));

    assert_int_equal(errors, 0);
    assert_int_equal(atomic_load(&g_calls_done), g_total_calls);
    /* the run must have measured before the freeze and answered after it */
    assert_true(dec[VG_DECISION_MEASURE] > 0);
    assert_true(dec[VG_DECISION_REUSE] > 0);
    assert_true(empty > 0);
    assert_int_equal(after, 0);
    assert_int_equal(atomic_load(&g_timer_calls), fz.timer_calls_at_freeze);
    assert_int_equal(ts.frozen, 1);
    assert_int_equal(ts.measured_after_freeze, 0);
    assert_int_equal(ts.measured_total, ts.measured_before_freeze);
    assert_int_equal(ts.cache_entries, ts.measured_total);

    /* distinct measured shapes seen by the threads = the cache */
    static measured all[THREADS * MAX_MEASURED];
    int nall = 0;
    for (int t = 0; t < THREADS; t++) {
        assert_true(w[t].nseen < MAX_MEASURED);
        for (int i = 0; i < w[t].nseen; i++) {
            int dup = 0;
            for (int j = 0; j < nall && !dup; j++)
                dup = same_shape(&all[j], &w[t].seen[i]);
            if (!dup)
                all[nall++] = w[t].seen[i];
        }
    }
    print_message("%d distinct shapes measured\n", nall);
    assert_int_equal((uint64_t)nall, ts.cache_entries);

    /* the trace */
    trace_counts tc;
    parse_trace(trace, fz.trace_at_freeze, fz.trace_all_acked, ts.measured_before_freeze, &tc);
    print_message("trace: %ld decision lines; measure: %ld before the freeze returned, %ld while "
                  "threads caught up, %ld after (of %ld lines after; %ld not frozen=1, %ld with "
                  "another measured= count)\n",
                  tc.lines, tc.measure_before, tc.measure_between, tc.measure_after,
                  tc.after_lines, tc.after_not_frozen, tc.after_wrong_count);
    assert_int_equal(tc.lines, g_total_calls);
    assert_int_equal(tc.measure_before + tc.measure_between, dec[VG_DECISION_MEASURE]);
    assert_true(tc.measure_between <= THREADS);
    assert_true(tc.after_lines > 0);
    assert_int_equal(tc.measure_after, 0);
    assert_int_equal(tc.after_not_frozen, 0);
    assert_int_equal(tc.after_wrong_count, 0);
    unlink(trace);
    vg_trace_set(g_dev, NULL);

    /* no lost entry: every shape measured before the freeze is reused, cached,
     * with the plan the timer made win */
    long timer_before = atomic_load(&g_timer_calls);
    int lost = 0;
    for (int i = 0; i < nall; i++) {
        const measured *m = &all[i];
        vg_gemm_args a = make_call(&w[0], (vg_family)m->family, m->n == N0 ? 0 : 1,
                                   (vg_path)m->path_asked, m->rows);
        if (m->path_asked == VG_PATH_MOE) {
            w[0].offs[2] = w[0].offs[1];   /* max group rows = m->rows exactly */
            a.m = w[0].offs[2];
        }
        if (m->policy)
            vg_policy_enter(g_dev, g_cfg[m->policy]);
        vg_dispatch_info info;
        vg_status st = vg_gemm(g_dev, op_for((vg_path)m->path_asked), &a, &info);
        if (m->policy)
            vg_policy_leave();
        if (st != VG_OK || info.decision != VG_DECISION_REUSE || info.plan != m->plan ||
            info.plan != winner((vg_family)m->family, (vg_path)m->path_ran, m->rows) ||
            strcmp(info.why, "cached") != 0) {
            if (!lost)
                print_error("lost: policy %d family %s path %s n %d rows %d: %s %s plan %s\n",
                            m->policy, vg_family_name((vg_family)m->family),
                            vg_path_name((vg_path)m->path_ran), (int)m->n, (int)m->rows,
                            vg_status_str(st), vg_decision_name(info.decision),
                            info.plan ? info.plan->id : "none");
            lost++;
        }
    }
    assert_int_equal(lost, 0);
    assert_int_equal(atomic_load(&g_timer_calls), timer_before);

    for (int t = 0; t < THREADS; t++) {
        for (int f = 0; f < VG_FAMILY_COUNT; f++)
            for (int i = 0; i < 2; i++) {
                vg_device_free(g_dev, w[t].dense[f][i].y);
                vg_device_free(g_dev, w[t].grouped[f][i].y);
            }
        vg_device_free(g_dev, w[t].ws);
    }
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int i = 0; i < 2; i++) {
            vg_layer_buffers_free(g_dev, &shared_dense[f][i]);
            vg_layer_buffers_free(g_dev, &shared_grouped[f][i]);
        }
    for (int i = 1; i < NPOLICY; i++)
        vg_config_free(g_cfg[i]);
    vg_device_close(g_dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(million_decisions_across_a_freeze),
    };
    return VGTEST_MAIN("stress_freeze", tests);
}
