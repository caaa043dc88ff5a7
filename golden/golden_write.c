/*
 * Golden case files: the HDF5 writer.  golden/SCHEMA.md is the layout; this
 * file must follow it.  What the reader refuses, the writer refuses before
 * writing; the file is built in memory, sealed (golden_seal.c) and written
 * in one piece.
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

#include "voltgate/family.h"
#include "fileio.h"
#include "golden_h5.h"
#include "sha256.h"
#include "voltgate/quant.h"

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
    golden_hdf5_message(msg, sizeof msg);
    w->st = golden_fail(w->file, VG_ERR_IO, "writing %s: %s", what, msg);
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
    if (ds < 0 || H5Dwrite(ds, golden_h5_mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
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
        return golden_fail(file, VG_ERR_INVALID_ARG, "invalid family %d or path %d", (int)f->family,
                           (int)f->path);
    if (f->groups < 1 || (f->path == VG_PATH_DENSE && f->groups != 1))
        return golden_fail(file, VG_ERR_INVALID_ARG, "groups=%d invalid for path %s",
                           (int)f->groups, vg_path_name(f->path));
    if (f->ncases < 1 || !f->cases)
        return golden_fail(file, VG_ERR_INVALID_ARG, "no cases to write");
    if (!f->w_dequant || (f->weights_stored && !f->w_q))
        return golden_fail(file, VG_ERR_INVALID_ARG, "weight buffers missing");
    for (int32_t i = 0; i < f->ncases; i++) {
        const vg_golden_case *c = &f->cases[i];
        if (!c->name[0] || !c->x || !c->y_ref || !c->tokens ||
            (f->path != VG_PATH_DENSE && !c->offsets))
            return golden_fail(file, VG_ERR_INVALID_ARG, "case %d is incomplete", (int)i);
        if (!(isfinite(c->tol_rel_rms) && isfinite(c->tol_max_abs) && c->tol_rel_rms > 0 &&
              c->tol_rel_rms < 1 && c->tol_max_abs > 0))
            return golden_fail(file, VG_ERR_INVALID_ARG,
                               "case '%s': tolerances tol_rel_rms %g / tol_max_abs %g are not sane "
                               "(finite, 0 < rel < 1, abs > 0)",
                               c->name, c->tol_rel_rms, c->tol_max_abs);
        size_t mn = (size_t)c->m * (size_t)f->n;
        for (size_t j = 0; j < mn; j++)
            if (!isfinite(c->y_ref[j]))
                return golden_fail(file, VG_ERR_INVALID_ARG,
                                   "case '%s': y_ref element %zu is not finite", c->name, j);
    }
    vg_status st = vg_golden_check_bounds(file, f);
    if (st != VG_OK)
        return st;
    if (f->w_dequant) {
        size_t welems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
        for (size_t i = 0; i < welems; i++)
            if (!isfinite(f->w_dequant[i]))
                return golden_fail(file, VG_ERR_INVALID_ARG, "w_dequant element %zu is not finite",
                                   i);
    }
    return VG_OK;
}

/* The temporary a writer of `file` uses: `<file>.tmp.<pid>`. */
static vg_status temp_name(const char *file, char *tmp, size_t size)
{
    if ((size_t)snprintf(tmp, size, "%s.tmp.%ld", file, (long)getpid()) >= size)
        return vg_fail(VG_ERR_INVALID_ARG, "golden write: file name too long: %s", file);
    return VG_OK;
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
        return golden_fail(file, st, "%s", vg_last_error());

    char tmp[4096];
    if ((st = temp_name(file, tmp, sizeof tmp)) != VG_OK)
        return st;

    /* The file is built in memory (HDF5's core driver, no backing store)
     * and written out by vg_write_file_atomic below: every disk error is then ours,
     * with the OS's reason (Not a directory, Read-only file system,
     * Operation not permitted, No space left on device, File too large) in
     * one line, and HDF5 never holds a file whose close failed (with the
     * sec2 driver, a failed H5Fclose on a full disk left the file in HDF5's
     * ID table and the process crashed at exit in H5_term_library). */
    h5_quiet q;
    golden_quiet_begin(&q);
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
        golden_hdf5_message(msg, sizeof msg);
        golden_quiet_end(&q);
        return golden_fail(file, VG_ERR_IO, "cannot create %s in memory: %s", tmp, msg);
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
    const elem_type tq = golden_wq_type(f->family), ts = golden_wscale_type(f->family),
                    tz = golden_wzero_type(f->family);
    const int has_ts = vg_family_has_tensor_scale(f->family);
    hsize_t dq[3] = {G, N, (hsize_t)(lay.q_bytes / (size_t)N / tq.size)};
    hsize_t dsc[3] = {G, (hsize_t)lay.scale_rows, (hsize_t)lay.scale_cols};
    hsize_t dw[3] = {G, N, K}, one = 1;
    if (f->weights_stored) {
        put_dataset(&w, root, root, "w_q", &tq, 3, dq, f->w_q);
        if (lay.scale_bytes)
            put_dataset(&w, root, root, "w_scale", &ts, 3, dsc, f->w_scale);
        if (lay.zero_bytes)
            put_dataset(&w, root, root, "w_zero", &tz, 3, dsc, f->w_zero);
        if (has_ts)
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
        if (has_ts) {
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
        put_f64(&w, cg, "y_ref_norm", golden_norm2(c->y_ref, (size_t)c->m * (size_t)f->n));
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
        w.st = golden_fail(file, VG_ERR_NO_MEMORY, "out of memory for a file image of %zd bytes",
                           image_len);
    if (w.st == VG_OK &&
        H5Fget_file_image(w.fid, (uint8_t *)image + SEAL_BYTES, (size_t)image_len) != image_len)
        wfail_h5(&w, "file (image)");
    if (H5Fclose(w.fid) < 0)  /* in memory: nothing to fail on but our own bugs */
        wfail_h5(&w, "file (close)");
    golden_quiet_end(&q);

    if (w.st == VG_OK) {
        golden_seal_image(image, SEAL_BYTES + (size_t)image_len);
        w.st = vg_write_file_atomic(file, file, image, SEAL_BYTES + (size_t)image_len, NULL);
    }
    free(image);
    return w.st;
}
