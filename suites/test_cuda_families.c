/*
 * The other weight families on CUDA (fp16, awq, mxfp4, nvfp4): the same
 * generic mainloop with each family's dequantizer, every plan on every path
 * against the FP64 reference on the dequantized weights, ragged shapes
 * included.  Without a device every test is skipped.
 */
#include "test_cuda_util.h"

static void run_family(vg_family f)
{
    static const int32_t dense[][3] = {{1, 256, 384}, {7, 136, 416}, {16, 512, 1024},
                                       {40, 128, 256}, {130, 192, 512}, {24, 136, 416}};
    for (size_t i = 0; i < sizeof dense / sizeof dense[0]; i++) {
        tc_case c;
        tc_make(&c, f, VG_PATH_DENSE, dense[i][0], dense[i][1], dense[i][2], 1, NULL, 500 + i);
        assert_true(tc_run_all_plans(&c, tc_tol(f, VG_DTYPE_F32)) > 0);
        tc_free(&c);
    }
    static const int32_t counts[][4] = {{1, 1, 1, 1}, {6, 6, 6, 6}, {0, 16, 3, 0}};
    static const vg_path paths[] = {VG_PATH_GROUPED, VG_PATH_LOOP, VG_PATH_MOE};
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        for (size_t p = 0; p < 3; p++) {
            int32_t off[5];
            tc_offsets(off, counts[i], 4);
            tc_case c;
            tc_make(&c, f, paths[p], off[4], 264, 512, 4, off, 600 + i);
            assert_true(tc_run_all_plans(&c, tc_tol(f, VG_DTYPE_F32)) > 0);
            tc_free(&c);
        }
    tc_case c;
    tc_make(&c, f, VG_PATH_DENSE, 5, 256, 512, 1, NULL, 700);
    c.args.y_dtype = VG_DTYPE_F16;
    assert_true(tc_run_all_plans(&c, tc_tol(f, VG_DTYPE_F16)) > 0);
    tc_free(&c);
}

/* The plan timer on every family (codes, scales and zeros copied for its
 * rotation), on the legacy stream, dense and loop (one launch per group). */
static void test_timer_every_family(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    static const vg_family fams[] = {VG_FAMILY_FP16, VG_FAMILY_AWQ, VG_FAMILY_MXFP4,
                                     VG_FAMILY_NVFP4};
    for (size_t f = 0; f < sizeof fams / sizeof fams[0]; f++) {
        tc_case c;
        tc_make(&c, fams[f], VG_PATH_DENSE, 3, 256, 1024, 1, NULL, 800 + f);
        c.args.stream = NULL;
        tc_time_plan(&c, vg_cuda_heuristic(fams[f], VG_PATH_DENSE, 3, 256, 1024, NULL),
                     tc_tol(fams[f], VG_DTYPE_F32));
        tc_free(&c);
        int32_t cnt[3] = {2, 0, 5}, off[4];
        tc_offsets(off, cnt, 3);
        tc_make(&c, fams[f], VG_PATH_LOOP, off[3], 256, 512, 3, off, 810 + f);
        c.args.stream = NULL;
        tc_time_plan(&c, vg_cuda_heuristic(fams[f], VG_PATH_LOOP, 5, 256, 512, NULL),
                     tc_tol(fams[f], VG_DTYPE_F32));
        tc_free(&c);
    }
}

static void test_fp16_every_plan(void **state) { (void)state; VGTEST_REQUIRE_CUDA(); run_family(VG_FAMILY_FP16); }
static void test_awq_every_plan(void **state) { (void)state; VGTEST_REQUIRE_CUDA(); run_family(VG_FAMILY_AWQ); }
static void test_mxfp4_every_plan(void **state) { (void)state; VGTEST_REQUIRE_CUDA(); run_family(VG_FAMILY_MXFP4); }
static void test_nvfp4_every_plan(void **state) { (void)state; VGTEST_REQUIRE_CUDA(); run_family(VG_FAMILY_NVFP4); }

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_every_plan),
        cmocka_unit_test(test_awq_every_plan),
        cmocka_unit_test(test_mxfp4_every_plan),
        cmocka_unit_test(test_nvfp4_every_plan),
        cmocka_unit_test(test_timer_every_family),
    };
    return VGTEST_MAIN("cuda_families", tests);
}
