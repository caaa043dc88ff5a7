/*
 * golden import and the safetensors reader: the tests write small
 * safetensors files themselves (header JSON by hand), import them and check
 * the case against values computed here; every header defect is refused
 * with its own message, in memory (vg_st_parse) and from a file.
 */
#include "vgtest.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "safetensors.h"
#include "voltgate/formats.h"
#include "voltgate/golden.h"
#include "voltgate/runtime.h"

/* Writes header JSON + data as a safetensors file. */
static void write_st(const char *path, const char *json, const void *data, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    uint64_t n = strlen(json);
    uint8_t b8[8];
    for (int i = 0; i < 8; i++)
        b8[i] = (uint8_t)(n >> (8 * i));
    fwrite(b8, 1, 8, fp);
    fwrite(json, 1, (size_t)n, fp);
    if (len)
        fwrite(data, 1, len, fp);
    fclose(fp);
}

/* The same as bytes in memory (malloc'ed). */
static uint8_t *mem_st(const char *json, size_t data_len, size_t *size)
{
    uint64_t n = strlen(json);
    *size = 8 + (size_t)n + data_len;
    uint8_t *b = calloc(1, *size);
    for (int i = 0; i < 8; i++)
        b[i] = (uint8_t)(n >> (8 * i));
    memcpy(b + 8, json, (size_t)n);
    return b;
}

static void verify_cpu(const vg_golden_file *f)
{
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open("cpu", 0, &dev), VG_OK);
    vg_golden_verify_opts o = {"cpu", "all"};
    int ran = 0, failed = 0;
    assert_int_equal(vg_golden_verify_file(dev, "import", f, &o, NULL, NULL, &ran, &failed), VG_OK);
    assert_true(ran > 0);
    assert_int_equal(failed, 0);
    vg_device_close(dev);
}

/* A DeepSeek-style F8_E4M3 weight [130][200] with its F32 weight_scale_inv
 * [2][2] is taken as is: codes and scales byte-identical, w_dequant equal
 * to code * scale decoded here, and the case verifies. */
static void test_import_fp8_deepseek(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    enum { N = 130, K = 200, SR = 2, SC = 2 };
    size_t qb = N * K, sb = SR * SC * 4;
    uint8_t *data = malloc(qb + sb);
    for (size_t i = 0; i < qb; i++) {
        uint8_t c = (uint8_t)((i * 37 + 11) & 0xFF);
        if ((c & 0x7F) == 0x7F) /* no NaN codes */
            c ^= 1;
        data[i] = c;
    }
    float scales[SR * SC] = {0.001f, 0.0005f, 0.002f, 0.00025f};
    memcpy(data + qb, scales, sb);
    char json[512];
    snprintf(json, sizeof json,
             "{\"__metadata__\":{\"format\":\"pt\"},"
             "\"model.layers.0.self_attn.o_proj.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[%d,%d],"
             "\"data_offsets\":[0,%zu]},"
             "\"model.layers.0.self_attn.o_proj.weight_scale_inv\":{\"dtype\":\"F32\","
             "\"shape\":[%d,%d],\"data_offsets\":[%zu,%zu]}}",
             N, K, qb, SR, SC, qb, qb + sb);
    char st[512], out[512];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    snprintf(out, sizeof out, "%s/o_proj.h5", dir);
    write_st(st, json, data, qb + sb);

    vg_golden_import_args a;
    memset(&a, 0, sizeof a);
    a.safetensors = st;
    a.weight = "model.layers.0.self_attn.o_proj.weight";
    a.tokens = 3;
    a.seed = 4;
    vg_golden_file f;
    if (vg_golden_import(&a, &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    assert_int_equal(f.family, VG_FAMILY_FP8);
    assert_int_equal(f.n, N);
    assert_int_equal(f.k, K);
    assert_memory_equal(f.w_q, data, qb);
    assert_memory_equal(f.w_scale, scales, sb);
    for (int n = 0; n < N; n++)
        for (int k = 0; k < K; k++)
            assert_true(f.w_dequant[n * K + k] ==
                        vg_e4m3_to_f32(data[n * K + k]) * scales[(n / 128) * SC + k / 128]);
    assert_int_equal(f.cases[0].m, 3);
    assert_non_null(strstr(f.source, "o_proj.weight"));
    verify_cpu(&f);
    /* written and read back through the schema */
    assert_int_equal(vg_golden_write(out, &f), VG_OK);
    vg_golden_free(&f);
    assert_int_equal(vg_golden_read(out, &f), VG_OK);
    assert_memory_equal(f.w_q, data, qb);
    vg_golden_free(&f);
    free(data);
    vgtest_rmtree(dir);
    free(dir);
}

/* A BF16 weight quantized to awq: the dequantized weight is within half a
 * quantization step of the original everywhere, and the case verifies. A
 * rank-3 F16 weight becomes a grouped case. */
static void test_import_bf16_awq_and_grouped_f16(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    enum { N = 40, K = 136 };
    uint16_t w[N * K];
    float orig[N * K];
    for (int i = 0; i < N * K; i++) {
        float v = (float)sin(i * 0.37) * 0.05f;
        w[i] = vg_f32_to_bf16(v);
        orig[i] = vg_bf16_to_f32(w[i]);
    }
    char json[256], st[512];
    snprintf(json, sizeof json, "{\"w\":{\"dtype\":\"BF16\",\"shape\":[%d,%d],\"data_offsets\":[0,%d]}}",
             N, K, N * K * 2);
    snprintf(st, sizeof st, "%s/bf16.safetensors", dir);
    write_st(st, json, w, sizeof w);
    vg_golden_import_args a;
    memset(&a, 0, sizeof a);
    a.safetensors = st;
    a.weight = "w";
    a.tokens = 2;
    /* no --family: refused, naming the fix */
    vg_golden_file f;
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "--family"));
    a.have_family = 1;
    a.family = VG_FAMILY_AWQ;
    if (vg_golden_import(&a, &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    assert_int_equal(f.family, VG_FAMILY_AWQ);
    /* per row, per 128 along K: step = (max - min) / 15 at most */
    for (int n = 0; n < N; n++)
        for (int g0 = 0; g0 < K; g0 += 128) {
            float lo = 0, hi = 0;
            for (int k = g0; k < K && k < g0 + 128; k++) {
                lo = fminf(lo, orig[n * K + k]);
                hi = fmaxf(hi, orig[n * K + k]);
            }
            float step = (hi - lo) / 15.0f;
            for (int k = g0; k < K && k < g0 + 128; k++)
                assert_true(fabsf(f.w_dequant[n * K + k] - orig[n * K + k]) <= 0.51f * step * 1.01f);
        }
    verify_cpu(&f);
    vg_golden_free(&f);

    /* rank 3: [2][N][K] F16 as grouped, 3 tokens per group */
    enum { G = 2 };
    uint16_t *h = malloc(G * N * K * 2);
    for (int i = 0; i < G * N * K; i++)
        h[i] = vg_f32_to_fp16((float)cos(i * 0.11) * 0.03f);
    snprintf(json, sizeof json, "{\"experts\":{\"dtype\":\"F16\",\"shape\":[%d,%d,%d],\"data_offsets\":[0,%d]}}",
             G, N, K, G * N * K * 2);
    write_st(st, json, h, (size_t)G * N * K * 2);
    a.weight = "experts";
    a.family = VG_FAMILY_NVFP4;
    a.tokens = 3;
    a.path = VG_PATH_DENSE;
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_INVALID_ARG); /* groups need a grouped path */
    a.path = VG_PATH_GROUPED;
    if (vg_golden_import(&a, &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    assert_int_equal(f.groups, G);
    assert_int_equal(f.cases[0].m, G * 3);
    assert_int_equal(f.cases[0].offsets[1], 3);
    verify_cpu(&f);
    vg_golden_free(&f);
    free(h);
    vgtest_rmtree(dir);
    free(dir);
}

/* Import-level refusals: F8 weight without its scale, a scale of the wrong
 * shape, F8 asked as another family, an unsupported dtype, rank 1, NaN. */
static void test_import_refusals(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[512];
    snprintf(st, sizeof st, "%s/x.safetensors", dir);
    uint8_t data[64 * 16 + 64];
    memset(data, 0x38, sizeof data); /* E4M3 1.0 */
    float one = 1.0f;
    memcpy(data + 64 * 16, &one, 4);
    vg_golden_import_args a;
    memset(&a, 0, sizeof a);
    a.safetensors = st;
    a.weight = "w";
    a.tokens = 1;
    vg_golden_file f;

    write_st(st, "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[64,16],\"data_offsets\":[0,1024]}}", data, 1024);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_NOT_FOUND);
    assert_non_null(strstr(vg_last_error(), "w_scale_inv"));

    write_st(st, "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[64,16],\"data_offsets\":[0,1024]},"
                 "\"w_scale_inv\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[1024,1032]}}",
             data, 1032);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_FORMAT);
    assert_non_null(strstr(vg_last_error(), "must be F32 [1][1]"));

    write_st(st, "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[64,16],\"data_offsets\":[0,1024]},"
                 "\"w_scale_inv\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[1024,1028]}}",
             data, 1028);
    a.have_family = 1;
    a.family = VG_FAMILY_AWQ;
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    a.have_family = 0;
    assert_int_equal(vg_golden_import(&a, &f), VG_OK); /* the good one imports */
    vg_golden_free(&f);

    write_st(st, "{\"w\":{\"dtype\":\"I32\",\"shape\":[16,16],\"data_offsets\":[0,1024]}}", data, 1024);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    assert_non_null(strstr(vg_last_error(), "I32"));

    write_st(st, "{\"w\":{\"dtype\":\"F32\",\"shape\":[256],\"data_offsets\":[0,1024]}}", data, 1024);
    a.have_family = 1;
    a.family = VG_FAMILY_FP8;
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    assert_non_null(strstr(vg_last_error(), "rank 1"));

    float nan_w[16];
    for (int i = 0; i < 16; i++)
        nan_w[i] = i == 5 ? NAN : 0.5f;
    write_st(st, "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,8],\"data_offsets\":[0,64]}}", nan_w, 64);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_FORMAT);
    assert_non_null(strstr(vg_last_error(), "element 5 is not finite"));

    a.weight = "nope";
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_NOT_FOUND);
    assert_non_null(strstr(vg_last_error(), "no tensor named 'nope'"));
    vgtest_rmtree(dir);
    free(dir);
}

/* Each header defect, in memory: status and message. */
static void expect_parse(const char *json, size_t data_len, const char *needle)
{
    size_t size;
    uint8_t *b = mem_st(json, data_len, &size);
    vg_safetensors *st = NULL;
    vg_status s = vg_st_parse(b, size, &st);
    if (s == VG_OK)
        fail_msg("accepted: %s", json);
    assert_int_equal(s, VG_ERR_FORMAT);
    if (!strstr(vg_last_error(), needle))
        fail_msg("message '%s' lacks '%s'", vg_last_error(), needle);
    assert_null(st);
    free(b);
}

static void test_header_defects(void **state)
{
    (void)state;
    expect_parse("[1,2]", 0, "not a JSON object");
    expect_parse("{\"a\":", 0, "not valid JSON");
    expect_parse("{\"a\":{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,2]}}", 2,
                 "unknown dtype 'F17'");
    expect_parse("{\"a\":{\"dtype\":\"F16\",\"shape\":[3],\"data_offsets\":[0,4]}}", 4,
                 "shape holds 3 elements of 2 bytes but data_offsets span 4 bytes");
    expect_parse("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}", 3,
                 "outside the data section of 3 bytes");
    expect_parse("{\"a\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[4,0]}}", 8,
                 "outside the data section");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                 "\"b\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[2,6]}}", 6, "overlap");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[0,4]},"
                 "\"a\":{\"dtype\":\"U8\",\"shape\":[4],\"data_offsets\":[4,8]}}", 8, "listed twice");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[-4],\"data_offsets\":[0,4]}}", 4,
                 "shape[0] is not a non-negative integer");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
                 "shape[0] is not a non-negative integer");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[4]}}", 4, "needs \"dtype\"");
    expect_parse("{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}",
                 4, "overflows");
    expect_parse("{\"__metadata__\":{\"k\":1}}", 0, "__metadata__.k is not a string");
    expect_parse("{\"a\":7}", 0, "entry is not an object");

    /* header length: larger than the file, absurd, or a file too short */
    uint8_t b[16] = {0};
    vg_safetensors *st = NULL;
    b[0] = 100;
    assert_int_equal(vg_st_parse(b, sizeof b, &st), VG_ERR_FORMAT);
    assert_non_null(strstr(vg_last_error(), "runs past the end"));
    memset(b, 0xFF, 8);
    assert_int_equal(vg_st_parse(b, sizeof b, &st), VG_ERR_FORMAT);
    assert_non_null(strstr(vg_last_error(), "not sane"));
    assert_int_equal(vg_st_parse(b, 5, &st), VG_ERR_FORMAT);
    assert_non_null(strstr(vg_last_error(), "too short"));

    /* and a good one parses, empty tensors and metadata included */
    size_t size;
    uint8_t *ok = mem_st("{\"__metadata__\":{\"format\":\"pt\"},\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],"
                         "\"data_offsets\":[0,0]},\"a\":{\"dtype\":\"BF16\",\"shape\":[2,2],"
                         "\"data_offsets\":[0,8]}}", 8, &size);
    assert_int_equal(vg_st_parse(ok, size, &st), VG_OK);
    assert_int_equal(st->count, 2);
    const vg_st_tensor *t;
    assert_int_equal(vg_st_find(st, "a", &t), VG_OK);
    assert_int_equal(t->dtype, VG_ST_BF16);
    assert_int_equal(t->rank, 2);
    vg_st_close(st);
    free(ok);
}

/* The CLI: a good import writes a file that verify passes; a broken header
 * exits 2 with one line. */
static int run_tool(const char *dir, char *const args[], char **err)
{
    const char *tool = getenv("VG_TOOL");
    if (!tool || !*tool)
        tool = "build/bin/voltgate";
    char errpath[600];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fe = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fo = open("/dev/null", O_WRONLY);
        dup2(fe, 2);
        dup2(fo, 1);
        execv(tool, args);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    FILE *fp = fopen(errpath, "rb");
    char buf[2048] = "";
    size_t n = fp ? fread(buf, 1, sizeof buf - 1, fp) : 0;
    buf[n] = '\0';
    if (fp)
        fclose(fp);
    *err = strdup(buf);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void test_cli_import(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[512], out[512];
    snprintf(st, sizeof st, "%s/m.safetensors", dir);
    snprintf(out, sizeof out, "%s/m.h5", dir);
    float w[32 * 64];
    for (int i = 0; i < 32 * 64; i++)
        w[i] = (float)((i * 7919) % 255 - 127) / 1024.0f;
    write_st(st, "{\"w\":{\"dtype\":\"F32\",\"shape\":[32,64],\"data_offsets\":[0,8192]}}", w, sizeof w);
    const char *tool = getenv("VG_TOOL");
    char *t = (char *)(tool && *tool ? tool : "build/bin/voltgate");
    char *err = NULL;
    char *imp[] = {t, "golden", "import", "--safetensors", st, "--weight", "w", "--family", "mxfp4",
                   "--tokens", "5", "-o", out, NULL};
    int rc = run_tool(dir, imp, &err);
    if (rc != 0)
        fail_msg("import exit %d: %s", rc, err);
    free(err);
    char *ver[] = {t, "golden", "verify", out, NULL};
    rc = run_tool(dir, ver, &err);
    if (rc != 0)
        fail_msg("verify exit %d: %s", rc, err);
    free(err);
    /* a header claiming more bytes than the file holds */
    write_st(st, "{\"w\":{\"dtype\":\"F32\",\"shape\":[32,64],\"data_offsets\":[0,8196]}}", w, sizeof w);
    rc = run_tool(dir, imp, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "outside the data section"));
    assert_true(strchr(err, '\n') && strchr(err, '\n')[1] == '\0');
    free(err);
    vgtest_rmtree(dir);
    free(dir);
}

/* Writers refuse what their own reader refuses, before the work: an
 * all-1e38 weight (its reference overflows, so no finite tolerance), an
 * all-zero weight (named by file), a generated weight past the dataset
 * bound (at once, not after building a gigabyte), a file with a non-finite
 * tolerance handed to the writer. */
static void test_writers_refuse_what_reader_refuses(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[512], out[512];
    snprintf(st, sizeof st, "%s/big.safetensors", dir);
    snprintf(out, sizeof out, "%s/out.h5", dir);
    static float w[16 * 128];
    for (int i = 0; i < 16 * 128; i++)
        w[i] = 1e38f;
    const char *hdr = "{\"w\":{\"dtype\":\"F32\",\"shape\":[16,128],\"data_offsets\":[0,8192]}}";
    write_st(st, hdr, w, sizeof w);
    vg_golden_import_args a;
    memset(&a, 0, sizeof a);
    a.safetensors = st;
    a.weight = "w";
    a.tokens = 1;
    a.have_family = 1;
    a.family = VG_FAMILY_FP8;
    vg_golden_file f;
    vg_status s = vg_golden_import(&a, &f);
    if (s == VG_OK) {
        s = vg_golden_write(out, &f);
        vg_golden_free(&f);
    }
    print_message("  1e38 weight -> %s: %s\n", vg_status_str(s), vg_last_error());
    assert_int_not_equal(s, VG_OK);
    assert_non_null(strstr(vg_last_error(), st));
    assert_int_equal(access(out, F_OK), -1);

    memset(w, 0, sizeof w);
    write_st(st, hdr, w, sizeof w);
    s = vg_golden_import(&a, &f);
    print_message("  zero weight -> %s: %s\n", vg_status_str(s), vg_last_error());
    assert_int_not_equal(s, VG_OK);
    assert_non_null(strstr(vg_last_error(), "all-zero"));
    assert_non_null(strstr(vg_last_error(), st));

    int32_t m = 1;
    vg_golden_gen_args g = {.family = VG_FAMILY_FP8, .path = VG_PATH_DENSE, .n = 8200,
                            .k = 8192, .m_list = &m, .m_count = 1, .seed = 1};
    assert_int_equal(vg_golden_generate(&g, &f), VG_ERR_LIMIT);
    assert_non_null(strstr(vg_last_error(), "w_dequant"));

    /* A good file with its tolerance made infinite: the writer refuses. */
    g.n = 64;
    g.k = 128;
    assert_int_equal(vg_golden_generate(&g, &f), VG_OK);
    f.cases[0].tol_max_abs = INFINITY;
    assert_int_not_equal(vg_golden_write(out, &f), VG_OK);
    assert_non_null(strstr(vg_last_error(), "tol_max_abs"));
    assert_int_equal(access(out, F_OK), -1);
    vg_golden_free(&f);
    vgtest_rmtree(dir);
    free(dir);
}

/* `golden import -o` naming the checkpoint itself is refused and the
 * checkpoint stays as it was. */
static void test_cli_import_output_is_input(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[512], cmd[2048];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    static float w[16 * 128];
    for (int i = 0; i < 16 * 128; i++)
        w[i] = (float)(i % 7) - 3.0f;
    write_st(st, "{\"w\":{\"dtype\":\"F32\",\"shape\":[16,128],\"data_offsets\":[0,8192]}}", w,
             sizeof w);
    size_t before_len = 0, after_len = 0;
    char *before = vgtest_read_file(st, &before_len);
    const char *tool = getenv("VG_TOOL") ? getenv("VG_TOOL") : "build/bin/voltgate";
    snprintf(cmd, sizeof cmd, "%s golden import --safetensors %s --weight w --family fp16 "
             "-o %s/./model.safetensors 2>/dev/null", tool, st, dir);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc));
    assert_int_equal(WEXITSTATUS(rc), 2);
    char *after = vgtest_read_file(st, &after_len);
    assert_int_equal(after_len, before_len);
    assert_memory_equal(after, before, before_len);
    free(before);
    free(after);
    vgtest_rmtree(dir);
    free(dir);
}

/* A FIFO as the checkpoint: refused at once, not a reader waiting for a
 * writer forever. */
static void test_safetensors_fifo_refused(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char fifo[512];
    snprintf(fifo, sizeof fifo, "%s/pipe.safetensors", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    vg_safetensors *st = NULL;
    alarm(20);
    assert_int_equal(vg_st_open(fifo, &st), VG_ERR_IO);
    alarm(0);
    assert_null(st);
    assert_non_null(strstr(vg_last_error(), "not a regular file"));
    vgtest_rmtree(dir);
    free(dir);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_fp8_deepseek),
        cmocka_unit_test(test_import_bf16_awq_and_grouped_f16),
        cmocka_unit_test(test_import_refusals),
        cmocka_unit_test(test_header_defects),
        cmocka_unit_test(test_cli_import),
        cmocka_unit_test(test_writers_refuse_what_reader_refuses),
        cmocka_unit_test(test_cli_import_output_is_input),
        cmocka_unit_test(test_safetensors_fifo_refused),
    };
    return VGTEST_MAIN("golden_import", tests);
}
