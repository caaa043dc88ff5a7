/* The family table (include/voltgate/family.h): every per-family fact the host code
 * reads.  A new family is one row here (and its enumerator in types.h). */
#include "voltgate/family.h"

#include <string.h>

/* Warm-up fills (see types.h for the encodings): */
#define FILL_FP16_TENTH 0x2E66u      /* FP16 0.1 */
#define FILL_E4M3_HALF 0x30u         /* E4M3 0.5 */
#define FILL_INT4_NINES 0x99999999u  /* INT4 9 in every nibble */
#define FILL_FP16_HUNDREDTH 0x211Fu  /* FP16 0.01 */
#define FILL_FP16_EIGHT 0x4800u      /* FP16 8.0 */
#define FILL_E2M1_ONES 0x22u         /* two E2M1 1.0 */
#define FILL_F32_ONE 0x3F800000u     /* FP32 1.0 */
#define FILL_E8M0_ONE 0x7Fu          /* 2^0 */
#define FILL_E4M3_ONE 0x38u          /* E4M3 1.0 */

static const vg_family_desc families[VG_FAMILY_COUNT] = {
    [VG_FAMILY_FP16] = {
        .family = VG_FAMILY_FP16, .name = "fp16", .elem_bits = 16,
        .q = {2, 0, "fp16", FILL_FP16_TENTH},
        .scale_rule = VG_SCALE_NONE, .group = 0,
        .tol = VG_TOL_EXACT,
    },
    [VG_FAMILY_AWQ] = {
        .family = VG_FAMILY_AWQ, .name = "awq", .elem_bits = 4,
        .q = {4, 0, "awq_int4x8", FILL_INT4_NINES},
        .scale_rule = VG_SCALE_ROW_GROUP, .group = VG_AWQ_GROUP,
        .scale = {2, 0, "fp16", FILL_FP16_HUNDREDTH},
        .zero = {2, 0, "fp16", FILL_FP16_EIGHT},
        .tol = VG_TOL_SCALED,
    },
    [VG_FAMILY_FP8] = {
        .family = VG_FAMILY_FP8, .name = "fp8", .elem_bits = 8,
        .q = {1, 0, "e4m3", FILL_E4M3_HALF},
        .scale_rule = VG_SCALE_BLOCK, .group = VG_FP8_BLOCK,
        .scale = {4, 1, "f32", FILL_F32_ONE},
        .tol = VG_TOL_SCALED,
    },
    [VG_FAMILY_MXFP4] = {
        .family = VG_FAMILY_MXFP4, .name = "mxfp4", .elem_bits = 4,
        .q = {1, 0, "e2m1x2", FILL_E2M1_ONES},
        .scale_rule = VG_SCALE_ROW_GROUP, .group = VG_MXFP4_GROUP,
        .scale = {1, 0, "e8m0", FILL_E8M0_ONE},
        .tol = VG_TOL_SCALED,
    },
    [VG_FAMILY_NVFP4] = {
        .family = VG_FAMILY_NVFP4, .name = "nvfp4", .elem_bits = 4,
        .q = {1, 0, "e2m1x2", FILL_E2M1_ONES},
        .scale_rule = VG_SCALE_ROW_GROUP, .group = VG_NVFP4_GROUP,
        .scale = {1, 0, "e4m3", FILL_E4M3_ONE},
        .tensor_scale = 1,
        .tol = VG_TOL_SCALED,
    },
};

const vg_family_desc *vg_family_desc_of(vg_family f)
{
    return (unsigned)f < VG_FAMILY_COUNT ? &families[f] : NULL;
}

int32_t vg_family_elems_per_unit(const vg_family_desc *d)
{
    return (int32_t)d->q.bytes * 8 / (int32_t)d->elem_bits;
}

uint32_t vg_family_mask_with_scale(vg_scale_rule rule)
{
    uint32_t mask = 0;
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        if (families[f].scale_rule == rule)
            mask |= VG_FAMILY_BIT(f);
    return mask;
}

void vg_family_fill_bytes(const vg_family_unit *u, unsigned char out[4])
{
    uint8_t b8 = (uint8_t)u->fill;
    uint16_t b16 = (uint16_t)u->fill;
    uint32_t b32 = u->fill;
    const void *src = u->bytes == 1 ? (const void *)&b8
                    : u->bytes == 2 ? (const void *)&b16
                                    : (const void *)&b32;
    memcpy(out, src, u->bytes <= 4 ? u->bytes : 4);
}

int vg_family_has_tensor_scale(vg_family f)
{
    const vg_family_desc *d = vg_family_desc_of(f);
    return d && d->tensor_scale;
}
