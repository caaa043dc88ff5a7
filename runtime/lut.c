/*
 * The LUT: the dispatch cache in a file, so a boot can skip measuring.
 *
 * The format is in lut_format.h; the writer (vg_lut_export*) is in
 * lut_export.c, the reader (vg_lut_import*) in lut_import.c.  This file
 * holds what sits around them: the kernel build id that stamps every entry
 * (here, because the Makefile passes VG_BUILD_ID to this object alone), the
 * gemm_lut_path templates and their folder, and the LUT step at the start
 * of a config-driven warm-up or engine (vg_lut_begin_for_config).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fileio.h"
#include "internal.h"
#include "lut_format.h"
#include "voltgate/coord.h"

/* The kernel build id.  The lead's Makefile may pass -DVG_BUILD_ID='"<git
 * sha>"'; without it, the compile date and time of this file stand in (a
 * rebuild then makes older LUTs stale, which is the safe side). */
#ifndef VG_BUILD_ID
#define VG_BUILD_ID "voltgate " __DATE__ " " __TIME__
#endif

uint64_t vg_build_id(void)
{
    static const char id[] = VG_BUILD_ID;
    uint64_t h = vg_fnv1a64(id, sizeof id - 1, VG_FNV_OFFSET);
    return h && h != LUT_UNSTAMPED ? h : 1;
}

/* The folder that holds path ("." for a bare name, "/" at the root) into
 * dir; 0 when path does not fit (dir then holds it cut). */
static int parent_folder(const char *path, char *dir, size_t size)
{
    int fits = snprintf(dir, size, "%s", path) < (int)size;
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, size, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return fits;
}

/* ---- path templates (checked by config.c) ----------------------------------- */

vg_status vg_lut_expand_path(vg_device *dev, const char *tmpl, char *out, size_t size)
{
    char why[160];
    if (!vg_lut_template_valid(tmpl, why, sizeof why))
        return vg_fail(VG_ERR_CONFIG, "gemm_lut_path: %s", why);
    vg_coord_stats cs;
    int rank = vg_device_coord_stats(dev, &cs) == VG_OK && cs.attached ? cs.rank : 0;
    size_t n = 0;
    for (const char *p = tmpl; *p;) {
        char piece[32];
        const char *add = piece;
        size_t alen;
        if (strncmp(p, "{device}", 8) == 0) {
            snprintf(piece, sizeof piece, "%d", dev->ordinal);
            p += 8;
        } else if (strncmp(p, "{arch}", 6) == 0) {
            if (dev->arch == 0)
                snprintf(piece, sizeof piece, "cpu");
            else
                snprintf(piece, sizeof piece, "sm%d", dev->arch);
            p += 6;
        } else if (strncmp(p, "{rank}", 6) == 0) {
            snprintf(piece, sizeof piece, "%d", rank);
            p += 6;
        } else {
            piece[0] = *p++;
            piece[1] = '\0';
        }
        alen = strlen(add);
        if (n + alen >= size)
            return vg_fail(VG_ERR_CONFIG, "gemm_lut_path: '%s' expands past %zu characters",
                           tmpl, size - 1);
        memcpy(out + n, add, alen);
        n += alen;
    }
    out[n] = '\0';
    return VG_OK;
}

vg_status vg_lut_prepare_path(const char *path)
{
    char dir[4200];
    if (!parent_folder(path, dir, sizeof dir))
        return vg_fail(VG_ERR_INVALID_ARG, "gemm_lut_path %s: path too long", path);
    /* mkdir -p, one component at a time. */
    for (char *p = dir + 1; ; p++) {
        if (*p == '/' || *p == '\0') {
            char keep = *p;
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST)
                return vg_fail(VG_ERR_IO, "gemm_lut_path %s: cannot create folder %s: %s", path,
                               dir, strerror(errno));
            *p = keep;
            if (keep == '\0')
                break;
        }
    }
    char what[4300];
    snprintf(what, sizeof what, "gemm_lut_path %s", path);
    return vg_check_output_path(what, path);
}

/* The LUT step at the start of a config-driven warm-up and of an engine's
 * open: expands cfg's
 * gemm_lut_path for dev into path[], prepares its folder (created, checked
 * writable: the error comes now, not at the export) and imports it when it
 * exists, only entries of `policies`.  path[0] is '\0' without a LUT. */
vg_status vg_lut_begin_for_config(vg_device *dev, vg_tuning *t, const vg_config *cfg,
                                  const uint64_t *policies, size_t npolicies, char *path,
                                  size_t size, vg_lut_report *lr)
{
    path[0] = '\0';
    memset(lr, 0, sizeof *lr);
    if (!cfg->f.gemm_lut_path)
        return VG_OK;
    vg_status st = vg_lut_expand_path(dev, cfg->f.gemm_lut_path, path, size);
    if (st == VG_OK)
        st = vg_lut_prepare_path(path);
    if (st != VG_OK) {
        path[0] = '\0';
        return st;
    }
    int flags = VG_LUT_STRICT_STAMPS |
                (cfg->f.reuse_lut_across_builds ? VG_LUT_REUSE_ACROSS_BUILDS : 0);
    if (access(path, F_OK) == 0)
        st = vg_lut_import_tuning(dev, t, path, policies, npolicies, flags, lr);
    return st;
}
