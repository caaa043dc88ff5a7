/*
 * The runtime where cuBLAS does not load (issue 31): libvoltgate loads
 * cuBLAS at run time, and this suite points VG_CUBLAS_LIBRARY at a file
 * that does not exist before anything loads it (main), which is what a
 * machine without cuBLAS looks like.  Then the loader says which library
 * and why (no device needed), and on a device: the backend opens, the
 * dequantize + cuBLAS plans are not offered (not measured, not chosen by
 * the rule, not counted in vg_gemm_workspace_bytes), the trace says why,
 * and the plan forced by id returns VG_ERR_UNSUPPORTED.  Its own process:
 * the loader runs once per process.
 */
#include <stdlib.h>
#include <string.h>

#include "test_decision_util.h"

#define NOWHERE "/nonexistent/voltgate-test/libcublas.so.0"

static const vg_plan *dq_plan(vg_path path)
{
    for (size_t i = 0; i < vg_cuda_plan_count(); i++) {
        const vg_plan *p = vg_cuda_plan_at(i);
        if (p->kind == VG_KIND_DEQUANT_BLAS && p->path == path)
            return p;
    }
    return NULL;
}

static void test_loader_names_library_and_error(void **state)
{
    (void)state;
    if (vg_cuda_plan_count() == 0) {
        vgtest_skip("built without CUDA");
    }
    const char *lib = NULL, *why = NULL;
    assert_int_equal(vg_cuda_blas_load(&lib, &why), VG_ERR_UNSUPPORTED);
    assert_string_equal(lib, NOWHERE);
    assert_non_null(strstr(why, "cuBLAS not loaded (VG_CUBLAS_LIBRARY): " NOWHERE));
    assert_non_null(strstr(why, "No such file"));
    assert_non_null(strstr(vg_last_error(), NOWHERE));
    /* asked again: the same answer, nothing retried */
    const char *why2 = NULL;
    assert_int_equal(vg_cuda_blas_load(NULL, &why2), VG_ERR_UNSUPPORTED);
    assert_ptr_equal(why2, why);
}

static void test_kind_not_offered_without_cublas(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    enum { N = 256, K = 4096, MID = 128, BIG = 4096 };
    const vg_plan *dense = dq_plan(VG_PATH_DENSE), *grouped = dq_plan(VG_PATH_GROUPED);
    assert_non_null(dense);
    assert_non_null(grouped);
    char *dir = vgtest_mkdtemp();
    char trace[600];
    snprintf(trace, sizeof trace, "%s/trace", dir);
    vg_device *dev = NULL;
    vg_status st = vg_device_open("cuda", 0, &dev);
    if (st != VG_OK)
        print_error("open: %s\n", vg_last_error());
    assert_int_equal(st, VG_OK);
    assert_int_equal(vg_trace_set(dev, trace), VG_OK);

    const char *why = NULL;
    assert_int_equal(vg_cuda_plan_offered(dense, &why), 0);
    assert_non_null(why);
    assert_non_null(strstr(why, NOWHERE));
    assert_int_equal(vg_cuda_plan_offered(grouped, NULL), 0);

    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, BIG);
    /* measured: every plan but the kind is timed */
    vg_gemm_args mid = layer_call(&l, MID);
    vg_dispatch_info info = gemm_ok(dev, &mid);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);
    assert_int_not_equal(info.plan->kind, VG_KIND_DEQUANT_BLAS);
    const uint64_t mid_policy = info.policy_hash;
    /* the rule, at rows where it takes the kind wherever it is offered */
    vg_config *off = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":false}}}");
    vg_gemm_args big = layer_call(&l, BIG);
    assert_int_equal(vg_policy_enter(dev, off), VG_OK);
    info = gemm_ok(dev, &big);
    assert_int_equal(info.decision, VG_DECISION_HEURISTIC);
    assert_int_not_equal(info.plan->kind, VG_KIND_DEQUANT_BLAS);
    /* the workspace asked for leaves out the FP16 copy */
    size_t bytes = 0, dq_bytes = 0;
    assert_int_equal(vg_gemm_workspace_bytes(dev, &big, &bytes), VG_OK);
    assert_int_equal(vg_cuda_workspace_bytes(dense, &big, &dq_bytes), VG_OK);
    assert_true(bytes < dq_bytes);
    assert_int_equal(vg_policy_leave(), VG_OK);
    vg_config_free(off);
    /* forced by id: an error that says why, nothing launched */
    assert_int_equal(vg_gemm_with_plan(dev, dense->id, &big), VG_ERR_UNSUPPORTED);
    assert_non_null(strstr(vg_last_error(), "cuBLAS not loaded"));
    assert_non_null(strstr(vg_last_error(), NOWHERE));
    assert_int_equal(vg_device_synchronize(dev, NULL), VG_OK);

    char *text = slurp(trace);
    assert_non_null(strstr(text, "vg-trace-offer backend=cuda device=0 kind=dequant+cublas offered=0 "
                                 "why=dequant+cublas: cuBLAS not loaded (VG_CUBLAS_LIBRARY): " NOWHERE));
    char want[300];
    snprintf(want, sizeof want,
             "m=%d n=%d k=%d groups=1 policy=%016llx plan=%s us=none status=%d why=not offered: "
             "dequant+cublas: cuBLAS not loaded (VG_CUBLAS_LIBRARY): " NOWHERE,
             MID, N, K, (unsigned long long)mid_policy, dense->id, (int)VG_ERR_UNSUPPORTED);
    assert_non_null(strstr(text, want));
    free(text);
    layer_close(&l);
    vg_device_close(dev);
    vgtest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    /* before anything loads cuBLAS: the loader reads it once per process */
    setenv("VG_CUBLAS_LIBRARY", NOWHERE, 1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loader_names_library_and_error),
        cmocka_unit_test(test_kind_not_offered_without_cublas),
    };
    return VGTEST_MAIN("cuda_no_cublas", tests);
}
