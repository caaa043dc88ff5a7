/*
 * The CUDA plan table, the heuristic rule and the launcher behind
 * vg_cuda_gemm() (kernels.h): the table is the plan list (plan_list.h) as
 * vg_plan rows; every plan is one instantiation of a generic mainloop
 * (decode_kernel.cuh, gemm_kernel.cuh) per family, compiled in that
 * family's gemm_<family>.cu (plan_kernels.cuh) and selected at run time.
 * No kernel template is instantiated here.
 *
 * Paths:
 *   dense    one launch, grid (N tiles, M tiles, split).
 *   grouped  one launch for all groups, grid (N tiles, groups x M tiles per
 *   moe      group, split); a block whose group has no rows in its tile exits
 *            at once.  moe is grouped with uneven counts.
 *   loop     one dense launch per group with rows, from offsets_host.
 * Split-K > 1 adds one reduction launch (split order, deterministic).
 * Nothing here allocates or synchronizes, so every path can be captured in
 * a CUDA graph.
 */
#include <cuda_runtime.h>

#include <atomic>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include <initializer_list>

#include "plan_kernels.cuh" /* first: dequant.cuh needs cuda_fp16.h */
#include "dequant_blas.h"
#include "device_cache.h"
#include "kernels.h"
#include "voltgate/family.h"

__global__ void vg_splitk_reduce_kernel(const float *ws, void *y, int y_f16, size_t count,
                                        int splits)
{
    /* Launched with PDL after a decode kernel (launch below): its blocks
     * start while the partials are still being written and wait here; the
     * next layer's decode kernel may start its weight loads meanwhile. */
    grid_dep_launch();
    grid_dep_wait();
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        float v = 0.0f;
        for (int s = 0; s < splits; s++)
            v += ws[(size_t)s * count + i];
        if (y_f16)
            reinterpret_cast<__half *>(y)[i] = __float2half_rn(v);
        else
            reinterpret_cast<float *>(y)[i] = v;
    }
}

/* Programmatic dependent launch for the decode kernels and the split-K
 * reduction on SM90+ (kernel_common.cuh, grid_dep_wait; plan_kernels.cuh
 * pdl_launch_config): a
 * decode GEMM is short (a few us) and each launch pays a fixed ramp-up and
 * tail; with the attribute the next launch's blocks start while this one
 * drains and load their first weights before they wait for it.
 * VG_CUDA_PDL=0 in the environment turns it off (the benchmark's A/B).  The
 * arch is looked up once per device. */
int vg_cuda_device_major(void)
{
    return vg_cuda_device_attr<cudaDevAttrComputeCapabilityMajor>(0);
}

bool vg_cuda_pdl_enabled()
{
    static const bool env_off = [] {
        const char *e = getenv("VG_CUDA_PDL");
        return e && !strcmp(e, "0");
    }();
    return !env_off && vg_cuda_device_major() >= 9;
}

namespace {

typedef vg_launch_fn launch_fn;

struct CudaPlan {
    vg_plan plan;
};

/* Decode plans: tile_m tokens, tile_n weight rows, tile_k the 128-long step
 * (a split is a whole number of them), stages the steps in flight per warp
 * (U; half that for fp16), max_rows as the list says. */
#define ROW_DECODE(path, tile_m, tile_n, WK, U, split, max_rows)                             \
    {{VG_PLAN_ID_DECODE(path, tile_m, tile_n, WK, U, split), "cuda", VG_PLAN_PATH(path),     \
      VG_ALL_FAMILIES, tile_m, tile_n, 128, U, split, max_rows, VG_KIND_DECODE, 0}},

/* Mid decode plans: the same kernel with WN warps over N sharing one X
 * ring (plan_list.h).  Dense: offered from tile_m/2 + 1 rows (below, the
 * 16-row plans, with half the token tile or less, waste less).  Grouped:
 * from 17, where the grouped 16-row plans stop but one (m16n16w4.u2, to 128
 * rows: the rule's pick for uneven routing and fp8 to 32 rows, D43); a 64-token tile with 17-32
 * rows per group in one launch is 1.5-2.2x the per-group loop (wo_a, H100,
 * KERNELS.md D37). */
#define MID_DECODE_MIN_ROWS_dense(tile_m) (tile_m / 2 + 1)
#define MID_DECODE_MIN_ROWS_grouped(tile_m) (GROUPED_DECODE_MAX_TOKENS + 1)
#define ROW_DECODE_WN(path, tile_m, tile_n, WN, WK, U, split, max_rows)                      \
    {{VG_PLAN_ID_DECODE_WN(path, tile_m, tile_n, WN, WK, U, split), "cuda",                  \
      VG_PLAN_PATH(path),                                                                    \
      VG_ALL_FAMILIES, tile_m, tile_n, 128, U, split, max_rows, VG_KIND_DECODE,              \
      MID_DECODE_MIN_ROWS_##path(tile_m)}},
#define ROW_TILED(path, name, BM, BN, BK, ST, split, max_rows, WM, WN, WK)                   \
    {{VG_PLAN_ID_TILED(path, name, BM, BN, BK, ST, split), "cuda", VG_PLAN_PATH(path),       \
      VG_ALL_FAMILIES, BM, BN, BK, ST, split, max_rows, VG_KIND_TILED, 0}},

/* Dequantize once + cuBLAS (dequant_blas.h): no tile of its own, no launch
 * function in the table (vg_cuda_gemm branches on the kind); its stages are
 * the groups one cuBLAS call takes.  Offered from 17 rows on: below, the
 * decode kernel reads W once where this plan reads it, writes it and reads
 * it again. */
#define DQBLAS_MIN_ROWS (GROUPED_DECODE_MAX_TOKENS + 1)
#define ROW_DQBLAS(path, groups)                                                             \
    {{VG_PLAN_ID_DQBLAS(path, groups), "cuda", VG_PLAN_PATH(path), VG_ALL_FAMILIES, 0, 0, 0,  \
      groups, 1, 0, VG_KIND_DEQUANT_BLAS, DQBLAS_MIN_ROWS}},

/* The plan table, in the list's order.  Decode plans (8 or 16 tokens per
 * block; 64 for the mid decode plans): the register-streaming kernel
 * (decode_kernel.cuh), named m<tokens>n<weight rows>w<warps>.u<U>.sk<split>
 * (wn<WN>wk<WK> for the mid decode plans).  Mid tiles (M <= 64) and
 * prefill (any M): the shared-memory pipelined mainloop (gemm_kernel.cuh),
 * square tiles, warps over M and N. */
const CudaPlan g_plans[] = {VG_CUDA_PLAN_LIST(ROW_DECODE, ROW_DECODE_WN, ROW_TILED, ROW_DQBLAS)};
static_assert(sizeof g_plans / sizeof g_plans[0] == VG_CUDA_PLAN_COUNT, "one row per list entry");

/* Each family's launch functions and shared-memory sizes (gemm_<family>.cu),
 * indexed by vg_family, then by plan index. */
static_assert(VG_FAMILY_FP16 == 0 && VG_FAMILY_AWQ == 1 && VG_FAMILY_FP8 == 2 &&
                  VG_FAMILY_MXFP4 == 3 && VG_FAMILY_NVFP4 == 4 && VG_FAMILY_COUNT == 5,
              "g_family_launch lists the families in vg_family order");
const launch_fn *const g_family_launch[VG_FAMILY_COUNT] = {
    vg_gemm_launch_fp16, vg_gemm_launch_awq, vg_gemm_launch_fp8, vg_gemm_launch_mxfp4,
    vg_gemm_launch_nvfp4};
const int *const g_family_smem[VG_FAMILY_COUNT] = {
    vg_gemm_smem_fp16, vg_gemm_smem_awq, vg_gemm_smem_fp8, vg_gemm_smem_mxfp4,
    vg_gemm_smem_nvfp4};

launch_fn launch_of(const CudaPlan *cp, vg_family f) { return g_family_launch[f][cp - g_plans]; }
int smem_of(const CudaPlan *cp, vg_family f) { return g_family_smem[f][cp - g_plans]; }

const size_t g_plan_count = sizeof g_plans / sizeof g_plans[0];

const CudaPlan *find_plan(const vg_plan *p)
{
    if (!p)
        return NULL;
    for (size_t i = 0; i < g_plan_count; i++)
        if (&g_plans[i].plan == p || (p->id && strcmp(g_plans[i].plan.id, p->id) == 0))
            return &g_plans[i];
    return NULL;
}

/* The plan the heuristic names by id.  An id the table does not have is a
 * bug in this file, not a fallback: it stops the process at the first call
 * that reaches it (first_that_fits would otherwise skip it silently), and
 * suites/test_cuda_fp8.c (test_heuristic_names_known_plans) walks every
 * branch of vg_cuda_heuristic_for with a limit no plan fits, so every id
 * of every list is looked up in `make check`. */
/* The first id the rule named that the list does not have (NULL: none so
 * far); vg_cuda_plan_table_check turns it into a start-up error. */
std::atomic<const char *> g_missing_id{nullptr};

const vg_plan *by_id(const char *id)
{
    for (size_t i = 0; i < g_plan_count; i++)
        if (strcmp(g_plans[i].plan.id, id) == 0)
            return &g_plans[i].plan;
    const char *none = nullptr;
    g_missing_id.compare_exchange_strong(none, id);
    return NULL;
}

int ceil_div(long a, long b) { return (int)((a + b - 1) / b); }

/* K per split: a whole number of K tiles. */
int k_per_split(const vg_plan *p, int k)
{
    int tiles = ceil_div(k, p->tile_k);
    int per = ceil_div(tiles, p->split_k);
    return per * p->tile_k;
}

/* The largest opt-in shared memory per block of the current device; every
 * launch and every heuristic decision (the dispatch path) reads it. */
int device_smem_limit(void)
{
    return vg_cuda_device_attr<cudaDevAttrMaxSharedMemoryPerBlockOptin>(48 * 1024);
}

vg_status cuda_fail(cudaError_t e, const char *what)
{
    return vg_fail(VG_ERR_CUDA, "%s: %s", what, cudaGetErrorString(e));
}

/* Kernel view of the weight of group 0 (per-group strides kept). */
vg_status make_kweight(const vg_weight *w, KWeight *kw)
{
    vg_weight_layout lay;
    vg_status st = vg_weight_layout_of(w->family, w->n, w->k, &lay);
    if (st != VG_OK)
        return st;
    memset(kw, 0, sizeof *kw);
    kw->q = static_cast<const uint8_t *>(w->q);
    kw->scale = static_cast<const uint8_t *>(w->scale);
    kw->zero = static_cast<const uint8_t *>(w->zero);
    kw->tensor_scale = w->family == VG_FAMILY_NVFP4 ? w->tensor_scale : 1.0f;
    kw->n = w->n;
    kw->k = w->k;
    kw->q_group_bytes = lay.q_bytes;
    kw->scale_group_bytes = lay.scale_bytes;
    kw->zero_group_bytes = lay.zero_bytes;
    kw->scale_cols = lay.scale_cols;
    /* one 128-long step's scale bytes (a byte per group): mxfp4 4, nvfp4 8 */
    const unsigned step_bytes = 128u / (w->family == VG_FAMILY_NVFP4 ? VG_NVFP4_GROUP : VG_MXFP4_GROUP);
    kw->scale_vec_ok = ((uintptr_t)w->scale & (step_bytes - 1)) == 0 && lay.scale_cols % step_bytes == 0;
    kw->q_row_bytes = lay.q_bytes / (size_t)w->n;
    return VG_OK;
}

int aligned16(const void *p) { return ((uintptr_t)p & 15u) == 0; }

/* One launch of plan cp over rows [row0, row0+m) (dense) or all groups. */
vg_status launch(const CudaPlan *cp, const vg_gemm_args *a, const KWeight &kw, const uint16_t *x,
                 void *y, int32_t m, const int32_t *offsets_dev, int32_t max_rows, int32_t groups)
{
    const vg_plan *p = &cp->plan;
    KParams kp;
    memset(&kp, 0, sizeof kp);
    kp.x = x;
    kp.y = y;
    kp.y_f16 = a->y_dtype == VG_DTYPE_F16;
    kp.w = kw;
    kp.m = m;
    kp.offsets = offsets_dev;
    kp.k_per_split = k_per_split(p, kw.k);
    kp.x_vec_ok = aligned16(x) && (kw.k % 8) == 0;
    kp.w_vec_ok = aligned16(kw.q) && (kw.q_row_bytes % 16) == 0 && (kw.q_group_bytes % 16) == 0;
    const int splits = ceil_div(ceil_div(kw.k, p->tile_k), kp.k_per_split / p->tile_k);
    if (splits > 1)
        kp.ws = static_cast<float *>(a->workspace);
    dim3 grid((unsigned)ceil_div(kw.n, p->tile_n), 1, (unsigned)splits);
    if (offsets_dev) {
        kp.mtiles = ceil_div(max_rows, p->tile_m);
        if (kp.mtiles < 1)
            kp.mtiles = 1;
        grid.y = (unsigned)(groups * kp.mtiles);
        /* From the host's copy of the offsets: a hint only (a graph replays
         * it with whatever routing the device offsets then hold). */
        kp.empty_tiles = kp.mtiles > 1 && a->offsets_host &&
                         vg_gemm_row_tiles(a, p->tile_m, NULL) < groups * kp.mtiles;
    } else {
        grid.y = (unsigned)ceil_div(m, p->tile_m);
    }
    if (grid.y > 65535u)
        return vg_fail(VG_ERR_LIMIT, "gemm %s: %u row tiles exceed the grid limit", p->id, grid.y);
    cudaStream_t s = static_cast<cudaStream_t>(a->stream);
    cudaError_t e = launch_of(cp, a->w.family)(kp, grid, s);
    if (e != cudaSuccess)
        return cuda_fail(e, p->id);
    if (splits > 1) {
        const size_t count = (size_t)m * (size_t)kw.n;
        int blocks = ceil_div((long)count, 256);
        if (blocks > 4096)
            blocks = 4096;
        /* With PDL where the decode kernels have it (KERNELS.md D40):
         * without it, a split decode plan's reduction started only once the
         * GEMM kernel had drained, and the next GEMM's kernel only once the
         * reduction had.  After a tiled kernel (no trigger) it starts when
         * that one ends, as a plain launch does. */
        cudaLaunchAttribute attr;
        const cudaLaunchConfig_t cfg = pdl_launch_config(dim3((unsigned)blocks), dim3(256), 0, s, &attr);
        e = cudaLaunchKernelEx(&cfg, vg_splitk_reduce_kernel, (const float *)kp.ws, y, kp.y_f16, count, splits);
        if (e != cudaSuccess)
            return cuda_fail(e, "split-K reduction");
    }
    return VG_OK;
}

} /* namespace */

extern "C" {

size_t vg_cuda_plan_count(void) { return g_plan_count; }

vg_status vg_cuda_decode_pdl(int *pdl)
{
    if (!pdl)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_cuda_decode_pdl: pdl is NULL");
    *pdl = vg_cuda_pdl_enabled() ? 1 : 0;
    return VG_OK;
}

const vg_plan *vg_cuda_plan_at(size_t i) { return i < g_plan_count ? &g_plans[i].plan : NULL; }

int vg_cuda_plan_smem(const vg_plan *p, vg_family f)
{
    const CudaPlan *cp = find_plan(p);
    return cp && (unsigned)f < VG_FAMILY_COUNT ? smem_of(cp, f) : -1;
}

/* The rule's dq_rows on the current device, whose major it is given: 0
 * where the kind is not offered, else by arch (KERNELS.md D34). */
static int dq_rows_here(int major)
{
    if (major <= 0 || !vg_dqblas_offered_here())
        return 0;
    return major >= 8 ? VG_CUDA_DQBLAS_ROWS_SM80 : VG_CUDA_DQBLAS_ROWS_SM70;
}

/* The first of `ids` (most preferred first) whose kernel for family f fits
 * in smem_limit bytes of shared memory per block; else the last. */
static const vg_plan *first_that_fits(vg_family f, int smem_limit,
                                      std::initializer_list<const char *> ids)
{
    const vg_plan *p = NULL;
    for (const char *id : ids) {
        p = by_id(id);
        if (p && vg_cuda_plan_smem(p, f) <= smem_limit)
            return p;
    }
    return p;
}

/* first_that_fits for the tiled plans: SM70/75 load a stage by plain
 * loads that finish before the thread goes on (gemm_kernel.cuh), so a third
 * or fourth stage hides nothing there and costs shared memory (a V100 holds
 * two blocks of the 4-bit mid tile with two stages, one with four): there
 * the list's two-stage plans come first. */
static const vg_plan *first_tiled_that_fits(vg_family f, int smem_limit, int sm_major,
                                            std::initializer_list<const char *> ids)
{
    if (sm_major < 8)
        for (const char *id : ids) {
            const vg_plan *p = by_id(id);
            if (p && p->stages == 2 && vg_cuda_plan_smem(p, f) <= smem_limit)
                return p;
        }
    return first_that_fits(f, smem_limit, ids);
}

/* The rule's row that reads the routing (KERNELS.md D43).  A grouped call
 * whose largest group has 17-64 rows runs, by the rows alone, one 64-row
 * token tile per group (65-128: two; fp8 on SM80+ to 32 rows: two 16-row
 * tiles), mostly empty when a router sends most tokens to a few experts.
 * The grouped 16-row plan runs one 16-row tile per 16 rows of each group
 * instead, each a pass over its group's W (from L2 after the first: a
 * group's tiles are adjacent grid rows).  So where the call's 16-row
 * tiles are few for its groups with rows: SM80+, at most 3/2 of them, fp8
 * (H100, wo_a, groups of 47 down to 6 rows: 20.3 against 25.8 us) and
 * the 4-bit families (22.1 against 22.7, 22.8 against 22.8: level), not
 * fp16 (36.8 against 34.7);
 * SM70/75, the 4-bit families, at most 5/4, where the V100 model puts the
 * grouped mid tile at 2x or more of the 16-row tiles (a model, D38's bar).
 * And on SM80+ at 65-128 rows, at most 9/4 (D44: groups of 94 down to 12
 * rows, 18 tiles for 8: 29.6-34.6 against 39.0-43.5 us for the 64-row
 * plans, fp8 and the 4-bit families); SM70/75 were not modelled there.
 * Needs N >= 512 (32 tiles of 16 rows per group, as the 16-row plan needs
 * at up to 16 rows).  NULL call: every group at `rows`, which is never
 * few. */
static int routing_may_matter(vg_family f, vg_path path, int32_t rows, int32_t n,
                              const vg_gemm_args *call)
{
    /* the last: the 16-row plan's grid has a row per group and tile, which
     * launch() refuses above 65535 */
    return call && (path == VG_PATH_GROUPED || path == VG_PATH_MOE) && rows > 16 && rows <= 128 &&
           ceil_div(n, 16) >= 32 && (unsigned)f < VG_FAMILY_COUNT &&
           (long)call->w.groups * ceil_div(rows, 16) <= 65535;
}

const vg_plan *vg_cuda_routing_plan_for(vg_family f, vg_path path, int32_t rows, int32_t n,
                                        int sm_major, const vg_gemm_args *call)
{
    if (!routing_may_matter(f, path, rows, n, call))
        return NULL;
    /* SM80+: not fp16 (its 16-row tiles lost there), nor fp8 to 32 rows,
     * which the rule gives the 16-row plan whatever the routing */
    if (sm_major >= 8 ? f == VG_FAMILY_FP16 || (f == VG_FAMILY_FP8 && rows <= 32)
                      : vg_family_desc_of(f)->elem_bits != 4)
        return NULL;
    /* 65-128 rows: SM80+ only (the V100 model was not asked there) */
    if (rows > 64 && sm_major < 8)
        return NULL;
    int32_t busy = 0;
    const int32_t tiles = vg_gemm_row_tiles(call, 16, &busy);
    const int few = sm_major < 8 ? 4 * tiles <= 5 * busy
                  : rows <= 64   ? 2 * tiles <= 3 * busy
                                 : 4 * tiles <= 9 * busy;
    if (!few)
        return NULL;
    /* looked up once: this runs on every grouped call's dispatch */
    static const vg_plan *const sixteen_rows = by_id("cuda.grouped.decode.m16n16w4.u2.sk1");
    return sixteen_rows;
}

const vg_plan *vg_cuda_routing_plan(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                                    const vg_gemm_args *call)
{
    (void)k;
    if (!routing_may_matter(f, path, rows, n, call)) /* before asking the device */
        return NULL;
    return vg_cuda_routing_plan_for(f, path, rows, n, vg_cuda_device_major(), call);
}

/* The one fixed rule.  Decode sizes (<= 16 rows): the streaming decode
 * kernel with the plans the back-to-back tuner picked on an H200 (kernels/
 * cuda/KERNELS.md D18, D19): with >= 192 tiles of 16 rows of N, one block per tile;
 * with 48-191 tiles (the loop path's N=1024 groups) 16 or 8 warps per block
 * that split K inside the block, 2.2x faster there than split-K across
 * blocks, whose reduce kernel doubles the launches; below that, split-K 4.
 * Dense and loop above 16 rows on SM80+: the 16-row decode tiles up to 32
 * rows, then the mid decode plans (64 tokens, four warps over N sharing
 * one X ring) up to 256: split 4 to 64 rows, two K groups to 128, one
 * block per 64 x 64 tile to 256 (the H100 crossover at N = 4096,
 * KERNELS.md D36); below N = 2048 the 16-row tiles with 8 warps up to 64
 * rows (wo_a's N = 1024, D36) and the split-4 mid decode plan to 128.
 * Grouped and moe at 17-64 rows in the largest group (SM80+: 17-128) whose
 * routing leaves few 16-row tiles: the grouped 16-row plan
 * (vg_cuda_routing_plan_for, D43, D44), as for fp8 at 17-32 rows on
 * SM80+.  Grouped and moe above 16 rows per group on SM80+: the grouped
 * mid decode plans to 256 rows (fp16 to 128; D37).  On SM70/75, the
 * quantized families, by the V100 model (D38): the mid decode plans at
 * 65-128 rows (N <= 2560: 65-256, D55), and the 32-token mid decode plans at
 * 17-32 rows, dense and per group (D52).  Elsewhere (the rest of SM70/75, fp16
 * without cuBLAS, above 256 rows) <= 64 rows: the mid tile; above: the
 * prefill tile.  Where the preferred
 * plan needs more shared memory than the device has (the 8- and 16-warp
 * decode plans take 77-146 KB, the 3- and 4-stage mid and prefill tiles
 * 80-148 KB; a V100 has 96 KB, a T4 64 KB), the next plan in its list
 * that fits; the last of each list fits in 64 KB for every family.
 * From dq_rows rows on (VG_CUDA_DQBLAS_ROWS_SM80 or _SM70), where the device offers it
 * (dq_rows, 0 where it does not), dequantize once + cuBLAS (KERNELS.md
 * D34); fp16 from 17 rows (no copy to make). */
const vg_plan *vg_cuda_heuristic_for(vg_family f, vg_path path, int32_t rows, int32_t n,
                                     int32_t k, int smem_limit, int dq_rows, int sm_major,
                                     const vg_gemm_args *call)
{
    (void)k;
    if ((unsigned)f >= VG_FAMILY_COUNT || (unsigned)path >= VG_PATH_COUNT)
        return NULL;
    const int big = rows > 8;
    const int tiles = ceil_div(n, 16);
    const int grouped = path == VG_PATH_GROUPED || path == VG_PATH_MOE;
    if (const vg_plan *p = vg_cuda_routing_plan_for(f, path, rows, n, sm_major, call))
        return p;
    /* Groups above 16 rows on SM80+: the grouped mid decode plans, one
     * launch for every group, ahead of the per-group cuBLAS calls (moe on
     * wo_a, H100: 23-27 us at 17-64 rows against 54-69 for the mid tile;
     * 81-84 at 256 against 128-144 for dqcublas; KERNELS.md D37).  Two K
     * groups to 64 rows, one block per tile above, to 256.  fp16, whose
     * cuBLAS plan copies nothing: two K groups to 128 rows (35-37 us at
     * 17-64 against 62-67, 63.9 against 71.2 at 128), cuBLAS above (78.0
     * against 120.8 at 256). */
    /* fp8 at 17-32 rows per group: two 16-row tiles per group ahead of one
     * 64-row tile (wo_a, H100, 32 even: 22.7 against 26.3 us; D43), 32
     * weight rows per block ahead of 16 (32 even: 21.45 against 22.53 us;
     * D45) */
    if (grouped && sm_major >= 8 && f == VG_FAMILY_FP8 && rows > 16 && rows <= 32 && tiles >= 32)
        return by_id("cuda.grouped.decode.m16n32w4.u2.sk1");
    if (grouped && sm_major >= 8 && rows > 16 && rows <= (f == VG_FAMILY_FP16 ? 128 : 256))
        return rows <= (f == VG_FAMILY_FP16 ? 128 : 64)
                   ? first_that_fits(f, smem_limit, {"cuda.grouped.decode.m64n64wn4wk2.u2.sk1",
                                                     "cuda.grouped.decode.m64n64wn4wk1.u2.sk1"})
                   : by_id("cuda.grouped.decode.m64n64wn4wk1.u2.sk1");
    /* fp16 has nothing to dequantize: the kind is cuBLAS on W itself, level
     * with cuBLAS BF16 and ahead of every dense native plan from 17 rows
     * (H100, D36: 14.7 us at M=32 against 22.0 for the best decode plan) */
    if (dq_rows > 0 && (rows >= dq_rows || (f == VG_FAMILY_FP16 && rows > 16)))
        return by_id(grouped ? "cuda.grouped.dqcublas" : "cuda.dense.dqcublas");
    /* SM70/75, the quantized families at 17-32 rows per group (past the
     * routing row): the grouped 32-token mid decode plan, one launch, as
     * the dense rule below (D52; V100 model of wo_a as a dense N = 8192
     * stand-in: awq 28.6 us against the grouped mid tile's 60.7, nvfp4
     * 28.4 / 58.1, mxfp4 33.1 / 61.7, fp8 41.4 / 64.9) */
    if (grouped && sm_major < 8 && f != VG_FAMILY_FP16 && rows > 16 && rows <= 32)
        return by_id("cuda.grouped.decode.m32n64wn4wk1.u2.sk1");
    if (grouped) {
        if (rows > 16)
            return first_tiled_that_fits(f, smem_limit, sm_major,
                                         {"cuda.grouped.mid.m64n64k128.s4.sk1", "cuda.grouped.mid.m64n64k128.s2.sk1",
                                          "cuda.grouped.mid.m64n64k64.s3.sk1"});
        /* n is per group; the grid has groups x N tiles, unknown here, so
         * split only when one group's N tiles are few */
        if (tiles < 32)
            return by_id(big ? "cuda.grouped.decode.m16n32w4.u2.sk2"
                             : "cuda.grouped.decode.m8n32w4.u2.sk2");
        /* fp16 moves twice fp8's bytes per step, and U=4 keeps two of its
         * steps in flight, not one; since the decode loop lost its tail
         * code (KERNELS.md D10) the 32-row tile is its fastest plan at 1-8
         * tokens (wo_a, H200, every plan forced, two runs: 18.87 / 19.23
         * / 19.65 us at 1 / 4 / 8 tokens against 19.77 / 20.50 / 21.42
         * for m8n16w4.u4; kernels/cuda/KERNELS.md D18).  The other
         * families are fastest at m8n16w4.u2. */
        if (f == VG_FAMILY_FP16 && !big)
            return by_id("cuda.grouped.decode.m8n32w4.u4.sk1");
        return by_id(big ? "cuda.grouped.decode.m16n16w4.u2.sk1"
                         : "cuda.grouped.decode.m8n16w4.u2.sk1");
    }
    if (rows <= 16) {
        if (tiles >= 192)
            return big ? first_that_fits(f, smem_limit, {"cuda.dense.decode.m16n16w8.u2.sk1",
                                                         "cuda.dense.decode.m16n16w4.u2.sk1"})
                       : first_that_fits(f, smem_limit, {"cuda.dense.decode.m8n16w8.u2.sk1",
                                                         "cuda.dense.decode.m8n16w4.u2.sk1"});
        if (tiles >= 48)
            return big ? first_that_fits(f, smem_limit, {"cuda.dense.decode.m16n16w8.u4.sk1",
                                                         "cuda.dense.decode.m16n16w8.u2.sk1",
                                                         "cuda.dense.decode.m16n32w4.u2.sk2"})
                       : first_that_fits(f, smem_limit, {"cuda.dense.decode.m8n16w16.u2.sk1",
                                                         "cuda.dense.decode.m8n32w4.u2.sk2"});
        return by_id(big ? "cuda.dense.decode.m16n32w4.u2.sk4" : "cuda.dense.decode.m8n32w4.u2.sk4");
    }
    if (sm_major >= 8 && rows <= 256 && n < 2048 && rows <= 64)
        /* N=1024 (wo_a's loop path, 17-64 rows per group): the 16-row
         * tiles with 8 warps splitting K, 6x faster than the mid tile */
        return rows <= 32 ? first_that_fits(f, smem_limit, {"cuda.dense.decode.m16n16w8.u4.sk1",
                                                            "cuda.dense.decode.m16n16w4.u2.sk1"})
                          : first_that_fits(f, smem_limit, {"cuda.dense.decode.m16n16w8.u2.sk1",
                                                            "cuda.dense.decode.m16n16w4.u2.sk1"});
    if (sm_major >= 8 && rows <= 256) {
        if (rows <= 32)
            return first_that_fits(f, smem_limit, {"cuda.dense.decode.m16n32w4.u2.sk1",
                                                   "cuda.dense.decode.m16n16w4.u2.sk1"});
        if (rows <= 64)
            return by_id("cuda.dense.decode.m64n64wn4wk1.u2.sk4");
        /* N = 1024 at 128 rows: split 4 (86-94 us) against the two K
         * groups' 188-193, which have too few blocks there */
        if (rows <= 128)
            return n < 2048 ? by_id("cuda.dense.decode.m64n64wn4wk1.u2.sk4")
                            : first_that_fits(f, smem_limit, {"cuda.dense.decode.m64n64wn4wk2.u2.sk1",
                                                              "cuda.dense.decode.m64n64wn4wk1.u2.sk2"});
        return by_id("cuda.dense.decode.m64n64wn4wk1.u2.sk1");
    }
    /* SM70/75, the quantized families at 65-128 rows (N >= 2048) or 65-256
     * (N < 2048; D55 below takes N <= 2560): the mid decode plans, by the V100 model (reports/
     * v100_crossover.py on the sm_70 SASS; a model, no V100 measurement;
     * KERNELS.md D38).  There the 128 x 128 prefill tile fills 32 of a
     * V100's 80 SMs (N = 4096, 128 rows; 8 at N = 1024), and the mid decode
     * plans are modelled 1.8-2.4x faster (fp8 4096^2: 56 against 118 us;
     * N = 1024: 16 against 118).  The model's kinds are off by up to ~1.5x
     * from each other where a GPU could check it (the H100), so the rows
     * where it says 1.05-1.5x (the prefill tile at 129-255) keep their
     * tiled plans until a V100 says otherwise.  A T4
     * (also major 7, 40 SMs, not modelled) takes the same rows: the prefill
     * tile's 32 blocks fill it, the mid decode plans' 128 do too. */
    /* SM70/75, the quantized families at 17-64 rows: the mid decode plans
     * of 32 tokens (17-32) and 64 (33-64), W decoded once for all the rows
     * and streamed as at decode sizes, where the mid tile computes 64 rows
     * for 17-32 (half of it padding) and the 16-row tiles decode W several
     * times.  Split K so that there are 128 blocks or more (1.6 per V100
     * SM; split 4 at most): one block of 4 warps per SM leaves each
     * scheduler one warp and no latency hidden, which the V100 model
     * cannot see; on the H100 (D52) the 32-token plan at N = K = 4096,
     * M = 32 took 19.0-20.3 us with 64 blocks, 17.0-19.4 with 128 (one per
     * SM there) and 11.5-12.8 with 256.  V100 model (D52, D53): at 17-32
     * rows awq 15.9 us against the mid tile's 30.4, nvfp4 15.8 / 29.0,
     * mxfp4 18.1 / 30.9, fp8 23.4 / 32.5 (N = K = 4096, M = 32); at 33-64
     * rows where N is small, the mid tile's split 2 makes 32 blocks at
     * N = 1024, this plan's split 4 64 (N = 1024, K = 4096, M = 64: 8.3-8.5
     * us against 15.3-17.0; K = 14336: 25.6-26.1 against 51.6-57.6), and
     * level to 1.1x ahead from N = 1536 up.  Below D38's ~2x bar for fp8
     * at 17-32 and for every family at 33-64 from N = 1536, taken all the
     * same: the mid tile makes 64 blocks of 4 warps at N = 4096 (32 at
     * N = 1024), as exposed to latency as these plans at split 1, which
     * the model misses for both. */
    if (sm_major < 8 && f != VG_FAMILY_FP16 && rows > 16 && rows <= 64) {
        const int tiles64 = ceil_div(n, 64);
        const int fewest_splits = tiles64 >= 128 ? 0 : tiles64 >= 64 ? 1 : 2; /* sk1, sk2, sk4 */
        static const char *const kMid[2][3] = {
            {"cuda.dense.decode.m32n64wn4wk1.u2.sk1", "cuda.dense.decode.m32n64wn4wk1.u2.sk2",
             "cuda.dense.decode.m32n64wn4wk1.u2.sk4"},
            {"cuda.dense.decode.m64n64wn4wk1.u2.sk1", "cuda.dense.decode.m64n64wn4wk1.u2.sk2",
             "cuda.dense.decode.m64n64wn4wk1.u2.sk4"}};
        return by_id(kMid[rows > 32][fewest_splits]);
    }
    /* To 256 rows where N <= 2560 (D38: N < 2048; D55): at 129-255 rows the
     * prefill tile makes 2 x N/128 blocks, at most 40 there on a V100's
     * 80 SMs, and the mid decode plan's 4 token tiles of N/64 fit two
     * waves: modelled 1.8-2.1x ahead (N = 2048, K = 4096, 160 rows: nvfp4
     * 55 against 98 us, fp8 56 against 116).  From N = 2624 its blocks
     * take a third wave and the prefill tile fills more SMs: 0.9-1.8x,
     * within the model's error, so those rows keep the tiled plan. */
    if (sm_major < 8 && f != VG_FAMILY_FP16 && rows > 64 && rows <= (n <= 2560 ? 256 : 128))
        return by_id(n < 2048 ? "cuda.dense.decode.m64n64wn4wk1.u2.sk2"
                              : "cuda.dense.decode.m64n64wn4wk1.u2.sk1");
    if (rows <= 64)
        return ceil_div(n, 64) >= 64
                   ? first_tiled_that_fits(f, smem_limit, sm_major,
                                           {"cuda.dense.mid.m64n64k128.s4.sk1", "cuda.dense.mid.m64n64k128.s2.sk1",
                                            "cuda.dense.prefill.m64n64k64.s3.sk1"})
                   : first_tiled_that_fits(f, smem_limit, sm_major,
                                           {"cuda.dense.mid.m64n64k128.s4.sk2", "cuda.dense.mid.m64n64k128.s2.sk2",
                                            "cuda.dense.prefill.m64n64k64.s3.sk1"});
    return first_tiled_that_fits(f, smem_limit, sm_major,
                                 {"cuda.dense.prefill.m128n128k64.s3.sk1", "cuda.dense.prefill.m128n128k64.s2.sk1",
                                  "cuda.dense.prefill.m64n64k64.s3.sk1"});
}

const vg_plan *vg_cuda_heuristic(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                               const vg_gemm_args *call)
{
    /* per call where tuning is off: the device's facts asked once each */
    const int major = vg_cuda_device_major();
    return vg_cuda_heuristic_for(f, path, rows, n, k, device_smem_limit(), dq_rows_here(major), major,
                                 call);
}

/* Walks every branch of the rule (limits that no plan fits, 0, or only
 * some, 48 KB, so each preference list is read to its end) and fails,
 * naming it, on an id the plan list does not have: the backend's open
 * calls it, so such a rule is a start-up error, never a silent fallback. */
vg_status vg_cuda_plan_table_check(void)
{
    static const int limits[] = {0, 48 << 10};
    static const int32_t rows[] = {1, 6, 8, 9, 16, 17, 32, 33, 64, 65, 128, 129, 255, 256, 257, 4096};
    static const int32_t ns[] = {16, 256, 512, 768, 1024, 3072, 4096, 14336};
    for (int major : {7, 8})
    for (int dq_rows : {0, VG_CUDA_DQBLAS_ROWS_SM80, VG_CUDA_DQBLAS_ROWS_SM70})
        for (int l = 0; l < 2; l++)
            for (int f = 0; f < VG_FAMILY_COUNT; f++)
                for (int path = 0; path < VG_PATH_COUNT; path++)
                    for (int32_t r : rows)
                        for (int32_t n : ns)
                            (void)vg_cuda_heuristic_for((vg_family)f, (vg_path)path, r, n, 4096,
                                                        limits[l], dq_rows, major, NULL);
    /* the routing row: groups of 17 and 1 rows, 3 tiles for 2 groups */
    static const int32_t offsets[] = {0, 17, 18};
    vg_gemm_args uneven;
    memset(&uneven, 0, sizeof uneven);
    uneven.path = VG_PATH_MOE;
    uneven.m = 18;
    uneven.w.groups = 2;
    uneven.offsets_host = offsets;
    if (!vg_cuda_routing_plan_for(VG_FAMILY_NVFP4, VG_PATH_MOE, 17, 4096, 9, &uneven) && !g_missing_id.load())
        return vg_fail(VG_ERR_INTERNAL, "cuda plan table: the rule's routing row names no plan");
    const char *missing = g_missing_id.load();
    if (missing)
        return vg_fail(VG_ERR_INTERNAL,
                       "the CUDA rule names plan '%s', which the plan list "
                       "(kernels/cuda/plan_list.h) does not have", missing);
    return VG_OK;
}


const vg_plan *vg_cuda_heuristic_native(vg_family f, vg_path path, int32_t rows, int32_t n,
                                        int32_t k, const vg_gemm_args *call)
{
    return vg_cuda_heuristic_for(f, path, rows, n, k, device_smem_limit(), 0, vg_cuda_device_major(),
                                 call);
}

vg_status vg_cuda_workspace_bytes(const vg_plan *p, const vg_gemm_args *a, size_t *bytes)
{
    if (!p || !a || !bytes)
        return vg_fail(VG_ERR_INVALID_ARG, "cuda workspace: NULL argument");
    const CudaPlan *cp = find_plan(p);
    if (!cp)
        return vg_fail(VG_ERR_NOT_FOUND, "cuda workspace: unknown plan '%s'", p->id ? p->id : "");
    *bytes = 0;
    if (a->w.k <= 0 || a->w.n <= 0 || a->m <= 0)
        return VG_OK;
    if (cp->plan.kind == VG_KIND_DEQUANT_BLAS) {
        if ((unsigned)a->w.family >= VG_FAMILY_COUNT)
            return vg_fail(VG_ERR_INVALID_ARG, "cuda workspace: invalid family %d", (int)a->w.family);
        *bytes = vg_dqblas_workspace_bytes(a->w.family, a->w.n, a->w.k, cp->plan.stages,
                                           a->path == VG_PATH_DENSE ? 1 : a->w.groups);
        return VG_OK;
    }
    const int per = k_per_split(&cp->plan, a->w.k);
    const int splits = ceil_div(ceil_div(a->w.k, cp->plan.tile_k), per / cp->plan.tile_k);
    if (splits <= 1)
        return VG_OK;
    /* loop: one group at a time; the others: all M rows. */
    int32_t rows = a->m;
    if (a->path == VG_PATH_LOOP && a->offsets_host)
        rows = vg_gemm_max_group_rows(a);
    *bytes = (size_t)splits * (size_t)rows * (size_t)a->w.n * sizeof(float);
    return VG_OK;
}

vg_status vg_cuda_gemm(const vg_plan *p, const vg_gemm_args *a)
{
    vg_status st = vg_gemm_check_args(a);
    if (st != VG_OK)
        return st;
    const CudaPlan *cp = find_plan(p);
    if (!cp)
        return vg_fail(VG_ERR_NOT_FOUND, "cuda gemm: unknown plan '%s'",
                       p && p->id ? p->id : "(null)");
    const int32_t rows = vg_gemm_max_group_rows(a);
    if (!vg_plan_applies(&cp->plan, a->w.family, a->path, rows))
        return vg_fail(VG_ERR_UNSUPPORTED, "cuda gemm: plan %s does not take %s %s with %d rows",
                       cp->plan.id, vg_family_name(a->w.family), vg_path_name(a->path), (int)rows);
    /* Before the workspace check: without cuBLAS no workspace makes the
     * plan run, and the caller should hear why. */
    const char *no_blas = "";
    if (cp->plan.kind == VG_KIND_DEQUANT_BLAS && vg_cuda_blas_load(NULL, &no_blas) != VG_OK)
        return vg_fail(VG_ERR_UNSUPPORTED, "cuda gemm: plan %s: %s", cp->plan.id, no_blas);
    if (smem_of(cp, a->w.family) > device_smem_limit())
        return vg_fail(VG_ERR_UNSUPPORTED,
                       "cuda gemm: plan %s needs %d bytes of shared memory for %s, the device has %d",
                       cp->plan.id, smem_of(cp, a->w.family), vg_family_name(a->w.family),
                       device_smem_limit());
    size_t need = 0;
    st = vg_cuda_workspace_bytes(&cp->plan, a, &need);
    if (st != VG_OK)
        return st;
    if (need > 0 && (!a->workspace || a->workspace_bytes < need))
        return vg_fail(VG_ERR_INVALID_ARG,
                       "cuda gemm: plan %s needs %zu bytes of workspace, got %zu", cp->plan.id,
                       need, a->workspace ? a->workspace_bytes : (size_t)0);
    if (a->m == 0)
        return VG_OK;
    KWeight kw;
    st = make_kweight(&a->w, &kw);
    if (st != VG_OK)
        return st;
    if (cp->plan.kind == VG_KIND_DEQUANT_BLAS)
        return vg_dqblas_gemm(a, kw, cp->plan.stages);

    switch (a->path) {
    case VG_PATH_DENSE:
        return launch(cp, a, kw, a->x, a->y, a->m, NULL, a->m, 1);
    case VG_PATH_GROUPED:
    case VG_PATH_MOE:
        return launch(cp, a, kw, a->x, a->y, a->m, a->offsets, rows, a->w.groups);
    case VG_PATH_LOOP: {
        const size_t ysize = a->y_dtype == VG_DTYPE_F16 ? 2 : 4;
        for (int32_t g = 0; g < a->w.groups; g++) {
            const int32_t r0 = a->offsets_host[g], r1 = a->offsets_host[g + 1];
            if (r1 == r0)
                continue;
            KWeight kg = kw;
            kg.q += (size_t)g * kw.q_group_bytes;
            if (kg.scale)
                kg.scale += (size_t)g * kw.scale_group_bytes;
            if (kg.zero)
                kg.zero += (size_t)g * kw.zero_group_bytes;
            st = launch(cp, a, kg, a->x + (size_t)r0 * kw.k,
                        static_cast<uint8_t *>(a->y) + (size_t)r0 * kw.n * ysize, r1 - r0, NULL,
                        r1 - r0, 1);
            if (st != VG_OK)
                return st;
        }
        return VG_OK;
    }
    default:
        return vg_fail(VG_ERR_INVALID_ARG, "cuda gemm: invalid path %d", (int)a->path);
    }
}

} /* extern "C" */
