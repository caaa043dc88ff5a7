/*
 * golden import: AutoAWQ (GEMM) and GPTQ (v1, v2) INT4 checkpoints -> the
 * awq family.  One source format's reader: its tensors, its checks and its
 * dequantization rule w = (q - z) * s, apart from the other formats'.
 * golden/SCHEMA.md ("Imported checkpoints") gives the packing of each.
 */
#include <math.h>
#include <stdlib.h>

#include "golden_import.h"

/* The awq family groups K by 128: a source whose group size is another is
 * refused by name.  `rows` scale rows were found for K. */
static vg_status check_group_128(imp *im, const char *tensor, int64_t k, int64_t rows)
{
    if (im->q.group_size && im->q.group_size != VG_AWQ_GROUP &&
        !(im->q.group_size == -1 && k <= VG_AWQ_GROUP))
        return vg_fail(VG_ERR_UNSUPPORTED, "%s: %s says group_size %d: the awq family takes "
                       "group size %d along K only", im->c.label, im->q.where,
                       im->q.group_size, VG_AWQ_GROUP);
    if (rows == (k + VG_AWQ_GROUP - 1) / VG_AWQ_GROUP)
        return VG_OK;
    if (rows > 0 && k % rows == 0)
        return vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s' holds %lld groups along K = %lld: "
                       "group size %lld; the awq family takes group size %d only",
                       im->c.label, tensor, (long long)rows, (long long)k,
                       (long long)(k / rows), VG_AWQ_GROUP);
    return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' holds %lld groups along K = %lld, which "
                   "is no group size; the awq family takes group size %d", im->c.label, tensor,
                   (long long)rows, (long long)k, VG_AWQ_GROUP);
}

static vg_status fp16_scales_finite(imp *im, const char *name, const void *s, int64_t rows,
                                    int64_t cols)
{
    for (int64_t i = 0; i < rows * cols; i++)
        if (!isfinite(vg_fp16_to_f32(rd_u16(s, (size_t)i))))
            return vg_fail(VG_ERR_FORMAT, "%s: tensor '%s' element [%lld][%lld] is not finite "
                           "(a NaN or infinite scale)", im->c.label, name,
                           (long long)(i / cols), (long long)(i % cols));
    return VG_OK;
}

/* Writes group g of the awq family from per-(k, n) codes, per-(group, n)
 * zeros and FP16 scale bits of the source; w_dequant from the source rule
 * w = (q - z) * s.  code(k, n), zero(r, n), scale(r, n) read the source. */
typedef struct int4_src {
    const void *qweight, *qzeros, *scales;
    int64_t n, k, rows;
    int gptq, v1;
} int4_src;

static uint8_t int4_code(const int4_src *s, int64_t k, int64_t n)
{
    if (s->gptq) /* [K/8][N], along K in order: nibble i is k = 8r + i */
        return (uint8_t)((rd_u32(s->qweight, (size_t)((k / 8) * s->n + n)) >> (4 * (k % 8))) &
                         0xFu);
    /* AWQ [K][N/8] along N: column 8c + j lives in nibble REVERSE[j] */
    return vg_awq_unpack(rd_u32(s->qweight, (size_t)(k * (s->n / 8) + n / 8)), (int)(n % 8));
}

static uint8_t int4_zero(const int4_src *s, int64_t r, int64_t n)
{
    uint32_t word = rd_u32(s->qzeros, (size_t)(r * (s->n / 8) + n / 8));
    if (!s->gptq)
        return vg_awq_unpack(word, (int)(n % 8));
    uint8_t z = (uint8_t)((word >> (4 * (n % 8))) & 0xFu); /* along N in order */
    return s->v1 ? (uint8_t)((z + 1) & 0xFu) : z;          /* v1 stores zero - 1 */
}

static void int4_fill(imp *im, const int4_src *s, int32_t g)
{
    vg_golden_file *f = im->f;
    const int64_t N = s->n, K = s->k, SC = f->layout.scale_cols;
    uint32_t *q = (uint32_t *)f->w_q + (size_t)g * (size_t)(N * K / 8);
    uint16_t *sc = (uint16_t *)f->w_scale + (size_t)g * (size_t)(N * SC);
    uint16_t *zp = (uint16_t *)f->w_zero + (size_t)g * (size_t)(N * SC);
    float *wd = f->w_dequant + (size_t)g * (size_t)(N * K);
    for (int64_t n = 0; n < N; n++) {
        for (int64_t r = 0; r < SC; r++) {
            sc[n * SC + r] = rd_u16(s->scales, (size_t)(r * N + n));
            zp[n * SC + r] = vg_f32_to_fp16((float)int4_zero(s, r, n));
        }
        for (int64_t k0 = 0; k0 < K; k0 += 8) {
            uint8_t codes[8];
            for (int j = 0; j < 8; j++)
                codes[j] = int4_code(s, k0 + j, n);
            q[n * (K / 8) + k0 / 8] = vg_awq_pack8(codes);
        }
        for (int64_t k = 0; k < K; k++) {
            int64_t r = k / VG_AWQ_GROUP;
            double scale = vg_fp16_to_f32(rd_u16(s->scales, (size_t)(r * N + n)));
            wd[n * K + k] = (float)(((double)int4_code(s, k, n) - (double)int4_zero(s, r, n)) *
                                    scale);
        }
    }
}

vg_status golden_import_int4(imp *im, const char *base, int32_t g)
{
    char nq[1024], nz[1024], ns[1024], ngi[1024];
    golden_import_join(nq, sizeof nq, base, ".qweight");
    golden_import_join(nz, sizeof nz, base, ".qzeros");
    golden_import_join(ns, sizeof ns, base, ".scales");
    golden_import_join(ngi, sizeof ngi, base, ".g_idx");
    int gptq = im->fmt != SRC_AWQ;
    int4_src s = {0};
    s.gptq = gptq;
    s.v1 = im->fmt == SRC_GPTQ;
    int64_t qs[2], any2[2] = {-1, -1};
    void *gi = NULL;
    vg_status r = golden_import_load(im, nq, VG_ST_I32, 2, any2,
                                     gptq ? "GPTQ qweight [K/8][N]" : "AWQ qweight [K][N/8]", -1,
                                     (void **)&s.qweight, qs);
    if (r != VG_OK)
        goto out;
    s.n = gptq ? qs[1] : qs[0 + 1] * 8;
    s.k = gptq ? qs[0] * 8 : qs[0];
    if (s.n % 8) {
        r = vg_fail(VG_ERR_FORMAT, "%s: tensor '%s': N = %lld is not a multiple of 8, so its "
                    "qzeros cannot pack 8 per word", im->c.label, nq, (long long)s.n);
        goto out;
    }
    if (s.k % 8) {
        r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s': K = %lld: the awq family packs 8 "
                    "values of K per word, so K must be a multiple of 8", im->c.label, nq,
                    (long long)s.k);
        goto out;
    }
    int64_t ss[2];
    int64_t want_s[2] = {-1, s.n};
    if ((r = golden_import_load(im, ns, VG_ST_F16, 2, want_s, "scales [K/group][N]", -1,
                                (void **)&s.scales, ss)) != VG_OK)
        goto out;
    s.rows = ss[0];
    if ((r = check_group_128(im, ns, s.k, s.rows)) != VG_OK)
        goto out;
    int64_t want_z[2] = {s.rows, s.n / 8};
    if ((r = golden_import_load(im, nz, VG_ST_I32, 2, want_z, "qzeros [K/group][N/8]", -1,
                                (void **)&s.qzeros, NULL)) != VG_OK)
        goto out;
    if ((r = fp16_scales_finite(im, ns, s.scales, s.rows, s.n)) != VG_OK)
        goto out;
    if (gptq && golden_import_ckpt_has(&im->c, ngi)) {
        int64_t want_g[1] = {s.k};
        if ((r = golden_import_load(im, ngi, VG_ST_I32, 1, want_g, "g_idx [K]", -1, &gi,
                                    NULL)) != VG_OK)
            goto out;
        for (int64_t k = 0; k < s.k; k++) {
            int32_t v = (int32_t)rd_u32(gi, (size_t)k);
            if (v != k / VG_AWQ_GROUP) {
                r = vg_fail(VG_ERR_UNSUPPORTED, "%s: tensor '%s': g_idx[%lld] = %d, not "
                            "%lld / %d = %lld: an act-order (desc_act) checkpoint permutes "
                            "K across groups, which the awq family (groups of 128 in K order) "
                            "cannot hold", im->c.label, ngi, (long long)k, (int)v, (long long)k,
                            VG_AWQ_GROUP, (long long)(k / VG_AWQ_GROUP));
                goto out;
            }
        }
    }
    if ((r = golden_import_begin(im, VG_FAMILY_AWQ, s.n, s.k, g, base)) != VG_OK)
        goto out;
    int4_fill(im, &s, g);
out:
    free((void *)s.qweight);
    free((void *)s.qzeros);
    free((void *)s.scales);
    free(gi);
    return r;
}
