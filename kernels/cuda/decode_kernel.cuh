/*
 * The decode mainloop (8 or 16 rows of X per block; 64 for the mid decode
 * plans): weight-bandwidth bound, so the work per byte of W is what decides
 * its speed.
 *
 * The weight is the MMA's A operand: one m16n8k16 multiplies 16 weight rows
 * by 8 tokens, so the dequantized weight fills the whole fragment (no zero
 * padding at M <= 8) and one decode serves all MT token tiles of the block.
 * X is the B operand.
 *
 * Mid decode plans (WN > 1, KERNELS.md D36): WN warps side by side over N
 * in each of WK K groups; the WN warps of a group take the same steps and
 * share one X ring, which all their threads fill, with one named barrier
 * per step (so X runs U - 1 steps ahead there, not U).  The rest of this
 * comment is the WN = 1 case, which the decode plans are.
 *
 * Block: WK warps, all on the same NI*16 weight rows; warp wk takes every
 * WK-th 128-long K step of the split's range (a step is one scale block for
 * every family), or every WK-th run of PR = 2 steps for the 4-bit families.
 * Each warp runs its own pipeline with no block barrier: it
 * loads step i's W straight from global memory into registers UW steps
 * ahead of use, and copies the step's X (rows x 128) by cp.async into slot
 * i%U of its own shared-memory ring, U steps ahead (UW = 2U for the 4-bit
 * families, whose steps are half as many bytes; U otherwise).  X passes
 * through L1 (.ca), so blocks of one SM working on one group read it from
 * L2 once.  Below SM80 there is no cp.async: a copy is a load and a store
 * that waits for it, so X is in its slot before the warp goes on, and a
 * thread issues DecodeCfg::kXBatch loads before their stores (one wait for
 * memory per batch, not per 16 bytes; KERNELS.md D41).
 *
 * In a step, thread (g = lane/4, q = lane%4) holds rows g and g+8 of each
 * 16-row tile and, in each half h of the step, their 16 elements
 * 64h + 16q .. +16 (16 bytes of fp8, 8 of a 4-bit family, 32 of fp16): MMA s
 * of half h takes elements 16q + 4s + {0,1} as MMA K 2q, 2q+1 and
 * 16q + 4s + {2,3} as 2q+8, 2q+9, and the X fragment read from shared
 * memory uses the same order, so the dot products are unchanged (only their
 * order).  The 4-bit E2M1 families decode other pairs of elements into one
 * register (Deq::kPairs, dequant.cuh), and the X fragment is permuted to
 * match.
 * The C fragment is (weight row, token): c0, c1 are row g, tokens
 * 2q, 2q+1; c2, c3 row g+8.  Token columns past the block's rows read a
 * valid row of X and are never stored (an MMA output column depends on its
 * own B column only).
 *
 * SM70 (Volta) runs the same loop in its own MMA layout, with no operand
 * shuffle: its m8n8k4 (mma884, kernel_common.cuh) is four independent 8x8x4
 * products, one per quadpair, and thread i of a quadpair holds one row of
 * A and one column of B, four consecutive K each.  So on SM70 quadpair p
 * takes row half p&1 of each 16-row tile and the pair of K chunks 2(p>>1),
 * 2(p>>1)+1 of each half step; its thread i decodes row 8(p&1) + i of
 * those two chunks (32 elements, the same bytes per lane as above, only
 * dealt out differently: the registers [2] that hold rows g and g+8 above
 * hold the two chunks here) and reads X token i of them.  An MMA takes a
 * thread's pair registers 2s and 2s+1 of one chunk (four elements, in the
 * Deq's pair order) with the same registers of X, into the quadpair's 8x8
 * sums of its row half.  The two quadpairs of a row half hold partial sums
 * over different chunks, added by one shuffle after the loop, once per
 * kernel; a thread holds 8 sums per tile and token tile instead of 4.
 *
 * The WK partial sums are added in fixed order through shared memory, and
 * split-K partials go to the workspace for vg_splitk_reduce_kernel, so the
 * result does not depend on timing.
 */
#ifndef VG_CUDA_DECODE_KERNEL_CUH
#define VG_CUDA_DECODE_KERNEL_CUH

#include <type_traits>

#include "decode_cfg.cuh"

template <class Deq, int NI, int WK, int MT, int UU, int WN = 1>
__global__ void __launch_bounds__(WK * WN * 32, (DecodeCfg<Deq, NI, WK, MT, UU, WN>::kMinBlocks))
    vg_decode_kernel(const KParams p)
{
    using C = DecodeCfg<Deq, NI, WK, MT, UU, WN>;
    constexpr int U = C::U, UW = C::UW, KW = C::kWords, BM = C::BM, XS = C::kXStride;
    extern __shared__ __align__(16) uint8_t smem[];

    /* Under programmatic dependent launch (SM90) the next layer's kernel may
     * start as soon as every block of this one runs: its prologue then
     * streams its first weights while this one drains. */
    grid_dep_launch();
    const int g = p.offsets ? (int)blockIdx.y / p.mtiles : 0;
    const int N = p.w.n, K = p.w.k;
    /* Warp (wn, wk) takes the wn-th 16*NI weight rows of the block's and
     * every WK-th K step; the WN warps of one wk (its K group) share one X
     * ring. */
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wn = WN > 1 ? warp % WN : 0, wk = WN > 1 ? warp / WN : warp;
    /* The thread's weight row in a tile (its first, on SM80+: g and g+8),
     * token in a token tile and 16-element K chunk in a half step. */
#if VG_QUADPAIR
    const int qi = (lane & 3) | ((lane >> 4) << 2), rh = (lane >> 2) & 1, kp = (lane >> 3) & 1;
    const int lrow = 8 * rh + qi, ltok = qi, lq = 2 * kp;
    constexpr int kAccE = 8;  /* mma884's D */
#else
    const int lg = lane >> 2, lq = lane & 3;
    const int lrow = lg, ltok = lg;
    constexpr int kAccE = 4;  /* the m16n8k16 C fragment */
#endif
    const int n0 = blockIdx.x * C::BN + wn * C::kWarpN;
    const int kbeg = blockIdx.z * p.k_per_split;
    const int kend = min(K, kbeg + p.k_per_split);
    /* Warp wk takes runs of PR steps: run c = (i / PR) * WK + wk holds its
     * steps c * PR .. c * PR + PR - 1; the last run may be short.  K group
     * w's steps over [kb, ke): niter, of which 0 .. nfast-1 take the vector
     * loads (load_w); only a group's last step can be short (its k0 is the
     * largest), and with unaligned W or X none is fast. */
    constexpr int PR = C::PR;
    auto group_steps = [&](int w, int kb, int ke, int &niter, int &nfast) {
        const int nsteps = ke > kb ? (ke - kb + C::kStepK - 1) / C::kStepK : 0;
        const int nruns = (nsteps + PR - 1) / PR;
        const int wruns = nruns > w ? (nruns - w + WK - 1) / WK : 0;
        niter = wruns == 0 ? 0
              : (wruns - 1) * WK + w == nruns - 1 ? (wruns - 1) * PR + (nsteps - (nruns - 1) * PR)
                                                  : wruns * PR;
        const bool tail_step = (ke - kb) % C::kStepK != 0 && niter > 0 &&
                               (wruns - 1) * WK + w == nruns - 1;
        nfast = p.w_vec_ok && p.x_vec_ok ? niter - (tail_step ? 1 : 0) : 0;
    };
    int niter, nfast;
    group_steps(wk, kbeg, kend, niter, nfast);
    uint16_t *xring = reinterpret_cast<uint16_t *>(smem) + wk * U * C::kXSlot;

    /* Rows past N read row N-1 (valid memory); their results are dropped. */
    const size_t wrow = p.w.q_row_bytes;
    const uint8_t *wq = p.w.q + (size_t)g * p.w.q_group_bytes;
    int nr[NI][2];
    /* Tile j's row g at this thread's 16 elements, and the bytes from it to
     * row g + 8: one pointer and one offset per tile, which the empty asm
     * makes opaque so ptxas holds them; left to itself it recomputed all
     * four row addresses from the row index every step (about 40 of a
     * 4-bit step's 300 instructions, kernels/cuda/KERNELS.md D8). */
    const uint8_t *wrow_g[NI];
    size_t wrow_8[NI];
#pragma unroll
    for (int j = 0; j < NI; j++) {
#pragma unroll
        for (int r = 0; r < 2; r++)
            nr[j][r] = min(n0 + 16 * j + lrow + (VG_QUADPAIR ? 0 : 8 * r), N - 1);
        wrow_g[j] = wq + (size_t)nr[j][0] * wrow + (size_t)lq * 16 * Deq::kBits / 8;
#if VG_QUADPAIR
        wrow_8[j] = 16 * Deq::kBits / 8; /* to the second chunk, same row */
#else
        wrow_8[j] = (size_t)(nr[j][1] - nr[j][0]) * wrow;
#endif
        asm volatile("" : "+l"(wrow_g[j]), "+l"(wrow_8[j]));
    }
#if VG_QUADPAIR
    /* The rows of the sums a thread holds (mma884's D layout):
     * (lane&1) + 4(lane>>4) of its row half, and the row two past it. */
    int out_rows[NI][2];
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
        for (int x = 0; x < 2; x++)
            out_rows[j][x] = min(n0 + 16 * j + 8 * rh + 2 * x + (lane & 1) + 4 * (lane >> 4), N - 1);
#endif
    /* A step's scale bits of tile j from Deq::load_step.  On SM70 "row" c
     * of the bits is chunk lq + c of the thread's one row (load_step of
     * that row for each chunk), and out holds the bits of the rows whose
     * sums it holds, for their post-scales (where the family has one per
     * row; a block scale is the row's own). */
    auto load_raw = [&](int k0, int j, StepRaw &s) {
#if VG_QUADPAIR
        StepRaw second;
        Deq::load_step(p.w, g, nr[j][0], nr[j][0], k0, lq, s);
        Deq::load_step(p.w, g, nr[j][0], nr[j][0], k0, lq + 1, second);
#pragma unroll
        for (int h = 0; h < 2; h++)
            s.w[1][h] = second.w[0][h];
        if constexpr (Deq::kPostScale && !Deq::kPostPerBlock) {
            StepRaw out;
            Deq::load_step(p.w, g, out_rows[j][0], out_rows[j][1], k0, lq, out);
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    s.out[i][h] = out.w[i][h];
        }
#else
        Deq::load_step(p.w, g, nr[j][0], nr[j][1], k0, lq, s);
#endif
    };
    auto ready_scales = [&](const StepRaw &r, StepScales &s) {
#if VG_QUADPAIR
        Deq::ready_step(r, lq, lq + 1, s);
        if constexpr (Deq::kPostScale && Deq::kPostPerBlock) {
            s.post_out[0] = s.post_out[1] = s.post[0];
        } else if constexpr (Deq::kPostScale) {
            StepRaw o;
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    o.w[i][h] = r.out[i][h];
            StepScales out;
            Deq::ready_step(o, lq, lq, out);
            s.post_out[0] = out.post[0], s.post_out[1] = out.post[1];
        }
#else
        Deq::ready_step(r, lq, lq, s);
#endif
    };
    /* What the pipeline holds of a step's scales, loaded with its W.  The
     * mid decode plans (MT > 2: 8 warps per SM) hold the bits as loaded and
     * ready them in compute: readied at load time, the conversion's first
     * instruction made the warp wait for the load right there, once per
     * step (nvfp4 4096x14336 M=64 42.17 -> 39.67 us).  The decode plans
     * ready them at load time, as before: late, they measured slower at
     * M <= 16 (nvfp4 4096^2 M=1 6.04 -> 6.70 us; KERNELS.md D39). */
    constexpr bool kReadyLate = MT > 2;
    using HeldScales = typename std::conditional<kReadyLate, StepRaw, StepScales>::type;
    auto load_scales = [&](int k0, int j, HeldScales &s) {
        if constexpr (kReadyLate) {
            load_raw(k0, j, s);
        } else {
            StepRaw r;
            load_raw(k0, j, r);
            ready_scales(r, s);
        }
    };
    /* Bytes of the first k elements of a row, in 32 bits (K < 2^31). */
    auto row_bytes = [](int k) -> unsigned {
        return Deq::kBits >= 8 ? (unsigned)k * (Deq::kBits / 8) : (unsigned)k / (8 / Deq::kBits);
    };
    int row0 = 0, rows = 0;     /* set after grid_dep_wait(): offsets may be an earlier kernel's */
    const uint16_t *xg = p.x, *xlane = p.x;
    /* X copies: thread xt of the XT that share a ring copies 16 bytes of
     * rows xt / 16 + XR t. */
    constexpr int XT = WN * 32, XR = XT / 16;
    const int xt = WN > 1 ? wn * 32 + lane : lane;
    uint16_t *xdst = xring + (xt >> 4) * XS + (xt & 15) * 8;
    int xrows_lane = 0; /* rows this thread copies: xt / 16 + XR t < rows */
    /* Every thread that reads a ring slot is done with it, or its copy is
     * visible to them all: the warp's own ring, or its K group's (named
     * barrier 1 + wk of the group's WN warps: the groups' step counts may
     * differ, so the block's barrier 0 would not do). */
    auto sync_ring = [&] {
        if constexpr (WN > 1)
            asm volatile("bar.sync %0, %1;\n" ::"r"(1 + wk), "r"(WN * 32) : "memory");
        else
            __syncwarp();
    };

    auto step_k0 = [&](int i) { return kbeg + (((i / PR) * WK + wk) * PR + i % PR) * C::kStepK; };
    /* Step i0 + v's k0 is step i0's plus this, when i0 is a multiple of PR:
     * a constant in the unrolled loop, which then adds instead of
     * recomputing step_k0 for each load. */
    auto step_k0_offset = [](int v) { return ((v / PR) * WK * PR + v % PR) * C::kStepK; };

    /* A fast step's X (rows x 128 from k0, 16-byte aligned rows) into ring
     * slot u, by cp.async (below SM80 by loads and stores, kXBatch at a
     * time).  Thread xt copies 16 bytes at column 8 (xt % 16)
     * of rows xt / 16 + XR t: from xlane, to xdst, plus constants per t. */
    constexpr int XC = (BM + XR - 1) / XR; /* copies per thread and step */
    auto load_x = [&](int k0, int u) {
        const uint16_t *src = xlane + k0;
#if !VG_CP_ASYNC
        if constexpr (C::kXBatch > 1) {
            /* Loads first, then stores (kernel_common.cuh), kXBatch at a
             * time: a 16-row step waited for memory 8 times per thread in a
             * row, a mid plan's 64 rows as many. */
            constexpr int XB = XC < C::kXBatch ? XC : C::kXBatch;
            const uint32_t dst = smem_addr(xdst + u * C::kXSlot);
#pragma unroll
            for (int t0 = 0; t0 < XC; t0 += XB) {
                uint4 v[XB];
#pragma unroll
                for (int t = t0; t < t0 + XB && t < XC; t++)
                    if (XR * t < xrows_lane)
                        v[t - t0] = ld_global16_nc(src + (size_t)XR * t * K);
#pragma unroll
                for (int t = t0; t < t0 + XB && t < XC; t++)
                    if (XR * t < xrows_lane)
                        st_shared16(dst + 2 * XR * t * XS, v[t - t0]);
            }
        } else
#endif
        {
#pragma unroll
            for (int t = 0; t < XC; t++)
                if (XR * t < xrows_lane)
                    cp_async16_l1(xdst + u * C::kXSlot + XR * t * XS, src + (size_t)XR * t * K);
        }
    };
    /* Any step's X by plain loads and stores, zero past kend (the K tail,
     * or unaligned X). */
    auto load_x_tail = [&](int k0, uint16_t *slot) {
        for (int c = xt; c < rows * C::kStepK; c += XT) {
            const int r = c / C::kStepK, k = k0 + c % C::kStepK;
            slot[r * XS + c % C::kStepK] = k < kend ? xg[(size_t)r * K + k] : (uint16_t)0;
        }
    };

    /* Step i's W and its scales into registers (weights only: no earlier
     * kernel writes them, so the prologue loads them before grid_dep_wait).
     * The pipelined loop below runs only steps that take the vector path
     * (i < nfast), so its unrolled copies carry no tail code: the byte-wise
     * path is in load_w_tail, called from the one plain loop after it. */
    auto load_w = [&](int k0, uint32_t (&buf)[NI][2][2][KW], HeldScales (&sc)[NI]) {
#pragma unroll
        for (int j = 0; j < NI; j++)
            load_scales(k0, j, sc[j]);
#pragma unroll
        for (int j = 0; j < NI; j++) {
            const uint8_t *row = wrow_g[j] + row_bytes(k0);
#pragma unroll
            for (int r = 0; r < 2; r++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    ldg_words<KW>(row + (r ? wrow_8[j] : 0) + 64 * h * Deq::kBits / 8, buf[j][r][h]);
        }
    };
    auto load_w_tail = [&](int k0, uint32_t (&buf)[NI][2][2][KW], HeldScales (&sc)[NI]) {
        if (p.w_vec_ok && k0 + C::kStepK <= K) {
            load_w(k0, buf, sc);
            return;
        }
#pragma unroll
        for (int j = 0; j < NI; j++)
            load_scales(k0, j, sc[j]);
        /* The K tail (or unaligned rows): bytes past the row read as zero,
         * never as a NaN code. */
#pragma unroll
        for (int j = 0; j < NI; j++)
#pragma unroll
            for (int r = 0; r < 2; r++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const size_t off = (size_t)(k0 + 64 * h + 16 * (lq + (VG_QUADPAIR ? r : 0))) * Deq::kBits / 8;
                    const uint8_t *src = wq + (size_t)nr[j][r] * wrow;
#pragma unroll
                    for (int e = 0; e < KW; e++)
                        buf[j][r][h][e] = 0;
                    for (int b = 0; b < 4 * KW && off + b < wrow; b++)
                        buf[j][r][h][b >> 2] |= (uint32_t)__ldg(src + off + b) << (8 * (b & 3));
                }
    };

    float acc[NI][MT][kAccE];
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int e = 0; e < kAccE; e++)
                acc[j][m][e] = 0.0f;

    /* The block's rows, once the kernel before has written the offsets;
     * false if it has none (block-uniform; no cp.async is in flight yet). */
    auto find_rows = [&]() {
        grid_dep_wait();
        if (p.offsets) {
            const int mt = blockIdx.y % p.mtiles;
            const int beg = __ldg(p.offsets + g), end = __ldg(p.offsets + g + 1);
            row0 = beg + mt * BM;
            rows = min(BM, end - row0);
        } else {
            row0 = blockIdx.y * BM;
            rows = min(BM, p.m - row0);
        }
        return rows > 0;
    };
    /* Where the routing leaves some token tiles empty (empty_tiles, from
     * the host's offsets), a group's later tiles load their first steps' W
     * after the wait, and not at all when empty: the grid has a tile row
     * per group and token tile of the largest group, so under uneven
     * routing most later tiles are empty (nvfp4 wo_a, 16-row tiles, groups
     * of 47 down to 6 rows: 13 of 24), and their early loads were W read
     * for nothing.  Elsewhere every tile loads before the wait: a later
     * tile that waits first starts its W a memory latency late (H100 wo_a
     * moe, two 16-row tiles in every group: 2-5 % slower).  One load site
     * for both orders: a second copy of the loads moved SM70's registers
     * enough to spill mxfp4's m16n32. */
    const bool late_tile = p.offsets && p.empty_tiles && blockIdx.y % p.mtiles != 0;
    if (late_tile && !find_rows())
        return;
    uint32_t wbuf[UW][NI][2][2][KW];
    HeldScales sc[UW][NI];
#pragma unroll
    for (int u = 0; u < UW; u++)
        if (u < nfast)
            load_w(step_k0(u), wbuf[u], sc[u]);
    if (!late_tile && !find_rows())
        return;
    xg = p.x + (size_t)row0 * K;
    xlane = xg + (size_t)(xt >> 4) * K + (xt & 15) * 8;
    xrows_lane = rows - (xt >> 4);
    /* Held, not recomputed: ptxas rebuilt both addresses from the kernel
     * parameters at every copy (the X copy of a 4-bit step went from about
     * 60 instructions to 35; kernels/cuda/KERNELS.md D9). */
    asm volatile("" : "+l"(xlane), "+l"(xdst));

    /* One cp.async group per step, committed even when empty, so that
     * "all but the newest U-1 groups" is always step i's (U-2 on a shared
     * ring, whose refills trail by one step: the loop below). */
#pragma unroll
    for (int u = 0; u < U; u++) {
        if (u < nfast)
            load_x(step_k0(u), u);
        cp_async_commit();
    }

    /* The X rows a thread reads: token lg (+8), clamped into the block's rows. */
    int xrow[MT];
#pragma unroll
    for (int m = 0; m < MT; m++)
        xrow[m] = min(8 * m + ltok, rows - 1) * XS + 16 * lq;

    /* With more than two token tiles a thread holds the step's decoded W of
     * all its tiles and reads X one token tile at a time (8 registers, not
     * 8 MT): W is still decoded once per step for every token. */
    constexpr bool kXPerTokenTile = MT > 2;
    /* One step: its W (registers) times its X (ring slot), into acc. */
    auto compute = [&](const uint32_t (&w)[NI][2][2][KW], const HeldScales (&held)[NI], const uint16_t *slot) {
        StepScales scs[NI];
#pragma unroll
        for (int j = 0; j < NI; j++) {
            if constexpr (kReadyLate)
                ready_scales(held[j], scs[j]);
            else
                scs[j] = held[j];
        }
        /* A post-scaled family sums the step's MMAs into t first, and
         * alternates between two partial sums: two dependency chains
         * of 4 MMAs instead of one of 8 (fp8 wo_a 10.9 -> 10.4 us;
         * the others, which add into acc, measured no gain from it).
         * SM70 already has two chains (the two row halves) and four
         * times the sums per thread, so it keeps one. */
        constexpr int CH = Deq::kPostScale && !VG_QUADPAIR && MT <= 2 ? 2 : 1;
        float t[CH][NI][MT][kAccE];
#pragma unroll
        for (int x = 0; x < CH; x++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int m = 0; m < MT; m++)
#pragma unroll
                    for (int e = 0; e < kAccE; e++)
                        t[x][j][m][e] = 0.0f;
#pragma unroll
        for (int h = 0; h < 2; h++) {
#if VG_QUADPAIR
            if constexpr (kXPerTokenTile) {
#pragma unroll
                for (int cc = 0; cc < 2; cc++) {
                    uint32_t a[NI][8];
#pragma unroll
                    for (int j = 0; j < NI; j++)
                        Deq::decode_words(w[j][cc][h], scs[j].pre[cc][h], a[j]);
#pragma unroll
                    for (int m = 0; m < MT; m++) {
                        uint32_t b[8];
                        x_in_pairs<Deq::kPairs>(slot + xrow[m] + 64 * h + 16 * cc, b);
#pragma unroll
                        for (int j = 0; j < NI; j++)
#pragma unroll
                            for (int s = 0; s < 4; s++) {
                                float *d = Deq::kPostScale ? t[0][j][m] : acc[j][m];
                                mma884(d, d + 4, a[j][2 * s], a[j][2 * s + 1], b[2 * s], b[2 * s + 1]);
                            }
                    }
                }
            } else {
            /* X token ltok of the thread's two chunks, in the weight's pairs */
            uint32_t b[2][MT][8];
#pragma unroll
            for (int cc = 0; cc < 2; cc++)
#pragma unroll
                for (int m = 0; m < MT; m++)
                    x_in_pairs<Deq::kPairs>(slot + xrow[m] + 64 * h + 16 * cc, b[cc][m]);
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int cc = 0; cc < 2; cc++) {
                    uint32_t a[8];
                    Deq::decode_words(w[j][cc][h], scs[j].pre[cc][h], a);
#pragma unroll
                    for (int m = 0; m < MT; m++)
#pragma unroll
                        for (int s = 0; s < 4; s++) {
                            float *d = Deq::kPostScale ? t[0][j][m] : acc[j][m];
                            mma884(d, d + 4, a[2 * s], a[2 * s + 1], b[cc][m][2 * s], b[cc][m][2 * s + 1]);
                        }
                }
            }
        }
#else
            if constexpr (kXPerTokenTile) {
                uint32_t a[NI][2][8];
#pragma unroll
                for (int j = 0; j < NI; j++)
#pragma unroll
                    for (int r = 0; r < 2; r++)
                        Deq::decode_words(w[j][r][h], scs[j].pre[r][h], a[j][r]);
#pragma unroll
                for (int m = 0; m < MT; m++) {
                    uint32_t b[8];
                    x_in_pairs<Deq::kPairs>(slot + xrow[m] + 64 * h, b);
#pragma unroll
                    for (int j = 0; j < NI; j++)
#pragma unroll
                        for (int s = 0; s < 4; s++) {
                            float *c = Deq::kPostScale ? t[0][j][m] : acc[j][m];
                            const uint32_t aa[4] = {a[j][0][2 * s], a[j][1][2 * s], a[j][0][2 * s + 1],
                                                    a[j][1][2 * s + 1]};
                            mma16816(c, aa, b[2 * s], b[2 * s + 1]);
                        }
                }
            } else {
            uint32_t b[MT][8];
#pragma unroll
            for (int m = 0; m < MT; m++)
                x_in_pairs<Deq::kPairs>(slot + xrow[m] + 64 * h, b[m]);
#pragma unroll
            for (int j = 0; j < NI; j++) {
                uint32_t a0[8], a1[8];
                Deq::decode_words(w[j][0][h], scs[j].pre[0][h], a0);
                Deq::decode_words(w[j][1][h], scs[j].pre[1][h], a1);
#pragma unroll
                for (int m = 0; m < MT; m++) {
#pragma unroll
                    for (int s = 0; s < 4; s++) {
                        float *c = Deq::kPostScale ? t[s % CH][j][m] : acc[j][m];
                        const uint32_t a[4] = {a0[2 * s], a1[2 * s], a0[2 * s + 1], a1[2 * s + 1]};
                        mma16816(c, a, b[m][2 * s], b[m][2 * s + 1]);
                    }
                }
            }
            }
        }
#endif
        if constexpr (Deq::kPostScale) {
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int m = 0; m < MT; m++) {
#if VG_QUADPAIR
#pragma unroll
                    for (int e = 0; e < kAccE; e++)
                        acc[j][m][e] += scs[j].post_out[(e >> 1) & 1] * t[0][j][m][e];
#else
                    float sum[4];
#pragma unroll
                    for (int e = 0; e < 4; e++)
                        sum[e] = CH > 1 ? t[0][j][m][e] + t[CH - 1][j][m][e] : t[0][j][m][e];
                    acc[j][m][0] += scs[j].post[0] * sum[0];
                    acc[j][m][1] += scs[j].post[0] * sum[1];
                    acc[j][m][2] += scs[j].post[1] * sum[2];
                    acc[j][m][3] += scs[j].post[1] * sum[3];
#endif
                }
        }
    };

    /* The pipelined loop over the fast steps.  i0 steps by UW, a multiple
     * of U: step i's X slot i % U is u % U. */
    static_assert(UW % PR == 0, "i0 must stay a multiple of PR (step_k0_offset)");
    if constexpr (WN > 1 && U > 1) {
        /* A shared ring, one barrier per step: after it, step i's X is in
         * (every thread waited for its own copies of it) and every warp is
         * done with step i - 1, whose slot then takes step i + U - 1.  Step
         * s is cp.async group s (the prologue's U, then one per step from
         * the second on), so U - 2 groups may still be in flight. */
        for (int i0 = 0; i0 < nfast; i0 += UW) {
            const int kb = step_k0(i0);
#pragma unroll
            for (int u = 0; u < UW; u++) {
                const int i = i0 + u;
                if (i >= nfast)
                    break;
                cp_async_wait<U - 2>();
                sync_ring();
                if (i > 0) {
                    if (i + U - 1 < nfast)
                        load_x(kb + step_k0_offset(u + U - 1), (u + U - 1) % U);
                    cp_async_commit();
                }
                compute(wbuf[u], sc[u], xring + (u % U) * C::kXSlot);
                if (i + UW < nfast)
                    load_w(kb + step_k0_offset(u + UW), wbuf[u], sc[u]);
            }
        }
        sync_ring(); /* the tail's plain stores go into slots the loop read */
    } else
    for (int i0 = 0; i0 < nfast; i0 += UW) {
        const int kb = step_k0(i0);
#pragma unroll
        for (int u = 0; u < UW; u++) {
            const int i = i0 + u;
            if (i >= nfast)
                break;
            uint16_t *slot = xring + (u % U) * C::kXSlot;
            cp_async_wait<U - 1>();
            sync_ring();
            compute(wbuf[u], sc[u], slot);
            sync_ring(); /* every lane is done with the slot before it is refilled */
            if (i + U < nfast)
                load_x(kb + step_k0_offset(u + U), u % U);
            cp_async_commit();
            if (i + UW < nfast)
                load_w(kb + step_k0_offset(u + UW), wbuf[u], sc[u]);
        }
    }
    /* The rest (the short last step, or every step of unaligned W or X),
     * one at a time, with plain loads: the pipelined loop above has left
     * no copy in flight into the slots. */
    for (int i = nfast; i < niter; i++) {
        uint32_t tw[NI][2][2][KW];
        HeldScales tsc[NI];
        uint16_t *slot = xring + (i % U) * C::kXSlot;
        const int k0 = step_k0(i);
        load_w_tail(k0, tw, tsc);
        load_x_tail(k0, slot);
        sync_ring();
        compute(tw, tsc, slot);
        sync_ring();
    }
    cp_async_wait<0>();

#if VG_QUADPAIR
    /* The two quadpairs of a row half (lanes 8 apart) summed its outputs
     * over different chunks: add them (both end with the same sum), then
     * each keeps half of them. */
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int e = 0; e < kAccE; e++)
                acc[j][m][e] += __shfl_xor_sync(0xFFFFFFFFu, acc[j][m][e], 8);
    /* Token and weight row of mma884 D element e. */
    auto tok = [&](int m, int e) { return 8 * m + (e & 4) + (lane & 2) + (e & 1); };
    auto wrow_of = [&](int j, int e) { return 16 * j + 8 * rh + (lane & 1) + (e & 2) + 4 * (lane >> 4); };
    auto owns = [&](int e) { return (e & 1) == kp; };
#else
    /* Token and weight row of fragment element e. */
    auto tok = [&](int m, int e) { return 8 * m + 2 * lq + (e & 1); };
    auto wrow_of = [&](int j, int e) { return 16 * j + lg + 8 * (e >> 1); };
    auto owns = [](int) { return true; };
#endif

    /* The WK partial sums, added in fixed order into warp wk = 0. */
    if constexpr (WK > 1) {
        if constexpr (WN > 1) {
            /* compute-sanitizer's racecheck reports the store and the read
             * below as a race whenever a storing K group has taken its
             * named ring barrier more times than K group 0, although the
             * __syncthreads between them orders them (a standalone kernel
             * with only that pattern shows it: KERNELS.md D46).  So every K
             * group takes its ring barrier as often as the busiest one, at
             * a cost of a barrier or two where a group's share of K ends
             * short.  The split is worked out again from copies of kbeg
             * and kend the compiler cannot see through: sharing the values
             * of the loop's, it held them over the loop (SM70's mxfp4
             * m64n64wn4wk2 spilled). */
            int kb = kbeg, ke = kend;
            asm volatile("" : "+r"(kb), "+r"(ke));
            /* The loops above: a barrier per fast step and one after them
             * on a shared ring (U > 1), else two per fast step; two per
             * step of the plain loop. */
            auto ring_barriers = [&](int w) {
                int n, fast;
                group_steps(w, kb, ke, n, fast);
                return (U > 1 ? fast + 1 : 2 * fast) + 2 * (n - fast);
            };
            int most = 0;
            for (int w = 0; w < WK; w++)
                most = max(most, ring_barriers(w));
            for (int c = ring_barriers(wk); c < most; c++)
                sync_ring();
        }
        float *red = reinterpret_cast<float *>(smem + C::kXSmem);
        auto slot = [&](int w, int j, int m, int e) -> float & {
            return red[((w - 1) * BM + tok(m, e)) * C::BN + wn * C::kWarpN + wrow_of(j, e)];
        };
        if (wk > 0)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int m = 0; m < MT; m++)
#pragma unroll
                    for (int e = 0; e < kAccE; e++)
                        if (owns(e))
                            slot(wk, j, m, e) = acc[j][m][e];
        __syncthreads();
        if (wk != 0)
            return;
        for (int w = 1; w < WK; w++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int m = 0; m < MT; m++)
#pragma unroll
                    for (int e = 0; e < kAccE; e++)
                        if (owns(e))
                            acc[j][m][e] += slot(w, j, m, e);
    }

    const float es = Deq::epilogue(p.w);
    const bool split = gridDim.z > 1;
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
        for (int m = 0; m < MT; m++)
#pragma unroll
            for (int e = 0; e < kAccE; e++) {
                const int r = tok(m, e), col = n0 + wrow_of(j, e);
                if (!owns(e) || r >= rows || col >= N)
                    continue;
                const size_t idx = (size_t)(row0 + r) * N + col;
                const float v = acc[j][m][e] * es;
                if (split)
                    p.ws[(size_t)blockIdx.z * p.m * N + idx] = v;
                else if (p.y_f16)
                    reinterpret_cast<__half *>(p.y)[idx] = __float2half_rn(v);
                else
                    reinterpret_cast<float *>(p.y)[idx] = v;
            }
}

#endif
