/*
 * What the golden files' writer (golden_write.c), reader (golden_read.c) and
 * seal (golden_seal.c) share: HDF5 error handling, the element types of each
 * family's datasets, the reader's checked attribute and dataset access
 * (golden_h5.c), and the seal's layout.  Internal to golden/.
 */
#ifndef VOLTGATE_GOLDEN_H5_H
#define VOLTGATE_GOLDEN_H5_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "voltgate/golden.h"

/* Datasets above this many bytes are chunked and compressed. */
#define COMPRESS_ABOVE_BYTES (64u * 1024u)
/* Target size of one chunk. */
#define CHUNK_TARGET_BYTES (256u * 1024u)
/* A recipe weight is rebuilt in memory: bound it harder than stored data. */
#define RECIPE_MAX_ELEMENTS ((size_t)1 << 26)
/* A filtered (compressed) dataset must store at least 1/STORAGE_MAX_RATIO of
 * the bytes it claims, less STORAGE_SLACK: deflate cannot compress more than
 * 1032:1 (a 258-byte match in no less than 2 bits), and shuffle does not
 * change the size, so no dataset this writer (or h5repack with deflate)
 * wrote is refused; unwritten chunks claiming hundreds of MiB are.  The
 * slack lets small damaged datasets reach the hash check. */
#define STORAGE_MAX_RATIO 1032
#define STORAGE_SLACK (1024.0 * 1024.0)

/* libhdf5 1.10 is not memory-safe on damaged files (fuzzing found a
 * use-after-free and a heap overflow under H5Aexists:
 * suites/fuzz/regressions/fuzz_golden/), so no byte of a golden file reaches
 * HDF5 before its integrity is known.  The writer puts SEAL_BYTES in front
 * of the HDF5 image, a user block in HDF5's terms: HDF5 looks for its
 * superblock at 0, 512, 1024, ... and takes addresses from where it finds
 * it, so h5dump and h5py read the file as before, and an edit through HDF5
 * keeps the block.  (H5Pset_userblock does not do this: the core driver's
 * H5Fget_file_image leaves the block out.)  The block is a text seal:
 *
 *     voltgate-golden-seal/1
 *     sha256 <64 hex digits of the SHA-256 of every byte after the seal>
 *     bytes <how many bytes follow the seal>
 *
 * padded with NUL bytes.  The reader checks the seal, with nothing but
 * read(2) and SHA-256, before the first HDF5 call. */
#define SEAL_BYTES 512
#define SEAL_MAGIC "voltgate-golden-seal/1\n"

/* Switches HDF5's automatic error printing off and restores it on exit, so
 * that a caller who had it on gets it back. */
typedef struct h5_quiet {
    H5E_auto2_t func;
    void *data;
} h5_quiet;
void golden_quiet_begin(h5_quiet *q);
void golden_quiet_end(const h5_quiet *q);

/* One line from HDF5's current error stack, which is then cleared (see
 * golden_h5.c). */
void golden_hdf5_message(char *buf, size_t len);

/* vg_fail with the file name in front; the message is made printable. */
vg_status golden_fail(const char *file, vg_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

typedef struct elem_type {
    int is_float;      /* H5T_FLOAT vs H5T_INTEGER */
    int is_signed;
    size_t size;       /* bytes */
    const char *format;/* the dataset's `format` attribute */
} elem_type;

static const elem_type T_F32 = {1, 1, 4, "f32"};
static const elem_type T_I32 = {0, 1, 4, "i32"};
static const elem_type T_FP16 = {0, 0, 2, "fp16"};

/* Element type of w_q, w_scale and w_zero for a family (from the family
 * table; {0, 0, 1, "?"} where the family has no such dataset). */
elem_type golden_wq_type(vg_family f);
elem_type golden_wscale_type(vg_family f);
elem_type golden_wzero_type(vg_family f);
/* The in-memory HDF5 type of an element type. */
hid_t golden_h5_mem_type(const elem_type *t);

/* The L2 norm of y, which the writer stores beside each y_ref and the
 * reader checks. */
double golden_norm2(const float *y, size_t count);

/* Fills image[0, SEAL_BYTES) with the seal of image[SEAL_BYTES, len). */
void golden_seal_image(uint8_t *image, size_t len);
/* VG_OK with *unsealed = 0 when file's seal holds, VG_OK with *unsealed = 1
 * when the file carries no seal at all, else why not (golden_seal.c). */
vg_status golden_check_seal(const char *file, int *unsealed);

typedef struct reader {
    const char *file;
    hid_t fid;
    size_t total_bytes;   /* allocated so far, bounded */
    unsigned flags;       /* VG_GOLDEN_READ_* */
} reader;

/* The reader's checked access (golden_h5.c): each one checks type, range,
 * rank and extents and fails naming `where` and `name`. */
vg_status golden_rfail_h5(reader *r, vg_status s, const char *what);
vg_status golden_get_ints(reader *r, hid_t loc, const char *where, const char *name,
                          int64_t *out, hssize_t count, int is_unsigned64);
vg_status golden_get_i32(reader *r, hid_t loc, const char *where, const char *name,
                         int64_t lo, int64_t hi, int32_t *out);
vg_status golden_get_f64(reader *r, hid_t loc, const char *where, const char *name,
                         double *out);
vg_status golden_get_str(reader *r, hid_t loc, const char *where, const char *name, char *buf,
                         size_t len);
vg_status golden_open_dataset(reader *r, hid_t loc, const char *where, const char *name,
                              const elem_type *t, int rank, const hsize_t *want, hid_t *ds_out,
                              size_t *bytes_out);
vg_status golden_get_dataset(reader *r, hid_t loc, hid_t hash_loc, const char *where,
                             const char *name, const elem_type *t, int rank,
                             const hsize_t *want, void **out);

#endif
