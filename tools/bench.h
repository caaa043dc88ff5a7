/*
 * What the parts of `voltgate bench` share (tools/cmd_bench.c says what a
 * row measures): the options, the run's state and the weight sets, and the
 * functions of each part: rows (bench_rows.c), peers and the copy bandwidth
 * (bench_peers.c), the shapes' row loops (bench_shapes.c), tables and JSON
 * (bench_output.c).  Internal to tools/.
 */
#ifndef VOLTGATE_TOOLS_BENCH_H
#define VOLTGATE_TOOLS_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "cuda/cuda_bench.h"
#include "tools.h"
#include "voltgate/quant.h"
#include "voltgate/runtime.h"

#define MAX_LIST 32

enum { SHAPE_WO_A = 1, SHAPE_DENSE = 2, SHAPE_PREFILL = 4, SHAPE_CROSSOVER = 8 };

typedef struct opts {
    int cuda;                 /* backend */
    const char *backend;      /* --backend as given: auto (default), cuda or cpu */
    unsigned shapes;
    int tokens[MAX_LIST], ntokens;
    int loop, grouped, moe;   /* paths of the grouped shape */
    int route_even, route_skewed; /* --routing: the moe path's rows per group */
    int tunes[2], ntunes;
    vg_family family;
    const char *json;
    int json_gbench;          /* --json-format gbench: google-benchmark's layout */
    int samples;
    int rotate;               /* 0 = automatic */
    int shard_i, shard_n;
    int peers;
    const char *plans;        /* --plan: NULL, "all" or plan ids "a,b", forced instead of --tune */
    double max_rel_rms;       /* a kernel row's output check fails above this */
} opts;

/* What the tables print, kept per row. */
typedef struct result {
    char name[128];
    char path[16];
    int tokens;
    char plan[96];
    const char *decision;
    double median_us, bw_frac, rel_rms, tflops;
    double ceil_frac;         /* stream ceiling / median: NAN when not measured */
} result;

/* Stream ceilings measured so far, by weight bytes (a run has a few sizes). */
#define MAX_CEILINGS 32

typedef struct bench {
    opts o;
    vg_device *dev;
    void *stream;
    cJSON *rows;
    double copy_gbs;
    vg_cuda_info info;
    int unit;                 /* row counter for --shard */
    vg_config *cfg[2];        /* tune off, on */
    result *res;
    size_t nres, cap;
    int failed;
    struct { double bytes, us; } ceiling[MAX_CEILINGS];
    int nceiling;
    int ceiling_failed;       /* reported once, then NAN */
    tool_progress progress;   /* on a terminal: rows timed so far, elapsed */
    int rows_done;
} bench;

typedef struct wset {
    int G, N, K, R;
    vg_qweight qw;
    float *wdq;                  /* [G][N][K] */
    void *q[16], *scale[16], *zero[16];
    double bytes;                /* codes + scales + zeros of one copy */
} wset;

typedef struct peer_w {
    void *w[16];      /* FP16 or BF16 copies of the dequantized weights */
    int R;
} peer_w;

/* ---- rows (bench_rows.c) */
void bench_stats(const double *s, int n, double *median, double *mn, double *mx);
float bench_uniform(uint64_t *s);
int in_shard(bench *b);
const result *find_result(const bench *b, const char *name);
void add_row(bench *b, const char *name, const char *kind, const char *path,
             vg_family fam, int m, int n, int k, int groups, int tokens, const char *plan,
             const char *decision, const double *samples, int ns, double bytes,
             double flops, double rel_rms);
int wset_make(bench *b, wset *w, vg_family fam, int G, int N, int K, uint64_t seed);
void wset_free(bench *b, wset *w);
/* Times a captured CUDA graph that makes `copies` calls (one per weight
 * copy): 3 warm-up replays, then b->o.samples replays, each sample the
 * replay's time over copies (CUDA events). */
vg_status bench_time_graph(bench *b, void *exec, int copies, double *samples);
int run_kernel_row(bench *b, const char *name, const wset *w, vg_family fam,
                   vg_path path, int tokens, int m, const int32_t *offsets,
                   const uint16_t *x16, const double *ref, int tune, const vg_plan *forced);
/* One row for one plan kind at M (dense): the fastest of plans[], all of
 * that kind and offered at M (bench_rows.c says how it is timed). */
int run_kind_row(bench *b, const char *name, const wset *w, vg_family fam, int m,
                 const uint16_t *x16, const double *ref, const vg_plan *const *plans, size_t n);

/* ---- peers (bench_peers.c) */
int peer_w_make(bench *b, peer_w *p, const wset *w, int bf16);
void peer_w_free(peer_w *p);
int run_peer_row(bench *b, vg_cublas *h, const char *name, const wset *w,
                 const peer_w *pw, int bf16, int batched, int t, const float *x32,
                 const double *ref);
int measure_copy(bench *b);

/* ---- shapes (bench_shapes.c) */
const char *unknown_plan(const opts *o, const char *list, size_t *len);
void bench_grouped(bench *b, vg_cublas *h, const char *shape, int G, int N, int K);
void bench_dense(bench *b, vg_cublas *h, const char *shape, int N, int K, const int *ms,
                 int nms, const int *kind_ms, int nkind_ms);

/* ---- output (bench_output.c) */
void print_tables(const bench *b, const char *shape, int G, int N, int K);
void print_dense(const bench *b, const char *shape, const int *ms, int nms);
void print_kinds(const bench *b, const char *shape, const char *square, const int *ms, int nms);
void print_forced(const bench *b, const char *shape);
int bench_write_json(bench *b);

#endif
