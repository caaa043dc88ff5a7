/*
 * voltgate golden: gen / verify / import / info / seal.
 *
 * Exit codes (tools.h): 0 ok, 1 a case failed its tolerance, 2 bad input or
 * usage (a file that cannot be used, a bad option), 77 skipped (no CUDA
 * device for --backend cuda).
 *
 * This file is the `golden` command itself: its help and the dispatch to
 * a subcommand, and what the subcommands share (cmd_golden.h): the option
 * value parsers, the usage message, reading one golden file, and PATH
 * arguments (files, or folders of *.h5).  Each subcommand is a file of its
 * own: cmd_golden_gen.c, cmd_golden_verify.c, cmd_golden_import.c,
 * cmd_golden_info.c, cmd_golden_seal.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd_golden.h"
#include "fileio.h"

/* ---- small parsing helpers ------------------------------------------------------ */

int golden_cli_parse_i32(const char *s, int32_t lo, int32_t hi, int32_t *out)
{
    long long v;
    if (vg_parse_int(s, (size_t)-1, lo, hi, &v) != 0)
        return -1;
    *out = (int32_t)v;
    return 0;
}

int golden_cli_parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    /* decimal digits only: strtoull would take " -1" as 2^64 - 1, and base
     * 0 would read 010 as 8 (and refuse 08) */
    if (*s < '0' || *s > '9')
        return -1;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end)
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* "1,2,3" into a malloc'ed list. */
int golden_cli_parse_list(const char *s, int32_t lo, int32_t hi, int32_t **out, int32_t *count)
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
        if (i >= n || golden_cli_parse_i32(tok, lo, hi, &v[i]) != 0) {
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

int golden_cli_usage_error(const char *cmd, const char *fmt, const char *arg)
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
int golden_cli_read(const char *cmd, const char *file, vg_golden_file *f)
{
    if (vg_golden_read(file, f) == VG_OK)
        return 0;
    fprintf(stderr, "voltgate golden %s: %s\n", cmd, vg_last_error());
    return -1;
}

/* ---- PATH arguments ---------------------------------------------------------------- */

int golden_cli_list_add(path_list *l, const char *s)
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

void golden_cli_list_free(path_list *l)
{
    for (size_t i = 0; i < l->count; i++)
        free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

int golden_cli_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds a file, or the *.h5 files of a folder (not recursing); cmd names the
 * subcommand in its messages. */
int golden_cli_expand(const char *cmd, const char *arg, path_list *out)
{
    struct stat sb;
    if (stat(arg, &sb) != 0) {
        fprintf(stderr, "voltgate golden %s: %s: cannot open: %s\n", cmd, arg, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(sb.st_mode))
        return golden_cli_list_add(out, arg);
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
            if (golden_cli_list_add(out, p) != 0) {
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
        return cmd_golden_gen(argc - 1, argv + 1);
    if (!strcmp(sub, "verify"))
        return cmd_golden_verify(argc - 1, argv + 1);
    if (!strcmp(sub, "import"))
        return cmd_golden_import(argc - 1, argv + 1);
    if (!strcmp(sub, "info"))
        return cmd_golden_info(argc - 1, argv + 1);
    if (!strcmp(sub, "seal"))
        return cmd_golden_seal(argc - 1, argv + 1);
    fprintf(stderr, "voltgate golden: unknown subcommand '%s'\n", sub);
    golden_help(stderr);
    return VG_EXIT_USAGE;
}
