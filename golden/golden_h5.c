/*
 * The HDF5 side of the golden files, shared by the writer and the reader:
 * HDF5's error stack made one line, the element types of each family's
 * datasets, and the reader's checked attribute and dataset access.
 *
 * The reader trusts nothing: every attribute is checked for type and range,
 * every dataset for presence, type class, element size, signedness, rank and
 * extents (against the attributes) and for its SHA-256 before the data is
 * handed out.  Sizes are bounded before anything is allocated.  HDF5's own
 * error printing is switched off for the duration of each call; when an
 * HDF5 call fails, its error stack is walked into the one-line message.
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

/* ---- HDF5 error handling ------------------------------------------------------ */

void golden_quiet_begin(h5_quiet *q)
{
    H5Eget_auto2(H5E_DEFAULT, &q->func, &q->data);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

void golden_quiet_end(const h5_quiet *q)
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
void golden_hdf5_message(char *buf, size_t len)
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

vg_status golden_fail(const char *file, vg_status s, const char *fmt, ...)
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

/* Element type of w_q, w_scale and w_zero of a family: its unit in the
 * family table (kernels/family.c), which holds SCHEMA.md's formats. */
static elem_type unit_type(const vg_family_unit *u)
{
    if (!u->bytes)
        return (elem_type){0, 0, 1, "?"};
    return (elem_type){u->is_float, u->is_float, u->bytes, u->format};
}

elem_type golden_wq_type(vg_family f)
{
    const vg_family_desc *d = vg_family_desc_of(f);
    return d ? unit_type(&d->q) : (elem_type){0, 0, 1, "?"};
}

elem_type golden_wscale_type(vg_family f)
{
    const vg_family_desc *d = vg_family_desc_of(f);
    return d ? unit_type(&d->scale) : (elem_type){0, 0, 1, "?"};
}

elem_type golden_wzero_type(vg_family f)
{
    const vg_family_desc *d = vg_family_desc_of(f);
    return d ? unit_type(&d->zero) : (elem_type){0, 0, 1, "?"};
}

hid_t golden_h5_mem_type(const elem_type *t)
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

double golden_norm2(const float *y, size_t count)
{
    double s = 0.0;
    for (size_t i = 0; i < count; i++)
        s += (double)y[i] * (double)y[i];
    return sqrt(s);
}

/* ---- the reader's checked attributes and datasets ------------------------------- */

vg_status golden_rfail_h5(reader *r, vg_status s, const char *what)
{
    char msg[420];
    golden_hdf5_message(msg, sizeof msg);
    return golden_fail(r->file, s, "%s: %s", what, msg);
}

/* Opens attribute `name` on loc, checking it exists. */
static vg_status open_attr(reader *r, hid_t loc, const char *where, const char *name,
                           hid_t *out)
{
    htri_t ex = H5Aexists(loc, name);
    if (ex < 0)
        return golden_rfail_h5(r, VG_ERR_FORMAT, where);
    if (ex == 0)
        return golden_fail(r->file, VG_ERR_FORMAT, "%sattribute '%s' is missing", where, name);
    *out = H5Aopen(loc, name, H5P_DEFAULT);
    if (*out < 0) {
        char what[128];
        snprintf(what, sizeof what, "%sattribute '%s'", where, name);
        return golden_rfail_h5(r, VG_ERR_FORMAT, what);
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
vg_status golden_get_ints(reader *r, hid_t loc, const char *where, const char *name,
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
        return golden_fail(
            r->file, VG_ERR_FORMAT,
            "%sattribute '%s': expected %lld integer(s), found %s with %lld element(s)", where,
            name, (long long)count, ok ? "integers" : "a non-integer type", (long long)n);
    }
    H5Tclose(t);
    herr_t e = H5Aread(a, is_unsigned64 ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64, out);
    H5Aclose(a);
    if (e < 0) {
        char what[128];
        snprintf(what, sizeof what, "%sattribute '%s'", where, name);
        return golden_rfail_h5(r, VG_ERR_FORMAT, what);
    }
    return VG_OK;
}

vg_status golden_get_i32(reader *r, hid_t loc, const char *where, const char *name,
                         int64_t lo, int64_t hi, int32_t *out)
{
    int64_t v;
    vg_status st = golden_get_ints(r, loc, where, name, &v, 1, 0);
    if (st != VG_OK)
        return st;
    if (v < lo || v > hi)
        return golden_fail(r->file, lo == hi ? VG_ERR_FORMAT : VG_ERR_LIMIT,
                           "%sattribute '%s' = %lld is outside [%lld, %lld]", where, name,
                           (long long)v, (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return VG_OK;
}

vg_status golden_get_f64(reader *r, hid_t loc, const char *where, const char *name,
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
        return golden_fail(r->file, VG_ERR_FORMAT, "%sattribute '%s': expected one float", where,
                           name);
    }
    herr_t e = H5Aread(a, H5T_NATIVE_DOUBLE, out);
    H5Aclose(a);
    if (e < 0) {
        char what[128];
        snprintf(what, sizeof what, "%sattribute '%s'", where, name);
        return golden_rfail_h5(r, VG_ERR_FORMAT, what);
    }
    if (!isfinite(*out))
        return golden_fail(r->file, VG_ERR_FORMAT, "%sattribute '%s' is not finite", where, name);
    return VG_OK;
}

/* String attribute (fixed or variable length) into buf. */
vg_status golden_get_str(reader *r, hid_t loc, const char *where, const char *name, char *buf,
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
        return golden_fail(r->file, VG_ERR_FORMAT, "%sattribute '%s': expected one string", where,
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
            return golden_fail(r->file, VG_ERR_FORMAT,
                               "%sattribute '%s': string of %zu bytes is too long", where, name,
                               sz);
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
        return golden_rfail_h5(r, VG_ERR_FORMAT, what);
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
vg_status golden_open_dataset(reader *r, hid_t loc, const char *where, const char *name,
                              const elem_type *t, int rank, const hsize_t *want, hid_t *ds_out,
                              size_t *bytes_out)
{
    *ds_out = -1;
    *bytes_out = 0;
    htri_t ex = H5Lexists(loc, name, H5P_DEFAULT);
    if (ex <= 0)
        return golden_fail(r->file, VG_ERR_FORMAT, "dataset '%s%s' is missing", where, name);
    hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
    if (ds < 0) {
        char what[128];
        snprintf(what, sizeof what, "dataset '%s%s'", where, name);
        return golden_rfail_h5(r, VG_ERR_FORMAT, what);
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
        st = golden_fail(
            r->file, VG_ERR_FORMAT, "dataset '%s%s': expected %s (format %s), found %s", where,
            name, type_name(t->is_float, t->is_signed, t->size, b1, sizeof b1), t->format, found);
        goto done;
    }
    int nd = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
    hsize_t dims[8] = {0};
    if (nd != rank || nd > 8 || H5Sget_simple_extent_dims(sp, dims, NULL) < 0) {
        st = golden_fail(r->file, VG_ERR_FORMAT, "dataset '%s%s': expected rank %d, found rank %d",
                         where, name, rank, nd);
        goto done;
    }
    for (int i = 0; i < rank; i++)
        if (dims[i] != want[i]) {
            st = golden_fail(
                r->file, VG_ERR_FORMAT,
                "dataset '%s%s': extents %s disagree with the attributes (expected %s)", where,
                name, dims_str(rank, dims, b1, sizeof b1), dims_str(rank, want, b2, sizeof b2));
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
        st = golden_fail(r->file, VG_ERR_LIMIT,
                         "dataset '%s%s': %s elements exceed the %zu MiB bound", where, name,
                         dims_str(rank, dims, b1, sizeof b1), VG_GOLDEN_MAX_DATASET_BYTES >> 20);
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
            st = golden_rfail_h5(r, VG_ERR_FORMAT, what);
            goto done;
        }
        if (nfilters == 0 && stored < (hsize_t)bytes) {
            st =
                golden_fail(r->file, VG_ERR_FORMAT,
                            "dataset '%s%s': the file stores %llu of its %zu bytes (uncompressed): "
                            "truncated or damaged",
                            where, name, (unsigned long long)stored, bytes);
            goto done;
        }
        if (nfilters > 0 && (double)bytes > STORAGE_MAX_RATIO * (double)stored + STORAGE_SLACK) {
            st = golden_fail(
                r->file, VG_ERR_FORMAT,
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

/* Reads dataset `name` of loc: golden_open_dataset's checks, the per-file bound,
 * then allocates *out, reads it and checks the hash attribute
 * sha256_<name> of hash_loc. */
vg_status golden_get_dataset(reader *r, hid_t loc, hid_t hash_loc, const char *where,
                             const char *name, const elem_type *t, int rank,
                             const hsize_t *want, void **out)
{
    *out = NULL;
    hid_t ds;
    size_t bytes;
    vg_status st = golden_open_dataset(r, loc, where, name, t, rank, want, &ds, &bytes);
    if (st != VG_OK)
        return st;
    if (r->total_bytes + bytes > 4 * VG_GOLDEN_MAX_DATASET_BYTES) {
        st = golden_fail(r->file, VG_ERR_LIMIT,
                         "dataset '%s%s': %zu bytes would take the file past the %zu MiB bound",
                         where, name, bytes, (4 * VG_GOLDEN_MAX_DATASET_BYTES) >> 20);
        goto done;
    }
    *out = malloc(bytes ? bytes : 1);
    if (!*out) {
        st = golden_fail(r->file, VG_ERR_NO_MEMORY, "dataset '%s%s': out of memory for %zu bytes",
                         where, name, bytes);
        goto done;
    }
    r->total_bytes += bytes;
    if (H5Dread(ds, golden_h5_mem_type(t), H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
        char what[128];
        snprintf(what, sizeof what, "dataset '%s%s': read failed", where, name);
        st = golden_rfail_h5(r, VG_ERR_FORMAT, what);
        goto done;
    }
    /* the hash */
    {
        char attr[96], want_hex[80], hex[65];
        snprintf(attr, sizeof attr, "sha256_%s", name);
        st = golden_get_str(r, hash_loc, where, attr, want_hex, sizeof want_hex);
        if (st != VG_OK)
            goto done;
        vg_sha256_hex(*out, bytes, hex);
        if (strcmp(hex, want_hex) != 0)
            st = golden_fail(
                r->file, VG_ERR_CHECKSUM,
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
