/* voltgate plans: the plan table of each backend, one line per plan; with
 * --rule, the plan the CUDA fixed rule (tuning off) picks for an arch that
 * need not be present: what a V100 runs for a shape, asked on any machine. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_golden.h" /* the option parsers tools/ shares */
#include "kernels.h"
#include "tools.h"

static void print_table(const char *backend, size_t count, const vg_plan *(*at)(size_t))
{
    for (size_t i = 0; i < count; i++) {
        const vg_plan *p = at(i);
        char fams[64] = "";
        for (int f = 0; f < VG_FAMILY_COUNT; f++)
            if (p->families & VG_FAMILY_BIT(f)) {
                if (fams[0])
                    strcat(fams, ",");
                strcat(fams, vg_family_name((vg_family)f));
            }
        printf("%-7s %-40s %-8s m%-4d n%-4d k%-4d stages=%d split_k=%-2d max_rows=%-5d %s\n",
               backend, p->id, vg_path_name(p->path), p->tile_m, p->tile_n, p->tile_k,
               p->stages, p->split_k, p->max_rows, fams);
    }
}

/* An arch's largest opt-in shared memory per block, as the CUDA
 * programming guide's table of compute capabilities gives it; 0: not one
 * the rule knows. */
static int arch_smem_limit(int sm)
{
    switch (sm) {
    case 70: return 96 * 1024;
    case 75: return 64 * 1024;
    case 80: return 163 * 1024;
    case 86: case 89: return 99 * 1024;
    case 90: return 227 * 1024;
    default: return 0;
    }
}

static int rule_usage(void)
{
    printf("usage: voltgate plans --rule [--sm 70] [--family NAME|all] [--path dense|grouped|loop|moe]\n"
           "                      [--n N] [--k K] [--rows LIST] [--no-cublas]\n"
           "The plan the CUDA fixed rule (the heuristic: tuning off, nothing measured)\n"
           "picks for each rows value, on an arch given by --sm (70 = V100, the default;\n"
           "75, 80, 86, 89, 90), whether or not such a GPU is here: its shared memory per\n"
           "block is the arch's; the dequantize + cuBLAS kind is taken as offered (from %d\n"
           "rows on SM70/75, %d on SM80+) unless --no-cublas.  One line per family and\n"
           "rows: sm, family, path, n, k, rows, plan id, kind.\n"
           "  --family   a family or all (default all)\n"
           "  --path     default dense; rows are per group on the others, every group\n"
           "             at those rows (an uneven moe routing may get another plan at\n"
           "             17-64 rows, on SM80+ 17-128: kernels/cuda/KERNELS.md D43, D44)\n"
           "  --n, --k   default 4096, 4096 (n per group)\n"
           "  --rows     default 1,8,16,17,32,33,64,65,128,129,255,256,512,4096\n",
           VG_CUDA_DQBLAS_ROWS_SM70, VG_CUDA_DQBLAS_ROWS_SM80);
    return VG_EXIT_OK;
}

static int parse_int_arg(const char *what, const char *v, int32_t lo, int32_t hi, int32_t *out)
{
    if (golden_cli_parse_i32(v, lo, hi, out) != 0) {
        fprintf(stderr, "voltgate plans: bad %s '%s' (an integer %d..%d)\n", what, v, (int)lo, (int)hi);
        return -1;
    }
    return 0;
}

static int cmd_rule(int argc, char **argv)
{
    int32_t sm = 70, n = 4096, k = 4096;
    int fam_all = 1, no_cublas = 0;
    vg_family fam = VG_FAMILY_FP8;
    vg_path path = VG_PATH_DENSE;
    static const int32_t default_rows[] = {1, 8, 16, 17, 32, 33, 64, 65, 128, 129, 255, 256, 512, 4096};
    const int32_t *rows = default_rows;
    int32_t *given_rows = NULL, nrows = (int32_t)(sizeof default_rows / sizeof default_rows[0]);
    int rc = VG_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int takes = strcmp(a, "--sm") == 0 || strcmp(a, "--family") == 0 ||
                    strcmp(a, "--path") == 0 || strcmp(a, "--n") == 0 ||
                    strcmp(a, "--k") == 0 || strcmp(a, "--rows") == 0;
        if (takes && !v) {
            fprintf(stderr, "voltgate plans: %s needs a value (try --rule --help)\n", a);
            goto out;
        }
        if (strcmp(a, "--rule") == 0) {
            continue;
        } else if (strcmp(a, "--help") == 0) {
            rc = rule_usage();
            goto out;
        } else if (strcmp(a, "--no-cublas") == 0) {
            no_cublas = 1;
        } else if (strcmp(a, "--sm") == 0) {
            if (parse_int_arg("--sm", v, 10, 200, &sm) != 0)
                goto out;
        } else if (strcmp(a, "--n") == 0) {
            if (parse_int_arg("--n", v, 1, 1 << 20, &n) != 0)
                goto out;
        } else if (strcmp(a, "--k") == 0) {
            if (parse_int_arg("--k", v, 1, 1 << 20, &k) != 0)
                goto out;
        } else if (strcmp(a, "--family") == 0) {
            fam_all = strcmp(v, "all") == 0;
            if (!fam_all && vg_family_parse(v, &fam) != VG_OK) {
                fprintf(stderr, "voltgate plans: %s\n", vg_last_error());
                goto out;
            }
        } else if (strcmp(a, "--path") == 0) {
            if (vg_path_parse(v, &path) != VG_OK) {
                fprintf(stderr, "voltgate plans: %s\n", vg_last_error());
                goto out;
            }
        } else if (strcmp(a, "--rows") == 0) {
            free(given_rows);
            given_rows = NULL;
            if (golden_cli_parse_list(v, 1, 1 << 20, &given_rows, &nrows) != 0) {
                fprintf(stderr, "voltgate plans: bad --rows list '%s' (integers 1..%d, comma-separated)\n",
                        v, 1 << 20);
                goto out;
            }
            rows = given_rows;
        } else {
            fprintf(stderr, "voltgate plans: unknown argument '%s' (try --rule --help)\n", a);
            goto out;
        }
        if (takes)
            i++;
    }
    const int smem = arch_smem_limit(sm);
    if (smem == 0) {
        fprintf(stderr, "voltgate plans: --sm %d is not an arch the rule knows (70, 75, 80, 86, 89, "
                        "90)\n", (int)sm);
        goto out;
    }
    /* the shapes golden gen and replay take: a plan for a weight the family
     * cannot hold would answer a question no call asks */
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        vg_weight_layout layout;
        if ((fam_all || f == (int)fam) && vg_weight_layout_of((vg_family)f, n, k, &layout) != VG_OK) {
            fprintf(stderr, "voltgate plans: %s\n", vg_last_error());
            goto out;
        }
    }
    if (vg_cuda_plan_count() == 0) {
        fprintf(stderr, "voltgate plans: built without CUDA: no CUDA rule to ask\n");
        goto out;
    }
    const int major = sm / 10;
    const int dq_rows = no_cublas ? 0 : major >= 8 ? VG_CUDA_DQBLAS_ROWS_SM80 : VG_CUDA_DQBLAS_ROWS_SM70;
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        if (!fam_all && f != (int)fam)
            continue;
        for (int r = 0; r < nrows; r++) {
            const vg_plan *p = vg_cuda_heuristic_for((vg_family)f, path, rows[r], n, k, smem,
                                                     dq_rows, major, NULL);
            printf("sm%d %-6s %-8s n%-6d k%-6d rows %-6d %-40s %s\n", (int)sm,
                   vg_family_name((vg_family)f), vg_path_name(path), (int)n, (int)k, (int)rows[r],
                   p ? p->id : "(none)", p ? vg_plan_kind_name(p->kind) : "-");
        }
    }
    rc = VG_EXIT_OK;
out:
    free(given_rows);
    return rc;
}

int cmd_plans(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--rule") == 0)
            return cmd_rule(argc, argv);
    const char *backend = "all";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0) {
            if (i + 1 == argc) {
                fprintf(stderr, "voltgate plans: --backend needs a value (cpu, cuda or all)\n");
                return VG_EXIT_USAGE;
            }
            backend = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: voltgate plans [--backend cpu|cuda|all]\n"
                   "       voltgate plans --rule [...]   (see voltgate plans --rule --help)\n"
                   "Lists every kernel plan: backend, id, kernel path, tile, stages, split-K,\n"
                   "the largest rows it takes (0 = any) and the families it serves.  stages:\n"
                   "pipeline stages (mid, prefill), steps in flight per warp (decode), groups\n"
                   "per cuBLAS call (dqcublas: 8 for .g8, one grouped GEMM).  --rule:\n"
                   "the plan the CUDA fixed rule picks per shape on a given arch (a V100 by\n"
                   "default), whether or not that GPU is here.\n");
            return VG_EXIT_OK;
        } else {
            fprintf(stderr, "voltgate plans: unknown argument '%s' (try --help)\n", argv[i]);
            return VG_EXIT_USAGE;
        }
    }
    int all = strcmp(backend, "all") == 0;
    if (!all && strcmp(backend, "cpu") && strcmp(backend, "cuda")) {
        fprintf(stderr, "voltgate plans: unknown backend '%s' (cpu, cuda or all)\n", backend);
        return VG_EXIT_USAGE;
    }
    printf("%-7s %-40s %-8s %-17s %-8s %-10s %-14s %s\n", "backend", "id", "path", "tile (m n k)",
           "stages", "split_k", "max_rows", "families");
    if (all || strcmp(backend, "cpu") == 0)
        print_table("cpu", vg_cpu_plan_count(), vg_cpu_plan_at);
    if (all || strcmp(backend, "cuda") == 0)
        print_table("cuda", vg_cuda_plan_count(), vg_cuda_plan_at);
    return VG_EXIT_OK;
}
