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
 * through the cpu runtime, host clock, host memcpy bandwidth; each row is
 * named after the shape it runs (g4n256k512, n512k512, prefill256), not
 * after the CUDA shape it stands in for.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "bench.h"
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
/* ---- main ---------------------------------------------------------------------------------- */

/* The M values of a and b in ascending order, each once, without `skip`
 * (0: none); returns how many, at most MAX_LIST (the values past it are
 * dropped, each named on stderr). */
static int merge_ms(int *out, const int *a, int na, const int *b, int nb, int skip)
{
    int n = 0;
    for (int pass = 0; pass < 2; pass++) {
        const int *v = pass ? b : a;
        for (int i = 0, nv = pass ? nb : na; i < nv; i++) {
            int seen = v[i] == skip;
            for (int j = 0; j < n && !seen; j++)
                seen = out[j] == v[i];
            if (!seen && n < MAX_LIST)
                out[n++] = v[i];
            else if (!seen)
                fprintf(stderr, "bench: M=%d left out: at most %d M values per shape\n", v[i], MAX_LIST);
        }
    }
    for (int i = 1; i < n; i++) /* insertion sort: a few values */
        for (int j = i; j > 0 && out[j - 1] > out[j]; j--) {
            int t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: voltgate bench [options]\n"
            "  --backend auto|cuda|cpu  (default auto: cuda when a device is present, else\n"
            "                         cpu; cpu runs small shapes, host clock)\n"
            "  --shape LIST           wo_a,dense,prefill,crossover (default wo_a)\n"
            "                         wo_a: 8 groups x N=1024 x K=4096; dense: N=K=4096 and\n"
            "                         N=4096,K=14336 at M = each --tokens value (with --plan,\n"
            "                         e.g. one mid-size plan under a profiler); prefill: M=N=K=4096;\n"
            "                         crossover: the dense shapes at M = 1, 16, 32, 64, 128,\n"
            "                         256, 512, 1024, 4096, 8192 (its M=N=K=4096 row is\n"
            "                         prefill4096's), where plan kinds and the cuBLAS peer\n"
            "                         trade places; cpu: n512k512 at M = 1 to 256.  At\n"
            "                         each of these M, beside the tune rows and the peer,\n"
            "                         one row per plan kind (decode, tiled, dequant_blas)\n"
            "                         the tuner offers there: the fastest plan of that\n"
            "                         kind, .../mM/kind=KIND (each plan timed as --plan\n"
            "                         times it, the winner once more for the row); its\n"
            "                         table's tuned/best is 1.000 where the tuned choice\n"
            "                         is the fastest plan itself (one plan timed twice)\n"
            "                         Row names start with the shape run: wo_a, n4096k4096,\n"
            "                         n4096k14336, prefill4096; on cpu (small shapes)\n"
            "                         g4n256k512 (wo_a's stand-in: 4 groups x N=256 x\n"
            "                         K=512; its rows were named wo_a/... before issue 30),\n"
            "                         n512k512, prefill256 (M=N=K=256)\n"
            "  --tokens LIST          tokens per group / dense M (default 1,2,4,6,8,16)\n"
            "  --paths LIST           the grouped shape's paths: loop, grouped, moe (default\n"
            "                         loop,grouped).  moe takes the same offsets (t tokens\n"
            "                         per group) through the moe path; above 16 tokens\n"
            "                         per group the grouped path runs as moe too\n"
            "  --routing LIST         even, skewed: the moe path's tokens per group (default\n"
            "                         even: t in every group).  skewed: the same G x t\n"
            "                         tokens spread as 1/(g+1) over the groups, as a\n"
            "                         router's load falls off over its experts (wo_a's\n"
            "                         8 groups: about 2.9t in the first, 0.4t in the\n"
            "                         last), rows .../moe-skewed/..., each group's rows\n"
            "                         in the JSON's group_rows (with --plan, the plans\n"
            "                         that take the largest group's rows), beside the\n"
            "                         even moe rows when both are named\n"
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
    o->route_even = 1;
    o->tunes[0] = 0;
    o->tunes[1] = 1;
    o->ntunes = 2;
    o->family = VG_FAMILY_FP8;
    o->samples = -1;
    o->shard_n = 1;
    o->peers = 1;
    /* The rows measure ~2e-4 (FP16 output rounding); a wrong kernel is far above. */
    o->max_rel_rms = 1e-2;
    int quick = 0, tokens_given = 0, paths_given = 0, routing_given = 0, tune_given = 0;
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
                else if (len == 9 && !strncmp(s, "crossover", len))
                    o->shapes |= SHAPE_CROSSOVER;
                else {
                    fprintf(stderr, "voltgate bench: --shape '%s': unknown or empty shape '%.*s' "
                                    "(wo_a, dense, prefill, crossover)\n", v, (int)len, s);
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
            paths_given = 1;
            o->loop = o->grouped = o->moe = 0;
            char buf[128];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
                if (!strcmp(s, "loop"))
                    o->loop = 1;
                else if (!strcmp(s, "grouped"))
                    o->grouped = 1;
                else if (!strcmp(s, "moe"))
                    o->moe = 1;
                else {
                    fprintf(stderr, "voltgate bench: unknown path '%s' (loop, grouped, moe)\n", s);
                    return -1;
                }
        } else if (!strcmp(a, "--routing")) {
            NEED();
            routing_given = 1;
            o->route_even = o->route_skewed = 0;
            char buf[64];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *s = strtok(buf, ","); s; s = strtok(NULL, ","))
                if (!strcmp(s, "even"))
                    o->route_even = 1;
                else if (!strcmp(s, "skewed"))
                    o->route_skewed = 1;
                else {
                    fprintf(stderr, "voltgate bench: --routing takes even and/or skewed, not '%s'\n", s);
                    return -1;
                }
            if (!o->route_even && !o->route_skewed) {
                fprintf(stderr, "voltgate bench: --routing names no routing (even, skewed)\n");
                return -1;
            }
        } else if (!strcmp(a, "--tune")) {
            NEED();
            tune_given = 1;
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
            if (!o->ntunes) {
                fprintf(stderr, "voltgate bench: --tune names neither off nor on\n");
                return -1;
            }
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
    if (!o->loop && !o->grouped && !o->moe) {
        fprintf(stderr, "voltgate bench: --paths names no path (loop, grouped, moe)\n");
        return -1;
    }
    if (o->route_skewed && !o->moe) {
        fprintf(stderr, "voltgate bench: --routing skewed times the moe path: add moe to --paths\n");
        return -1;
    }
    /* A flag that the shapes asked for never read would leave a run that
     * looks like it measured what was asked and did not. */
    if ((paths_given || routing_given) && !(o->shapes & SHAPE_WO_A)) {
        fprintf(stderr, "voltgate bench: %s chooses the wo_a shape's paths: add wo_a to --shape\n",
                paths_given ? "--paths" : "--routing");
        return -1;
    }
    if (tokens_given && !(o->shapes & (SHAPE_WO_A | SHAPE_DENSE))) {
        fprintf(stderr, "voltgate bench: --tokens sets the wo_a and dense shapes' rows; prefill and "
                        "crossover have their own M: add wo_a or dense to --shape\n");
        return -1;
    }
    if (tune_given && o->plans) {
        fprintf(stderr, "voltgate bench: --plan times the plans named past the decision, so --tune "
                        "does not apply: give one of them\n");
        return -1;
    }
    return 0;
}

int make_configs(bench *b)
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

    /* The grouped shape: wo_a on CUDA; on the CPU a small one, named after
     * its shape as the CPU dense rows are: g4n256k512.  (Until issue 30 the
     * CPU rows were named wo_a too, and histories hold them under that name:
     * reports/report_runs.py LEGACY_ROW_PREFIXES maps it to this one.) */
    int wG = 8, wN = 1024, wK = 4096;
    char wname[48] = "wo_a";
    if (!o->cuda) {
        wG = 4;
        wN = 256;
        wK = 512;
        snprintf(wname, sizeof wname, "g%dn%dk%d", wG, wN, wK);
    }
    if (o->shapes & SHAPE_WO_A)
        bench_grouped(&b, h, wname, wG, wN, wK);
    int ms[MAX_LIST], nms = 0;
    for (int i = 0; i < o->ntokens; i++)
        ms[nms++] = o->tokens[i];
    /* Each dense shape runs the union of dense's M (the --tokens values) and
     * crossover's, so asking for both runs no row twice; the crossover's
     * square row (M=N=K=4096) is prefill4096's, under that name. */
    static const int cross_cuda[] = {1, 16, 32, 64, 128, 256, 512, 1024, 4096, 8192};
    static const int cross_cpu[] = {1, 16, 32, 64, 128, 256};
    const int *cross = o->cuda ? cross_cuda : cross_cpu;
    const int ncross = !(o->shapes & SHAPE_CROSSOVER) ? 0
                       : o->cuda ? (int)(sizeof cross_cuda / sizeof *cross_cuda)
                                 : (int)(sizeof cross_cpu / sizeof *cross_cpu);
    const int ndense = o->shapes & SHAPE_DENSE ? nms : 0;
    /* M=N=K=4096 runs as prefill4096's row where that shape runs */
    const int prefill = (o->shapes & SHAPE_PREFILL) || (o->cuda && ncross > 0);
    int sq[MAX_LIST], nsq = merge_ms(sq, ms, ndense, cross, ncross, o->cuda && prefill ? 4096 : 0);
    int tall[MAX_LIST], ntall = merge_ms(tall, ms, ndense, cross, ncross, 0);
    /* At the crossover's M, each plan kind's fastest plan gets a row too. */
    if (o->cuda) {
        bench_dense(&b, h, "n4096k4096", 4096, 4096, sq, nsq, cross, ncross);
        bench_dense(&b, h, "n4096k14336", 4096, 14336, tall, ntall, cross, ncross);
    } else {
        bench_dense(&b, h, "n512k512", 512, 512, sq, nsq, cross, ncross);
    }
    int pm[1] = {o->cuda ? 4096 : 256};
    if (prefill)
        bench_dense(&b, h, o->cuda ? "prefill4096" : "prefill256", o->cuda ? 4096 : 256,
                    o->cuda ? 4096 : 256, pm, 1, o->cuda ? cross : NULL, o->cuda ? ncross : 0);

    tool_progress_end(&b.progress);
    if (o->plans) {
        if (o->shapes & SHAPE_WO_A)
            print_forced(&b, wname);
        if (nsq)
            print_forced(&b, o->cuda ? "n4096k4096" : "n512k512");
        if (o->cuda && ntall)
            print_forced(&b, "n4096k14336");
        if (prefill)
            print_forced(&b, o->cuda ? "prefill4096" : "prefill256");
    } else {
        if (o->shapes & SHAPE_WO_A)
            print_tables(&b, wname, wG, wN, wK);
        if (nsq)
            print_dense(&b, o->cuda ? "n4096k4096" : "n512k512", sq, nsq);
        if (o->cuda && ntall)
            print_dense(&b, "n4096k14336", tall, ntall);
        if (prefill)
            print_dense(&b, o->cuda ? "prefill4096" : "prefill256", pm, 1);
        if (ncross && o->cuda) {
            print_kinds(&b, "n4096k4096", "prefill4096", cross, ncross);
            print_kinds(&b, "n4096k14336", NULL, cross, ncross);
        } else if (ncross) {
            print_kinds(&b, "n512k512", NULL, cross, ncross);
        }
    }

    int rc = b.failed ? VG_EXIT_FAIL : VG_EXIT_OK;
    if (o->json && bench_write_json(&b))
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
