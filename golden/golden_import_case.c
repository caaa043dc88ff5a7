/*
 * golden import: what the import adds to the weight to make a golden file
 * -- the provenance (the format, how it was detected, the tensors read and
 * the SHA-256 of every checkpoint file opened) and the one case (synthetic
 * X, the token counts, the FP64 reference).  Separate from the readers: it
 * reads no tensor, only the finished weight.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_import.h"
#include "sha256.h"

static vg_status file_sha256(const char *path, char hex[65])
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return vg_fail(VG_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    vg_sha256_ctx c;
    vg_sha256_init(&c);
    static uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
        vg_sha256_update(&c, buf, n);
    int bad = ferror(fp);
    fclose(fp);
    if (bad)
        return vg_fail(VG_ERR_IO, "%s: read error", path);
    uint8_t d[32];
    vg_sha256_final(&c, d);
    vg_sha256_to_hex(d, hex);
    return VG_OK;
}

vg_status golden_import_provenance(imp *im, const char *rows_note)
{
    enum { CAP = 60000 }; /* under HDF5's 64 KiB attribute limit */
    char *p = malloc(CAP);
    if (!p)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    size_t used = (size_t)snprintf(p, CAP, "format=%s; family=%s; detected: %s; tensors=%s%s",
                                   golden_import_src_names[im->fmt], vg_family_name(im->f->family),
                                   im->detected, im->tensors, rows_note);
    int count = im->c.weight_map ? im->c.nshards : 1;
    for (int i = 0; i < count && used + 1 < CAP; i++) {
        const char *path = im->c.weight_map ? im->c.shards[i].st->path : im->c.single->path;
        char hex[65];
        vg_status r = file_sha256(path, hex);
        if (r != VG_OK) {
            free(p);
            return r;
        }
        used += (size_t)snprintf(p + used, CAP - used, "%s%s sha256=%s", i ? ", " : "; files=",
                                 base_name(path), hex);
    }
    if (used >= CAP) /* snprintf stopped at the end; say so rather than cut a hash silently */
        memcpy(p + CAP - 5, " ...", 5);
    im->f->provenance = p;
    return VG_OK;
}

/* ---- the case ------------------------------------------------------------------------------- */

vg_status golden_import_make_case(const vg_golden_import_args *a, vg_golden_file *f,
                                  const char *label, const char *weight)
{
    f->cases = calloc(1, sizeof *f->cases);
    if (!f->cases)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    f->ncases = 1;
    vg_golden_case *c = &f->cases[0];
    if (f->path == VG_PATH_MOE)
        snprintf(c->name, sizeof c->name, "r0");
    else
        snprintf(c->name, sizeof c->name, f->path == VG_PATH_DENSE ? "m%03d" : "t%02d",
                 (int)a->tokens);
    c->y_dtype = VG_DTYPE_F32;
    c->x_seed = a->seed;
    c->tokens = malloc((size_t)f->groups * sizeof(int32_t));
    if (f->path != VG_PATH_DENSE)
        c->offsets = malloc(((size_t)f->groups + 1) * sizeof(int32_t));
    if (!c->tokens || (f->path != VG_PATH_DENSE && !c->offsets))
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    int64_t m = 0;
    for (int32_t g = 0; g < f->groups; g++) {
        c->tokens[g] = a->routing ? a->routing[g] : a->tokens;
        if (c->offsets)
            c->offsets[g] = (int32_t)m;
        m += c->tokens[g];
    }
    if (c->offsets)
        c->offsets[f->groups] = (int32_t)m;
    if (m < 1 || m > VG_GOLDEN_MAX_DIM)
        return vg_fail(VG_ERR_INVALID_ARG, "import: the routing gives %lld tokens in all "
                       "(1 to %d)", (long long)m, VG_GOLDEN_MAX_DIM);
    c->m = (int32_t)m;
    c->x = malloc((size_t)c->m * (size_t)f->k * sizeof(uint16_t));
    if (!c->x)
        return vg_fail(VG_ERR_NO_MEMORY, "import: out of memory");
    vg_status r = vg_golden_synth_x(a->seed, c->name, c->m, f->k, c->x);
    if (r == VG_OK)
        r = vg_golden_check_bounds(label, f);
    if (r != VG_OK)
        return r;
    if ((r = vg_golden_compute_reference(f, c)) != VG_OK) {
        /* an all-zero or overflowing reference: name the checkpoint */
        char why[600];
        snprintf(why, sizeof why, "%s", vg_last_error());
        return vg_fail(r, "%s: weight '%s': %s", label, weight, why);
    }
    return VG_OK;
}
