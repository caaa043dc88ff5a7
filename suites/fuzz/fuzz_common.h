/*
 * Shared by the fuzz targets and by suites/test_fuzz_regressions.c, which
 * #includes each target to replay the kept crash inputs through exactly the
 * code the fuzzer ran.
 *
 * FUZZ_FAIL reports a broken invariant: under libFuzzer it aborts (a crash
 * the fuzzer keeps); the regression suite defines it to a cmocka failure
 * before including the targets.  Every file-scope name of a target carries
 * the target's prefix so that the regression suite can include them all.
 */
#ifndef VOLTGATE_FUZZ_COMMON_H
#define VOLTGATE_FUZZ_COMMON_H

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef FUZZ_FAIL
#define FUZZ_FAIL(...)                                   \
    do {                                                 \
        fprintf(stderr, "fuzz invariant broken: ");      \
        fprintf(stderr, __VA_ARGS__);                    \
        fprintf(stderr, "\n");                           \
        abort();                                         \
    } while (0)
#endif

/* A per-process scratch path (tmpfs when there is one) for targets whose
 * entry point takes a file name. */
static inline const char *fuzz_scratch_path(const char *tag, char *buf, size_t size)
{
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    snprintf(buf, size, "%s/vg-fuzz-%s-%ld", dir, tag, (long)getpid());
    return buf;
}

/* Writes bytes to path (truncating); 0 on failure. */
static inline int fuzz_write_file(const char *path, const void *data, size_t size)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return 0;
    const char *p = data;
    while (size) {
        ssize_t w = write(fd, p, size);
        if (w <= 0) {
            close(fd);
            return 0;
        }
        p += w;
        size -= (size_t)w;
    }
    return close(fd) == 0;
}

/* Reads a whole file (malloc'ed, NUL-terminated); NULL on failure. */
static inline char *fuzz_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
        if (got == 0)
            break;
        if (n + 1 == cap) {
            char *g = realloc(buf, cap * 2);
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) {
        buf[n] = '\0';
        if (len)
            *len = n;
    }
    return buf;
}

/* FNV-1a 64, written from its definition (not the runtime's copy), for
 * targets that repair a checksum so that mutations reach the parser. */
static inline uint64_t fuzz_fnv1a64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

#endif
