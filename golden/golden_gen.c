/*
 * The golden generator: synthetic weights and activations (SCHEMA.md,
 * "Distribution"), quantization through vg_quantize, the FP64 reference
 * through vg_reference_gemm, per-family tolerances, and the committed CI set.
 *
 * Everything is a pure function of the arguments: the random numbers come
 * from golden/prng.c (xoshiro256** with no libm in the Gaussians), every
 * stream is named, and the order of draws is fixed, so the same arguments
 * give the same bytes on every machine.
 */
#include "voltgate/golden.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "voltgate/family.h"
#include "golden_recipe.h"
#include "prng.h"
#include "voltgate/formats.h"
#include "voltgate/quant.h"
#include "voltgate/reference.h"

/* ---- the synthetic distribution ------------------------------------------------ */

/* Weight distribution (SCHEMA.md names it "gauss-lognormal-outlier/1"):
 *   w[g][n][k] = 0.02 * c[g][n] * b[g][n/128][k/128] * z[g][n][k]
 *   c  per output channel: exp(0.5 * N(0,1)) clipped to exp(+-2), and for
 *      max(1, N/64) outlier channels of each group (drawn) times 8;
 *   b  per 128 x 128 block: exp(1.0 * N(0,1)) clipped to exp(+-3) (block
 *      scales span more than two orders of magnitude);
 *   z  N(0,1), and with probability 1/128 times 8 (heavy-tailed blocks).
 * Draw order: per group, c (N values), outlier rows, b (row-major blocks),
 * then z row-major. */
vg_status vg_golden_synth_weight(uint64_t seed, int32_t groups, int32_t n, int32_t k, float *w)
{
    if (!w || groups < 1 || n < 1 || k < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "synth weight: bad shape %dx%dx%d", (int)groups,
                       (int)n, (int)k);
    int32_t bn = (n + 127) / 128, bk = (k + 127) / 128;
    double *c = malloc((size_t)n * sizeof(double));
    double *b = malloc((size_t)bn * (size_t)bk * sizeof(double));
    if (!c || !b) {
        free(c);
        free(b);
        return vg_fail(VG_ERR_NO_MEMORY, "synth weight: out of memory");
    }
    vg_rng rng;
    vg_rng_seed(&rng, seed, vg_rng_stream("weight"));
    for (int32_t g = 0; g < groups; g++) {
        for (int32_t r = 0; r < n; r++) {
            double z = vg_rng_normal(&rng);
            z = z > 4.0 ? 4.0 : z < -4.0 ? -4.0 : z;
            c[r] = vg_portable_exp(0.5 * z);
        }
        int32_t outliers = n / 64 > 1 ? n / 64 : 1;
        for (int32_t i = 0; i < outliers; i++)
            c[vg_rng_below(&rng, (uint64_t)n)] *= 8.0;
        for (int32_t i = 0; i < bn * bk; i++) {
            double z = vg_rng_normal(&rng);
            z = z > 3.0 ? 3.0 : z < -3.0 ? -3.0 : z;
            b[i] = vg_portable_exp(z);
        }
        float *wg = w + (size_t)g * (size_t)n * (size_t)k;
        for (int32_t r = 0; r < n; r++)
            for (int32_t j = 0; j < k; j++) {
                double z = vg_rng_normal(&rng);
                if (vg_rng_below(&rng, 128) == 0)
                    z *= 8.0;
                wg[(size_t)r * (size_t)k + (size_t)j] =
                    (float)(0.02 * c[r] * b[(r / 128) * bk + j / 128] * z);
            }
    }
    free(c);
    free(b);
    return VG_OK;
}

/* The messages of a failed step of the rebuild, "recipe weight: <why>";
 * why is copied first, since vg_fail formats into the buffer that
 * vg_last_error() returns. */
static vg_status recipe_fail(vg_status st)
{
    char why[600];
    snprintf(why, sizeof why, "%s", vg_last_error());
    return vg_fail(st, "recipe weight: %s", why);
}

vg_status vg_golden_rebuild_recipe(vg_golden_file *f)
{
    size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
    float *w = malloc(elems * sizeof(float));
    f->w_dequant = malloc(elems * sizeof(float));
    if (!w || !f->w_dequant) {
        free(w);
        return vg_fail(VG_ERR_NO_MEMORY, "recipe weight: out of memory");
    }
    vg_status st = vg_golden_synth_weight(f->seed, f->groups, f->n, f->k, w);
    vg_qweight qw;
    memset(&qw, 0, sizeof qw);
    if (st == VG_OK)
        st = vg_quantize(f->family, w, f->groups, f->n, f->k, &qw);
    free(w);
    if (st != VG_OK)
        return recipe_fail(st);
    /* take ownership of the quantized buffers */
    f->w_q = qw.q;
    f->w_scale = qw.scale;
    f->w_zero = qw.zero;
    f->w_tensor_scale = qw.w.tensor_scale;
    vg_weight wt = vg_golden_weight(f);
    if ((st = vg_dequantize(&wt, f->w_dequant)) != VG_OK)
        return recipe_fail(st);
    return VG_OK;
}

/* Activations ("gauss-outlier-features/1"):
 *   x[m][k] = FP16( f[k] * N(0,1) ),  f[k] = exp(0.3 * N(0,1)) clipped to
 *   exp(+-1), times 12 for max(2, K/32) outlier features (drawn).
 * f depends on the file seed only (the features of one layer); the N(0,1)
 * draws on the seed and the case name. */
vg_status vg_golden_synth_x(uint64_t seed, const char *case_name, int32_t m, int32_t k,
                            uint16_t *x)
{
    if (!x || !case_name || m < 0 || k < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "synth x: bad arguments");
    double *f = malloc((size_t)k * sizeof(double));
    if (!f)
        return vg_fail(VG_ERR_NO_MEMORY, "synth x: out of memory");
    vg_rng rng;
    vg_rng_seed(&rng, seed, vg_rng_stream("features"));
    for (int32_t j = 0; j < k; j++) {
        double z = vg_rng_normal(&rng);
        z = z > 3.33 ? 3.33 : z < -3.33 ? -3.33 : z;
        f[j] = vg_portable_exp(0.3 * z);
    }
    int32_t outliers = k / 32 > 2 ? k / 32 : 2;
    for (int32_t i = 0; i < outliers; i++)
        f[vg_rng_below(&rng, (uint64_t)k)] = 12.0;
    char stream[64];
    snprintf(stream, sizeof stream, "x/%s", case_name);
    vg_rng_seed(&rng, seed, vg_rng_stream(stream));
    for (int32_t r = 0; r < m; r++)
        for (int32_t j = 0; j < k; j++)
            x[(size_t)r * (size_t)k + (size_t)j] =
                vg_f32_to_fp16((float)(f[j] * vg_rng_normal(&rng)));
    free(f);
    return VG_OK;
}

/* ---- tolerances -------------------------------------------------------------------- */

/* SCHEMA.md, "Tolerances", gives the reasoning behind these numbers. */
#define TOL_FP16_F32OUT 1e-4      /* VG_TOL_EXACT (fp16): FP32 accumulation order only */
#define TOL_SCALED_F32OUT 1e-3    /* VG_TOL_SCALED: weights may be rounded to FP16 in registers */
#define TOL_F16_OUTPUT_EXTRA 1e-3 /* FP16 output rounding, 2^-11 relative per element */
#define MAX_ABS_FACTOR 4.0        /* tol_max_abs = 4 * tol_rel_rms * max|y_ref| */

vg_status vg_golden_tolerance(vg_family f, vg_dtype yt, double *tol_rel_rms,
                              double *max_abs_factor)
{
    const vg_family_desc *d = vg_family_desc_of(f);
    if (!d || !tol_rel_rms || !max_abs_factor)
        return vg_fail(VG_ERR_INVALID_ARG, "tolerance: invalid family %d", (int)f);
    double t = d->tol == VG_TOL_EXACT ? TOL_FP16_F32OUT : TOL_SCALED_F32OUT;
    if (yt == VG_DTYPE_F16)
        t += TOL_F16_OUTPUT_EXTRA;
    *tol_rel_rms = t;
    *max_abs_factor = MAX_ABS_FACTOR * t;
    return VG_OK;
}

/* ---- the reference ------------------------------------------------------------------- */

vg_status vg_golden_compute_reference(const vg_golden_file *f, vg_golden_case *c)
{
    size_t mk = (size_t)c->m * (size_t)f->k, mn = (size_t)c->m * (size_t)f->n;
    float *xf = malloc((mk ? mk : 1) * sizeof(float));
    double *y = malloc((mn ? mn : 1) * sizeof(double));
    if (!c->y_ref)
        c->y_ref = malloc((mn ? mn : 1) * sizeof(float));
    if (!xf || !y || !c->y_ref) {
        free(xf);
        free(y);
        return vg_fail(VG_ERR_NO_MEMORY, "reference: out of memory");
    }
    for (size_t i = 0; i < mk; i++)
        xf[i] = vg_fp16_to_f32(c->x[i]);
    vg_status st = vg_reference_gemm(f->path, c->m, f->n, f->k, f->groups, c->offsets, xf,
                                     f->w_dequant, y);
    double maxabs = 0.0, ss = 0.0;
    for (size_t i = 0; st == VG_OK && i < mn; i++) {
        c->y_ref[i] = (float)y[i];
        double a = fabs((double)c->y_ref[i]);
        maxabs = a > maxabs ? a : maxabs;
        ss += (double)c->y_ref[i] * (double)c->y_ref[i];
    }
    free(xf);
    free(y);
    if (st != VG_OK)
        return st;
    if (!(ss > 0.0))
        return vg_fail(VG_ERR_INVALID_ARG, "reference: case %s has an all-zero y_ref", c->name);
    double factor;
    if ((st = vg_golden_tolerance(f->family, c->y_dtype, &c->tol_rel_rms, &factor)) != VG_OK)
        return st;
    c->tol_max_abs = factor * maxabs;
    /* The reader refuses a reference it cannot check against: say so now. */
    if (!isfinite(ss) || !isfinite(c->tol_max_abs))
        return vg_fail(VG_ERR_INVALID_ARG, "reference: case %s: y_ref overflows (max |y_ref| "
                       "%g, sum of squares %g): the weight or activations are too large for a "
                       "finite tolerance", c->name, maxabs, ss);
    c->y_ref_norm = sqrt(ss);
    return VG_OK;
}

/* ---- one file ---------------------------------------------------------------------------- */

/* Fills a case's routing (tokens, offsets, m) from per-group counts. */
static vg_status set_routing(const vg_golden_file *f, vg_golden_case *c, const int32_t *counts)
{
    c->tokens = malloc((size_t)f->groups * sizeof(int32_t));
    if (!c->tokens)
        return vg_fail(VG_ERR_NO_MEMORY, "generate: out of memory");
    int64_t m = 0;
    for (int32_t g = 0; g < f->groups; g++) {
        if (counts[g] < 0 || counts[g] > VG_GOLDEN_MAX_DIM)
            return vg_fail(VG_ERR_INVALID_ARG, "generate: %d tokens for group %d", (int)counts[g],
                           (int)g);
        c->tokens[g] = counts[g];
        m += counts[g];
    }
    if (m < 1 || m > VG_GOLDEN_MAX_DIM)
        return vg_fail(VG_ERR_INVALID_ARG, "generate: case %s has %lld rows in all", c->name,
                       (long long)m);
    c->m = (int32_t)m;
    if (f->path != VG_PATH_DENSE) {
        c->offsets = malloc(((size_t)f->groups + 1) * sizeof(int32_t));
        if (!c->offsets)
            return vg_fail(VG_ERR_NO_MEMORY, "generate: out of memory");
        c->offsets[0] = 0;
        for (int32_t g = 0; g < f->groups; g++)
            c->offsets[g + 1] = c->offsets[g] + counts[g];
    }
    return VG_OK;
}

/* An uneven routing of about `mean` tokens per expert: Zipf-like expert
 * popularity in a drawn order, at least one expert with zero tokens. */
static void draw_routing(uint64_t seed, int32_t groups, int32_t mean, int32_t *counts)
{
    vg_rng rng;
    vg_rng_seed(&rng, seed, vg_rng_stream("routing"));
    int32_t *order = malloc((size_t)groups * sizeof(int32_t));
    for (int32_t g = 0; g < groups; g++) {
        counts[g] = 0;
        if (order)
            order[g] = g;
    }
    if (!order)
        return;
    for (int32_t g = groups - 1; g > 0; g--) {
        int32_t j = (int32_t)vg_rng_below(&rng, (uint64_t)g + 1);
        int32_t t = order[g];
        order[g] = order[j];
        order[j] = t;
    }
    double total_w = 0.0;
    for (int32_t g = 0; g < groups - 1; g++) /* the last in order gets zero */
        total_w += 1.0 / (g + 1);
    int64_t tokens = (int64_t)mean * groups;
    for (int64_t t = 0; t < tokens; t++) {
        double u = vg_rng_uniform(&rng) * total_w, acc = 0.0;
        int32_t g = 0;
        for (; g < groups - 2; g++) {
            acc += 1.0 / (g + 1);
            if (u < acc)
                break;
        }
        counts[order[g]]++;
    }
    if (groups == 1)
        counts[0] = mean > 0 ? mean : 1;
    free(order);
}

vg_status vg_golden_generate(const vg_golden_gen_args *a, vg_golden_file *out)
{
    if (!a || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "generate: NULL argument");
    memset(out, 0, sizeof *out);
    if (!vg_family_name(a->family) || !vg_path_name(a->path))
        return vg_fail(VG_ERR_INVALID_ARG, "generate: invalid family or path");
    if (a->n < 1 || a->k < 1 || a->n > VG_GOLDEN_MAX_DIM || a->k > VG_GOLDEN_MAX_DIM)
        return vg_fail(VG_ERR_INVALID_ARG, "generate: N=%d K=%d out of range", (int)a->n,
                       (int)a->k);
    int32_t groups = a->groups;
    if (a->path == VG_PATH_DENSE) {
        if (groups > 1)
            return vg_fail(VG_ERR_INVALID_ARG, "generate: dense takes one group, not %d",
                           (int)groups);
        groups = 1;
    } else if (groups <= 0) {
        groups = a->path == VG_PATH_MOE ? 8 : 4;
    }
    if (groups > VG_GOLDEN_MAX_GROUPS)
        return vg_fail(VG_ERR_INVALID_ARG, "generate: %d groups exceed %d", (int)groups,
                       VG_GOLDEN_MAX_GROUPS);

    vg_golden_file *f = out;
    f->family = a->family;
    f->path = a->path;
    f->n = a->n;
    f->k = a->k;
    f->groups = groups;
    f->seed = a->seed;
    f->weights_stored = !a->recipe_weights;
    snprintf(f->generator, sizeof f->generator, "%s", VG_GOLDEN_GENERATOR);
    snprintf(f->source, sizeof f->source, "synthetic");
    vg_status st = vg_weight_layout_of(a->family, a->n, a->k, &f->layout);
    if (st != VG_OK)
        return st;
    if ((st = vg_golden_check_bounds("generate", f)) != VG_OK)
        return st;

    /* the cases' count */
    int32_t ncases;
    if (a->path == VG_PATH_DENSE)
        ncases = a->m_count;
    else if (a->path == VG_PATH_MOE)
        ncases = a->routing_count > 0 ? a->routing_count : 1;
    else
        ncases = a->tokens_count;
    if (ncases < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "generate: no cases (%s needs %s)",
                       vg_path_name(a->path),
                       a->path == VG_PATH_DENSE ? "--m" : a->path == VG_PATH_MOE
                                                           ? "--routing or --tokens"
                                                           : "--tokens or --tokens-list");
    if (ncases > VG_GOLDEN_MAX_CASES)
        return vg_fail(VG_ERR_INVALID_ARG, "generate: %d cases exceed %d", (int)ncases,
                       VG_GOLDEN_MAX_CASES);

    /* the weight */
    size_t elems = (size_t)groups * (size_t)a->n * (size_t)a->k;
    float *w = malloc(elems * sizeof(float));
    f->w_dequant = malloc(elems * sizeof(float));
    if (!w || !f->w_dequant) {
        free(w);
        vg_golden_free(f);
        return vg_fail(VG_ERR_NO_MEMORY, "generate: out of memory for %zu weights", elems);
    }
    st = vg_golden_synth_weight(a->seed, groups, a->n, a->k, w);
    vg_qweight qw;
    memset(&qw, 0, sizeof qw);
    if (st == VG_OK)
        st = vg_quantize(a->family, w, groups, a->n, a->k, &qw);
    free(w);
    if (st != VG_OK) {
        vg_golden_free(f);
        return st;
    }
    f->w_q = qw.q;
    f->w_scale = qw.scale;
    f->w_zero = qw.zero;
    f->w_tensor_scale = qw.w.tensor_scale; /* 1.0 unless the family has one */
    vg_weight wt = vg_golden_weight(f);
    if ((st = vg_dequantize(&wt, f->w_dequant)) != VG_OK) {
        vg_golden_free(f);
        return st;
    }

    /* the cases */
    f->cases = calloc((size_t)ncases, sizeof *f->cases);
    if (!f->cases) {
        vg_golden_free(f);
        return vg_fail(VG_ERR_NO_MEMORY, "generate: out of memory");
    }
    f->ncases = ncases;
    int32_t *counts = malloc((size_t)groups * sizeof(int32_t));
    if (!counts) {
        vg_golden_free(f);
        return vg_fail(VG_ERR_NO_MEMORY, "generate: out of memory");
    }
    for (int32_t i = 0; st == VG_OK && i < ncases; i++) {
        vg_golden_case *c = &f->cases[i];
        c->y_dtype = a->y_dtype;
        if (a->path == VG_PATH_DENSE) {
            snprintf(c->name, sizeof c->name, "m%03d", (int)a->m_list[i]);
            counts[0] = a->m_list[i];
        } else if (a->path == VG_PATH_MOE) {
            snprintf(c->name, sizeof c->name, "r%d", (int)i);
            if (a->routing_count > 0)
                memcpy(counts, a->routings + (size_t)i * (size_t)groups,
                       (size_t)groups * sizeof(int32_t));
            else
                draw_routing(a->seed, groups, a->tokens_count > 0 ? a->tokens_list[0] : 4,
                             counts);
        } else {
            snprintf(c->name, sizeof c->name, "t%02d", (int)a->tokens_list[i]);
            for (int32_t g = 0; g < groups; g++)
                counts[g] = a->tokens_list[i];
        }
        for (int32_t j = 0; j < i; j++)
            if (!strcmp(f->cases[j].name, c->name))
                st = vg_fail(VG_ERR_INVALID_ARG, "generate: case %s given twice", c->name);
        if (st == VG_OK && a->path == VG_PATH_DENSE && counts[0] < 1)
            st = vg_fail(VG_ERR_INVALID_ARG, "generate: M=%d must be at least 1", (int)counts[0]);
        if (st == VG_OK)
            st = set_routing(f, c, counts);
        if (st == VG_OK) {
            c->x_seed = a->seed;
            c->x = malloc((size_t)c->m * (size_t)a->k * sizeof(uint16_t));
            st = c->x ? vg_golden_synth_x(a->seed, c->name, c->m, a->k, c->x)
                      : vg_fail(VG_ERR_NO_MEMORY, "generate: out of memory");
        }
        if (st == VG_OK)
            st = vg_golden_compute_reference(f, c);
    }
    free(counts);
    if (st != VG_OK)
        vg_golden_free(f);
    return st;
}

/* ---- the committed set ------------------------------------------------------------------- */

typedef struct set_entry {
    const char *variant;     /* file name after "<family>-<path>" ("" for none) */
    vg_path path;
    int32_t n, k, groups;
    int fp8_only;            /* only for the fp8 family */
    int every_family;        /* a variant made for every family (else fp8 and fp16 only) */
    vg_dtype y_dtype;
    int recipe;
    int which_cases;         /* index into the case lists below */
} set_entry;

/* 24 and 40: one token tile of the 32- and 64-token mid decode plans with
 * padding rows, and the 17-48 rows the CUDA rule sends to them on SM70/75
 * and to the 16-row tiles on SM80+ (kernels/cuda/KERNELS.md D36, D52, D53) */
static const int32_t DENSE_M[] = {1, 2, 3, 6, 16, 24, 40, 64, 65, 256};
/* the aligned and FP16-output files: the kernels' whole-step (vector) loops,
 * which the ragged shapes above never enter, at 24 and 40 rows too */
static const int32_t DENSE_M_SHORT[] = {1, 6, 24, 40, 65};
static const int32_t GROUP_T[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 32};
static const int32_t WO_A_T[] = {6};
/* moe routings over 8 experts: uneven with empty experts, one hot expert,
 * a ramp, every expert at one token, and groups of 1-3 token tiles of 16
 * rows beside small and empty ones (the grouped 16-row plan's several
 * tiles per group, which `--plan all` runs; at N = 88 the CUDA rule does
 * not pick it: its routing row needs N >= 512) */
static const int32_t MOE_ROUTINGS[] = {
    3, 0, 7, 1, 12, 0, 2, 5,
    0, 0, 16, 0, 0, 1, 0, 0,
    1, 2, 3, 4, 5, 6, 7, 8,
    1, 1, 1, 1, 1, 1, 1, 1,
    40, 0, 17, 3, 9, 1, 0, 5,
};

enum { CASES_DENSE, CASES_DENSE_SHORT, CASES_GROUP, CASES_WO_A, CASES_MOE };

/* Ragged shapes: N and K off the 128 grid (K a multiple of 8 for awq). */
static const set_entry CI_SET[] = {
    {"", VG_PATH_DENSE, 200, 392, 1, 0, 0, VG_DTYPE_F32, 0, CASES_DENSE},
    {"", VG_PATH_GROUPED, 136, 264, 3, 0, 0, VG_DTYPE_F32, 0, CASES_GROUP},
    {"", VG_PATH_LOOP, 152, 200, 3, 0, 0, VG_DTYPE_F32, 0, CASES_GROUP},
    {"", VG_PATH_MOE, 88, 136, 8, 0, 0, VG_DTYPE_F32, 0, CASES_MOE},
    /* N and K on the 128 grid: the kernels' whole-step paths (no K tail,
     * vector loads, mxfp4's one-word exponents), for every family */
    {"-aligned", VG_PATH_DENSE, 256, 512, 1, 0, 1, VG_DTYPE_F32, 0, CASES_DENSE_SHORT},
    {"-f16out", VG_PATH_DENSE, 200, 392, 1, 0, 0, VG_DTYPE_F16, 0, CASES_DENSE_SHORT},
    /* DeepSeek-V4 wo_a: 8 groups of 1024 x 4096 at 6 tokens per group; the
     * 32 MiB weight is a recipe (regenerated and hash-checked on read) */
    {"-wo_a", VG_PATH_GROUPED, 1024, 4096, 8, 1, 0, VG_DTYPE_F32, 1, CASES_WO_A},
};

/* The seed of the set's file of entry e and family fam.  The five families
 * the set began with keep the seeds they were committed with, 1 + 5e + fam
 * (a skipped family still takes its seed, so adding a family to a variant
 * leaves every other file as it was); a family added later gets seeds above
 * 2^32, so adding one to the enum changes no committed file either. */
#define SET_FIRST_FAMILIES 5
static uint64_t set_seed(size_t e, int fam)
{
    if (fam < SET_FIRST_FAMILIES)
        return 1 + (uint64_t)e * SET_FIRST_FAMILIES + (uint64_t)fam;
    return ((uint64_t)fam << 32) + (uint64_t)e + 1;
}

vg_status vg_golden_generate_set(const char *set_name, const char *dir, const char *only,
                                 int verbose)
{
    int matched = 0;
    if (!set_name || strcmp(set_name, "ci") != 0)
        return vg_fail(VG_ERR_NOT_FOUND, "golden set '%s' unknown (the only set is 'ci')",
                       set_name ? set_name : "(null)");
    if (!dir)
        return vg_fail(VG_ERR_INVALID_ARG, "golden set: no output folder");
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return vg_fail(VG_ERR_IO, "%s: cannot create folder: %s", dir, strerror(errno));
    for (size_t e = 0; e < sizeof CI_SET / sizeof CI_SET[0]; e++) {
        const set_entry *s = &CI_SET[e];
        /* the f16-output variant exists for fp8 and fp16 only, to keep the
         * set small */
        for (int fam = 0; fam < VG_FAMILY_COUNT; fam++) {
            if (s->fp8_only && fam != VG_FAMILY_FP8)
                continue;
            if (s->variant[0] && !s->fp8_only && !s->every_family && fam != VG_FAMILY_FP8 &&
                fam != VG_FAMILY_FP16)
                continue;
            vg_golden_gen_args a;
            memset(&a, 0, sizeof a);
            a.family = (vg_family)fam;
            a.path = s->path;
            a.n = s->n;
            a.k = s->k;
            a.groups = s->groups;
            a.seed = set_seed(e, fam);
            a.y_dtype = s->y_dtype;
            a.recipe_weights = s->recipe;
            switch (s->which_cases) {
            case CASES_DENSE:
                a.m_list = DENSE_M;
                a.m_count = (int32_t)(sizeof DENSE_M / sizeof DENSE_M[0]);
                break;
            case CASES_DENSE_SHORT:
                a.m_list = DENSE_M_SHORT;
                a.m_count = (int32_t)(sizeof DENSE_M_SHORT / sizeof DENSE_M_SHORT[0]);
                break;
            case CASES_GROUP:
                a.tokens_list = GROUP_T;
                a.tokens_count = (int32_t)(sizeof GROUP_T / sizeof GROUP_T[0]);
                break;
            case CASES_WO_A:
                a.tokens_list = WO_A_T;
                a.tokens_count = 1;
                break;
            case CASES_MOE:
                a.routings = MOE_ROUTINGS;
                a.routing_count = (int32_t)(sizeof MOE_ROUTINGS / sizeof MOE_ROUTINGS[0] / 8);
                break;
            }
            char base[128], file[4096];
            snprintf(base, sizeof base, "%s-%s%s.h5", vg_family_name(a.family),
                     vg_path_name(a.path), s->variant);
            if (only && strcmp(only, base) != 0)
                continue;
            matched++;
            snprintf(file, sizeof file, "%s/%s", dir, base);
            vg_golden_file f;
            vg_status st = vg_golden_generate(&a, &f);
            if (st != VG_OK) {
                char why[512]; /* copied: vg_fail overwrites vg_last_error's buffer */
                snprintf(why, sizeof why, "%s", vg_last_error());
                return vg_fail(st, "%s: %s", file, why);
            }
            st = vg_golden_write(file, &f);
            vg_golden_free(&f);
            if (st != VG_OK)
                return st;
            if (verbose)
                printf("wrote %s\n", file);
        }
    }
    if (only && !matched)
        return vg_fail(VG_ERR_NOT_FOUND, "golden set %s has no file named '%s'", set_name, only);
    return VG_OK;
}
