/*
 * golden import's private header: what the parts of the importer share
 * (golden_import.c lists them).  The source formats, the checkpoint and its
 * quantization config, the import's state, the tensor plumbing, and one
 * entry point per source-format reader.  Internal to golden/; the public
 * entry point is vg_golden_import (voltgate/golden.h).
 */
#ifndef VOLTGATE_GOLDEN_IMPORT_H
#define VOLTGATE_GOLDEN_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "safetensors.h"
#include "voltgate/formats.h"
#include "voltgate/golden.h"

/* ---- source formats ------------------------------------------------------------ */

typedef enum src_format {
    SRC_FP8,            /* DeepSeek-V3: F8_E4M3 weight, F32 weight_scale_inv per 128x128 */
    SRC_FLOAT,          /* BF16 / F16 / F32 weight */
    SRC_AWQ,            /* AutoAWQ GEMM */
    SRC_GPTQ,           /* AutoGPTQ / GPTQModel checkpoint_format "gptq" (v1) */
    SRC_GPTQ_V2,        /* GPTQModel checkpoint_format "gptq_v2" */
    SRC_NVFP4_MODELOPT, /* NVIDIA ModelOpt NVFP4 */
    SRC_NVFP4_CT,       /* compressed-tensors nvfp4-pack-quantized */
    SRC_MXFP4,          /* gpt-oss MXFP4 experts */
    SRC_COUNT
} src_format;

/* Each format's --format name, in src_format order (golden_import.c). */
extern const char *const golden_import_src_names[SRC_COUNT];

/* ---- the checkpoint: one file, or a folder with an index (golden_import_ckpt.c) -- */

typedef struct shard {
    char *file;            /* name as weight_map gives it (no folder) */
    vg_safetensors *st;
} shard;

typedef struct ckpt {
    const char *label;     /* the file or folder named in messages */
    char *dir;             /* folder of the index / of the file */
    vg_safetensors *single;
    cJSON *index;          /* model.safetensors.index.json */
    const cJSON *weight_map;
    shard *shards;
    int nshards;
    cJSON *config;         /* config.json, when present */
    cJSON *hf_quant;       /* hf_quant_config.json (ModelOpt), when present */
    cJSON *quantize_cfg;   /* quantize_config.json (AutoGPTQ), when present */
} ckpt;

/* Opens a->safetensors or the folder a->checkpoint (its index, or its one
 * model.safetensors) and reads the folder's JSON configs that exist. */
vg_status golden_import_ckpt_open(const vg_golden_import_args *a, ckpt *c);
void golden_import_ckpt_close(ckpt *c);
/* Whether the checkpoint lists a tensor (no error when it does not). */
int golden_import_ckpt_has(const ckpt *c, const char *name);
/* The tensor `name`, opening its shard on first use. */
vg_status golden_import_ckpt_find(ckpt *c, const char *name, const vg_safetensors **st,
                                  const vg_st_tensor **t);

/* The quantization section of the folder's configs, as far as we use it. */
typedef struct quant_cfg {
    char method[64];            /* quant_method / quant_algo, lower case */
    char checkpoint_format[32]; /* gptq, gptq_v2 */
    char version[32];           /* AutoAWQ: gemm, gemv, ... */
    int group_size;             /* 0 when not given */
    int bits;                   /* 0 when not given */
    char where[64];             /* the file it came from */
} quant_cfg;

/* c's quantization settings (config.json's quantization_config first, then
 * quantize_config.json, then hf_quant_config.json). */
void golden_import_read_quant_cfg(const ckpt *c, quant_cfg *q);

/* ---- the import state ----------------------------------------------------------------- */

typedef struct imp {
    const vg_golden_import_args *a;
    ckpt c;
    quant_cfg q;
    src_format fmt;
    vg_golden_file *f;
    int32_t groups;         /* G of the output */
    int64_t expert;         /* the expert being read (--experts: the {e} of its names) */
    int started;
    float *wfloat;          /* SRC_FLOAT: the values, all groups, until the end */
    vg_st_dtype float_dtype;
    char tensors[8192];     /* source tensors read, for the provenance */
    char detected[2048];    /* how the format was chosen */
} imp;

/* Which rows of a fused gpt-oss gate_up weight (--rows). */
typedef enum row_pick { ROWS_ALL, ROWS_GATE, ROWS_UP } row_pick;

/* ---- tensor plumbing (golden_import_tensor.c) ------------------------------------- */

/* Opens tensor `name`, checks its dtype and full shape (`want`, rank
 * `rank`; -1 in want matches any extent, `what` explains the shape in the
 * message), and reads the part of expert `e` (e >= 0: the first dimension
 * is experts and is not in `want`) into a new buffer; notes the tensor for
 * the provenance.  Scalars: rank 0 also matches a [1]. */
vg_status golden_import_load(imp *im, const char *name, vg_st_dtype dt, int rank,
                             const int64_t *want, const char *what, int64_t e, void **out,
                             int64_t *shape_out);
/* Rank and shape of a tensor without reading it. */
vg_status golden_import_peek(imp *im, const char *name, const vg_st_tensor **t);
/* out = a followed by b; an empty string when it would not fit. */
void golden_import_join(char *out, size_t len, const char *a, const char *b);
/* pattern with its {e} replaced by expert e (--experts, and --scale with it). */
vg_status golden_import_expert_name(const char *pattern, int64_t e, char *out, size_t len);
/* Sets the weight's family and shape on the first group and allocates all
 * groups; later groups must have the same shape. */
vg_status golden_import_begin(imp *im, vg_family family, int64_t n, int64_t k, int32_t g,
                              const char *base);

/* Element i of a little-endian source buffer (no alignment assumed). */
static inline uint32_t rd_u32(const void *p, size_t i)
{
    uint32_t v;
    memcpy(&v, (const uint8_t *)p + 4 * i, 4);
    return v;
}

static inline uint16_t rd_u16(const void *p, size_t i)
{
    uint16_t v;
    memcpy(&v, (const uint8_t *)p + 2 * i, 2);
    return v;
}

static inline float rd_f32(const void *p, size_t i)
{
    return vg_bits_f32(rd_u32(p, i));
}

/* The last component of a path. */
static inline const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* ---- the readers: group g of the weight from the source tensors ------------------- */

/* AutoAWQ, GPTQ v1/v2 (module prefix base) -> awq (golden_import_awq.c). */
vg_status golden_import_int4(imp *im, const char *base, int32_t g);
/* ModelOpt / compressed-tensors NVFP4 (module prefix base) -> nvfp4
 * (golden_import_nvfp4.c). */
vg_status golden_import_nvfp4(imp *im, const char *base, int32_t g);
/* gpt-oss MXFP4 (base_blocks/_scales; expert e of a fused tensor when
 * e >= 0) -> mxfp4 (golden_import_mxfp4.c). */
vg_status golden_import_mxfp4(imp *im, const char *base, int64_t e, int32_t g, row_pick rows);
/* DeepSeek FP8 (tensor name; expert e when e >= 0) -> fp8 (golden_import_fp8.c). */
vg_status golden_import_fp8(imp *im, const char *name, int64_t e, int32_t g);
/* BF16/F16/F32 (tensor name; expert e when e >= 0): the values only; after
 * every group, golden_import_finish_float makes the weight
 * (golden_import_float.c). */
vg_status golden_import_float(imp *im, const char *name, int64_t e, int32_t g);
vg_status golden_import_finish_float(imp *im);

/* ---- detection, provenance and the case ------------------------------------------- */

/* Chooses the source format of the weight `base` (golden_import_detect.c). */
vg_status golden_import_detect(imp *im, const char *base, char *tensor, size_t tlen);
/* f->provenance: the format, how it was detected, the tensors and the files'
 * SHA-256 (golden_import_case.c). */
vg_status golden_import_provenance(imp *im, const char *rows_note);
/* The one case of an imported file: X, token counts, reference
 * (golden_import_case.c). */
vg_status golden_import_make_case(const vg_golden_import_args *a, vg_golden_file *f,
                                  const char *label, const char *weight);

#endif
