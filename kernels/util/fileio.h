/*
 * Small file and text helpers shared by every layer above the formats (the
 * LUT, the kernel_config and safetensors readers, the golden writer, the
 * voltgate program): one way to parse an integer, to open an input file, to
 * check an output path, to write a file atomically and to clear the
 * temporaries of dead writers.
 */
#ifndef VOLTGATE_FILEIO_H
#define VOLTGATE_FILEIO_H

#include <stddef.h>

#include "voltgate/status.h"

/* Parses the len bytes at s (the whole string when len is (size_t)-1) as a
 * decimal integer in [lo, hi]: an optional '-', then digits, nothing else (no
 * blanks, no '+', no trailing text, no overflow).  0 and *out set, or -1. */
int vg_parse_int(const char *s, size_t len, long long lo, long long hi, long long *out);

/* One item of a comma-separated list starting at s: *len is its length
 * (up to the next ',' or the end; 0 for an empty item, which callers
 * refuse by name); returns where the next item starts, NULL after the
 * last. */
const char *vg_list_item(const char *s, size_t *len);

/* Whether item is one of the comma-separated items of list, exactly (not a
 * prefix of one). */
int vg_list_has(const char *list, const char *item);

/* Opens path for reading without blocking on a FIFO (O_NONBLOCK, cleared
 * after the check) and refuses anything but a regular file, with a message
 * naming what it is ("is a folder, not a file", "is not a regular file (a
 * FIFO)").  what prefixes the message (e.g. "lut k.lut").  *fd on VG_OK. */
vg_status vg_open_regular_file(const char *what, const char *path, int *fd);

/* Reads the whole regular file at path (vg_open_regular_file) into a
 * malloc'ed buffer with a NUL after its *len bytes.  A file of more than
 * max_bytes is VG_ERR_LIMIT ("larger than 16 MiB"), refused on its size
 * before allocating.  Messages start with what. */
vg_status vg_read_whole_file(const char *what, const char *path, size_t max_bytes, char **buf,
                             size_t *len);

/* Checks, before any work, that a file can be written at path the way the
 * writers do (a temporary beside it, then rename): path is not empty and not
 * a folder, an existing path is a regular file, its folder exists, is a
 * folder and a file can be created in it (one is created and removed).
 * VG_ERR_IO with a message prefixed by what, else VG_OK. */
vg_status vg_check_output_path(const char *what, const char *path);

/* 1 where a and b both exist and are one file (the same device and inode:
 * links and other spellings of a path count), else 0.  A tool refuses an
 * output that is one of its inputs, which the write would destroy. */
int vg_same_file(const char *a, const char *b);

/* 1 where path exists and the folder holding it is dir (the same device
 * and inode), else 0: an output that would replace a file of an input
 * folder (a checkpoint's shard, a link into a cache). */
int vg_file_in_folder(const char *path, const char *dir);

/* Removes the temporaries `<file>.tmp.<pid>` that writers killed before
 * their rename left behind: those whose pid is not alive.  Best effort. */
void vg_remove_stale_temporaries(const char *file);

/* Shows every control character of msg as '?': names read from files and
 * paths may hold them, and a message stays one printable line. */
void vg_make_printable(char *msg);

/* vg_fail with the message made printable (vg_make_printable).  Returns s. */
vg_status vg_fail_one_line(vg_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Replaces path with the len bytes at data so that a reader, or the machine
 * after a crash, sees the old file or the new one, never a part: the bytes go
 * into `<path>.tmp.<pid>` (write(2), fsync(2)), which is renamed over path,
 * then the folder is synced so the rename itself lasts.  Temporaries of dead
 * writers are removed first (vg_remove_stale_temporaries).  before_rename,
 * when not NULL, is called with the temporary's name just before the rename
 * (tests kill the writer there).  On failure the temporary is removed, errno
 * holds the cause, and the VG_ERR_IO message, prefixed by what, names the
 * step ("cannot create T", "writing T (n of m bytes written)", "rename from
 * T") and the OS's reason; control characters in it are shown as '?', so
 * it stays one printable line. */
vg_status vg_write_file_atomic(const char *what, const char *path, const void *data, size_t len,
                               void (*before_rename)(const char *tmp));

#endif
