/*
 * The weight families as data (public: an engine may read a family's facts
 * too): one row per family (kernels/family.c) that the
 * host code reads instead of switching on the family.  What a row says is
 * what include/voltgate/types.h's layout comment and golden/SCHEMA.md's
 * family table say in prose; suites/test_family.c checks the rows against
 * byte counts computed from those documents.
 *
 * Not in the table, because it is code rather than a fact: each family's
 * quantizer and CPU dequantizer (kernels/quant.c), its device-side Deq struct
 * (kernels/cuda/dequant.cuh) and the checkpoint importers (golden/
 * golden_import_*.c).  kernels/FAMILIES.md lists what a new family touches.
 *
 * Plain C, usable from C++ (extern "C"); no allocation, no state.
 */
#ifndef VOLTGATE_FAMILY_H
#define VOLTGATE_FAMILY_H

#include <stddef.h>
#include <stdint.h>

#include "voltgate/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a family's scale array (and its zero points, which share the shape)
 * is laid out, per group of the weight. */
typedef enum vg_scale_rule {
    VG_SCALE_NONE = 0,  /* no scale array (0 x 0) */
    VG_SCALE_ROW_GROUP, /* [N][ceil(K / group)]: one per row per `group` along K */
    VG_SCALE_BLOCK      /* [ceil(N / group)][ceil(K / group)]: one per group x group block */
} vg_scale_rule;

/* Which golden tolerance a family's cases carry (golden/golden_gen.c holds
 * the numbers, golden/SCHEMA.md "Tolerances" the reasoning). */
typedef enum vg_tol_class {
    VG_TOL_EXACT = 0, /* weights exact in FP16: only the summation order differs */
    VG_TOL_SCALED     /* scaled weights, which may be rounded to FP16 in registers */
} vg_tol_class;

/* One buffer's storage unit (a word of w_q, one scale, one zero point). */
typedef struct vg_family_unit {
    uint8_t bytes;      /* bytes of one unit, in memory and in HDF5; 0: no such buffer.
                         * Also the alignment the launchers require of the buffer. */
    uint8_t is_float;   /* stored in HDF5 as a float of `bytes` (else an unsigned integer) */
    const char *format; /* the golden dataset's `format` attribute (golden/SCHEMA.md) */
    uint32_t fill;      /* warm-up value of one unit: its bits, in the low `bytes` bytes
                         * (a non-zero code, or a valid scale) */
} vg_family_unit;

typedef struct vg_family_desc {
    vg_family family;
    const char *name;       /* vg_family_name(), the CLI's and the golden files' word */
    uint8_t elem_bits;      /* bits of one weight element; q.bytes * 8 / elem_bits elements
                             * share one unit of w_q, along K, and K must be a multiple */
    vg_family_unit q;       /* w_q */
    vg_scale_rule scale_rule;
    int32_t group;          /* the scale's K group (and N block for VG_SCALE_BLOCK); 0: none */
    vg_family_unit scale;   /* bytes 0 exactly when scale_rule is VG_SCALE_NONE */
    vg_family_unit zero;    /* bytes 0: no zero point; else shaped as the scale */
    uint8_t tensor_scale;   /* 1: one FP32 scale for the whole tensor, all groups (nvfp4);
                             * vg_weight.tensor_scale, the golden w_tensor_scale dataset */
    vg_tol_class tol;
} vg_family_desc;

/* The row of family f; NULL for an invalid value. */
const vg_family_desc *vg_family_desc_of(vg_family f);

/* Weight elements per unit of w_q (1 for fp16 and fp8, 8 for awq, 2 for the
 * FP4 families): K must be a multiple of it. */
int32_t vg_family_elems_per_unit(const vg_family_desc *d);

/* The families whose scale follows `rule`, as a VG_FAMILY_BIT mask. */
uint32_t vg_family_mask_with_scale(vg_scale_rule rule);

/* The warm-up fill of one unit as it lies in memory: u->bytes bytes of
 * out (none when the family has no such buffer). */
void vg_family_fill_bytes(const vg_family_unit *u, unsigned char out[4]);

/* 1 when family f carries a tensor scale (nvfp4); 0 otherwise or when f is
 * invalid. */
int vg_family_has_tensor_scale(vg_family f);

#ifdef __cplusplus
}
#endif
#endif
