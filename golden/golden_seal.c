/*
 * The seal in front of every golden file (its layout: golden_h5.h): made
 * by the writer, checked by the reader with nothing but read(2) and SHA-256
 * before the first HDF5 call, and renewed by `voltgate golden seal`.
 */
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "golden_h5.h"
#include "sha256.h"
#include "voltgate/quant.h"

/* ---- the seal ----------------------------------------------------------------- */


static const uint8_t hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* Fills image[0, SEAL_BYTES) with the seal of image[SEAL_BYTES, len). */
void golden_seal_image(uint8_t *image, size_t len)
{
    char hex[65];
    vg_sha256_hex(image + SEAL_BYTES, len - SEAL_BYTES, hex);
    memset(image, 0, SEAL_BYTES);
    snprintf((char *)image, SEAL_BYTES, SEAL_MAGIC "sha256 %s\nbytes %zu\n", hex,
             len - SEAL_BYTES);
}

/* Reads up to len bytes, fewer only at the end of the file; *got says how
 * many.  Returns 0 or an errno. */
static int read_up_to(int fd, void *buf, size_t len, size_t *got)
{
    *got = 0;
    while (*got < len) {
        ssize_t n = read(fd, (uint8_t *)buf + *got, len - *got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno;
        if (n == 0)
            break;
        *got += (size_t)n;
    }
    return 0;
}

/* Checks file's seal: VG_OK when it is sealed and intact, or when it holds
 * no seal but an HDF5 signature at byte 0 (*unsealed = 1); else the reason. */
vg_status golden_check_seal(const char *file, int *unsealed)
{
    *unsealed = 0;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return golden_fail(file, VG_ERR_IO, "cannot open: %s", strerror(errno));
    uint8_t head[SEAL_BYTES];
    size_t got = 0;
    int err = read_up_to(fd, head, sizeof head, &got);
    if (err) {
        close(fd);
        return golden_fail(file, VG_ERR_IO, "reading: %s", strerror(err));
    }
    if (got >= sizeof hdf5_signature && !memcmp(head, hdf5_signature, sizeof hdf5_signature)) {
        close(fd);
        *unsealed = 1;
        return VG_OK;
    }
    if (got < sizeof head || memcmp(head, SEAL_MAGIC, strlen(SEAL_MAGIC)) != 0) {
        /* A seal overwritten in place leaves the HDF5 image behind it. */
        uint8_t sig[sizeof hdf5_signature];
        size_t sgot = 0;
        int at_seal_end = got == sizeof head &&
                          !read_up_to(fd, sig, sizeof sig, &sgot) && sgot == sizeof sig &&
                          !memcmp(sig, hdf5_signature, sizeof sig);
        close(fd);
        if (at_seal_end)
            return golden_fail(file, VG_ERR_FORMAT,
                               "damaged: its first %d bytes, where the voltgate "
                               "seal belongs, hold no seal; an HDF5 signature follows "
                               "at byte %d (the seal was overwritten)",
                               SEAL_BYTES, SEAL_BYTES);
        return golden_fail(file, VG_ERR_FORMAT,
                           "not an HDF5 file (no HDF5 signature found, and no "
                           "voltgate seal at its start)");
    }
    /* The seal's text must be exactly what golden_seal_image writes: bytes is
     * plain digits (sscanf's %llu would take "-5" and wrap it). */
    char want_hex[65] = "";
    unsigned long long want_bytes = 0;
    int used = 0, digits_at = 0, digits_end = 0;
    const char *text = (const char *)head + strlen(SEAL_MAGIC);
    long long parsed = 0;
    if (!memchr(head, '\0', sizeof head) ||
        sscanf(text, "sha256 %64[0-9a-f]\nbytes %n%*[0-9]%n\n%n", want_hex, &digits_at,
               &digits_end, &used) != 1 ||
        used == 0 || strlen(want_hex) != 64 ||
        vg_parse_int(text + digits_at, (size_t)(digits_end - digits_at), 0, LLONG_MAX,
                     &parsed) != 0) {
        close(fd);
        return golden_fail(file, VG_ERR_FORMAT,
                           "damaged: its voltgate seal (the first %d bytes) does not "
                           "parse",
                           SEAL_BYTES);
    }
    want_bytes = (unsigned long long)parsed;
    /* The size first: a file of the wrong length is refused without
     * reading it (a large one would take seconds to hash). */
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (unsigned long long)sb.st_size - SEAL_BYTES != want_bytes) {
        close(fd);
        return golden_fail(file, VG_ERR_FORMAT,
                           "damaged or edited: %llu bytes follow the seal, the "
                           "seal says %llu (`voltgate golden seal` re-seals an intended "
                           "edit)",
                           (unsigned long long)sb.st_size - SEAL_BYTES, want_bytes);
    }
    vg_sha256_ctx c;
    vg_sha256_init(&c);
    uint8_t buf[1 << 16];
    unsigned long long have = 0;
    size_t n = 0;
    while (!(err = read_up_to(fd, buf, sizeof buf, &n)) && n > 0) {
        vg_sha256_update(&c, buf, n);
        have += n;
    }
    close(fd);
    if (err)
        return golden_fail(file, VG_ERR_IO, "reading: %s", strerror(err));
    if (have != want_bytes)
        return golden_fail(file, VG_ERR_FORMAT,
                           "damaged or edited: %llu bytes follow the seal, the seal "
                           "says %llu (`voltgate golden seal` re-seals an intended "
                           "edit)",
                           have, want_bytes);
    uint8_t digest[32];
    char hex[65];
    vg_sha256_final(&c, digest);
    vg_sha256_to_hex(digest, hex);
    if (strcmp(hex, want_hex) != 0)
        return golden_fail(file, VG_ERR_FORMAT,
                           "damaged or edited: the SHA-256 of its HDF5 image is "
                           "%.16s..., its seal says %.16s... (`voltgate golden seal` "
                           "re-seals an intended edit)",
                           hex, want_hex);
    return VG_OK;
}

vg_status vg_golden_seal(const char *file)
{
    if (!file)
        return vg_fail(VG_ERR_INVALID_ARG, "golden seal: NULL argument");
    int unsealed = 0;
    vg_status st = golden_check_seal(file, &unsealed);
    if (st == VG_OK && !unsealed)
        return VG_OK;   /* sealed and intact: nothing to do */
    if (unsealed) {
        /* written before seals: read it (the caller has checked it) and
         * write it again, which seals it */
        vg_golden_file f;
        if ((st = vg_golden_read_flags(file, VG_GOLDEN_READ_NO_SEAL, &f)) != VG_OK)
            return st;
        st = vg_golden_write(file, &f);
        vg_golden_free(&f);
        return st;
    }
    /* a sealed file whose bytes changed after sealing: seal what is there */
    struct stat sb;
    if (stat(file, &sb) != 0)
        return golden_fail(file, VG_ERR_IO, "cannot open: %s", strerror(errno));
    if (!S_ISREG(sb.st_mode) || sb.st_size <= SEAL_BYTES ||
        (unsigned long long)sb.st_size > 4 * (unsigned long long)VG_GOLDEN_MAX_DATASET_BYTES)
        return st;   /* golden_check_seal said why */
    FILE *fp = fopen(file, "rb");
    if (!fp)
        return golden_fail(file, VG_ERR_IO, "cannot open: %s", strerror(errno));
    size_t len = (size_t)sb.st_size;
    uint8_t *image = malloc(len);
    size_t got = image ? fread(image, 1, len, fp) : 0;
    fclose(fp);
    if (!image)
        return golden_fail(file, VG_ERR_NO_MEMORY, "out of memory for %zu bytes", len);
    if (got != len) {
        free(image);
        return golden_fail(file, VG_ERR_IO, "changed while being sealed");
    }
    if (memcmp(image, SEAL_MAGIC, strlen(SEAL_MAGIC)) != 0) {
        free(image);
        return st;   /* not a voltgate file at all: golden_check_seal said why */
    }
    golden_seal_image(image, len);
    st = vg_write_file_atomic(file, file, image, len, NULL);
    free(image);
    return st;
}
