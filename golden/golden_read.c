/*
 * Golden case files: the validating reader.  golden/SCHEMA.md is the layout;
 * this file must follow it.  A recipe weight is rebuilt by the generator
 * (vg_golden_rebuild_recipe, golden_gen.c) and checked against the hashes
 * the file stores.
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
#include "golden_recipe.h"

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
    w.tensor_scale = vg_family_has_tensor_scale(f->family) ? f->w_tensor_scale : 1.0f;
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

/* ======================================================================= reader */

/* Compares a rebuilt buffer with the file's sha256_<name>. */
static vg_status check_recipe_hash(reader *r, const char *name, const void *data, size_t bytes)
{
    char attr[96], want_hex[80], hex[65];
    snprintf(attr, sizeof attr, "sha256_%s", name);
    vg_status st = golden_get_str(r, r->fid, "", attr, want_hex, sizeof want_hex);
    if (st != VG_OK)
        return st;
    vg_sha256_hex(data, bytes, hex);
    if (strcmp(hex, want_hex) != 0)
        return golden_fail(r->file, VG_ERR_CHECKSUM,
                           "recipe weight '%s': the regenerated data (%.16s...) does not match %s "
                           "(%.16s...): the generator changed, regenerate the file",
                           name, hex, attr, want_hex);
    return VG_OK;
}

/* Rebuilds a recipe weight from its attributes (the generator does) and
 * checks it against the hashes the file stores. */
static vg_status rebuild_recipe(reader *r, vg_golden_file *f)
{
    size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
    if (elems > RECIPE_MAX_ELEMENTS)
        return golden_fail(r->file, VG_ERR_LIMIT,
                           "recipe weight of %zu elements exceeds the bound of %zu", elems,
                           RECIPE_MAX_ELEMENTS);
    vg_status st = vg_golden_rebuild_recipe(f);
    if (st != VG_OK)
        return golden_fail(r->file, st, "%s", vg_last_error());
    size_t G = (size_t)f->groups;
    st = check_recipe_hash(r, "w_q", f->w_q, G * f->layout.q_bytes);
    if (st == VG_OK && f->layout.scale_bytes)
        st = check_recipe_hash(r, "w_scale", f->w_scale, G * f->layout.scale_bytes);
    if (st == VG_OK && f->layout.zero_bytes)
        st = check_recipe_hash(r, "w_zero", f->w_zero, G * f->layout.zero_bytes);
    if (st == VG_OK && vg_family_has_tensor_scale(f->family))
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
    const elem_type tq = golden_wq_type(f->family), ts = golden_wscale_type(f->family),
                    tz = golden_wzero_type(f->family);
    int n = 0;
    out[n++] = (weight_set){"w_q", tq, 3, {G, N, (hsize_t)(f->layout.q_bytes / (size_t)N / tq.size)}};
    if (f->layout.scale_bytes)
        out[n++] = (weight_set){"w_scale", ts, 3,
                                {G, (hsize_t)f->layout.scale_rows, (hsize_t)f->layout.scale_cols}};
    if (f->layout.zero_bytes)
        out[n++] = (weight_set){"w_zero", tz, 3,
                                {G, (hsize_t)f->layout.scale_rows, (hsize_t)f->layout.scale_cols}};
    if (vg_family_has_tensor_scale(f->family))
        out[n++] = (weight_set){"w_tensor_scale", T_F32, 1, {1, 0, 0}};
    out[n++] = (weight_set){"w_dequant", T_F32, 3, {G, N, K}};
    return n;
}

/* The weight's shape checks, reading no data: a stored weight's datasets
 * (golden_open_dataset: presence, type, extents, size bounds), a recipe's element
 * bound.  Adds the bytes a stored weight claims to *claimed. */
static vg_status precheck_weight(reader *r, const vg_golden_file *f, size_t *claimed)
{
    if (!f->weights_stored) {
        size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
        if (elems > RECIPE_MAX_ELEMENTS)
            return golden_fail(r->file, VG_ERR_LIMIT,
                               "recipe weight of %zu elements exceeds the bound of %zu", elems,
                               RECIPE_MAX_ELEMENTS);
        return VG_OK;
    }
    weight_set sets[5];
    int n = weight_sets(f, sets);
    for (int i = 0; i < n; i++) {
        hid_t ds;
        size_t bytes;
        vg_status st = golden_open_dataset(r, r->fid, "", sets[i].name, &sets[i].t, sets[i].rank,
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
        st = golden_get_dataset(r, r->fid, r->fid, "", sets[i].name, &sets[i].t, sets[i].rank,
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
                st = golden_fail(r->file, VG_ERR_FORMAT,
                                 "dataset 'w_tensor_scale': %g is not a "
                                 "finite positive scale",
                                 (double)f->w_tensor_scale);
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
        return golden_rfail_h5(r, VG_ERR_FORMAT, what);
    }
    vg_status st = golden_get_i32(r, cg, where, "M", 1, VG_GOLDEN_MAX_DIM, &c->m);
    int64_t tok[VG_GOLDEN_MAX_GROUPS];
    if (st == VG_OK)
        st = golden_get_ints(r, cg, where, "tokens", tok, f->groups, 0);
    char ydt[16];
    if (st == VG_OK)
        st = golden_get_str(r, cg, where, "y_dtype", ydt, sizeof ydt);
    if (st == VG_OK) {
        if (!strcmp(ydt, "f32"))
            c->y_dtype = VG_DTYPE_F32;
        else if (!strcmp(ydt, "f16"))
            c->y_dtype = VG_DTYPE_F16;
        else
            st = golden_fail(r->file, VG_ERR_FORMAT,
                             "%sattribute 'y_dtype': unknown '%s' (f32 or f16)", where, ydt);
    }
    if (st == VG_OK)
        st = golden_get_f64(r, cg, where, "tol_rel_rms", &c->tol_rel_rms);
    if (st == VG_OK)
        st = golden_get_f64(r, cg, where, "tol_max_abs", &c->tol_max_abs);
    if (st == VG_OK && !(c->tol_rel_rms > 0 && c->tol_rel_rms < 1 && c->tol_max_abs > 0))
        st = golden_fail(r->file, VG_ERR_FORMAT,
                         "%sattributes 'tol_rel_rms' %g / 'tol_max_abs' %g are not sane tolerances",
                         where, c->tol_rel_rms, c->tol_max_abs);
    if (st == VG_OK)
        st = golden_get_f64(r, cg, where, "y_ref_norm", &c->y_ref_norm);
    int64_t xs = 0;
    if (st == VG_OK)
        st = golden_get_ints(r, cg, where, "x_seed", &xs, 1, 1);
    c->x_seed = (uint64_t)xs;

    /* tokens: non-negative, summing to M; dense: one group holding all */
    if (st == VG_OK) {
        c->tokens = malloc((size_t)f->groups * sizeof(int32_t));
        if (!c->tokens)
            st = golden_fail(r->file, VG_ERR_NO_MEMORY, "out of memory");
        int64_t sum = 0;
        for (int32_t g = 0; st == VG_OK && g < f->groups; g++) {
            if (tok[g] < 0 || tok[g] > VG_GOLDEN_MAX_DIM)
                st = golden_fail(r->file, VG_ERR_FORMAT,
                                 "%sattribute 'tokens'[%d] = %lld is invalid", where, (int)g,
                                 (long long)tok[g]);
            else
                c->tokens[g] = (int32_t)tok[g];
            sum += tok[g];
        }
        if (st == VG_OK && sum != c->m)
            st = golden_fail(r->file, VG_ERR_FORMAT,
                             "%sattribute 'tokens' sums to %lld but 'M' is %d", where,
                             (long long)sum, (int)c->m);
    }
    const hsize_t M = (hsize_t)c->m, N = (hsize_t)f->n, K = (hsize_t)f->k;
    hsize_t dx[2] = {M, K}, dy[2] = {M, N}, doff = (hsize_t)f->groups + 1;
    if (st == VG_OK)
        st = golden_get_dataset(r, cg, cg, where, "x", &T_FP16, 2, dx, (void **)&c->x);
    if (st == VG_OK && f->path != VG_PATH_DENSE) {
        st =
            golden_get_dataset(r, cg, cg, where, "offsets", &T_I32, 1, &doff, (void **)&c->offsets);
        /* the offsets row must be exactly the prefix sums of tokens */
        for (int32_t g = 0; st == VG_OK && g <= f->groups; g++) {
            int32_t want = g == 0 ? 0 : c->offsets[g - 1] + c->tokens[g - 1];
            if (c->offsets[g] != want)
                st = golden_fail(r->file, VG_ERR_FORMAT,
                                 "dataset '%soffsets': entry %d is %d, expected %d from 'tokens'",
                                 where, (int)g, (int)c->offsets[g], (int)want);
        }
    } else if (st == VG_OK && H5Lexists(cg, "offsets", H5P_DEFAULT) > 0) {
        st = golden_fail(r->file, VG_ERR_FORMAT, "dataset '%soffsets' present in a dense case",
                         where);
    }
    if (st == VG_OK)
        st = golden_get_dataset(r, cg, cg, where, "y_ref", &T_F32, 2, dy, (void **)&c->y_ref);
    if (st == VG_OK) {
        for (size_t i = 0; i < (size_t)(M * K); i++)
            if ((c->x[i] & 0x7C00u) == 0x7C00u) {
                st = golden_fail(r->file, VG_ERR_FORMAT, "dataset '%sx': element %zu is not finite",
                                 where, i);
                break;
            }
    }
    if (st == VG_OK) {
        size_t count = (size_t)(M * N);
        for (size_t i = 0; i < count; i++)
            if (!isfinite(c->y_ref[i])) {
                st = golden_fail(r->file, VG_ERR_FORMAT,
                                 "dataset '%sy_ref': element %zu is not finite", where, i);
                break;
            }
        double nrm = golden_norm2(c->y_ref, count);
        /* an all-zero reference would let an all-zero result pass */
        if (st == VG_OK && !(nrm > 0.0))
            st = golden_fail(r->file, VG_ERR_FORMAT, "dataset '%sy_ref' is all zero", where);
        if (st == VG_OK && fabs(nrm - c->y_ref_norm) > 1e-6 * nrm)
            st = golden_fail(r->file, VG_ERR_FORMAT,
                             "%sattribute 'y_ref_norm' = %.9g disagrees with ||y_ref|| = %.9g",
                             where, c->y_ref_norm, nrm);
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
        return golden_rfail_h5(r, VG_ERR_FORMAT, "group 'cases'");
    if ((size_t)n >= sizeof(((vg_golden_case *)0)->name)) {
        name[0] = '\0';
        return golden_fail(r->file, VG_ERR_FORMAT,
                           "group 'cases' holds a name of %zd bytes (at most 31)", n);
    }
    if (n == 0 || strchr(name, '/') || !strcmp(name, ".") || !strcmp(name, ".."))
        return golden_fail(r->file, VG_ERR_FORMAT,
                           "group 'cases': entry %d has the invalid name '%s'", (int)i, name);
    if (i > 0 && strcmp(name, prev) == 0)
        return golden_fail(r->file, VG_ERR_FORMAT,
                           "group 'cases' lists the case name '%s' twice (entries %d and %d): the "
                           "group's name index is damaged",
                           name, (int)i - 1, (int)i);
    if (i > 0 && strcmp(name, prev) < 0)
        return golden_fail(
            r->file, VG_ERR_FORMAT,
            "group 'cases': entry %d '%s' sorts before entry %d '%s': the group's name "
            "index is damaged",
            (int)i, name, (int)i - 1, prev);
    return VG_OK;
}

/* The shape checks of one case, reading no data: its M attribute and the
 * extents of x [M][K], offsets [groups + 1] and y_ref [M][N] (golden_open_dataset).
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
        return golden_rfail_h5(r, VG_ERR_FORMAT, what);
    }
    int32_t m = 0;
    vg_status st = golden_get_i32(r, cg, where, "M", 1, VG_GOLDEN_MAX_DIM, &m);
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
        st = golden_open_dataset(r, cg, where, sets[i].name, sets[i].t, sets[i].rank, sets[i].dims,
                                 &ds, &bytes);
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
    vg_status st = golden_get_i32(r, r->fid, "", "schema_version", VG_GOLDEN_SCHEMA_VERSION,
                                  VG_GOLDEN_SCHEMA_VERSION, &version);
    if (st != VG_OK)
        return st;
    if ((st = golden_get_str(r, r->fid, "", "generator", f->generator, sizeof f->generator)) !=
        VG_OK)
        return st;
    if ((st = golden_get_str(r, r->fid, "", "source", f->source, sizeof f->source)) != VG_OK)
        return st;
    if (H5Aexists(r->fid, "provenance") > 0) { /* imported files only */
        enum { PROVENANCE_MAX = 1 << 16 };
        if (!(f->provenance = malloc(PROVENANCE_MAX)))
            return golden_fail(r->file, VG_ERR_NO_MEMORY, "out of memory");
        if ((st = golden_get_str(r, r->fid, "", "provenance", f->provenance, PROVENANCE_MAX)) !=
            VG_OK)
            return st;
    }
    if ((st = golden_get_str(r, r->fid, "", "family", buf, sizeof buf)) != VG_OK)
        return st;
    if (vg_family_parse(buf, &f->family) != VG_OK)
        return golden_fail(r->file, VG_ERR_FORMAT, "attribute 'family': unknown family '%s'", buf);
    if ((st = golden_get_str(r, r->fid, "", "path", buf, sizeof buf)) != VG_OK)
        return st;
    if (vg_path_parse(buf, &f->path) != VG_OK)
        return golden_fail(r->file, VG_ERR_FORMAT, "attribute 'path': unknown path '%s'", buf);
    if ((st = golden_get_i32(r, r->fid, "", "N", 1, VG_GOLDEN_MAX_DIM, &f->n)) != VG_OK ||
        (st = golden_get_i32(r, r->fid, "", "K", 1, VG_GOLDEN_MAX_DIM, &f->k)) != VG_OK ||
        (st = golden_get_i32(r, r->fid, "", "groups", 1, VG_GOLDEN_MAX_GROUPS, &f->groups)) !=
            VG_OK)
        return st;
    if (f->path == VG_PATH_DENSE && f->groups != 1)
        return golden_fail(r->file, VG_ERR_FORMAT, "attribute 'groups' = %d but path is dense",
                           (int)f->groups);
    int64_t seed;
    if ((st = golden_get_ints(r, r->fid, "", "seed", &seed, 1, 1)) != VG_OK)
        return st;
    f->seed = (uint64_t)seed;
    if (vg_weight_layout_of(f->family, f->n, f->k, &f->layout) != VG_OK)
        return golden_fail(r->file, VG_ERR_FORMAT, "attributes N/K: %s", vg_last_error());
    if ((st = golden_get_str(r, r->fid, "", "weights", buf, sizeof buf)) != VG_OK)
        return st;
    if (!strcmp(buf, "stored"))
        f->weights_stored = 1;
    else if (!strcmp(buf, "recipe"))
        f->weights_stored = 0;
    else
        return golden_fail(r->file, VG_ERR_FORMAT,
                           "attribute 'weights': unknown '%s' (stored or recipe)", buf);
    int32_t ncases;
    if ((st = golden_get_i32(r, r->fid, "", "cases", 1, VG_GOLDEN_MAX_CASES, &ncases)) != VG_OK)
        return st;

    /* the weight's shapes (no data read) */
    size_t weight_claimed = 0;
    if ((st = precheck_weight(r, f, &weight_claimed)) != VG_OK)
        return st;

    /* cases */
    if (H5Lexists(r->fid, "cases", H5P_DEFAULT) <= 0)
        return golden_fail(r->file, VG_ERR_FORMAT, "group 'cases' is missing");
    hid_t cases = H5Gopen2(r->fid, "cases", H5P_DEFAULT);
    if (cases < 0)
        return golden_rfail_h5(r, VG_ERR_FORMAT, "group 'cases'");
    H5G_info_t ginfo;
    if (H5Gget_info(cases, &ginfo) < 0)
        st = golden_rfail_h5(r, VG_ERR_FORMAT, "group 'cases'");
    else if (ginfo.nlinks != (hsize_t)ncases)
        st = golden_fail(r->file, VG_ERR_FORMAT,
                         "attribute 'cases' = %d but group 'cases' holds %llu", (int)ncases,
                         (unsigned long long)ginfo.nlinks);
    if (st == VG_OK) {
        f->cases = calloc((size_t)ncases, sizeof *f->cases);
        if (!f->cases)
            st = golden_fail(r->file, VG_ERR_NO_MEMORY, "out of memory");
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
        st = golden_fail(r->file, VG_ERR_LIMIT,
                         "the datasets claim %zu bytes, past the %zu MiB bound of a file", claimed,
                         (4 * VG_GOLDEN_MAX_DATASET_BYTES) >> 20);

    /* the weight */
    if (st == VG_OK)
        st = f->weights_stored ? read_weight(r, f) : rebuild_recipe(r, f);
    size_t welems = f->w_dequant ? (size_t)f->groups * (size_t)f->n * (size_t)f->k : 0;
    for (size_t i = 0; st == VG_OK && i < welems; i++)
        if (!isfinite(f->w_dequant[i]))
            st = golden_fail(r->file, VG_ERR_FORMAT,
                             "dataset 'w_dequant': element %zu is not finite", i);

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
        return golden_fail(file, VG_ERR_IO, "%s", why);
    }
    close(fd);

    if (!(flags & VG_GOLDEN_READ_NO_SEAL)) {
        int unsealed = 0;
        vg_status sst = golden_check_seal(file, &unsealed);
        if (sst != VG_OK)
            return sst;
        if (unsealed)
            return golden_fail(file, VG_ERR_FORMAT,
                               "no voltgate seal (written before golden files were sealed, or by "
                               "another tool): unsealed files are not parsed, since libhdf5 1.10 "
                               "can crash on a damaged one; `voltgate golden seal` checks it in a "
                               "child process and seals it");
    }

    h5_quiet q;
    golden_quiet_begin(&q);
    reader r = {file, -1, 0, flags};
    vg_status st = VG_OK;
    htri_t is = H5Fis_hdf5(file);
    if (is <= 0) {
        H5Eclear2(H5E_DEFAULT);
        st = golden_fail(file, VG_ERR_FORMAT, "not an HDF5 file (no HDF5 signature found)");
    } else {
        r.fid = H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT);
        if (r.fid < 0) {
            char msg[420];
            golden_hdf5_message(msg, sizeof msg);
            st = golden_fail(file, VG_ERR_FORMAT, "cannot open as HDF5 (truncated or damaged?): %s",
                             msg);
        }
    }
    if (st == VG_OK)
        st = read_all(&r, out);
    if (r.fid >= 0)
        H5Fclose(r.fid);
    golden_quiet_end(&q);
    if (st != VG_OK)
        vg_golden_free(out);
    return st;
}
