/*
 * voltgate golden: gen / verify / import / info / seal.
 *
 * Exit codes (tools.h): 0 ok, 1 a case failed its tolerance, 2 bad input or
 * usage (a file that cannot be used, a bad option), 77 skipped (no CUDA
 * device for --backend cuda).
 */
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "tools.h"
#include "voltgate/golden.h"
#include "voltgate/runtime.h"

/* ---- small parsing helpers ------------------------------------------------------ */

static int parse_i32(const char *s, int32_t lo, int32_t hi, int32_t *out)
{
    long long v;
    if (vg_parse_int(s, (size_t)-1, lo, hi, &v) != 0)
        return -1;
    *out = (int32_t)v;
    return 0;
}

static int parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (*s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s || *end)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* "1,2,3" into a malloc'ed list. */
static int parse_list(const char *s, int32_t lo, int32_t hi, int32_t **out, int32_t *count)
{
    int32_t n = 1;
    for (const char *p = s; *p; p++)
        n += *p == ',';
    int32_t *v = malloc((size_t)n * sizeof(int32_t));
    char *copy = strdup(s);
    if (!v || !copy) {
        free(v);
        free(copy);
        return -1;
    }
    int32_t i = 0;
    char *save = NULL;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        if (i >= n || parse_i32(tok, lo, hi, &v[i]) != 0) {
            free(v);
            free(copy);
            return -1;
        }
        i++;
    }
    free(copy);
    if (i != n) {
        free(v);
        return -1;
    }
    *out = v;
    *count = n;
    return 0;
}

static int usage_error(const char *cmd, const char *fmt, const char *arg)
{
    fprintf(stderr, "voltgate golden %s: ", cmd);
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (try --help)\n");
    return VG_EXIT_USAGE;
}

/* ---- reading golden files ------------------------------------------------------------ */

/* Reads file into *f for `cmd`; 0, or -1 after printing the reader's one
 * line.  The reader refuses any file whose seal (SCHEMA.md) is not intact
 * before libhdf5 parses a byte, so a damaged file cannot crash the tool. */
static int read_golden(const char *cmd, const char *file, vg_golden_file *f)
{
    if (vg_golden_read(file, f) == VG_OK)
        return 0;
    fprintf(stderr, "voltgate golden %s: %s\n", cmd, vg_last_error());
    return -1;
}

/* `seal` must parse an unsealed (or edited) file, and libhdf5 1.10.x is not
 * memory-safe on damaged ones (a use-after-free and a heap overflow under
 * H5Aexists, found by fuzzing: suites/fuzz/regressions/fuzz_golden/hdf5_*).
 * So it first reads the file in a forked child (vg_golden_read_flags with
 * VG_GOLDEN_READ_NO_SEAL | VG_GOLDEN_READ_NO_RECIPE: every HDF5 parse and
 * stored dataset, without rebuilding a recipe weight):
 *   - the child crashes: "<file>: damaged file (the HDF5 library crashed
 *     reading it: signal N)", and the file is left alone (exit 2);
 *   - the child refuses the file: its one-line message, passed up a pipe;
 *   - the child accepts it (or no child could be had: pipe or fork failed):
 *     0, and the caller seals it.
 * Returns 0, or -1 after printing the reason (prefix `cmd`). */
static int check_in_child(const char *cmd, const char *file)
{
    int fds[2] = {-1, -1};
    fflush(NULL);
    pid_t pid = pipe(fds) == 0 ? fork() : -1;
    if (pid < 0 && fds[0] >= 0) {
        close(fds[0]);
        close(fds[1]);
    }
    if (pid == 0) {
        close(fds[0]);
        vg_golden_file probe;
        vg_status st = vg_golden_read_flags(file, VG_GOLDEN_READ_NO_RECIPE | VG_GOLDEN_READ_NO_SEAL,
                                            &probe);
        if (st == VG_OK) {
            vg_golden_free(&probe);
            _exit(0);
        }
        const char *msg = vg_last_error();
        size_t len = strlen(msg);
        while (len > 0) {
            ssize_t n = write(fds[1], msg, len);
            if (n <= 0)
                break;
            msg += n;
            len -= (size_t)n;
        }
        _exit(1);   /* _exit: the parent's atexit handlers (CUDA, HDF5) are not ours */
    }
    if (pid > 0) {
        close(fds[1]);
        char msg[2048];
        size_t used = 0;
        for (;;) {
            ssize_t n = read(fds[0], msg + used, sizeof msg - 1 - used);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            used += (size_t)n;
            if (used == sizeof msg - 1)
                break;
        }
        msg[used] = '\0';
        close(fds[0]);
        int status = 0;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(status)) {
            fprintf(stderr, "voltgate golden %s: %s: damaged file (the HDF5 library crashed "
                            "reading it: signal %d)\n", cmd, file, WTERMSIG(status));
            return -1;
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            if (used)
                fprintf(stderr, "voltgate golden %s: %s\n", cmd, msg);
            else
                fprintf(stderr, "voltgate golden %s: %s: damaged file (the checking process "
                                "exited with status %d)\n", cmd, file,
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1);
            return -1;
        }
    }
    return 0;
}

/* ---- gen ---------------------------------------------------------------------------- */

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

static int cmd_gen(int argc, char **argv)
{
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.seed = 1;
    int have_family = 0, have_path = 0;
    const char *out = NULL, *set = NULL, *only = NULL;
    int32_t *m_list = NULL, *tokens = NULL, *routings = NULL, one = 1;
    int32_t nroutings = 0, rc = VG_EXIT_USAGE;
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
            rc = usage_error("gen", "option %s needs a value", o);
            goto done;
        }
        i++;
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
            if (parse_i32(v, 1, VG_GOLDEN_MAX_DIM, dst) != 0) {
                char why[160];
                snprintf(why, sizeof why, "%s must be an integer from 1 to %d, not '%.40s'", o,
                         VG_GOLDEN_MAX_DIM, v);
                rc = usage_error("gen", "%s", why);
                goto done;
            }
        } else if (!strcmp(o, "--m")) {
            free(m_list);
            m_list = NULL;
            if (parse_list(v, 1, VG_GOLDEN_MAX_DIM, &m_list, &a.m_count) != 0) {
                char why[160];
                snprintf(why, sizeof why, "--m must be row counts from 1 to %d, not '%.40s'",
                         VG_GOLDEN_MAX_DIM, v);
                rc = usage_error("gen", "%s", why);
                goto done;
            }
        } else if (!strcmp(o, "--tokens") || !strcmp(o, "--tokens-list")) {
            free(tokens);
            tokens = NULL;
            if (parse_list(v, 0, VG_GOLDEN_MAX_DIM, &tokens, &a.tokens_count) != 0 ||
                (!strcmp(o, "--tokens") && a.tokens_count != 1)) {
                char why[160];
                snprintf(why, sizeof why, "%s must be %s from 0 to %d, not '%.40s'", o,
                         !strcmp(o, "--tokens") ? "one token count" : "token counts",
                         VG_GOLDEN_MAX_DIM, v);
                rc = usage_error("gen", "%s", why);
                goto done;
            }
        } else if (!strcmp(o, "--routing")) {
            int32_t *r = NULL, n = 0;
            if (parse_list(v, 0, VG_GOLDEN_MAX_DIM, &r, &n) != 0) {
                rc = usage_error("gen", "bad --routing '%s'", v);
                goto done;
            }
            if (nroutings && n != a.groups) {
                free(r);
                rc = usage_error("gen", "--routing '%s' has a different expert count", v);
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
            if (a.groups && a.groups != n && nroutings == 1) {
                rc = usage_error("gen", "--routing '%s' disagrees with --groups", v);
                goto done;
            }
            a.groups = n;
        } else if (!strcmp(o, "--seed")) {
            if (parse_u64(v, &a.seed) != 0) {
                rc = usage_error("gen", "bad --seed '%s'", v);
                goto done;
            }
        } else if (!strcmp(o, "--y-dtype")) {
            if (!strcmp(v, "f32"))
                a.y_dtype = VG_DTYPE_F32;
            else if (!strcmp(v, "f16"))
                a.y_dtype = VG_DTYPE_F16;
            else {
                rc = usage_error("gen", "bad --y-dtype '%s' (f32 or f16)", v);
                goto done;
            }
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output")) {
            out = v;
        } else if (!strcmp(o, "--set")) {
            set = v;
        } else if (!strcmp(o, "--only")) {
            only = v;
        } else {
            rc = usage_error("gen", "unknown option '%s'", o);
            goto done;
        }
    }
    if (!out) {
        rc = usage_error("gen", "%s", "-o is required");
        goto done;
    }
    if (!set && vg_check_output_path("-o", out) != VG_OK) {
        rc = usage_error("gen", "%s", vg_last_error());
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
        rc = usage_error("gen", "%s", "--family, --path, --n and --k are required");
        goto done;
    }
    if (a.path == VG_PATH_DENSE) {
        if (tokens || routings) {
            rc = usage_error("gen", "%s", "dense takes --m, not --tokens or --routing");
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
            rc = usage_error("gen", "%s", "--m is for dense; use --tokens or --tokens-list");
            goto done;
        }
        if (routings && a.path != VG_PATH_MOE) {
            rc = usage_error("gen", "%s", "--routing is for moe");
            goto done;
        }
        if (!tokens && !routings) {
            rc = usage_error("gen", "%s", "--tokens, --tokens-list or --routing is required");
            goto done;
        }
        a.tokens_list = tokens;
        a.routings = routings;
        a.routing_count = nroutings;
        if (a.path != VG_PATH_MOE)
            for (int32_t i = 0; i < a.tokens_count; i++)
                if (tokens[i] < 1) {
                    rc = usage_error("gen", "%s", "tokens per group must be at least 1");
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

/* ---- verify --------------------------------------------------------------------------- */

typedef struct path_list {
    char **items;
    size_t count, cap;
} path_list;

static int list_add(path_list *l, const char *s)
{
    if (l->count == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 64;
        char **grown = realloc(l->items, cap * sizeof(char *));
        if (!grown)
            return -1;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->count] = strdup(s);
    return l->items[l->count++] ? 0 : -1;
}

static void list_free(path_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds a file, or the *.h5 files of a folder (not recursing); cmd names the
 * subcommand in its messages. */
static int expand(const char *cmd, const char *arg, path_list *out)
{
    struct stat sb;
    if (stat(arg, &sb) != 0) {
        fprintf(stderr, "voltgate golden %s: %s: cannot open: %s\n", cmd, arg, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(sb.st_mode))
        return list_add(out, arg);
    DIR *d = opendir(arg);
    if (!d) {
        fprintf(stderr, "voltgate golden %s: %s: %s\n", cmd, arg, strerror(errno));
        return -1;
    }
    struct dirent *e;
    size_t before = out->count;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len > 3 && !strcmp(e->d_name + len - 3, ".h5")) {
            char p[4096];
            snprintf(p, sizeof p, "%s%s%s", arg, arg[strlen(arg) - 1] == '/' ? "" : "/",
                     e->d_name);
            if (list_add(out, p) != 0) {
                closedir(d);
                return -1;
            }
        }
    }
    closedir(d);
    if (out->count == before) {
        fprintf(stderr, "voltgate golden %s: %s: no .h5 files in this folder\n", cmd, arg);
        return -1;
    }
    return 0;
}

typedef struct verify_out {
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
            "usage: voltgate golden verify [--backend auto|cpu|cuda|all] [--plan all|heuristic|ID]\n"
            "                              [--json FILE] [--shard I/N] [--case PATTERN] PATH...\n\n"
            "Runs every case of every golden file (PATH: files or folders of *.h5) through\n"
            "the runtime and compares with y_ref: relative RMS error and max abs error\n"
            "against the case's tolerance.\n"
            "  --backend  auto (default: cuda when a device is present, else cpu), cpu, cuda,\n"
            "             or all (cpu, plus cuda when present)\n"
            "  --plan     all (default: every plan that applies, vg_gemm_with_plan),\n"
            "             heuristic (vg_gemm with tuning off), or one plan id\n"
            "  --json     also write the rows as {\"tool\":\"golden-verify\",\"rows\":[...]}\n"
            "  --shard    I/N: only the files whose index in the sorted file list is I mod N\n"
            "             (I from 0 to N-1)\n"
            "  --case     only the cases whose name matches PATTERN (shell glob: * ? [...]);\n"
            "             with --backend and --plan, reproduces one failing row of a report\n"
            "exit: 0 all pass, 1 some case failed, 2 a file could not be used or bad usage,\n"
            "      77 --backend cuda without a CUDA device (prints 'skipped: no CUDA device')\n");
}

static int cmd_verify(int argc, char **argv)
{
    const char *backend = "auto", *plan = "all", *json = NULL, *case_pattern = NULL;
    int32_t shard_i = 0, shard_n = 1;
    path_list files = {0};
    int rc = VG_EXIT_USAGE;
    for (int i = 1; i < argc; i++) {
        const char *o = argv[i];
        if (!strcmp(o, "--help") || !strcmp(o, "-h")) {
            verify_help(stdout);
            list_free(&files);
            return VG_EXIT_OK;
        }
        if (o[0] == '-' && o[1] == '-') {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (!v) {
                list_free(&files);
                return usage_error("verify", "option %s needs a value", o);
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
                    list_free(&files);
                    return usage_error("verify", "bad --shard '%s' (I/N)", v);
                }
                snprintf(a, sizeof a, "%.*s", (int)(slash - v), v);
                snprintf(b, sizeof b, "%s", slash + 1);
                if (parse_i32(b, 1, 1 << 20, &shard_n) != 0 ||
                    parse_i32(a, 0, shard_n - 1, &shard_i) != 0) {
                    list_free(&files);
                    return usage_error("verify", "bad --shard '%s' (I/N with 0 <= I < N)", v);
                }
            } else {
                list_free(&files);
                return usage_error("verify", "unknown option '%s'", o);
            }
            continue;
        }
        if (expand("verify", o, &files) != 0) {
            list_free(&files);
            return VG_EXIT_USAGE;
        }
    }
    if (strcmp(backend, "cpu") && strcmp(backend, "cuda") && strcmp(backend, "all") &&
        strcmp(backend, "auto")) {
        list_free(&files);
        return usage_error("verify", "unknown backend '%s' (auto, cpu, cuda or all)", backend);
    }
    if (!files.count) {
        list_free(&files);
        return usage_error("verify", "%s", "no golden file given");
    }
    qsort(files.items, files.count, sizeof(char *), cmp_str);
    backend = tool_backend(backend);

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
                list_free(&files);
                return VG_EXIT_SKIP;
            }
            devs[d] = NULL;
        } else if (st != VG_OK) {
            fprintf(stderr, "voltgate golden verify: cannot open the %s device: %s\n", names[d],
                    vg_last_error());
            for (int e = 0; e < d; e++)
                if (devs[e])
                    vg_device_close(devs[e]);
            list_free(&files);
            return VG_EXIT_USAGE;
        }
    }

    verify_out vo = {.case_pattern = case_pattern};
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
        vo.json = open_memstream(&json_text, &json_len);
        if (!vo.json) {
            fprintf(stderr, "voltgate golden verify: %s: %s\n", json, strerror(errno));
            goto out;
        }
        fprintf(vo.json, "{\"tool\":\"golden-verify\",\"build\":");
        json_str(vo.json, tool_build_id());
        fprintf(vo.json, ",\"rows\":[");
    }

    printf("%-28s %-5s %-36s %10s %10s %-18s %s\n", "case", "bknd", "plan", "rel_rms", "max_abs",
           "tol(rms/abs)", "verdict");
    int bad_file = 0, plan_ran = 0;
    path_list unusable = {0};
    tool_progress_start(&vo.progress, "golden verify");
    for (size_t i = 0; i < files.count; i++)
        vo.files_total += (int32_t)(i % (size_t)shard_n) == shard_i;
    for (size_t i = 0; i < files.count; i++) {
        if ((int32_t)(i % (size_t)shard_n) != shard_i)
            continue;
        vg_golden_file f;
        vg_status st;
        /* A recipe weight is rebuilt from its seed here: seconds for a big one. */
        tool_progress_show(&vo.progress, 1, "%d/%d files, %d rows; reading %s (and rebuilding its weight "
                      "when it is a recipe)", vo.files_done, vo.files_total, vo.rows, files.items[i]);
        if (read_golden("verify", files.items[i], &f) != 0) {
            vo.files_done++;
            bad_file = 1;
            list_add(&unusable, files.items[i]);
            continue;
        }
        for (int d = 0; d < ndev; d++) {
            if (!devs[d])
                continue;
            vg_golden_verify_opts opts = {names[d], plan};
            int ran = 0, failed = 0;
            st = vg_golden_verify_file(devs[d], files.items[i], &f, &opts, on_row, &vo, &ran,
                                       &failed);
            plan_ran += ran;
            if (st != VG_OK) {
                fprintf(stderr, "voltgate golden verify: %s (%s): %s\n", files.items[i], names[d],
                        vg_last_error());
                bad_file = 1;
                if (!unusable.count || strcmp(unusable.items[unusable.count - 1], files.items[i]))
                    list_add(&unusable, files.items[i]);
            }
        }
        vg_golden_free(&f);
        vo.files_done++;
    }
    tool_progress_end(&vo.progress);
    if (case_pattern && vo.case_rows == 0 && !bad_file) {
        fprintf(stderr, "voltgate golden verify: --case '%s' matches no case of the files given "
                        "(with this --plan)\n", case_pattern);
        bad_file = 1;
    }
    if (strcmp(plan, "all") && strcmp(plan, "heuristic") && plan_ran == 0 && !bad_file) {
        fprintf(stderr, "voltgate golden verify: plan '%s' applies to no case given "
                        "(or does not exist; see voltgate plans)\n", plan);
        bad_file = 1;
    }
    printf("%d row(s): %d passed, %d failed%s", vo.rows, vo.rows - vo.failed_rows,
           vo.failed_rows, bad_file ? "; some files could not be used" : "");
    /* Every file named in the summary: the errors above may have scrolled away. */
    for (size_t u = 0; u < unusable.count; u++)
        printf("%s%s", u ? ", " : ": ", unusable.items[u]);
    printf("\n");
    list_free(&unusable);
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
    list_free(&files);
    return rc;
}

/* ---- import ------------------------------------------------------------------------------ */

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
            "  --scale        F8_E4M3 weights: the scale tensor (default NAME_scale_inv)\n"
            "  --path         dense (default), grouped, loop or moe\n"
            "  --tokens       tokens per group (dense: M), default 1\n"
            "  --routing      moe: tokens of each expert (a routing histogram)\n"
            "Activations are synthetic (SCHEMA.md).  Exit 2 on any bad file, nothing written.\n",
            vg_golden_import_format_names());
}

static int cmd_import(int argc, char **argv)
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
            rc = usage_error("import", "option %s needs a value", o);
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
                rc = usage_error("import", "bad --experts-range '%s' (A:B)", v);
                goto done;
            }
            snprintf(lo, sizeof lo, "%.*s", (int)(colon - v), v);
            snprintf(hi, sizeof hi, "%s", colon + 1);
            if (parse_i32(lo, 0, VG_GOLDEN_MAX_DIM, &a.expert_begin) != 0 ||
                parse_i32(hi, 1, VG_GOLDEN_MAX_DIM, &a.expert_end) != 0 ||
                a.expert_end <= a.expert_begin) {
                rc = usage_error("import", "bad --experts-range '%s' (A:B with A < B)", v);
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
            if (parse_i32(v, 1, VG_GOLDEN_MAX_DIM, &a.tokens) != 0) {
                rc = usage_error("import", "bad --tokens '%s'", v);
                goto done;
            }
        } else if (!strcmp(o, "--routing")) {
            free(routing);
            routing = NULL;
            if (parse_list(v, 0, VG_GOLDEN_MAX_DIM, &routing, &a.routing_count) != 0) {
                rc = usage_error("import", "bad --routing '%s'", v);
                goto done;
            }
            a.routing = routing;
        } else if (!strcmp(o, "--seed")) {
            if (parse_u64(v, &a.seed) != 0) {
                rc = usage_error("import", "bad --seed '%s'", v);
                goto done;
            }
        } else if (!strcmp(o, "-o") || !strcmp(o, "--output"))
            out = v;
        else {
            rc = usage_error("import", "unknown option '%s'", o);
            goto done;
        }
    }
    if (!a.safetensors == !a.checkpoint || !a.weight == !a.experts || !out) {
        rc = usage_error("import", "%s", "one of --safetensors/--checkpoint, one of "
                         "--weight/--experts, and -o are required");
        goto done;
    }
    if (a.routing && !have_path)
        a.path = VG_PATH_MOE; /* a routing histogram is what a moe case is */
    if (vg_check_output_path("-o", out) != VG_OK) {
        rc = usage_error("import", "%s", vg_last_error());
        goto done;
    }
    /* Writing over the checkpoint being read would destroy it. */
    if (a.safetensors) {
        struct stat in_sb, out_sb;
        if (stat(a.safetensors, &in_sb) == 0 && stat(out, &out_sb) == 0 &&
            in_sb.st_dev == out_sb.st_dev && in_sb.st_ino == out_sb.st_ino) {
            rc = usage_error("import", "-o %s is the --safetensors input file", out);
            goto done;
        }
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

/* ---- info ---------------------------------------------------------------------------------- */

static int cmd_info(int argc, char **argv)
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
        if (expand("info", argv[i], &files) != 0)
            rc = VG_EXIT_USAGE;
    qsort(files.items, files.count, sizeof(char *), cmp_str);
    for (size_t i = 0; i < files.count; i++) {
        vg_golden_file f;
        if (read_golden("info", files.items[i], &f) != 0) {
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
    list_free(&files);
    return rc;
}

/* ---- seal ---------------------------------------------------------------------------------- */

static int cmd_seal(int argc, char **argv)
{
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        printf("usage: voltgate golden seal FILE...\n\n"
               "Seals golden files (SCHEMA.md, \"The seal\"): every reader refuses a file whose\n"
               "first 512 bytes do not seal the rest, so that damaged bytes never reach libhdf5.\n"
               "Use it on a file written before seals existed, or after an intended edit\n"
               "through HDF5 (h5py, h5repack).  Each file is first read and validated in a\n"
               "child process, without its seal; only a file that passes is sealed, in\n"
               "place and atomically.  An intact sealed file is left as it is.\n"
               "Exit: 0 all sealed, 2 a file was refused (its reason on stderr).\n");
        return argc < 2 ? VG_EXIT_USAGE : VG_EXIT_OK;
    }
    int rc = VG_EXIT_OK;
    for (int i = 1; i < argc; i++) {
        if (check_in_child("seal", argv[i]) != 0) {
            rc = VG_EXIT_USAGE;
            continue;
        }
        if (vg_golden_seal(argv[i]) != VG_OK) {
            fprintf(stderr, "voltgate golden seal: %s\n", vg_last_error());
            rc = VG_EXIT_USAGE;
            continue;
        }
        printf("%s: sealed\n", argv[i]);
    }
    return rc;
}

/* ---- dispatch ---------------------------------------------------------------------------------- */

static void golden_help(FILE *out)
{
    fprintf(out, "usage: voltgate golden <gen|verify|import|info|seal> [options]   (each takes --help)\n\n"
                 "  gen      generate a golden case file, or the committed set (--set ci)\n"
                 "  verify   run golden files through the runtime and compare with y_ref\n"
                 "  import   build a golden file from a safetensors checkpoint tensor\n"
                 "  info     validate golden files and list their cases\n"
                 "  seal     check golden files and seal them (after an edit through HDF5)\n");
}

int cmd_golden(int argc, char **argv)
{
    if (argc < 2) {
        golden_help(stderr);
        return VG_EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h")) {
        golden_help(stdout);
        return VG_EXIT_OK;
    }
    if (!strcmp(sub, "gen"))
        return cmd_gen(argc - 1, argv + 1);
    if (!strcmp(sub, "verify"))
        return cmd_verify(argc - 1, argv + 1);
    if (!strcmp(sub, "import"))
        return cmd_import(argc - 1, argv + 1);
    if (!strcmp(sub, "info"))
        return cmd_info(argc - 1, argv + 1);
    if (!strcmp(sub, "seal"))
        return cmd_seal(argc - 1, argv + 1);
    fprintf(stderr, "voltgate golden: unknown subcommand '%s'\n", sub);
    golden_help(stderr);
    return VG_EXIT_USAGE;
}
