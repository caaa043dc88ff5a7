/*
 * The dequantize-once + cuBLAS plan kind (kernels/cuda/dequant_blas.cu):
 * its workspace (one group's FP16 copy plus cuBLAS's own; the batched
 * plan's up to 8 copies and its pointer table), a workspace one byte short
 * refused without a launch, the same bits on every run and when replayed
 * from a CUDA graph, and moe with empty and large groups (more than a
 * batch of them) against the reference on the FP16-rounded weight.  Every plan of every family is
 * also run by test_cuda_families and test_cuda_fp8 (tc_run_all_plans).
 * And the run-time loader of cuBLAS: its reasons, and the toolkit's soname
 * (test_cuda_no_cublas.c: the runtime where cuBLAS does not load).
 * The workspace arithmetic and the loader need no device; the rest is
 * skipped without one.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_cuda_util.h"

/* The kind's plan for the path that takes `batch` groups per cuBLAS call. */
static const vg_plan *dq_plan_batched(vg_path path, int batch)
{
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (p->kind == VG_KIND_DEQUANT_BLAS && p->stages == batch &&
            p->path == (path == VG_PATH_DENSE || path == VG_PATH_LOOP ? VG_PATH_DENSE
                                                                       : VG_PATH_GROUPED))
            return p;
    }
    return NULL;
}

static const vg_plan *dq_plan(vg_path path) { return dq_plan_batched(path, 1); }

static size_t ws_groups(const vg_plan *p, vg_family f, vg_path path, int32_t m, int32_t n,
                        int32_t k, int32_t groups)
{
    vg_gemm_args a;
    memset(&a, 0, sizeof a);
    a.path = path;
    a.m = m;
    a.w.family = f;
    a.w.n = n;
    a.w.k = k;
    a.w.groups = groups;
    size_t bytes = 0;
    assert_int_equal(vg_cuda_workspace_bytes(p, &a, &bytes), VG_OK);
    return bytes;
}

static size_t ws_of(const vg_plan *p, vg_family f, vg_path path, int32_t m, int32_t n, int32_t k)
{
    return ws_groups(p, f, path, m, n, k, 1);
}

/* The copy is one group's N x K FP16 (rounded up to 256 bytes) on top of
 * what fp16, which needs no copy, asks for; it does not grow with M or
 * with the number of groups. */
static void test_workspace_is_one_fp16_copy(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    const vg_plan *p = dq_plan(VG_PATH_DENSE);
    assert_non_null(p);
    assert_int_equal(p->min_rows, GROUPED_DECODE_MAX_TOKENS + 1);
    static const int32_t shapes[][2] = {{4096, 4096}, {4096, 14336}, {200, 392}, {1, 16}};
    static const vg_family fams[] = {VG_FAMILY_AWQ, VG_FAMILY_FP8, VG_FAMILY_MXFP4,
                                     VG_FAMILY_NVFP4};
    const size_t base = ws_of(p, VG_FAMILY_FP16, VG_PATH_DENSE, 512, 4096, 4096);
    assert_true(base >= (size_t)4 << 20); /* cuBLAS's own: at least 4 MiB */
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
            const int32_t n = shapes[s][0], k = shapes[s][1];
            const size_t copy = ((size_t)n * k * 2 + 255) / 256 * 256;
            assert_int_equal(ws_of(p, fams[f], VG_PATH_DENSE, 512, n, k), base + copy);
            assert_int_equal(ws_of(p, fams[f], VG_PATH_DENSE, 8192, n, k), base + copy);
            assert_int_equal(ws_of(dq_plan(VG_PATH_MOE), fams[f], VG_PATH_MOE, 300, n, k),
                             base + copy);
        }
    assert_int_equal(ws_of(p, VG_FAMILY_FP8, VG_PATH_DENSE, 0, 4096, 4096), 0);
}

/* The batched plan (cuda.grouped.dqcublas.g8): a 256-byte pointer table,
 * then one copy per group up to 8 (a 256-expert layer holds 8, never 256),
 * then what the one-group plan adds; fp16 only the table. */
static void test_batched_workspace_is_at_most_eight_copies(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    const vg_plan *one = dq_plan(VG_PATH_MOE), *batched = dq_plan_batched(VG_PATH_MOE, 8);
    assert_non_null(one);
    assert_non_null(batched);
    assert_string_equal(batched->id, "cuda.grouped.dqcublas.g8");
    assert_int_equal(batched->min_rows, one->min_rows);
    assert_null(dq_plan_batched(VG_PATH_DENSE, 8));
    const int32_t n = 1024, k = 4096;
    const size_t copy = (size_t)n * k * 2;
    static const int32_t groups[] = {1, 3, 8, 9, 256};
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        const int32_t g = groups[i];
        const size_t base = ws_groups(one, VG_FAMILY_NVFP4, VG_PATH_MOE, 300, n, k, g);
        const size_t copies = (size_t)(g < 8 ? g : 8);
        assert_int_equal(ws_groups(batched, VG_FAMILY_NVFP4, VG_PATH_MOE, 300, n, k, g),
                         256 + base + (copies - 1) * copy);
        assert_int_equal(ws_groups(batched, VG_FAMILY_FP16, VG_PATH_MOE, 300, n, k, g),
                         256 + ws_groups(one, VG_FAMILY_FP16, VG_PATH_MOE, 300, n, k, g));
    }
}

/* One byte short: refused before anything is launched (Y keeps its NaN). */
static void test_short_workspace_refused(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    tc_case c;
    tc_make(&c, VG_FAMILY_FP8, VG_PATH_DENSE, 40, 256, 512, 1, NULL, 31);
    const vg_plan *p = dq_plan(VG_PATH_DENSE);
    size_t need = 0;
    assert_int_equal(vg_cuda_workspace_bytes(p, &c.args, &need), VG_OK);
    vg_gemm_args a = c.args;
    a.workspace_bytes = need - 1;
    tc_poison(&c);
    assert_int_equal(vg_cuda_gemm(p, &a), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "workspace"));
    assert_int_equal(vg_cuda_synchronize(NULL), VG_OK);
    float *y = tc_download(&c);
    for (size_t i = 0; i < (size_t)c.m * c.n; i++)
        assert_true(isnan(y[i]));
    free(y);
    tc_free(&c);
}

/* The dequantize kernel indexes a weight's 16-element chunks in 32 bits:
 * a weight of 2^31 chunks or more (here 131072 x 262144) is refused with
 * a clear error before anything is read or launched (the pointers are
 * never dereferenced). */
static void test_weight_over_the_chunk_limit_refused(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    const vg_plan *p = dq_plan(VG_PATH_DENSE);
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        if (f == VG_FAMILY_FP16)
            continue; /* no copy to make: cuBLAS reads W itself */
        vg_gemm_args a;
        memset(&a, 0, sizeof a);
        a.path = VG_PATH_DENSE;
        a.m = 32;
        a.w.family = (vg_family)f;
        a.w.n = 131072;
        a.w.k = 262144;
        a.w.groups = 1;
        /* never read: the call must stop first */
        a.w.q = a.w.scale = (void *)(uintptr_t)4096;
        a.w.zero = f == VG_FAMILY_AWQ ? (void *)(uintptr_t)4096 : NULL;
        a.w.tensor_scale = 1.0f;
        a.x = a.y = (void *)(uintptr_t)4096;
        a.y_dtype = VG_DTYPE_F32;
        a.workspace = (void *)(uintptr_t)4096;
        a.workspace_bytes = SIZE_MAX;
        assert_int_equal(vg_cuda_gemm(p, &a), VG_ERR_LIMIT);
        assert_non_null(strstr(vg_last_error(), "131072 x 262144"));
        assert_non_null(strstr(vg_last_error(), "chunks"));
    }
    assert_int_equal(vg_cuda_synchronize(NULL), VG_OK);
}

/* The FP16 copy at the edges of the kernel's two store paths, every family
 * against the reference on the FP16-rounded weight: K a multiple of 16
 * (lanes store adjacent chunks in pairs) with chunk counts that are odd and
 * end inside a warp (3, 15, 99 chunks), and K = 8 mod 16 (each lane stores
 * its own chunk, the last one half). */
static void test_copy_edges(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    static const int32_t shapes[][2] = {{3, 16}, {5, 48}, {33, 48}, {9, 176}, {7, 40}, {37, 200}};
    const vg_plan *p = dq_plan(VG_PATH_DENSE);
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int y16 = 0; y16 <= 1; y16++) {
                tc_case c;
                tc_make(&c, (vg_family)f, VG_PATH_DENSE, 24, shapes[s][0], shapes[s][1], 1, NULL,
                        400 + (uint64_t)f * 16 + s * 2 + (uint64_t)y16);
                const vg_dtype yt = y16 ? VG_DTYPE_F16 : VG_DTYPE_F32;
                c.args.y_dtype = yt;
                tc_run_plan(&c, p, tc_tol((vg_family)f, yt));
                tc_free(&c);
            }
}

/* Captures the case's call on plan p into a CUDA graph on `stream`,
 * poisons Y, replays the graph and returns Y as FP32 (the caller frees). */
static float *replay_in_graph(tc_case *c, const vg_plan *p, void *stream)
{
    assert_int_equal(vg_cuda_graph_begin(stream), VG_OK);
    assert_int_equal(vg_cuda_gemm(p, &c->args), VG_OK);
    void *exec = NULL;
    assert_int_equal(vg_cuda_graph_end(stream, &exec), VG_OK);
    tc_poison(c);
    assert_int_equal(vg_cuda_graph_launch(exec, stream), VG_OK);
    assert_int_equal(vg_cuda_synchronize(stream), VG_OK);
    assert_int_equal(vg_cuda_graph_destroy(exec), VG_OK);
    return tc_download(c);
}

/* Every family: the same bits twice, and the same bits again from a CUDA
 * graph that captured the call (cuBLAS's algorithm depends on the shape and
 * the fixed workspace, not on timing). */
static void test_same_bits_direct_and_graph(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    /* the device's first cuBLAS handle, made before the capture below (the
     * backend's open makes it); offered to the runtime or not, the plan runs
     * when forced */
    assert_int_equal(vg_cuda_blas_prepare(NULL, NULL), VG_OK);
    void *stream = NULL;
    assert_int_equal(vg_cuda_stream_create(&stream), VG_OK);
    for (int f = 0; f < VG_FAMILY_COUNT; f++) {
        tc_case c;
        tc_make(&c, (vg_family)f, VG_PATH_DENSE, 300, 264, 1024, 1, NULL, 90 + (uint64_t)f);
        c.args.stream = stream;
        const vg_plan *p = dq_plan(VG_PATH_DENSE);
        tc_run_plan(&c, p, tc_tol((vg_family)f, VG_DTYPE_F32));
        float *y1 = tc_download(&c);
        tc_run_plan(&c, p, tc_tol((vg_family)f, VG_DTYPE_F32));
        float *y2 = tc_download(&c);
        assert_memory_equal(y1, y2, (size_t)c.m * c.n * 4);
        float *y3 = replay_in_graph(&c, p, stream);
        assert_memory_equal(y1, y3, (size_t)c.m * c.n * 4);
        free(y1);
        free(y2);
        free(y3);
        tc_free(&c);
    }
    vg_cuda_stream_destroy(stream);
}

/* moe and loop with empty groups and groups above the grouped decode limit,
 * FP32 and FP16 output; moe also on the batched plan, with 10 groups with
 * rows (two batches: 8, then 2) and runs of equal rows (one cuBLAS group of
 * several problems) beside single ones. */
static void test_groups_empty_and_large(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    static const int32_t counts[] = {0, 40, 0, 25, 3};
    static const int32_t many[] = {17, 17, 0, 40, 40, 40, 3, 0, 25, 25, 9, 33};
    enum { MANY = sizeof many / sizeof many[0] };
    int32_t off[6], off_many[MANY + 1];
    tc_offsets(off, counts, 5);
    tc_offsets(off_many, many, MANY);
    static const vg_path paths[] = {VG_PATH_MOE, VG_PATH_LOOP, VG_PATH_MOE, VG_PATH_MOE};
    static const int batches[] = {1, 1, 8, 8};
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++)
            for (int y16 = 0; y16 <= 1; y16++) {
                const int big = i == 3;
                tc_case c;
                tc_make(&c, (vg_family)f, paths[i], big ? off_many[MANY] : off[5], 136, 512,
                        big ? MANY : 5, big ? off_many : off,
                        200 + (uint64_t)f * 8 + i * 2 + (uint64_t)y16);
                const vg_dtype yt = y16 ? VG_DTYPE_F16 : VG_DTYPE_F32;
                c.args.y_dtype = yt;
                tc_run_plan(&c, dq_plan_batched(paths[i], batches[i]), tc_tol((vg_family)f, yt));
                tc_free(&c);
            }
}

/* The batched plan in a CUDA graph: the pointer table cuBLAS reads is
 * written by the captured kernels, so a replay over poisoned Y gives the
 * direct run's bits (two batches: 9 groups with rows); with FP16 output
 * the grouped GEMM itself ran (where cuBLAS has it), so the test cannot
 * pass on the per-group fallback alone. */
static void test_batched_graph_replay(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    assert_int_equal(vg_cuda_blas_prepare(NULL, NULL), VG_OK);
    void *stream = NULL;
    assert_int_equal(vg_cuda_stream_create(&stream), VG_OK);
    static const int32_t counts[] = {30, 0, 64, 64, 17, 64, 5, 64, 64, 20};
    enum { G = sizeof counts / sizeof counts[0] };
    int32_t off[G + 1];
    tc_offsets(off, counts, G);
    const vg_plan *p = dq_plan_batched(VG_PATH_MOE, 8);
    assert_non_null(p);
    for (int f = 0; f < VG_FAMILY_COUNT; f++)
        for (int y16 = 0; y16 <= 1; y16++) {
            const vg_dtype yt = y16 ? VG_DTYPE_F16 : VG_DTYPE_F32;
            tc_case c;
            tc_make(&c, (vg_family)f, VG_PATH_MOE, off[G], 200, 384, G, off,
                    300 + (uint64_t)f * 2 + (uint64_t)y16);
            c.args.stream = stream;
            c.args.y_dtype = yt;
            tc_run_plan(&c, p, tc_tol((vg_family)f, yt));
            /* FP16 out, every pointer 16-byte aligned (N = 200, K = 384):
             * cuBLAS's grouped GEMM ran the batches, not the per-group
             * fallback, wherever the loaded cuBLAS has it */
            int loaded = 0;
            const int state = vg_cuda_dqblas_grouped_state(y16, &loaded);
            if (y16 && loaded)
                assert_int_equal(state, 1);
            float *y1 = tc_download(&c);
            float *y2 = replay_in_graph(&c, p, stream);
            assert_memory_equal(y1, y2, (size_t)c.m * c.n * 4);
            free(y1);
            free(y2);
            tc_free(&c);
        }
    vg_cuda_stream_destroy(stream);
}

/* The batched plan is offered to the runtime where VG_CUDA_DQBLAS_BATCHED
 * (or, unset, its default) says so, with a reason where not; the one-group
 * plan whatever it says. */
static void test_batched_offer_follows_env(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    int offered = 0;
    assert_int_equal(vg_cuda_blas_prepare(&offered, NULL), VG_OK);
    if (!offered) {
        vgtest_skip("the device does not offer the kind (cuBLAS or VG_CUDA_DQBLAS)");
    }
    const char *old = getenv("VG_CUDA_DQBLAS_BATCHED");
    char *saved = old ? strdup(old) : NULL;
    const vg_plan *one = dq_plan(VG_PATH_MOE), *batched = dq_plan_batched(VG_PATH_MOE, 8);
    const char *why = NULL;
    setenv("VG_CUDA_DQBLAS_BATCHED", "0", 1);
    assert_int_equal(vg_cuda_plan_offered(batched, &why), 0);
    assert_non_null(why);
    assert_non_null(strstr(why, "VG_CUDA_DQBLAS_BATCHED=1"));
    assert_int_equal(vg_cuda_plan_offered(one, NULL), 1);
    setenv("VG_CUDA_DQBLAS_BATCHED", "1", 1);
    assert_int_equal(vg_cuda_plan_offered(batched, NULL), 1);
    unsetenv("VG_CUDA_DQBLAS_BATCHED");
    assert_int_equal(vg_cuda_plan_offered(batched, NULL), VG_CUDA_DQBLAS_BATCHED_DEFAULT != 0);
    if (saved) {
        setenv("VG_CUDA_DQBLAS_BATCHED", saved, 1);
        free(saved);
    } else {
        unsetenv("VG_CUDA_DQBLAS_BATCHED");
    }
}

/* cuBLAS is loaded at run time (kernels.h vg_cuda_blas_load): where the
 * library is missing or is not cuBLAS, the loader says which library and
 * why (dlerror()).  No device needed; a CUDA build is. */
static void test_loader_says_why(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    static const char missing[] = "/nonexistent/voltgate-test/libcublas.so.99";
    assert_int_equal(vg_cuda_blas_probe(missing), VG_ERR_UNSUPPORTED);
    assert_non_null(strstr(vg_last_error(), "cuBLAS not loaded"));
    assert_non_null(strstr(vg_last_error(), missing));
    assert_non_null(strstr(vg_last_error(), "No such file"));
    /* a library that loads but is not cuBLAS: the first function missing */
    assert_int_equal(vg_cuda_blas_probe("libm.so.6"), VG_ERR_UNSUPPORTED);
    assert_non_null(strstr(vg_last_error(), "libm.so.6 has no cublasCreate_v2"));
    assert_int_equal(vg_cuda_blas_probe(""), VG_ERR_INVALID_ARG);
}

/* Without VG_CUBLAS_LIBRARY, the toolkit's cuBLAS loads by its soname
 * (the harness links the same one, so it is installed wherever the
 * suites were built). */
static void test_loader_takes_toolkit_soname(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    if (getenv("VG_CUBLAS_LIBRARY")) {
        vgtest_skip("VG_CUBLAS_LIBRARY is set");
    }
    const char *lib = NULL, *why = NULL;
    vg_status st = vg_cuda_blas_load(&lib, &why);
    if (st != VG_OK)
        print_error("cuBLAS did not load: %s\n", why);
    assert_int_equal(st, VG_OK);
    assert_non_null(strstr(lib, "libcublas.so"));
    assert_string_equal(why, "");
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_workspace_is_one_fp16_copy),
        cmocka_unit_test(test_batched_workspace_is_at_most_eight_copies),
        cmocka_unit_test(test_short_workspace_refused),
        cmocka_unit_test(test_weight_over_the_chunk_limit_refused),
        cmocka_unit_test(test_copy_edges),
        cmocka_unit_test(test_same_bits_direct_and_graph),
        cmocka_unit_test(test_groups_empty_and_large),
        cmocka_unit_test(test_batched_graph_replay),
        cmocka_unit_test(test_batched_offer_follows_env),
        cmocka_unit_test(test_loader_says_why),
        cmocka_unit_test(test_loader_takes_toolkit_soname),
    };
    return VGTEST_MAIN("cuda_dqblas", tests);
}
