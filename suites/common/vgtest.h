/*
 * Shared helpers for the cmocka suites.
 *
 * cmocka 1.1's assert_float_equal passes on NaN, so every numeric check goes
 * through vgtest_assert_near(), which fails on NaN or infinity first.
 */
#ifndef VOLTGATE_VGTEST_H
#define VOLTGATE_VGTEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

/* Runs one cmocka group.  Takes `--filter PATTERN` (cmocka's * and ?) from
 * argv, so `build/suites/test_x --filter 'lut_*'` runs part of a suite. */
int vgtest_main(const char *group, const struct CMUnitTest *tests, size_t n, int argc,
                char **argv);
#define VGTEST_MAIN(group, tests) \
    vgtest_main(group, tests, sizeof(tests) / sizeof((tests)[0]), argc, argv)

/* Fails when x is NaN/inf or |x - want| > tol. */
#define vgtest_assert_near(x, want, tol) \
    vgtest_assert_near_impl((double)(x), (double)(want), (double)(tol), #x, __FILE__, __LINE__)
void vgtest_assert_near_impl(double x, double want, double tol, const char *expr,
                             const char *file, int line);

/* Skips the running test and says why: "skipped: REASON" on stdout and a
 * line "GROUP<TAB>TEST<TAB>REASON" appended to $VGTEST_SKIP_LOG, from which
 * suites/run.py puts the reason into the JUnit <skipped message=...>.  A bare
 * cmocka skip() has no reason, and the runner reports it as a skip without
 * one. */
#define vgtest_skip(...)                   \
    do {                                   \
        vgtest_skip_reason(__VA_ARGS__);   \
        skip();                            \
    } while (0)
void vgtest_skip_reason(const char *fmt, ...) CMOCKA_PRINTF_ATTRIBUTE(1, 2);

/* Non-zero when a CUDA device is present and the build has CUDA.  GPU tests
 * call VGTEST_REQUIRE_CUDA() first: without a device they are reported as
 * skipped ("skipped: no CUDA device"), never as passed. */
int vgtest_have_cuda(void);
#define VGTEST_REQUIRE_CUDA()                   \
    do {                                        \
        if (!vgtest_have_cuda())                \
            vgtest_skip("no CUDA device");      \
    } while (0)

/* The whole file at path (malloc'ed, one NUL byte past *len); fails the
 * test when it cannot be read. */
void *vgtest_read_file(const char *path, size_t *len);

/* A fresh folder under $TMPDIR for one test; removed by vgtest_rmtree(). */
char *vgtest_mkdtemp(void);
void vgtest_rmtree(const char *path);

#endif
