/*
 * voltgate golden data: HDF5 case files that hold a quantized weight exactly
 * as the kernels read it, its dequantized FP32 image, FP16 activations and
 * the FP64 reference output, plus the tolerance each case is verified to.
 * golden/SCHEMA.md is the normative description of the file layout; this
 * header is the C API over it.
 *
 * A file holds ONE weight (family, N, K, groups) and one or more cases that
 * share it: each case has its own activations x [M][K], offsets row (for the
 * grouped, loop and moe paths) and reference y_ref [M][N].  Sharing the
 * weight is what keeps the committed set small: the 18 token counts of a
 * grouped layer cost one weight, not 18.
 *
 * Every function returns a vg_status; on failure vg_last_error() holds one
 * line that names the file, the dataset (or attribute) and what is wrong.
 * HDF5's own error printing is switched off inside these functions.
 *
 * Part of the harness, not of libvoltgate: link libvoltgate_harness.a (and
 * libhdf5) before libvoltgate.  voltgate/voltgate.h does not include it.
 */
#ifndef VOLTGATE_GOLDEN_H
#define VOLTGATE_GOLDEN_H

#include <stddef.h>
#include <stdint.h>

#include "voltgate/types.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VG_GOLDEN_SCHEMA_VERSION 1
/* Written into every file; bumped whenever the synthetic distribution or the
 * quantizers change what the generator writes for the same arguments. */
#define VG_GOLDEN_GENERATOR "voltgate-golden/1"
/* Names of the synthetic distributions (SCHEMA.md, "Distribution"). */
#define VG_GOLDEN_W_DIST "gauss-lognormal-outlier/1"
#define VG_GOLDEN_X_DIST "gauss-outlier-features/1"

/* Resource bounds the reader enforces before allocating anything. */
#define VG_GOLDEN_MAX_DIM (1 << 20)          /* any single N, K or M */
#define VG_GOLDEN_MAX_GROUPS 4096
#define VG_GOLDEN_MAX_CASES 1024
#define VG_GOLDEN_MAX_DATASET_BYTES ((size_t)1 << 28) /* 256 MiB per dataset, 1 GiB per file */

/* One case of a file: activations, routing and the reference output. */
typedef struct vg_golden_case {
    char name[32];          /* HDF5 group name under /cases, e.g. "m064", "t06", "r1" */
    int32_t m;              /* rows of x and y_ref (all groups together) */
    int32_t *tokens;        /* [groups]: rows of each group (dense: {m}) */
    int32_t *offsets;       /* [groups + 1]; NULL for dense */
    uint16_t *x;            /* [m][k] FP16 bits */
    float *y_ref;           /* [m][n], FP64 reference rounded to FP32 */
    vg_dtype y_dtype;       /* output type the case is verified with */
    double tol_rel_rms;     /* ||y - y_ref|| / ||y_ref|| must not exceed this */
    double tol_max_abs;     /* max |y - y_ref| must not exceed this */
    double y_ref_norm;      /* ||y_ref||_2 (over all elements), > 0 */
    uint64_t x_seed;        /* seed of the x stream (synthetic cases) */
} vg_golden_case;

/* One file: the weight and its cases. */
typedef struct vg_golden_file {
    vg_family family;
    vg_path path;
    int32_t n, k, groups;   /* per-group weight shape; groups 1 for dense */
    uint64_t seed;
    char generator[64];     /* VG_GOLDEN_GENERATOR of the writer */
    char source[256];       /* "synthetic" or "safetensors:<file>:<tensor>" */
    /* Imported files: what the importer detected and read (format, source
     * tensors, shard files and their SHA-256), one line; NULL otherwise.
     * Owned (malloc'ed), freed by vg_golden_free. */
    char *provenance;
    /* 1: w_q/w_scale/w_zero/w_tensor_scale/w_dequant are datasets of the
     * file.  0: the weight is too big to commit and is regenerated from
     * (family, N, K, groups, seed) when the file is read, then checked
     * against the file's sha256_w_* attributes (SCHEMA.md, "recipe
     * weights").  Only synthetic weights can be recipes. */
    int weights_stored;
    vg_weight_layout layout;    /* per group */
    void *w_q;                  /* groups * layout.q_bytes */
    void *w_scale;              /* groups * layout.scale_bytes, NULL for fp16 */
    void *w_zero;               /* groups * layout.zero_bytes, awq only */
    float w_tensor_scale;       /* nvfp4; 1.0 otherwise */
    float *w_dequant;           /* [groups][n][k] */
    int32_t ncases;
    vg_golden_case *cases;
} vg_golden_file;

/* A vg_weight (host pointers) describing f's weight. */
vg_weight vg_golden_weight(const vg_golden_file *f);

/* Frees everything *f owns and zeroes it. */
vg_status vg_golden_free(vg_golden_file *f);

/* ---- reading and writing -------------------------------------------------- */

/* Reads and fully validates a case file: schema version, family and path
 * names, every dataset's presence, type, rank and extents against the
 * attributes, every dataset's SHA-256, offsets rows, y_ref_norm.  Shapes are
 * checked against the bounds above and the dataset extents before anything
 * is allocated. */
vg_status vg_golden_read(const char *file, vg_golden_file *out);

/* vg_golden_read with flags:
 * VG_GOLDEN_READ_NO_SEAL: the file's seal (SCHEMA.md, "The seal") is not
 *   checked, and an unsealed file is parsed.  Only for a process that may
 *   crash: libhdf5 1.10 is not memory-safe on damaged files, and the seal is
 *   what keeps damaged bytes away from it. */
#define VG_GOLDEN_READ_NO_SEAL 2u
vg_status vg_golden_read_flags(const char *file, unsigned flags, vg_golden_file *out);

/* Writes f to `file` atomically: into file.tmp.<pid>, then rename(2).  The
 * datasets' hashes and y_ref_norm are computed here, and the file's first
 * 512 bytes (an HDF5 user block) seal the rest (SCHEMA.md, "The seal").  The
 * output is byte-for-byte deterministic (no timestamps in the file). */
vg_status vg_golden_write(const char *file, const vg_golden_file *f);

/* Seals `file` as it stands: an unsealed golden file (written before seals)
 * is read and written again; a sealed one whose bytes changed (an intended
 * edit through HDF5) gets a new seal over its bytes, atomically.  An intact
 * sealed file is left alone.  The file is trusted: check it first in a
 * process that may crash (`voltgate golden seal` reads it in a child with
 * VG_GOLDEN_READ_NO_SEAL). */
vg_status vg_golden_seal(const char *file);

/* ---- generating ------------------------------------------------------------- */

/* Arguments of one generated file. */
typedef struct vg_golden_gen_args {
    vg_family family;
    vg_path path;
    int32_t n, k, groups;   /* groups: 1 for dense; default 4 (grouped/loop), 8 (moe) */
    uint64_t seed;
    /* The cases: dense takes m_list (one case per M); grouped and loop take
     * tokens_list (one case per tokens-per-group value); moe takes routings
     * (each `groups` token counts, one case per routing), or, when none is
     * given, one routing drawn from the seed around tokens_list[0] tokens
     * per expert with at least one expert at zero. */
    const int32_t *m_list;
    int32_t m_count;
    const int32_t *tokens_list;
    int32_t tokens_count;
    const int32_t *routings;  /* routing_count * groups token counts */
    int32_t routing_count;
    vg_dtype y_dtype;         /* VG_DTYPE_F32 unless asked */
    int recipe_weights;       /* store the weight as a recipe (see weights_stored) */
} vg_golden_gen_args;

/* Builds the file in memory (the weight quantized with vg_quantize, the
 * reference with vg_reference_gemm).  Free with vg_golden_free. */
vg_status vg_golden_generate(const vg_golden_gen_args *a, vg_golden_file *out);

/* The reader's size bounds, for writers to check before they spend the
 * work: every dataset within VG_GOLDEN_MAX_DATASET_BYTES and all of them
 * within 4 times that, from f's family, n, k, groups and its cases' m
 * (ncases may be 0: the weight alone).  VG_ERR_LIMIT naming the dataset,
 * prefixed by label. */
vg_status vg_golden_check_bounds(const char *label, const vg_golden_file *f);

/* The synthetic FP32 weight [groups][n][k] of (seed): SCHEMA.md names the
 * distribution.  Used by the generator and to rebuild recipe weights. */
vg_status vg_golden_synth_weight(uint64_t seed, int32_t groups, int32_t n, int32_t k,
                                 float *w);
/* The synthetic FP16 activations [m][k] of (seed, case name). */
vg_status vg_golden_synth_x(uint64_t seed, const char *case_name, int32_t m, int32_t k,
                            uint16_t *x);

/* Fills one case's reference output, y_ref_norm and tolerances from the
 * file's w_dequant and the case's x/offsets (used by gen and import). */
vg_status vg_golden_compute_reference(const vg_golden_file *f, vg_golden_case *c);

/* The family's tolerance (SCHEMA.md, "Tolerances") for output dtype yt:
 * relative RMS, and the max-abs factor: tol_max_abs = factor * max|y_ref|. */
vg_status vg_golden_tolerance(vg_family f, vg_dtype yt, double *tol_rel_rms,
                              double *max_abs_factor);

/* Writes the committed CI set into dir (created if missing); names the files
 * written on stdout when `verbose`.  `only` (a file name such as
 * "fp8-moe.h5", or NULL for all) writes just that file of the set. */
vg_status vg_golden_generate_set(const char *set_name, const char *dir, const char *only,
                                 int verbose);

/* ---- verifying ---------------------------------------------------------------- */

typedef struct vg_golden_row {
    char case_name[320];      /* "<file stem>/<case name>" */
    char file[512];
    vg_family family;
    vg_path path;             /* the case's path */
    int32_t m, n, k, groups, tokens; /* tokens: rows of the largest group (dense: M) */
    char backend[8];
    char plan[96];            /* plan id that ran */
    double rel_rms, max_abs;
    double tol_rel_rms, tol_max_abs;
    int pass;
    char note[160];           /* why it failed ("unwritten output: ...") or "" */
} vg_golden_row;

typedef struct vg_golden_verify_opts {
    const char *backend;      /* "cpu" or "cuda" */
    const char *plan;         /* "all", "heuristic", or plan ids separated by commas */
} vg_golden_verify_opts;

/* Called once per row as it is produced. */
typedef void (*vg_golden_row_fn)(const vg_golden_row *row, void *user);

/* Runs every case of an already-read file through the runtime on the
 * backend (device opened by the caller).  `--plan all`: every plan of
 * vg_device_plans that applies, through vg_gemm_with_plan (a grouped case
 * above the grouped limit: every moe and every loop plan, the two paths
 * the runtime may reroute it to; its rows note "ran as ..."); `heuristic`:
 * vg_gemm with tuning off; ids (comma-separated): those plans where they
 * apply (*ran counts the rows).  y is poisoned with NaN before every run and a NaN left is a
 * failure ("unwritten output").  Returns VG_OK when the runs happened,
 * whatever their verdicts; *failed counts failing rows. */
struct vg_device;
vg_status vg_golden_verify_file(struct vg_device *dev, const char *file,
                                const vg_golden_file *f, const vg_golden_verify_opts *o,
                                vg_golden_row_fn fn, void *user, int *ran, int *failed);

/* Error of y against y_ref: relative RMS, max abs and the count of NaN /
 * non-finite elements. */
void vg_golden_compare(const float *y, const float *y_ref, size_t count, double *rel_rms,
                       double *max_abs, size_t *nonfinite);

/* ---- importing ------------------------------------------------------------------ */

typedef struct vg_golden_import_args {
    const char *safetensors;  /* one file; or NULL with `checkpoint` */
    const char *checkpoint;   /* a model folder (model.safetensors.index.json, or one
                               * model.safetensors); tensors resolve through weight_map */
    const char *weight;       /* the weight: a tensor name, or a module prefix whose
                               * tensors give the format (golden/SCHEMA.md, "Imported
                               * checkpoints"); NULL when `experts` is given */
    const char *scale;        /* F8_E4M3 weights: the scale tensor; NULL = "<weight>_scale_inv" */
    const char *format;       /* force a source format (vg_golden_import_format_names); NULL: detect */
    int have_family;          /* quantize a float weight to `family` instead of taking it as stored */
    vg_family family;
    vg_path path;             /* dense unless asked (G > 1 needs grouped/loop/moe) */
    int32_t tokens;           /* tokens per group (dense: M); default 1 */
    const int32_t *routing;   /* moe: tokens of each expert (routing_count = groups); NULL: `tokens` */
    int32_t routing_count;
    uint64_t seed;            /* of the synthetic activations */
    const char *experts;      /* per-expert 2-D weights: a name with "{e}" for the expert index */
    int have_expert_range;    /* take experts [expert_begin, expert_end) (also of a fused 3-D tensor) */
    int32_t expert_begin, expert_end;
    const char *rows;         /* "all" (default), "gate" (even rows) or "up" (odd rows): a fused
                               * gate_up weight whose rows interleave gate and up (gpt-oss) */
} vg_golden_import_args;

/* The source format names `format` takes, comma-separated, for messages. */
const char *vg_golden_import_format_names(void);

vg_status vg_golden_import(const vg_golden_import_args *a, vg_golden_file *out);

#ifdef __cplusplus
}
#endif
#endif
