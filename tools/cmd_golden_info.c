/*
 * voltgate golden info: reads and validates golden files and lists their
 * weight and cases.  A file of its own, as every subcommand is
 * (cmd_golden.c has what they share).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_golden.h"

int cmd_golden_info(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: voltgate golden info PATH...\n\n"
               "Reads and validates golden files (PATH: files or folders of *.h5, as verify\n"
               "takes them) and prints their weight and cases.\n");
        return argc < 2 ? VG_EXIT_USAGE : VG_EXIT_OK;
    }
    int rc = VG_EXIT_OK;
    path_list files = {0};
    for (int i = 1; i < argc; i++)
        if (golden_cli_expand("info", argv[i], &files) != 0)
            rc = VG_EXIT_USAGE;
    qsort(files.items, files.count, sizeof(char *), golden_cli_cmp_str);
    for (size_t i = 0; i < files.count; i++) {
        vg_golden_file f;
        if (golden_cli_read("info", files.items[i], &f) != 0) {
            rc = VG_EXIT_USAGE;
            continue;
        }
        printf("%s: %s %s N=%d K=%d groups=%d seed=%llu weights=%s source=%s generator=%s\n",
               files.items[i], vg_family_name(f.family), vg_path_name(f.path), (int)f.n, (int)f.k,
               (int)f.groups, (unsigned long long)f.seed, f.weights_stored ? "stored" : "recipe",
               f.source, f.generator);
        if (f.provenance)
            printf("  provenance: %s\n", f.provenance);
        for (int32_t c = 0; c < f.ncases; c++) {
            const vg_golden_case *k = &f.cases[c];
            printf("  %-6s M=%-4d tokens=", k->name, (int)k->m);
            for (int32_t g = 0; g < f.groups && g < 16; g++)
                printf("%s%d", g ? "," : "", (int)k->tokens[g]);
            printf("%s y=%s tol_rel_rms=%.2g tol_max_abs=%.3g ||y_ref||=%.6g\n",
                   f.groups > 16 ? ",..." : "", k->y_dtype == VG_DTYPE_F16 ? "f16" : "f32",
                   k->tol_rel_rms, k->tol_max_abs, k->y_ref_norm);
        }
        vg_golden_free(&f);
    }
    golden_cli_list_free(&files);
    return rc;
}
