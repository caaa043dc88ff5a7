/*
 * The one GEMM mainloop every CUDA plan runs: Y = X * dequant(W)^T.
 *
 * Template parameters are the plan's data (block tile BM x BN x BK, warps
 * WM x WN x WK, pipeline STAGES) and the family's dequantizer policy
 * (dequant.cuh).  Split-K is a run-time value (gridDim.z).
 *
 * Block: rows BM of X (one M tile of one group), columns BN of W, the K range
 * of its split.  Each stage holds the X tile (FP16, BM x BK) and the W tile
 * (the family's raw bytes, BN x BK elements) in shared memory; on SM80+ they
 * arrive by cp.async STAGES-1 tiles ahead of use, on SM75 by plain loads
 * (same code shape, no overlap inside a block).  SM70 loads tile t+1 after
 * tile t's MMAs and, for the quantized families, first dequantizes tile t's
 * W once into FP16 in tile t+1's free buffer (kDecodeOnce, decode_stage_w).
 *
 * Warps: WM x WN x WK.  Warp (wm, wn, wk) computes rows wm*WTM.., columns
 * wn*WTN.. of the block tile over every WK-th 64-long K chunk of each stage;
 * the WK partial sums are added through shared memory in fixed order at the
 * end (deterministic).
 *
 * MMA: m16n8k16, FP16 inputs, FP32 accumulation.  K is permuted inside each
 * 64-long chunk so that a thread's B fragments for four MMA steps are 16
 * consecutive elements of one weight row (one 16-byte shared load for fp8):
 * thread (lane/4 = row, lane%4 = q) takes real K q*16 + 4s + {0,1} as MMA K
 * 2q, 2q+1 and q*16 + 4s + {2,3} as 2q+8, 2q+9 in step s.  A (X) uses the same
 * permutation, so the dot products are unchanged (only their order).
 *   SM80+   mma.sync.aligned.m16n8k16 (under __CUDA_ARCH__ >= 800)
 *   SM75    two mma.sync.aligned.m16n8k8
 *   SM70    mma.sync.aligned.m8n8k4 in its own layout (VG_QUADPAIR): a
 *           warp's m8n8k4 is four 8x8x4 products, one per quadpair, so
 *           quadpair p takes rows 8(p&1).. of each 16-row X tile and columns
 *           8(p>>1).. of each pair of 8-column W tiles (a 16x16 output per
 *           instruction), and its thread i holds X row i and W row i, all 64
 *           K of a chunk in four runs of 16 (each X element is loaded by
 *           two quadpairs; W comes dequantized once per tile, kDecodeOnce).
 *           The sums are the m16n8k16 ones in another place (out_row /
 *           out_col).
 *   other   FP32 FMA emulation through warp shuffles (correct, slow)
 *
 * Output: split 1 writes Y (FP32 or FP16) directly; split S > 1 writes FP32
 * partials to workspace [S][M][N], summed in split order by
 * vg_splitk_reduce_kernel (deterministic, no atomics).
 */
#ifndef VG_CUDA_GEMM_KERNEL_CUH
#define VG_CUDA_GEMM_KERNEL_CUH

#include <cuda_fp16.h>
#include <stdint.h>

#include "dequant.cuh"
#include "kernel_common.cuh"

/* Shared-memory row strides (bytes) chosen so that the 16-byte fragment
 * reads of a quarter warp hit distinct banks. */
template <int BYTES>
struct WStride {
    static constexpr int value = BYTES + ((64 - (BYTES % 128) + 128) % 128);
};
template <int BYTES>
struct XStride {
    static constexpr int value = BYTES + ((16 - (BYTES % 32) + 32) % 32);
};

template <class Deq, int BM, int BN, int BK, int WM, int WN, int WK, int STAGES>
struct GemmCfg {
    static constexpr int kThreads = WM * WN * WK * 32;
    static constexpr int kWRowBytes = BK * Deq::kBits / 8;
    static constexpr int kWStride = WStride<kWRowBytes>::value;
    static constexpr int kXStride = XStride<BK * 2>::value;
    static constexpr int kStageBytes = BN * kWStride + BM * kXStride;
    static constexpr int kSmemMain = STAGES * kStageBytes;
    static constexpr int WTM = BM / WM, WTN = BN / WN;
    static constexpr int MI = WTM / 16, NI = WTN / 8;
    static constexpr int kRedBytes = (WK - 1) * BM * BN * 4;
    /* SM70: the stage's W tile dequantized once into FP16 rows laid out as
     * X's (see vg_gemm_kernel); it borrows a stage buffer, so no extra
     * shared memory (and no other size on the host side). */
    static constexpr bool kDecodeOnce = Deq::kBits < 16;
    static constexpr int kDecStride = XStride<BK * 2>::value;
    /* decode_stage_w's unit: 16 elements (one decode16), or with
     * Deq::kRunScales the elements of one row that share a pre-scale
     * (their scales read once), cut so that every thread has a unit */
    static constexpr int dec_unit()
    {
        if constexpr (Deq::kRunScales) {
            constexpr int share = BN * BK / kThreads, u = Deq::kPreRun < share ? Deq::kPreRun : share;
            return u < 16 ? 16 : u > 64 ? 64 : u;
        } else {
            return 16;
        }
    }
    static constexpr int kDecRun = dec_unit();
    static_assert(64 % kDecRun == 0, "a decode unit lies in one 64-long chunk");
    /* With Deq::kRunScales, each decoded row's post-scale per 64-long
     * chunk of the stage (FP32) in the row's padding past its BK elements:
     * SM70's flush reads them there instead of the scale array (mxfp4:
     * four exponents per column) */
    static constexpr bool kPostBeside = Deq::kRunScales && Deq::kPostScale;
    static_assert(!kPostBeside || kDecStride - BK * 2 >= 4 * (BK / 64), "post-scales fit the row padding");
    /* Every tile starts at a multiple of BK (a split's K is whole tiles), so
     * where BK divides the scale block a tile lies in one block: SM70 with
     * kPostBeside then flushes at tiles' ends only, and the check at each
     * chunk for a block change inside the tile is compiled out there. */
    static constexpr bool kFlushAtTileEndOnly = VG_QUADPAIR && kPostBeside && Deq::kScaleK % BK == 0;
    /* SM70 loads tile t+1 into another buffer while tile t is read, and the
     * decoded W tile borrows that buffer */
    static_assert(STAGES >= 2, "two stage buffers at least");
    static_assert(!kDecodeOnce || BN * kDecStride <= kStageBytes, "the decoded W tile fits a stage");
    static constexpr int kSmem = kSmemMain > kRedBytes ? kSmemMain : kRedBytes;
    /* What the SM70 code (VG_QUADPAIR) touches: two stage buffers whatever
     * STAGES (vg_gemm_kernel's kBuffers).  launch_one reserves this where
     * the kernel that runs was compiled from PTX below compute_75, so an s3 or
     * s4 plan runs there at its s2 plan's occupancy, and the only BK = 64
     * tile (m64n64k64.s3) at two buffers' */
    static constexpr int kSmemTwoBuffers = 2 * kStageBytes > kRedBytes ? 2 * kStageBytes : kRedBytes;
    static_assert(STAGES != 2 || kSmemTwoBuffers == kSmem, "a two-stage plan reserves the same either way");
    static_assert(WTM % 16 == 0 && WTN % 8 == 0, "warp tile must be a multiple of 16x8");
    static_assert(BK % (64 * WK) == 0, "each warp takes whole 64-long K chunks");
    static_assert(Deq::kScaleK % 64 == 0, "scale blocks hold whole chunks");
};

/* A stage chunk at the edge of W or X (the last bytes of a row, rows past
 * the matrix, or rows not 16-byte aligned): the first `bytes` (0..16) bytes
 * of src, zeros after them, stored as one 16-byte chunk.  Out of line on
 * SM70, whose plain stage loads sit in the mainloop: inlined, this cold
 * path held 20+ byte loads and a local-memory array in every K iteration
 * (spills the V100 model counts, reports/sass_model.py).  Later archs keep
 * their inline byte loops in load_stage, whose code was measured: moving
 * them here too changes their SASS (fewer instructions in the loop by
 * the model), which waits for a ci/ab-bench. */
#if VG_QUADPAIR
static __device__ __noinline__ void copy_edge16(uint8_t *dst, const void *src, int bytes)
{
    const uint8_t *s = static_cast<const uint8_t *>(src);
    uint32_t v[4] = {0, 0, 0, 0};
#pragma unroll
    for (int b = 0; b < 16; b++)
        if (b < bytes)
            v[b >> 2] |= (uint32_t)s[b] << (8 * (b & 3));
    *reinterpret_cast<uint4 *>(dst) = make_uint4(v[0], v[1], v[2], v[3]);
}
#endif

/* Loads one stage: W rows n0.. (BN), X rows of the block (BM), K k0..k0+BK. */
template <class Deq, class C, int BM, int BN, int BK>
static __device__ __forceinline__ void load_stage(uint8_t *ws_, uint8_t *xs_, const KParams &p,
                                                  const uint8_t *wq, int n0, int row0, int rows,
                                                  int k0, bool fill_pad)
{
    constexpr int WCH = C::kWRowBytes / 16;          /* 16-byte chunks per W row */
    constexpr int XCH = BK * 2 / 16;                 /* per X row */
    const int tid = threadIdx.x;
    const size_t wrow = p.w.q_row_bytes;
    const size_t kbyte0 = (size_t)k0 * Deq::kBits / 8;
    for (int c = tid; c < BN * WCH; c += C::kThreads) {
        const int r = c / WCH, ch = c % WCH;
        uint8_t *dst = ws_ + r * C::kWStride + ch * 16;
        const int n = n0 + r;
        const size_t off = kbyte0 + (size_t)ch * 16;
        if (n < p.w.n && off + 16 <= wrow && p.w_vec_ok) {
            cp_async16(dst, wq + (size_t)n * wrow + off);
        } else {
#if VG_QUADPAIR
            const int bytes = n < p.w.n && off < wrow ? (int)min((size_t)16, wrow - off) : 0;
            copy_edge16(dst, wq + (size_t)n * wrow + off, bytes);
#else
            uint32_t v[4] = {0, 0, 0, 0};
            if (n < p.w.n)
                for (int b = 0; b < 16 && off + b < wrow; b++)
                    v[b >> 2] |= (uint32_t)wq[(size_t)n * wrow + off + b] << (8 * (b & 3));
            *reinterpret_cast<uint4 *>(dst) = make_uint4(v[0], v[1], v[2], v[3]);
#endif
        }
    }
    const int K = p.w.k;
    /* X rows past the block's rows are zero; they stay zero in a stage
     * buffer once written, so only a buffer's first use writes them (SM70
     * kDecodeOnce: every load, the decoded W tile overwrites them). */
    const int xrows = fill_pad ? BM : min(rows, BM);
    for (int c = tid; c < xrows * XCH; c += C::kThreads) {
        const int r = c / XCH, ch = c % XCH;
        uint8_t *dst = xs_ + r * C::kXStride + ch * 16;
        const int kk = k0 + ch * 8;
        const uint16_t *src = p.x + (size_t)(row0 + r) * K + kk;
        if (r < rows && kk + 8 <= K && p.x_vec_ok) {
            cp_async16(dst, src);
        } else {
#if VG_QUADPAIR
            const int bytes = r < rows && kk < K ? 2 * min(8, K - kk) : 0;
            copy_edge16(dst, src, bytes);
#else
            uint32_t v[4] = {0, 0, 0, 0};
            if (r < rows)
                for (int e = 0; e < 8 && kk + e < K; e++)
                    v[e >> 1] |= (uint32_t)src[e] << (16 * (e & 1));
            *reinterpret_cast<uint4 *>(dst) = make_uint4(v[0], v[1], v[2], v[3]);
#endif
        }
    }
}

/* SM70: the block dequantizes the stage's W tile (raw bytes at wst) once
 * into FP16 rows at dec, kDecRun elements per unit, 16 per decode16 call
 * with the pre-scales the MMA loop of later archs uses (so the same
 * values).  With Deq::kRunScales a unit's scales are read once
 * (RunScales), and the unit at the start of each 64-long chunk stores its
 * post-scale in the row's padding for the flush (kPostBeside).  Chunks past
 * K are left alone, the MMA loop stops before them. */
template <class Deq, class C, int BN, int BK>
static __device__ __forceinline__ void decode_stage_w(uint8_t *dec, const uint8_t *wst,
                                                      const KParams &p, int g, int n0, int k0,
                                                      int kend)
{
    constexpr int RUNS = BK / C::kDecRun;
    for (int u = threadIdx.x; u < BN * RUNS; u += C::kThreads) {
        const int nr = u / RUNS, kr = (u % RUNS) * C::kDecRun;
        if (k0 + (kr & ~63) >= kend)
            continue;
        const int n = min(n0 + nr, p.w.n - 1), k = min(k0 + kr, p.w.k - 1);
        RunScales sc = {0, 1.0f};
        if constexpr (Deq::kRunScales)
            sc = Deq::run_scales(p.w, g, n, k);
        else if constexpr (Deq::kPreScale)
            sc.pre = Deq::prescale(p.w, g, n, k);
        uint8_t *drow = dec + nr * C::kDecStride;
#pragma unroll
        for (int r = 0; r < C::kDecRun; r += 16) {
            uint32_t b[8];
            Deq::decode16(wst + nr * C::kWStride + (kr + r) * Deq::kBits / 8, sc.pre, b);
            uint4 *d = reinterpret_cast<uint4 *>(drow + (kr + r) * 2);
            d[0] = make_uint4(b[0], b[1], b[2], b[3]);
            d[1] = make_uint4(b[4], b[5], b[6], b[7]);
        }
        if constexpr (C::kPostBeside)
            if (kr % 64 == 0)
                reinterpret_cast<float *>(drow + BK * 2)[kr / 64] = sc.post;
    }
}

/* The post-scale decode_stage_w stored for row nr of the decoded tile and
 * chunk ch of the stage. */
template <class C, int BK>
static __device__ __forceinline__ float decoded_post(const uint8_t *dec, int nr, int ch)
{
    return reinterpret_cast<const float *>(dec + nr * C::kDecStride + BK * 2)[ch];
}

template <class Deq, int BM, int BN, int BK, int WM, int WN, int WK, int STAGES>
__global__ void __launch_bounds__(WM *WN *WK * 32)
    vg_gemm_kernel(const KParams p)
{
    using C = GemmCfg<Deq, BM, BN, BK, WM, WN, WK, STAGES>;
    constexpr int MI = C::MI, NI = C::NI;
    extern __shared__ __align__(16) uint8_t smem[];

    /* Which rows: dense M tile, or group g's tile mt. */
    int g = 0, row0, rows;
    if (p.offsets) {
        g = blockIdx.y / p.mtiles;
        const int mt = blockIdx.y % p.mtiles;
        const int beg = __ldg(p.offsets + g), end = __ldg(p.offsets + g + 1);
        row0 = beg + mt * BM;
        rows = min(BM, end - row0);
    } else {
        row0 = blockIdx.y * BM;
        rows = min(BM, p.m - row0);
    }
    if (rows <= 0)
        return; /* an empty group (or tile): nothing to write */

    const int n0 = blockIdx.x * BN;
    const int kbeg = blockIdx.z * p.k_per_split;
    const int kend = min(p.w.k, kbeg + p.k_per_split);
    const int ktiles = kend > kbeg ? (kend - kbeg + BK - 1) / BK : 0;
    const uint8_t *wq = p.w.q + (size_t)g * p.w.q_group_bytes;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wk = warp % WK, wn = (warp / WK) % WN, wm = warp / (WK * WN);
    /* Block-tile row and column of sum e of acc[i][j]. */
#if VG_QUADPAIR
    static_assert(NI % 2 == 0, "SM70 takes W tiles in pairs (16 columns per quadpair product)");
    const int qp = (lane >> 2) & 3, qi = (lane & 3) | ((lane >> 4) << 2);
    /* acc[i][2jp], acc[i][2jp+1] are mma884's D (elements d = 4 (j&1) + e) */
    auto out_row = [&](int i, int j, int e) {
        const int d = 4 * (j & 1) + e;
        return wm * C::WTM + i * 16 + 8 * (qp & 1) + (lane & 1) + (d & 2) + 4 * (lane >> 4);
    };
    auto out_col = [&](int j, int e) {
        const int d = 4 * (j & 1) + e;
        return wn * C::WTN + (j >> 1) * 16 + 8 * (qp >> 1) + (d & 4) + (lane & 2) + (d & 1);
    };
#else
    const int lr = lane >> 2, lq = lane & 3;
    auto out_row = [&](int i, int, int e) { return wm * C::WTM + i * 16 + lr + 8 * (e >> 1); };
    auto out_col = [&](int j, int e) { return wn * C::WTN + j * 8 + 2 * lq + (e & 1); };
#endif

    float acc[MI][NI][4];
    float tmp[Deq::kPostScale ? MI : 1][Deq::kPostScale ? NI : 1][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.0f;
    for (int i = 0; i < (Deq::kPostScale ? MI : 1); i++)
        for (int j = 0; j < (Deq::kPostScale ? NI : 1); j++)
            for (int e = 0; e < 4; e++)
                tmp[i][j][e] = 0.0f;
    int cur_kb = -1;

    /* Adds tmp (the MMA sum over one scale block) times the block's scale
     * to acc.  SM70 with kPostBeside reads the scales decode_stage_w stored
     * beside the decoded tile dec for its chunk ch (a chunk of block kb in
     * the current tile: such a flush comes before the tile's buffers are
     * reused, below). */
    auto flush = [&](int kb, const uint8_t *dec, int ch) {
        if constexpr (Deq::kPostScale) {
        if (kb < 0)
            return;
#pragma unroll
        for (int j = 0; j < NI; j++) {
#if VG_QUADPAIR
            /* sums 0, 2 are one column, 1, 3 the next, here too */
            float s0, s1;
            if constexpr (C::kPostBeside) {
                s0 = decoded_post<C, BK>(dec, out_col(j, 0), ch);
                s1 = decoded_post<C, BK>(dec, out_col(j, 1), ch);
            } else {
                s0 = Deq::postscale(p.w, g, min(n0 + out_col(j, 0), p.w.n - 1), kb);
                s1 = Deq::postscale(p.w, g, min(n0 + out_col(j, 1), p.w.n - 1), kb);
            }
#else
            const int nc = n0 + wn * C::WTN + j * 8 + 2 * lq;
            const int nc0 = min(nc, p.w.n - 1), nc1 = min(nc + 1, p.w.n - 1);
            const float s0 = Deq::postscale(p.w, g, nc0, kb);
            const float s1 = Deq::postscale(p.w, g, nc1, kb);
#endif
            (void)dec;
            (void)ch;
#pragma unroll
            for (int i = 0; i < MI; i++) {
                acc[i][j][0] += s0 * tmp[i][j][0];
                acc[i][j][1] += s1 * tmp[i][j][1];
                acc[i][j][2] += s0 * tmp[i][j][2];
                acc[i][j][3] += s1 * tmp[i][j][3];
                tmp[i][j][0] = tmp[i][j][1] = tmp[i][j][2] = tmp[i][j][3] = 0.0f;
            }
        }
        } else {
            (void)kb;
            (void)dec;
            (void)ch;
        }
    };

    /* Prologue: STAGES-1 tiles in flight (SM70: one, below). */
#if VG_QUADPAIR
    /* SM70 has no cp.async: a stage's plain loads complete before the
     * thread goes on, so tiles ahead hide nothing inside a block.  It loads
     * tile t+1 after tile t's MMAs instead, which frees a stage buffer for
     * tile t's W dequantized once (kDecodeOnce): each W element is then
     * decoded by one thread instead of by two quadpairs of every warp that
     * reads it (the V100 model's issue count, reports/sass_model.py). */
    constexpr int kAhead = 1;
    /* and holds two tiles at a time: more stages only cost shared memory
     * (the rule gives SM70 two-stage plans), and taking t % STAGES as
     * later archs do spilled mxfp4's four-stage mid tile (V100 model) */
    constexpr int kBuffers = 2;
#else
    constexpr int kAhead = STAGES - 1;
    constexpr int kBuffers = STAGES;
#endif
#pragma unroll
    for (int s = 0; s < kAhead; s++) {
        if (s < ktiles) {
            uint8_t *st = smem + s * C::kStageBytes;
            load_stage<Deq, C, BM, BN, BK>(st, st + BN * C::kWStride, p, wq, n0, row0, rows,
                                           kbeg + s * BK, true);
        }
        cp_async_commit();
    }

    for (int t = 0; t < ktiles; t++) {
        cp_async_wait<STAGES - 2>();
        __syncthreads();
#if !VG_QUADPAIR
        {
            const int tn = t + STAGES - 1;
            if (tn < ktiles) {
                uint8_t *st = smem + (tn % STAGES) * C::kStageBytes;
                load_stage<Deq, C, BM, BN, BK>(st, st + BN * C::kWStride, p, wq, n0, row0, rows,
                                               kbeg + tn * BK, tn < STAGES);
            }
            cp_async_commit();
        }
#endif
        const uint8_t *wst = smem + (t % kBuffers) * C::kStageBytes;
        const uint8_t *xst = wst + BN * C::kWStride;
        const int k0 = kbeg + t * BK;
#if VG_QUADPAIR
        /* tile t+1's buffer, free until the load after this tile's MMAs */
        uint8_t *wdec = smem + ((t + 1) % kBuffers) * C::kStageBytes;
        if constexpr (C::kDecodeOnce) {
            decode_stage_w<Deq, C, BN, BK>(wdec, wst, p, g, n0, k0, kend);
            __syncthreads();
        }
#else
        const uint8_t *wdec = nullptr;
#endif
        int last_ch = 0; /* the chunk of this tile this warp took last (kPostBeside) */
#pragma unroll
        for (int ch = wk; ch < BK / 64; ch += WK) {
            const int kc = ch * 64; /* chunk start inside the tile */
            if (k0 + kc >= kend)
                break; /* past K (or the split): zero-filled, and its scales don't exist */
            if constexpr (C::kFlushAtTileEndOnly) {
                cur_kb = k0 / Deq::kScaleK;
                last_ch = ch;
            } else if constexpr (Deq::kPostScale) {
                const int kb = (k0 + kc) / Deq::kScaleK;
                if (kb != cur_kb) {
                    flush(cur_kb, wdec, last_ch);
                    cur_kb = kb;
                }
                last_ch = ch;
            }
#if VG_QUADPAIR
            /* Four runs of 16 K: X row qi of each 16-row tile's half qp&1,
             * W row qi of each 16-column pair's half qp>>1. */
#pragma unroll
            for (int c = 0; c < 4; c++) {
                const int kr = kc + 16 * c;
                uint32_t xa[MI][8];
#pragma unroll
                for (int i = 0; i < MI; i++) {
                    const uint8_t *src =
                        xst + (wm * C::WTM + i * 16 + 8 * (qp & 1) + qi) * C::kXStride + kr * 2;
                    const uint4 u0 = *reinterpret_cast<const uint4 *>(src);
                    const uint4 u1 = *reinterpret_cast<const uint4 *>(src + 16);
                    xa[i][0] = u0.x; xa[i][1] = u0.y; xa[i][2] = u0.z; xa[i][3] = u0.w;
                    xa[i][4] = u1.x; xa[i][5] = u1.y; xa[i][6] = u1.z; xa[i][7] = u1.w;
                }
#pragma unroll
                for (int jp = 0; jp < NI / 2; jp++) {
                    const int nr = wn * C::WTN + jp * 16 + 8 * (qp >> 1) + qi; /* row of the W tile */
                    uint32_t b[8];
                    if constexpr (C::kDecodeOnce) {
                        const uint8_t *src = wdec + nr * C::kDecStride + kr * 2;
                        const uint4 u0 = *reinterpret_cast<const uint4 *>(src);
                        const uint4 u1 = *reinterpret_cast<const uint4 *>(src + 16);
                        b[0] = u0.x; b[1] = u0.y; b[2] = u0.z; b[3] = u0.w;
                        b[4] = u1.x; b[5] = u1.y; b[6] = u1.z; b[7] = u1.w;
                    } else {
                        uint32_t pre = 0;
                        if constexpr (Deq::kPreScale)
                            pre = Deq::prescale(p.w, g, min(n0 + nr, p.w.n - 1), min(k0 + kr, p.w.k - 1));
                        Deq::decode16(wst + nr * C::kWStride + kr * Deq::kBits / 8, pre, b);
                    }
#pragma unroll
                    for (int s = 0; s < 4; s++)
#pragma unroll
                        for (int i = 0; i < MI; i++) {
                            /* D's two halves: the pair's two 8-column tiles */
                            if constexpr (Deq::kPostScale)
                                mma884(tmp[i][2 * jp], tmp[i][2 * jp + 1], xa[i][2 * s], xa[i][2 * s + 1],
                                       b[2 * s], b[2 * s + 1]);
                            else
                                mma884(acc[i][2 * jp], acc[i][2 * jp + 1], xa[i][2 * s], xa[i][2 * s + 1],
                                       b[2 * s], b[2 * s + 1]);
                        }
                }
            }
#else
            /* X: 16 consecutive K (this thread's q slice) of rows lr, lr+8. */
            uint32_t xa[MI][2][8];
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const uint8_t *src = xst + (wm * C::WTM + i * 16 + lr + 8 * h) * C::kXStride +
                                         (kc + lq * 16) * 2;
                    const uint4 u0 = *reinterpret_cast<const uint4 *>(src);
                    const uint4 u1 = *reinterpret_cast<const uint4 *>(src + 16);
                    xa[i][h][0] = u0.x; xa[i][h][1] = u0.y; xa[i][h][2] = u0.z; xa[i][h][3] = u0.w;
                    xa[i][h][4] = u1.x; xa[i][h][5] = u1.y; xa[i][h][6] = u1.z; xa[i][h][7] = u1.w;
                }
#pragma unroll
            for (int j = 0; j < NI; j++) {
                const int nr = wn * C::WTN + j * 8 + lr; /* row of the W tile */
                uint32_t pre = 0;
                if constexpr (Deq::kPreScale)
                    pre = Deq::prescale(p.w, g, min(n0 + nr, p.w.n - 1),
                                        min(k0 + kc + lq * 16, p.w.k - 1));
                uint32_t b[8];
                Deq::decode16(wst + nr * C::kWStride + (kc + lq * 16) * Deq::kBits / 8, pre, b);
#pragma unroll
                for (int s = 0; s < 4; s++)
#pragma unroll
                    for (int i = 0; i < MI; i++) {
                        const uint32_t a[4] = {xa[i][0][2 * s], xa[i][1][2 * s], xa[i][0][2 * s + 1],
                                               xa[i][1][2 * s + 1]};
                        if constexpr (Deq::kPostScale)
                            mma16816(tmp[Deq::kPostScale ? i : 0][Deq::kPostScale ? j : 0], a,
                                     b[2 * s], b[2 * s + 1]);
                        else
                            mma16816(acc[i][j], a, b[2 * s], b[2 * s + 1]);
                    }
            }
#endif
        }
#if VG_QUADPAIR
        /* SM70 flushes a block whose last chunk (for this warp) is in this
         * tile now, while its scales are beside the decoded tile: the next
         * tile's load overwrites them.  The same sums in the same order as
         * a flush at the next block's first chunk. */
        if constexpr (C::kPostBeside) {
            const int k_next = k0 + BK + wk * 64;
            if (k_next >= kend || k_next / Deq::kScaleK != cur_kb) {
                flush(cur_kb, wdec, last_ch);
                cur_kb = -1;
            }
        }
        if (t + 1 < ktiles) {
            if constexpr (C::kDecodeOnce)
                __syncthreads(); /* every warp is done with wdec, tile t+1's buffer */
            uint8_t *st = smem + ((t + 1) % kBuffers) * C::kStageBytes;
            /* the decoded tile overwrote this buffer's zero X rows too */
            load_stage<Deq, C, BM, BN, BK>(st, st + BN * C::kWStride, p, wq, n0, row0, rows,
                                           kbeg + (t + 1) * BK, C::kDecodeOnce || t + 1 < kBuffers);
        }
#endif
    }
    cp_async_wait<0>();
    if constexpr (!VG_QUADPAIR || !C::kPostBeside)
        flush(cur_kb, nullptr, 0);

    /* Add the WK partial sums in fixed order (wk = 1, 2, ...) into wk 0. */
    if constexpr (WK > 1) {
        __syncthreads(); /* every warp is done with the pipeline's shared memory */
        float *red = reinterpret_cast<float *>(smem);
        auto slot = [&](int w, int i, int j, int e) -> float & {
            return red[((w - 1) * BM + out_row(i, j, e)) * BN + out_col(j, e)];
        };
        if (wk > 0)
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        slot(wk, i, j, e) = acc[i][j][e];
        __syncthreads();
        if (wk != 0)
            return;
        for (int w = 1; w < WK; w++)
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NI; j++)
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        acc[i][j][e] += slot(w, i, j, e);
    }

    const float es = Deq::epilogue(p.w);
    const int N = p.w.n;
    const bool split = gridDim.z > 1;
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = out_row(i, j, e), col = n0 + out_col(j, e);
                if (r >= rows || col >= N)
                    continue;
                const size_t idx = (size_t)(row0 + r) * N + col;
                const float v = acc[i][j][e] * es;
                if (split)
                    p.ws[(size_t)blockIdx.z * p.m * N + idx] = v;
                else if (p.y_f16)
                    reinterpret_cast<__half *>(p.y)[idx] = __float2half_rn(v);
                else
                    reinterpret_cast<float *>(p.y)[idx] = v;
            }
}

/* Y[i] = sum over s = 0..S-1 of ws[s][i], in that order. */
__global__ void vg_splitk_reduce_kernel(const float *ws, void *y, int y_f16, size_t count,
                                        int splits);

#endif
