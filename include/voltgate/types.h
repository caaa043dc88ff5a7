/*
 * voltgate core types: weight families, dispatch paths, the weight and GEMM
 * argument descriptors, and the kernel plan.
 *
 * The GEMM computed is Y[M,N] = X[M,K] * dequant(W)[N,K]^T with X in FP16,
 * FP32 accumulation and Y in FP32 or FP16.  For the grouped, loop and moe
 * paths X holds the rows of all groups back to back: group g owns rows
 * offsets[g] .. offsets[g+1]-1 of X and of Y and multiplies them with its own
 * weight W_g.  Weights of G groups are stored back to back in each buffer,
 * group g at g * (per-group size) as given by vg_weight_layout().
 *
 * Weight layouts, per group, row-major over N (rows) then K:
 *   fp16   q: uint16 FP16 bits [N][K]; no scales.
 *   fp8    q: uint8 E4M3 codes [N][K]; scale: float [ceil(N/128)][ceil(K/128)],
 *          the multiplier of each 128x128 block (DeepSeek weight_scale_inv).
 *   awq    q: uint32 [N][K/8], 8 INT4 values along K per word in the AWQ
 *          nibble order (vg_awq_pack8); scale and zero: uint16 FP16 bits
 *          [N][ceil(K/128)]; w = (q - zero) * scale.  K % 8 == 0.
 *   mxfp4  q: uint8 [N][K/2], two E2M1 codes per byte, element 2j in the low
 *          nibble; scale: uint8 E8M0 [N][ceil(K/32)].  K % 2 == 0.
 *   nvfp4  q: uint8 [N][K/2] as mxfp4; scale: uint8 E4M3 [N][ceil(K/16)];
 *          w = e2m1 * e4m3(scale) * tensor_scale.  K % 2 == 0.
 */
#ifndef VOLTGATE_TYPES_H
#define VOLTGATE_TYPES_H

#include <stddef.h>
#include <stdint.h>

#include "voltgate/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vg_family {
    VG_FAMILY_FP16 = 0,
    VG_FAMILY_AWQ,
    VG_FAMILY_FP8,
    VG_FAMILY_MXFP4,
    VG_FAMILY_NVFP4,
    VG_FAMILY_COUNT
} vg_family;

typedef enum vg_path {
    VG_PATH_DENSE = 0,
    VG_PATH_GROUPED,
    VG_PATH_LOOP,
    VG_PATH_MOE,
    VG_PATH_COUNT
} vg_path;

typedef enum vg_dtype {
    VG_DTYPE_F32 = 0,
    VG_DTYPE_F16
} vg_dtype;

#define VG_FAMILY_BIT(f) (1u << (unsigned)(f))
#define VG_ALL_FAMILIES ((1u << VG_FAMILY_COUNT) - 1u)

/* Groups up to this many tokens each run on the grouped path (the one-launch
 * grouped kernels on the layer's precomputed offsets rows); above it a
 * grouped call runs as moe (the same kernels on its own offsets), or as the
 * per-group loop where fp8_grouped_bmm_decode is off. */
#define GROUPED_DECODE_MAX_TOKENS 16

/* Block sizes of the scaled families. */
#define VG_FP8_BLOCK 128
#define VG_AWQ_GROUP 128
#define VG_MXFP4_GROUP 32
#define VG_NVFP4_GROUP 16

/* "fp16", "awq", "fp8", "mxfp4", "nvfp4"; NULL for an invalid value. */
const char *vg_family_name(vg_family f);
/* "dense", "grouped", "loop", "moe"; NULL for an invalid value. */
const char *vg_path_name(vg_path p);
/* Parses a name; VG_ERR_NOT_FOUND (with vg_last_error()) when unknown. */
vg_status vg_family_parse(const char *name, vg_family *out);
vg_status vg_path_parse(const char *name, vg_path *out);

/* A quantized weight as the kernels read it.  Pointers are in the memory of
 * the backend that runs the GEMM (host for cpu, device for cuda). */
typedef struct vg_weight {
    vg_family family;
    int32_t n, k;          /* per group */
    int32_t groups;        /* 1 for dense */
    const void *q;
    const void *scale;     /* NULL for fp16 */
    const void *zero;      /* awq only */
    float tensor_scale;    /* nvfp4 only; 1.0 otherwise */
} vg_weight;

/* Per-group byte sizes of each weight buffer of a family at N x K.
 * VG_ERR_UNSUPPORTED when K does not fit the family's packing. */
typedef struct vg_weight_layout {
    size_t q_bytes, scale_bytes, zero_bytes;
    int32_t scale_rows, scale_cols;   /* shape of the scale array (0 x 0 if none) */
} vg_weight_layout;
vg_status vg_weight_layout_of(vg_family f, int32_t n, int32_t k, vg_weight_layout *out);

/* The arguments of one GEMM call on any path. */
typedef struct vg_gemm_args {
    vg_path path;
    int32_t m;                   /* total rows of X and Y */
    vg_weight w;                 /* n, k, groups live here */
    const int32_t *offsets;      /* [groups+1] in backend memory; NULL for dense */
    const int32_t *offsets_host; /* the same row in host memory; NULL for dense */
    const uint16_t *x;           /* FP16 bits [m][k], backend memory */
    void *y;                     /* [m][n] of y_dtype, backend memory */
    vg_dtype y_dtype;
    void *workspace;             /* split-K partials, backend memory */
    size_t workspace_bytes;
    void *stream;                /* cudaStream_t on cuda; ignored on cpu */
} vg_gemm_args;

/* Rows of the largest group (dense: m).  offsets_host must be valid. */
int32_t vg_gemm_max_group_rows(const vg_gemm_args *a);

/* What kind of kernel a plan runs (DESIGN.md, plan kinds).  Tiled is 0 so
 * a plan written without a kind (the CPU plans, a test's plans) is one. */
typedef enum vg_plan_kind {
    VG_KIND_TILED = 0,      /* the shared-memory pipelined mainloop */
    VG_KIND_DECODE,         /* W streamed through registers, M <= 16 */
    VG_KIND_DEQUANT_BLAS,   /* W dequantized once into an FP16 workspace, then cuBLAS */
    VG_KIND_COUNT
} vg_plan_kind;
const char *vg_plan_kind_name(vg_plan_kind k);

/* A kernel plan is data: the kernel is generic over it.  Dense plans also
 * serve the loop path (one launch per group); grouped plans serve grouped
 * and moe. */
typedef struct vg_plan {
    const char *id;        /* stable name, e.g. "cuda.grouped.m16n64k128.s1.sk1" */
    const char *backend;   /* "cpu" or "cuda" */
    vg_path path;          /* VG_PATH_DENSE or VG_PATH_GROUPED */
    uint32_t families;     /* VG_FAMILY_BIT mask */
    int32_t tile_m, tile_n, tile_k;
    int32_t stages;        /* pipeline stages; the dequantize + cuBLAS kind: groups per cuBLAS call */
    int32_t split_k;
    int32_t max_rows;      /* largest M (dense) or rows per group (grouped) it takes; 0 = any */
    vg_plan_kind kind;
    int32_t min_rows;      /* smallest rows the tuner offers it for (0 = any): a plan whose
                              fixed cost pays off only above it runs below it when asked
                              (vg_gemm_with_plan, golden --plan all), never measured there */
} vg_plan;

/* True when plan p can run a call of this family and path with `rows`
 * rows (dense: M; grouped/moe/loop: rows of the largest group). */
int vg_plan_applies(const vg_plan *p, vg_family f, vg_path path, int32_t rows);
/* True when p applies and the tuner offers it at `rows` (min_rows). */
int vg_plan_offered(const vg_plan *p, vg_family f, vg_path path, int32_t rows);

#ifdef __cplusplus
}
#endif
#endif
