/*
 * `voltgate golden verify` as a program: exit codes, --json rows, --shard,
 * --plan ID, --backend cuda without a device, usage errors, and gen's
 * byte-identical output.  Runs $VG_TOOL on small committed files.
 */
#include "vgtest.h"

#include "voltgate/golden.h"

#include <cjson/cJSON.h>
#include <hdf5.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The routings of each committed <family>-moe.h5 (golden/SCHEMA.md). */
#define MOE_CASES 5

static char *g_dir;

static int setup(void **state)
{
    (void)state;
    g_dir = vgtest_mkdtemp();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    vgtest_rmtree(g_dir);
    free(g_dir);
    return 0;
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return strdup("");
    fseek(fp, 0, SEEK_END);
    long n = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *s = calloc(1, (size_t)n + 1);
    if (fread(s, 1, (size_t)n, fp) != (size_t)n)
        s[0] = '\0';
    fclose(fp);
    return s;
}

/* Runs the tool with NULL-terminated args; stdout and stderr into *out and
 * *err (malloc'ed). */
static int run(char **out, char **err, ...)
{
    const char *tool = getenv("VG_TOOL");
    if (!tool || !*tool)
        tool = "build/bin/voltgate";
    char *args[32];
    int n = 0;
    args[n++] = (char *)tool;
    va_list ap;
    va_start(ap, err);
    for (char *a; n < 31 && (a = va_arg(ap, char *));)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    char op[600], ep[600];
    snprintf(op, sizeof op, "%s/out.txt", g_dir);
    snprintf(ep, sizeof ep, "%s/err.txt", g_dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fo = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fe = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fo, 1);
        dup2(fe, 2);
        execv(tool, args);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    *out = slurp(op);
    *err = slurp(ep);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static int count_rows(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

/* --json writes the shared row format with every required key. */
static void test_json_rows(void **state)
{
    (void)state;
    char json[600];
    snprintf(json, sizeof json, "%s/rows.json", g_dir);
    char *out, *err;
    int rc = run(&out, &err, "golden", "verify", "--json", json, "golden/cases/awq-moe.h5", NULL);
    if (rc != 0)
        fail_msg("exit %d: %s", rc, err);
    char *text = slurp(json);
    cJSON *root = cJSON_Parse(text);
    assert_non_null(root);
    assert_string_equal(cJSON_GetObjectItem(root, "tool")->valuestring, "golden-verify");
    cJSON *rows = cJSON_GetObjectItem(root, "rows");
    assert_true(cJSON_IsArray(rows));
    assert_true(cJSON_GetArraySize(rows) >= 4);
    static const char *keys[] = {"case", "file", "family", "path", "m", "n", "k", "groups",
                                 "tokens", "backend", "plan", "rel_rms", "max_abs",
                                 "tol_rel_rms", "tol_max_abs", "verdict"};
    cJSON *r;
    cJSON_ArrayForEach(r, rows) {
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
            if (!cJSON_GetObjectItem(r, keys[i]))
                fail_msg("row lacks '%s'", keys[i]);
        assert_string_equal(cJSON_GetObjectItem(r, "family")->valuestring, "awq");
        assert_string_equal(cJSON_GetObjectItem(r, "path")->valuestring, "moe");
        assert_string_equal(cJSON_GetObjectItem(r, "verdict")->valuestring, "PASS");
        assert_int_equal(cJSON_GetObjectItem(r, "groups")->valueint, 8);
        assert_non_null(strstr(cJSON_GetObjectItem(r, "case")->valuestring, "awq-moe/r"));
    }
    /* the table has the same number of PASS rows */
    assert_int_equal(count_rows(out, " PASS"), cJSON_GetArraySize(rows));
    cJSON_Delete(root);
    free(text);
    free(out);
    free(err);
}

/* --shard 0/2 and 1/2 split the sorted files: together they are the
 * whole, apart they share nothing. */
static void test_shards(void **state)
{
    (void)state;
    const char *files[] = {"golden/cases/awq-moe.h5", "golden/cases/fp8-moe.h5",
                           "golden/cases/mxfp4-moe.h5"};
    char *o0, *o1, *e;
    assert_int_equal(run(&o0, &e, "golden", "verify", "--plan", "heuristic", "--shard", "0/2",
                         files[2], files[0], files[1], NULL), 0);
    free(e);
    assert_int_equal(run(&o1, &e, "golden", "verify", "--plan", "heuristic", "--shard", "1/2",
                         files[1], files[2], files[0], NULL), 0);
    free(e);
    /* sorted: awq (0), fp8 (1), mxfp4 (2) -> shard 0 has awq and mxfp4 */
    assert_int_equal(count_rows(o0, "awq-moe/"), MOE_CASES);
    assert_int_equal(count_rows(o0, "mxfp4-moe/"), MOE_CASES);
    assert_int_equal(count_rows(o0, "fp8-moe/"), 0);
    assert_int_equal(count_rows(o1, "fp8-moe/"), MOE_CASES);
    assert_int_equal(count_rows(o1, "awq-moe/"), 0);
    free(o0);
    free(o1);
    char *o;
    assert_int_equal(run(&o, &e, "golden", "verify", "--shard", "2/2", files[0], NULL), 2);
    free(o);
    free(e);
}

/* --plan ID runs only that plan; an unknown plan is a usage error. */
static void test_plan_id(void **state)
{
    (void)state;
    char *o, *e;
    assert_int_equal(run(&o, &e, "golden", "verify", "golden/cases/fp8-moe.h5", NULL), 0);
    /* take the first plan id of the table's first data row (after the
     * "backend:" line and the header) */
    char *line = strstr(o, "\ncase ");
    assert_non_null(line);
    line = strchr(line + 1, '\n');
    assert_non_null(line);
    char name[64], backend[16], plan[128];
    assert_int_equal(sscanf(line + 1, "%63s %15s %127s", name, backend, plan), 3);
    free(o);
    free(e);
    assert_int_equal(run(&o, &e, "golden", "verify", "--plan", plan, "golden/cases/fp8-moe.h5",
                         NULL), 0);
    int rows = count_rows(o, " PASS");
    assert_int_equal(rows, count_rows(o, plan));
    /* one row per case but r4, whose group of 40 rows is above the plan's
     * max_rows (cpu.grouped.m16n32k128.sk1 takes 16) */
    assert_int_equal(rows, MOE_CASES - 1);
    free(o);
    free(e);
    assert_int_equal(run(&o, &e, "golden", "verify", "--plan", "cpu.no.such.plan",
                         "golden/cases/fp8-moe.h5", NULL), 2);
    assert_non_null(strstr(e, "applies to no case"));
    free(o);
    free(e);
}

/* --plan ID,ID runs each listed plan; an id in the list that runs nowhere
 * (a typo) is named and fails the run, and an empty id is a usage error. */
static void test_plan_id_list(void **state)
{
    (void)state;
    char *o, *e;
    assert_int_equal(run(&o, &e, "golden", "verify", "golden/cases/fp8-moe.h5", NULL), 0);
    /* the plan ids of the first two data rows whose plans differ */
    char ids[2][128];
    int nids = 0;
    const char *line = strstr(o, "\ncase ");
    assert_non_null(line);
    for (line = strchr(line + 1, '\n'); line && nids < 2; line = strchr(line + 1, '\n')) {
        char name[64], backend[16], plan[128];
        if (sscanf(line + 1, "%63s %15s %127s", name, backend, plan) != 3 || strchr(plan, '('))
            continue;
        if (nids == 0 || strcmp(plan, ids[0]) != 0)
            snprintf(ids[nids++], sizeof ids[0], "%s", plan);
    }
    assert_int_equal(nids, 2);
    free(o);
    free(e);
    int alone[2];
    for (int i = 0; i < 2; i++) {
        assert_int_equal(run(&o, &e, "golden", "verify", "--plan", ids[i], "golden/cases/fp8-moe.h5",
                             NULL), 0);
        alone[i] = count_rows(o, " PASS");
        assert_true(alone[i] > 0);
        free(o);
        free(e);
    }
    char list[300];
    snprintf(list, sizeof list, "%s,%s", ids[0], ids[1]);
    assert_int_equal(run(&o, &e, "golden", "verify", "--plan", list, "golden/cases/fp8-moe.h5", NULL), 0);
    assert_int_equal(count_rows(o, " PASS"), alone[0] + alone[1]);
    assert_int_equal(count_rows(o, ids[0]), alone[0]);
    free(o);
    free(e);
    snprintf(list, sizeof list, "%s,cpu.no.such.plan", ids[0]);
    assert_int_equal(run(&o, &e, "golden", "verify", "--plan", list, "golden/cases/fp8-moe.h5", NULL), 2);
    assert_int_equal(count_rows(o, " PASS"), alone[0]);
    assert_non_null(strstr(e, "plan 'cpu.no.such.plan' applies to no case"));
    free(o);
    free(e);
    snprintf(list, sizeof list, "%s,,%s", ids[0], ids[1]);
    assert_int_equal(run(&o, &e, "golden", "verify", "--plan", list, "golden/cases/fp8-moe.h5", NULL), 2);
    assert_non_null(strstr(e, "an empty plan id"));
    free(o);
    free(e);
}

/* --backend cuda without a device: "skipped: no CUDA device", exit 77. */
static void test_cuda_absent_skips(void **state)
{
    (void)state;
    if (vgtest_have_cuda()) {
        vgtest_skip("a CUDA device is present: the absent-device path cannot be shown");
    }
    char *o, *e;
    assert_int_equal(run(&o, &e, "golden", "verify", "--backend", "cuda", "golden/cases/fp8-moe.h5",
                         NULL), 77);
    assert_non_null(strstr(o, "skipped: no CUDA device"));
    free(o);
    free(e);
    /* all = cpu, plus cuda when present */
    assert_int_equal(run(&o, &e, "golden", "verify", "--backend", "all", "golden/cases/fp8-moe.h5",
                         NULL), 0);
    assert_true(count_rows(o, " cpu ") > 0);
    free(o);
    free(e);
}

/* Usage errors exit 2 with one line; --help exits 0. */
static void test_usage(void **state)
{
    (void)state;
    char *o, *e;
    assert_int_equal(run(&o, &e, "golden", "verify", NULL), 2);
    free(o);
    free(e);
    assert_int_equal(run(&o, &e, "golden", "verify", "--backend", "tpu", "golden/cases", NULL), 2);
    assert_non_null(strstr(e, "unknown backend 'tpu'"));
    free(o);
    free(e);
    assert_int_equal(run(&o, &e, "golden", "gen", "--family", "fp9", "--path", "dense", "--n", "8",
                         "--k", "8", "-o", "x.h5", NULL), 2);
    assert_non_null(strstr(e, "unknown family 'fp9'"));
    free(o);
    free(e);
    const char *subs[] = {"gen", "verify", "import", "info"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(run(&o, &e, "golden", subs[i], "--help", NULL), 0);
        assert_non_null(strstr(o, "usage: voltgate golden"));
        free(o);
        free(e);
    }
}

/* gen twice with the same arguments: byte-identical files (cmp). */
static void test_gen_deterministic(void **state)
{
    (void)state;
    char a[600], b[600];
    snprintf(a, sizeof a, "%s/a.h5", g_dir);
    snprintf(b, sizeof b, "%s/b.h5", g_dir);
    char *o, *e;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(run(&o, &e, "golden", "gen", "--family", "awq", "--path", "moe", "--n",
                             "72", "--k", "136", "--routing", "3,0,5,1", "--routing", "0,0,9,0",
                             "--seed", "11", "-o", i ? b : a, NULL), 0);
        free(o);
        free(e);
    }
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int ca, cb;
    long n = 0;
    do {
        ca = fgetc(fa);
        cb = fgetc(fb);
        assert_int_equal(ca, cb);
        n++;
    } while (ca != EOF);
    fclose(fa);
    fclose(fb);
    assert_true(n > 1000);
    assert_int_equal(run(&o, &e, "golden", "verify", a, NULL), 0);
    assert_true(count_rows(o, " PASS") >= 2);
    assert_int_equal(count_rows(o, " FAIL"), 0);
    free(o);
    free(e);
}

/* A well-formed file whose reference is wrong (y_ref edited and the file
 * rewritten, so hashes and norm agree): every row FAILs and verify exits 1;
 * info still reads it (exit 0). */
static void test_failing_case_exits_1(void **state)
{
    (void)state;
    vg_golden_file f;
    if (vg_golden_read("golden/cases/fp16-moe.h5", &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    for (int32_t c = 0; c < f.ncases; c++)
        for (int32_t i = 0; i < f.cases[c].m * f.n; i += 7)
            f.cases[c].y_ref[i] *= 1.01f;
    char path[600];
    snprintf(path, sizeof path, "%s/wrong.h5", g_dir);
    assert_int_equal(vg_golden_write(path, &f), VG_OK);
    vg_golden_free(&f);
    char *o, *e;
    assert_int_equal(run(&o, &e, "golden", "verify", "--plan", "heuristic", path, NULL), 1);
    assert_int_equal(count_rows(o, " FAIL"), MOE_CASES);
    assert_int_equal(count_rows(o, " PASS"), 0);
    assert_non_null(strstr(o, "relative RMS error over tolerance"));
    free(o);
    free(e);
    assert_int_equal(run(&o, &e, "golden", "info", path, NULL), 0);
    assert_non_null(strstr(o, "fp16 moe N=88 K=136 groups=8"));
    free(o);
    free(e);
}

/* stderr is exactly one line holding `needle`.  (Under `make sanitize`
 * a crashing child adds AddressSanitizer's report before it: then the
 * tool's own line must be the last one and the only one of the tool.) */
static void one_line_with(const char *err, const char *needle)
{
    size_t len = strlen(err);
    if (len < 2 || err[len - 1] != '\n')
        fail_msg("stderr does not end in a line: %s", err);
    const char *last = err + len - 1;
    while (last > err && last[-1] != '\n')
        last--;
    int ours = 0;
    for (const char *p = err; (p = strstr(p, "voltgate golden ")); p++)
        if (p == err || p[-1] == '\n')   /* a line of the tool's own */
            ours++;
    int sanitizer = strstr(err, "Sanitizer") != NULL;
    if ((last != err && !sanitizer) || ours != 1 || !strstr(last, needle))
        fail_msg("stderr is not one line with '%s': %s", needle, err);
}

#define UAF_FILE "suites/fuzz/regressions/fuzz_golden/hdf5_uaf_attr_exists"

/* A copy of src in the suite's folder (seal writes in place). */
static void copy_to(const char *src, char *dst, size_t len, const char *name)
{
    snprintf(dst, len, "%s/%s", g_dir, name);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp %s %s", src, dst);
    assert_int_equal(system(cmd), 0);
}

/* A file on which libhdf5 1.10.8 has a use-after-free (under H5Aexists;
 * found by fuzz_golden) is unsealed: verify and info refuse it with one
 * line before HDF5 reads it.  `golden seal` must parse it, and does so in a
 * child first: exit 2 with one line instead of dying by SIGSEGV, and the
 * file is left as it was.  (Where the damaged read happens not to crash,
 * the child refuses the file normally: either way exit 2, one line.) */
static void test_hdf5_crash_is_a_damaged_file(void **state)
{
    (void)state;
    static const char *const cmds[] = {"info", "verify"};
    for (int i = 0; i < 2; i++) {
        char *o, *e;
        int rc = run(&o, &e, "golden", cmds[i], UAF_FILE, NULL);
        print_message("  golden %s: exit %d: %s", cmds[i], rc, e);
        if (rc != 2)
            fail_msg("golden %s: exit %d (128: killed by a signal), want 2", cmds[i], rc);
        one_line_with(e, UAF_FILE ": no voltgate seal");
        char want[64];
        snprintf(want, sizeof want, "voltgate golden %s: ", cmds[i]);
        assert_non_null(strstr(e, want));
        free(o);
        free(e);
    }
    /* the run goes on with the next file */
    char *o, *e;
    int rc = run(&o, &e, "golden", "verify", "--plan", "heuristic", UAF_FILE,
                 "golden/cases/awq-moe.h5", NULL);
    assert_int_equal(rc, 2);
    one_line_with(e, UAF_FILE ": ");
    assert_non_null(strstr(o, "5 row(s): 5 passed, 0 failed; some files could not be used"));
    free(o);
    free(e);
    /* seal parses it, in a child */
    char copy[700], cmd[1600];
    copy_to(UAF_FILE, copy, sizeof copy, "uaf.h5");
    rc = run(&o, &e, "golden", "seal", copy, NULL);
    print_message("  golden seal: exit %d: %s", rc, e);
    if (rc != 2)
        fail_msg("golden seal: exit %d (128: killed by a signal), want 2", rc);
    one_line_with(e, "voltgate golden seal: ");
    if (strstr(e, "damaged file"))
        assert_non_null(strstr(e, "damaged file (the HDF5 library crashed reading it: signal "));
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", UAF_FILE, copy);
    assert_int_equal(system(cmd), 0);
    free(o);
    free(e);
}

/* A refusal found in the child comes up the pipe as the reader's line. */
static void test_child_refusal_message(void **state)
{
    (void)state;
    char copy[700];
    copy_to("suites/fuzz/regressions/fuzz_golden/dup_case_name", copy, sizeof copy, "dup.h5");
    char *o, *e;
    int rc = run(&o, &e, "golden", "seal", copy, NULL);
    assert_int_equal(rc, 2);
    char want[900];
    snprintf(want, sizeof want, "voltgate golden seal: %s: group 'cases' lists the case name "
                                "'t02' twice", copy);
    one_line_with(e, want);
    free(o);
    free(e);
}

/* The child of `seal` rebuilds recipe weights, as verify's read does, so an
 * edit that makes the recipe stale is refused before it is sealed: the file
 * keeps the seal it had, which no longer seals it (verify says so). */
static void test_recipe_through_the_child(void **state)
{
    (void)state;
    char path[600];
    snprintf(path, sizeof path, "%s/recipe.h5", g_dir);
    char *o, *e;
    assert_int_equal(run(&o, &e, "golden", "gen", "--family", "fp8", "--path", "grouped", "--n",
                         "136", "--k", "200", "--groups", "2", "--tokens", "2", "--recipe",
                         "-o", path, NULL), 0);
    free(o);
    free(e);
    assert_int_equal(run(&o, &e, "golden", "info", path, NULL), 0);
    assert_non_null(strstr(o, "weights=recipe"));
    free(o);
    free(e);
    /* another seed: the rebuilt weight no longer matches the hashes */
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    hid_t fid = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(fid >= 0);
    hid_t a = H5Aopen(fid, "seed", H5P_DEFAULT);
    uint64_t seed = 2;
    assert_true(H5Awrite(a, H5T_NATIVE_UINT64, &seed) >= 0);
    H5Aclose(a);
    H5Fclose(fid);
    size_t len_before = 0;
    char *before = vgtest_read_file(path, &len_before);
    assert_int_equal(run(&o, &e, "golden", "seal", path, NULL), 2);
    one_line_with(e, "recipe weight 'w_q': the regenerated data");
    free(o);
    free(e);
    size_t len = 0;
    char *after = vgtest_read_file(path, &len);
    assert_int_equal(len, len_before);
    assert_memory_equal(before, after, len); /* not sealed, not rewritten */
    free(before);
    free(after);
    assert_int_equal(run(&o, &e, "golden", "verify", path, NULL), 2);
    one_line_with(e, "seal");
    free(o);
    free(e);
}

/* --case reproduces one row of a report: only the matching case's rows run
 * into the output and the verdict; a pattern matching nothing is an error. */
static void test_case_filter(void **state)
{
    (void)state;
    char *o, *e;
    assert_int_equal(run(&o, &e, "golden", "verify", "--backend", "cpu", "--plan", "heuristic",
                         "golden/cases/fp8-moe.h5", "--case", "fp8-moe/r1", NULL), 0);
    assert_non_null(strstr(o, "fp8-moe/r1 "));
    assert_null(strstr(o, "fp8-moe/r0 "));
    assert_non_null(strstr(o, "1 row(s): 1 passed, 0 failed"));
    free(o);
    free(e);
    assert_int_equal(run(&o, &e, "golden", "verify", "golden/cases/fp8-moe.h5", "--case", "nope*",
                         NULL), 2);
    assert_non_null(strstr(e, "--case 'nope*' matches no case"));
    free(o);
    free(e);
}

int main(int argc, char **argv)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_json_rows),
        T(test_shards),
        T(test_plan_id),
        T(test_plan_id_list),
        T(test_cuda_absent_skips),
        T(test_usage),
        T(test_gen_deterministic),
        T(test_failing_case_exits_1),
        T(test_hdf5_crash_is_a_damaged_file),
        T(test_child_refusal_message),
        T(test_recipe_through_the_child),
        T(test_case_filter),
    };
    return VGTEST_MAIN("golden_cli", tests);
}
