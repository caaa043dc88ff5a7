/*
 * voltgate golden import: a golden case from a real checkpoint's tensors
 * (vg_golden_import, golden/golden_import.c).  A file of its own: its
 * options and checks are import's alone (cmd_golden.c has what the
 * subcommands share).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd_golden.h"
#include "fileio.h"

static void import_help(FILE *out)
{
    fprintf(out,
            "usage: voltgate golden import (--safetensors FILE | --checkpoint DIR)\n"
            "                              (--weight NAME | --experts PATTERN) [--experts-range A:B]\n"
            "                              [--format F] [--family F] [--rows all|gate|up]\n"
            "                              [--scale NAME] [--path P] [--tokens T | --routing C,C,...]\n"
            "                              [--seed S] -o FILE\n\n"
            "Builds a golden case from a real checkpoint, taken as stored: the codes, scales\n"
            "and zeros of the file become the golden weight bit for bit (repacked into our\n"
            "layout) and the reference uses the source format's own dequantization rule\n"
            "(golden/SCHEMA.md, \"Imported checkpoints\").  The format is detected from the\n"
            "tensors present and the folder's config.json / hf_quant_config.json /\n"
            "quantize_config.json, printed, and stored as the file's provenance.\n"
            "  --safetensors  one safetensors file\n"
            "  --checkpoint   a model folder: model.safetensors.index.json (only the shards\n"
            "                 a tensor needs are opened) or one model.safetensors\n"
            "  --weight       a tensor ([N][K], or fused [E][N][K]) or a module prefix\n"
            "                 (model.layers.0.mlp.down_proj: its .qweight/.scales/... )\n"
            "  --experts      per-expert weights, {e} for the expert index, gathered into\n"
            "                 groups (e.g. 'model.layers.3.mlp.experts.{e}.down_proj')\n"
            "  --experts-range A:B  experts A..B-1 (also of a fused 3-D weight)\n"
            "  --format       force one of: %s\n"
            "  --family       quantize a BF16/F16/F32 weight to this family (without it such a\n"
            "                 weight imports as fp16, when every value is an FP16)\n"
            "  --rows         fused gate_up (gpt-oss): all rows, gate (even) or up (odd)\n"
            "  --scale        F8_E4M3 weights: the scale tensor (default NAME_scale_inv;\n"
            "                 with --experts a pattern with {e}, as --experts)\n"
            "  --path         dense (default), grouped, loop or moe\n"
            "  --tokens       tokens per group (dense: M), default 1\n"
            "  --routing      moe: tokens of each expert (a routing histogram)\n"
            "Activations are synthetic (SCHEMA.md).  Exit 2 on any bad file, nothing written.\n",
            vg_golden_import_format_names());
}

int cmd_golden_import(int argc, char **argv)
{
    vg_golden_import_args a;
    memset(&a, 0, sizeof a);
    a.tokens = 1;
    a.seed = 1;
    a.path = VG_PATH_DENSE;
    int have_path = 0;
    int32_t *routing = NULL;
    const char *out = NULL;
    int rc = VG_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            import_help(stdout);
            rc = VG_EXIT_OK;
            goto done;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        if (!v) {
            rc = golden_cli_usage_error("import", "option %s needs a value", o);
            goto done;
        }
        if (!strcmp(o, "--safetensors"))
            a.safetensors = v;
        else if (!strcmp(o, "--checkpoint"))
            a.checkpoint = v;
        else if (!strcmp(o, "--weight"))
            a.weight = v;
        else if (!strcmp(o, "--experts"))
            a.experts = v;
        else if (!strcmp(o, "--experts-range")) {
            char lo[32], hi[32];
            const char *colon = strchr(v, ':');
            if (!colon || (size_t)(colon - v) >= sizeof lo || strlen(colon + 1) >= sizeof hi) {
                rc = golden_cli_usage_error("import", "bad --experts-range '%s' (A:B)", v);
                goto done;
            }
            snprintf(lo, sizeof lo, "%.*s", (int)(colon - v), v);
            snprintf(hi, sizeof hi, "%s", colon + 1);
            if (golden_cli_parse_i32(lo, 0, VG_GOLDEN_MAX_DIM, &a.expert_begin) != 0 ||
                golden_cli_parse_i32(hi, 1, VG_GOLDEN_MAX_DIM, &a.expert_end) != 0 ||
                a.expert_end <= a.expert_begin) {
                rc = golden_cli_usage_error("import", "bad --experts-range '%s' (A:B with A < B)",
                                            v);
                goto done;
            }
            a.have_expert_range = 1;
        } else if (!strcmp(o, "--format"))
            a.format = v;
        else if (!strcmp(o, "--rows"))
            a.rows = v;
        else if (!strcmp(o, "--scale"))
            a.scale = v;
        else if (!strcmp(o, "--family")) {
            if (vg_family_parse(v, &a.family) != VG_OK) {
                fprintf(stderr, "voltgate golden import: %s\n", vg_last_error());
                goto done;
            }
            a.have_family = 1;
        } else if (!strcmp(o, "--path")) {
            if (vg_path_parse(v, &a.path) != VG_OK) {
                fprintf(stderr, "voltgate golden import: %s\n", vg_last_error());
                goto done;
            }
            have_path = 1;
        } else if (!strcmp(o, "--tokens")) {
            if (golden_cli_parse_i32(v, 1, VG_GOLDEN_MAX_DIM, &a.tokens) != 0) {
                rc = golden_cli_usage_error("import", "bad --tokens '%s'", v);
                goto done;
            }
        } else if (!strcmp(o, "--routing")) {
            free(routing);
            routing = NULL;
            if (golden_cli_parse_list(v, 0, VG_GOLDEN_MAX_DIM, &routing, &a.routing_count) != 0) {
                rc = golden_cli_usage_error("import", "bad --routing '%s'", v);
                goto done;
            }
            a.routing = routing;
        } else if (!strcmp(o, "--seed")) {
            if (golden_cli_parse_u64(v, &a.seed) != 0) {
                rc = golden_cli_usage_error("import", "--seed '%s': a decimal integer from 0 to 2^64 - 1", v);
                goto done;
            }
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output"))
            out = v;
        else {
            rc = golden_cli_usage_error("import", "unknown option '%s'", o);
            goto done;
        }
    }
    if (!a.safetensors == !a.checkpoint || !a.weight == !a.experts || !out) {
        rc = golden_cli_usage_error("import", "%s", "one of --safetensors/--checkpoint, one of "
                                    "--weight/--experts, and -o are required");
        goto done;
    }
    if (a.routing && !have_path)
        a.path = VG_PATH_MOE; /* a routing histogram is what a moe case is */
    if (vg_check_output_path("-o", out) != VG_OK) {
        rc = golden_cli_usage_error("import", "%s", vg_last_error());
        goto done;
    }
    /* Writing over the checkpoint being read would destroy it: the file,
     * or any file of the folder (a shard, its index, a link into a cache). */
    if (a.safetensors && vg_same_file(a.safetensors, out)) {
        rc = golden_cli_usage_error("import", "-o %s is the --safetensors input file", out);
        goto done;
    }
    if (a.checkpoint && vg_file_in_folder(out, a.checkpoint)) {
        char why[8192];
        snprintf(why, sizeof why, "-o %s would replace a file of the --checkpoint folder %s", out, a.checkpoint);
        rc = golden_cli_usage_error("import", "%s", why);
        goto done;
    }
    vg_golden_file f;
    vg_status st = vg_golden_import(&a, &f);
    if (st == VG_OK) {
        printf("imported: %s\n", f.provenance ? f.provenance : f.source);
        st = vg_golden_write(out, &f);
        vg_golden_free(&f);
    }
    if (st != VG_OK) {
        fprintf(stderr, "voltgate golden import: %s\n", vg_last_error());
        goto done;
    }
    printf("wrote %s\n", out);
    rc = VG_EXIT_OK;
done:
    free(routing);
    return rc;
}
