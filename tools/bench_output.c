/*
 * voltgate bench: what it prints (the tables) and writes (--json, in our
 * format or google-benchmark's).
 */
#include <errno.h>
#include <time.h>
#include <unistd.h>
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

/* ---- tables -------------------------------------------------------------------------------- */

void print_tables(const bench *b, const char *shape, int G, int N, int K)
{
    const opts *o = &b->o;
    char key[128];
    printf("\n%s: %d groups x N=%d x K=%d, %s weights; copy bandwidth %.0f GB/s\n", shape, G, N,
           K, vg_family_name(o->family), b->copy_gbs);
    /* The stream ceiling and the cuBLAS peers are CUDA measurements: the
     * CPU table leaves their columns out rather than print nan. */
    printf("%-5s %6s %10s %11s %7s %8s", "tune", "tokens", "loop_us", "grouped_us", "ratio",
           "bw_frac");
    if (o->moe)
        printf(" %10s", "moe_us");
    if (o->route_skewed)
        printf(" %10s", "skewed_us");
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
            snprintf(key, sizeof key, "%s/moe/%s/t%d/tune=%s", shape, vg_family_name(o->family), t,
                     tn);
            const result *mo = find_result(b, key);
            snprintf(key, sizeof key, "%s/moe-skewed/%s/t%d/tune=%s", shape, vg_family_name(o->family),
                     t, tn);
            const result *sk = find_result(b, key);
            snprintf(key, sizeof key, "%s/peer-cublas-bmm-bf16/t%d", shape, t);
            const result *pb = find_result(b, key);
            snprintf(key, sizeof key, "%s/peer-cublas-loop-bf16/t%d", shape, t);
            const result *pl = find_result(b, key);
            double rel = 0;
            if (l && isfinite(l->rel_rms))
                rel = l->rel_rms;
            if (g && isfinite(g->rel_rms) && g->rel_rms > rel)
                rel = g->rel_rms;
            if (mo && isfinite(mo->rel_rms) && mo->rel_rms > rel)
                rel = mo->rel_rms;
            if (sk && isfinite(sk->rel_rms) && sk->rel_rms > rel)
                rel = sk->rel_rms;
            printf("%-5s %6d %10.2f %11.2f %7.2f %8.3f", tn, t, l ? l->median_us : NAN,
                   g ? g->median_us : NAN, l && g ? l->median_us / g->median_us : NAN,
                   g ? g->bw_frac : NAN);
            if (o->moe)
                printf(" %10.2f", mo ? mo->median_us : NAN);
            if (o->route_skewed)
                printf(" %10.2f", sk ? sk->median_us : NAN);
            if (o->cuda)
                printf(" %9.3f", g ? g->ceil_frac : NAN);
            printf(" %11.2e", rel);
            if (o->cuda)
                printf(" %11.2f %11.2f", pb ? pb->median_us : NAN, pl ? pl->median_us : NAN);
            printf("  %s (%s)", g ? g->plan : "-", g ? g->decision : "-");
            if (o->moe)
                printf("  moe: %s (%s)", mo ? mo->plan : "-", mo ? mo->decision : "-");
            if (o->route_skewed)
                printf("  skewed: %s (%s)", sk ? sk->plan : "-", sk ? sk->decision : "-");
            printf("\n");
        }
}

void print_dense(const bench *b, const char *shape, const int *ms, int nms)
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

/* The row of shape (else of square: the crossover's M=N=K row runs under
 * prefill4096's name) named .../dense/FAMILY/mM/WHAT, or NULL. */
static const result *dense_row(const bench *b, const char *shape, const char *square, int m,
                               const char *what)
{
    char key[160];
    const char *fam = vg_family_name(b->o.family);
    snprintf(key, sizeof key, "%s/dense/%s/m%d/%s", shape, fam, m, what);
    const result *r = find_result(b, key);
    if (!r && square) {
        snprintf(key, sizeof key, "%s/dense/%s/m%d/%s", square, fam, m, what);
        r = find_result(b, key);
    }
    return r;
}

/* The crossover: at each M the fastest plan of each kind (the kind rows),
 * the tuned choice (the last --tune setting run: on when both ran) and the
 * cuBLAS BF16 peer; tuned/best is the tuned time over the fastest kind's,
 * 1 where the tuned choice is that plan (reports/targets.py
 * tuned_over_fastest: one plan timed twice in a run differs by the
 * machine's drift, up to 14 % at M=8192 on an H100, not by the choice). */
void print_kinds(const bench *b, const char *shape, const char *square, const int *ms, int nms)
{
    const opts *o = &b->o;
    const char *tune = o->tunes[o->ntunes - 1] ? "tune=on" : "tune=off";
    printf("\n%s crossover (%s): us of the fastest plan of each kind, the %s row and cuBLAS "
           "BF16\n", shape, vg_family_name(o->family), tune);
    printf("%6s %10s", "M", tune);
    for (int k = 0; k < VG_KIND_COUNT; k++)
        printf(" %14s", vg_plan_kind_name((vg_plan_kind)k));
    if (o->cuda)
        printf(" %10s", "bf16");
    printf(" %10s  %s\n", "tuned/best", "tuned plan");
    char what[64], peer[160];
    for (int i = 0; i < nms; i++) {
        const result *t = dense_row(b, shape, square, ms[i], tune);
        double best = NAN;
        const char *best_plan = NULL;
        int any = 0;
        const result *kr[VG_KIND_COUNT];
        for (int k = 0; k < VG_KIND_COUNT; k++) {
            snprintf(what, sizeof what, "kind=%s", vg_plan_kind_name((vg_plan_kind)k));
            kr[k] = dense_row(b, shape, square, ms[i], what);
            if (kr[k]) {
                any = 1;
                if (isnan(best) || kr[k]->median_us < best) {
                    best = kr[k]->median_us;
                    best_plan = kr[k]->plan;
                }
            }
        }
        if (!t && !any)
            continue;   /* another shard's M */
        printf("%6d %10.2f", ms[i], t ? t->median_us : NAN);
        for (int k = 0; k < VG_KIND_COUNT; k++)
            printf(" %14.2f", kr[k] ? kr[k]->median_us : NAN);
        if (o->cuda) {
            snprintf(peer, sizeof peer, "%s/peer-cublas-bf16/m%d", shape, ms[i]);
            const result *p = find_result(b, peer);
            if (!p && square) {
                snprintf(peer, sizeof peer, "%s/peer-cublas-bf16/m%d", square, ms[i]);
                p = find_result(b, peer);
            }
            printf(" %10.2f", p ? p->median_us : NAN);
        }
        const int same = t && best_plan && strcmp(t->plan, best_plan) == 0;
        printf(" %10.3f  %s\n", t ? (same ? 1.0 : t->median_us / best) : NAN, t ? t->plan : "-");
    }
}

/* --plan: one line per forced plan and row of the shape, in the order run. */
void print_forced(const bench *b, const char *shape)
{
    printf("\n%s (%s), plans forced: copy bandwidth %.0f GB/s\n", shape,
           vg_family_name(b->o.family), b->copy_gbs);
    printf("%-10s %6s %10s %8s", "path", "tokens", "us", "bw_frac");
    if (b->o.cuda)
        printf(" %9s", "ceil_frac");
    printf(" %11s  %s\n", "max_relrms", "plan");
    const size_t len = strlen(shape);
    for (size_t i = 0; i < b->nres; i++) {
        const result *r = &b->res[i];
        if (strncmp(r->name, shape, len) || r->name[len] != '/' || !strstr(r->name, "/plan="))
            continue;
        /* tokens is the mean per group on a skewed row: its path says so */
        printf("%-10s %6d %10.2f %8.3f", strstr(r->name, "/moe-skewed/") ? "moe-skewed" : r->path,
               r->tokens, r->median_us, r->bw_frac);
        if (b->o.cuda)
            printf(" %9.3f", r->ceil_frac);
        printf(" %11.2e  %s\n", r->rel_rms, r->plan);
    }
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

int bench_write_json(bench *b)
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
