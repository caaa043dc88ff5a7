/*
 * golden import: DeepSeek-style block FP8 (F8_E4M3 weight, F32
 * weight_scale_inv per 128x128 block) -> the fp8 family.  One source
 * format's reader: its tensors, its checks and its dequantization rule,
 * apart from the other formats'.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "golden_import.h"

vg_status golden_import_fp8(imp *im, const char *name, int64_t e, int32_t g)
{
    char sname[1024];
    if (im->a->scale && im->a->experts) {
        vg_status r = golden_import_expert_name(im->a->scale, im->expert, sname, sizeof sname);
        if (r != VG_OK)
            return r;
    } else if (im->a->scale) {
        snprintf(sname, sizeof sname, "%s", im->a->scale);
    } else {
        golden_import_join(sname, sizeof sname, name, "_scale_inv");
    }
    void *q = NULL, *s = NULL;
    int64_t qs[2], any2[2] = {-1, -1};
    vg_status r = golden_import_load(im, name, VG_ST_F8_E4M3, 2, any2, "E4M3 [N][K]", e, &q, qs);
    if (r != VG_OK)
        goto out;
    int64_t N = qs[0], K = qs[1];
    int64_t SR = (N + 127) / 128, SC = (K + 127) / 128;
    int64_t want_s[2] = {SR, SC};
    if (!golden_import_ckpt_has(&im->c, sname)) {
        r = vg_fail(VG_ERR_NOT_FOUND, "%s: no tensor named '%s' (an F8_E4M3 weight needs its F32 "
                    "block scale; give --scale)", im->c.label, sname);
        goto out;
    }
    const vg_st_tensor *st;
    int64_t es = e;
    if ((r = golden_import_peek(im, sname, &st)) != VG_OK)
        goto out;
    if (e >= 0 && st->rank == 2)
        es = -1; /* one scale for a fused weight would be unusual, but take it as stored */
    if ((r = golden_import_load(im, sname, VG_ST_F32, 2, want_s,
                                "ceil(N/128) x ceil(K/128), the DeepSeek weight_scale_inv", es,
                                &s, NULL)) != VG_OK) {
        if (strstr(vg_last_error(), "expected F32")) {
            char why[1024];
            snprintf(why, sizeof why, "%s", vg_last_error());
            r = vg_fail(r, "%s; scale '%s' must be F32 [%lld][%lld]", why, sname,
                        (long long)SR, (long long)SC);
        }
        goto out;
    }
    for (int64_t i = 0; i < SR * SC; i++)
        if (!isfinite(rd_f32(s, (size_t)i))) {
            r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element %lld is not finite (a NaN "
                        "scale)", im->c.label, sname, (long long)i);
            goto out;
        }
    const uint8_t *qb = q;
    for (int64_t i = 0; i < N * K; i++)
        if ((qb[i] & 0x7F) == 0x7F) {
            r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element %lld is an E4M3 NaN", im->c.label,
                        name, (long long)i);
            goto out;
        }
    if ((r = golden_import_begin(im, VG_FAMILY_FP8, N, K, g, name)) != VG_OK)
        goto out;
    vg_golden_file *f = im->f;
    memcpy((uint8_t *)f->w_q + (size_t)g * f->layout.q_bytes, q, f->layout.q_bytes);
    memcpy((uint8_t *)f->w_scale + (size_t)g * f->layout.scale_bytes, s, f->layout.scale_bytes);
    float *wd = f->w_dequant + (size_t)g * (size_t)(N * K);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) /* weight_scale_inv multiplies, despite its name */
            wd[n * K + k] = (float)((double)vg_e4m3_to_f32(qb[n * K + k]) *
                                    (double)rd_f32(s, (size_t)((n / 128) * SC + k / 128)));
out:
    free(q);
    free(s);
    return r;
}
