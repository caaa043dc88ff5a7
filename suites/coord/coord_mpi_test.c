/*
 * Coordinated tuning across MPI ranks (issue 8), on the cpu backend.
 *
 *   mpirun -np N build/suites/coord_mpi_test [WORKDIR]
 *
 * Every rank runs the same scenarios in the same order, each on a fresh cpu
 * device with a scripted timer that makes the ranks disagree: on rank r the
 * candidate at index (r + rows) % count of the call's candidates is by far
 * the fastest locally (1 us), every other candidate takes 30 - ((i + rows) %
 * count) us.  The expected coordinated winner is computed here by brute force
 * over that formula for every rank (the candidate whose slowest rank is
 * fastest, first in table order on a tie) from the kernel layer's plan table,
 * never from the runtime under test.
 *
 * Scenarios:
 *   coordinated   every rank measures the same shapes: all agree on the
 *                 brute-force winner (not the local favourite), the second
 *                 pass reuses it, the LUTs are byte-identical across ranks.
 *   tie           every candidate's slowest time is equal: the first in
 *                 table order wins on every rank.
 *   uncoordinated fp8_coordinated_tuning off: each rank keeps its local
 *                 favourite, the ranks diverge, and their traces show it.
 *   frozen        one rank frozen: it refuses, no rank measures, every rank
 *                 reuses the next larger measured plan or takes the
 *                 heuristic, and the trace says who refused and why; once
 *                 all are frozen, no more rounds.
 *   capturing     one rank capturing: the same, reason capturing.
 *   tuning-off    one rank with tuning off: every rank takes the heuristic.
 *   mismatch      ranks at different calls: every rank fails with
 *                 VG_ERR_STATE naming it (no hang, no silent agreement).
 *   warm-up       vg_warmup() of an fp8 grouped and a dense layer with
 *                 freeze_tuning_after_warmup: every rank measured the same
 *                 shapes, same plans, same LUT bytes, all frozen.
 *
 * Each failed check prints "rank R: FAIL ..."; the exit status is 1 on every
 * rank when any rank failed, else 0, and rank 0 prints one summary line.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mpi.h>

#include "internal.h"
#include "kernels.h"
#include "voltgate/coord.h"
#include "voltgate/coord_mpi.h"
#include "voltgate/runtime.h"

static int g_rank, g_size, g_failures, g_checks;
static char g_dir[1024];

#define CHECK(cond, ...) check_impl((cond) ? 1 : 0, __LINE__, __VA_ARGS__)
static void check_impl(int ok, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void check_impl(int ok, int line, const char *fmt, ...)
{
    g_checks++;
    if (ok)
        return;
    g_failures++;
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fprintf(stderr, "rank %d: FAIL (line %d): %s\n", g_rank, line, msg);
}

/* Fatal setup error: the scenarios cannot go on in step. */
static void die(const char *what, vg_status st)
{
    fprintf(stderr, "rank %d: setup failed: %s: %s: %s\n", g_rank, what, vg_status_str(st),
            vg_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* ---- the scripted timer ----------------------------------------------------- */

/* The applicable cpu plans of a call, in table order (from the kernel layer). */
static size_t cands(vg_family f, vg_path path, int32_t rows, const vg_plan **out)
{
    size_t n = 0;
    for (size_t i = 0; i < vg_cpu_plan_count(); i++) {
        const vg_plan *p = vg_cpu_plan_at(i);
        if (vg_plan_offered(p, f, path, rows))
            out[n++] = p;
    }
    return n;
}

enum { MODE_DISAGREE, MODE_TIE };
typedef struct timer_ctx {
    int rank, mode;
    long calls;
} timer_ctx;

/* Rank r's time of candidate i (of count) for `rows`. */
static double script_us(int mode, int rank, size_t i, size_t count, int32_t rows)
{
    size_t fav = ((size_t)rank + (size_t)rows) % count;
    if (i == fav)
        return 1.0;
    if (mode == MODE_TIE)
        return 5.0;
    return 30.0 - (double)((i + (size_t)rows) % count);
}

static double timer(const vg_plan *plan, const vg_gemm_args *a, void *user)
{
    timer_ctx *t = user;
    t->calls++;
    const vg_plan *c[64];
    int32_t rows = vg_gemm_max_group_rows(a);
    size_t n = cands(a->w.family, a->path, rows, c);
    for (size_t i = 0; i < n; i++)
        if (c[i] == plan)
            return script_us(t->mode, t->rank, i, n, rows);
    return 1000.0;
}

/* The plan this rank would pick alone. */
static const vg_plan *local_favourite(int rank, vg_family f, vg_path path, int32_t rows)
{
    const vg_plan *c[64];
    size_t n = cands(f, path, rows, c);
    return n ? c[((size_t)rank + (size_t)rows) % n] : NULL;
}

/* The plan whose slowest rank is fastest (first on a tie), by brute force. */
static const vg_plan *expected_winner(int mode, vg_family f, vg_path path, int32_t rows)
{
    const vg_plan *c[64];
    size_t n = cands(f, path, rows, c);
    const vg_plan *best = NULL;
    double best_us = 0.0;
    for (size_t i = 0; i < n; i++) {
        double worst = 0.0;
        for (int r = 0; r < g_size; r++) {
            double us = script_us(mode, r, i, n, rows);
            if (us > worst)
                worst = us;
        }
        if (!best || worst < best_us) {
            best = c[i];
            best_us = worst;
        }
    }
    return best;
}

/* Index of a plan in the cpu table (-1 if none): what ranks exchange. */
static int plan_index(const vg_plan *p)
{
    for (size_t i = 0; i < vg_cpu_plan_count(); i++)
        if (vg_cpu_plan_at(i) == p)
            return (int)i;
    return -1;
}

static const char *plan_name(int idx)
{
    const vg_plan *p = idx >= 0 ? vg_cpu_plan_at((size_t)idx) : NULL;
    return p ? p->id : "none";
}

/* ---- files ------------------------------------------------------------------------ */

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        *len = 0;
        return NULL;
    }
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *g = realloc(buf, cap * 2);
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static void path_of(char *out, size_t size, const char *scenario, const char *what, int rank)
{
    snprintf(out, size, "%s/%s.%s.%d", g_dir, scenario, what, rank);
}

/* FNV-1a 64 written out here, not the library's. */
static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Counts the lines of `text` starting with `prefix` and containing every
 * one of the NULL-terminated `needles`. */
static int count_lines(const char *text, const char *prefix, ...)
{
    const char *needles[8];
    int nn = 0;
    va_list ap;
    va_start(ap, prefix);
    const char *s;
    while (nn < 8 && (s = va_arg(ap, const char *)) != NULL)
        needles[nn++] = s;
    va_end(ap);
    int count = 0;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) : strlen(line);
        char buf[1024];
        if (len < sizeof buf) {
            memcpy(buf, line, len);
            buf[len] = '\0';
            int ok = strncmp(buf, prefix, strlen(prefix)) == 0;
            for (int i = 0; ok && i < nn; i++)
                ok = strstr(buf, needles[i]) != NULL;
            count += ok;
        }
        line = nl ? nl + 1 : NULL;
    }
    return count;
}

/* The plan= values of the decision lines ("vg-trace " lines) of a trace, in
 * order, as one string "a,b,c". */
static void decision_plans(const char *text, char *out, size_t size)
{
    out[0] = '\0';
    size_t used = 0;
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        if (strncmp(line, "vg-trace ", 9) == 0) {
            const char *p = strstr(line, " plan=");
            if (p && (!nl || p < nl)) {
                p += 6;
                size_t len = strcspn(p, " \n");
                if (used + len + 2 < size) {
                    memcpy(out + used, p, len);
                    used += len;
                    out[used++] = ',';
                    out[used] = '\0';
                }
            }
        }
        line = nl ? nl + 1 : NULL;
    }
}

/* ---- devices, configs, layers --------------------------------------------------- */

typedef struct rank_dev {
    vg_device *dev;
    vg_config *cfg;
    timer_ctx timer;
    vg_comm comm;
    char trace[1200];
} rank_dev;

#define CFG_COORD "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}}"
#define CFG_LOCAL "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":false}}}"
#define CFG_COORD_TUNE_OFF \
    "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true,\"fp8_tune_small_shapes\":false}}}"
#define CFG_WARM \
    "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}," \
    "\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true}}"

/* A cpu device in scenario `name`: scripted timer, trace file, comm
 * attached when `attach`, cfg's policy entered on this thread. */
static void rd_open(rank_dev *r, const char *name, const char *cfg_json, int mode, int attach)
{
    memset(r, 0, sizeof *r);
    vg_status st;
    if ((st = vg_device_open("cpu", 0, &r->dev)) != VG_OK)
        die("vg_device_open", st);
    r->timer = (timer_ctx){.rank = g_rank, .mode = mode};
    if ((st = vg_device_set_timer(r->dev, timer, &r->timer)) != VG_OK)
        die("vg_device_set_timer", st);
    path_of(r->trace, sizeof r->trace, name, "trace", g_rank);
    unlink(r->trace);
    if ((st = vg_trace_set(r->dev, r->trace)) != VG_OK)
        die("vg_trace_set", st);
    if ((st = vg_config_parse(cfg_json, &r->cfg)) != VG_OK)
        die("vg_config_parse", st);
    if ((st = vg_comm_from_mpi(MPI_COMM_WORLD, &r->comm)) != VG_OK)
        die("vg_comm_from_mpi", st);
    if (attach && (st = vg_device_set_comm(r->dev, &r->comm)) != VG_OK)
        die("vg_device_set_comm", st);
    if ((st = vg_policy_enter(r->dev, r->cfg)) != VG_OK)
        die("vg_policy_enter", st);
}

static void rd_close(rank_dev *r)
{
    vg_policy_leave();
    vg_device_set_comm(r->dev, NULL);
    vg_device_close(r->dev);
    vg_config_free(r->cfg);
}

static uint64_t measured_total(vg_device *dev)
{
    vg_tuning_state ts;
    vg_device_tuning_state(dev, &ts);
    return ts.measured_total;
}

typedef struct layer {
    vg_layer_buffers b;
    vg_device *dev;
} layer;

static void layer_open(layer *l, vg_device *dev, vg_path path, int32_t groups, int32_t max_rows)
{
    vg_layer spec = {.family = VG_FAMILY_FP8, .path = path, .n = 128, .k = 128,
                     .groups = groups};
    l->dev = dev;
    vg_status st = vg_layer_buffers_alloc(dev, &spec, max_rows, &l->b);
    if (st != VG_OK)
        die("vg_layer_buffers_alloc", st);
}

static void layer_close(layer *l) { vg_layer_buffers_free(l->dev, &l->b); }

/* One call of `tokens` rows (per group); the status is returned, info filled. */
static vg_status call(layer *l, int32_t tokens, vg_dispatch_info *info)
{
    vg_gemm_args a;
    vg_status st = vg_layer_args(&l->b, tokens, &a);
    if (st != VG_OK)
        die("vg_layer_args", st);
    memset(info, 0, sizeof *info);
    return vg_gemm(l->dev, a.path == VG_PATH_DENSE ? "gemm" : "grouped_gemm", &a, info);
}

/* A call that must succeed. */
static vg_dispatch_info call_ok(layer *l, int32_t tokens)
{
    vg_dispatch_info info;
    vg_status st = call(l, tokens, &info);
    CHECK(st == VG_OK, "vg_gemm %s rows=%d: %s: %s", vg_path_name(l->b.layer.path), (int)tokens,
          vg_status_str(st), vg_last_error());
    return info;
}

/* 1 when every rank passed the same value. */
static int same_everywhere(int64_t v)
{
    int64_t mm[2] = {v, -v};
    MPI_Allreduce(MPI_IN_PLACE, mm, 2, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    return mm[0] == -mm[1];
}

/* Every rank's plan index of one call, gathered. */
static void gather_plans(int idx, int *all)
{
    MPI_Allgather(&idx, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
}

/* Exports the LUT, then checks its bytes are the same on every rank (hash
 * across ranks, and rank 0 compares every file byte by byte). */
static void check_lut_same(rank_dev *r, const char *name, int want_entries)
{
    char path[1200];
    path_of(path, sizeof path, name, "lut", g_rank);
    vg_status st = vg_lut_export(r->dev, path, 0);
    CHECK(st == VG_OK, "%s: vg_lut_export: %s", name, vg_last_error());
    size_t len = 0;
    char *mine = slurp(path, &len);
    CHECK(mine != NULL && len > 0, "%s: LUT %s is empty or missing", name, path);
    int entries = mine ? count_lines(mine, "entry ", (const char *)NULL) : 0;
    CHECK(entries == want_entries, "%s: LUT has %d entries, want %d", name, entries,
          want_entries);
    uint64_t h = mine ? fnv(mine, len) : 0;
    CHECK(same_everywhere((int64_t)(h >> 2)), "%s: LUT hash %016llx differs across ranks", name,
          (unsigned long long)h);
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0 && mine) {
        for (int q = 1; q < g_size; q++) {
            char other[1200];
            path_of(other, sizeof other, name, "lut", q);
            size_t olen = 0;
            char *theirs = slurp(other, &olen);
            CHECK(theirs && olen == len && memcmp(theirs, mine, len) == 0,
                  "%s: LUT of rank %d differs from rank 0's byte for byte", name, q);
            free(theirs);
        }
    }
    free(mine);
}

/* ---- scenarios -------------------------------------------------------------------- */

#define DENSE_MAX 8
#define GROUPED_MAX 4

static void scenario_coordinated(void)
{
    rank_dev r;
    rd_open(&r, "coordinated", CFG_COORD, MODE_DISAGREE, 1);
    layer dense, grouped;
    layer_open(&dense, r.dev, VG_PATH_DENSE, 1, DENSE_MAX);
    layer_open(&grouped, r.dev, VG_PATH_GROUPED, 2, GROUPED_MAX);
    layer *layers[2] = {&dense, &grouped};
    int32_t tops[2] = {DENSE_MAX, GROUPED_MAX};
    int shapes = 0, local_differs = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t before = measured_total(r.dev);
        for (int li = 0; li < 2; li++) {
            vg_path path = layers[li]->b.layer.path;
            for (int32_t t = 1; t <= tops[li]; t++) {
                vg_dispatch_info info = call_ok(layers[li], t);
                const vg_plan *want = expected_winner(MODE_DISAGREE, VG_FAMILY_FP8, path, t);
                const vg_plan *fav = local_favourite(g_rank, VG_FAMILY_FP8, path, t);
                vg_decision want_d = pass == 0 ? VG_DECISION_MEASURE : VG_DECISION_REUSE;
                CHECK(info.decision == want_d, "coordinated pass %d %s rows=%d: decision %s, want %s",
                      pass, vg_path_name(path), (int)t, vg_decision_name(info.decision),
                      vg_decision_name(want_d));
                CHECK(info.plan == want, "coordinated pass %d %s rows=%d: plan %s, want %s", pass,
                      vg_path_name(path), (int)t, info.plan ? info.plan->id : "none",
                      want ? want->id : "none");
                int all[64];
                gather_plans(plan_index(info.plan), all);
                for (int q = 1; q < g_size; q++)
                    CHECK(all[q] == all[0], "coordinated %s rows=%d: rank %d runs %s, rank 0 %s",
                          vg_path_name(path), (int)t, q, plan_name(all[q]), plan_name(all[0]));
                if (pass == 0) {
                    shapes++;
                    local_differs += fav != want;
                    /* the stored time is the slowest rank's, not this rank's */
                    CHECK(info.measured_us > 1.5, "coordinated %s rows=%d: measured_us %g is a "
                          "local time, want the slowest rank's", vg_path_name(path), (int)t,
                          info.measured_us);
                }
            }
        }
        uint64_t grew = measured_total(r.dev) - before;
        CHECK(grew == (pass == 0 ? (uint64_t)shapes : 0),
              "coordinated pass %d: measured grew by %llu, want %d", pass,
              (unsigned long long)grew, pass == 0 ? shapes : 0);
    }
    /* The scripted times make most local favourites lose on every rank. */
    CHECK(local_differs > 0, "coordinated: the script made no rank disagree (test is vacuous)");
    vg_coord_stats cs;
    vg_device_coord_stats(r.dev, &cs);
    CHECK(cs.attached && cs.rank == g_rank && cs.size == g_size, "coord stats: attached %d rank %d size %d",
          cs.attached, cs.rank, cs.size);
    CHECK(cs.measured == (uint64_t)shapes && cs.agreements == (uint64_t)shapes && cs.refused == 0,
          "coord stats: measured %llu agreements %llu refused %llu, want %d %d 0",
          (unsigned long long)cs.measured, (unsigned long long)cs.agreements,
          (unsigned long long)cs.refused, shapes, shapes);
    CHECK(cs.diverged == (uint64_t)local_differs, "coord stats: diverged %llu, want %d",
          (unsigned long long)cs.diverged, local_differs);
    check_lut_same(&r, "coordinated", shapes);

    size_t len;
    char *tr = slurp(r.trace, &len);
    CHECK(tr && count_lines(tr, "vg-trace-coord ", "outcome=measured", (const char *)NULL) == shapes,
          "coordinated: trace has %d measured rounds, want %d",
          tr ? count_lines(tr, "vg-trace-coord ", "outcome=measured", (const char *)NULL) : -1,
          shapes);
    CHECK(tr && count_lines(tr, "vg-trace ", "decision=measure", (const char *)NULL) == shapes,
          "coordinated: trace has the wrong number of measure decisions");
    free(tr);
    layer_close(&dense);
    layer_close(&grouped);
    rd_close(&r);
}

static void scenario_tie(void)
{
    rank_dev r;
    rd_open(&r, "tie", CFG_COORD, MODE_TIE, 1);
    layer dense;
    layer_open(&dense, r.dev, VG_PATH_DENSE, 1, 4);
    for (int32_t t = 1; t <= 4; t++) {
        vg_dispatch_info info = call_ok(&dense, t);
        const vg_plan *c[64];
        cands(VG_FAMILY_FP8, VG_PATH_DENSE, t, c);
        CHECK(info.decision == VG_DECISION_MEASURE && info.plan == c[0],
              "tie rows=%d: %s %s, want measure %s (first in table order)", (int)t,
              vg_decision_name(info.decision), info.plan ? info.plan->id : "none", c[0]->id);
    }
    layer_close(&dense);
    rd_close(&r);
}

static void scenario_uncoordinated(void)
{
    rank_dev r;
    /* The comm is attached too: the policy alone turns coordination off. */
    rd_open(&r, "uncoordinated", CFG_LOCAL, MODE_DISAGREE, 1);
    layer dense;
    layer_open(&dense, r.dev, VG_PATH_DENSE, 1, DENSE_MAX);
    int split = 0;
    for (int32_t t = 1; t <= DENSE_MAX; t++) {
        vg_dispatch_info info = call_ok(&dense, t);
        const vg_plan *fav = local_favourite(g_rank, VG_FAMILY_FP8, VG_PATH_DENSE, t);
        CHECK(info.decision == VG_DECISION_MEASURE && info.plan == fav,
              "uncoordinated rows=%d: %s %s, want measure %s (this rank's own fastest)", (int)t,
              vg_decision_name(info.decision), info.plan ? info.plan->id : "none", fav->id);
        int all[64];
        gather_plans(plan_index(info.plan), all);
        for (int q = 1; q < g_size; q++)
            split += all[q] != all[0];
    }
    CHECK(split > 0, "uncoordinated: the ranks did not diverge");
    vg_coord_stats cs;
    vg_device_coord_stats(r.dev, &cs);
    CHECK(cs.agreements == 0, "uncoordinated: %llu rounds ran with coordination off",
          (unsigned long long)cs.agreements);

    /* The traces show it: the decision lines' plans differ across ranks,
     * and no rank wrote a coordination line. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) {
        char plans0[4096], plansq[4096];
        size_t len;
        char *t0 = slurp(r.trace, &len);
        decision_plans(t0, plans0, sizeof plans0);
        CHECK(t0 && count_lines(t0, "vg-trace-coord", (const char *)NULL) == 0,
              "uncoordinated: rank 0 trace has coordination lines");
        for (int q = 1; q < g_size; q++) {
            char path[1200];
            path_of(path, sizeof path, "uncoordinated", "trace", q);
            char *tq = slurp(path, &len);
            decision_plans(tq, plansq, sizeof plansq);
            CHECK(tq && count_lines(tq, "vg-trace ", "decision=measure", (const char *)NULL) ==
                            DENSE_MAX,
                  "uncoordinated: rank %d trace lacks its measure decisions", q);
            CHECK(strcmp(plans0, plansq) != 0,
                  "uncoordinated: traces of rank 0 and %d show the same plans (%s)", q, plans0);
            free(tq);
        }
        printf("uncoordinated: rank 0 trace plans %s\n", plans0);
        free(t0);
    }
    layer_close(&dense);
    rd_close(&r);
}

/* One rank refuses (frozen, capturing or tuning off): nobody measures. */
static void scenario_refusal(const char *name, const char *reason)
{
    int odd = g_size - 1;   /* the rank that refuses */
    int tuning_off = strcmp(reason, "tuning-off") == 0;
    rank_dev r;
    rd_open(&r, name, tuning_off && g_rank == odd ? CFG_COORD_TUNE_OFF : CFG_COORD,
            MODE_DISAGREE, 1);
    layer dense;
    layer_open(&dense, r.dev, VG_PATH_DENSE, 1, 32);
    /* Rows 4 and 8 measured together first (not on the tuning-off rank:
     * there nobody measures at all, so they stay heuristic). */
    call_ok(&dense, 4);
    call_ok(&dense, 8);
    uint64_t before = measured_total(r.dev);

    if (strcmp(reason, "frozen") == 0 && g_rank == odd)
        vg_device_freeze_tuning(r.dev);
    if (strcmp(reason, "capturing") == 0 && g_rank == odd)
        vg_device_test_set_capturing(r.dev, 1);

    /* rows 2: the next larger measured shape is 4 -> reuse its plan (the
     * tuning-off refusal takes the heuristic); rows 16: nothing measured at
     * or above -> heuristic. */
    const vg_plan *plan4 = tuning_off ? NULL
                                      : expected_winner(MODE_DISAGREE, VG_FAMILY_FP8,
                                                        VG_PATH_DENSE, 4);
    int32_t rows_list[2] = {2, 16};
    for (int i = 0; i < 2; i++) {
        int32_t t = rows_list[i];
        vg_dispatch_info info = call_ok(&dense, t);
        const vg_plan *want;
        vg_decision want_d;
        if (!tuning_off && t == 2) {
            want = plan4;
            want_d = VG_DECISION_REUSE;
        } else {
            want = vg_cpu_heuristic(VG_FAMILY_FP8, VG_PATH_DENSE, t, 128, 128, NULL);
            want_d = VG_DECISION_HEURISTIC;
        }
        CHECK(info.decision == want_d && info.plan == want,
              "%s rows=%d: %s %s, want %s %s", name, (int)t, vg_decision_name(info.decision),
              info.plan ? info.plan->id : "none", vg_decision_name(want_d),
              want ? want->id : "none");
        int all[64];
        gather_plans(plan_index(info.plan), all);
        int decisions[64], d = (int)info.decision;
        MPI_Allgather(&d, 1, MPI_INT, decisions, 1, MPI_INT, MPI_COMM_WORLD);
        for (int q = 1; q < g_size; q++)
            CHECK(all[q] == all[0] && decisions[q] == decisions[0],
                  "%s rows=%d: split decision: rank %d %s %s, rank 0 %s %s", name, (int)t, q,
                  vg_decision_name((vg_decision)decisions[q]), plan_name(all[q]),
                  vg_decision_name((vg_decision)decisions[0]), plan_name(all[0]));
    }
    CHECK(measured_total(r.dev) == before, "%s: a rank measured although rank %d refused", name,
          odd);
    vg_coord_stats cs;
    vg_device_coord_stats(r.dev, &cs);
    /* tuning off: the two first calls were refused rounds too */
    uint64_t want_refused = tuning_off ? 4 : 2;
    CHECK(cs.refused == want_refused, "%s: %llu refused rounds, want %llu", name,
          (unsigned long long)cs.refused, (unsigned long long)want_refused);

    size_t len;
    char *tr = slurp(r.trace, &len);
    char by[64], why[64];
    snprintf(by, sizeof by, "refused_by=%d", odd);
    snprintf(why, sizeof why, "reason=%s", reason);
    int lines = tr ? count_lines(tr, "vg-trace-coord ", "outcome=refused", by, why,
                                 (const char *)NULL)
                   : 0;
    CHECK(lines == (int)want_refused, "%s: trace has %d 'refused %s %s' lines, want %llu", name,
          lines, by, why, (unsigned long long)want_refused);
    free(tr);

    if (strcmp(reason, "frozen") == 0) {
        /* Now everyone freezes: the next round finds all frozen, and no
         * round runs after it. */
        vg_device_freeze_tuning(r.dev);
        call_ok(&dense, 3);
        vg_device_coord_stats(r.dev, &cs);
        CHECK(cs.all_frozen == 1, "frozen: all ranks frozen but all_frozen is %d", cs.all_frozen);
        uint64_t rounds = cs.agreements;
        vg_dispatch_info info = call_ok(&dense, 5);
        vg_device_coord_stats(r.dev, &cs);
        CHECK(cs.agreements == rounds, "frozen: a round ran after every rank was seen frozen");
        CHECK(info.decision == VG_DECISION_REUSE && info.plan == expected_winner(
                  MODE_DISAGREE, VG_FAMILY_FP8, VG_PATH_DENSE, 8),
              "frozen: rows 5 after all froze: %s %s, want reuse of rows 8's plan",
              vg_decision_name(info.decision), info.plan ? info.plan->id : "none");
    }
    if (strcmp(reason, "capturing") == 0 && g_rank == odd) {
        vg_device_test_set_capturing(r.dev, 0);
    }
    layer_close(&dense);
    rd_close(&r);
}

static void scenario_mismatch(void)
{
    rank_dev r;
    rd_open(&r, "mismatch", CFG_COORD, MODE_DISAGREE, 1);
    layer dense;
    layer_open(&dense, r.dev, VG_PATH_DENSE, 1, 16);
    vg_dispatch_info info;
    vg_status st = call(&dense, g_rank == 0 ? 7 : 9, &info);
    CHECK(st == VG_ERR_STATE, "mismatch: vg_gemm returned %s, want VG_ERR_STATE",
          vg_status_str(st));
    CHECK(strstr(vg_last_error(), "different calls") != NULL,
          "mismatch: the error does not say the ranks are at different calls: %s",
          vg_last_error());
    CHECK(measured_total(r.dev) == 0, "mismatch: something was measured");
    /* The group is still in step: a matching call now agrees. */
    info = call_ok(&dense, 11);
    CHECK(info.decision == VG_DECISION_MEASURE &&
              info.plan == expected_winner(MODE_DISAGREE, VG_FAMILY_FP8, VG_PATH_DENSE, 11),
          "mismatch: the next matching call did not measure together");
    if (g_rank == 0)
        printf("mismatch: %s\n", st == VG_ERR_STATE ? "refused as expected" : "NOT refused");
    layer_close(&dense);
    rd_close(&r);
}

static void scenario_warmup(void)
{
    rank_dev r;
    rd_open(&r, "warmup", CFG_WARM, MODE_DISAGREE, 1);
    vg_policy_leave();   /* vg_warmup enters the engine's policy itself */
    vg_layer layers[2] = {
        {.family = VG_FAMILY_FP8, .path = VG_PATH_GROUPED, .n = 128, .k = 128, .groups = 2},
        {.family = VG_FAMILY_FP8, .path = VG_PATH_DENSE, .n = 128, .k = 128, .groups = 1},
    };
    vg_warmup_report rep;
    vg_status st = vg_warmup(r.dev, r.cfg, layers, 2, &rep);
    CHECK(st == VG_OK, "warm-up: %s: %s", vg_status_str(st), vg_last_error());
    int want = GROUPED_DECODE_MAX_TOKENS + VG_TUNE_MAX_DENSE_M;
    CHECK(rep.shapes_measured == (uint64_t)want && rep.frozen,
          "warm-up: measured %llu shapes (want %d), frozen %d",
          (unsigned long long)rep.shapes_measured, want, rep.frozen);
    CHECK(same_everywhere((int64_t)rep.shapes_measured), "warm-up: measured counts differ");
    check_lut_same(&r, "warmup", want);

    /* Every decision line of the warm-up names the same plan on every rank. */
    size_t len;
    char *tr = slurp(r.trace, &len);
    char plans[16384];
    decision_plans(tr, plans, sizeof plans);
    CHECK(same_everywhere((int64_t)(fnv(plans, strlen(plans)) >> 2)),
          "warm-up: the ranks' traces show different plans");
    free(tr);
    vg_policy_enter(r.dev, r.cfg);   /* rd_close leaves it */
    rd_close(&r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (g_size < 2 || g_size > 64) {
        if (g_rank == 0)
            fprintf(stderr, "coord_mpi_test: run with 2..64 ranks (mpirun -np 2), not %d\n",
                    g_size);
        MPI_Finalize();
        return 2;
    }
    int own_dir = 0;
    if (argc > 1) {
        snprintf(g_dir, sizeof g_dir, "%s", argv[1]);
        if (g_rank == 0 && mkdir(g_dir, 0755) != 0 && errno != EEXIST) {
            fprintf(stderr, "coord_mpi_test: mkdir %s: %s\n", g_dir, strerror(errno));
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    } else {
        if (g_rank == 0) {
            const char *tmp = getenv("TMPDIR");
            snprintf(g_dir, sizeof g_dir, "%s/vg-coord-XXXXXX", tmp && *tmp ? tmp : "/tmp");
            if (!mkdtemp(g_dir)) {
                fprintf(stderr, "coord_mpi_test: mkdtemp: %s\n", strerror(errno));
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        }
        own_dir = 1;
    }
    MPI_Bcast(g_dir, sizeof g_dir, MPI_CHAR, 0, MPI_COMM_WORLD);

    scenario_coordinated();
    scenario_tie();
    scenario_uncoordinated();
    scenario_refusal("frozen", "frozen");
    scenario_refusal("capturing", "capturing");
    scenario_refusal("tuning-off", "tuning-off");
    scenario_mismatch();
    scenario_warmup();

    int failures = g_failures, checks = g_checks;
    MPI_Allreduce(MPI_IN_PLACE, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0) {
        printf("coord_mpi_test: %d ranks, %d checks, %d failed%s%s\n", g_size, checks, failures,
               failures ? "; files kept in " : "", failures ? g_dir : "");
        if (!failures && own_dir) {
            char cmd[1200];
            snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
            if (system(cmd) != 0)
                fprintf(stderr, "coord_mpi_test: could not remove %s\n", g_dir);
        }
    }
    MPI_Finalize();
    return failures ? 1 : 0;
}
