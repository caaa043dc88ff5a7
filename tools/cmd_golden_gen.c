/*
 * voltgate golden gen: one golden case file from a seed, family, path and
 * shape, or the committed set (--set ci).  A file of its own: its options
 * and checks are gen's alone (cmd_golden.c has what the subcommands share).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_golden.h"
#include "fileio.h"

static void gen_help(FILE *out)
{
    fprintf(out,
            "usage: voltgate golden gen --family F --path P --n N --k K [--groups G]\n"
            "                           [--m M[,M...]] [--tokens T | --tokens-list T,T,...]\n"
            "                           [--routing C,C,... ...] [--seed S] [--y-dtype f32|f16]\n"
            "                           [--recipe] -o FILE\n"
            "       voltgate golden gen --set ci [--only FILE.h5] -o DIR\n\n"
            "Writes one golden case file (golden/SCHEMA.md): one weight, one case per M\n"
            "(dense), per tokens-per-group value (grouped, loop) or per routing (moe).\n"
            "  --family     fp16, awq, fp8, mxfp4 or nvfp4\n"
            "  --path       dense, grouped, loop or moe\n"
            "  --groups     groups (experts) of grouped/loop/moe (default 4; moe 8)\n"
            "  --m          dense: rows, one case each (default 1)\n"
            "  --tokens     grouped/loop: tokens per group; moe: mean tokens per expert of\n"
            "               a routing drawn from the seed (uneven, one expert empty)\n"
            "  --tokens-list  grouped/loop: one case per value\n"
            "  --routing    moe: the token count of every expert, one case per option\n"
            "  --seed       default 1\n"
            "  --y-dtype    output type the case is verified with (default f32)\n"
            "  --recipe     do not store the weight: regenerate it from the seed on read\n"
            "  --set ci     the committed set, into DIR (--only: just that file of it)\n");
}

int cmd_golden_gen(int argc, char **argv)
{
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.seed = 1;
    int have_family = 0, have_path = 0;
    const char *out = NULL, *set = NULL, *only = NULL;
    int32_t *m_list = NULL, *tokens = NULL, *routings = NULL, one = 1;
    int32_t nroutings = 0, routing_len = 0, rc = VG_EXIT_USAGE;
    /* options that shape one file: --set makes the committed set and takes
     * none of them (the first one given is named) */
    const char *shape_opt = NULL;
    int groups_given = 0, tokens_list_given = 0;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            gen_help(stdout);
            rc = VG_EXIT_OK;
            goto done;
        }
        if (!strcmp(o, "--recipe")) {
            a.recipe_weights = 1;
            continue;
        }
        if (!v) {
            rc = golden_cli_usage_error("gen", "option %s needs a value", o);
            goto done;
        }
        i++;
        if (!shape_opt && strcmp(o, "-o") && strcmp(o, "--output") && strcmp(o, "--set") &&
            strcmp(o, "--only"))
            shape_opt = o;
        if (!strcmp(o, "--family")) {
            if (vg_family_parse(v, &a.family) != VG_OK) {
                fprintf(stderr, "voltgate golden gen: %s\n", vg_last_error());
                goto done;
            }
            have_family = 1;
        } else if (!strcmp(o, "--path")) {
            if (vg_path_parse(v, &a.path) != VG_OK) {
                fprintf(stderr, "voltgate golden gen: %s\n", vg_last_error());
                goto done;
            }
            have_path = 1;
        } else if (!strcmp(o, "--n") || !strcmp(o, "--k") || !strcmp(o, "--groups")) {
            int32_t *dst = o[2] == 'n' ? &a.n : o[2] == 'k' ? &a.k : &a.groups;
            groups_given |= o[2] == 'g';
            if (golden_cli_parse_i32(v, 1, VG_GOLDEN_MAX_DIM, dst) != 0) {
                char why[160];
                snprintf(why, sizeof why, "%s must be an integer from 1 to %d, not '%.40s'", o,
                         VG_GOLDEN_MAX_DIM, v);
                rc = golden_cli_usage_error("gen", "%s", why);
                goto done;
            }
        } else if (!strcmp(o, "--m")) {
            free(m_list);
            m_list = NULL;
            if (golden_cli_parse_list(v, 1, VG_GOLDEN_MAX_DIM, &m_list, &a.m_count) != 0) {
                char why[160];
                snprintf(why, sizeof why, "--m must be row counts from 1 to %d, not '%.40s'",
                         VG_GOLDEN_MAX_DIM, v);
                rc = golden_cli_usage_error("gen", "%s", why);
                goto done;
            }
        } else if (!strcmp(o, "--tokens") || !strcmp(o, "--tokens-list")) {
            free(tokens);
            tokens = NULL;
            tokens_list_given = !strcmp(o, "--tokens-list");
            if (golden_cli_parse_list(v, 0, VG_GOLDEN_MAX_DIM, &tokens, &a.tokens_count) != 0 ||
                (!strcmp(o, "--tokens") && a.tokens_count != 1)) {
                char why[160];
                snprintf(why, sizeof why, "%s must be %s from 0 to %d, not '%.40s'", o,
                         !strcmp(o, "--tokens") ? "one token count" : "token counts",
                         VG_GOLDEN_MAX_DIM, v);
                rc = golden_cli_usage_error("gen", "%s", why);
                goto done;
            }
        } else if (!strcmp(o, "--routing")) {
            int32_t *r = NULL, n = 0;
            if (golden_cli_parse_list(v, 0, VG_GOLDEN_MAX_DIM, &r, &n) != 0) {
                rc = golden_cli_usage_error("gen", "bad --routing '%s'", v);
                goto done;
            }
            if (nroutings && n != routing_len) {
                free(r);
                char why[200];
                snprintf(why, sizeof why, "--routing '%.40s' has %d experts, the first --routing %d",
                         v, (int)n, (int)routing_len);
                rc = golden_cli_usage_error("gen", "%s", why);
                goto done;
            }
            int32_t *grown = realloc(routings, (size_t)(nroutings + 1) * (size_t)n * sizeof(int32_t));
            if (!grown) {
                free(r);
                goto done;
            }
            routings = grown;
            memcpy(routings + (size_t)nroutings * (size_t)n, r, (size_t)n * sizeof(int32_t));
            free(r);
            nroutings++;
            routing_len = n;
        } else if (!strcmp(o, "--seed")) {
            if (golden_cli_parse_u64(v, &a.seed) != 0) {
                rc = golden_cli_usage_error("gen", "--seed '%s': a decimal integer from 0 to 2^64 - 1", v);
                goto done;
            }
        } else if (!strcmp(o, "--y-dtype")) {
            if (!strcmp(v, "f32"))
                a.y_dtype = VG_DTYPE_F32;
            else if (!strcmp(v, "f16"))
                a.y_dtype = VG_DTYPE_F16;
            else {
                rc = golden_cli_usage_error("gen", "bad --y-dtype '%s' (f32 or f16)", v);
                goto done;
            }
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            out = v;
        } else if (!strcmp(o, "--set")) {
            set = v;
        } else if (!strcmp(o, "--only")) {
            only = v;
        } else {
            rc = golden_cli_usage_error("gen", "unknown option '%s'", o);
            goto done;
        }
    }
    if (!out) {
        rc = golden_cli_usage_error("gen", "%s", "-o is required");
        goto done;
    }
    if (set && (shape_opt || a.recipe_weights)) {
        rc = golden_cli_usage_error("gen", "--set makes the committed set as its recipes say; %s "
                                    "does not go with it", shape_opt ? shape_opt : "--recipe");
        goto done;
    }
    if (only && !set) {
        rc = golden_cli_usage_error("gen", "%s", "--only picks a file of --set; give --set ci");
        goto done;
    }
    if (nroutings) {
        /* wherever --groups came, it must be the routing's expert count: the
         * rows of each expert are read from the routing */
        if (groups_given && a.groups != routing_len) {
            char why[120];
            snprintf(why, sizeof why, "--groups %d disagrees with --routing (%d experts)",
                     (int)a.groups, (int)routing_len);
            rc = golden_cli_usage_error("gen", "%s", why);
            goto done;
        }
        a.groups = routing_len;
    }
    if (!set && vg_check_output_path("-o", out) != VG_OK) {
        rc = golden_cli_usage_error("gen", "%s", vg_last_error());
        goto done;
    }
    if (set) {
        vg_status st = vg_golden_generate_set(set, out, only, 1);
        if (st != VG_OK)
            fprintf(stderr, "voltgate golden gen: %s\n", vg_last_error());
        rc = st == VG_OK ? VG_EXIT_OK : VG_EXIT_USAGE;
        goto done;
    }
    if (!have_family || !have_path || !a.n || !a.k) {
        rc = golden_cli_usage_error("gen", "%s", "--family, --path, --n and --k are required");
        goto done;
    }
    if (a.path == VG_PATH_DENSE) {
        if (tokens || routings) {
            rc = golden_cli_usage_error("gen", "%s", "dense takes --m, not --tokens or --routing");
            goto done;
        }
        if (!m_list) {
            a.m_list = &one;
            a.m_count = 1;
        } else {
            a.m_list = m_list;
        }
    } else {
        if (m_list) {
            rc = golden_cli_usage_error("gen", "%s",
                                        "--m is for dense; use --tokens or --tokens-list");
            goto done;
        }
        if (routings && a.path != VG_PATH_MOE) {
            rc = golden_cli_usage_error("gen", "%s", "--routing is for moe");
            goto done;
        }
        if (tokens_list_given && a.path == VG_PATH_MOE) {
            /* moe makes one case of --tokens (a routing drawn from the seed):
             * a list would keep its first value and drop the rest */
            rc = golden_cli_usage_error("gen", "%s", "--tokens-list is for grouped and loop; moe "
                                        "takes --tokens T or a --routing per case");
            goto done;
        }
        if (!tokens && !routings) {
            rc = golden_cli_usage_error("gen", "%s",
                                        "--tokens, --tokens-list or --routing is required");
            goto done;
        }
        a.tokens_list = tokens;
        a.routings = routings;
        a.routing_count = nroutings;
        if (a.path != VG_PATH_MOE)
            for (int32_t i = 0; i < a.tokens_count; i++)
                if (tokens[i] < 1) {
                    rc = golden_cli_usage_error("gen", "%s", "tokens per group must be at least 1");
                    goto done;
                }
    }
    {
        vg_golden_file f;
        vg_status st = vg_golden_generate(&a, &f);
        if (st == VG_OK) {
            st = vg_golden_write(out, &f);
            vg_golden_free(&f);
        }
        if (st != VG_OK) {
            fprintf(stderr, "voltgate golden gen: %s\n", vg_last_error());
            rc = VG_EXIT_USAGE;
        } else {
            printf("wrote %s\n", out);
            rc = VG_EXIT_OK;
        }
    }
done:
    free(m_list);
    free(tokens);
    free(routings);
    return rc;
}
