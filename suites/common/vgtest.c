/* nftw() and struct FTW are XSI: ask for them before any header. */
#define _XOPEN_SOURCE 700
#include "vgtest.h"

#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels.h"

/* The group and test that run now, for vgtest_skip_reason(): cmocka does not
 * tell a test its name, so every test goes through name_then_setup(). */
static const char *current_group = "?";
static const char *current_test = "?";

/* Each wrapped test's initial state is its original entry: note its name,
 * then hand over the original initial state and setup. */
static int name_then_setup(void **state)
{
    const struct CMUnitTest *original = *state;
    current_test = original->name;
    *state = original->initial_state;
    return original->setup_func ? original->setup_func(state) : 0;
}

void vgtest_skip_reason(const char *fmt, ...)
{
    char reason[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(reason, sizeof reason, fmt, ap);
    va_end(ap);
    /* One line per skip in the log: no tab or newline inside the reason. */
    for (char *c = reason; *c; c++)
        if (*c == '\t' || *c == '\n' || *c == '\r')
            *c = ' ';
    print_message("skipped: %s\n", reason);
    const char *log_path = getenv("VGTEST_SKIP_LOG");
    FILE *log = log_path && *log_path ? fopen(log_path, "a") : NULL;
    if (log) {
        fprintf(log, "%s\t%s\t%s\n", current_group, current_test, reason);
        fclose(log);
    }
}

int vgtest_main(const char *group, const struct CMUnitTest *tests, size_t n, int argc,
                char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--filter") == 0 && i + 1 < argc) {
            cmocka_set_test_filter(argv[++i]);
        } else if (strcmp(argv[i], "--help") == 0) {
            printf("usage: %s [--filter PATTERN]\n", argv[0]);
            return 0;
        } else {
            fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", argv[0], argv[i]);
            return 2;
        }
    }
    struct CMUnitTest *wrapped = calloc(n ? n : 1, sizeof *wrapped);
    if (!wrapped) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        wrapped[i] = tests[i];
        wrapped[i].setup_func = name_then_setup;
        wrapped[i].initial_state = (void *)&tests[i];
    }
    current_group = group;
    int failed = _cmocka_run_group_tests(group, wrapped, n, NULL, NULL);
    free(wrapped);
    return failed;
}

void vgtest_assert_near_impl(double x, double want, double tol, const char *expr,
                             const char *file, int line)
{
    if (!isfinite(x)) {
        print_error("%s is %g, not a finite number\n", expr, x);
        _fail(file, line);
    }
    if (!(fabs(x - want) <= tol)) {
        print_error("%s = %.9g, want %.9g within %.3g (off by %.3g)\n", expr, x, want, tol,
                    fabs(x - want));
        _fail(file, line);
    }
}

int vgtest_have_cuda(void)
{
    int count = 0;
    return vg_cuda_device_count(&count) == VG_OK && count > 0;
}

void *vgtest_read_file(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        fail_msg("cannot open %s", path);
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, fp), (size_t)n);
    fclose(fp);
    buf[n] = '\0';
    *len = (size_t)n;
    return buf;
}

char *vgtest_mkdtemp(void)
{
    const char *base = getenv("TMPDIR");
    char buf[512];
    snprintf(buf, sizeof buf, "%s/vgtest.XXXXXX", base && *base ? base : "/tmp");
    char *dir = mkdtemp(buf);
    assert_non_null(dir);
    return strdup(dir);
}

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

void vgtest_rmtree(const char *path)
{
    if (path)
        nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
