/*
 * voltgate bench: the yardsticks beside each kernel row: cuBLAS on weights
 * dequantized once beforehand (the peers), and the copy bandwidth every
 * bw_frac is measured against.
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

/* ---- cuBLAS peers ---------------------------------------------------------------------- */

int peer_w_make(bench *b, peer_w *p, const wset *w, int bf16)
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

void peer_w_free(peer_w *p)
{
    for (int r = 0; r < p->R; r++)
        vg_cuda_free(p->w[r]);
    memset(p, 0, sizeof *p);
}

/* x32: [G*t][K] (the same FP16-rounded values the kernel rows use). */
int run_peer_row(bench *b, vg_cublas *h, const char *name, const wset *w,
                 const peer_w *pw, int bf16, int batched, int t, const float *x32,
                 const double *ref)
{
    const int G = w->G, N = w->N, K = w->K, m = G * t;
    void *dx = NULL, *dy = NULL, *exec = NULL;
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
        st = bench_time_graph(b, exec, pw->R, samples);
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
    vg_cuda_graph_destroy(exec);
    vg_cuda_free(dx);
    vg_cuda_free(dy);
    free(samples);
    free(y);
    if (rc)
        b->failed = 1;
    return rc;
}

/* ---- the copy bandwidth ------------------------------------------------------------- */

int measure_copy(bench *b)
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
            bench_stats(gbs, n, &b->copy_gbs, &mn, &mx);
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
