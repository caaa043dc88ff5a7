/*
 * The family table (include/voltgate/family.h) against facts written down elsewhere:
 * the names and the format table of /work/shared/DESIGN.md ("Weight
 * families") and include/voltgate/types.h's layout comment, the golden
 * datasets' `format` attributes of golden/SCHEMA.md.  Every expected number
 * below is computed here from those documents, never read from the table:
 * a wrong row (a group size, a packing, a scale type) fails a byte count.
 * The warm-up fills are checked through the dequantizer, which is code, not
 * table: each must give finite, non-zero weights.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "voltgate/family.h"
#include "vgtest.h"
#include "voltgate/quant.h"
#include "voltgate/types.h"

/* DESIGN.md's family table, in enum order (types.h). */
static const struct {
    vg_family f;
    const char *name;
    int elem_bits;
    const char *q_format, *scale_format; /* SCHEMA.md; "" for none */
    int has_zero, has_tensor_scale, exact;
} design[] = {
    {VG_FAMILY_FP16, "fp16", 16, "fp16", "", 0, 0, 1},
    {VG_FAMILY_AWQ, "awq", 4, "awq_int4x8", "fp16", 1, 0, 0},
    {VG_FAMILY_FP8, "fp8", 8, "e4m3", "f32", 0, 0, 0},
    {VG_FAMILY_MXFP4, "mxfp4", 4, "e2m1x2", "e8m0", 0, 0, 0},
    {VG_FAMILY_NVFP4, "nvfp4", 4, "e2m1x2", "e4m3", 0, 1, 0},
};
#define NDESIGN ((int)(sizeof design / sizeof design[0]))

static size_t cdiv(size_t a, size_t b) { return (a + b - 1) / b; }

/* The layout DESIGN.md and types.h describe, computed from scratch.
 * Returns 0 when K does not fit the family's packing. */
static int expected_layout(vg_family f, size_t n, size_t k, vg_weight_layout *e)
{
    memset(e, 0, sizeof *e);
    switch (f) {
    case VG_FAMILY_FP16: /* FP16 [N][K], no scales */
        e->q_bytes = n * k * 2;
        return 1;
    case VG_FAMILY_FP8: /* E4M3 [N][K]; FP32 per 128x128 block */
        e->q_bytes = n * k;
        e->scale_rows = (int32_t)cdiv(n, 128);
        e->scale_cols = (int32_t)cdiv(k, 128);
        e->scale_bytes = cdiv(n, 128) * cdiv(k, 128) * 4;
        return 1;
    case VG_FAMILY_AWQ: /* INT4, 8 per 32-bit word; FP16 scale and zero per 128 along K */
        if (k % 8)
            return 0;
        e->q_bytes = n * (k / 8) * 4;
        e->scale_rows = (int32_t)n;
        e->scale_cols = (int32_t)cdiv(k, 128);
        e->scale_bytes = e->zero_bytes = n * cdiv(k, 128) * 2;
        return 1;
    case VG_FAMILY_MXFP4: /* E2M1, 2 per byte; E8M0 per 32 along K */
        if (k % 2)
            return 0;
        e->q_bytes = n * k / 2;
        e->scale_rows = (int32_t)n;
        e->scale_cols = (int32_t)cdiv(k, 32);
        e->scale_bytes = n * cdiv(k, 32);
        return 1;
    case VG_FAMILY_NVFP4: /* E2M1, 2 per byte; E4M3 per 16 along K */
        if (k % 2)
            return 0;
        e->q_bytes = n * k / 2;
        e->scale_rows = (int32_t)n;
        e->scale_cols = (int32_t)cdiv(k, 16);
        e->scale_bytes = n * cdiv(k, 16);
        return 1;
    case VG_FAMILY_COUNT:
        break;
    }
    fail_msg("no expected layout for family %d", (int)f);
    return 0;
}

/* Every enumerator is in DESIGN.md's table and nothing else is. */
static void design_table_covers_every_family(void **state)
{
    (void)state;
    assert_int_equal(NDESIGN, VG_FAMILY_COUNT);
    for (int i = 0; i < NDESIGN; i++)
        assert_int_equal(design[i].f, i);
}

/* Each row is the row of its own family; names are DESIGN.md's, unique,
 * and round-trip through vg_family_parse. */
static void names_are_unique_and_round_trip(void **state)
{
    (void)state;
    for (int i = 0; i < VG_FAMILY_COUNT; i++) {
        const vg_family_desc *d = vg_family_desc_of((vg_family)i);
        assert_non_null(d);
        assert_int_equal(d->family, i);
        assert_non_null(d->name);
        assert_string_equal(d->name, design[i].name);
        assert_string_equal(vg_family_name((vg_family)i), design[i].name);
        for (int j = 0; j < i; j++)
            if (strcmp(vg_family_name((vg_family)i), vg_family_name((vg_family)j)) == 0)
                fail_msg("families %d and %d share the name '%s'", j, i, design[i].name);
        vg_family back = VG_FAMILY_COUNT;
        assert_int_equal(vg_family_parse(design[i].name, &back), VG_OK);
        assert_int_equal(back, i);
    }
    assert_null(vg_family_desc_of(VG_FAMILY_COUNT));
    assert_null(vg_family_desc_of((vg_family)-1));
    assert_null(vg_family_name(VG_FAMILY_COUNT));
    vg_family out;
    assert_int_equal(vg_family_parse("FP8", &out), VG_ERR_NOT_FOUND);
    assert_int_equal(vg_family_parse("", &out), VG_ERR_NOT_FOUND);
    assert_int_equal(vg_family_parse(NULL, &out), VG_ERR_NOT_FOUND);
    /* the error lists every name */
    assert_int_equal(vg_family_parse("fp7", &out), VG_ERR_NOT_FOUND);
    for (int i = 0; i < NDESIGN; i++)
        if (!strstr(vg_last_error(), design[i].name))
            fail_msg("'%s' does not list %s", vg_last_error(), design[i].name);
}

/* vg_weight_layout_of at shapes on and off every group grid, against the
 * byte counts of DESIGN.md's format table. */
static void layouts_match_the_design(void **state)
{
    (void)state;
    static const int32_t shapes[][2] = {
        {1, 8},     {1, 256},   {7, 32},    {16, 16},  {128, 128}, {129, 130}, {200, 392},
        {136, 264}, {152, 200}, {88, 136},  {256, 512}, {1024, 4096}, {3, 24}, {5, 40},
        {300, 100}, {17, 33},   {2, 2},     {1, 1},
    };
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            int32_t n = shapes[s][0], k = shapes[s][1];
            vg_weight_layout want, got;
            int fits = expected_layout((vg_family)f, (size_t)n, (size_t)k, &want);
            vg_status st = vg_weight_layout_of((vg_family)f, n, k, &got);
            if (!fits) {
                if (st != VG_ERR_UNSUPPORTED)
                    fail_msg("%s N=%d K=%d: status %d, want VG_ERR_UNSUPPORTED", design[f].name,
                             (int)n, (int)k, (int)st);
                continue;
            }
            if (st != VG_OK)
                fail_msg("%s N=%d K=%d: %s", design[f].name, (int)n, (int)k, vg_last_error());
            if (got.q_bytes != want.q_bytes || got.scale_bytes != want.scale_bytes ||
                got.zero_bytes != want.zero_bytes || got.scale_rows != want.scale_rows ||
                got.scale_cols != want.scale_cols)
                fail_msg("%s N=%d K=%d: q %zu scale %zu [%d x %d] zero %zu, want q %zu scale %zu "
                         "[%d x %d] zero %zu",
                         design[f].name, (int)n, (int)k, got.q_bytes, got.scale_bytes,
                         (int)got.scale_rows, (int)got.scale_cols, got.zero_bytes, want.q_bytes,
                         want.scale_bytes, (int)want.scale_rows, (int)want.scale_cols,
                         want.zero_bytes);
        }
    vg_weight_layout l;
    assert_int_equal(vg_weight_layout_of(VG_FAMILY_COUNT, 16, 16, &l), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_weight_layout_of(VG_FAMILY_FP8, 0, 16, &l), VG_ERR_INVALID_ARG);
    assert_int_equal(vg_weight_layout_of(VG_FAMILY_FP8, 16, -1, &l), VG_ERR_INVALID_ARG);
}

/* The row's own facts against DESIGN.md and SCHEMA.md, and against each
 * other. */
static void rows_match_the_design(void **state)
{
    (void)state;
    for (int i = 0; i < VG_FAMILY_COUNT; i++) {
        const vg_family_desc *d = vg_family_desc_of((vg_family)i);
        const char *nm = design[i].name;
        if (d->elem_bits != design[i].elem_bits)
            fail_msg("%s: %d element bits, want %d", nm, d->elem_bits, design[i].elem_bits);
        assert_int_equal(vg_family_elems_per_unit(d) * d->elem_bits, d->q.bytes * 8);
        assert_string_equal(d->q.format, design[i].q_format);
        if (design[i].scale_format[0]) {
            assert_int_not_equal(d->scale_rule, VG_SCALE_NONE);
            assert_true(d->group > 0);
            assert_true(d->scale.bytes > 0);
            assert_non_null(d->scale.format);
            assert_string_equal(d->scale.format, design[i].scale_format);
        } else {
            assert_int_equal(d->scale_rule, VG_SCALE_NONE);
            assert_int_equal(d->scale.bytes, 0);
            assert_int_equal(d->group, 0);
        }
        assert_int_equal(d->zero.bytes != 0, design[i].has_zero);
        if (design[i].has_zero) /* SCHEMA.md: w_zero is uint16, format fp16 */
            assert_string_equal(d->zero.format, "fp16");
        assert_int_equal(d->tensor_scale != 0, design[i].has_tensor_scale);
        assert_int_equal(vg_family_has_tensor_scale((vg_family)i), design[i].has_tensor_scale);
        assert_int_equal(d->tol == VG_TOL_EXACT, design[i].exact);
    }
    assert_int_equal(vg_family_has_tensor_scale(VG_FAMILY_COUNT), 0);
    assert_int_equal(vg_family_mask_with_scale(VG_SCALE_BLOCK), VG_FAMILY_BIT(VG_FAMILY_FP8));
    assert_int_equal(vg_family_mask_with_scale(VG_SCALE_NONE), VG_FAMILY_BIT(VG_FAMILY_FP16));
    assert_int_equal(vg_family_mask_with_scale(VG_SCALE_ROW_GROUP),
                     VG_FAMILY_BIT(VG_FAMILY_AWQ) | VG_FAMILY_BIT(VG_FAMILY_MXFP4) |
                         VG_FAMILY_BIT(VG_FAMILY_NVFP4));
}

/* Fills buf with copies of one unit's fill, as the warm-up does. */
static void fill_units(void *buf, size_t bytes, const vg_family_unit *u)
{
    unsigned char unit[4];
    vg_family_fill_bytes(u, unit);
    for (size_t i = 0; i < bytes; i++)
        ((unsigned char *)buf)[i] = unit[i % u->bytes];
}

/* A weight made of the warm-up fills dequantizes to finite, non-zero
 * values: the kernels warm up on real arithmetic, never on zeros or NaN. */
static void warmup_fills_are_valid_weights(void **state)
{
    (void)state;
    const int32_t n = 24, k = 256;
    for (int i = 0; i < VG_FAMILY_COUNT; i++) {
        const vg_family_desc *d = vg_family_desc_of((vg_family)i);
        vg_weight_layout lay;
        assert_int_equal(vg_weight_layout_of((vg_family)i, n, k, &lay), VG_OK);
        void *q = malloc(lay.q_bytes);
        void *sc = lay.scale_bytes ? malloc(lay.scale_bytes) : NULL;
        void *zp = lay.zero_bytes ? malloc(lay.zero_bytes) : NULL;
        float *out = malloc((size_t)n * (size_t)k * sizeof(float));
        assert_non_null(q);
        assert_non_null(out);
        fill_units(q, lay.q_bytes, &d->q);
        if (sc)
            fill_units(sc, lay.scale_bytes, &d->scale);
        if (zp)
            fill_units(zp, lay.zero_bytes, &d->zero);
        vg_weight w = {.family = (vg_family)i, .n = n, .k = k, .groups = 1, .q = q,
                       .scale = sc, .zero = zp, .tensor_scale = 1.0f};
        assert_int_equal(vg_dequantize(&w, out), VG_OK);
        for (size_t j = 0; j < (size_t)n * (size_t)k; j++)
            if (!isfinite(out[j]) || out[j] == 0.0f)
                fail_msg("%s: warm-up weight [%zu] is %g", d->name, j, (double)out[j]);
        free(q);
        free(sc);
        free(zp);
        free(out);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(design_table_covers_every_family),
        cmocka_unit_test(names_are_unique_and_round_trip),
        cmocka_unit_test(layouts_match_the_design),
        cmocka_unit_test(rows_match_the_design),
        cmocka_unit_test(warmup_fills_are_valid_weights),
    };
    return VGTEST_MAIN("family", tests);
}
