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
                                       {40, 128, 256}, {130, 192, 512}};
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
    };
    return VGTEST_MAIN("cuda_families", tests);
}
