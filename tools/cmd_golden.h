/*
 * What the subcommands of `voltgate golden` share (cmd_golden.c) and their
 * entry points (one file each: cmd_golden_gen.c, cmd_golden_verify.c,
 * cmd_golden_import.c, cmd_golden_info.c, cmd_golden_seal.c).  Internal to
 * tools/.
 */
#ifndef VOLTGATE_TOOLS_CMD_GOLDEN_H
#define VOLTGATE_TOOLS_CMD_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "tools.h"
#include "voltgate/golden.h"

/* ---- option values ---------------------------------------------------------------- */

/* s as an integer in [lo, hi] (vg_parse_int): 0, or -1. */
int golden_cli_parse_i32(const char *s, int32_t lo, int32_t hi, int32_t *out);
/* s as an unsigned 64-bit integer (strtoull base 0, no '-'): 0, or -1. */
int golden_cli_parse_u64(const char *s, uint64_t *out);
/* "1,2,3" into a malloc'ed list, each in [lo, hi]: 0, or -1. */
int golden_cli_parse_list(const char *s, int32_t lo, int32_t hi, int32_t **out, int32_t *count);
/* Prints "voltgate golden CMD: " fmt (with arg) " (try --help)" on stderr;
 * returns VG_EXIT_USAGE. */
int golden_cli_usage_error(const char *cmd, const char *fmt, const char *arg);

/* ---- golden files ----------------------------------------------------------------- */

/* Reads file into *f for `cmd`; 0, or -1 after printing the reader's one
 * line. */
int golden_cli_read(const char *cmd, const char *file, vg_golden_file *f);

/* A growing list of paths (malloc'ed copies). */
typedef struct path_list {
    char **items;
    size_t count, cap;
} path_list;
int golden_cli_list_add(path_list *l, const char *s);
void golden_cli_list_free(path_list *l);
/* qsort comparison of two char * by strcmp. */
int golden_cli_cmp_str(const void *a, const void *b);
/* Adds a file, or the *.h5 files of a folder (not recursing); 0, or -1
 * after printing why (cmd names the subcommand). */
int golden_cli_expand(const char *cmd, const char *arg, path_list *out);

/* ---- the subcommands: argv[0] is the subcommand's name ----------------------------- */

int cmd_golden_gen(int argc, char **argv);    /* cmd_golden_gen.c */
int cmd_golden_verify(int argc, char **argv); /* cmd_golden_verify.c */
int cmd_golden_import(int argc, char **argv); /* cmd_golden_import.c */
int cmd_golden_info(int argc, char **argv);   /* cmd_golden_info.c */
int cmd_golden_seal(int argc, char **argv);   /* cmd_golden_seal.c */

#endif
