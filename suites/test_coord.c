/*
 * Coordinated tuning (runtime/coord.c) in one process: threads play the
 * ranks, each with its own cpu device, and talk through a fake in-process
 * communicator (a barrier and a shared slot per rank), so the agreement
 * logic is tested without MPI (suites/test_coord_mpi.sh runs the real thing).
 *
 * Each rank does what vg_gemm() does around the hook: vg_dispatch_decide()
 * under the rank's policy, then vg_coord_decide().  That keeps these tests
 * independent of the hook in gemm.c; the MPI suite covers vg_gemm() end to
 * end.
 *
 * Expected winners are computed here by brute force over the scripted times
 * of every rank, from the kernel layer's plan table.  Threads only record
 * what they saw; every assertion runs on the main thread after the join.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "coord_internal.h"
#include "kernels.h"
#include "vgtest.h"
#include "voltgate/coord.h"

#define MAX_RANKS 4
#define ROWS 5   /* dense decode rows used by most tests */

/* ---- the fake communicator -------------------------------------------------- */

typedef struct fake_group {
    int size;
    pthread_barrier_t barrier;
    double f64[MAX_RANKS][64];
    int64_t i64[MAX_RANKS][64];
    atomic_int calls_min, calls_max;
} fake_group;

typedef struct fake_rank {
    fake_group *g;
    int rank;
    int fail_min;              /* allreduce_min returns VG_ERR_IO (after taking part) */
    int fail_max;              /* allreduce_max the same */
    int lie_candidates;        /* perturbs its candidate hash (a different plan table) */
    int lie_call;              /* perturbs its call hash (a call out of step) */
} fake_rank;

static vg_status fake_min(int64_t *buf, int n, void *handle)
{
    fake_rank *r = handle;
    fake_group *g = r->g;
    atomic_fetch_add(&g->calls_min, 1);
    if (r->lie_candidates && n >= 6) {
        buf[4] ^= 1;
        buf[5] = -buf[4];
    }
    if (r->lie_call && n >= 4) {
        buf[2] ^= 1;
        buf[3] = -buf[2];
    }
    memcpy(g->i64[r->rank], buf, (size_t)n * sizeof *buf);
    pthread_barrier_wait(&g->barrier);
    for (int i = 0; i < n; i++) {
        int64_t v = g->i64[0][i];
        for (int q = 1; q < g->size; q++)
            if (g->i64[q][i] < v)
                v = g->i64[q][i];
        buf[i] = v;
    }
    pthread_barrier_wait(&g->barrier);
    return r->fail_min ? vg_fail(VG_ERR_IO, "fake comm: allreduce failed") : VG_OK;
}

static vg_status fake_max(double *buf, int n, void *handle)
{
    fake_rank *r = handle;
    fake_group *g = r->g;
    atomic_fetch_add(&g->calls_max, 1);
    memcpy(g->f64[r->rank], buf, (size_t)n * sizeof *buf);
    pthread_barrier_wait(&g->barrier);
    for (int i = 0; i < n; i++) {
        double v = g->f64[0][i];
        for (int q = 1; q < g->size; q++)
            if (g->f64[q][i] > v)
                v = g->f64[q][i];
        buf[i] = v;
    }
    pthread_barrier_wait(&g->barrier);
    return r->fail_max ? vg_fail(VG_ERR_IO, "fake comm: allreduce failed") : VG_OK;
}

/* ---- scripted times ----------------------------------------------------------------- */

enum { MODE_DISAGREE, MODE_TIE, MODE_NAN_ALL_ON_LAST, MODE_NAN_WINNER_ON_LAST };

static size_t cands(vg_path path, int32_t rows, const vg_plan **out)
{
    size_t n = 0;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        if (vg_plan_offered(vg_cpu_plan_at(i), VG_FAMILY_FP8, path, rows))
            out[n++] = vg_cpu_plan_at(i);
    return n;
}

/* Rank r's time of candidate i of n, for a group of `size` ranks.
 * DISAGREE: rank r's favourite (r + rows) % n takes 1 us locally, others
 * 30 - ((i + rows) % n).  TIE: favourite 1, all others 5.  The NaN modes
 * are DISAGREE with the last rank unable to time every candidate, or only
 * the would-be winner. */
static double script_us(int mode, int r, int size, size_t i, size_t n, int32_t rows)
{
    size_t fav = ((size_t)r + (size_t)rows) % n;
    int last = r == size - 1;
    if (mode == MODE_NAN_ALL_ON_LAST && last)
        return NAN;
    if (mode == MODE_NAN_WINNER_ON_LAST && last && (i + (size_t)rows) % n == n - 1)
        return NAN;
    if (i == fav)
        return 1.0;
    return mode == MODE_TIE ? 5.0 : 30.0 - (double)((i + (size_t)rows) % n);
}

typedef struct rank_timer {
    int mode, rank, size;
} rank_timer;

static double timer(const vg_plan *plan, const vg_gemm_args *a, void *user)
{
    rank_timer *t = user;
    const vg_plan *c[64];
    int32_t rows = vg_gemm_max_group_rows(a);
    size_t n = cands(a->path, rows, c);
    for (size_t i = 0; i < n; i++)
        if (c[i] == plan)
            return script_us(t->mode, t->rank, t->size, i, n, rows);
    return 1000.0;
}

/* Brute force: the candidate whose slowest rank is fastest (first on a tie,
 * a NaN on any rank disqualifies) among those `keep` accepts (NULL: all);
 * *slowest its time.  NULL if none. */
static const vg_plan *expected_among(int mode, int size, int32_t rows,
                                     int (*keep)(const vg_plan *), double *slowest)
{
    const vg_plan *c[64];
    size_t n = cands(VG_PATH_DENSE, rows, c);
    const vg_plan *best = NULL;
    double best_us = 0.0;
    for (size_t i = 0; i < n; i++) {
        if (keep && !keep(c[i]))
            continue;
        double worst = 0.0;
        for (int r = 0; r < size; r++) {
            double us = script_us(mode, r, size, i, n, rows);
            if (isnan(us) || us > worst)
                worst = isnan(us) ? INFINITY : us;
        }
        if (isfinite(worst) && (!best || worst < best_us)) {
            best = c[i];
            best_us = worst;
        }
    }
    if (slowest)
        *slowest = best_us;
    return best;
}

static const vg_plan *expected(int mode, int size, int32_t rows, double *slowest)
{
    return expected_among(mode, size, rows, NULL, slowest);
}

/* ---- one rank ------------------------------------------------------------------------- */

typedef struct rank_state {
    /* set up by the test */
    fake_rank fr;
    rank_timer timer;
    vg_device *dev;
    vg_config *cfg;
    vg_layer_buffers b;
    int attach, freeze_first, capturing;
    int size_override;         /* a comm that claims another group size */
    /* between the decision and vg_coord_decide (races with other threads
     * of the same rank): store `between_plan` for the shape, or freeze */
    const vg_plan *between_plan;
    int between_freeze;
    int32_t rows;
    /* what the thread saw */
    vg_status st;
    char err[256];
    int handled;
    vg_choice c;
    double us;
    uint64_t measured_before, measured_after;
} rank_state;

typedef struct group {
    fake_group g;
    rank_state r[MAX_RANKS];
    int size;
} group;

#define CFG_COORD "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}}"
#define CFG_COORD_TUNE_OFF \
    "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true,\"fp8_tune_small_shapes\":false}}}"
#define CFG_COORD_IN_BLOCK                                                                   \
    "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}},"                          \
    "\"per_family\":{\"fp8\":{\"tiles_within_scale_block\":true}}}"
#define CFG_LOCAL "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":false}}}"

static uint64_t measured(vg_device *dev)
{
    vg_tuning_state ts;
    vg_device_tuning_state(dev, &ts);
    return ts.measured_total;
}

static void group_open(group *G, int size, int mode, const char *cfg)
{
    memset(G, 0, sizeof *G);
    G->size = size;
    G->g.size = size;
    pthread_barrier_init(&G->g.barrier, NULL, (unsigned)size);
    for (int q = 0; q < size; q++) {
        rank_state *r = &G->r[q];
        r->fr = (fake_rank){.g = &G->g, .rank = q};
        r->timer = (rank_timer){.mode = mode, .rank = q, .size = size};
        assert_int_equal(vg_device_open("cpu", 0, &r->dev), VG_OK);
        vg_trace_set(r->dev, NULL);
        assert_int_equal(vg_device_set_timer(r->dev, timer, &r->timer), VG_OK);
        assert_int_equal(vg_config_parse(cfg, &r->cfg), VG_OK);
        vg_layer l = {.family = VG_FAMILY_FP8, .path = VG_PATH_DENSE, .n = 128, .k = 128,
                      .groups = 1};
        assert_int_equal(vg_layer_buffers_alloc(r->dev, &l, 64, &r->b), VG_OK);
        r->attach = 1;
        r->rows = ROWS;
    }
}

static void group_close(group *G)
{
    for (int q = 0; q < G->size; q++) {
        rank_state *r = &G->r[q];
        vg_device_set_comm(r->dev, NULL);
        vg_layer_buffers_free(r->dev, &r->b);
        vg_device_close(r->dev);
        vg_config_free(r->cfg);
    }
    pthread_barrier_destroy(&G->g.barrier);
}

/* What vg_gemm() does around the hook, minus the launch and the trace. */
static void *rank_main(void *arg)
{
    rank_state *r = arg;
    if (r->attach) {
        vg_comm comm = {.handle = &r->fr, .rank = r->fr.rank,
                        .size = r->size_override ? r->size_override : r->fr.g->size,
                        .allreduce_max_f64 = fake_max, .allreduce_min_i64 = fake_min};
        r->st = vg_device_set_comm(r->dev, &comm);
        if (r->st != VG_OK)
            return NULL;
    }
    if (r->freeze_first)
        vg_device_freeze_tuning(r->dev);
    vg_device_test_set_capturing(r->dev, r->capturing);
    vg_policy pol;
    vg_policy_from_config(r->cfg, &pol);
    vg_gemm_args a;
    vg_layer_args(&r->b, r->rows, &a);
    r->measured_before = measured(r->dev);
    r->st = vg_dispatch_decide(r->dev, &pol, &a, &r->c);
    if (r->st == VG_OK && r->between_plan)
        vg_cache_put(&r->dev->tuning.cache, &r->c.key, r->between_plan, 3.0, 0, NULL);
    if (r->st == VG_OK && r->between_freeze)
        vg_device_freeze_tuning(r->dev);
    if (r->st == VG_OK) {
        a.path = r->c.path;
        r->us = 0.0;
        r->handled = 0;
        r->st = vg_coord_decide(r->dev, "gemm", &pol, &a, &r->c, &r->us, &r->handled);
    }
    if (r->st != VG_OK)
        snprintf(r->err, sizeof r->err, "%s", vg_last_error());
    r->measured_after = measured(r->dev);
    vg_device_test_set_capturing(r->dev, 0);
    return NULL;
}

static void group_run(group *G)
{
    pthread_t th[MAX_RANKS];
    for (int q = 0; q < G->size; q++)
        assert_int_equal(pthread_create(&th[q], NULL, rank_main, &G->r[q]), 0);
    for (int q = 0; q < G->size; q++)
        pthread_join(th[q], NULL);
}

static void assert_ok(const rank_state *r)
{
    if (r->st != VG_OK)
        print_error("rank %d: %s: %s\n", r->fr.rank, vg_status_str(r->st), r->err);
    assert_int_equal(r->st, VG_OK);
}

/* ---- tests ------------------------------------------------------------------------------ */

/* What per_family.fp8.tiles_within_scale_block keeps. */
static int in_scale_block(const vg_plan *p)
{
    return p->tile_n > 0 && p->tile_k > 0 && 128 % p->tile_n == 0 && 128 % p->tile_k == 0;
}

/* per_family.fp8.tiles_within_scale_block holds in a coordinated round as
 * in a local measurement (one candidate list): the winner is the in-block
 * plan whose slowest rank is fastest. */
static void coordinated_round_keeps_tiles_within_scale_block(void **state)
{
    (void)state;
    enum { SIZE = 2 };
    /* A row count whose winner over every plan is outside a scale block,
     * so that the option must change the winner. */
    int32_t rows = 0;
    for (int32_t t = 1; t <= VG_TUNE_MAX_DENSE_M && !rows; t++) {
        const vg_plan *all = expected(MODE_DISAGREE, SIZE, t, NULL);
        if (all && !in_scale_block(all))
            rows = t;
    }
    assert_true(rows > 0);
    double want_us = 0.0;
    const vg_plan *want = expected_among(MODE_DISAGREE, SIZE, rows, in_scale_block, &want_us);
    assert_non_null(want);
    group G;
    group_open(&G, SIZE, MODE_DISAGREE, CFG_COORD_IN_BLOCK);
    for (int q = 0; q < SIZE; q++)
        G.r[q].rows = rows;
    group_run(&G);
    for (int q = 0; q < SIZE; q++) {
        rank_state *r = &G.r[q];
        assert_ok(r);
        assert_int_equal(r->handled, 1);
        assert_int_equal(r->c.decision, VG_DECISION_MEASURE);
        assert_ptr_equal(r->c.plan, want);
        vgtest_assert_near(r->us, want_us, 0.0);
    }
    group_close(&G);
}

/* Every rank takes the candidate whose slowest rank is fastest, which is no
 * rank's local favourite, and stores it with the slowest-rank time. */
static void slowest_rank_wins(void **state)
{
    (void)state;
    for (int size = 2; size <= MAX_RANKS; size++) {
        group G;
        group_open(&G, size, MODE_DISAGREE, CFG_COORD);
        group_run(&G);
        double slowest = 0.0;
        const vg_plan *want = expected(MODE_DISAGREE, size, ROWS, &slowest);
        assert_non_null(want);
        for (int q = 0; q < size; q++) {
            rank_state *r = &G.r[q];
            assert_ok(r);
            assert_int_equal(r->handled, 1);
            assert_int_equal(r->c.decision, VG_DECISION_MEASURE);
            assert_ptr_equal(r->c.plan, want);
            vgtest_assert_near(r->us, slowest, 0.0);
            assert_int_equal(r->measured_after, r->measured_before + 1);
            const vg_plan *cached = NULL;
            assert_true(vg_cache_find(&r->dev->tuning.cache, &r->c.key, &cached));
            assert_ptr_equal(cached, want);
            vg_coord_stats cs;
            assert_int_equal(vg_device_coord_stats(r->dev, &cs), VG_OK);
            assert_int_equal(cs.attached, 1);
            assert_int_equal(cs.rank, q);
            assert_int_equal(cs.size, size);
            assert_int_equal(cs.agreements, 1);
            assert_int_equal(cs.measured, 1);
            /* the favourite (r + rows) % n: the winner is index n-1-... not it */
            const vg_plan *c[64];
            size_t n = cands(VG_PATH_DENSE, ROWS, c);
            int fav_is_winner = c[((size_t)q + ROWS) % n] == want;
            assert_int_equal(cs.diverged, fav_is_winner ? 0 : 1);
        }
        assert_int_equal(atomic_load(&G.g.calls_min), size);
        assert_int_equal(atomic_load(&G.g.calls_max), size);
        group_close(&G);
    }
}

static void tie_goes_to_table_order(void **state)
{
    (void)state;
    group G;
    group_open(&G, 3, MODE_TIE, CFG_COORD);
    group_run(&G);
    const vg_plan *c[64];
    assert_true(cands(VG_PATH_DENSE, ROWS, c) >= 2);
    for (int q = 0; q < 3; q++) {
        assert_ok(&G.r[q]);
        assert_ptr_equal(G.r[q].c.plan, c[0]);
        vgtest_assert_near(G.r[q].us, 5.0, 0.0);
    }
    group_close(&G);
}

/* Checks that no rank measured and all took the same decision and plan. */
static void assert_refused_alike(group *G, vg_decision want_d, const vg_plan *want)
{
    for (int q = 0; q < G->size; q++) {
        rank_state *r = &G->r[q];
        assert_ok(r);
        assert_int_equal(r->handled, 1);
        assert_int_equal(r->c.decision, want_d);
        assert_ptr_equal(r->c.plan, want);
        assert_int_equal(r->measured_after, r->measured_before);
        assert_int_equal(atomic_load(&r->dev->tuning.measured_total), r->measured_before);
        vg_coord_stats cs;
        vg_device_coord_stats(r->dev, &cs);
        assert_int_equal(cs.refused, 1);
        assert_int_equal(cs.measured, 0);
        /* A measurement begun for the round was ended (else a freeze would
         * wait for it forever). */
        assert_int_equal(r->dev->tuning.in_flight, 0);
        assert_int_equal(vg_device_freeze_tuning(r->dev), VG_OK);
    }
    assert_int_equal(atomic_load(&G->g.calls_max), 0);
}

/* Puts a measured plan for `rows` in every rank's cache (as a coordinated
 * round would have). */
static void seed(group *G, int32_t rows, const vg_plan *p)
{
    for (int q = 0; q < G->size; q++) {
        vg_policy pol;
        vg_policy_from_config(G->r[q].cfg, &pol);
        vg_cache_key key = {.policy = pol.hash, .family = VG_FAMILY_FP8, .path = VG_PATH_DENSE,
                            .n = 128, .k = 128, .groups = 1, .rows = rows};
        assert_int_equal(vg_cache_put(&G->r[q].dev->tuning.cache, &key, p, 7.0, 0, NULL), VG_OK);
    }
}

static void frozen_rank_refuses(void **state)
{
    (void)state;
    /* The next larger measured shape (rows 8) exists on every rank: all reuse it. */
    const vg_plan *p8 = vg_cpu_plan_at(4);
    group G;
    group_open(&G, 3, MODE_DISAGREE, CFG_COORD);
    seed(&G, 8, p8);
    G.r[1].freeze_first = 1;
    group_run(&G);
    assert_refused_alike(&G, VG_DECISION_REUSE, p8);
    group_close(&G);

    /* Nothing at or above: all take the heuristic. */
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    G.r[0].freeze_first = 1;
    group_run(&G);
    assert_refused_alike(&G, VG_DECISION_HEURISTIC,
                         vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, ROWS, 128, 128, NULL));
    group_close(&G);
}

static void capturing_rank_refuses(void **state)
{
    (void)state;
    const vg_plan *p8 = vg_cpu_plan_at(3);
    group G;
    group_open(&G, 3, MODE_DISAGREE, CFG_COORD);
    seed(&G, 8, p8);
    G.r[2].capturing = 1;
    group_run(&G);
    assert_refused_alike(&G, VG_DECISION_REUSE, p8);
    group_close(&G);
}

/* A rank with tuning off: every rank takes the heuristic, even where the
 * frozen lookup would have found a larger measured shape. */
static void tuning_off_rank_means_heuristic(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    vg_config_free(G.r[1].cfg);
    assert_int_equal(vg_config_parse(CFG_COORD_TUNE_OFF, &G.r[1].cfg), VG_OK);
    seed(&G, 8, vg_cpu_plan_at(4));
    G.r[0].freeze_first = 1;   /* frozen and tuning-off at once: heuristic wins */
    group_run(&G);
    assert_refused_alike(&G, VG_DECISION_HEURISTIC,
                         vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, ROWS, 128, 128, NULL));
    group_close(&G);
}

static void different_candidates_fail_everywhere(void **state)
{
    (void)state;
    group G;
    group_open(&G, 3, MODE_DISAGREE, CFG_COORD);
    G.r[2].fr.lie_candidates = 1;
    group_run(&G);
    for (int q = 0; q < 3; q++) {
        assert_int_equal(G.r[q].st, VG_ERR_STATE);
        assert_non_null(strstr(G.r[q].err, "different candidate plans"));
        assert_int_equal(G.r[q].measured_after, G.r[q].measured_before);
        assert_int_equal(G.r[q].dev->tuning.in_flight, 0);
        assert_int_equal(vg_device_freeze_tuning(G.r[q].dev), VG_OK);
    }
    assert_int_equal(atomic_load(&G.g.calls_max), 0);
    group_close(&G);
}

static void out_of_step_calls_fail_everywhere(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    G.r[0].fr.lie_call = 1;
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_int_equal(G.r[q].st, VG_ERR_STATE);
        assert_non_null(strstr(G.r[q].err, "different calls"));
        assert_non_null(strstr(G.r[q].err, "rows=5"));
    }
    group_close(&G);
}

static void comm_error_is_returned_and_releases(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    G.r[0].fr.fail_min = 1;
    G.r[1].fr.fail_min = 1;
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_int_equal(G.r[q].st, VG_ERR_IO);
        assert_non_null(strstr(G.r[q].err, "fake comm"));
        const vg_plan *p = NULL;
        assert_false(vg_cache_find(&G.r[q].dev->tuning.cache, &G.r[q].c.key, &p));
        assert_int_equal(G.r[q].dev->tuning.in_flight, 0);
        assert_int_equal(vg_device_freeze_tuning(G.r[q].dev), VG_OK);   /* no leaked in_flight */
    }
    group_close(&G);
}

/* A candidate one rank cannot time is no candidate; none at all on one rank:
 * every rank takes the heuristic and stores nothing. */
static void untimed_candidates(void **state)
{
    (void)state;
    group G;
    group_open(&G, 3, MODE_NAN_WINNER_ON_LAST, CFG_COORD);
    group_run(&G);
    double slowest;
    const vg_plan *want = expected(MODE_NAN_WINNER_ON_LAST, 3, ROWS, &slowest);
    assert_ptr_not_equal(want, expected(MODE_DISAGREE, 3, ROWS, NULL));
    for (int q = 0; q < 3; q++) {
        assert_ok(&G.r[q]);
        assert_ptr_equal(G.r[q].c.plan, want);
        vgtest_assert_near(G.r[q].us, slowest, 0.0);
    }
    group_close(&G);

    group_open(&G, 2, MODE_NAN_ALL_ON_LAST, CFG_COORD);
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_ok(&G.r[q]);
        assert_int_equal(G.r[q].handled, 1);
        assert_int_equal(G.r[q].c.decision, VG_DECISION_HEURISTIC);
        assert_ptr_equal(G.r[q].c.plan,
                         vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, ROWS, 128, 128, NULL));
        assert_int_equal(G.r[q].measured_after, G.r[q].measured_before);
    }
    group_close(&G);
}

/* No round without a communicator, with coordination off, on a cached
 * shape or beyond the bucket range (VG_TUNE_MAX_BUCKET_ROWS). */
static void no_round_when_not_needed(void **state)
{
    (void)state;
    group G;
    group_open(&G, 1, MODE_DISAGREE, CFG_COORD);
    rank_state *r = &G.r[0];
    r->attach = 0;
    group_run(&G);
    assert_ok(r);
    assert_int_equal(r->handled, 0);
    assert_int_equal(r->c.decision, VG_DECISION_MEASURE);
    group_close(&G);

    group_open(&G, 1, MODE_DISAGREE, CFG_LOCAL);
    group_run(&G);
    assert_ok(&G.r[0]);
    assert_int_equal(G.r[0].handled, 0);
    assert_int_equal(atomic_load(&G.g.calls_min), 0);
    group_close(&G);

    group_open(&G, 1, MODE_DISAGREE, CFG_COORD);
    seed(&G, ROWS, vg_cpu_plan_at(1));
    group_run(&G);
    assert_ok(&G.r[0]);
    assert_int_equal(G.r[0].handled, 0);
    assert_int_equal(G.r[0].c.decision, VG_DECISION_REUSE);
    assert_int_equal(atomic_load(&G.g.calls_min), 0);
    group_close(&G);

    group_open(&G, 1, MODE_DISAGREE, CFG_COORD);
    vg_layer_buffers_free(G.r[0].dev, &G.r[0].b);
    vg_layer l = {.family = VG_FAMILY_FP8, .path = VG_PATH_DENSE, .n = 128, .k = 128, .groups = 1};
    assert_int_equal(vg_layer_buffers_alloc(G.r[0].dev, &l, VG_TUNE_MAX_BUCKET_ROWS + 1,
                                            &G.r[0].b),
                     VG_OK);
    G.r[0].rows = VG_TUNE_MAX_BUCKET_ROWS + 1;
    group_run(&G);
    assert_ok(&G.r[0]);
    assert_int_equal(G.r[0].handled, 0);
    assert_int_equal(G.r[0].c.decision, VG_DECISION_HEURISTIC);
    assert_int_equal(atomic_load(&G.g.calls_min), 0);

    /* Just above the exact limit the round runs, keyed by the bucket. */
    G.r[0].rows = VG_TUNE_MAX_DENSE_M + 1;
    group_run(&G);
    assert_ok(&G.r[0]);
    assert_int_equal(G.r[0].handled, 1);
    assert_int_equal(G.r[0].c.decision, VG_DECISION_MEASURE);
    assert_int_equal(G.r[0].c.key.rows, 128);
    group_close(&G);
}

/* A rule that names a plan by the routing for every grouped call. */
static const vg_plan *routing_row_always(vg_family f, vg_path path, int32_t rows, int32_t n,
                                         int32_t k, const vg_gemm_args *call)
{
    return call && path != VG_PATH_DENSE ? vg_cpu_heuristic(f, path, rows, n, k, NULL) : NULL;
}

/* A call the rule decides by its routing ("uneven groups") has no round:
 * no collective, the rule's plan on every rank. */
static void uneven_call_has_no_round(void **state)
{
    (void)state;
    static vg_backend_ops weighs_routing;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    for (int q = 0; q < 2; q++) {
        rank_state *r = &G.r[q];
        weighs_routing = *r->dev->ops;
        weighs_routing.routing_plan = routing_row_always;
        r->dev->ops = &weighs_routing;
        vg_layer_buffers_free(r->dev, &r->b);
        vg_layer l = {.family = VG_FAMILY_FP8, .path = VG_PATH_GROUPED, .n = 128, .k = 128,
                      .groups = 2};
        assert_int_equal(vg_layer_buffers_alloc(r->dev, &l, 8, &r->b), VG_OK);
        r->rows = 4;
    }
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_ok(&G.r[q]);
        assert_int_equal(G.r[q].handled, 0);
        assert_int_equal(G.r[q].c.decision, VG_DECISION_HEURISTIC);
        assert_int_equal(G.r[q].c.why, VG_REASON_UNEVEN_GROUPS);
        assert_ptr_equal(G.r[q].c.plan,
                         vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_GROUPED, 4, 128, 128, NULL));
        assert_int_equal(G.r[q].measured_after, G.r[q].measured_before);
    }
    assert_int_equal(atomic_load(&G.g.calls_min), 0);
    assert_int_equal(atomic_load(&G.g.calls_max), 0);
    group_close(&G);
}

/* A group of one measures as alone would (its favourite wins). */
static void group_of_one(void **state)
{
    (void)state;
    group G;
    group_open(&G, 1, MODE_DISAGREE, CFG_COORD);
    group_run(&G);
    assert_ok(&G.r[0]);
    assert_int_equal(G.r[0].handled, 1);
    const vg_plan *c[64];
    size_t n = cands(VG_PATH_DENSE, ROWS, c);
    assert_ptr_equal(G.r[0].c.plan, c[(size_t)ROWS % n]);
    vgtest_assert_near(G.r[0].us, 1.0, 0.0);
    group_close(&G);
}

/* Once a round sees every rank frozen, no more rounds run. */
static void all_frozen_stops_rounds(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    G.r[0].freeze_first = G.r[1].freeze_first = 1;
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_ok(&G.r[q]);
        assert_int_equal(G.r[q].handled, 1);   /* the round that saw all frozen */
        vg_coord_stats cs;
        vg_device_coord_stats(G.r[q].dev, &cs);
        assert_int_equal(cs.all_frozen, 1);
        assert_int_equal(cs.agreements, 1);
        G.r[q].attach = 0;   /* keep the attachment (and its memory) */
        G.r[q].rows = ROWS + 2;
    }
    group_run(&G);
    assert_int_equal(atomic_load(&G.g.calls_min), 2);
    for (int q = 0; q < 2; q++) {
        assert_ok(&G.r[q]);
        assert_int_equal(G.r[q].handled, 0);
        assert_int_equal(G.r[q].c.decision, VG_DECISION_HEURISTIC);
    }
    group_close(&G);
}

/* Another thread of the rank stored the shape after the decision looked:
 * reuse it, with no round (every rank's cache has it alike). */
static void cached_since_the_decision(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    for (int q = 0; q < 2; q++)
        G.r[q].between_plan = vg_cpu_plan_at(2);
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_ok(&G.r[q]);
        assert_int_equal(G.r[q].handled, 1);
        assert_int_equal(G.r[q].c.decision, VG_DECISION_REUSE);
        assert_ptr_equal(G.r[q].c.plan, vg_cpu_plan_at(2));
    }
    assert_int_equal(atomic_load(&G.g.calls_min), 0);
    group_close(&G);
}

/* A freeze that lands on one rank between its decision (measure) and the
 * round: it refuses, nobody measures. */
static void freeze_since_the_decision(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    G.r[1].between_freeze = 1;
    group_run(&G);
    assert_refused_alike(&G, VG_DECISION_HEURISTIC,
                         vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, ROWS, 128, 128, NULL));
    group_close(&G);
}

static void comm_max_error_is_returned_and_releases(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    G.r[0].fr.fail_max = G.r[1].fr.fail_max = 1;
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_int_equal(G.r[q].st, VG_ERR_IO);
        const vg_plan *p = NULL;
        assert_false(vg_cache_find(&G.r[q].dev->tuning.cache, &G.r[q].c.key, &p));
        assert_int_equal(G.r[q].measured_after, G.r[q].measured_before);
        assert_int_equal(G.r[q].dev->tuning.in_flight, 0);
    }
    group_close(&G);
}

static void group_size_mismatch_fails_everywhere(void **state)
{
    (void)state;
    group G;
    group_open(&G, 2, MODE_DISAGREE, CFG_COORD);
    G.r[1].size_override = 3;
    group_run(&G);
    for (int q = 0; q < 2; q++) {
        assert_int_equal(G.r[q].st, VG_ERR_STATE);
        assert_non_null(strstr(G.r[q].err, "group size"));
        assert_int_equal(G.r[q].dev->tuning.in_flight, 0);
    }
    group_close(&G);
}

static vg_status noop_min(int64_t *b, int n, void *h) { (void)b; (void)n; (void)h; return VG_OK; }
static vg_status noop_max(double *b, int n, void *h) { (void)b; (void)n; (void)h; return VG_OK; }

static void set_comm_checks(void **state)
{
    (void)state;
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_comm ok = {.handle = NULL, .rank = 1, .size = 2, .allreduce_max_f64 = noop_max,
                  .allreduce_min_i64 = noop_min};
    vg_comm bad = ok;
    bad.allreduce_max_f64 = NULL;
    assert_int_equal(vg_device_set_comm(dev, &bad), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "allreduce_max_f64"));
    bad = ok;
    bad.rank = 2;
    assert_int_equal(vg_device_set_comm(dev, &bad), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "rank 2 of size 2"));
    bad = ok;
    bad.size = 0;
    bad.rank = 0;
    assert_int_equal(vg_device_set_comm(dev, &bad), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_device_set_comm(NULL, &ok), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_device_coord_stats(dev, NULL), VG_ERR_INVALID_ARG);

    vg_coord_stats cs;
    assert_int_equal(vg_device_coord_stats(dev, &cs), VG_OK);
    assert_int_equal(cs.attached, 0);
    assert_int_equal(vg_device_set_comm(dev, &ok), VG_OK);
    assert_int_equal(vg_device_coord_stats(dev, &cs), VG_OK);
    assert_int_equal(cs.attached, 1);
    assert_int_equal(cs.rank, 1);
    assert_int_equal(cs.size, 2);
    assert_int_equal(vg_device_set_comm(dev, NULL), VG_OK);
    assert_int_equal(vg_device_coord_stats(dev, &cs), VG_OK);
    assert_int_equal(cs.attached, 0);
    assert_int_equal(vg_device_set_comm(dev, NULL), VG_OK);   /* detaching twice is fine */

    /* A closed device's communicator is forgotten (vg_device_close calls this). */
    assert_int_equal(vg_device_set_comm(dev, &ok), VG_OK);
    vg_coord_device_closed(dev);
    assert_int_equal(vg_device_coord_stats(dev, &cs), VG_OK);
    assert_int_equal(cs.attached, 0);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(slowest_rank_wins),
        cmocka_unit_test(tie_goes_to_table_order),
        cmocka_unit_test(frozen_rank_refuses),
        cmocka_unit_test(capturing_rank_refuses),
        cmocka_unit_test(tuning_off_rank_means_heuristic),
        cmocka_unit_test(different_candidates_fail_everywhere),
        cmocka_unit_test(out_of_step_calls_fail_everywhere),
        cmocka_unit_test(comm_error_is_returned_and_releases),
        cmocka_unit_test(untimed_candidates),
        cmocka_unit_test(no_round_when_not_needed),
        cmocka_unit_test(uneven_call_has_no_round),
        cmocka_unit_test(group_of_one),
        cmocka_unit_test(all_frozen_stops_rounds),
        cmocka_unit_test(cached_since_the_decision),
        cmocka_unit_test(freeze_since_the_decision),
        cmocka_unit_test(comm_max_error_is_returned_and_releases),
        cmocka_unit_test(group_size_mismatch_fails_everywhere),
        cmocka_unit_test(set_comm_checks),
        cmocka_unit_test(coordinated_round_keeps_tiles_within_scale_block),
    };
    return VGTEST_MAIN("coord", tests);
}
