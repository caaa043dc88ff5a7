/*
 * Golden case files: the HDF5 writer and the validating reader.
 * golden/SCHEMA.md is the layout; this file must follow it.
 *
 * The reader trusts nothing: every attribute is checked for type and range,
 * every dataset for presence, type class, element size, signedness, rank and
 * extents (against the attributes) and for its SHA-256 before the data is
 * handed out.  Sizes are bounded before anything is allocated.  HDF5's own
 * error printing is switched off for the duration of each call; when an
 * HDF5 call fails, its error stack is walked into the one-line message.
 */
#include "voltgate/golden.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <limits.h>
#include <stdint.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "sha256.h"
#include "voltgate/quant.h"

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

/* ---- HDF5 error handling ------------------------------------------------------ */

/* Switches HDF5's automatic error printing off and restores it on exit, so
 * that a caller who had it on gets it back. */
typedef struct h5_quiet {
    H5E_auto2_t func;
    void *data;
} h5_quiet;

static void quiet_begin(h5_quiet *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

static void quiet_end(const h5_quiet *q)
{
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, q->func, q->data);
}

typedef struct stack_walk {
    char inner[200];  /* the most specific error (where it began) */
    char outer[200];  /* the API-level error */
    char os[128];     /* the operating system's reason, when HDF5 quotes one */
} stack_walk;

/* HDF5's low-level I/O errors read "file write failed: time = Wed Dec  2
 * 17:12:19 2026, filename = '...', file descriptor = 3, errno = 28, error
 * message = 'No space left on device', buf = 0x55..., ...": keep the words
 * before the first of those details, and the quoted OS reason apart. */
static void clean_desc(const char *desc, char *out, size_t len, char *os, size_t os_len)
{
    static const char *const cuts[] = {": time = ", ", time = ", " time = ", ", errno = ",
                                       " errno = ", ", filename = "};
    size_t keep = strlen(desc);
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        const char *at = strstr(desc, cuts[i]);
        if (at && (size_t)(at - desc) < keep)
            keep = (size_t)(at - desc);
    }
    snprintf(out, len, "%.*s", (int)keep, desc);
    const char *m = strstr(desc, "error message = '");
    if (m && !os[0]) {
        m += strlen("error message = '");
        const char *q = strchr(m, '\'');
        size_t n = q ? (size_t)(q - m) : strlen(m);
        snprintf(os, os_len, "%.*s", (int)n, m);
    }
}

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *data)
{
    stack_walk *w = data;
    const char *desc = e->desc ? e->desc : "";
    char clean[200];
    clean_desc(desc, clean, sizeof clean, w->os, sizeof w->os);
    if (n == 0)
        snprintf(w->inner, sizeof w->inner, "%s", clean);
    snprintf(w->outer, sizeof w->outer, "%s", clean);
    return 0;
}

/* One line from HDF5's current error stack, which is then cleared.  When
 * the stack quotes an OS error, the line ends with it (and never holds the
 * timestamps, descriptors and buffer addresses of HDF5's raw text). */
static void hdf5_message(char *buf, size_t len)
{
    stack_walk w;
    w.inner[0] = w.outer[0] = w.os[0] = '\0';
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, walk_cb, &w);
    H5Eclear2(H5E_DEFAULT);
    if (w.os[0])
        snprintf(buf, len, "%s (%s)", w.os, w.inner[0] ? w.inner : w.outer);
    else if (!w.inner[0] && !w.outer[0])
        snprintf(buf, len, "HDF5 call failed");
    else if (!strcmp(w.inner, w.outer) || !w.outer[0])
        snprintf(buf, len, "%s", w.inner);
    else
        snprintf(buf, len, "%s (%s)", w.outer, w.inner);
    /* messages end in newlines or carry them inside: keep the one line */
    for (char *p = buf; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
}

/* vg_fail with the file name in front. */
static vg_status ffail(const char *file, vg_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static vg_status ffail(const char *file, vg_status s, const char *fmt, ...)
{
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vg_make_printable(msg);
    return vg_fail(s, "%s: %s", file, msg);
}

/* ---- element formats of each family ---------------------------------------------- */

typedef struct elem_type {
    int is_float;      /* H5T_FLOAT vs H5T_INTEGER */
    int is_signed;
    size_t size;       /* bytes */
    const char *format;/* the dataset's `format` attribute */
} elem_type;

static const elem_type T_F32 = {1, 1, 4, "f32"};
static const elem_type T_I32 = {0, 1, 4, "i32"};
static const elem_type T_FP16 = {0, 0, 2, "fp16"};

/* Element type of w_q and w_scale for a family, and the element counts of
 * their last dimension per row. */
static elem_type wq_type(vg_family f)
{
    switch (f) {
    case VG_FAMILY_FP16: return (elem_type){0, 0, 2, "fp16"};
    case VG_FAMILY_FP8: return (elem_type){0, 0, 1, "e4m3"};
    case VG_FAMILY_AWQ: return (elem_type){0, 0, 4, "awq_int4x8"};
    case VG_FAMILY_MXFP4:
    case VG_FAMILY_NVFP4: return (elem_type){0, 0, 1, "e2m1x2"};
    default: return (elem_type){0, 0, 1, "?"};
    }
}

static elem_type wscale_type(vg_family f)
{
    switch (f) {
    case VG_FAMILY_FP8: return (elem_type){1, 1, 4, "f32"};
    case VG_FAMILY_AWQ: return (elem_type){0, 0, 2, "fp16"};
    case VG_FAMILY_MXFP4: return (elem_type){0, 0, 1, "e8m0"};
    case VG_FAMILY_NVFP4: return (elem_type){0, 0, 1, "e4m3"};
    default: return (elem_type){0, 0, 1, "?"};
    }
}

static hid_t h5_file_type(const elem_type *t)
{
    if (t->is_float)
        return H5T_IEEE_F32LE;
    switch (t->size) {
    case 1: return t->is_signed ? H5T_STD_I8LE : H5T_STD_U8LE;
    case 2: return t->is_signed ? H5T_STD_I16LE : H5T_STD_U16LE;
    case 4: return t->is_signed ? H5T_STD_I32LE : H5T_STD_U32LE;
    default: return H5T_STD_U64LE;
    }
}

static hid_t h5_mem_type(const elem_type *t)
{
    if (t->is_float)
        return H5T_NATIVE_FLOAT;
    switch (t->size) {
    case 1: return t->is_signed ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8;
    case 2: return t->is_signed ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16;
    case 4: return t->is_signed ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32;
    default: return H5T_NATIVE_UINT64;
    }
}

static const char *type_name(int is_float, int is_signed, size_t size, char *buf, size_t len)
{
    snprintf(buf, len, "%s%zu", is_float ? "float" : is_signed ? "int" : "uint", size * 8);
    return buf;
}

/* ---- the in-memory file ----------------------------------------------------------- */

vg_weight vg_golden_weight(const vg_golden_file *f)
{
    vg_weight w;
    memset(&w, 0, sizeof w);
    w.family = f->family;
    w.n = f->n;
    w.k = f->k;
    w.groups = f->groups;
    w.q = f->w_q;
    w.scale = f->w_scale;
    w.zero = f->w_zero;
    w.tensor_scale = f->family == VG_FAMILY_NVFP4 ? f->w_tensor_scale : 1.0f;
    return w;
}

vg_status vg_golden_free(vg_golden_file *f)
{
    if (!f)
        return VG_OK;
    free(f->w_q);
    free(f->w_scale);
    free(f->w_zero);
    free(f->w_dequant);
    free(f->provenance);
    for (int32_t i = 0; i < f->ncases && f->cases; i++) {
        free(f->cases[i].tokens);
        free(f->cases[i].offsets);
        free(f->cases[i].x);
        free(f->cases[i].y_ref);
    }
    free(f->cases);
    memset(f, 0, sizeof *f);
    return VG_OK;
}

static double norm2(const float *y, size_t count)
{
    double s = 0.0;
    for (size_t i = 0; i < count; i++)
        s += (double)y[i] * (double)y[i];
    return sqrt(s);
}

/* ======================================================================= writer */

typedef struct writer {
    const char *file;  /* the final name, for messages */
    hid_t fid;
    vg_status st;      /* first failure; later calls do nothing */
} writer;

static void wfail_h5(writer *w, const char *what)
{
    if (w->st != VG_OK)
        return;
    char msg[420];
    hdf5_message(msg, sizeof msg);
    w->st = ffail(w->file, VG_ERR_IO, "writing %s: %s", what, msg);
}

static void put_attr(writer *w, hid_t loc, const char *name, hid_t type, int rank,
                     const hsize_t *dims, const void *value)
{
    if (w->st != VG_OK)
        return;
    hid_t space = rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims, NULL);
    hid_t attr = space < 0 ? -1 : H5Acreate2(loc, name, type, space, H5P_DEFAULT, H5P_DEFAULT);
    if (attr < 0 || H5Awrite(attr, type, value) < 0) {
        char what[96];
        snprintf(what, sizeof what, "attribute '%s'", name);
        wfail_h5(w, what);
    }
    if (attr >= 0)
        H5Aclose(attr);
    if (space >= 0)
        H5Sclose(space);
}

static void put_str(writer *w, hid_t loc, const char *name, const char *value)
{
    if (w->st != VG_OK)
        return;
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(value) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    put_attr(w, loc, name, t, 0, NULL, value);
    H5Tclose(t);
}

static void put_i32(writer *w, hid_t loc, const char *name, int32_t v)
{
    put_attr(w, loc, name, H5T_STD_I32LE, 0, NULL, &v);
}

static void put_u64(writer *w, hid_t loc, const char *name, uint64_t v)
{
    put_attr(w, loc, name, H5T_STD_U64LE, 0, NULL, &v);
}

static void put_f64(writer *w, hid_t loc, const char *name, double v)
{
    put_attr(w, loc, name, H5T_IEEE_F64LE, 0, NULL, &v);
}

/* Writes a dataset with its `format` attribute and its hash attribute
 * `sha256_<name>` on hash_loc.  Above COMPRESS_ABOVE_BYTES: chunked (whole
 * trailing rows, about CHUNK_TARGET_BYTES per chunk), shuffle + deflate 6. */
static void put_dataset(writer *w, hid_t loc, hid_t hash_loc, const char *name,
                        const elem_type *t, int rank, const hsize_t *dims, const void *data)
{
    if (w->st != VG_OK)
        return;
    size_t count = 1;
    for (int i = 0; i < rank; i++)
        count *= (size_t)dims[i];
    size_t bytes = count * t->size;

    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_obj_track_times(dcpl, 0); /* no timestamps: byte-identical files */
    if (bytes > COMPRESS_ABOVE_BYTES) {
        /* chunk = the last dimension whole, as many rows of the others as
         * fit the target, splitting the outermost dimensions first */
        hsize_t chunk[8];
        for (int i = 0; i < rank; i++)
            chunk[i] = dims[i];
        size_t cbytes = bytes;
        for (int i = 0; i < rank - 1 && cbytes > CHUNK_TARGET_BYTES; i++) {
            size_t inner = cbytes / (size_t)chunk[i];
            hsize_t rows = inner >= CHUNK_TARGET_BYTES ? 1 : CHUNK_TARGET_BYTES / inner;
            if (rows < 1)
                rows = 1;
            if (rows > chunk[i])
                rows = chunk[i];
            chunk[i] = rows;
            cbytes = inner * (size_t)rows;
        }
        H5Pset_chunk(dcpl, rank, chunk);
        H5Pset_shuffle(dcpl);
        H5Pset_deflate(dcpl, 6);
    }
    hid_t space = H5Screate_simple(rank, dims, NULL);
    hid_t ds = H5Dcreate2(loc, name, h5_file_type(t), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    char what[96];
    snprintf(what, sizeof what, "dataset '%s'", name);
    if (ds < 0 || H5Dwrite(ds, h5_mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
        wfail_h5(w, what);
    if (ds >= 0) {
        put_str(w, ds, "format", t->format);
        H5Dclose(ds);
    }
    H5Sclose(space);
    H5Pclose(dcpl);

    char hex[65], attr[96];
    vg_sha256_hex(data, bytes, hex);
    snprintf(attr, sizeof attr, "sha256_%s", name);
    put_str(w, hash_loc, attr, hex);
}

static const char *dtype_name(vg_dtype t) { return t == VG_DTYPE_F16 ? "f16" : "f32"; }

/* One dataset of `elems` elements of `size` bytes against the bound;
 * adds its bytes to *total. */
static vg_status bound_dataset(const char *label, const char *name, size_t elems, size_t size,
                               size_t *total)
{
    if (elems > VG_GOLDEN_MAX_DATASET_BYTES / size)
        return vg_fail(VG_ERR_LIMIT, "%s: dataset '%s': %zu elements exceed the %zu MiB bound",
                       label, name, elems, VG_GOLDEN_MAX_DATASET_BYTES >> 20);
    *total += elems * size;
    return VG_OK;
}

vg_status vg_golden_check_bounds(const char *label, const vg_golden_file *f)
{
    if (!label || !f)
        return vg_fail(VG_ERR_INVALID_ARG, "golden bounds: NULL argument");
    size_t total = 0, g = (size_t)(f->groups > 0 ? f->groups : 1);
    size_t nk = (size_t)f->n * (size_t)f->k;
    vg_status st = VG_OK;
    if (f->n > 0 && f->k > 0 && nk / (size_t)f->n == (size_t)f->k && nk <= SIZE_MAX / g) {
        /* A recipe weight stores no dataset; it is rebuilt in memory under
         * RECIPE_MAX_ELEMENTS, which is the same bound counted in floats. */
        size_t recipe_total = 0;
        st = bound_dataset(label, "w_dequant", g * nk, sizeof(float),
                           f->weights_stored ? &total : &recipe_total);
        const vg_weight_layout *l = &f->layout;
        if (st == VG_OK && f->weights_stored && l->q_bytes)
            st = bound_dataset(label, "w_q", g * l->q_bytes, 1, &total);
        if (st == VG_OK && f->weights_stored && l->scale_bytes)
            st = bound_dataset(label, "w_scale", g * l->scale_bytes, 1, &total);
        if (st == VG_OK && f->weights_stored && l->zero_bytes)
            st = bound_dataset(label, "w_zero", g * l->zero_bytes, 1, &total);
    } else {
        st = vg_fail(VG_ERR_LIMIT, "%s: weight of %d x %d x %d elements is past every bound",
                     label, (int)f->groups, (int)f->n, (int)f->k);
    }
    for (int32_t i = 0; st == VG_OK && f->cases && i < f->ncases; i++) {
        size_t m = (size_t)(f->cases[i].m > 0 ? f->cases[i].m : 0);
        st = bound_dataset(label, "x", m * (size_t)f->k, sizeof(uint16_t), &total);
        if (st == VG_OK)
            st = bound_dataset(label, "y_ref", m * (size_t)f->n, sizeof(float), &total);
    }
    if (st == VG_OK && total > 4 * VG_GOLDEN_MAX_DATASET_BYTES)
        st = vg_fail(VG_ERR_LIMIT, "%s: the datasets take %zu bytes, past the %zu MiB bound of "
                     "a file", label, total, (4 * VG_GOLDEN_MAX_DATASET_BYTES) >> 20);
    return st;
}

/* What the reader refuses, the writer refuses before writing it. */
static vg_status check_before_write(const char *file, const vg_golden_file *f)
{
    if (!vg_family_name(f->family) || !vg_path_name(f->path))
        return ffail(file, VG_ERR_INVALID_ARG, "invalid family %d or path %d", (int)f->family,
                     (int)f->path);
    if (f->groups < 1 || (f->path == VG_PATH_DENSE && f->groups != 1))
        return ffail(file, VG_ERR_INVALID_ARG, "groups=%d invalid for path %s", (int)f->groups,
                     vg_path_name(f->path));
    if (f->ncases < 1 || !f->cases)
        return ffail(file, VG_ERR_INVALID_ARG, "no cases to write");
    if (!f->w_dequant || (f->weights_stored && !f->w_q))
        return ffail(file, VG_ERR_INVALID_ARG, "weight buffers missing");
    for (int32_t i = 0; i < f->ncases; i++) {
        const vg_golden_case *c = &f->cases[i];
        if (!c->name[0] || !c->x || !c->y_ref || !c->tokens ||
            (f->path != VG_PATH_DENSE && !c->offsets))
            return ffail(file, VG_ERR_INVALID_ARG, "case %d is incomplete", (int)i);
        if (!(isfinite(c->tol_rel_rms) && isfinite(c->tol_max_abs) && c->tol_rel_rms > 0 &&
              c->tol_rel_rms < 1 && c->tol_max_abs > 0))
            return ffail(file, VG_ERR_INVALID_ARG,
                         "case '%s': tolerances tol_rel_rms %g / tol_max_abs %g are not sane "
                         "(finite, 0 < rel < 1, abs > 0)",
                         c->name, c->tol_rel_rms, c->tol_max_abs);
        size_t mn = (size_t)c->m * (size_t)f->n;
        for (size_t j = 0; j < mn; j++)
            if (!isfinite(c->y_ref[j]))
                return ffail(file, VG_ERR_INVALID_ARG, "case '%s': y_ref element %zu is not finite",
                             c->name, j);
    }
    vg_status st = vg_golden_check_bounds(file, f);
    if (st != VG_OK)
        return st;
    if (f->w_dequant) {
        size_t welems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
        for (size_t i = 0; i < welems; i++)
            if (!isfinite(f->w_dequant[i]))
                return ffail(file, VG_ERR_INVALID_ARG, "w_dequant element %zu is not finite", i);
    }
    return VG_OK;
}

/* ---- the seal ----------------------------------------------------------------- */

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

static const uint8_t hdf5_signature[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* Fills image[0, SEAL_BYTES) with the seal of image[SEAL_BYTES, len). */
static void seal_image(uint8_t *image, size_t len)
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
static vg_status check_seal(const char *file, int *unsealed)
{
    *unsealed = 0;
    int fd = open(file, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return ffail(file, VG_ERR_IO, "cannot open: %s", strerror(errno));
    uint8_t head[SEAL_BYTES];
    size_t got = 0;
    int err = read_up_to(fd, head, sizeof head, &got);
    if (err) {
        close(fd);
        return ffail(file, VG_ERR_IO, "reading: %s", strerror(err));
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
            return ffail(file, VG_ERR_FORMAT, "damaged: its first %d bytes, where the voltgate "
                                       "seal belongs, hold no seal; an HDF5 signature follows "
                                       "at byte %d (the seal was overwritten)",
                         SEAL_BYTES, SEAL_BYTES);
        return ffail(file, VG_ERR_FORMAT, "not an HDF5 file (no HDF5 signature found, and no "
                                   "voltgate seal at its start)");
    }
    /* The seal's text must be exactly what seal_image writes: bytes is
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
        return ffail(file, VG_ERR_FORMAT, "damaged: its voltgate seal (the first %d bytes) does not "
                                   "parse", SEAL_BYTES);
    }
    want_bytes = (unsigned long long)parsed;
    /* The size first: a file of the wrong length is refused without
     * reading it (a large one would take seconds to hash). */
    struct stat sb;
    if (fstat(fd, &sb) == 0 && (unsigned long long)sb.st_size - SEAL_BYTES != want_bytes) {
        close(fd);
        return ffail(file, VG_ERR_FORMAT, "damaged or edited: %llu bytes follow the seal, the "
                                   "seal says %llu (`voltgate golden seal` re-seals an intended "
                                   "edit)", (unsigned long long)sb.st_size - SEAL_BYTES,
                     want_bytes);
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
        return ffail(file, VG_ERR_IO, "reading: %s", strerror(err));
    if (have != want_bytes)
        return ffail(file, VG_ERR_FORMAT, "damaged or edited: %llu bytes follow the seal, the seal "
                                   "says %llu (`voltgate golden seal` re-seals an intended "
                                   "edit)", have, want_bytes);
    uint8_t digest[32];
    char hex[65];
    vg_sha256_final(&c, digest);
    vg_sha256_to_hex(digest, hex);
    if (strcmp(hex, want_hex) != 0)
        return ffail(file, VG_ERR_FORMAT, "damaged or edited: the SHA-256 of its HDF5 image is "
                                   "%.16s..., its seal says %.16s... (`voltgate golden seal` "
                                   "re-seals an intended edit)", hex, want_hex);
    return VG_OK;
}

/* The temporary a writer of `file` uses: `<file>.tmp.<pid>`. */
static vg_status temp_name(const char *file, char *tmp, size_t size)
{
    if ((size_t)snprintf(tmp, size, "%s.tmp.%ld", file, (long)getpid()) >= size)
        return vg_fail(VG_ERR_INVALID_ARG, "golden write: file name too long: %s", file);
    return VG_OK;
}

/* Replaces `file` with the image atomically (vg_write_file_atomic); the
 * message starts with the file's name as every other of this file's. */
static vg_status publish_image(const char *file, const void *image, size_t len)
{
    return vg_write_file_atomic(file, file, image, len, NULL);
}

vg_status vg_golden_write(const char *file, const vg_golden_file *f)
{
    if (!file || !f)
        return vg_fail(VG_ERR_INVALID_ARG, "golden write: NULL argument");
    vg_status st = check_before_write(file, f);
    if (st != VG_OK)
        return st;
    vg_weight_layout lay;
    if ((st = vg_weight_layout_of(f->family, f->n, f->k, &lay)) != VG_OK)
        return ffail(file, st, "%s", vg_last_error());

    char tmp[4096];
    if ((st = temp_name(file, tmp, sizeof tmp)) != VG_OK)
        return st;

    /* The file is built in memory (HDF5's core driver, no backing store)
     * and written out by publish_image below: every disk error is then ours,
     * with the OS's reason (Not a directory, Read-only file system,
     * Operation not permitted, No space left on device, File too large) in
     * one line, and HDF5 never holds a file whose close failed (with the
     * sec2 driver, a failed H5Fclose on a full disk left the file in HDF5's
     * ID table and the process crashed at exit in H5_term_library). */
    h5_quiet q;
    quiet_begin(&q);
    writer w = {file, -1, VG_OK};
    hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
    hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
    H5Pset_obj_track_times(fcpl, 0);
    H5Pset_fapl_core(fapl, (size_t)1 << 20, 0);
    w.fid = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl);
    H5Pclose(fapl);
    H5Pclose(fcpl);
    if (w.fid < 0) {
        char msg[420];
        hdf5_message(msg, sizeof msg);
        quiet_end(&q);
        return ffail(file, VG_ERR_IO, "cannot create %s in memory: %s", tmp, msg);
    }
    hid_t root = w.fid;
    const hsize_t G = (hsize_t)f->groups, N = (hsize_t)f->n, K = (hsize_t)f->k;

    /* root attributes */
    put_i32(&w, root, "schema_version", VG_GOLDEN_SCHEMA_VERSION);
    put_str(&w, root, "generator", f->generator[0] ? f->generator : VG_GOLDEN_GENERATOR);
    put_str(&w, root, "source", f->source[0] ? f->source : "synthetic");
    if (f->provenance)
        put_str(&w, root, "provenance", f->provenance);
    put_str(&w, root, "family", vg_family_name(f->family));
    put_str(&w, root, "path", vg_path_name(f->path));
    put_i32(&w, root, "N", f->n);
    put_i32(&w, root, "K", f->k);
    put_i32(&w, root, "groups", f->groups);
    put_u64(&w, root, "seed", f->seed);
    put_str(&w, root, "weights", f->weights_stored ? "stored" : "recipe");
    /* informational (SCHEMA.md, "Distribution"); the reader does not rely on it */
    put_str(&w, root, "distribution",
            strcmp(f->source[0] ? f->source : "synthetic", "synthetic") == 0
                ? "w: " VG_GOLDEN_W_DIST "; x: " VG_GOLDEN_X_DIST
                : "w: imported; x: " VG_GOLDEN_X_DIST);
    put_i32(&w, root, "cases", f->ncases);

    /* the weight */
    const elem_type tq = wq_type(f->family), ts = wscale_type(f->family);
    hsize_t dq[3] = {G, N, (hsize_t)(lay.q_bytes / (size_t)N / tq.size)};
    hsize_t dsc[3] = {G, (hsize_t)lay.scale_rows, (hsize_t)lay.scale_cols};
    hsize_t dw[3] = {G, N, K}, one = 1;
    if (f->weights_stored) {
        put_dataset(&w, root, root, "w_q", &tq, 3, dq, f->w_q);
        if (lay.scale_bytes)
            put_dataset(&w, root, root, "w_scale", &ts, 3, dsc, f->w_scale);
        if (lay.zero_bytes)
            put_dataset(&w, root, root, "w_zero", &T_FP16, 3, dsc, f->w_zero);
        if (f->family == VG_FAMILY_NVFP4)
            put_dataset(&w, root, root, "w_tensor_scale", &T_F32, 1, &one, &f->w_tensor_scale);
        put_dataset(&w, root, root, "w_dequant", &T_F32, 3, dw, f->w_dequant);
    } else {
        /* recipe: only the hashes of what the reader will rebuild */
        char hex[65];
        vg_sha256_hex(f->w_q, (size_t)G * lay.q_bytes, hex);
        put_str(&w, root, "sha256_w_q", hex);
        if (lay.scale_bytes) {
            vg_sha256_hex(f->w_scale, (size_t)G * lay.scale_bytes, hex);
            put_str(&w, root, "sha256_w_scale", hex);
        }
        if (lay.zero_bytes) {
            vg_sha256_hex(f->w_zero, (size_t)G * lay.zero_bytes, hex);
            put_str(&w, root, "sha256_w_zero", hex);
        }
        if (f->family == VG_FAMILY_NVFP4) {
            vg_sha256_hex(&f->w_tensor_scale, sizeof(float), hex);
            put_str(&w, root, "sha256_w_tensor_scale", hex);
        }
        vg_sha256_hex(f->w_dequant, (size_t)(G * N * K) * sizeof(float), hex);
        put_str(&w, root, "sha256_w_dequant", hex);
    }

    /* the cases */
    hid_t gcpl = H5Pcreate(H5P_GROUP_CREATE);
    H5Pset_obj_track_times(gcpl, 0);
    hid_t cases = w.st == VG_OK ? H5Gcreate2(root, "cases", H5P_DEFAULT, gcpl, H5P_DEFAULT) : -1;
    if (w.st == VG_OK && cases < 0)
        wfail_h5(&w, "group 'cases'");
    for (int32_t i = 0; i < f->ncases && w.st == VG_OK; i++) {
        const vg_golden_case *c = &f->cases[i];
        hid_t cg = H5Gcreate2(cases, c->name, H5P_DEFAULT, gcpl, H5P_DEFAULT);
        if (cg < 0) {
            char what[96];
            snprintf(what, sizeof what, "group 'cases/%s'", c->name);
            wfail_h5(&w, what);
            break;
        }
        const hsize_t M = (hsize_t)c->m;
        int32_t tpg = c->tokens[0];
        for (int32_t g = 1; g < f->groups; g++)
            if (c->tokens[g] != tpg)
                tpg = -1;
        put_i32(&w, cg, "M", c->m);
        put_attr(&w, cg, "tokens", H5T_STD_I32LE, 1, &G, c->tokens);
        put_i32(&w, cg, "tokens_per_group", tpg);
        put_str(&w, cg, "y_dtype", dtype_name(c->y_dtype));
        put_f64(&w, cg, "tol_rel_rms", c->tol_rel_rms);
        put_f64(&w, cg, "tol_max_abs", c->tol_max_abs);
        put_f64(&w, cg, "y_ref_norm", norm2(c->y_ref, (size_t)c->m * (size_t)f->n));
        put_u64(&w, cg, "x_seed", c->x_seed);
        hsize_t dx[2] = {M, K}, dy[2] = {M, N}, doff = G + 1;
        put_dataset(&w, cg, cg, "x", &T_FP16, 2, dx, c->x);
        if (f->path != VG_PATH_DENSE)
            put_dataset(&w, cg, cg, "offsets", &T_I32, 1, &doff, c->offsets);
        put_dataset(&w, cg, cg, "y_ref", &T_F32, 2, dy, c->y_ref);
        H5Gclose(cg);
    }
    if (cases >= 0)
        H5Gclose(cases);
    H5Pclose(gcpl);
    /* the finished image */
    void *image = NULL;
    ssize_t image_len = -1;
    if (w.st == VG_OK && H5Fflush(w.fid, H5F_SCOPE_GLOBAL) < 0)
        wfail_h5(&w, "file (flush)");
    if (w.st == VG_OK && (image_len = H5Fget_file_image(w.fid, NULL, 0)) <= 0)
        wfail_h5(&w, "file (image size)");
    if (w.st == VG_OK && !(image = malloc(SEAL_BYTES + (size_t)image_len)))
        w.st = ffail(file, VG_ERR_NO_MEMORY, "out of memory for a file image of %zd bytes",
                     image_len);
    if (w.st == VG_OK &&
        H5Fget_file_image(w.fid, (uint8_t *)image + SEAL_BYTES, (size_t)image_len) != image_len)
        wfail_h5(&w, "file (image)");
    if (H5Fclose(w.fid) < 0)  /* in memory: nothing to fail on but our own bugs */
        wfail_h5(&w, "file (close)");
    quiet_end(&q);

    if (w.st == VG_OK) {
        seal_image(image, SEAL_BYTES + (size_t)image_len);
        w.st = publish_image(file, image, SEAL_BYTES + (size_t)image_len);
    }
    free(image);
    return w.st;
}

/* ======================================================================= reader */

typedef struct reader {
    const char *file;
    hid_t fid;
    size_t total_bytes;   /* allocated so far, bounded */
    unsigned flags;       /* VG_GOLDEN_READ_* */
} reader;

static vg_status rfail_h5(reader *r, vg_status s, const char *what)
{
    char msg[420];
    hdf5_message(msg, sizeof msg);
    return ffail(r->file, s, "%s: %s", what, msg);
}

/* Opens attribute `name` on loc, checking it exists. */
static vg_status open_attr(reader *r, hid_t loc, const char *where, const char *name,
                           hid_t *out)
{
    htri_t ex = H5Aexists(loc, name);
    if (ex < 0)
        return rfail_h5(r, VG_ERR_FORMAT, where);
    if (ex == 0)
        return ffail(r->file, VG_ERR_FORMAT, "%sattribute '%s' is missing", where, name);
    *out = H5Aopen(loc, name, H5P_DEFAULT);
    if (*out < 0) {
        char what[128];
        snprintf(what, sizeof what, "%sattribute '%s'", where, name);
        return rfail_h5(r, VG_ERR_FORMAT, what);
    }
    return VG_OK;
}

/* Number of elements of an attribute (scalar: 1). */
static hssize_t attr_count(hid_t attr)
{
    hid_t sp = H5Aget_space(attr);
    hssize_t n = sp < 0 ? -1 : H5Sget_simple_extent_npoints(sp);
    if (sp >= 0)
        H5Sclose(sp);
    return n;
}

/* Integer attribute with `count` elements (1: scalar or [1]) into out[]. */
static vg_status get_ints(reader *r, hid_t loc, const char *where, const char *name,
                          int64_t *out, hssize_t count, int is_unsigned64)
{
    hid_t a;
    vg_status st = open_attr(r, loc, where, name, &a);
    if (st != VG_OK)
        return st;
    hid_t t = H5Aget_type(a);
    int ok = t >= 0 && H5Tget_class(t) == H5T_INTEGER && H5Tget_size(t) <= 8;
    hssize_t n = attr_count(a);
    if (!ok || n != count) {
        if (t >= 0)
            H5Tclose(t);
        H5Aclose(a);
        return ffail(r->file, VG_ERR_FORMAT,
                     "%sattribute '%s': expected %lld integer(s), found %s with %lld element(s)",
                     where, name, (long long)count, ok ? "integers" : "a non-integer type",
                     (long long)n);
    }
    H5Tclose(t);
    herr_t e = H5Aread(a, is_unsigned64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64, out);
    H5Aclose(a);
    if (e < 0) {
        char what[128];
        snprintf(what, sizeof what, "%sattribute '%s'", where, name);
        return rfail_h5(r, VG_ERR_FORMAT, what);
    }
    return VG_OK;
}

static vg_status get_i32(reader *r, hid_t loc, const char *where, const char *name,
                         int64_t lo, int64_t hi, int32_t *out)
{
    int64_t v;
    vg_status st = get_ints(r, loc, where, name, &v, 1, 0);
    if (st != VG_OK)
        return st;
    if (v < lo || v > hi)
        return ffail(r->file, lo == hi ? VG_ERR_FORMAT : VG_ERR_LIMIT,
                     "%sattribute '%s' = %lld is outside [%lld, %lld]", where, name,
                     (long long)v, (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return VG_OK;
}

static vg_status get_f64(reader *r, hid_t loc, const char *where, const char *name,
                         double *out)
{
    hid_t a;
    vg_status st = open_attr(r, loc, where, name, &a);
    if (st != VG_OK)
        return st;
    hid_t t = H5Aget_type(a);
    int ok = t >= 0 && H5Tget_class(t) == H5T_FLOAT;
    hssize_t n = attr_count(a);
    if (t >= 0)
        H5Tclose(t);
    if (!ok || n != 1) {
        H5Aclose(a);
        return ffail(r->file, VG_ERR_FORMAT, "%sattribute '%s': expected one float", where,
                     name);
    }
    herr_t e = H5Aread(a, H5T_NATIVE_DOUBLE, out);
    H5Aclose(a);
    if (e < 0) {
        char what[128];
        snprintf(what, sizeof what, "%sattribute '%s'", where, name);
        return rfail_h5(r, VG_ERR_FORMAT, what);
    }
    if (!isfinite(*out))
        return ffail(r->file, VG_ERR_FORMAT, "%sattribute '%s' is not finite", where, name);
    return VG_OK;
}

/* String attribute (fixed or variable length) into buf. */
static vg_status get_str(reader *r, hid_t loc, const char *where, const char *name, char *buf,
                         size_t len)
{
    hid_t a;
    vg_status st = open_attr(r, loc, where, name, &a);
    if (st != VG_OK)
        return st;
    hid_t t = H5Aget_type(a);
    if (t < 0 || H5Tget_class(t) != H5T_STRING || attr_count(a) != 1) {
        if (t >= 0)
            H5Tclose(t);
        H5Aclose(a);
        return ffail(r->file, VG_ERR_FORMAT, "%sattribute '%s': expected one string", where,
                     name);
    }
    herr_t e;
    if (H5Tis_variable_str(t) > 0) {
        char *s = NULL;
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, H5T_VARIABLE);
        e = H5Aread(a, mt, &s);
        if (e >= 0)
            snprintf(buf, len, "%s", s ? s : "");
        if (s)
            H5free_memory(s);
        H5Tclose(mt);
    } else {
        size_t sz = H5Tget_size(t);
        if (sz >= len) {
            H5Tclose(t);
            H5Aclose(a);
            return ffail(r->file, VG_ERR_FORMAT, "%sattribute '%s': string of %zu bytes is too long",
                         where, name, sz);
        }
        hid_t mt = H5Tcopy(H5T_C_S1);
        H5Tset_size(mt, sz + 1);
        H5Tset_strpad(mt, H5T_STR_NULLTERM);
        memset(buf, 0, len);
        e = H5Aread(a, mt, buf);
        H5Tclose(mt);
    }
    H5Tclose(t);
    H5Aclose(a);
    if (e < 0) {
        char what[128];
        snprintf(what, sizeof what, "%sattribute '%s'", where, name);
        return rfail_h5(r, VG_ERR_FORMAT, what);
    }
    return VG_OK;
}

static const char *dims_str(int rank, const hsize_t *d, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, "[%llu]", (unsigned long long)d[i]);
    if (rank == 0)
        snprintf(buf, len, "(scalar)");
    return buf;
}

/* Opens dataset `name` of loc and checks, without reading any data, its
 * presence, type, rank and extents against want[] and the per-dataset size
 * bound.  On VG_OK *ds_out is open (the caller closes it) and *bytes_out is
 * its size in memory.  `where` prefixes names in messages ("cases/t06/"). */
static vg_status open_dataset(reader *r, hid_t loc, const char *where, const char *name,
                              const elem_type *t, int rank, const hsize_t *want, hid_t *ds_out,
                              size_t *bytes_out)
{
    *ds_out = -1;
    *bytes_out = 0;
    htri_t ex = H5Lexists(loc, name, H5P_DEFAULT);
    if (ex <= 0)
        return ffail(r->file, VG_ERR_FORMAT, "dataset '%s%s' is missing", where, name);
    hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
    if (ds < 0) {
        char what[128];
        snprintf(what, sizeof what, "dataset '%s%s'", where, name);
        return rfail_h5(r, VG_ERR_FORMAT, what);
    }
    vg_status st = VG_OK;
    hid_t ft = H5Dget_type(ds), sp = H5Dget_space(ds);
    char b1[64], b2[64];
    H5T_class_t cls = ft >= 0 ? H5Tget_class(ft) : H5T_NO_CLASS;
    size_t size = ft >= 0 ? H5Tget_size(ft) : 0;
    int is_signed = cls == H5T_INTEGER ? H5Tget_sign(ft) == H5T_SGN_2 : 1;
    int want_cls = t->is_float ? H5T_FLOAT : H5T_INTEGER;
    if (cls != (H5T_class_t)want_cls || size != t->size ||
        (cls == H5T_INTEGER && is_signed != t->is_signed)) {
        char found[32];
        if (cls == H5T_FLOAT || cls == H5T_INTEGER)
            type_name(cls == H5T_FLOAT, is_signed, size, found, sizeof found);
        else
            snprintf(found, sizeof found, "a non-numeric type");
        st = ffail(r->file, VG_ERR_FORMAT, "dataset '%s%s': expected %s (format %s), found %s",
                   where, name, type_name(t->is_float, t->is_signed, t->size, b1, sizeof b1),
                   t->format, found);
        goto done;
    }
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    hsize_t dims[8] = {0};
    if (nd != rank || nd > 8 || H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
        st = ffail(r->file, VG_ERR_FORMAT, "dataset '%s%s': expected rank %d, found rank %d",
                   where, name, rank, nd);
        goto done;
    }
    for (int i = 0; i < rank; i++)
        if (dims[i] != want[i]) {
            st = ffail(r->file, VG_ERR_FORMAT,
                       "dataset '%s%s': extents %s disagree with the attributes (expected %s)",
                       where, name, dims_str(rank, dims, b1, sizeof b1),
                       dims_str(rank, want, b2, sizeof b2));
            goto done;
        }
    /* the size bound, before allocating */
    size_t count = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] && count > VG_GOLDEN_MAX_DATASET_BYTES / dims[i]) {
            count = (size_t)-1;
            break;
        }
        count *= (size_t)dims[i];
    }
    if (count == (size_t)-1 || count > VG_GOLDEN_MAX_DATASET_BYTES / t->size) {
        st = ffail(r->file, VG_ERR_LIMIT, "dataset '%s%s': %s elements exceed the %zu MiB bound",
                   where, name, dims_str(rank, dims, b1, sizeof b1),
                   VG_GOLDEN_MAX_DATASET_BYTES >> 20);
        goto done;
    }
    size_t bytes = count * t->size;
    /* the data must be in the file: a few-KiB file may claim, within the
     * bounds above, a dataset of hundreds of MiB whose chunks were never
     * written (HDF5 would hand out fill values, and the hash check would
     * refuse them only after allocating and reading it all) */
    {
        hid_t dcpl = H5Dget_create_plist(ds);
        int nfilters = dcpl >= 0 ? H5Pget_nfilters(dcpl) : -1;
        if (dcpl >= 0)
            H5Pclose(dcpl);
        hsize_t stored = H5Dget_storage_size(ds);   /* 0 also on error */
        if (nfilters < 0) {
            char what[128];
            snprintf(what, sizeof what, "dataset '%s%s': creation properties", where, name);
            st = rfail_h5(r, VG_ERR_FORMAT, what);
            goto done;
        }
        if (nfilters == 0 && stored < (hsize_t)bytes) {
            st = ffail(r->file, VG_ERR_FORMAT,
                       "dataset '%s%s': the file stores %llu of its %zu bytes (uncompressed): "
                       "truncated or damaged",
                       where, name, (unsigned long long)stored, bytes);
            goto done;
        }
        if (nfilters > 0 && (double)bytes > STORAGE_MAX_RATIO * (double)stored + STORAGE_SLACK) {
            st = ffail(r->file, VG_ERR_FORMAT,
                       "dataset '%s%s': the file stores %llu bytes for its %zu (compressed more "
                       "than %d:1, beyond deflate): truncated or damaged",
                       where, name, (unsigned long long)stored, bytes, STORAGE_MAX_RATIO);
            goto done;
        }
    }
    *bytes_out = bytes;
done:
    if (ft >= 0)
        H5Tclose(ft);
    if (sp >= 0)
        H5Sclose(sp);
    if (st != VG_OK)
        H5Dclose(ds);
    else
        *ds_out = ds;
    return st;
}

/* Reads dataset `name` of loc: open_dataset's checks, the per-file bound,
 * then allocates *out, reads it and checks the hash attribute
 * sha256_<name> of hash_loc. */
static vg_status get_dataset(reader *r, hid_t loc, hid_t hash_loc, const char *where,
                             const char *name, const elem_type *t, int rank,
                             const hsize_t *want, void **out)
{
    *out = NULL;
    hid_t ds;
    size_t bytes;
    vg_status st = open_dataset(r, loc, where, name, t, rank, want, &ds, &bytes);
    if (st != VG_OK)
        return st;
    if (r->total_bytes + bytes > 4 * VG_GOLDEN_MAX_DATASET_BYTES) {
        st = ffail(r->file, VG_ERR_LIMIT,
                   "dataset '%s%s': %zu bytes would take the file past the %zu MiB bound",
                   where, name, bytes, (4 * VG_GOLDEN_MAX_DATASET_BYTES) >> 20);
        goto done;
    }
    *out = malloc(bytes ? bytes : 1);
    if (!*out) {
        st = ffail(r->file, VG_ERR_NO_MEMORY, "dataset '%s%s': out of memory for %zu bytes",
                   where, name, bytes);
        goto done;
    }
    r->total_bytes += bytes;
    if (H5Dread(ds, h5_mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        char what[128];
        snprintf(what, sizeof what, "dataset '%s%s': read failed", where, name);
        st = rfail_h5(r, VG_ERR_FORMAT, what);
        goto done;
    }
    /* the hash */
    {
        char attr[96], want_hex[80], hex[65];
        snprintf(attr, sizeof attr, "sha256_%s", name);
        st = get_str(r, hash_loc, where, attr, want_hex, sizeof want_hex);
        if (st != VG_OK)
            goto done;
        vg_sha256_hex(*out, bytes, hex);
        if (strcmp(hex, want_hex) != 0)
            st = ffail(r->file, VG_ERR_CHECKSUM,
                       "dataset '%s%s': SHA-256 mismatch (data %.16s..., attribute %s says %.16s...):"
                       " the file was edited or damaged",
                       where, name, hex, attr, want_hex);
    }
done:
    if (st != VG_OK) {
        free(*out);
        *out = NULL;
    }
    H5Dclose(ds);
    return st;
}

/* Compares a rebuilt buffer with the file's sha256_<name>. */
static vg_status check_recipe_hash(reader *r, const char *name, const void *data, size_t bytes)
{
    char attr[96], want_hex[80], hex[65];
    snprintf(attr, sizeof attr, "sha256_%s", name);
    vg_status st = get_str(r, r->fid, "", attr, want_hex, sizeof want_hex);
    if (st != VG_OK)
        return st;
    vg_sha256_hex(data, bytes, hex);
    if (strcmp(hex, want_hex) != 0)
        return ffail(r->file, VG_ERR_CHECKSUM,
                     "recipe weight '%s': the regenerated data (%.16s...) does not match %s "
                     "(%.16s...): the generator changed, regenerate the file",
                     name, hex, attr, want_hex);
    return VG_OK;
}

/* Rebuilds a recipe weight from its attributes. */
static vg_status rebuild_recipe(reader *r, vg_golden_file *f)
{
    size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
    if (elems > RECIPE_MAX_ELEMENTS)
        return ffail(r->file, VG_ERR_LIMIT,
                     "recipe weight of %zu elements exceeds the bound of %zu", elems,
                     RECIPE_MAX_ELEMENTS);
    if (r->flags & VG_GOLDEN_READ_NO_RECIPE) {
        /* only what HDF5 parses: the hash attributes, each 64 hex digits */
        static const char *const names[] = {"w_q", "w_scale", "w_zero", "w_tensor_scale",
                                            "w_dequant"};
        const int present[] = {1, f->layout.scale_bytes > 0, f->layout.zero_bytes > 0,
                               f->family == VG_FAMILY_NVFP4, 1};
        for (int i = 0; i < 5; i++) {
            if (!present[i])
                continue;
            char attr[96], hex[80];
            snprintf(attr, sizeof attr, "sha256_%s", names[i]);
            vg_status st = get_str(r, r->fid, "", attr, hex, sizeof hex);
            if (st != VG_OK)
                return st;
            if (strlen(hex) != 64 || strspn(hex, "0123456789abcdef") != 64)
                return ffail(r->file, VG_ERR_FORMAT, "attribute '%s' is not 64 hex digits",
                             attr);
        }
        return VG_OK;
    }
    float *w = malloc(elems * sizeof(float));
    f->w_dequant = malloc(elems * sizeof(float));
    if (!w || !f->w_dequant) {
        free(w);
        return ffail(r->file, VG_ERR_NO_MEMORY, "recipe weight: out of memory");
    }
    vg_status st = vg_golden_synth_weight(f->seed, f->groups, f->n, f->k, w);
    vg_qweight qw;
    memset(&qw, 0, sizeof qw);
    if (st == VG_OK)
        st = vg_quantize(f->family, w, f->groups, f->n, f->k, &qw);
    free(w);
    if (st != VG_OK)
        return ffail(r->file, st, "recipe weight: %s", vg_last_error());
    /* take ownership of the quantized buffers */
    f->w_q = qw.q;
    f->w_scale = qw.scale;
    f->w_zero = qw.zero;
    f->w_tensor_scale = qw.w.tensor_scale;
    vg_weight wt = vg_golden_weight(f);
    if ((st = vg_dequantize(&wt, f->w_dequant)) != VG_OK)
        return ffail(r->file, st, "recipe weight: %s", vg_last_error());
    size_t G = (size_t)f->groups;
    st = check_recipe_hash(r, "w_q", f->w_q, G * f->layout.q_bytes);
    if (st == VG_OK && f->layout.scale_bytes)
        st = check_recipe_hash(r, "w_scale", f->w_scale, G * f->layout.scale_bytes);
    if (st == VG_OK && f->layout.zero_bytes)
        st = check_recipe_hash(r, "w_zero", f->w_zero, G * f->layout.zero_bytes);
    if (st == VG_OK && f->family == VG_FAMILY_NVFP4)
        st = check_recipe_hash(r, "w_tensor_scale", &f->w_tensor_scale, sizeof(float));
    if (st == VG_OK)
        st = check_recipe_hash(r, "w_dequant", f->w_dequant, elems * sizeof(float));
    return st;
}

/* The weight datasets of a stored weight, as the layout says they are. */
typedef struct weight_set {
    const char *name;
    elem_type t;
    int rank;
    hsize_t dims[3];
} weight_set;

static int weight_sets(const vg_golden_file *f, weight_set *out)
{
    const hsize_t G = (hsize_t)f->groups, N = (hsize_t)f->n, K = (hsize_t)f->k;
    const elem_type tq = wq_type(f->family), ts = wscale_type(f->family);
    int n = 0;
    out[n++] = (weight_set){"w_q", tq, 3, {G, N, (hsize_t)(f->layout.q_bytes / (size_t)N / tq.size)}};
    if (f->layout.scale_bytes)
        out[n++] = (weight_set){"w_scale", ts, 3,
                                {G, (hsize_t)f->layout.scale_rows, (hsize_t)f->layout.scale_cols}};
    if (f->layout.zero_bytes)
        out[n++] = (weight_set){"w_zero", T_FP16, 3,
                                {G, (hsize_t)f->layout.scale_rows, (hsize_t)f->layout.scale_cols}};
    if (f->family == VG_FAMILY_NVFP4)
        out[n++] = (weight_set){"w_tensor_scale", T_F32, 1, {1, 0, 0}};
    out[n++] = (weight_set){"w_dequant", T_F32, 3, {G, N, K}};
    return n;
}

/* The weight's shape checks, reading no data: a stored weight's datasets
 * (open_dataset: presence, type, extents, size bounds), a recipe's element
 * bound.  Adds the bytes a stored weight claims to *claimed. */
static vg_status precheck_weight(reader *r, const vg_golden_file *f, size_t *claimed)
{
    if (!f->weights_stored) {
        size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
        if (elems > RECIPE_MAX_ELEMENTS)
            return ffail(r->file, VG_ERR_LIMIT,
                         "recipe weight of %zu elements exceeds the bound of %zu", elems,
                         RECIPE_MAX_ELEMENTS);
        return VG_OK;
    }
    weight_set sets[5];
    int n = weight_sets(f, sets);
    for (int i = 0; i < n; i++) {
        hid_t ds;
        size_t bytes;
        vg_status st = open_dataset(r, r->fid, "", sets[i].name, &sets[i].t, sets[i].rank,
                                    sets[i].dims, &ds, &bytes);
        if (st != VG_OK)
            return st;
        H5Dclose(ds);
        *claimed += bytes;
    }
    return VG_OK;
}

static vg_status read_weight(reader *r, vg_golden_file *f)
{
    weight_set sets[5];
    int n = weight_sets(f, sets);
    f->w_tensor_scale = 1.0f;
    vg_status st = VG_OK;
    for (int i = 0; st == VG_OK && i < n; i++) {
        void *p = NULL;
        st = get_dataset(r, r->fid, r->fid, "", sets[i].name, &sets[i].t, sets[i].rank,
                         sets[i].dims, &p);
        if (st != VG_OK)
            break;
        const char *nm = sets[i].name;
        if (!strcmp(nm, "w_q"))
            f->w_q = p;
        else if (!strcmp(nm, "w_scale"))
            f->w_scale = p;
        else if (!strcmp(nm, "w_zero"))
            f->w_zero = p;
        else if (!strcmp(nm, "w_dequant"))
            f->w_dequant = p;
        else { /* w_tensor_scale */
            memcpy(&f->w_tensor_scale, p, sizeof(float));
            free(p);
            if (!(isfinite(f->w_tensor_scale) && f->w_tensor_scale > 0.0f))
                st = ffail(r->file, VG_ERR_FORMAT, "dataset 'w_tensor_scale': %g is not a "
                           "finite positive scale", (double)f->w_tensor_scale);
        }
    }
    return st;
}

static vg_status read_case(reader *r, vg_golden_file *f, hid_t cases, const char *name,
                           vg_golden_case *c)
{
    char where[64];
    snprintf(where, sizeof where, "cases/%s/", name);
    snprintf(c->name, sizeof c->name, "%s", name);
    hid_t cg = H5Gopen2(cases, name, H5P_DEFAULT);
    if (cg < 0) {
        char what[96];
        snprintf(what, sizeof what, "group 'cases/%s'", name);
        return rfail_h5(r, VG_ERR_FORMAT, what);
    }
    vg_status st = get_i32(r, cg, where, "M", 1, VG_GOLDEN_MAX_DIM, &c->m);
    int64_t tok[VG_GOLDEN_MAX_GROUPS];
    if (st == VG_OK)
        st = get_ints(r, cg, where, "tokens", tok, f->groups, 0);
    char ydt[16];
    if (st == VG_OK)
        st = get_str(r, cg, where, "y_dtype", ydt, sizeof ydt);
    if (st == VG_OK) {
        if (!strcmp(ydt, "f32"))
            c->y_dtype = VG_DTYPE_F32;
        else if (!strcmp(ydt, "f16"))
            c->y_dtype = VG_DTYPE_F16;
        else
            st = ffail(r->file, VG_ERR_FORMAT, "%sattribute 'y_dtype': unknown '%s' (f32 or f16)",
                       where, ydt);
    }
    if (st == VG_OK)
        st = get_f64(r, cg, where, "tol_rel_rms", &c->tol_rel_rms);
    if (st == VG_OK)
        st = get_f64(r, cg, where, "tol_max_abs", &c->tol_max_abs);
    if (st == VG_OK && !(c->tol_rel_rms > 0 && c->tol_rel_rms < 1 && c->tol_max_abs > 0))
        st = ffail(r->file, VG_ERR_FORMAT,
                   "%sattributes 'tol_rel_rms' %g / 'tol_max_abs' %g are not sane tolerances",
                   where, c->tol_rel_rms, c->tol_max_abs);
    if (st == VG_OK)
        st = get_f64(r, cg, where, "y_ref_norm", &c->y_ref_norm);
    int64_t xs = 0;
    if (st == VG_OK)
        st = get_ints(r, cg, where, "x_seed", &xs, 1, 1);
    c->x_seed = (uint64_t)xs;

    /* tokens: non-negative, summing to M; dense: one group holding all */
    if (st == VG_OK) {
        c->tokens = malloc((size_t)f->groups * sizeof(int32_t));
        if (!c->tokens)
            st = ffail(r->file, VG_ERR_NO_MEMORY, "out of memory");
        int64_t sum = 0;
        for (int32_t g = 0; st == VG_OK && g < f->groups; g++) {
            if (tok[g] < 0 || tok[g] > VG_GOLDEN_MAX_DIM)
                st = ffail(r->file, VG_ERR_FORMAT, "%sattribute 'tokens'[%d] = %lld is invalid",
                           where, (int)g, (long long)tok[g]);
            else
                c->tokens[g] = (int32_t)tok[g];
            sum += tok[g];
        }
        if (st == VG_OK && sum != c->m)
            st = ffail(r->file, VG_ERR_FORMAT,
                       "%sattribute 'tokens' sums to %lld but 'M' is %d", where,
                       (long long)sum, (int)c->m);
    }
    const hsize_t M = (hsize_t)c->m, N = (hsize_t)f->n, K = (hsize_t)f->k;
    hsize_t dx[2] = {M, K}, dy[2] = {M, N}, doff = (hsize_t)f->groups + 1;
    if (st == VG_OK)
        st = get_dataset(r, cg, cg, where, "x", &T_FP16, 2, dx, (void **)&c->x);
    if (st == VG_OK && f->path != VG_PATH_DENSE) {
        st = get_dataset(r, cg, cg, where, "offsets", &T_I32, 1, &doff, (void **)&c->offsets);
        /* the offsets row must be exactly the prefix sums of tokens */
        for (int32_t g = 0; st == VG_OK && g <= f->groups; g++) {
            int32_t want = g == 0 ? 0 : c->offsets[g - 1] + c->tokens[g - 1];
            if (c->offsets[g] != want)
                st = ffail(r->file, VG_ERR_FORMAT,
                           "dataset '%soffsets': entry %d is %d, expected %d from 'tokens'",
                           where, (int)g, (int)c->offsets[g], (int)want);
        }
    } else if (st == VG_OK && H5Lexists(cg, "offsets", H5P_DEFAULT) > 0) {
        st = ffail(r->file, VG_ERR_FORMAT, "dataset '%soffsets' present in a dense case", where);
    }
    if (st == VG_OK)
        st = get_dataset(r, cg, cg, where, "y_ref", &T_F32, 2, dy, (void **)&c->y_ref);
    if (st == VG_OK) {
        for (size_t i = 0; i < (size_t)(M * K); i++)
            if ((c->x[i] & 0x7C00u) == 0x7C00u) {
                st = ffail(r->file, VG_ERR_FORMAT, "dataset '%sx': element %zu is not finite",
                           where, i);
                break;
            }
    }
    if (st == VG_OK) {
        size_t count = (size_t)(M * N);
        for (size_t i = 0; i < count; i++)
            if (!isfinite(c->y_ref[i])) {
                st = ffail(r->file, VG_ERR_FORMAT,
                           "dataset '%sy_ref': element %zu is not finite", where, i);
                break;
            }
        double nrm = norm2(c->y_ref, count);
        /* an all-zero reference would let an all-zero result pass */
        if (st == VG_OK && !(nrm > 0.0))
            st = ffail(r->file, VG_ERR_FORMAT, "dataset '%sy_ref' is all zero", where);
        if (st == VG_OK && fabs(nrm - c->y_ref_norm) > 1e-6 * nrm)
            st = ffail(r->file, VG_ERR_FORMAT,
                       "%sattribute 'y_ref_norm' = %.9g disagrees with ||y_ref|| = %.9g", where,
                       c->y_ref_norm, nrm);
    }
    H5Gclose(cg);
    return st;
}

/* Name of the i-th case of group 'cases' (name index, increasing) into
 * name[len].  HDF5 lists a group's links sorted by strcmp, so each name
 * must sort strictly after the previous one (`prev`, "" for the first): a
 * damaged name heap can make two indices return the same name, and then
 * one case would be read twice and another never.  Names are plain link
 * names (no '/', not "." or ".."), at most 31 bytes. */
static vg_status case_name_at(reader *r, hid_t cases, int32_t i, const char *prev, char *name,
                              size_t len)
{
    name[0] = '\0';
    ssize_t n = H5Lget_name_by_idx(cases, ".", H5_INDEX_NAME, H5_ITER_INC, (hsize_t)i, name, len,
                                   H5P_DEFAULT);
    if (n < 0)
        return rfail_h5(r, VG_ERR_FORMAT, "group 'cases'");
    if ((size_t)n >= sizeof(((vg_golden_case *)0)->name)) {
        name[0] = '\0';
        return ffail(r->file, VG_ERR_FORMAT, "group 'cases' holds a name of %zd bytes (at most 31)",
                     n);
    }
    if (n == 0 || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return ffail(r->file, VG_ERR_FORMAT, "group 'cases': entry %d has the invalid name '%s'",
                     (int)i, name);
    if (i > 0 && strcmp(name, prev) == 0)
        return ffail(r->file, VG_ERR_FORMAT,
                     "group 'cases' lists the case name '%s' twice (entries %d and %d): the "
                     "group's name index is damaged",
                     name, (int)i - 1, (int)i);
    if (i > 0 && strcmp(name, prev) < 0)
        return ffail(r->file, VG_ERR_FORMAT,
                     "group 'cases': entry %d '%s' sorts before entry %d '%s': the group's name "
                     "index is damaged",
                     (int)i, name, (int)i - 1, prev);
    return VG_OK;
}

/* The shape checks of one case, reading no data: its M attribute and the
 * extents of x [M][K], offsets [groups + 1] and y_ref [M][N] (open_dataset).
 * Adds the bytes they claim to *claimed. */
static vg_status precheck_case(reader *r, const vg_golden_file *f, hid_t cases, const char *name,
                               size_t *claimed)
{
    char where[64];
    snprintf(where, sizeof where, "cases/%s/", name);
    hid_t cg = H5Gopen2(cases, name, H5P_DEFAULT);
    if (cg < 0) {
        char what[96];
        snprintf(what, sizeof what, "group 'cases/%s'", name);
        return rfail_h5(r, VG_ERR_FORMAT, what);
    }
    int32_t m = 0;
    vg_status st = get_i32(r, cg, where, "M", 1, VG_GOLDEN_MAX_DIM, &m);
    const hsize_t M = (hsize_t)m, N = (hsize_t)f->n, K = (hsize_t)f->k;
    const hsize_t dx[2] = {M, K}, dy[2] = {M, N}, doff = (hsize_t)f->groups + 1;
    struct {
        const char *name;
        const elem_type *t;
        int rank;
        const hsize_t *dims;
    } sets[3] = {{"x", &T_FP16, 2, dx}, {"offsets", &T_I32, 1, &doff}, {"y_ref", &T_F32, 2, dy}};
    for (int i = 0; st == VG_OK && i < 3; i++) {
        if (i == 1 && f->path == VG_PATH_DENSE)
            continue;   /* read_case refuses offsets in a dense case */
        hid_t ds;
        size_t bytes;
        st = open_dataset(r, cg, where, sets[i].name, sets[i].t, sets[i].rank, sets[i].dims, &ds,
                          &bytes);
        if (st == VG_OK) {
            H5Dclose(ds);
            *claimed += bytes;
        }
    }
    H5Gclose(cg);
    return st;
}

static vg_status read_all(reader *r, vg_golden_file *f)
{
    char buf[256];
    int32_t version;
    vg_status st = get_i32(r, r->fid, "", "schema_version", VG_GOLDEN_SCHEMA_VERSION,
                           VG_GOLDEN_SCHEMA_VERSION, &version);
    if (st != VG_OK)
        return st;
    if ((st = get_str(r, r->fid, "", "generator", f->generator, sizeof f->generator)) != VG_OK)
        return st;
    if ((st = get_str(r, r->fid, "", "source", f->source, sizeof f->source)) != VG_OK)
        return st;
    if (H5Aexists(r->fid, "provenance") > 0) { /* imported files only */
        enum { PROVENANCE_MAX = 1 << 16 };
        if (!(f->provenance = malloc(PROVENANCE_MAX)))
            return ffail(r->file, VG_ERR_NO_MEMORY, "out of memory");
        if ((st = get_str(r, r->fid, "", "provenance", f->provenance, PROVENANCE_MAX)) != VG_OK)
            return st;
    }
    if ((st = get_str(r, r->fid, "", "family", buf, sizeof buf)) != VG_OK)
        return st;
    if (vg_family_parse(buf, &f->family) != VG_OK)
        return ffail(r->file, VG_ERR_FORMAT, "attribute 'family': unknown family '%s'", buf);
    if ((st = get_str(r, r->fid, "", "path", buf, sizeof buf)) != VG_OK)
        return st;
    if (vg_path_parse(buf, &f->path) != VG_OK)
        return ffail(r->file, VG_ERR_FORMAT, "attribute 'path': unknown path '%s'", buf);
    if ((st = get_i32(r, r->fid, "", "N", 1, VG_GOLDEN_MAX_DIM, &f->n)) != VG_OK ||
        (st = get_i32(r, r->fid, "", "K", 1, VG_GOLDEN_MAX_DIM, &f->k)) != VG_OK ||
        (st = get_i32(r, r->fid, "", "groups", 1, VG_GOLDEN_MAX_GROUPS, &f->groups)) != VG_OK)
        return st;
    if (f->path == VG_PATH_DENSE && f->groups != 1)
        return ffail(r->file, VG_ERR_FORMAT, "attribute 'groups' = %d but path is dense",
                     (int)f->groups);
    int64_t seed;
    if ((st = get_ints(r, r->fid, "", "seed", &seed, 1, 1)) != VG_OK)
        return st;
    f->seed = (uint64_t)seed;
    if (vg_weight_layout_of(f->family, f->n, f->k, &f->layout) != VG_OK)
        return ffail(r->file, VG_ERR_FORMAT, "attributes N/K: %s", vg_last_error());
    if ((st = get_str(r, r->fid, "", "weights", buf, sizeof buf)) != VG_OK)
        return st;
    if (!strcmp(buf, "stored"))
        f->weights_stored = 1;
    else if (!strcmp(buf, "recipe"))
        f->weights_stored = 0;
    else
        return ffail(r->file, VG_ERR_FORMAT, "attribute 'weights': unknown '%s' (stored or recipe)",
                     buf);
    int32_t ncases;
    if ((st = get_i32(r, r->fid, "", "cases", 1, VG_GOLDEN_MAX_CASES, &ncases)) != VG_OK)
        return st;

    /* the weight's shapes (no data read) */
    size_t weight_claimed = 0;
    if ((st = precheck_weight(r, f, &weight_claimed)) != VG_OK)
        return st;

    /* cases */
    if (H5Lexists(r->fid, "cases", H5P_DEFAULT) <= 0)
        return ffail(r->file, VG_ERR_FORMAT, "group 'cases' is missing");
    hid_t cases = H5Gopen2(r->fid, "cases", H5P_DEFAULT);
    if (cases < 0)
        return rfail_h5(r, VG_ERR_FORMAT, "group 'cases'");
    H5G_info_t ginfo;
    if (H5Gget_info(cases, &ginfo) < 0)
        st = rfail_h5(r, VG_ERR_FORMAT, "group 'cases'");
    else if (ginfo.nlinks != (hsize_t)ncases)
        st = ffail(r->file, VG_ERR_FORMAT, "attribute 'cases' = %d but group 'cases' holds %llu",
                   (int)ncases, (unsigned long long)ginfo.nlinks);
    if (st == VG_OK) {
        f->cases = calloc((size_t)ncases, sizeof *f->cases);
        if (!f->cases)
            st = ffail(r->file, VG_ERR_NO_MEMORY, "out of memory");
        f->ncases = f->cases ? ncases : 0;
    }
    /* the cases in name order, so every reader sees the same order; all
     * names first (a damaged name index shows in the order of the names,
     * and opening by name may already fail on the first one) */
    for (int32_t i = 0; st == VG_OK && i < ncases; i++)
        st = case_name_at(r, cases, i, i ? f->cases[i - 1].name : "", f->cases[i].name,
                          sizeof f->cases[i].name);
    /* every case's shapes against N, K, groups before the weight's data:
     * cheap, and a file whose N or K was changed is refused here rather
     * than after rebuilding (recipe) or reading a weight of the claimed
     * size */
    size_t claimed = weight_claimed;
    for (int32_t i = 0; st == VG_OK && i < ncases; i++)
        st = precheck_case(r, f, cases, f->cases[i].name, &claimed);
    if (st == VG_OK && claimed > 4 * VG_GOLDEN_MAX_DATASET_BYTES)
        st = ffail(r->file, VG_ERR_LIMIT,
                   "the datasets claim %zu bytes, past the %zu MiB bound of a file", claimed,
                   (4 * VG_GOLDEN_MAX_DATASET_BYTES) >> 20);

    /* the weight */
    if (st == VG_OK)
        st = f->weights_stored ? read_weight(r, f) : rebuild_recipe(r, f);
    size_t welems = f->w_dequant ? (size_t)f->groups * (size_t)f->n * (size_t)f->k : 0;
    for (size_t i = 0; st == VG_OK && i < welems; i++)
        if (!isfinite(f->w_dequant[i]))
            st = ffail(r->file, VG_ERR_FORMAT, "dataset 'w_dequant': element %zu is not finite",
                       i);

    for (int32_t i = 0; st == VG_OK && i < ncases; i++) {
        char name[sizeof f->cases[i].name];
        memcpy(name, f->cases[i].name, sizeof name);
        st = read_case(r, f, cases, name, &f->cases[i]);
    }
    H5Gclose(cases);
    return st;
}

vg_status vg_golden_read(const char *file, vg_golden_file *out)
{
    return vg_golden_read_flags(file, 0, out);
}

vg_status vg_golden_read_flags(const char *file, unsigned flags, vg_golden_file *out)
{
    if (!file || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "golden read: NULL argument");
    memset(out, 0, sizeof *out);
    int fd;
    if (vg_open_regular_file("golden", file, &fd) != VG_OK) {
        char why[600];
        snprintf(why, sizeof why, "%s", vg_last_error() + strlen("golden: "));
        return ffail(file, VG_ERR_IO, "%s", why);
    }
    close(fd);

    if (!(flags & VG_GOLDEN_READ_NO_SEAL)) {
        int unsealed = 0;
        vg_status sst = check_seal(file, &unsealed);
        if (sst != VG_OK)
            return sst;
        if (unsealed)
            return ffail(file, VG_ERR_FORMAT,
                         "no voltgate seal (written before golden files were sealed, or by "
                         "another tool): unsealed files are not parsed, since libhdf5 1.10 "
                         "can crash on a damaged one; `voltgate golden seal` checks it in a "
                         "child process and seals it");
    }

    h5_quiet q;
    quiet_begin(&q);
    reader r = {file, -1, 0, flags};
    vg_status st = VG_OK;
    htri_t is = H5Fis_hdf5(file);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        st = ffail(file, VG_ERR_FORMAT, "not an HDF5 file (no HDF5 signature found)");
    } else {
        r.fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (r.fid < 0) {
            char msg[420];
            hdf5_message(msg, sizeof msg);
            st = ffail(file, VG_ERR_FORMAT, "cannot open as HDF5 (truncated or damaged?): %s",
                       msg);
        }
    }
    if (st == VG_OK)
        st = read_all(&r, out);
    if (r.fid >= 0)
        H5Fclose(r.fid);
    quiet_end(&q);
    if (st != VG_OK)
        vg_golden_free(out);
    return st;
}

vg_status vg_golden_seal(const char *file)
{
    if (!file)
        return vg_fail(VG_ERR_INVALID_ARG, "golden seal: NULL argument");
    int unsealed = 0;
    vg_status st = check_seal(file, &unsealed);
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
        return ffail(file, VG_ERR_IO, "cannot open: %s", strerror(errno));
    if (!S_ISREG(sb.st_mode) || sb.st_size <= SEAL_BYTES ||
        (unsigned long long)sb.st_size > 4 * (unsigned long long)VG_GOLDEN_MAX_DATASET_BYTES)
        return st;   /* check_seal said why */
    FILE *fp = fopen(file, "rb");
    if (!fp)
        return ffail(file, VG_ERR_IO, "cannot open: %s", strerror(errno));
    size_t len = (size_t)sb.st_size;
    uint8_t *image = malloc(len);
    size_t got = image ? fread(image, 1, len, fp) : 0;
    fclose(fp);
    if (!image)
        return ffail(file, VG_ERR_NO_MEMORY, "out of memory for %zu bytes", len);
    if (got != len) {
        free(image);
        return ffail(file, VG_ERR_IO, "changed while being sealed");
    }
    if (memcmp(image, SEAL_MAGIC, strlen(SEAL_MAGIC)) != 0) {
        free(image);
        return st;   /* not a voltgate file at all: check_seal said why */
    }
    seal_image(image, len);
    st = publish_image(file, image, len);
    free(image);
    return st;
}
