/*
 * voltgate bench: the rows.  One row is one timed call (a kernel through the
 * runtime, or a peer): its samples, its statistics and its JSON entry; the
 * weight sets each row rotates through live here too.
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

/* ---- small helpers ------------------------------------------------------------ */

void bench_stats(const double *s, int n, double *median, double *mn, double *mx)
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

float bench_uniform(uint64_t *s)
{
    return (float)((double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0) * 2.0 - 1.0);
}

int in_shard(bench *b)
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

const result *find_result(const bench *b, const char *name)
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
void add_row(bench *b, const char *name, const char *kind, const char *path,
             vg_family fam, int m, int n, int k, int groups, int tokens, const char *plan,
             const char *decision, const double *samples, int ns, double bytes,
             double flops, double rel_rms)
{
    double med, mn, mx;
    bench_stats(samples, ns, &med, &mn, &mx);
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

void wset_free(bench *b, wset *w)
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
int wset_make(bench *b, wset *w, vg_family fam, int G, int N, int K, uint64_t seed)
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
            f[r * K + k] = bench_uniform(&s) * mag;
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
vg_status bench_time_graph(bench *b, void *exec, int copies, double *samples)
{
    void *timer = NULL;
    vg_status st = vg_cuda_timer_create(&timer);
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
        samples[i] = us / copies;
    }
    vg_cuda_timer_destroy(timer);
    return st;
}

int run_kernel_row(bench *b, const char *name, const wset *w, vg_family fam,
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
        if (st == VG_OK)
            st = bench_time_graph(b, exec, w->R, samples);
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
    /* The plan's kind and the workspace it needs for this call (the
     * dequantize + cuBLAS kind's FP16 copy): what a caller pays in memory. */
    size_t ws = 0;
    cJSON *last = cJSON_GetArrayItem(b->rows, cJSON_GetArraySize(b->rows) - 1);
    if (last && info.plan) {
        cJSON_AddStringToObject(last, "plan_kind", vg_plan_kind_name(info.plan->kind));
        a.path = info.path;
        if (vg_gemm_plan_workspace_bytes(b->dev, info.plan, &a, &ws) == VG_OK)
            cJSON_AddNumberToObject(last, "workspace_bytes", (double)ws);
        else
            cJSON_AddNullToObject(last, "workspace_bytes");
    }
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
