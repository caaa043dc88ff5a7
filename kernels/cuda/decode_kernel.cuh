/*
 * The decode mainloop (M <= 16 rows per block): weight-bandwidth bound, so W
 * streams straight from global memory into registers -- no shared-memory
 * stage, no block barrier in the loop -- with U chunks of W in flight per
 * thread, dequantized in registers (the same dequantizer policies and the
 * same permuted-K m16n8k16 fragment layout as gemm_kernel.cuh).
 *
 * Block: 8*MH rows of X (one M tile of one group; MH = 1 for up to 8 rows
 * halves the registers that hold X), BN = NI*8 weight rows, the K
 * range of its split; WK warps.  K is cut in 64-long chunks; warp wk takes
 * the chunk pairs wk, wk+WK, ... (a pair is 128 contiguous bytes of each fp8
 * row; the block's warps read neighbouring pieces of the same rows at the
 * same time).  In a chunk, thread (lane/4 =
 * row, lane%4 = q) of n8 tile j loads the 16 elements q*16.. of weight row
 * n0 + 8j + lane/4 (one 16-byte load for fp8) and its X fragment (rows
 * lane/4 and lane/4+8, the same 16 K), U chunks ahead of use; block scales are
 * applied per chunk in FP32 (a chunk lies in one 128-long scale block).
 * At the end the WK partial sums are added in fixed order through shared
 * memory; the epilogue is the one of gemm_kernel.cuh (Y, or split-K
 * partials for vg_splitk_reduce_kernel).
 */
#ifndef VG_CUDA_DECODE_KERNEL_CUH
#define VG_CUDA_DECODE_KERNEL_CUH

#include "gemm_kernel.cuh"

template <class Deq, int NI, int WK, int MH, int UU>
struct DecodeCfg {
    static constexpr int kThreads = WK * 32;
    static constexpr int BN = NI * 8;
    static constexpr int kBytes = 16 * Deq::kBits / 8; /* raw bytes of 16 elements */
    static constexpr int kWords = kBytes / 4;
    /* Chunks in flight per thread: UU (the plan's), halved for FP16 whose
     * chunks take twice the registers. */
    static constexpr int U = kBytes > 16 ? (UU / 2 > 1 ? UU / 2 : 1) : UU;
    static constexpr int kSmem = WK > 1 ? (WK - 1) * 16 * BN * 4 : 16;
};

/* kWords 32-bit words from global memory at p (16-byte aligned for 4 and 8
 * words, 8-byte for 2), through the read-only path. */
template <int W>
static __device__ __forceinline__ void ldg_words(const uint8_t *p, uint32_t out[W])
{
    if constexpr (W == 2) {
        const uint2 v = __ldg(reinterpret_cast<const uint2 *>(p));
        out[0] = v.x;
        out[1] = v.y;
    } else {
#pragma unroll
        for (int i = 0; i < W / 4; i++) {
            const uint4 v = __ldg(reinterpret_cast<const uint4 *>(p) + i);
            out[4 * i] = v.x;
            out[4 * i + 1] = v.y;
            out[4 * i + 2] = v.z;
            out[4 * i + 3] = v.w;
        }
    }
}

template <class Deq, int NI, int WK, int MH, int UU>
__global__ void __launch_bounds__(WK * 32) vg_decode_kernel(const KParams p)
{
    using C = DecodeCfg<Deq, NI, WK, MH, UU>;
    constexpr int BN = C::BN, U = C::U, KW = C::kWords, BM = 8 * MH;
    extern __shared__ __align__(16) uint8_t smem[];

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
        return;

    const int N = p.w.n, K = p.w.k;
    const int n0 = blockIdx.x * BN;
    const int kbeg = blockIdx.z * p.k_per_split;
    const int kend = min(K, kbeg + p.k_per_split);
    const int nch = kend > kbeg ? (kend - kbeg + 63) / 64 : 0;
    const int wk = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int lr = lane >> 2, lq = lane & 3;
    /* Warp wk takes chunk pairs wk, wk+WK, ...: its two loads of a pair
     * cover 128 contiguous bytes of each fp8 weight row. */
    const int npairs = (nch + 1) / 2;
    const int niter = npairs > wk ? 2 * ((npairs - wk + WK - 1) / WK) : 0;
    const uint8_t *wq = p.w.q + (size_t)g * p.w.q_group_bytes;
    const size_t wrow = p.w.q_row_bytes;

    /* Chunk index of the warp's i-th chunk (may be >= nch for the odd
     * last one: then it loads nothing), and the K of this thread's 16
     * elements in it. */
    auto chof = [&](int i) { return (((i >> 1) * WK + wk) << 1) + (i & 1); };
    auto kof = [&](int i) { return kbeg + chof(i) * 64 + lq * 16; };

    /* Interior blocks (all BN rows exist, vector loads allowed) take a
     * fast path with the row addresses computed once. */
    const bool wfast = p.w_vec_ok && n0 + BN <= N;
    const uint8_t *wbase[NI];
#pragma unroll
    for (int j = 0; j < NI; j++)
        wbase[j] = wq + (size_t)min(n0 + j * 8 + lr, N - 1) * wrow;
    const uint16_t *xbase[MH];
#pragma unroll
    for (int h = 0; h < MH; h++)
        xbase[h] = p.x + (size_t)(row0 + min(lr + 8 * h, rows - 1)) * K;

    auto load_w = [&](int i, uint32_t (&buf)[NI][KW]) {
        const int k = kof(i);
        const bool live = chof(i) < nch;
        const size_t off = (size_t)k * Deq::kBits / 8;
        if (wfast && live && off + C::kBytes <= wrow) {
#pragma unroll
            for (int j = 0; j < NI; j++)
                ldg_words<KW>(wbase[j] + off, buf[j]);
            return;
        }
#pragma unroll
        for (int j = 0; j < NI; j++) {
            const int n = live ? n0 + j * 8 + lr : N;
            if (n < N && off + C::kBytes <= wrow && p.w_vec_ok) {
                ldg_words<KW>(wq + (size_t)n * wrow + off, buf[j]);
            } else {
#pragma unroll
                for (int e = 0; e < KW; e++)
                    buf[j][e] = 0;
                if (n < N)
                    for (int b = 0; b < C::kBytes && off + b < wrow; b++)
                        buf[j][b >> 2] |= (uint32_t)wq[(size_t)n * wrow + off + b] << (8 * (b & 3));
            }
        }
    };
    auto load_x = [&](int i, uint32_t (&xr)[MH][8]) {
        const int k = kof(i);
        const int lrows = chof(i) < nch ? rows : 0;
        if (p.x_vec_ok && lrows > 0 && k + 16 <= K) {
#pragma unroll
            for (int h = 0; h < MH; h++) {
                if (lr + 8 * h < rows) {
                    ldg_words<8>(reinterpret_cast<const uint8_t *>(xbase[h] + k), xr[h]);
                } else {
#pragma unroll
                    for (int e = 0; e < 8; e++)
                        xr[h][e] = 0;
                }
            }
            return;
        }
#pragma unroll
        for (int h = 0; h < MH; h++) {
            const int r = lr + 8 * h;
            const uint16_t *src = p.x + (size_t)(row0 + r) * K + k;
            if (r < lrows && k + 16 <= K && p.x_vec_ok) {
                ldg_words<8>(reinterpret_cast<const uint8_t *>(src), xr[h]);
            } else {
#pragma unroll
                for (int e = 0; e < 8; e++)
                    xr[h][e] = 0;
                if (r < lrows)
                    for (int e = 0; e < 16 && k + e < K; e++)
                        xr[h][e >> 1] |= (uint32_t)src[e] << (16 * (e & 1));
            }
        }
    };
    /* Scales of chunk i: the pre-scale per tile, the post-scale per tile
     * and output column pair. */
    auto load_aux = [&](int i, uint32_t (&pre)[NI], float (&post)[NI][2]) {
        const int k = min(kof(i), K - 1);
#pragma unroll
        for (int j = 0; j < NI; j++) {
            if constexpr (Deq::kPreScale)
                pre[j] = Deq::prescale(p.w, g, min(n0 + j * 8 + lr, N - 1), min(k, K - 1));
            else
                pre[j] = 0;
            if constexpr (Deq::kPostScale && Deq::kPostPerBlock) {
                /* BN divides 128 and n0 is a multiple of BN: one block row */
                if (j == 0) {
                    const int kb = min(kbeg + chof(i) * 64, K - 1) / Deq::kScaleK;
                    post[0][0] = Deq::postscale(p.w, g, n0, kb);
                }
                post[j][0] = post[j][1] = post[0][0];
            } else if constexpr (Deq::kPostScale) {
                const int kb = min(kbeg + chof(i) * 64, K - 1) / Deq::kScaleK;
                const int nc = n0 + j * 8 + 2 * lq;
                post[j][0] = Deq::postscale(p.w, g, min(nc, N - 1), kb);
                post[j][1] = Deq::postscale(p.w, g, min(nc + 1, N - 1), kb);
            } else {
                post[j][0] = post[j][1] = 1.0f;
            }
        }
    };

    float acc[NI][4];
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[j][e] = 0.0f;

    /* A ring of U chunks in flight: W, X and the scales of each, so that
     * no load's latency is exposed for U chunk steps. */
    uint32_t wbuf[U][NI][KW], xbuf[U][MH][8], prebuf[U][NI];
    float postbuf[U][NI][2];
#pragma unroll
    for (int u = 0; u < U; u++)
        if (u < niter) {
            load_w(u, wbuf[u]);
            load_x(u, xbuf[u]);
            load_aux(u, prebuf[u], postbuf[u]);
        }

    for (int i0 = 0; i0 < niter; i0 += U) {
#pragma unroll
        for (int u = 0; u < U; u++) {
            const int i = i0 + u;
            if (i < niter) {
#pragma unroll
                for (int j = 0; j < NI; j++) {
                    uint32_t b[8];
                    Deq::decode_words(wbuf[u][j], prebuf[u][j], b);
                    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
                    float *c = Deq::kPostScale ? t : acc[j];
#pragma unroll
                    for (int s = 0; s < 4; s++) {
                        const uint32_t a[4] = {xbuf[u][0][2 * s], MH > 1 ? xbuf[u][MH - 1][2 * s] : 0u,
                                               xbuf[u][0][2 * s + 1],
                                               MH > 1 ? xbuf[u][MH - 1][2 * s + 1] : 0u};
                        mma16816(c, a, b[2 * s], b[2 * s + 1]);
                    }
                    if constexpr (Deq::kPostScale) {
                        acc[j][0] += postbuf[u][j][0] * t[0];
                        acc[j][1] += postbuf[u][j][1] * t[1];
                        acc[j][2] += postbuf[u][j][0] * t[2];
                        acc[j][3] += postbuf[u][j][1] * t[3];
                    }
                }
                if (i + U < niter) {
                    load_w(i + U, wbuf[u]);
                    load_x(i + U, xbuf[u]);
                    load_aux(i + U, prebuf[u], postbuf[u]);
                }
            }
        }
    }

    /* The WK partial sums, added in fixed order into warp 0. */
    if constexpr (WK > 1) {
        float *red = reinterpret_cast<float *>(smem);
        auto slot = [&](int w, int j, int e) -> float & {
            const int row = lr + 8 * (e >> 1);
            const int col = j * 8 + 2 * lq + (e & 1);
            return red[((w - 1) * 16 + row) * BN + col];
        };
        if (wk > 0)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    slot(wk, j, e) = acc[j][e];
        __syncthreads();
        if (wk != 0)
            return;
        for (int w = 1; w < WK; w++)
#pragma unroll
            for (int j = 0; j < NI; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[j][e] += slot(w, j, e);
    }

    const float es = Deq::epilogue(p.w);
    const bool split = gridDim.z > 1;
#pragma unroll
    for (int j = 0; j < NI; j++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = lr + 8 * (e >> 1);
            const int col = n0 + j * 8 + 2 * lq + (e & 1);
            if (r >= rows || col >= N)
                continue;
            const size_t idx = (size_t)(row0 + r) * N + col;
            const float v = acc[j][e] * es;
            if (split)
                p.ws[(size_t)blockIdx.z * p.m * N + idx] = v;
            else if (p.y_f16)
                reinterpret_cast<__half *>(p.y)[idx] = __float2half_rn(v);
            else
                reinterpret_cast<float *>(p.y)[idx] = v;
        }
}

#endif
