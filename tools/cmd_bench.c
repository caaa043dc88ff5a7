/*
 * voltgate bench: kernel timings through the runtime, their peers, the copy
 * bandwidth, and (--dispatch) the dispatch overhead.
 *
 *   voltgate bench --shape wo_a --tokens 1,2,4,6,8,16 --paths loop,grouped \
 *                  --tune off,on --backend cuda --json FILE
 *
 * What a row measures (CUDA):
 *   kernel  one layer call through the runtime (vg_device_open("cuda"),
 *           vg_gemm under a kernel_config with fp8_tune_small_shapes off or
 *           on), so the decision (measure / reuse / heuristic) and the plan
 *           are the runtime's own.  The first call decides (and measures when
 *           tuning is on); then R calls, each on its own copy of the weights
 *           (R copies together well over the L2), are captured in a CUDA
 *           graph; a sample is one replay's time over R (CUDA events).  The
 *           output of a separate call is checked against the FP64 reference
 *           (max_rel_rms).
 *   peer    cuBLAS on weights dequantized once beforehand: FP16 and BF16
 *           cublasGemmStridedBatchedEx over the groups, and a loop of BF16
 *           cublasGemmEx (one per group); same graphs and rotation.
 *   copy    device-to-device cudaMemcpy of 512 MiB, bytes read + written.
 * bytes is the weight bytes (codes + scales) of one call, so
 * bandwidth_fraction = bytes / median time / copy bandwidth; flops 2*M*N*K.
 * ceiling_fraction = stream_ceiling_us / median time (CUDA kernel rows):
 * stream_ceiling_us is what a plain streaming kernel takes for the same
 * bytes when, like every GEMM layer, it must wait for the kernel before it
 * (vg_cuda_stream_ceiling), so 1.0 is as fast as a kernel that only
 * streams; at 16.8 MB on an H200 that is about 0.68 of the copy bandwidth.
 * Every sample is kept in the JSON.
 *
 * --backend cpu (make regress on machines without a GPU): small shapes
 * through the cpu runtime, host clock, host memcpy bandwidth.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cuda/cuda_bench.h"
#include "fileio.h"
#include "kernels.h"
#include "timing.h"
#include "tools.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"
#include "voltgate/runtime.h"

#if defined(__has_include)
#if __has_include("bench_dispatch.h")
#include "bench_dispatch.h"
#define VG_HAVE_BENCH_DISPATCH 1
#endif
#endif

#define MAX_LIST 32

enum { SHAPE_WO_A = 1, SHAPE_DENSE = 2, SHAPE_PREFILL = 4 };

typedef struct opts {
    int cuda;                 /* backend */
    const char *backend;      /* --backend as given: auto (default), cuda or cpu */
    unsigned shapes;
    int tokens[MAX_LIST], ntokens;
    int loop, grouped;        /* paths */
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

/* ---- small helpers ------------------------------------------------------------ */

static void stats(const double *s, int n, double *median, double *mn, double *mx)
{
    if (n <= 0) {
        *median = *mn = *mx = NAN;
        return;
    }
    *median = vg_median(s, (size_t)n);
    *mn = *mx = s[0];
    for (int i = 1; i < n; i++) {
        *mn = s[i] < *mn ? s[i] : *mn;
        *mx = s[i] > *mx ? s[i] : *mx;
    }
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static float uniform(uint64_t *s)
{
    return (float)((double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

static int parse_list(const char *s, int *out, int max, const char *what)
{
    int n = 0;
    size_t len;
    for (const char *p = s, *next; p; p = next) {
        next = vg_list_item(p, &len);
        long long v;
        if (n >= max || vg_parse_int(p, len, 1, 1000000, &v) != 0) {
            fprintf(stderr, "voltgate bench: bad %s list '%s': item '%.*s' (integers 1..1000000, "
                            "at most %d)\n", what, s, (int)len, p, max);
            return -1;
        }
        out[n++] = (int)v;
    }
    return n;
}

/* Is this row in our shard?  Every row takes the next unit number. */
static int in_shard(bench *b)
{
    int u = b->unit++;
    return b->o.shard_n <= 1 || u % b->o.shard_n == b->o.shard_i;
}

static result *new_result(bench *b)
{
    if (b->nres == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 64;
        result *r = realloc(b->res, cap * sizeof *r);
        if (!r)
            return NULL;
        b->res = r;
        b->cap = cap;
    }
    result *r = &b->res[b->nres++];
    memset(r, 0, sizeof *r);
    r->rel_rms = NAN;
    r->tflops = NAN;
    return r;
}

static const result *find_result(const bench *b, const char *name)
{
    for (size_t i = 0; i < b->nres; i++)
        if (strcmp(b->res[i].name, name) == 0)
            return &b->res[i];
    return NULL;
}

/* The stream ceiling for a kernel row moving `bytes` (vg_cuda_stream_ceiling:
 * a kernel that only streams that many bytes and waits for its input, as
 * a GEMM layer must), measured once per size; NAN on the CPU backend or on
 * failure. */
static double stream_ceiling_us(bench *b, double bytes)
{
    if (!b->o.cuda || b->ceiling_failed || bytes < 16)
        return NAN;
    for (int i = 0; i < b->nceiling; i++)
        if (b->ceiling[i].bytes == bytes)
            return b->ceiling[i].us;
    double us = NAN;
    if (vg_cuda_stream_ceiling((size_t)bytes, b->o.samples, &us) != VG_OK) {
        fprintf(stderr, "voltgate bench: stream ceiling not measured: %s\n", vg_last_error());
        b->ceiling_failed = 1;
        return NAN;
    }
    if (b->nceiling < MAX_CEILINGS) {
        b->ceiling[b->nceiling].bytes = bytes;
        b->ceiling[b->nceiling++].us = us;
    }
    return us;
}

/* A kernel row's output check: its relative RMS error against the FP64
 * reference within --max-rel-rms (false for a non-finite output). */
static int output_ok(const bench *b, double rel_rms)
{
    return rel_rms <= b->o.max_rel_rms;
}

/* Adds one JSON row and its table entry. */
static void add_row(bench *b, const char *name, const char *kind, const char *path,
                    vg_family fam, int m, int n, int k, int groups, int tokens, const char *plan,
                    const char *decision, const double *samples, int ns, double bytes,
                    double flops, double rel_rms)
{
    double med, mn, mx;
    stats(samples, ns, &med, &mn, &mx);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "name", name);
    cJSON_AddStringToObject(r, "kind", kind);
    cJSON_AddStringToObject(r, "path", path);
    /* fam is -1 on copy and peer rows; vg_family is an unsigned enum, so a
     * `fam >= 0` test would pass it and the key would go missing. */
    const char *family = vg_family_name(fam);
    cJSON_AddStringToObject(r, "family", family ? family : "n/a");
    cJSON_AddNumberToObject(r, "m", m);
    cJSON_AddNumberToObject(r, "n", n);
    cJSON_AddNumberToObject(r, "k", k);
    cJSON_AddNumberToObject(r, "groups", groups);
    cJSON_AddNumberToObject(r, "tokens", tokens);
    cJSON_AddStringToObject(r, "plan", plan ? plan : "n/a");
    cJSON_AddStringToObject(r, "decision", decision ? decision : "n/a");
    cJSON *arr = cJSON_AddArrayToObject(r, "samples_us");
    for (int i = 0; i < ns; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber(samples[i]));
    cJSON_AddNumberToObject(r, "median_us", med);
    cJSON_AddNumberToObject(r, "min_us", mn);
    cJSON_AddNumberToObject(r, "max_us", mx);
    cJSON_AddNumberToObject(r, "bytes", bytes);
    cJSON_AddNumberToObject(r, "flops", flops);
    double frac = b->copy_gbs > 0 && med > 0 ? bytes / (med * 1e-6) / 1e9 / b->copy_gbs : 0.0;
    cJSON_AddNumberToObject(r, "bandwidth_fraction", frac);
    const double ceil_us = strcmp(kind, "kernel") ? NAN : stream_ceiling_us(b, bytes);
    const double ceil_frac = isfinite(ceil_us) && med > 0 ? ceil_us / med : NAN;
    if (isfinite(ceil_frac)) {
        cJSON_AddNumberToObject(r, "stream_ceiling_us", ceil_us);
        cJSON_AddNumberToObject(r, "ceiling_fraction", ceil_frac);
    } else {
        cJSON_AddNullToObject(r, "stream_ceiling_us");
        cJSON_AddNullToObject(r, "ceiling_fraction");
    }
    if (isfinite(rel_rms))
        cJSON_AddNumberToObject(r, "max_rel_rms", rel_rms);
    else
        cJSON_AddNullToObject(r, "max_rel_rms");
    /* Kernel rows: did the output pass the check (--max-rel-rms)?  A
     * non-finite output leaves max_rel_rms null and this false. */
    if (!strcmp(kind, "kernel"))
        cJSON_AddBoolToObject(r, "output_ok", output_ok(b, rel_rms));
    else
        cJSON_AddNullToObject(r, "output_ok");
    cJSON_AddItemToArray(b->rows, r);
    b->rows_done++;
    tool_progress_show(&b->progress, 0, "%d rows timed (last: %s)", b->rows_done, name);
    result *t = new_result(b);
    if (t) {
        snprintf(t->name, sizeof t->name, "%s", name);
        snprintf(t->path, sizeof t->path, "%s", path);
        t->tokens = tokens;
        snprintf(t->plan, sizeof t->plan, "%s", plan ? plan : "n/a");
        t->decision = decision ? decision : "n/a";
        t->median_us = med;
        t->bw_frac = frac;
        t->ceil_frac = ceil_frac;
        t->rel_rms = rel_rms;
        t->tflops = med > 0 ? flops / (med * 1e-6) / 1e12 : NAN;
    }
}

/* ---- device memory through the runtime --------------------------------------- */

static void *dev_upload(bench *b, const void *src, size_t bytes)
{
    void *p = NULL;
    if (vg_device_alloc(b->dev, bytes ? bytes : 16, &p) != VG_OK)
        return NULL;
    if (src && bytes && vg_device_upload(b->dev, p, src, bytes) != VG_OK) {
        vg_device_free(b->dev, p);
        return NULL;
    }
    return p;
}

static int poison(bench *b, void *y, size_t bytes)
{
    if (b->o.cuda)
        return vg_cuda_memset(y, 0xFF, bytes) == VG_OK ? 0 : -1;
    memset(y, 0xFF, bytes);
    return 0;
}

/* ---- weights ------------------------------------------------------------------------ */

typedef struct wset {
    int G, N, K, R;
    vg_qweight qw;
    float *wdq;                  /* [G][N][K] */
    void *q[16], *scale[16], *zero[16];
    double bytes;                /* codes + scales + zeros of one copy */
} wset;

static void wset_free(bench *b, wset *w)
{
    for (int r = 0; r < w->R; r++) {
        vg_device_free(b->dev, w->q[r]);
        if (w->scale[r])
            vg_device_free(b->dev, w->scale[r]);
        if (w->zero[r])
            vg_device_free(b->dev, w->zero[r]);
    }
    vg_qweight_free(&w->qw);
    free(w->wdq);
    memset(w, 0, sizeof *w);
}

/* Random weights (uniform times a per-row power of two), quantized; R device
 * copies so that R copies exceed the L2 several times over. */
static int wset_make(bench *b, wset *w, vg_family fam, int G, int N, int K, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->G = G;
    w->N = N;
    w->K = K;
    size_t count = (size_t)G * N * K;
    float *f = malloc(count * sizeof(float));
    if (!f)
        return -1;
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (size_t r = 0; r < (size_t)G * N; r++) {
        float mag = ldexpf(1.0f, (int)(rng_next(&s) % 7) - 3);
        for (int k = 0; k < K; k++)
            f[r * K + k] = uniform(&s) * mag;
    }
    vg_status st = vg_quantize(fam, f, G, N, K, &w->qw);
    free(f);
    if (st != VG_OK) {
        fprintf(stderr, "voltgate bench: quantize: %s\n", vg_last_error());
        return -1;
    }
    w->wdq = malloc(count * sizeof(float));
    if (!w->wdq || vg_dequantize(&w->qw.w, w->wdq) != VG_OK)
        return -1;
    const vg_weight_layout *l = &w->qw.layout;
    size_t qb = l->q_bytes * G, sb = l->scale_bytes * G, zb = l->zero_bytes * G;
    w->bytes = (double)(qb + sb + zb);
    size_t l2 = b->o.cuda && b->info.l2_bytes ? b->info.l2_bytes : (size_t)32 << 20;
    int R = b->o.rotate > 0 ? b->o.rotate : (int)ceil(3.0 * (double)l2 / w->bytes);
    if (R < 2)
        R = 2;
    if (R > 16)
        R = 16;
    if (!b->o.cuda)
        R = 2;
    w->R = R;
    for (int r = 0; r < R; r++) {
        w->q[r] = dev_upload(b, w->qw.q, qb);
        w->scale[r] = sb ? dev_upload(b, w->qw.scale, sb) : NULL;
        w->zero[r] = zb ? dev_upload(b, w->qw.zero, zb) : NULL;
        if (!w->q[r] || (sb && !w->scale[r]) || (zb && !w->zero[r])) {
            fprintf(stderr, "voltgate bench: weight copy %d: %s\n", r, vg_last_error());
            return -1;
        }
    }
    return 0;
}

/* ---- one voltgate row ------------------------------------------------------------------ */

/* Relative RMS error of y (FP16 bits, rows x n) against ref. */
static double rel_rms_f16(const uint16_t *y, const double *ref, size_t count)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < count; i++) {
        double v = vg_fp16_to_f32(y[i]);
        if (!isfinite(v))
            return INFINITY;
        num += (v - ref[i]) * (v - ref[i]);
        den += ref[i] * ref[i];
    }
    return den > 0 ? sqrt(num / den) : INFINITY;
}

/* One call: through the runtime's decision, or the plan --plan forces. */
static vg_status gemm_call(bench *b, const vg_plan *forced, const vg_gemm_args *a,
                           vg_dispatch_info *info)
{
    if (!forced)
        return vg_gemm(b->dev, "gemm", a, info);
    if (info) {
        info->plan = forced;
        info->path = a->path;
    }
    return vg_gemm_with_plan(b->dev, forced->id, a);
}

/* Times one layer call (path, rows per group) through the runtime. */
static int run_kernel_row(bench *b, const char *name, const wset *w, vg_family fam,
                          vg_path path, int tokens, int m, const int32_t *offsets,
                          const uint16_t *x16, const double *ref, int tune, const vg_plan *forced)
{
    const int N = w->N, K = w->K;
    size_t ybytes = (size_t)m * N * 2;
    void *dx = dev_upload(b, x16, (size_t)m * K * 2);
    void *dy = dev_upload(b, NULL, ybytes);
    void *doff = offsets ? dev_upload(b, offsets, sizeof(int32_t) * (size_t)(w->G + 1)) : NULL;
    uint16_t *y = malloc(ybytes);
    double *samples = calloc((size_t)b->o.samples, sizeof(double));
    int rc = -1;
    void *exec = NULL;
    if (!dx || !dy || (offsets && !doff) || !y || !samples)
        goto out;

    vg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.path = path;
    a.m = m;
    a.w = w->qw.w;
    a.offsets = doff;
    a.offsets_host = offsets;
    a.x = dx;
    a.y = dy;
    a.y_dtype = VG_DTYPE_F16;
    a.stream = b->stream;
    if (vg_policy_enter(b->dev, b->cfg[tune]) != VG_OK)
        goto out;
    vg_dispatch_info info;
    memset(&info, 0, sizeof info);
    a.w.q = w->q[0];
    a.w.scale = w->scale[0];
    a.w.zero = w->zero[0];
    vg_status st = gemm_call(b, forced, &a, &info);
    if (st == VG_OK)
        st = vg_device_synchronize(b->dev, b->stream);
    /* Correctness of a separate call (poisoned output). */
    if (st == VG_OK && poison(b, dy, ybytes) == 0)
        st = gemm_call(b, forced, &a, NULL);
    if (st == VG_OK)
        st = vg_device_synchronize(b->dev, b->stream);
    if (st == VG_OK)
        st = vg_device_download(b->dev, y, dy, ybytes);
    double rel = st == VG_OK ? rel_rms_f16(y, ref, (size_t)m * N) : NAN;

    if (st == VG_OK && b->o.cuda) {
        st = vg_cuda_graph_begin(b->stream);
        for (int r = 0; r < w->R && st == VG_OK; r++) {
            a.w.q = w->q[r];
            a.w.scale = w->scale[r];
            a.w.zero = w->zero[r];
            st = gemm_call(b, forced, &a, NULL);
        }
        void *e = NULL;
        vg_status st2 = vg_cuda_graph_end(b->stream, &e);
        if (st == VG_OK)
            st = st2;
        exec = e;
        void *timer = NULL;
        if (st == VG_OK)
            st = vg_cuda_timer_create(&timer);
        for (int i = 0; i < 3 && st == VG_OK; i++)
            st = vg_cuda_graph_launch(exec, b->stream);
        for (int i = 0; i < b->o.samples && st == VG_OK; i++) {
            double us = 0;
            st = vg_cuda_timer_start(timer, b->stream);
            if (st == VG_OK)
                st = vg_cuda_graph_launch(exec, b->stream);
            if (st == VG_OK)
                st = vg_cuda_timer_stop(timer, b->stream);
            if (st == VG_OK)
                st = vg_cuda_timer_elapsed_us(timer, &us);
            samples[i] = us / w->R;
        }
        vg_cuda_timer_destroy(timer);
    } else if (st == VG_OK) {
        for (int i = 0; i < b->o.samples && st == VG_OK; i++) {
            double t0 = vg_now_us();
            for (int r = 0; r < w->R && st == VG_OK; r++) {
                a.w.q = w->q[r];
                a.w.scale = w->scale[r];
                a.w.zero = w->zero[r];
                st = gemm_call(b, forced, &a, NULL);
            }
            samples[i] = (vg_now_us() - t0) / w->R;
        }
    }
    vg_policy_leave();
    if (st != VG_OK) {
        fprintf(stderr, "voltgate bench: %s: %s (%s)\n", name, vg_status_str(st), vg_last_error());
        goto out;
    }
    add_row(b, name, "kernel", vg_path_name(info.path), fam, m, N, K, w->G, tokens,
            info.plan ? info.plan->id : "n/a", forced ? "forced" : vg_decision_name(info.decision), samples,
            b->o.samples, w->bytes, 2.0 * m * N * (double)K, rel);
    /* The row is kept (its timing is real), but a wrong output fails the run. */
    if (!output_ok(b, rel)) {
        fprintf(stderr, "voltgate bench: %s: output check failed: relative RMS error %g against "
                "the FP64 reference (limit %g; inf: a non-finite output) with plan %s\n",
                name, rel, b->o.max_rel_rms, info.plan ? info.plan->id : "n/a");
        goto out;
    }
    rc = 0;
out:
    if (exec)
        vg_cuda_graph_destroy(exec);
    vg_device_free(b->dev, dx);
    vg_device_free(b->dev, dy);
    if (doff)
        vg_device_free(b->dev, doff);
    free(y);
    free(samples);
    if (rc)
        b->failed = 1;
    return rc;
}

/* ---- cuBLAS peers ---------------------------------------------------------------------- */

typedef struct peer_w {
    void *w[16];      /* FP16 or BF16 copies of the dequantized weights */
    int R;
} peer_w;

static int peer_w_make(bench *b, peer_w *p, const wset *w, int bf16)
{
    memset(p, 0, sizeof *p);
    size_t count = (size_t)w->G * w->N * w->K;
    size_t l2 = b->info.l2_bytes ? b->info.l2_bytes : (size_t)50 << 20;
    int R = (int)ceil(3.0 * (double)l2 / (double)(count * 2));
    p->R = R < 2 ? 2 : R > 16 ? 16 : R;
    for (int r = 0; r < p->R; r++) {
        if (vg_cuda_alloc(count * 2, &p->w[r]) != VG_OK)
            return -1;
        if (r == 0 && vg_cuda_upload_half(p->w[0], w->wdq, count, bf16) != VG_OK)
            return -1;
        if (r > 0 && vg_cuda_copy_d2d(p->w[r], p->w[0], count * 2, NULL) != VG_OK)
            return -1;
    }
    return vg_cuda_synchronize(NULL) == VG_OK ? 0 : -1;
}

static void peer_w_free(peer_w *p)
{
    for (int r = 0; r < p->R; r++)
        vg_cuda_free(p->w[r]);
    memset(p, 0, sizeof *p);
}

/* x32: [G*t][K] (the same FP16-rounded values the kernel rows use). */
static int run_peer_row(bench *b, vg_cublas *h, const char *name, const wset *w,
                        const peer_w *pw, int bf16, int batched, int t, const float *x32,
                        const double *ref)
{
    const int G = w->G, N = w->N, K = w->K, m = G * t;
    void *dx = NULL, *dy = NULL, *exec = NULL, *timer = NULL;
    double *samples = calloc((size_t)b->o.samples, sizeof(double));
    uint16_t *y = malloc((size_t)m * N * 2);
    int rc = -1;
    vg_status st = samples && y ? VG_OK : VG_ERR_NO_MEMORY;
    if (st == VG_OK)
        st = vg_cuda_alloc((size_t)m * K * 2, &dx);
    if (st == VG_OK)
        st = vg_cuda_alloc((size_t)m * N * 2, &dy);
    if (st == VG_OK)
        st = vg_cuda_upload_half(dx, x32, (size_t)m * K, bf16);
    /* One call outside the graph: cuBLAS picks its kernel, and the output is
     * checked. */
    if (st == VG_OK)
        st = vg_cublas_gemm(h, b->stream, bf16, batched, G, t, N, K, dx, pw->w[0], dy);
    if (st == VG_OK)
        st = vg_cuda_synchronize(b->stream);
    if (st == VG_OK)
        st = vg_cuda_copy_to_host(y, dy, (size_t)m * N * 2);
    double rel = NAN;
    if (st == VG_OK) {
        double num = 0, den = 0;
        for (size_t i = 0; i < (size_t)m * N; i++) {
            double v = bf16 ? vg_bf16_to_f32(y[i]) : vg_fp16_to_f32(y[i]);
            num += (v - ref[i]) * (v - ref[i]);
            den += ref[i] * ref[i];
        }
        rel = den > 0 ? sqrt(num / den) : NAN;
    }
    if (st == VG_OK)
        st = vg_cuda_graph_begin(b->stream);
    if (st == VG_OK) {
        for (int r = 0; r < pw->R && st == VG_OK; r++)
            st = vg_cublas_gemm(h, b->stream, bf16, batched, G, t, N, K, dx, pw->w[r], dy);
        vg_status st2 = vg_cuda_graph_end(b->stream, &exec);
        if (st == VG_OK)
            st = st2;
    }
    if (st == VG_OK)
        st = vg_cuda_timer_create(&timer);
    for (int i = 0; i < 3 && st == VG_OK; i++)
        st = vg_cuda_graph_launch(exec, b->stream);
    for (int i = 0; i < b->o.samples && st == VG_OK; i++) {
        double us = 0;
        st = vg_cuda_timer_start(timer, b->stream);
        if (st == VG_OK)
            st = vg_cuda_graph_launch(exec, b->stream);
        if (st == VG_OK)
            st = vg_cuda_timer_stop(timer, b->stream);
        if (st == VG_OK)
            st = vg_cuda_timer_elapsed_us(timer, &us);
        samples[i] = us / pw->R;
    }
    if (st == VG_OK) {
        char plan[64];
        snprintf(plan, sizeof plan, batched ? "cublasGemmStridedBatchedEx.%s" : "cublasGemmEx.%s.x%d",
                 bf16 ? "bf16" : "fp16", G);
        add_row(b, name, "peer", G > 1 ? (batched ? "grouped" : "loop") : "dense", -1, m, N, K, G,
                t, plan, "n/a", samples, b->o.samples, (double)G * N * K * 2,
                2.0 * m * N * (double)K, rel);
        rc = 0;
    } else {
        fprintf(stderr, "voltgate bench: %s: %s (%s)\n", name, vg_status_str(st), vg_last_error());
    }
    vg_cuda_timer_destroy(timer);
    vg_cuda_graph_destroy(exec);
    vg_cuda_free(dx);
    vg_cuda_free(dy);
    free(samples);
    free(y);
    if (rc)
        b->failed = 1;
    return rc;
}

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
    if (!x->x16 || !x->x32 || !x->ref)
        return -1;
    uint64_t s = seed + 17;
    for (size_t i = 0; i < count; i++) {
        x->x16[i] = vg_f32_to_fp16(uniform(&s));
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

/* The first t of every T rows of each group, for x16, x32 and ref. */
static void slice(const xset *full, int G, int T, int t, int N, uint16_t *x16, float *x32,
                  double *ref)
{
    const int K = full->K;
    for (int g = 0; g < G; g++)
        for (int j = 0; j < t; j++) {
            size_t src = (size_t)g * T + j, dst = (size_t)g * t + j;
            memcpy(x16 + dst * K, full->x16 + src * K, (size_t)K * 2);
            memcpy(x32 + dst * K, full->x32 + src * K, (size_t)K * 4);
            memcpy(ref + dst * N, full->ref + src * N, (size_t)N * sizeof(double));
        }
}

static int max_tokens(const opts *o, int cap)
{
    int t = 0;
    for (int i = 0; i < o->ntokens; i++)
        if (o->tokens[i] > t && o->tokens[i] <= cap)
            t = o->tokens[i];
    return t;
}

/* Is id one of the comma-separated ids of list (exactly, not a prefix)? */
static int id_in_list(const char *list, const char *id)
{
    const size_t len = strlen(id);
    size_t n;
    for (const char *s = list, *next; s; s = next) {
        next = vg_list_item(s, &n);
        if (n == len && !strncmp(s, id, len))
            return 1;
    }
    return 0;
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
        if (id_in_list(b->o.plans, out[i]->id))
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
static const char *unknown_plan(const opts *o, const char *list, size_t *len)
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

/* wo_a: G groups of N x K, every tokens value, the paths and tune settings
 * (or the plans --plan forces). */
static void bench_grouped(bench *b, vg_cublas *h, const char *shape, int G, int N, int K)
{
    const opts *o = &b->o;
    const int T = max_tokens(o, 1 << 20);
    if (T <= 0)
        return;
    wset w;
    xset full;
    if (wset_make(b, &w, o->family, G, N, K, 1) || xset_make(&full, &w, T, 2, 0)) {
        b->failed = 1;
        return;
    }
    uint16_t *x16 = malloc((size_t)G * T * K * 2);
    float *x32 = malloc((size_t)G * T * K * 4);
    double *ref = malloc((size_t)G * T * N * sizeof(double));
    peer_w pw_bf16 = {{0}, 0}, pw_fp16 = {{0}, 0};
    int peers = o->cuda && o->peers && h;
    if (peers && (peer_w_make(b, &pw_bf16, &w, 1) || peer_w_make(b, &pw_fp16, &w, 0))) {
        fprintf(stderr, "voltgate bench: peer weights: %s\n", vg_last_error());
        peers = 0;
    }
    for (int ti = 0; ti < o->ntokens && x16 && x32 && ref; ti++) {
        const int t = o->tokens[ti];
        slice(&full, G, T, t, N, x16, x32, ref);
        int32_t off[65];
        for (int g = 0; g <= G; g++)
            off[g] = g * t;
        char name[192];
        for (int p = 0; p < 2 && o->plans; p++) {
            if ((p == 0 && !o->loop) || (p == 1 && !o->grouped))
                continue;
            const vg_path path = p ? VG_PATH_GROUPED : VG_PATH_LOOP;
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
            for (int p = 0; p < 2; p++) {
                if ((p == 0 && !o->loop) || (p == 1 && !o->grouped))
                    continue;
                snprintf(name, sizeof name, "%s/%s/%s/t%d/tune=%s", shape, p ? "grouped" : "loop",
                         vg_family_name(o->family), t, o->tunes[ui] ? "on" : "off");
                if (in_shard(b))
                    run_kernel_row(b, name, &w, o->family, p ? VG_PATH_GROUPED : VG_PATH_LOOP, t,
                                   G * t, off, x16, ref, o->tunes[ui], NULL);
            }
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
    xset_free(&full);
    wset_free(b, &w);
}

/* Dense at N x K for each M (tokens values up to max_m; or exactly ms). */
static void bench_dense(bench *b, vg_cublas *h, const char *shape, int N, int K, const int *ms,
                        int nms)
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

/* ---- the copy bandwidth ------------------------------------------------------------- */

static int measure_copy(bench *b)
{
    int n = b->o.samples;
    double *gbs = calloc((size_t)n, sizeof(double));
    double *us = calloc((size_t)n, sizeof(double));
    if (!gbs || !us) {
        free(gbs);
        free(us);
        return -1;
    }
    size_t bytes = b->o.cuda ? (size_t)512 << 20 : (size_t)64 << 20;
    int rc = 0;
    if (b->o.cuda) {
        if (vg_cuda_copy_bandwidth(bytes, n, &b->copy_gbs, gbs) != VG_OK) {
            fprintf(stderr, "voltgate bench: copy bandwidth: %s\n", vg_last_error());
            rc = -1;
        }
    } else {
        char *a = malloc(bytes), *c = malloc(bytes);
        if (!a || !c) {
            rc = -1;
        } else {
            memset(a, 1, bytes);
            memcpy(c, a, bytes);
            for (int i = 0; i < n; i++) {
                double t0 = vg_now_us();
                memcpy(i % 2 ? a : c, i % 2 ? c : a, bytes);
                gbs[i] = 2.0 * (double)bytes / ((vg_now_us() - t0) * 1e-6) / 1e9;
            }
            double mn, mx;
            stats(gbs, n, &b->copy_gbs, &mn, &mx);
        }
        free(a);
        free(c);
    }
    if (rc == 0) {
        for (int i = 0; i < n; i++)
            us[i] = 2.0 * (double)bytes / (gbs[i] * 1e9) * 1e6;
        char name[64];
        snprintf(name, sizeof name, "copy/%s/%zuMiB", b->o.cuda ? "d2d" : "memcpy", bytes >> 20);
        add_row(b, name, "copy", "n/a", -1, 0, 0, 0, 0, 0, b->o.cuda ? "cudaMemcpy" : "memcpy",
                "n/a", us, n, 2.0 * (double)bytes, 0, NAN);
    }
    free(gbs);
    free(us);
    return rc;
}

/* ---- tables -------------------------------------------------------------------------------- */

static void print_tables(const bench *b, const char *shape, int G, int N, int K)
{
    const opts *o = &b->o;
    char key[128];
    printf("\n%s: %d groups x N=%d x K=%d, %s weights; copy bandwidth %.0f GB/s\n", shape, G, N,
           K, vg_family_name(o->family), b->copy_gbs);
    /* The stream ceiling and the cuBLAS peers are CUDA measurements: the
     * CPU table leaves their columns out rather than print nan. */
    printf("%-5s %6s %10s %11s %7s %8s", "tune", "tokens", "loop_us", "grouped_us", "ratio",
           "bw_frac");
    if (o->cuda)
        printf(" %9s", "ceil_frac");
    printf(" %11s", "max_relrms");
    if (o->cuda)
        printf(" %11s %11s", "bmm_bf16_us", "loop_bf16_us");
    printf("  %s\n", "grouped plan (decision)");
    for (int ui = 0; ui < o->ntunes; ui++)
        for (int ti = 0; ti < o->ntokens; ti++) {
            int t = o->tokens[ti];
            const char *tn = o->tunes[ui] ? "on" : "off";
            snprintf(key, sizeof key, "%s/loop/%s/t%d/tune=%s", shape, vg_family_name(o->family),
                     t, tn);
            const result *l = find_result(b, key);
            snprintf(key, sizeof key, "%s/grouped/%s/t%d/tune=%s", shape,
                     vg_family_name(o->family), t, tn);
            const result *g = find_result(b, key);
            snprintf(key, sizeof key, "%s/peer-cublas-bmm-bf16/t%d", shape, t);
            const result *pb = find_result(b, key);
            snprintf(key, sizeof key, "%s/peer-cublas-loop-bf16/t%d", shape, t);
            const result *pl = find_result(b, key);
            double rel = 0;
            if (l && isfinite(l->rel_rms))
                rel = l->rel_rms;
            if (g && isfinite(g->rel_rms) && g->rel_rms > rel)
                rel = g->rel_rms;
            printf("%-5s %6d %10.2f %11.2f %7.2f %8.3f", tn, t, l ? l->median_us : NAN,
                   g ? g->median_us : NAN, l && g ? l->median_us / g->median_us : NAN,
                   g ? g->bw_frac : NAN);
            if (o->cuda)
                printf(" %9.3f", g ? g->ceil_frac : NAN);
            printf(" %11.2e", rel);
            if (o->cuda)
                printf(" %11.2f %11.2f", pb ? pb->median_us : NAN, pl ? pl->median_us : NAN);
            printf("  %s (%s)\n", g ? g->plan : "-", g ? g->decision : "-");
        }
}

static void print_dense(const bench *b, const char *shape, const int *ms, int nms)
{
    const opts *o = &b->o;
    printf("\n%s dense (%s): copy bandwidth %.0f GB/s\n", shape, vg_family_name(o->family),
           b->copy_gbs);
    printf("%-5s %6s %10s %8s", "tune", "M", "us", "bw_frac");
    if (o->cuda)
        printf(" %9s", "ceil_frac");
    printf(" %8s %11s", "TFLOP/s", "max_relrms");
    if (o->cuda)
        printf(" %11s %8s", "bf16_us", "bf16_TF");
    printf("  %s\n", "plan (decision)");
    char key[128];
    for (int ui = 0; ui < o->ntunes; ui++)
        for (int i = 0; i < nms; i++) {
            snprintf(key, sizeof key, "%s/dense/%s/m%d/tune=%s", shape, vg_family_name(o->family),
                     ms[i], o->tunes[ui] ? "on" : "off");
            const result *r = find_result(b, key);
            snprintf(key, sizeof key, "%s/peer-cublas-bf16/m%d", shape, ms[i]);
            const result *p = find_result(b, key);
            if (!r)
                continue;
            printf("%-5s %6d %10.2f %8.3f", o->tunes[ui] ? "on" : "off", ms[i], r->median_us,
                   r->bw_frac);
            if (o->cuda)
                printf(" %9.3f", r->ceil_frac);
            printf(" %8.1f %11.2e", r->tflops, r->rel_rms);
            if (o->cuda)
                printf(" %11.2f %8.1f", p ? p->median_us : NAN, p ? p->tflops : NAN);
            printf("  %s (%s)\n", r->plan, r->decision);
        }
}

/* --plan: one line per forced plan and row of the shape, in the order run. */
static void print_forced(const bench *b, const char *shape)
{
    printf("\n%s (%s), plans forced: copy bandwidth %.0f GB/s\n", shape,
           vg_family_name(b->o.family), b->copy_gbs);
    printf("%-8s %6s %10s %8s", "path", "tokens", "us", "bw_frac");
    if (b->o.cuda)
        printf(" %9s", "ceil_frac");
    printf(" %11s  %s\n", "max_relrms", "plan");
    const size_t len = strlen(shape);
    for (size_t i = 0; i < b->nres; i++) {
        const result *r = &b->res[i];
        if (strncmp(r->name, shape, len) || r->name[len] != '/' || !strstr(r->name, "/plan="))
            continue;
        printf("%-8s %6d %10.2f %8.3f", r->path, r->tokens, r->median_us, r->bw_frac);
        if (b->o.cuda)
            printf(" %9.3f", r->ceil_frac);
        printf(" %11.2e  %s\n", r->rel_rms, r->plan);
    }
}

/* ---- main ---------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: voltgate bench [options]\n"
            "  --backend auto|cuda|cpu  (default auto: cuda when a device is present, else\n"
            "                         cpu; cpu runs small shapes, host clock)\n"
            "  --shape LIST           wo_a,dense,prefill (default wo_a)\n"
            "                         wo_a: 8 groups x N=1024 x K=4096; dense: N=K=4096 and\n"
            "                         N=4096,K=14336 at M <= 16; prefill: M=N=K=4096\n"
            "  --tokens LIST          tokens per group / dense M (default 1,2,4,6,8,16)\n"
            "  --paths LIST           loop,grouped (default both)\n"
            "  --tune LIST            off,on: fp8_tune_small_shapes (default off,on)\n"
            "  --family NAME          fp8 (default), fp16, awq, mxfp4, nvfp4\n"
            "  --samples N            timed samples per row (default 50 cuda, 30 cpu)\n"
            "  --rotate N             weight copies rotated per sample (default: 3x L2)\n"
            "  --no-peers             skip the cuBLAS peers\n"
            "  --max-rel-rms X        a kernel row whose output's relative RMS error against\n"
            "                         the FP64 reference exceeds X (or is not finite) fails\n"
            "                         the run (default 1e-2; rows measure about 2e-4)\n"
            "  --plan all|ID[,ID...]  time every plan that applies (or those named) on each\n"
            "                         row, forced past the decision (\"forced\" in the JSON),\n"
            "                         instead of --tune; `voltgate plans` lists the IDs\n"
            "  --shard I/N            run only rows i with i %% N == I\n"
            "  --quick                a few dozen samples, small shapes (make regress)\n"
            "  --json FILE            write every row and sample\n"
            "  --json-format F        ours (default: rows[] with samples_us) or gbench:\n"
            "                         google-benchmark's JSON (context, benchmarks[] with one\n"
            "                         entry per sample and our bandwidth fields as counters),\n"
            "                         which its compare.py reads\n"
            "  --dispatch ...         the dispatch-overhead bench (tools/bench_dispatch.c)\n"
            "Exit: 0 ok, 1 a row failed, 2 usage, 77 no CUDA device.\n");
}

static int parse_args(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->backend = "auto";
    o->shapes = SHAPE_WO_A;
    static const int def_tokens[] = {1, 2, 4, 6, 8, 16};
    memcpy(o->tokens, def_tokens, sizeof def_tokens);
    o->ntokens = 6;
    o->loop = o->grouped = 1;
    o->tunes[0] = 0;
    o->tunes[1] = 1;
    o->ntunes = 2;
    o->family = VG_FAMILY_FP8;
    o->samples = -1;
    o->shard_n = 1;
    o->peers = 1;
    /* The rows measure ~2e-4 (FP16 output rounding); a wrong kernel is far above. */
    o->max_rel_rms = 1e-2;
    int quick = 0, tokens_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED()                                                              \
    do {                                                                    \
        if (!v) {                                                           \
            fprintf(stderr, "voltgate bench: %s needs a value\n", a);      \
            return -1;                                                      \
        }                                                                   \
        i++;                                                                \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(a, "--backend")) {
            NEED();
            if (strcmp(v, "auto") && strcmp(v, "cuda") && strcmp(v, "cpu")) {
                fprintf(stderr, "voltgate bench: unknown backend '%s' (auto, cuda or cpu)\n", v);
                return -1;
            }
            o->backend = v;
        } else if (!strcmp(a, "--shape")) {
            NEED();
            o->shapes = 0;
            size_t len;
            for (const char *s = v, *next; s; s = next) {
                next = vg_list_item(s, &len);
                if (len == 4 && !strncmp(s, "wo_a", len))
                    o->shapes |= SHAPE_WO_A;
                else if (len == 5 && !strncmp(s, "dense", len))
                    o->shapes |= SHAPE_DENSE;
                else if (len == 7 && !strncmp(s, "prefill", len))
                    o->shapes |= SHAPE_PREFILL;
                else {
                    fprintf(stderr, "voltgate bench: --shape '%s': unknown or empty shape '%.*s' "
                                    "(wo_a, dense, prefill)\n", v, (int)len, s);
                    return -1;
                }
            }
        } else if (!strcmp(a, "--tokens")) {
            NEED();
            if ((o->ntokens = parse_list(v, o->tokens, MAX_LIST, "tokens")) <= 0)
                return -1;
            tokens_given = 1;
        } else if (!strcmp(a, "--paths")) {
            NEED();
            o->loop = strstr(v, "loop") != NULL;
            o->grouped = strstr(v, "grouped") != NULL;
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
                if (strcmp(s, "loop") && strcmp(s, "grouped")) {
                    fprintf(stderr, "voltgate bench: unknown path '%s' (loop, grouped)\n", s);
                    return -1;
                }
        } else if (!strcmp(a, "--tune")) {
            NEED();
            o->ntunes = 0;
            char buf[64];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *s = strtok(buf, ","); s && o->ntunes < 2; s = strtok(NULL, ",")) {
                if (!strcmp(s, "off"))
                    o->tunes[o->ntunes++] = 0;
                else if (!strcmp(s, "on"))
                    o->tunes[o->ntunes++] = 1;
                else {
                    fprintf(stderr, "voltgate bench: --tune takes off and/or on, not '%s'\n", s);
                    return -1;
                }
            }
            if (!o->ntunes)
                return -1;
        } else if (!strcmp(a, "--family")) {
            NEED();
            if (vg_family_parse(v, &o->family) != VG_OK) {
                fprintf(stderr, "voltgate bench: %s\n", vg_last_error());
                return -1;
            }
        } else if (!strcmp(a, "--samples")) {
            NEED();
            long long n;
            if (vg_parse_int(v, (size_t)-1, 1, 100000, &n) != 0) {
                fprintf(stderr, "voltgate bench: --samples must be an integer 1..100000, not '%s'\n", v);
                return -1;
            }
            o->samples = (int)n;
        } else if (!strcmp(a, "--rotate")) {
            NEED();
            long long n;
            if (vg_parse_int(v, (size_t)-1, 1, 16, &n) != 0) {
                fprintf(stderr, "voltgate bench: --rotate must be an integer 1..16, not '%s'\n", v);
                return -1;
            }
            o->rotate = (int)n;
        } else if (!strcmp(a, "--shard")) {
            NEED();
            const char *slash = strchr(v, '/');
            long long si, sn;
            if (!slash || vg_parse_int(v, (size_t)(slash - v), 0, 1000000, &si) != 0 ||
                vg_parse_int(slash + 1, (size_t)-1, 1, 1000000, &sn) != 0 || si >= sn) {
                fprintf(stderr, "voltgate bench: --shard takes I/N with 0 <= I < N\n");
                return -1;
            }
            o->shard_i = (int)si;
            o->shard_n = (int)sn;
        } else if (!strcmp(a, "--max-rel-rms")) {
            NEED();
            char *end = NULL;
            o->max_rel_rms = strtod(v, &end);
            if (!end || *end || !(o->max_rel_rms >= 0)) {
                fprintf(stderr, "voltgate bench: --max-rel-rms takes a number >= 0, not '%s'\n", v);
                return -1;
            }
        } else if (!strcmp(a, "--json")) {
            NEED();
            if (vg_check_output_path("--json", v) != VG_OK) {
                fprintf(stderr, "voltgate bench: %s\n", vg_last_error());
                return -1;
            }
            o->json = v;
        } else if (!strcmp(a, "--json-format")) {
            NEED();
            if (strcmp(v, "ours") && strcmp(v, "gbench")) {
                fprintf(stderr, "voltgate bench: --json-format takes ours or gbench, not '%s'\n", v);
                return -1;
            }
            o->json_gbench = !strcmp(v, "gbench");
        } else if (!strcmp(a, "--quick")) {
            quick = 1;
        } else if (!strcmp(a, "--no-peers")) {
            o->peers = 0;
        } else if (!strcmp(a, "--plan")) {
            NEED();
            if (!v[0]) {
                fprintf(stderr, "voltgate bench: --plan needs 'all' or a plan id\n");
                return -1;
            }
            o->plans = v;
        } else {
            fprintf(stderr, "voltgate bench: unknown option '%s' (try --help)\n", a);
            return -1;
        }
#undef NEED
    }
    o->cuda = !strcmp(tool_backend(o->backend), "cuda");
    if (o->samples < 0)
        o->samples = quick ? 24 : o->cuda ? 50 : 30;
    if (!o->cuda && !tokens_given) {
        o->tokens[0] = 1;
        o->tokens[1] = 2;
        o->tokens[2] = 4;
        o->ntokens = 3;
    }
    if (!o->loop && !o->grouped) {
        fprintf(stderr, "voltgate bench: --paths names neither loop nor grouped\n");
        return -1;
    }
    return 0;
}

static void driver_version(char *buf, size_t len)
{
    buf[0] = 0;
    FILE *f = fopen("/proc/driver/nvidia/version", "r");
    if (!f)
        return;
    char line[512];
    if (fgets(line, sizeof line, f)) {
        /* "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release ..."
         * : the first token after "Module" that starts "<digits>." */
        char *p = strstr(line, "Module");
        for (char *tok = p ? strtok(p, " \t\n") : NULL; tok; tok = strtok(NULL, " \t\n")) {
            size_t d = strspn(tok, "0123456789");
            if (d > 0 && tok[d] == '.') {
                snprintf(buf, len, "%s", tok);
                break;
            }
        }
    }
    fclose(f);
}

static int make_configs(bench *b)
{
    for (int t = 0; t < 2; t++) {
        char json[256];
        snprintf(json, sizeof json,
                 "{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":%s}}}",
                 t ? "true" : "false");
        if (vg_config_parse(json, &b->cfg[t]) != VG_OK) {
            fprintf(stderr, "voltgate bench: config: %s\n", vg_last_error());
            return -1;
        }
    }
    return 0;
}

/* A row's number field, NAN when absent or null. */
static double row_number(const cJSON *row, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(row, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* google-benchmark's JSON from ours: the header becomes "context" (with the
 * fields google-benchmark writes there), and each row one "iteration" entry
 * per sample (real_time in us; cpu_time is the same figure, as a device
 * timer measures no CPU time), so that compare.py's U test sees every
 * sample.  Our bandwidth fields go along as counters. */
static cJSON *gbench_from(cJSON *ours)
{
    cJSON *rows = cJSON_DetachItemFromObjectCaseSensitive(ours, "rows");
    cJSON *root = cJSON_CreateObject();
    cJSON *context = ours;
    char date[64], host[256] = "";
    time_t t = time(NULL);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
    gethostname(host, sizeof host - 1);
    cJSON_AddStringToObject(context, "date", date);
    cJSON_AddStringToObject(context, "host_name", host);
    cJSON_AddStringToObject(context, "executable", "voltgate bench");
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    cJSON_AddNumberToObject(context, "num_cpus", ncpu > 0 ? (double)ncpu : 1.0);
    cJSON_AddNumberToObject(context, "mhz_per_cpu", 0);
    cJSON_AddBoolToObject(context, "cpu_scaling_enabled", 0);
    cJSON_AddItemToObject(context, "caches", cJSON_CreateArray());
    cJSON_AddStringToObject(context, "library_build_type", "release");
    cJSON_AddItemToObject(root, "context", context);
    cJSON *benchmarks = cJSON_AddArrayToObject(root, "benchmarks");
    const double copy_gbs = row_number(context, "copy_bandwidth_gbs");
    int family_index = 0;
    const cJSON *row;
    cJSON_ArrayForEach(row, rows) {
        const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "name"));
        const char *plan = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, "plan"));
        const cJSON *samples = cJSON_GetObjectItemCaseSensitive(row, "samples_us");
        const int n = cJSON_GetArraySize(samples);
        const double bytes = row_number(row, "bytes"), ceil_frac = row_number(row, "ceiling_fraction");
        int rep = 0;
        const cJSON *sample;
        cJSON_ArrayForEach(sample, samples) {
            const double us = sample->valuedouble;
            cJSON *e = cJSON_CreateObject();
            cJSON_AddStringToObject(e, "name", name ? name : "?");
            cJSON_AddNumberToObject(e, "family_index", family_index);
            cJSON_AddNumberToObject(e, "per_family_instance_index", 0);
            cJSON_AddStringToObject(e, "run_name", name ? name : "?");
            cJSON_AddStringToObject(e, "run_type", "iteration");
            cJSON_AddNumberToObject(e, "repetitions", n);
            cJSON_AddNumberToObject(e, "repetition_index", rep++);
            cJSON_AddNumberToObject(e, "threads", 1);
            cJSON_AddNumberToObject(e, "iterations", 1);
            cJSON_AddNumberToObject(e, "real_time", us);
            cJSON_AddNumberToObject(e, "cpu_time", us);
            cJSON_AddStringToObject(e, "time_unit", "us");
            if (plan)
                cJSON_AddStringToObject(e, "label", plan);
            if (us > 0 && bytes > 0) {
                cJSON_AddNumberToObject(e, "bytes_per_second", bytes / (us * 1e-6));
                if (copy_gbs > 0)
                    cJSON_AddNumberToObject(e, "bandwidth_fraction",
                                            bytes / (us * 1e-6) / 1e9 / copy_gbs);
            }
            if (isfinite(ceil_frac))
                cJSON_AddNumberToObject(e, "ceiling_fraction", ceil_frac);
            cJSON_AddItemToArray(benchmarks, e);
        }
        family_index++;
    }
    cJSON_Delete(rows);
    return root;
}

static int write_json(bench *b)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tool", "bench");
    cJSON_AddStringToObject(root, "build", tool_build_id());
    cJSON_AddStringToObject(root, "backend", b->o.cuda ? "cuda" : "cpu");
    char drv[64] = "", cuda[32] = "", archs[128] = "";
    if (b->o.cuda) {
        driver_version(drv, sizeof drv);
        snprintf(cuda, sizeof cuda, "%d.%d", b->info.runtime_version / 1000,
                 (b->info.runtime_version % 1000) / 10);
        vg_cuda_arch_list(archs, sizeof archs);
    }
    cJSON_AddStringToObject(root, "gpu", b->o.cuda ? b->info.name : "cpu");
    cJSON_AddStringToObject(root, "driver", drv);
    cJSON_AddStringToObject(root, "cuda_version", cuda);
    cJSON_AddStringToObject(root, "arch_list", archs);
    /* How the decode kernels were launched (it moves their times by 1-2 us
     * on SM90): "pdl", "plain", or null on the CPU. */
    int pdl = 0;
    if (b->o.cuda && vg_cuda_decode_pdl(&pdl) == VG_OK)
        cJSON_AddStringToObject(root, "decode_launch", pdl ? "pdl" : "plain");
    else
        cJSON_AddNullToObject(root, "decode_launch");
    /* The policy of the last tune setting run (tune=on when both ran). */
    const vg_config *cfg = b->cfg[b->o.tunes[b->o.ntunes - 1]];
    uint64_t hash = 0;
    vg_config_policy_hash(cfg, &hash);
    char hex[17];
    snprintf(hex, sizeof hex, "%016llx", (unsigned long long)hash);
    cJSON_AddStringToObject(root, "policy_hash", hex);
    char *cj = NULL;
    cJSON *cobj = NULL;
    if (vg_config_to_json(cfg, &cj) == VG_OK && cj)
        cobj = cJSON_Parse(cj);
    free(cj);
    cJSON_AddItemToObject(root, "config", cobj ? cobj : cJSON_CreateObject());
    cJSON_AddNumberToObject(root, "copy_bandwidth_gbs", b->copy_gbs);
    cJSON_AddItemToObject(root, "rows", b->rows);
    b->rows = NULL;
    if (b->o.json_gbench)
        root = gbench_from(root);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return -1;
    int ok = tool_write_json(b->o.json, text);
    free(text);
    if (!ok) {
        fprintf(stderr, "voltgate bench: cannot write %s: %s\n", b->o.json, strerror(errno));
        return -1;
    }
    return 0;
}

int cmd_bench(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--dispatch")) {
#ifdef VG_HAVE_BENCH_DISPATCH
            return vg_bench_dispatch_main(argc, argv);
#else
            fprintf(stderr, "voltgate bench --dispatch: not built yet (tools/bench_dispatch.c "
                            "from the runtime issue is missing)\n");
            return VG_EXIT_USAGE;
#endif
        }
    bench b;
    memset(&b, 0, sizeof b);
    int pr = parse_args(argc, argv, &b.o);
    if (pr != 0)
        return pr > 0 ? VG_EXIT_OK : VG_EXIT_USAGE;
    const opts *o = &b.o;
    vg_status st = vg_device_open(o->cuda ? "cuda" : "cpu", 0, &b.dev);
    if (st == VG_ERR_NO_DEVICE) {
        printf("skipped: no CUDA device\n");
        return VG_EXIT_SKIP;
    }
    if (st != VG_OK) {
        fprintf(stderr, "voltgate bench: open %s: %s\n", o->cuda ? "cuda" : "cpu", vg_last_error());
        return VG_EXIT_FAIL;
    }
    if (make_configs(&b)) {
        vg_device_close(b.dev);
        return VG_EXIT_FAIL;
    }
    const char *unknown = NULL;
    size_t unknown_len = 0;
    if (o->plans && strcmp(o->plans, "all"))
        unknown = unknown_plan(o, o->plans, &unknown_len);
    if (unknown) {
        fprintf(stderr, "voltgate bench: --plan '%.*s': the %s backend has no %s plan of that name "
                        "(voltgate plans lists them)\n",
                (int)unknown_len, unknown, o->cuda ? "cuda" : "cpu", vg_family_name(o->family));
        vg_config_free(b.cfg[0]);
        vg_config_free(b.cfg[1]);
        vg_device_close(b.dev);
        return VG_EXIT_USAGE;
    }
    vg_cublas *h = NULL;
    if (o->cuda) {
        vg_cuda_info_get(0, &b.info);
        if (vg_cuda_stream_create(&b.stream) != VG_OK) {
            fprintf(stderr, "voltgate bench: %s\n", vg_last_error());
            return VG_EXIT_FAIL;
        }
        if (o->peers && vg_cublas_create(&h) != VG_OK)
            fprintf(stderr, "voltgate bench: no cuBLAS peers: %s\n", vg_last_error());
        int pdl = 0;
        vg_cuda_decode_pdl(&pdl);
        printf("device: %s (sm_%d, %d SMs, L2 %zu MiB); decode launch: %s\n", b.info.name,
               b.info.arch, b.info.sms, b.info.l2_bytes >> 20,
               pdl ? "pdl (programmatic dependent launch; VG_CUDA_PDL=0 turns it off)" : "plain");
    }
    b.rows = cJSON_CreateArray();
    if (measure_copy(&b))
        b.failed = 1;
    printf("copy bandwidth: %.0f GB/s (bytes read + written)\n", b.copy_gbs);
    fflush(stdout);
    /* The tables print once every row is timed: until then, the progress line. */
    tool_progress_start(&b.progress, "bench");

    int wG = 8, wN = 1024, wK = 4096;
    if (!o->cuda) {
        wG = 4;
        wN = 256;
        wK = 512;
    }
    if (o->shapes & SHAPE_WO_A)
        bench_grouped(&b, h, "wo_a", wG, wN, wK);
    int ms[MAX_LIST], nms = 0;
    for (int i = 0; i < o->ntokens; i++)
        if (o->tokens[i] <= 16)
            ms[nms++] = o->tokens[i];
    if (o->shapes & SHAPE_DENSE) {
        if (o->cuda) {
            bench_dense(&b, h, "n4096k4096", 4096, 4096, ms, nms);
            bench_dense(&b, h, "n4096k14336", 4096, 14336, ms, nms);
        } else {
            bench_dense(&b, h, "n512k512", 512, 512, ms, nms);
        }
    }
    int pm[1] = {o->cuda ? 4096 : 256};
    if (o->shapes & SHAPE_PREFILL)
        bench_dense(&b, h, o->cuda ? "prefill4096" : "prefill256", o->cuda ? 4096 : 256,
                    o->cuda ? 4096 : 256, pm, 1);

    tool_progress_end(&b.progress);
    if (o->plans) {
        if (o->shapes & SHAPE_WO_A)
            print_forced(&b, "wo_a");
        if (o->shapes & SHAPE_DENSE) {
            print_forced(&b, o->cuda ? "n4096k4096" : "n512k512");
            if (o->cuda)
                print_forced(&b, "n4096k14336");
        }
        if (o->shapes & SHAPE_PREFILL)
            print_forced(&b, o->cuda ? "prefill4096" : "prefill256");
    } else {
        if (o->shapes & SHAPE_WO_A)
            print_tables(&b, "wo_a", wG, wN, wK);
        if (o->shapes & SHAPE_DENSE) {
            if (o->cuda) {
                print_dense(&b, "n4096k4096", ms, nms);
                print_dense(&b, "n4096k14336", ms, nms);
            } else {
                print_dense(&b, "n512k512", ms, nms);
            }
        }
        if (o->shapes & SHAPE_PREFILL)
            print_dense(&b, o->cuda ? "prefill4096" : "prefill256", pm, 1);
    }

    int rc = b.failed ? VG_EXIT_FAIL : VG_EXIT_OK;
    if (o->json && write_json(&b))
        rc = VG_EXIT_FAIL;
    cJSON_Delete(b.rows);
    vg_cublas_destroy(h);
    if (b.stream)
        vg_cuda_stream_destroy(b.stream);
    vg_config_free(b.cfg[0]);
    vg_config_free(b.cfg[1]);
    free(b.res);
    vg_device_close(b.dev);
    return rc;
}
