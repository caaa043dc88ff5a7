/*
 * The CPU backend's plan table and its heuristic.
 *
 * Plans are data: kernels/cpu/gemm.c runs any of them.  Every plan serves
 * every family.  Dense plans serve dense and loop (one pass per group);
 * grouped plans serve grouped and moe.  tile_n is 32 or 64 (the kernel has
 * one inner loop specialised per width); tile_m is at most 64 and tile_k at
 * most 256 (VG_CPU_MAX_TILE_*).
 *
 * The heuristic (one rule, used when nothing measured applies):
 *   dense, loop (rows = largest group):
 *     rows <= 16 (decode): K <= 1024 -> sk1, K <= 4096 -> sk2, else sk4;
 *     rows <= 64 (mid):    cpu.dense.m16n64k128.sk1;
 *     else (prefill):      cpu.dense.m32n64k128.sk1.
 *   grouped:               cpu.grouped.m16n32k128.sk1;
 *   moe: rows <= 16 as grouped, else cpu.grouped.m32n64k128.sk1;
 *   dense, loop, moe with rows >= VG_CPU_DQ_HEURISTIC_ROWS: the dequantize-
 *   once plan (cpu.<path>.dq.*, named by kind then tiles): the tiled loop decodes W
 *   once per M tile, so from a few M tiles on one decode into FP16 wins.
 */
#include "cpu.h"

#include <string.h>

#define PLAN(id, path, tm, tn, tk, sk, maxr) \
    {id, "cpu", path, VG_ALL_FAMILIES, tm, tn, tk, 1, sk, maxr, VG_KIND_TILED, 0}
#define DQPLAN(id, path) \
    {id, "cpu", path, VG_ALL_FAMILIES, 64, 64, 64, 1, 1, 0, VG_KIND_DEQUANT_BLAS, \
     GROUPED_DECODE_MAX_TOKENS + 1}
#define DQ_DENSE (&cpu_plans[11])
#define DQ_GROUPED (&cpu_plans[12])

static const vg_plan cpu_plans[] = {
    /* decode: few rows, split-K spreads a long K over chunks */
    PLAN("cpu.dense.m4n64k128.sk1", VG_PATH_DENSE, 4, 64, 128, 1, 16),
    PLAN("cpu.dense.m8n64k128.sk2", VG_PATH_DENSE, 8, 64, 128, 2, 16),
    PLAN("cpu.dense.m8n32k256.sk4", VG_PATH_DENSE, 8, 32, 256, 4, 16),
    /* mid */
    PLAN("cpu.dense.m16n64k128.sk1", VG_PATH_DENSE, 16, 64, 128, 1, 64),
    PLAN("cpu.dense.m16n32k128.sk2", VG_PATH_DENSE, 16, 32, 128, 2, 64),
    /* prefill */
    PLAN("cpu.dense.m32n64k128.sk1", VG_PATH_DENSE, 32, 64, 128, 1, 0),
    PLAN("cpu.dense.m64n64k64.sk1", VG_PATH_DENSE, 64, 64, 64, 1, 0),
    /* grouped: up to 16 rows per group, all groups in one call */
    PLAN("cpu.grouped.m16n32k128.sk1", VG_PATH_GROUPED, 16, 32, 128, 1, 16),
    PLAN("cpu.grouped.m16n64k128.sk2", VG_PATH_GROUPED, 16, 64, 128, 2, 16),
    PLAN("cpu.grouped.m8n64k256.sk1", VG_PATH_GROUPED, 8, 64, 256, 1, 16),
    /* moe with a heavily routed expert (more than 16 rows in a group) */
    PLAN("cpu.grouped.m32n64k128.sk1", VG_PATH_GROUPED, 32, 64, 128, 1, 0),
    /* dequantize once: each group's W into an FP16 copy in the workspace,
     * then the tiled loop over the copy (the kind CUDA runs with cuBLAS);
     * from 17 rows on, as there */
    DQPLAN("cpu.dense.dq.m64n64k64.sk1", VG_PATH_DENSE),
    DQPLAN("cpu.grouped.dq.m64n64k64.sk1", VG_PATH_GROUPED),
};

#define PLAN_COUNT (sizeof cpu_plans / sizeof cpu_plans[0])

size_t vg_cpu_plan_count(void) { return PLAN_COUNT; }

const vg_plan *vg_cpu_plan_at(size_t i) { return i < PLAN_COUNT ? &cpu_plans[i] : NULL; }

vg_status vg_cpu_plan_check(const vg_plan *p, const char *what)
{
    if (!p)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: plan is NULL", what);
    const char *id = p->id ? p->id : "(unnamed)";
    if (!p->backend || strcmp(p->backend, "cpu") != 0)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: plan '%s' is not a cpu plan", what, id);
    if ((unsigned)p->kind >= VG_KIND_COUNT || p->kind == VG_KIND_DECODE)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: plan '%s' is of kind %s, which the cpu kernel "
                       "does not run", what, id, vg_plan_kind_name(p->kind));
    if (p->path != VG_PATH_DENSE && p->path != VG_PATH_GROUPED)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: plan '%s' has path %d, not dense or grouped",
                       what, id, (int)p->path);
    if (p->tile_m < 1 || p->tile_m > VG_CPU_MAX_TILE_M || (p->tile_n != 32 && p->tile_n != 64) ||
        p->tile_k < 1 || p->tile_k > VG_CPU_MAX_TILE_K || p->split_k < 1 ||
        p->split_k > VG_CPU_MAX_SPLIT_K)
        return vg_fail(VG_ERR_INVALID_ARG,
                       "%s: plan '%s' tiles m%d n%d k%d sk%d are outside the cpu kernel's range",
                       what, id, (int)p->tile_m, (int)p->tile_n, (int)p->tile_k,
                       (int)p->split_k);
    return VG_OK;
}

static const vg_plan *dense_rule(int32_t rows, int32_t k, int dq)
{
    if (dq && rows >= VG_CPU_DQ_HEURISTIC_ROWS)
        return DQ_DENSE;
    if (rows <= 16)
        return &cpu_plans[k <= 1024 ? 0 : k <= 4096 ? 1 : 2];
    if (rows <= 64)
        return &cpu_plans[3];
    return &cpu_plans[5];
}

static const vg_plan *rule(vg_family f, vg_path path, int32_t rows, int32_t k, int dq)
{
    if ((unsigned)f >= VG_FAMILY_COUNT)
        return NULL;
    switch (path) {
    case VG_PATH_DENSE:
    case VG_PATH_LOOP:
        return dense_rule(rows, k, dq);
    case VG_PATH_GROUPED:
        return &cpu_plans[7];
    case VG_PATH_MOE:
        return rows <= GROUPED_DECODE_MAX_TOKENS          ? &cpu_plans[7]
               : dq && rows >= VG_CPU_DQ_HEURISTIC_ROWS ? DQ_GROUPED
                                                        : &cpu_plans[10];
    case VG_PATH_COUNT:
        break;
    }
    return NULL;
}

const vg_plan *vg_cpu_heuristic(vg_family f, vg_path path, int32_t rows, int32_t n, int32_t k,
                               const vg_gemm_args *call)
{
    (void)n;
    (void)call; /* the CPU plans differ by K, never by how rows fall into groups */
    return rule(f, path, rows, k, 1);
}

const vg_plan *vg_cpu_heuristic_native(vg_family f, vg_path path, int32_t rows, int32_t n,
                                       int32_t k, const vg_gemm_args *call)
{
    (void)n;
    (void)call;
    return rule(f, path, rows, k, 0);
}

vg_status vg_cpu_workspace_bytes(const vg_plan *p, const vg_gemm_args *a, size_t *bytes)
{
    if (!p || !a || !bytes)
        return vg_fail(VG_ERR_INVALID_ARG, "cpu workspace: plan, args or result pointer is NULL");
    vg_status st = vg_cpu_plan_check(p, "cpu workspace");
    if (st != VG_OK)
        return st;
    *bytes = 0;
    if (a->m <= 0 || a->w.n <= 0)
        return VG_OK;
    if (p->kind == VG_KIND_DEQUANT_BLAS) {
        /* one group's FP16 copy, reused group after group */
        *bytes = (size_t)a->w.n * (size_t)a->w.k * sizeof(uint16_t);
        return VG_OK;
    }
    if (p->split_k <= 1)
        return VG_OK;
    /* one FP32 partial per split per output element */
    *bytes = (size_t)p->split_k * (size_t)a->m * (size_t)a->w.n * sizeof(float);
    return VG_OK;
}
