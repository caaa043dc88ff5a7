/*
 * voltgate golden verify: every case of every golden file through the
 * runtime on each backend asked for, one row per case and plan, a summary
 * line and optionally --json.  A file of its own: the rows, the JSON and
 * the options are verify's alone (cmd_golden.c has what the subcommands
 * share).
 */
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd_golden.h"
#include "fileio.h"
#include "voltgate/runtime.h"

/* --plan ID,ID,...: at most this many ids */
#define VERIFY_MAX_PLAN_IDS 64 /* the usage error below says 64 */

typedef struct verify_out {
    /* --plan's ids (pointers into the option's value) and the rows each
     * produced, so that an id that ran nowhere is named */
    int nplan_ids;
    const char *plan_id[VERIFY_MAX_PLAN_IDS];
    size_t plan_id_len[VERIFY_MAX_PLAN_IDS];
    int plan_id_rows[VERIFY_MAX_PLAN_IDS];
    const char *case_pattern; /* --case: only the rows of matching cases (fnmatch) */
    int case_rows;            /* rows of matching cases, whatever their verdict */
    FILE *json;       /* NULL: no JSON */
    tool_progress progress;   /* on a terminal: files done / total, rows, elapsed */
    int files_done, files_total;
    int json_rows;
    int failed_rows, rows;
    char **fail_lines;
    size_t nfail_lines;
} verify_out;

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(f, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(f, "\\u%04x", ch);
        else
            fputc(ch, f);
    }
    fputc('"', f);
}

static void json_num(FILE *f, double v)
{
    if (isfinite(v))
        fprintf(f, "%.6g", v);
    else
        fprintf(f, "null"); /* JSON has no NaN or infinity */
}

static void on_row(const vg_golden_row *r, void *user)
{
    verify_out *o = user;
    for (int i = 0; i < o->nplan_ids; i++)
        if (strlen(r->plan) == o->plan_id_len[i] && !strncmp(r->plan, o->plan_id[i], o->plan_id_len[i]))
            o->plan_id_rows[i]++;
    if (o->case_pattern && fnmatch(o->case_pattern, r->case_name, 0) != 0)
        return;
    o->case_rows++;
    if (o->progress.on)
        fprintf(stderr, "\r\033[K");  /* the row goes where the progress line was */
    char tol[64];
    snprintf(tol, sizeof tol, "%.1e/%.2g", r->tol_rel_rms, r->tol_max_abs);
    printf("%-28s %-5s %-36s %10.3e %10.3e %-18s %s%s%s\n", r->case_name, r->backend, r->plan,
           r->rel_rms, r->max_abs, tol, r->pass ? "PASS" : "FAIL", r->note[0] ? "  " : "",
           r->note);
    fflush(stdout);
    o->rows++;
    if (!r->pass)
        o->failed_rows++;
    tool_progress_show(&o->progress, 0, "%d/%d files, %d rows (%d failed)", o->files_done,
                  o->files_total, o->rows, o->failed_rows);
    if (o->json) {
        FILE *j = o->json;
        fprintf(j, "%s\n  {\"case\":", o->json_rows++ ? "," : "");
        json_str(j, r->case_name);
        fprintf(j, ",\"file\":");
        json_str(j, r->file);
        fprintf(j, ",\"family\":\"%s\",\"path\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"groups\":%d,"
                   "\"tokens\":%d,\"backend\":",
                vg_family_name(r->family), vg_path_name(r->path), (int)r->m, (int)r->n,
                (int)r->k, (int)r->groups, (int)r->tokens);
        json_str(j, r->backend);
        fprintf(j, ",\"plan\":");
        json_str(j, r->plan);
        fprintf(j, ",\"rel_rms\":");
        json_num(j, r->rel_rms);
        fprintf(j, ",\"max_abs\":");
        json_num(j, r->max_abs);
        fprintf(j, ",\"tol_rel_rms\":");
        json_num(j, r->tol_rel_rms);
        fprintf(j, ",\"tol_max_abs\":");
        json_num(j, r->tol_max_abs);
        fprintf(j, ",\"verdict\":\"%s\"", r->pass ? "PASS" : "FAIL");
        if (r->note[0]) {
            fprintf(j, ",\"note\":");
            json_str(j, r->note);
        }
        fprintf(j, "}");
    }
}

static void verify_help(FILE *out)
{
    fprintf(out,
            "usage: voltgate golden verify [--backend auto|cpu|cuda|all] [--plan all|heuristic|ID[,ID...]]\n"
            "                              [--json FILE] [--shard I/N] [--case PATTERN] PATH...\n\n"
            "Runs every case of every golden file (PATH: files or folders of *.h5) through\n"
            "the runtime and compares with y_ref: relative RMS error and max abs error\n"
            "against the case's tolerance.\n"
            "  --backend  auto (default: cuda when a device is present, else cpu), cpu, cuda,\n"
            "             or all (cpu, plus cuda when present)\n"
            "  --plan     all (default: every plan that applies, vg_gemm_with_plan),\n"
            "             heuristic (vg_gemm with tuning off), or plan ids, comma-separated\n"
            "             (voltgate plans lists them; each must run on some case)\n"
            "  --json     also write the rows as {\"tool\":\"golden-verify\",\"rows\":[...]}\n"
            "  --shard    I/N: only the files whose index in the sorted file list is I mod N\n"
            "             (I from 0 to N-1)\n"
            "  --case     only the cases whose name matches PATTERN (shell glob: * ? [...]);\n"
            "             with --backend and --plan, reproduces one failing row of a report\n"
            "exit: 0 all pass, 1 some case failed, 2 a file could not be used or bad usage,\n"
            "      77 --backend cuda without a CUDA device (prints 'skipped: no CUDA device')\n");
}

int cmd_golden_verify(int argc, char **argv)
{
    const char *backend = "auto", *plan = "all", *json = NULL, *case_pattern = NULL;
    int32_t shard_i = 0, shard_n = 1;
    path_list files = {0};
    int rc = VG_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            verify_help(stdout);
            golden_cli_list_free(&files);
            return VG_EXIT_OK;
        }
        if (o[0] == '-' && o[1] == '-') {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (!v) {
                golden_cli_list_free(&files);
                return golden_cli_usage_error("verify", "option %s needs a value", o);
            }
            if (!strcmp(o, "--backend"))
                backend = v;
            else if (!strcmp(o, "--plan"))
                plan = v;
            else if (!strcmp(o, "--json"))
                json = v;
            else if (!strcmp(o, "--case"))
                case_pattern = v;
            else if (!strcmp(o, "--shard")) {
                char a[32], b[32];
                const char *slash = strchr(v, '/');
                if (!slash || (size_t)(slash - v) >= sizeof a || strlen(slash + 1) >= sizeof b) {
                    golden_cli_list_free(&files);
                    return golden_cli_usage_error("verify", "bad --shard '%s' (I/N)", v);
                }
                snprintf(a, sizeof a, "%.*s", (int)(slash - v), v);
                snprintf(b, sizeof b, "%s", slash + 1);
                if (golden_cli_parse_i32(b, 1, 1 << 20, &shard_n) != 0 ||
                    golden_cli_parse_i32(a, 0, shard_n - 1, &shard_i) != 0) {
                    golden_cli_list_free(&files);
                    return golden_cli_usage_error("verify",
                                                  "bad --shard '%s' (I/N with 0 <= I < N)", v);
                }
            } else {
                golden_cli_list_free(&files);
                return golden_cli_usage_error("verify", "unknown option '%s'", o);
            }
            continue;
        }
        if (golden_cli_expand("verify", o, &files) != 0) {
            golden_cli_list_free(&files);
            return VG_EXIT_USAGE;
        }
    }
    if (strcmp(backend, "cpu") && strcmp(backend, "cuda") && strcmp(backend, "all") &&
        strcmp(backend, "auto")) {
        golden_cli_list_free(&files);
        return golden_cli_usage_error("verify", "unknown backend '%s' (auto, cpu, cuda or all)",
                                      backend);
    }
    if (!files.count) {
        golden_cli_list_free(&files);
        return golden_cli_usage_error("verify", "%s", "no golden file given");
    }
    qsort(files.items, files.count, sizeof(char *), golden_cli_cmp_str);
    backend = tool_backend(backend);

    /* --plan's list, its form checked before any device is opened (whether
     * each id is a plan shows after the run: an id that ran on no case is
     * named then) */
    verify_out vo = {.case_pattern = case_pattern};
    if (strcmp(plan, "all") && strcmp(plan, "heuristic")) {
        size_t len;
        for (const char *p = plan, *next; p; p = next) {
            next = vg_list_item(p, &len);
            if (len == 0 || vo.nplan_ids == VERIFY_MAX_PLAN_IDS) {
                golden_cli_list_free(&files);
                return golden_cli_usage_error("verify",
                                              len ? "more than 64 plan ids in --plan '%s'"
                                                  : "an empty plan id in --plan '%s'",
                                              plan);
            }
            if ((len == 3 && !strncmp(p, "all", 3)) || (len == 9 && !strncmp(p, "heuristic", 9))) {
                golden_cli_list_free(&files);
                return golden_cli_usage_error("verify", "--plan '%s': all and heuristic go alone, "
                                              "not in a list of plan ids", plan);
            }
            vo.plan_id[vo.nplan_ids] = p;
            vo.plan_id_len[vo.nplan_ids++] = len;
        }
    }

    /* the devices */
    const char *names[2];
    vg_device *devs[2] = {NULL, NULL};
    int ndev = 0;
    if (!strcmp(backend, "cpu") || !strcmp(backend, "all"))
        names[ndev++] = "cpu";
    if (!strcmp(backend, "cuda") || !strcmp(backend, "all"))
        names[ndev++] = "cuda";
    for (int d = 0; d < ndev; d++) {
        vg_status st = vg_device_open(names[d], 0, &devs[d]);
        if (st == VG_ERR_NO_DEVICE && !strcmp(names[d], "cuda")) {
            printf("skipped: no CUDA device\n");
            if (!strcmp(backend, "cuda")) {
                golden_cli_list_free(&files);
                return VG_EXIT_SKIP;
            }
            devs[d] = NULL;
        } else if (st != VG_OK) {
            fprintf(stderr, "voltgate golden verify: cannot open the %s device: %s\n", names[d],
                    vg_last_error());
            for (int e = 0; e < d; e++)
                if (devs[e])
                    vg_device_close(devs[e]);
            golden_cli_list_free(&files);
            return VG_EXIT_USAGE;
        }
    }

    /* The JSON is gathered in memory and written in one piece at the end
     * (vg_write_file_atomic): a killed run leaves no half file. */
    char *json_text = NULL;
    size_t json_len = 0;
    if (json) {
        if (vg_check_output_path("--json", json) != VG_OK) {
            fprintf(stderr, "voltgate golden verify: %s\n", vg_last_error());
            rc = VG_EXIT_USAGE;
            goto out;
        }
        for (size_t i = 0; i < files.count; i++)
            if (vg_same_file(json, files.items[i])) {
                fprintf(stderr, "voltgate golden verify: --json %s is the golden file %s being verified\n",
                        json, files.items[i]);
                rc = VG_EXIT_USAGE;
                goto out;
            }
        vo.json = open_memstream(&json_text, &json_len);
        if (!vo.json) {
            fprintf(stderr, "voltgate golden verify: %s: %s\n", json, strerror(errno));
            goto out;
        }
        fprintf(vo.json, "{\"tool\":\"golden-verify\",\"build\":");
        json_str(vo.json, tool_build_id());
        fprintf(vo.json, ",\"rows\":[");
    }

    int bad_file = 0;
    path_list unusable = {0};
    tool_progress_start(&vo.progress, "golden verify");
    for (size_t i = 0; i < files.count; i++)
        vo.files_total += (int32_t)(i % (size_t)shard_n) == shard_i;
    if (vo.files_total == 0) {
        /* nothing verified is no pass: a CI matrix with more shards than
         * files sees this shard skipped, not green */
        tool_progress_end(&vo.progress);
        if (vo.json) {
            fclose(vo.json);
            vo.json = NULL;
        }
        fprintf(stderr, "skipped: --shard %d/%d holds none of the %zu file(s) given\n", (int)shard_i,
                (int)shard_n, files.count);
        rc = VG_EXIT_SKIP;
        goto out;
    }
    printf("%-28s %-5s %-36s %10s %10s %-18s %s\n", "case", "bknd", "plan", "rel_rms", "max_abs",
           "tol(rms/abs)", "verdict");
    for (size_t i = 0; i < files.count; i++) {
        if ((int32_t)(i % (size_t)shard_n) != shard_i)
            continue;
        vg_golden_file f;
        vg_status st;
        /* A recipe weight is rebuilt from its seed here: seconds for a big one. */
        tool_progress_show(&vo.progress, 1, "%d/%d files, %d rows; reading %s (and rebuilding its weight "
                      "when it is a recipe)", vo.files_done, vo.files_total, vo.rows, files.items[i]);
        if (golden_cli_read("verify", files.items[i], &f) != 0) {
            vo.files_done++;
            bad_file = 1;
            golden_cli_list_add(&unusable, files.items[i]);
            continue;
        }
        for (int d = 0; d < ndev; d++) {
            if (!devs[d])
                continue;
            vg_golden_verify_opts opts = {names[d], plan};
            int ran = 0, failed = 0;
            st = vg_golden_verify_file(devs[d], files.items[i], &f, &opts, on_row, &vo, &ran,
                                       &failed);
            if (st != VG_OK) {
                fprintf(stderr, "voltgate golden verify: %s (%s): %s\n", files.items[i], names[d],
                        vg_last_error());
                bad_file = 1;
                if (!unusable.count || strcmp(unusable.items[unusable.count - 1], files.items[i]))
                    golden_cli_list_add(&unusable, files.items[i]);
            }
        }
        vg_golden_free(&f);
        vo.files_done++;
    }
    tool_progress_end(&vo.progress);
    const int files_unusable = bad_file;
    int case_idle = 0;
    if (case_pattern && vo.case_rows == 0 && !bad_file) {
        fprintf(stderr, "voltgate golden verify: --case '%s' matches no case of the files given "
                        "(with this --plan)\n", case_pattern);
        bad_file = case_idle = 1;
    }
    /* each id must have run somewhere: a typo in a list runs nothing of its own */
    int idle_ids = 0;
    for (int i = 0; i < vo.nplan_ids && !bad_file; i++)
        if (vo.plan_id_rows[i] == 0) {
            fprintf(stderr, "voltgate golden verify: plan '%.*s' applies to no case given "
                            "(or does not exist; see voltgate plans)\n",
                    (int)vo.plan_id_len[i], vo.plan_id[i]);
            idle_ids++;
        }
    if (idle_ids)
        bad_file = 1;
    printf("%d row(s): %d passed, %d failed%s%s%s", vo.rows, vo.rows - vo.failed_rows,
           vo.failed_rows, files_unusable ? "; some files could not be used" : "",
           case_idle ? "; --case matched no case" : "",
           idle_ids ? "; a --plan id ran on no case" : "");
    /* Every file named in the summary: the errors above may have scrolled away. */
    for (size_t u = 0; u < unusable.count; u++)
        printf("%s%s", u ? ", " : ": ", unusable.items[u]);
    printf("\n");
    golden_cli_list_free(&unusable);
    if (vo.json) {
        fprintf(vo.json, "\n]}\n");
        int bad = ferror(vo.json);
        if (fclose(vo.json) != 0 || bad ||
            vg_write_file_atomic(json, json, json_text, json_len, NULL) != VG_OK) {
            fprintf(stderr, "voltgate golden verify: cannot write %s: %s\n", json,
                    strerror(errno));
            bad_file = 1;
        }
        vo.json = NULL;
    }
    rc = bad_file ? VG_EXIT_USAGE : vo.failed_rows ? VG_EXIT_FAIL : VG_EXIT_OK;
out:
    free(json_text);
    for (int d = 0; d < ndev; d++)
        if (devs[d])
            vg_device_close(devs[d]);
    golden_cli_list_free(&files);
    return rc;
}
