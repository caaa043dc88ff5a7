/*
 * The CUDA plan list: one entry per plan, all data, in table order (the
 * order `voltgate plans` prints and the tie-break order of measurements;
 * LUT files and bench history name plans by the id derived here).
 *
 * VG_CUDA_PLAN_LIST(DECODE, DECODE_WN, TILED, DQBLAS) calls one of its four
 * macro arguments per entry:
 *
 *   DECODE(path, tile_m, tile_n, WK, U, split, max_rows)
 *       vg_decode_kernel<Deq, NI = tile_n/16, WK, MT = tile_m/8, U>
 *       (decode_kernel.cuh): tile_m tokens, tile_n weight rows, WK warps
 *       splitting K inside the block, U the steps in flight per warp (half
 *       that for fp16, KERNELS.md D6); tile_k is the 128-long step.
 *       max_rows: tile_m, or 64 for the dense 16-row plans, which run one
 *       16-row tile per grid row (the blocks of one N tile run together, so
 *       W comes from DRAM about once and from L2 after) and are timed
 *       against the mid tiles at 17-64 rows (issue 31), and for the grouped
 *       m16n16w4.u2 (to 128), which runs one 16-row tile per 16 rows of
 *       each group (a group's tiles are adjacent grid rows): the rule's
 *       pick for moe calls whose groups mostly fit one tile, and for fp8
 *       at 17-32 rows per group on SM80+ (KERNELS.md D43, D44).
 *       id: cuda.<path>.decode.m<tile_m>n<tile_n>w<WK>.u<U>.sk<split>
 *   DECODE_WN(path, tile_m, tile_n, WN, WK, U, split, max_rows)
 *       vg_decode_kernel<Deq, NI = tile_n/(16 WN), WK, MT = tile_m/8, U, WN>:
 *       the same kernel with WN warps side by side over N for each of its
 *       WK K groups, so the WN warps of a group share one X ring (one copy
 *       of the token tile for tile_n weight rows, where the plain decode
 *       plan's warps each copy their own for 16 NI) and each weight
 *       element is decoded once for all tile_m tokens: the mid sizes
 *       (issue 31; KERNELS.md D36).  Offered from tile_m/2 + 1 rows on
 *       the dense path; the grouped entries from 17 (where the grouped
 *       16-row plans stop, but m16n16w4.u2), for moe and for grouped calls above 16 rows
 *       per group, which run as moe (KERNELS.md D37).
 *       id: cuda.<path>.decode.m<tile_m>n<tile_n>wn<WN>wk<WK>.u<U>.sk<split>
 *   TILED(path, name, BM, BN, BK, ST, split, max_rows, WM, WN, WK)
 *       vg_gemm_kernel<Deq, BM, BN, BK, WM, WN, WK, ST> (gemm_kernel.cuh):
 *       the shared-memory pipelined mainloop, ST pipeline stages, a WM x WN
 *       x WK warp grid (not in the id); name is mid or prefill.
 *       id: cuda.<path>.<name>.m<BM>n<BN>k<BK>.s<ST>.sk<split>
 *   DQBLAS(path, groups)
 *       dequantize once + cuBLAS (dequant_blas.h): no kernel of its own in
 *       the table.  groups (the plan's stages): 1, one FP16 copy reused
 *       group after group, one cublasGemmEx each; 8, up to 8 groups'
 *       copies made by one launch and multiplied by one
 *       cublasGemmGroupedBatchedEx (grouped path only; KERNELS.md D47).
 *       id: cuda.<path>.dqcublas, and .g<groups> where groups > 1
 *
 * path is the token dense or grouped.  Every id is built from the entry's
 * own tokens by stringification (VG_PLAN_ID_*), so an id cannot drift from
 * its parameters: write the numbers literally (8, not 8*1).  gemm.cu
 * expands the list into the vg_plan table; each gemm_<family>.cu expands it
 * into its launch functions and shared-memory sizes, in the same order.
 */
#ifndef VG_CUDA_PLAN_LIST_H
#define VG_CUDA_PLAN_LIST_H

#define VG_CUDA_PLAN_LIST(DECODE, DECODE_WN, TILED, DQBLAS)                            \
    DECODE(dense, 8, 32, 4, 2, 1, 8)                                                       \
    DECODE(dense, 8, 32, 4, 2, 2, 8)                                                       \
    DECODE(dense, 8, 32, 4, 2, 4, 8)                                                       \
    DECODE(dense, 8, 16, 4, 2, 1, 8)                                                       \
    DECODE(dense, 8, 16, 8, 2, 1, 8)                                                       \
    DECODE(dense, 8, 32, 8, 2, 1, 8)                                                       \
    DECODE(dense, 8, 16, 4, 4, 1, 8)                                                       \
    DECODE(dense, 16, 32, 4, 2, 1, 64)                                                      \
    DECODE(dense, 16, 32, 4, 2, 2, 64)                                                      \
    DECODE(dense, 16, 32, 4, 2, 4, 64)                                                      \
    DECODE(dense, 16, 16, 4, 2, 1, 64)                                                      \
    DECODE(dense, 16, 16, 8, 2, 1, 64)                                                      \
    DECODE(dense, 16, 32, 8, 2, 1, 64)                                                      \
    DECODE(dense, 16, 16, 4, 4, 1, 64)                                                      \
    DECODE(dense, 8, 32, 4, 4, 1, 8)                                                       \
    DECODE(dense, 8, 16, 8, 4, 1, 8)                                                       \
    DECODE(dense, 8, 16, 16, 2, 1, 8)                                                      \
    DECODE(dense, 16, 16, 8, 4, 1, 64)                                                      \
    DECODE_WN(dense, 64, 64, 4, 1, 2, 1, 256)                                               \
    DECODE_WN(dense, 64, 64, 4, 1, 2, 2, 256)                                               \
    DECODE_WN(dense, 64, 64, 4, 1, 2, 4, 256)                                               \
    DECODE_WN(dense, 64, 64, 4, 2, 2, 1, 256)                                               \
    DECODE_WN(dense, 64, 64, 4, 2, 2, 2, 256)                                               \
    DECODE_WN(dense, 64, 128, 8, 1, 4, 4, 256)                                              \
    /* 32 tokens, W decoded once for 17-32 rows: SM70/75's rule there for   */      \
    /* the 4-bit families (V100 model, KERNELS.md D52)                       */      \
    DECODE_WN(dense, 32, 64, 4, 1, 2, 1, 256)                                               \
    DECODE_WN(dense, 32, 64, 4, 1, 2, 2, 256)                                               \
    DECODE_WN(dense, 32, 64, 4, 1, 2, 4, 256)                                               \
    TILED(dense, mid, 64, 64, 128, 4, 1, 64, 2, 2, 1)                                   \
    TILED(dense, mid, 64, 64, 128, 4, 2, 64, 2, 2, 1)                                   \
    TILED(dense, prefill, 128, 128, 64, 3, 1, 0, 2, 4, 1)                               \
    /* Two stages: the fp16 and fp8 tiles above take 86-148 KB of shared      */      \
    /* memory, more than a V100's 96 KB (test_heuristic_fits_every_arch).     */      \
    TILED(dense, mid, 64, 64, 128, 2, 1, 64, 2, 2, 1)                                   \
    TILED(dense, mid, 64, 64, 128, 2, 2, 64, 2, 2, 1)                                   \
    TILED(dense, prefill, 128, 128, 64, 2, 1, 0, 2, 4, 1)                               \
    /* A T4 (sm_75) allows 64 KB: the fp16 two-stage tiles above take 74      */      \
    /* and 84 KB, this one 63 (three stages of a 64-long K step).             */      \
    TILED(dense, prefill, 64, 64, 64, 3, 1, 0, 2, 2, 1)                                 \
    DECODE(grouped, 8, 32, 4, 2, 1, 8)                                                     \
    DECODE(grouped, 8, 32, 4, 2, 2, 8)                                                     \
    DECODE(grouped, 8, 16, 4, 2, 1, 8)                                                     \
    DECODE(grouped, 8, 16, 8, 2, 1, 8)                                                     \
    DECODE(grouped, 8, 32, 8, 2, 1, 8)                                                     \
    DECODE(grouped, 8, 16, 4, 4, 1, 8)                                                     \
    DECODE(grouped, 16, 32, 4, 2, 1, 32)                                                    \
    DECODE(grouped, 16, 32, 4, 2, 2, 16)                                                    \
    DECODE(grouped, 16, 16, 4, 2, 1, 128)                                                   \
    DECODE(grouped, 16, 16, 8, 2, 1, 16)                                                    \
    DECODE(grouped, 16, 32, 8, 2, 1, 16)                                                    \
    DECODE(grouped, 16, 16, 4, 4, 1, 16)                                                    \
    DECODE(grouped, 8, 32, 4, 4, 1, 8)                                                     \
    DECODE(grouped, 8, 16, 8, 4, 1, 8)                                                     \
    DECODE(grouped, 8, 16, 16, 2, 1, 8)                                                    \
    DECODE(grouped, 16, 16, 8, 4, 1, 16)                                                    \
    DECODE_WN(grouped, 64, 64, 4, 1, 2, 1, 256)                                             \
    DECODE_WN(grouped, 64, 64, 4, 2, 2, 1, 256)                                             \
    /* the grouped twin of the 32-token plan: SM70/75's 4-bit families at   */      \
    /* 17-32 rows per group (KERNELS.md D52)                                 */      \
    DECODE_WN(grouped, 32, 64, 4, 1, 2, 1, 256)                                             \
    TILED(grouped, mid, 64, 64, 128, 4, 1, 0, 2, 2, 1)                                  \
    TILED(grouped, mid, 64, 64, 128, 2, 1, 0, 2, 2, 1)                                  \
    TILED(grouped, mid, 64, 64, 64, 3, 1, 0, 2, 2, 1)                                   \
    DQBLAS(dense, 1)                                                                    \
    DQBLAS(grouped, 1)                                                                  \
    DQBLAS(grouped, 8)

/* The ids, from an entry's tokens. */
#define VG_PLAN_ID_DECODE(path, tile_m, tile_n, WK, U, split)                          \
    "cuda." #path ".decode.m" #tile_m "n" #tile_n "w" #WK ".u" #U ".sk" #split
#define VG_PLAN_ID_DECODE_WN(path, tile_m, tile_n, WN, WK, U, split)                   \
    "cuda." #path ".decode.m" #tile_m "n" #tile_n "wn" #WN "wk" #WK ".u" #U ".sk" #split
#define VG_PLAN_ID_TILED(path, name, BM, BN, BK, ST, split)                            \
    "cuda." #path "." #name ".m" #BM "n" #BN "k" #BK ".s" #ST ".sk" #split
#define VG_PLAN_ID_DQBLAS(path, groups) "cuda." #path ".dqcublas" VG_PLAN_ID_DQBLAS_G_##groups
/* only the group counts the list uses: another is a compile error here */
#define VG_PLAN_ID_DQBLAS_G_1 ""
#define VG_PLAN_ID_DQBLAS_G_8 ".g8"

/* path token -> vg_path */
#define VG_PLAN_PATH_dense VG_PATH_DENSE
#define VG_PLAN_PATH_grouped VG_PATH_GROUPED
#define VG_PLAN_PATH(path) VG_PLAN_PATH_##path

/* The number of entries, a constant expression. */
#define VG_PLAN_COUNT_ONE_(...) +1
#define VG_CUDA_PLAN_COUNT                                                              \
    (0 VG_CUDA_PLAN_LIST(VG_PLAN_COUNT_ONE_, VG_PLAN_COUNT_ONE_, VG_PLAN_COUNT_ONE_,           \
                         VG_PLAN_COUNT_ONE_))

#endif
