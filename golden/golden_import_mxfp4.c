/*
 * golden import: gpt-oss MXFP4 expert weights (_blocks/_scales, E8M0 scales;
 * gate_up rows interleaved) -> the mxfp4 family.  One source format's
 * reader: its tensors, its checks and its dequantization rule, apart from
 * the other formats'.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "golden_import.h"

vg_status golden_import_mxfp4(imp *im, const char *base, int64_t e, int32_t g, row_pick rows)
{
    char nb[1024], ns[1024];
    /* transformers' names end in _blocks/_scales, the original checkpoint's in .blocks/.scales */
    golden_import_join(nb, sizeof nb, base, "_blocks");
    golden_import_join(ns, sizeof ns, base, "_scales");
    if (!golden_import_ckpt_has(&im->c, nb)) {
        golden_import_join(nb, sizeof nb, base, ".blocks");
        golden_import_join(ns, sizeof ns, base, ".scales");
    }
    void *b = NULL, *s = NULL;
    int64_t bs[3], want_b[3] = {-1, -1, 16};
    vg_status r = golden_import_load(im, nb, VG_ST_U8, 3, want_b, "E2M1 blocks [N][K/32][16]", e,
                                     &b, bs);
    if (r != VG_OK)
        goto out;
    int64_t N = bs[0], NB = bs[1], K = NB * 32;
    int64_t want_s[2] = {N, NB};
    if ((r = golden_import_load(im, ns, VG_ST_U8, 2, want_s, "E8M0 scales [N][K/32]", e, &s,
                                NULL)) != VG_OK)
        goto out;
    const uint8_t *sb = s, *bb = b;
    for (int64_t i = 0; i < N * NB; i++)
        if (sb[i] == 0xFF) {
            r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] is E8M0 code 255, "
                        "a NaN scale", im->c.label, ns, (long long)(i / NB), (long long)(i % NB));
            goto out;
        }
    if (rows != ROWS_ALL && N % 2) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' has %lld rows: an interleaved gate_up "
                    "weight has an even count", im->c.label, nb, (long long)N);
        goto out;
    }
    int64_t NO = rows == ROWS_ALL ? N : N / 2;
    if ((r = golden_import_begin(im, VG_FAMILY_MXFP4, NO, K, g, base)) != VG_OK)
        goto out;
    vg_golden_file *f = im->f;
    uint8_t *q = (uint8_t *)f->w_q + (size_t)g * f->layout.q_bytes;
    uint8_t *sc = (uint8_t *)f->w_scale + (size_t)g * f->layout.scale_bytes;
    float *wd = f->w_dequant + (size_t)g * (size_t)(NO * K);
    for (int64_t o = 0; o < NO; o++) {
        /* gate_up: even rows are gate, odd rows up (swiglu takes x[..., ::2], x[..., 1::2]) */
        int64_t n = rows == ROWS_ALL ? o : 2 * o + (rows == ROWS_UP);
        /* a row's 16-byte blocks back to back are our row: element 2j low nibble */
        memcpy(q + o * (K / 2), bb + n * NB * 16, (size_t)(K / 2));
        memcpy(sc + o * NB, sb + n * NB, (size_t)NB);
        for (int64_t k = 0; k < K; k++) {
            uint8_t byte = bb[n * NB * 16 + k / 2];
            double v = vg_e2m1_to_f32((k & 1) ? (uint8_t)(byte >> 4) : (uint8_t)(byte & 0xF));
            /* ldexp(e2m1, scale - 127) */
            wd[o * K + k] = (float)ldexp(v, (int)sb[n * NB + k / 32] - 127);
            if (!isfinite(wd[o * K + k])) {
                r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] scales a value "
                            "beyond FP32", im->c.label, ns, (long long)n, (long long)(k / 32));
                goto out;
            }
        }
    }
out:
    free(b);
    free(s);
    return r;
}
