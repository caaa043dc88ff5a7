/*
 * voltgate bench: the shapes (grouped/loop, dense, prefill): for each
 * one, the rows of every token count, path, tune setting or forced plan,
 * and of the peers.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "bench.h"
#include "cuda/cuda_bench.h"
#include "fileio.h"
#include "kernels.h"
#include "timing.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"

/* ---- shapes ------------------------------------------------------------------------------ */

/* X for T rows per group (G groups), FP16 bits and FP32 values; and the
 * reference of the first t rows of each group is sliced from the full one. */
typedef struct xset {
    int rows, K;
    uint16_t *x16;
    float *x32;
    double *ref;  /* [rows][N] against the wset */
} xset;

static int xset_make(xset *x, const wset *w, int rows_per_group, uint64_t seed, int dense)
{
    memset(x, 0, sizeof *x);
    int G = dense ? 1 : w->G;
    x->rows = G * rows_per_group;
    x->K = w->K;
    size_t count = (size_t)x->rows * w->K;
    x->x16 = malloc(count * 2);
    x->x32 = malloc(count * 4);
    x->ref = malloc((size_t)x->rows * w->N * sizeof(double));
    if (!x->x16 || !x->x32 || !x->ref) {
        fprintf(stderr, "voltgate bench: out of memory for the activations and reference of %d rows "
                        "(N=%d, K=%d)\n", x->rows, (int)w->N, (int)w->K);
        free(x->x16);
        free(x->x32);
        free(x->ref);
        memset(x, 0, sizeof *x);
        return -1;
    }
    uint64_t s = seed + 17;
    for (size_t i = 0; i < count; i++) {
        x->x16[i] = vg_f32_to_fp16(bench_uniform(&s));
        x->x32[i] = vg_fp16_to_f32(x->x16[i]);
    }
    int32_t off[65];
    for (int g = 0; g <= G && g < 65; g++)
        off[g] = g * rows_per_group;
    vg_status st = vg_reference_gemm(dense ? VG_PATH_DENSE : VG_PATH_GROUPED, x->rows, w->N,
                                     w->K, dense ? 1 : G, dense ? NULL : off, x->x32, w->wdq,
                                     x->ref);
    if (st != VG_OK) {
        fprintf(stderr, "voltgate bench: reference: %s\n", vg_last_error());
        return -1;
    }
    return 0;
}

static void xset_free(xset *x)
{
    free(x->x16);
    free(x->x32);
    free(x->ref);
    memset(x, 0, sizeof *x);
}

/* The first counts[g] of group g's T rows, group after group, for x16, x32
 * (unless NULL) and ref; off[0..G] their offsets. */
static void slice(const xset *full, int G, int T, const int *counts, int N, uint16_t *x16,
                  float *x32, double *ref, int32_t *off)
{
    const int K = full->K;
    off[0] = 0;
    for (int g = 0; g < G; g++) {
        for (int j = 0; j < counts[g]; j++) {
            size_t src = (size_t)g * T + j, dst = (size_t)off[g] + j;
            memcpy(x16 + dst * K, full->x16 + src * K, (size_t)K * 2);
            if (x32)
                memcpy(x32 + dst * K, full->x32 + src * K, (size_t)K * 4);
            memcpy(ref + dst * N, full->ref + src * N, (size_t)N * sizeof(double));
        }
        off[g + 1] = off[g] + counts[g];
    }
}

/* --routing skewed: G x t rows spread over the groups as 1/(g+1), a router's
 * load falling off over its experts as Zipf's law does, in whole rows by
 * largest remainder (ties to the lower group); a group may get none.
 * Returns the largest count. */
static int skewed_counts(int G, int t, int *counts)
{
    double sum = 0, frac[64];
    for (int g = 0; g < G; g++)
        sum += 1.0 / (g + 1);
    int left = G * t, most = 0;
    for (int g = 0; g < G; g++) {
        const double share = G * t / ((g + 1) * sum);
        counts[g] = (int)share;
        frac[g] = share - counts[g];
        left -= counts[g];
    }
    for (; left > 0; left--) {
        int best = 0;
        for (int g = 1; g < G; g++)
            if (frac[g] > frac[best])
                best = g;
        counts[best]++;
        frac[best] = -1.0;
    }
    for (int g = 0; g < G; g++)
        most = counts[g] > most ? counts[g] : most;
    return most;
}

static int max_tokens(const opts *o, int cap)
{
    int t = 0;
    for (int i = 0; i < o->ntokens; i++)
        if (o->tokens[i] > t && o->tokens[i] <= cap)
            t = o->tokens[i];
    return t;
}

/* The plans --plan forces on one row: every plan of the backend that takes
 * (family, path, rows) for "all", else those named that take it, in the
 * backend's order.  Naming a dense and a grouped plan in one list is how one
 * run times both paths: each row gets the plans of its own path. */
static size_t forced_plans(bench *b, vg_path path, int rows, const vg_plan **out, size_t max)
{
    size_t n = 0;
    if (vg_device_plans(b->dev, b->o.family, path, rows, out, max, &n) != VG_OK)
        return 0;
    if (n > max)
        n = max;
    if (!strcmp(b->o.plans, "all"))
        return n;
    size_t kept = 0;
    for (size_t i = 0; i < n; i++)
        if (vg_list_has(b->o.plans, out[i]->id))
            out[kept++] = out[i];
    return kept;
}

/* Is id (its first len bytes) a plan of the bench's backend that serves its
 * family?  The same table `voltgate plans` prints. */
static int plan_known(const opts *o, const char *id, size_t len)
{
    const size_t count = o->cuda ? vg_cuda_plan_count() : vg_cpu_plan_count();
    for (size_t i = 0; i < count; i++) {
        const vg_plan *p = o->cuda ? vg_cuda_plan_at(i) : vg_cpu_plan_at(i);
        if (p && strlen(p->id) == len && !strncmp(p->id, id, len) &&
            (p->families & VG_FAMILY_BIT(o->family)))
            return 1;
    }
    return 0;
}

/* The first id of --plan's list that names no such plan (an empty one
 * included, as in "a,,b"), as a length into the list; NULL if all do. */
const char *unknown_plan(const opts *o, const char *list, size_t *len)
{
    size_t n;
    for (const char *s = list, *next; s; s = next) {
        next = vg_list_item(s, &n);
        if (!plan_known(o, s, n)) {
            *len = n;
            return s;
        }
    }
    return NULL;
}

/* The grouped shape's paths in row order, and whether --paths runs path i. */
static const vg_path kGroupedShapePaths[3] = {VG_PATH_LOOP, VG_PATH_GROUPED, VG_PATH_MOE};

static int path_on(const opts *o, int i)
{
    return i == 0 ? o->loop : i == 1 ? o->grouped : o->moe;
}

/* The moe rows of --routing skewed at t tokens per group on average: each
 * tune setting once, or each plan --plan forces that takes the largest
 * group's rows, named .../moe-skewed/..., the JSON row carrying the rows of
 * each group (group_rows).  X and the reference are sliced from full (T rows
 * per group) into x16 and ref (NULL: out of memory, already reported). */
static void skewed_rows(bench *b, const char *shape, const wset *w, const xset *full, int T,
                        int t, uint16_t *x16, double *ref)
{
    const opts *o = &b->o;
    int counts[64];
    int32_t off[65];
    if (!x16 || !ref)
        return;
    const int most = skewed_counts(w->G, t, counts);
    slice(full, w->G, T, counts, w->N, x16, NULL, ref, off);
    const vg_plan *fp[256];
    const size_t nrows = o->plans ? forced_plans(b, VG_PATH_MOE, most, fp, 256) : (size_t)o->ntunes;
    for (size_t i = 0; i < nrows; i++) {
        char name[192];
        if (o->plans)
            snprintf(name, sizeof name, "%s/moe-skewed/%s/t%d/plan=%s", shape,
                     vg_family_name(o->family), t, fp[i]->id);
        else
            snprintf(name, sizeof name, "%s/moe-skewed/%s/t%d/tune=%s", shape,
                     vg_family_name(o->family), t, o->tunes[i] ? "on" : "off");
        if (!in_shard(b))
            continue;
        const int before = cJSON_GetArraySize(b->rows);
        run_kernel_row(b, name, w, o->family, VG_PATH_MOE, t, w->G * t, off, x16, ref,
                       o->plans ? 0 : o->tunes[i], o->plans ? fp[i] : NULL);
        if (cJSON_GetArraySize(b->rows) > before) {
            cJSON *row = cJSON_GetArrayItem(b->rows, before);
            cJSON_AddStringToObject(row, "routing", "skewed");
            cJSON_AddItemToObject(row, "group_rows", cJSON_CreateIntArray(counts, w->G));
        }
    }
}

/* The grouped shape (wo_a on CUDA, g4n256k512 on the CPU; shape is the
 * rows' name prefix): G groups of N x K, every tokens value, the paths and
 * tune settings (or the plans --plan forces). */
void bench_grouped(bench *b, vg_cublas *h, const char *shape, int G, int N, int K)
{
    const opts *o = &b->o;
    const int T = max_tokens(o, 1 << 20);
    if (T <= 0)
        return;
    if (G > 64) {
        fprintf(stderr, "voltgate bench: %s: %d groups, at most 64\n", shape, G);
        b->failed = 1;
        return;
    }
    /* The skewed rows' X (Ts rows per group: the most any of their rows
     * gives one group) is a set of its own, so that the even rows' X is the
     * same with --routing skewed as without. */
    int counts[64], Ts = 0;
    for (int ti = 0; ti < o->ntokens && o->route_skewed; ti++) {
        const int most = skewed_counts(G, o->tokens[ti], counts);
        Ts = most > Ts ? most : Ts;
    }
    /* The rows' buffers before the weights and the reference (the slow
     * part): rows that do not fit are said to at once, whatever the build. */
    uint16_t *x16 = malloc((size_t)G * T * K * 2);
    float *x32 = malloc((size_t)G * T * K * 4);
    double *ref = malloc((size_t)G * T * N * sizeof(double));
    uint16_t *xs16 = Ts ? malloc((size_t)G * Ts * K * 2) : NULL;
    double *refs = Ts ? malloc((size_t)G * Ts * N * sizeof(double)) : NULL;
    wset w;
    xset full, fulls;
    memset(&fulls, 0, sizeof fulls);
    int ready = 1;
    if (!x16 || !x32 || !ref) {
        fprintf(stderr, "voltgate bench: %s: out of memory for %d groups x %d tokens (N=%d, K=%d)\n", shape,
                G, T, (int)N, (int)K);
        ready = 0;
    } else if (Ts && (!xs16 || !refs)) {
        fprintf(stderr, "voltgate bench: %s: out of memory for the skewed rows\n", shape);
        ready = 0;
    } else if (wset_make(b, &w, o->family, G, N, K, 1)) {
        ready = 0;
    } else if (xset_make(&full, &w, T, 2, 0) || (Ts && xset_make(&fulls, &w, Ts, 3, 0))) {
        xset_free(&full);
        wset_free(b, &w);
        ready = 0;
    }
    if (!ready) {
        free(x16);
        free(x32);
        free(ref);
        free(xs16);
        free(refs);
        b->failed = 1;
        return;
    }
    peer_w pw_bf16 = {{0}, 0}, pw_fp16 = {{0}, 0};
    int peers = o->cuda && o->peers && h;
    if (peers && (peer_w_make(b, &pw_bf16, &w, 1) || peer_w_make(b, &pw_fp16, &w, 0))) {
        fprintf(stderr, "voltgate bench: peer weights: %s\n", vg_last_error());
        peers = 0;
    }
    for (int ti = 0; ti < o->ntokens && x16 && x32 && ref; ti++) {
        const int t = o->tokens[ti];
        int32_t off[65];
        for (int g = 0; g < G; g++)
            counts[g] = t;
        slice(&full, G, T, counts, N, x16, x32, ref, off);
        char name[192];
        for (int p = 0; p < 3 && o->plans; p++) {
            if (!path_on(o, p) || (kGroupedShapePaths[p] == VG_PATH_MOE && !o->route_even))
                continue;
            const vg_path path = kGroupedShapePaths[p];
            const vg_plan *fp[256];
            size_t nf = forced_plans(b, path, t, fp, 256);
            for (size_t f = 0; f < nf; f++) {
                snprintf(name, sizeof name, "%s/%s/%s/t%d/plan=%s", shape, vg_path_name(path),
                         vg_family_name(o->family), t, fp[f]->id);
                if (in_shard(b))
                    run_kernel_row(b, name, &w, o->family, path, t, G * t, off, x16, ref, 0, fp[f]);
            }
        }
        for (int ui = 0; ui < o->ntunes && !o->plans; ui++)
            for (int p = 0; p < 3; p++) {
                if (!path_on(o, p) || (kGroupedShapePaths[p] == VG_PATH_MOE && !o->route_even))
                    continue;
                snprintf(name, sizeof name, "%s/%s/%s/t%d/tune=%s", shape,
                         vg_path_name(kGroupedShapePaths[p]), vg_family_name(o->family), t,
                         o->tunes[ui] ? "on" : "off");
                if (in_shard(b))
                    run_kernel_row(b, name, &w, o->family, kGroupedShapePaths[p], t, G * t, off,
                                   x16, ref, o->tunes[ui], NULL);
            }
        if (o->route_skewed)
            skewed_rows(b, shape, &w, &fulls, Ts, t, xs16, refs);
        if (!peers)
            continue;
        snprintf(name, sizeof name, "%s/peer-cublas-bmm-bf16/t%d", shape, t);
        if (in_shard(b))
            run_peer_row(b, h, name, &w, &pw_bf16, 1, 1, t, x32, ref);
        snprintf(name, sizeof name, "%s/peer-cublas-bmm-fp16/t%d", shape, t);
        if (in_shard(b))
            run_peer_row(b, h, name, &w, &pw_fp16, 0, 1, t, x32, ref);
        snprintf(name, sizeof name, "%s/peer-cublas-loop-bf16/t%d", shape, t);
        if (in_shard(b))
            run_peer_row(b, h, name, &w, &pw_bf16, 1, 0, t, x32, ref);
    }
    if (peers) {
        peer_w_free(&pw_bf16);
        peer_w_free(&pw_fp16);
    }
    free(x16);
    free(x32);
    free(ref);
    free(xs16);
    free(refs);
    xset_free(&fulls);
    xset_free(&full);
    wset_free(b, &w);
}

/* The plans of one kind that the tuner offers for a dense call of M rows:
 * those that apply and that it offers at M (vg_plan_offered: a plan's
 * min_rows) and that the device offers to the runtime
 * (vg_device_plan_offered: VG_CUDA_DQBLAS=0 takes the dequantize + cuBLAS
 * kind off), in the backend's order.  The bench's policy is the default
 * one (no workspace cap, no tiles_within_scale_block), so this is the
 * tuner's candidate list of that kind. */
static size_t offered_of_kind(bench *b, vg_plan_kind kind, int m, const vg_plan **out, size_t max)
{
    size_t n = 0, kept = 0;
    if (vg_device_plans(b->dev, b->o.family, VG_PATH_DENSE, m, out, max, &n) != VG_OK)
        return 0;
    if (n > max)
        n = max;
    for (size_t i = 0; i < n; i++)
        if (out[i]->kind == kind && vg_plan_offered(out[i], b->o.family, VG_PATH_DENSE, m) &&
            vg_device_plan_offered(b->dev, out[i], NULL))
            out[kept++] = out[i];
    return kept;
}

static int int_in(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x)
            return 1;
    return 0;
}

/* Dense at N x K for each M (tokens values up to max_m; or exactly ms).  At
 * each M in kind_ms (the crossover's; not with --plan) also one row per plan
 * kind the tuner offers there: the fastest plan of that kind, named
 * SHAPE/dense/FAMILY/mM/kind=KIND, beside the tuned row and the peer. */
void bench_dense(bench *b, vg_cublas *h, const char *shape, int N, int K, const int *ms,
                 int nms, const int *kind_ms, int nkind_ms)
{
    const opts *o = &b->o;
    int M = 0;
    for (int i = 0; i < nms; i++)
        M = ms[i] > M ? ms[i] : M;
    if (M <= 0)
        return;
    wset w;
    xset full;
    /* the reference of a large M is computed on a sample of rows: M rows of
     * X are built, rows 0..R-1 checked */
    if (wset_make(b, &w, o->family, 1, N, K, 3) || xset_make(&full, &w, M > 64 ? 16 : M, 4, 1)) {
        b->failed = 1;
        return;
    }
    peer_w pw = {{0}, 0};
    int peers = o->cuda && o->peers && h && peer_w_make(b, &pw, &w, 1) == 0;
    for (int i = 0; i < nms; i++) {
        const int m = ms[i];
        uint16_t *x16 = malloc((size_t)m * K * 2);
        float *x32 = malloc((size_t)m * K * 4);
        double *ref = malloc((size_t)m * N * sizeof(double));
        if (!x16 || !x32 || !ref) {
            fprintf(stderr, "voltgate bench: %s: out of memory for M=%d (N=%d, K=%d)\n", shape, m, (int)N,
                    (int)K);
            free(x16);
            free(x32);
            free(ref);
            b->failed = 1;
            break;
        }
        /* rows beyond the reference repeat it (so every row is checked) */
        for (int r = 0; r < m; r++) {
            int src = r % full.rows;
            memcpy(x16 + (size_t)r * K, full.x16 + (size_t)src * K, (size_t)K * 2);
            memcpy(x32 + (size_t)r * K, full.x32 + (size_t)src * K, (size_t)K * 4);
            memcpy(ref + (size_t)r * N, full.ref + (size_t)src * N, (size_t)N * sizeof(double));
        }
        char name[192];
        const vg_plan *fp[256];
        size_t nf = o->plans ? forced_plans(b, VG_PATH_DENSE, m, fp, 256) : 0;
        for (size_t f = 0; f < nf; f++) {
            snprintf(name, sizeof name, "%s/dense/%s/m%d/plan=%s", shape, vg_family_name(o->family),
                     m, fp[f]->id);
            if (in_shard(b))
                run_kernel_row(b, name, &w, o->family, VG_PATH_DENSE, m, m, NULL, x16, ref, 0, fp[f]);
        }
        for (int ui = 0; ui < o->ntunes && !o->plans; ui++) {
            snprintf(name, sizeof name, "%s/dense/%s/m%d/tune=%s", shape,
                     vg_family_name(o->family), m, o->tunes[ui] ? "on" : "off");
            if (in_shard(b))
                run_kernel_row(b, name, &w, o->family, VG_PATH_DENSE, m, m, NULL, x16, ref,
                               o->tunes[ui], NULL);
        }
        for (int kind = 0; kind < VG_KIND_COUNT && !o->plans && int_in(kind_ms, nkind_ms, m); kind++) {
            size_t nk = offered_of_kind(b, (vg_plan_kind)kind, m, fp, 256);
            if (!nk)
                continue;   /* no plan of this kind at M: no row (decode above 64, ...) */
            snprintf(name, sizeof name, "%s/dense/%s/m%d/kind=%s", shape, vg_family_name(o->family),
                     m, vg_plan_kind_name((vg_plan_kind)kind));
            if (in_shard(b))
                run_kind_row(b, name, &w, o->family, m, x16, ref, fp, nk);
        }
        if (peers) {
            snprintf(name, sizeof name, "%s/peer-cublas-bf16/m%d", shape, m);
            if (in_shard(b))
                run_peer_row(b, h, name, &w, &pw, 1, 0, m, x32, ref);
        }
        free(x16);
        free(x32);
        free(ref);
    }
    if (peers)
        peer_w_free(&pw);
    xset_free(&full);
    wset_free(b, &w);
}
