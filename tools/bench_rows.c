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

/* What one timed layer call gave: the plan that ran and how it was decided,
 * the relative RMS error of a separate checked call, and the workspace the
 * plan needs for the call (the dequantize + cuBLAS kind's FP16 copy). */
typedef struct call_timing {
    vg_dispatch_info info;
    double rel_rms;
    int have_ws;
    size_t ws_bytes;
} call_timing;

/* Times one layer call (path, M rows) through the runtime's decision, or
 * the plan forced, into samples[b->o.samples]: the call is checked once on
 * a poisoned output, then timed over every weight copy (a CUDA graph of R
 * calls; on the CPU R calls on the host clock).  Adds no row: the callers
 * decide what a timing becomes (run_kernel_row, run_kind_row). */
static vg_status time_call(bench *b, const wset *w, vg_path path, int m, const int32_t *offsets,
                           const uint16_t *x16, const double *ref, int tune, const vg_plan *forced,
                           double *samples, call_timing *out)
{
    const int N = w->N, K = w->K;
    size_t ybytes = (size_t)m * N * 2;
    memset(out, 0, sizeof *out);
    out->rel_rms = NAN;
    void *dx = dev_upload(b, x16, (size_t)m * K * 2);
    void *dy = dev_upload(b, NULL, ybytes);
    void *doff = offsets ? dev_upload(b, offsets, sizeof(int32_t) * (size_t)(w->G + 1)) : NULL;
    uint16_t *y = malloc(ybytes);
    void *exec = NULL;
    vg_status st = VG_OK;
    if (!dx || !dy || (offsets && !doff) || !y) {
        st = vg_fail(VG_ERR_NO_MEMORY, "buffers for M=%d", m);
        goto out;
    }

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
    if ((st = vg_policy_enter(b->dev, b->cfg[tune])) != VG_OK)
        goto out;
    vg_dispatch_info *info = &out->info;
    a.w.q = w->q[0];
    a.w.scale = w->scale[0];
    a.w.zero = w->zero[0];
    st = gemm_call(b, forced, &a, info);
    if (st == VG_OK)
        st = vg_device_synchronize(b->dev, b->stream);
    /* Correctness of a separate call (poisoned output). */
    if (st == VG_OK && poison(b, dy, ybytes) == 0)
        st = gemm_call(b, forced, &a, NULL);
    if (st == VG_OK)
        st = vg_device_synchronize(b->dev, b->stream);
    if (st == VG_OK)
        st = vg_device_download(b->dev, y, dy, ybytes);
    out->rel_rms = st == VG_OK ? rel_rms_f16(y, ref, (size_t)m * N) : NAN;

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
    /* The workspace the plan needs for this call: what a caller pays in memory. */
    if (st == VG_OK && info->plan) {
        a.path = info->path;
        out->have_ws = vg_gemm_plan_workspace_bytes(b->dev, info->plan, &a, &out->ws_bytes) == VG_OK;
    }
out:
    if (exec)
        vg_cuda_graph_destroy(exec);
    vg_device_free(b->dev, dx);
    vg_device_free(b->dev, dy);
    if (doff)
        vg_device_free(b->dev, doff);
    free(y);
    return st;
}

/* Adds a timed call's row (add_row), with the plan's kind and workspace;
 * the row's cJSON object, or NULL when none was added. */
static cJSON *add_call_row(bench *b, const char *name, const wset *w, vg_family fam, int m,
                           int tokens, const char *decision, const double *samples,
                           const call_timing *t)
{
    const vg_plan *plan = t->info.plan;
    add_row(b, name, "kernel", vg_path_name(t->info.path), fam, m, w->N, w->K, w->G, tokens,
            plan ? plan->id : "n/a", decision, samples, b->o.samples, w->bytes,
            2.0 * m * w->N * (double)w->K, t->rel_rms);
    cJSON *last = cJSON_GetArrayItem(b->rows, cJSON_GetArraySize(b->rows) - 1);
    if (last && plan) {
        cJSON_AddStringToObject(last, "plan_kind", vg_plan_kind_name(plan->kind));
        if (t->have_ws)
            cJSON_AddNumberToObject(last, "workspace_bytes", (double)t->ws_bytes);
        else
            cJSON_AddNullToObject(last, "workspace_bytes");
    }
    return last;
}

/* A wrong output fails the run (the row is kept: its timing is real). */
static int check_output(bench *b, const char *name, const call_timing *t)
{
    if (output_ok(b, t->rel_rms))
        return 0;
    fprintf(stderr, "voltgate bench: %s: output check failed: relative RMS error %g against "
            "the FP64 reference (limit %g; inf: a non-finite output) with plan %s\n",
            name, t->rel_rms, b->o.max_rel_rms, t->info.plan ? t->info.plan->id : "n/a");
    b->failed = 1;
    return -1;
}

int run_kernel_row(bench *b, const char *name, const wset *w, vg_family fam,
                   vg_path path, int tokens, int m, const int32_t *offsets,
                   const uint16_t *x16, const double *ref, int tune, const vg_plan *forced)
{
    double *samples = calloc((size_t)b->o.samples, sizeof(double));
    call_timing t;
    vg_status st = samples ? time_call(b, w, path, m, offsets, x16, ref, tune, forced, samples, &t)
                           : VG_ERR_NO_MEMORY;
    int rc = -1;
    if (st != VG_OK) {
        fprintf(stderr, "voltgate bench: %s: %s (%s)\n", name, vg_status_str(st), vg_last_error());
        b->failed = 1;
    } else {
        add_call_row(b, name, w, fam, m, tokens,
                     forced ? "forced" : vg_decision_name(t.info.decision), samples, &t);
        rc = check_output(b, name, &t);
    }
    free(samples);
    return rc;
}

/* The fastest of plans[] (all of one kind, offered at M) on the dense path,
 * as one row.  Each plan is timed as a forced row is (time_call: the
 * bench's own graph over weight copies).  The tuner's candidate times are
 * not reused: they reach only the trace, exist only inside its tuning
 * limits and keep no samples; these rows compare sample by sample with the
 * tuned row and the cuBLAS peer beside them at every M.  When
 * more than one ran, the winner is timed once more and that timing is the
 * row, so its median is not the luckiest of several.  A plan whose call
 * fails is left out, as the tuner leaves it out, and named on stderr; a
 * wrong output fails the run.  "candidates_us" keeps every plan's median
 * (null: it did not run).  Returns 0, or -1 when no plan gave a row. */
int run_kind_row(bench *b, const char *name, const wset *w, vg_family fam, int m,
                 const uint16_t *x16, const double *ref, const vg_plan *const *plans, size_t n)
{
    double *samples = calloc((size_t)b->o.samples, sizeof(double));
    double *medians = calloc(n ? n : 1, sizeof(double));
    double *best_samples = calloc((size_t)b->o.samples, sizeof(double));
    call_timing t, best_t;
    memset(&best_t, 0, sizeof best_t);
    size_t best = n, ran = 0;
    int rc = -1;
    if (!samples || !medians || !best_samples) {
        fprintf(stderr, "voltgate bench: %s: out of memory\n", name);
        b->failed = 1;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        tool_progress_show(&b->progress, 0, "%d rows timed; %s: plan %zu of %zu", b->rows_done,
                           name, i + 1, n);
        medians[i] = NAN;
        vg_status st = time_call(b, w, VG_PATH_DENSE, m, NULL, x16, ref, 0, plans[i], samples, &t);
        if (st != VG_OK) {
            fprintf(stderr, "voltgate bench: %s: plan %s not timed: %s (%s)\n", name, plans[i]->id,
                    vg_status_str(st), vg_last_error());
            continue;
        }
        if (check_output(b, name, &t))
            continue;
        double mn, mx;
        bench_stats(samples, b->o.samples, &medians[i], &mn, &mx);
        ran++;
        if (best == n || medians[i] < medians[best]) {
            best = i;
            best_t = t;
            memcpy(best_samples, samples, (size_t)b->o.samples * sizeof(double));
        }
    }
    if (best == n) {
        fprintf(stderr, "voltgate bench: %s: no plan of the kind ran\n", name);
        b->failed = 1;
        goto out;
    }
    if (ran > 1) {
        tool_progress_show(&b->progress, 0, "%d rows timed; %s: %s again", b->rows_done, name,
                           plans[best]->id);
        vg_status st = time_call(b, w, VG_PATH_DENSE, m, NULL, x16, ref, 0, plans[best],
                                 best_samples, &best_t);
        if (st != VG_OK) {
            fprintf(stderr, "voltgate bench: %s: plan %s: %s (%s)\n", name, plans[best]->id,
                    vg_status_str(st), vg_last_error());
            b->failed = 1;
            goto out;
        }
        if (check_output(b, name, &best_t))
            goto out;
    }
    best_t.info.plan = plans[best];
    cJSON *row = add_call_row(b, name, w, fam, m, m, "forced", best_samples, &best_t);
    if (row) {
        cJSON *cand = cJSON_AddObjectToObject(row, "candidates_us");
        for (size_t i = 0; i < n; i++)
            if (isfinite(medians[i]))
                cJSON_AddNumberToObject(cand, plans[i]->id, medians[i]);
            else
                cJSON_AddNullToObject(cand, plans[i]->id);
    }
    rc = 0;
out:
    free(samples);
    free(medians);
    free(best_samples);
    return rc;
}
