/* voltgate plans: the plan table of each backend, one line per plan. */
#include <stdio.h>
#include <string.h>

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

int cmd_plans(int argc, char **argv)
{
    const char *backend = "all";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) {
            backend = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: voltgate plans [--backend cpu|cuda|all]\n"
                   "Lists every kernel plan: backend, id, kernel path, tile, stages, split-K,\n"
                   "the largest rows it takes (0 = any) and the families it serves.\n");
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
