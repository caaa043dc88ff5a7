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
#include "voltgate/quant.h"
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

static void verify_on(const char *backend, const vg_golden_file *f)
{
    vg_device *dev = NULL;
    assert_int_equal(vg_device_open(backend, 0, &dev), VG_OK);
    vg_golden_verify_opts o = {backend, "all"};
    int ran = 0, failed = 0;
    assert_int_equal(vg_golden_verify_file(dev, "import", f, &o, NULL, NULL, &ran, &failed), VG_OK);
    assert_true(ran > 0);
    assert_int_equal(failed, 0);
    vg_device_close(dev);
}

static void verify_cpu(const vg_golden_file *f)
{
    verify_on("cpu", f);
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
    /* no --family: every BF16 value here is an FP16, so it imports as stored */
    vg_golden_file f;
    if (vg_golden_import(&a, &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    assert_int_equal(f.family, VG_FAMILY_FP16);
    for (int i = 0; i < N * K; i++)
        assert_true(f.w_dequant[i] == orig[i] && vg_fp16_to_f32(((uint16_t *)f.w_q)[i]) == orig[i]);
    vg_golden_free(&f);
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
    /* codes of 1.0: a scale of 65504 is FP16's largest weight, 1e30 is past it */
    const float big[2] = {65504.0f, 1e30f};
    for (int i = 0; i < 2; i++) {
        memcpy(data + 64 * 16, &big[i], 4);
        write_st(st, "{\"w\":{\"dtype\":\"F8_E4M3\",\"shape\":[64,16],\"data_offsets\":[0,1024]},"
                     "\"w_scale_inv\":{\"dtype\":\"F32\",\"shape\":[1,1],\"data_offsets\":[1024,1028]}}",
                 data, 1028);
        assert_int_equal(vg_golden_import(&a, &f), i ? VG_ERR_FORMAT : VG_OK);
        if (i)
            assert_non_null(strstr(vg_last_error(), "group 0 row 0 column 0 dequantizes to 1e+30, "
                                                    "past FP16's largest value 65504"));
        else
            vg_golden_free(&f);
    }
    memcpy(data + 64 * 16, &one, 4);

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

/* ---- checkpoints as they ship: one writer per format ------------------------------- */

/* One tensor of a safetensors file the tests write. */
typedef struct tspec {
    const char *name;
    const char *dtype;
    int rank;
    int64_t shape[4];
    const void *data;
    size_t bytes;
} tspec;

/* Writes the tensors back to back with a header built from the specs. */
static void write_tensors(const char *path, const tspec *t, int n)
{
    char *json = malloc(1 << 16);
    size_t used = (size_t)snprintf(json, 1 << 16, "{\"__metadata__\":{\"format\":\"pt\"}");
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        used += (size_t)snprintf(json + used, (1 << 16) - used, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[",
                                 t[i].name, t[i].dtype);
        for (int d = 0; d < t[i].rank; d++)
            used += (size_t)snprintf(json + used, (1 << 16) - used, "%s%lld", d ? "," : "",
                                     (long long)t[i].shape[d]);
        used += (size_t)snprintf(json + used, (1 << 16) - used, "],\"data_offsets\":[%zu,%zu]}",
                                 off, off + t[i].bytes);
        off += t[i].bytes;
    }
    snprintf(json + used, (1 << 16) - used, "}");
    uint8_t *data = malloc(off ? off : 1);
    off = 0;
    for (int i = 0; i < n; i++) {
        memcpy(data + off, t[i].data, t[i].bytes);
        off += t[i].bytes;
    }
    write_st(path, json, data, off);
    free(data);
    free(json);
}

static void write_text(const char *path, const char *text)
{
    FILE *fp = fopen(path, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
}

static vg_golden_import_args import_args(const char *file, const char *weight)
{
    vg_golden_import_args a;
    memset(&a, 0, sizeof a);
    a.safetensors = file;
    a.weight = weight;
    a.tokens = 2;
    a.seed = 7;
    return a;
}

static void import_ok(const vg_golden_import_args *a, vg_golden_file *f)
{
    if (vg_golden_import(a, f) != VG_OK)
        fail_msg("import: %s", vg_last_error());
}

/* Both the golden w_dequant (the source rule) and our dequantizer on the
 * repacked weight give `want` exactly; then the case verifies on the CPU,
 * and survives a write/read through the schema with its provenance. */
static void expect_weight(vg_golden_file *f, const float *want, const char *dir)
{
    size_t elems = (size_t)f->groups * (size_t)f->n * (size_t)f->k;
    float *ours = malloc(elems * sizeof(float));
    vg_weight w = vg_golden_weight(f);
    assert_int_equal(vg_dequantize(&w, ours), VG_OK);
    for (size_t i = 0; i < elems; i++) {
        if (f->w_dequant[i] != want[i])
            fail_msg("w_dequant[%zu] = %.9g, the source rule gives %.9g", i,
                     (double)f->w_dequant[i], (double)want[i]);
        if (ours[i] != want[i])
            fail_msg("repacked weight [%zu] dequantizes to %.9g, the source rule gives %.9g", i,
                     (double)ours[i], (double)want[i]);
    }
    free(ours);
    verify_cpu(f);
    assert_non_null(f->provenance);
    char out[600];
    snprintf(out, sizeof out, "%s/case.h5", dir);
    assert_int_equal(vg_golden_write(out, f), VG_OK);
    vg_golden_file g;
    assert_int_equal(vg_golden_read(out, &g), VG_OK);
    assert_string_equal(g.provenance, f->provenance);
    assert_memory_equal(g.w_q, f->w_q, (size_t)f->groups * f->layout.q_bytes);
    vg_golden_free(&g);
}

static const int AWQ_ORDER_T[8] = {0, 2, 4, 6, 1, 3, 5, 7}; /* column of nibble i */

/* INT4 test data: codes, zeros and scales chosen so that every column of a
 * word differs (the nibble order matters), a word has its top nibble set
 * (a negative I32), and one zero is 0 (GPTQ v1 stores it as 15). */
enum { QN = 16, QK = 256, QG = QK / 128 };
static uint8_t t_code(int k, int n) { return (uint8_t)((k * 7 + n * 5 + (k >> 3)) & 15); }
static uint8_t t_zero(int r, int n) { return (uint8_t)(n == 3 && r == 0 ? 0 : (n * 3 + r * 5 + 1) & 15); }
static uint16_t t_scale(int r, int n) { return vg_f32_to_fp16(ldexpf(1.0f + (float)n / 16.0f, -6 - r)); }

static void int4_expected(float *want)
{
    for (int n = 0; n < QN; n++)
        for (int k = 0; k < QK; k++)
            want[n * QK + k] = (float)(t_code(k, n) - t_zero(k / 128, n)) *
                               vg_fp16_to_f32(t_scale(k / 128, n));
}

/* The AutoAWQ GEMM tensors of the test data: qweight I32 [K][N/8] and
 * qzeros I32 [K/128][N/8] packed along N in the AWQ order (nibble i holds
 * column 8c + AWQ_ORDER_T[i]), scales F16 [K/128][N]. */
static void awq_tensors(uint32_t *qw, uint32_t *qz, uint16_t *sc)
{
    for (int k = 0; k < QK; k++)
        for (int c = 0; c < QN / 8; c++) {
            uint32_t w = 0;
            for (int i = 0; i < 8; i++)
                w |= (uint32_t)t_code(k, 8 * c + AWQ_ORDER_T[i]) << (4 * i);
            qw[k * (QN / 8) + c] = w;
        }
    for (int r = 0; r < QG; r++)
        for (int c = 0; c < QN / 8; c++) {
            uint32_t w = 0;
            for (int i = 0; i < 8; i++)
                w |= (uint32_t)t_zero(r, 8 * c + AWQ_ORDER_T[i]) << (4 * i);
            qz[r * (QN / 8) + c] = w;
        }
    for (int r = 0; r < QG; r++)
        for (int n = 0; n < QN; n++)
            sc[r * QN + n] = t_scale(r, n);
}

/* AutoAWQ GEMM: qweight I32 [K][N/8] and qzeros I32 [K/128][N/8] packed
 * along N in the AWQ order, scales F16 [K/128][N]. */
static void test_import_awq_gemm(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    uint32_t qw[QK * QN / 8], qz[QG * QN / 8];
    uint16_t sc[QG * QN];
    awq_tensors(qw, qz, sc);
    int negative = 0;
    for (int i = 0; i < QK * QN / 8; i++)
        negative |= (int32_t)qw[i] < 0;
    assert_true(negative); /* the signed-word trap is in the data */
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    tspec t[] = {
        {"model.layers.0.mlp.down_proj.qweight", "I32", 2, {QK, QN / 8}, qw, sizeof qw},
        {"model.layers.0.mlp.down_proj.qzeros", "I32", 2, {QG, QN / 8}, qz, sizeof qz},
        {"model.layers.0.mlp.down_proj.scales", "F16", 2, {QG, QN}, sc, sizeof sc},
    };
    write_tensors(st, t, 3);
    vg_golden_import_args a = import_args(st, "model.layers.0.mlp.down_proj");
    vg_golden_file f;
    import_ok(&a, &f);
    assert_int_equal(f.family, VG_FAMILY_AWQ);
    assert_non_null(strstr(f.provenance, "format=awq"));
    float want[QN * QK];
    int4_expected(want);
    expect_weight(&f, want, dir);
    vg_golden_free(&f);

    /* AutoAWQ's GEMV packing is another layout: refused, not misread */
    char cfg[700];
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    write_text(cfg, "{\"quantization_config\":{\"quant_method\":\"awq\",\"bits\":4,"
                    "\"group_size\":128,\"version\":\"gemv\"}}");
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    if (!strstr(vg_last_error(), "version 'gemv'"))
        fail_msg("%s", vg_last_error());
    unlink(cfg);

    /* group size 64 (4 scale rows for K = 256) is refused by name */
    uint16_t sc4[4 * QN] = {0};
    uint32_t qz4[4 * QN / 8] = {0};
    tspec t64[] = {
        {"p.qweight", "I32", 2, {QK, QN / 8}, qw, sizeof qw},
        {"p.qzeros", "I32", 2, {4, QN / 8}, qz4, sizeof qz4},
        {"p.scales", "F16", 2, {4, QN}, sc4, sizeof sc4},
    };
    write_tensors(st, t64, 3);
    a.weight = "p";
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    if (!strstr(vg_last_error(), "group size 64") || !strstr(vg_last_error(), "128"))
        fail_msg("%s", vg_last_error());
    /* K = 12 cannot pack 8 along K */
    tspec tk[] = {
        {"p.qweight", "I32", 2, {12, QN / 8}, qw, 12 * QN / 2},
        {"p.qzeros", "I32", 2, {1, QN / 8}, qz, QN / 2},
        {"p.scales", "F16", 2, {1, QN}, sc, QN * 2},
    };
    write_tensors(st, tk, 3);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    if (!strstr(vg_last_error(), "K = 12") || !strstr(vg_last_error(), "multiple of 8"))
        fail_msg("%s", vg_last_error());
    vgtest_rmtree(dir);
    free(dir);
}

/* GPTQ: qweight I32 [K/8][N] along K in order, qzeros I32 [K/128][N/8]
 * along N in order; v1 (checkpoint_format gptq) stores zero - 1, v2 the
 * zero.  One zero is 0: v1 stores it as nibble 15 and the importer must
 * add 1 and mask. */
static void write_gptq(const char *st, int v1, const int32_t *g_idx)
{
    uint32_t qw[QK / 8 * QN], qz[QG * QN / 8];
    uint16_t sc[QG * QN];
    for (int r = 0; r < QK / 8; r++)
        for (int n = 0; n < QN; n++) {
            uint32_t w = 0;
            for (int i = 0; i < 8; i++)
                w |= (uint32_t)t_code(8 * r + i, n) << (4 * i);
            qw[r * QN + n] = w;
        }
    for (int r = 0; r < QG; r++)
        for (int c = 0; c < QN / 8; c++) {
            uint32_t w = 0;
            for (int i = 0; i < 8; i++)
                w |= (uint32_t)((t_zero(r, 8 * c + i) - (v1 ? 1 : 0)) & 15) << (4 * i);
            qz[r * (QN / 8) + c] = w;
        }
    for (int r = 0; r < QG; r++)
        for (int n = 0; n < QN; n++)
            sc[r * QN + n] = t_scale(r, n);
    int32_t gi[QK];
    for (int k = 0; k < QK; k++)
        gi[k] = g_idx ? g_idx[k] : k / 128;
    tspec t[] = {
        {"m.q_proj.qweight", "I32", 2, {QK / 8, QN}, qw, sizeof qw},
        {"m.q_proj.qzeros", "I32", 2, {QG, QN / 8}, qz, sizeof qz},
        {"m.q_proj.scales", "F16", 2, {QG, QN}, sc, sizeof sc},
        {"m.q_proj.g_idx", "I32", 1, {QK}, gi, sizeof gi},
    };
    write_tensors(st, t, 4);
}

static void test_import_gptq_v1_v2(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600], cfg[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    snprintf(cfg, sizeof cfg, "%s/config.json", dir);
    float want[QN * QK];
    int4_expected(want);
    assert_int_equal(t_zero(0, 3), 0); /* the v1 zero-of-0 trap is in the data */
    vg_golden_import_args a = import_args(st, "m.q_proj");
    vg_golden_file f;

    /* v1 through config.json's checkpoint_format */
    write_gptq(st, 1, NULL);
    write_text(cfg, "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,"
                    "\"group_size\":128,\"checkpoint_format\":\"gptq\",\"desc_act\":false}}");
    import_ok(&a, &f);
    assert_non_null(strstr(f.provenance, "format=gptq;"));
    expect_weight(&f, want, dir);
    vg_golden_free(&f);

    /* v2 stores the zero itself */
    write_gptq(st, 0, NULL);
    write_text(cfg, "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,"
                    "\"group_size\":128,\"checkpoint_format\":\"gptq_v2\"}}");
    import_ok(&a, &f);
    assert_non_null(strstr(f.provenance, "format=gptq_v2"));
    expect_weight(&f, want, dir);
    vg_golden_free(&f);

    /* --format overrides; a v2 file read as v1 is caught by the values */
    a.format = "gptq";
    import_ok(&a, &f);
    assert_true(f.w_dequant[3 * QK] != want[3 * QK] || f.w_dequant[0] != want[0]);
    vg_golden_free(&f);
    a.format = NULL;

    /* act-order: a g_idx that is not k / 128 */
    int32_t gi[QK];
    for (int k = 0; k < QK; k++)
        gi[k] = (k % 2);
    write_gptq(st, 0, gi);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    if (!strstr(vg_last_error(), "g_idx[1] = 1") || !strstr(vg_last_error(), "act-order"))
        fail_msg("%s", vg_last_error());
    /* a config naming another group size */
    write_gptq(st, 0, NULL);
    write_text(cfg, "{\"quantization_config\":{\"quant_method\":\"gptq\",\"group_size\":32}}");
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    if (!strstr(vg_last_error(), "group_size 32"))
        fail_msg("%s", vg_last_error());
    vgtest_rmtree(dir);
    free(dir);
}

/* NVFP4 test data: every E2M1 code, E4M3 block scales of several binades. */
enum { FN = 6, FK = 64, FSC = FK / 16 };
static uint8_t t_fp4(int n, int k) { return (uint8_t)((n * 5 + k * 3 + (k >> 4)) & 15); }
static uint8_t t_e4m3(int n, int b) { return (uint8_t)(0x20 + n * 7 + b * 9); } /* 0.0625 .. */

static void write_nvfp4(const char *st, int ct, float global, int nan_scale)
{
    uint8_t q[FN * FK / 2], s[FN * FSC];
    for (int n = 0; n < FN; n++)
        for (int k = 0; k < FK; k += 2) /* the even element in the low nibble */
            q[n * FK / 2 + k / 2] = (uint8_t)(t_fp4(n, k) | (t_fp4(n, k + 1) << 4));
    for (int n = 0; n < FN; n++)
        for (int b = 0; b < FSC; b++)
            s[n * FSC + b] = t_e4m3(n, b);
    if (nan_scale)
        s[5] = 0x7F;
    tspec t[] = {
        {ct ? "l.o_proj.weight_packed" : "l.o_proj.weight", "U8", 2, {FN, FK / 2}, q, sizeof q},
        {"l.o_proj.weight_scale", "F8_E4M3", 2, {FN, FSC}, s, sizeof s},
        {ct ? "l.o_proj.weight_global_scale" : "l.o_proj.weight_scale_2", "F32", ct ? 1 : 0,
         {1}, &global, 4},
    };
    write_tensors(st, t, 3);
}

/* ModelOpt: w = e2m1 * weight_scale * weight_scale_2 (multiplied). */
static void test_import_nvfp4_modelopt(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    write_nvfp4(st, 0, 4.0f, 0);
    vg_golden_import_args a = import_args(st, "l.o_proj");
    vg_golden_file f;
    import_ok(&a, &f);
    assert_int_equal(f.family, VG_FAMILY_NVFP4);
    assert_non_null(strstr(f.provenance, "format=nvfp4-modelopt"));
    float want[FN * FK];
    for (int n = 0; n < FN; n++)
        for (int k = 0; k < FK; k++)
            want[n * FK + k] = vg_e2m1_to_f32(t_fp4(n, k)) * vg_e4m3_to_f32(t_e4m3(n, k / 16)) * 4.0f;
    expect_weight(&f, want, dir);
    vg_golden_free(&f);
    /* the full tensor name works too */
    a.weight = "l.o_proj.weight";
    import_ok(&a, &f);
    assert_int_equal(f.family, VG_FAMILY_NVFP4);
    vg_golden_free(&f);

    /* per-expert ModelOpt weights, every expert counted: one tensor scale
     * holds them when their weight_scale_2 agree, and a differing one is
     * refused (the nvfp4 family has one tensor scale per weight) */
    uint8_t q[FN * FK / 2], sc[FN * FSC];
    memset(q, 0x3A, sizeof q); /* 1.5 and -1 */
    memset(sc, 0x38, sizeof sc);
    float g2[3] = {0.5f, 0.5f, 0.25f};
    tspec t[9];
    char names[9][64];
    for (int e = 0; e < 3; e++) {
        snprintf(names[3 * e], 64, "x.experts.%d.w1.weight", e);
        snprintf(names[3 * e + 1], 64, "x.experts.%d.w1.weight_scale", e);
        snprintf(names[3 * e + 2], 64, "x.experts.%d.w1.weight_scale_2", e);
        t[3 * e] = (tspec){names[3 * e], "U8", 2, {FN, FK / 2}, q, sizeof q};
        t[3 * e + 1] = (tspec){names[3 * e + 1], "F8_E4M3", 2, {FN, FSC}, sc, sizeof sc};
        t[3 * e + 2] = (tspec){names[3 * e + 2], "F32", 0, {0}, &g2[e], 4};
    }
    write_tensors(st, t, 6);
    a.weight = NULL;
    a.experts = "x.experts.{e}.w1";
    a.path = VG_PATH_LOOP;
    import_ok(&a, &f);
    assert_int_equal(f.groups, 2);
    assert_true(f.w_tensor_scale == 0.5f);
    verify_cpu(&f);
    vg_golden_free(&f);
    write_tensors(st, t, 9);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    if (!strstr(vg_last_error(), "x.experts.2.w1.weight_scale_2") ||
        !strstr(vg_last_error(), "one tensor scale"))
        fail_msg("%s", vg_last_error());
    vgtest_rmtree(dir);
    free(dir);
}

/* compressed-tensors: weight_global_scale is the reciprocal: w = e2m1 *
 * (scale / global), in that order. */
static void test_import_nvfp4_compressed_tensors(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    write_nvfp4(st, 1, 4.0f, 0);
    vg_golden_import_args a = import_args(st, "l.o_proj");
    vg_golden_file f;
    import_ok(&a, &f);
    assert_non_null(strstr(f.provenance, "format=nvfp4-ct"));
    float want[FN * FK];
    for (int n = 0; n < FN; n++)
        for (int k = 0; k < FK; k++)
            want[n * FK + k] = vg_e2m1_to_f32(t_fp4(n, k)) * vg_e4m3_to_f32(t_e4m3(n, k / 16)) / 4.0f;
    expect_weight(&f, want, dir);
    vg_golden_free(&f);

    /* a global scale whose reciprocal is not exact: the reference follows
     * compressed-tensors' order (scale / global in FP32, then the element),
     * our weight holds 1/global; the case still verifies */
    write_nvfp4(st, 1, 3.0f, 0);
    import_ok(&a, &f);
    for (int n = 0; n < FN; n++)
        for (int k = 0; k < FK; k++) {
            float scale = vg_e4m3_to_f32(t_e4m3(n, k / 16)) / 3.0f;
            assert_true(f.w_dequant[n * FK + k] == vg_e2m1_to_f32(t_fp4(n, k)) * scale);
        }
    assert_true(f.w_tensor_scale == 1.0f / 3.0f);
    verify_cpu(&f);
    vg_golden_free(&f);
    vgtest_rmtree(dir);
    free(dir);
}

/* gpt-oss: *_blocks U8 [E][N][K/32][16], *_scales U8 [E][N][K/32] (E8M0,
 * bias 127), fused experts (an odd count), gate_up rows interleaved. */
enum { XE = 3, XN = 4, XNB = 2, XK = XNB * 32 };
static uint8_t t_blk(int e, int n, int b, int j) { return (uint8_t)((e * 31 + n * 17 + b * 7 + j * 13) & 0xFF); }
static uint8_t t_e8m0(int e, int n, int b) { return (uint8_t)(120 + e * 3 + n + b * 2); }

static float mx_value(int e, int n, int k)
{
    uint8_t byte = t_blk(e, n, k / 32, (k % 32) / 2);
    float v = vg_e2m1_to_f32((k & 1) ? (uint8_t)(byte >> 4) : (uint8_t)(byte & 15));
    return ldexpf(v, (int)t_e8m0(e, n, k / 32) - 127);
}

static void write_mxfp4(const char *st, int nan_scale)
{
    uint8_t b[XE * XN * XNB * 16], s[XE * XN * XNB];
    for (int e = 0; e < XE; e++)
        for (int n = 0; n < XN; n++)
            for (int bl = 0; bl < XNB; bl++) {
                s[(e * XN + n) * XNB + bl] = t_e8m0(e, n, bl);
                for (int j = 0; j < 16; j++)
                    b[((e * XN + n) * XNB + bl) * 16 + j] = t_blk(e, n, bl, j);
            }
    if (nan_scale)
        s[4] = 0xFF;
    tspec t[] = {
        {"model.layers.0.mlp.experts.gate_up_proj_blocks", "U8", 4, {XE, XN, XNB, 16}, b, sizeof b},
        {"model.layers.0.mlp.experts.gate_up_proj_scales", "U8", 3, {XE, XN, XNB}, s, sizeof s},
    };
    write_tensors(st, t, 2);
}

static void test_import_mxfp4_gptoss(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    write_mxfp4(st, 0);
    vg_golden_import_args a = import_args(st, "model.layers.0.mlp.experts.gate_up_proj");
    a.path = VG_PATH_GROUPED;
    vg_golden_file f;
    import_ok(&a, &f);
    assert_int_equal(f.family, VG_FAMILY_MXFP4);
    assert_int_equal(f.groups, XE);
    assert_non_null(strstr(f.provenance, "rows=all"));
    float want[XE * XN * XK];
    for (int e = 0; e < XE; e++)
        for (int n = 0; n < XN; n++)
            for (int k = 0; k < XK; k++)
                want[(e * XN + n) * XK + k] = mx_value(e, n, k);
    expect_weight(&f, want, dir);
    vg_golden_free(&f);

    /* the up rows (odd) of experts 1..2, as a moe case */
    a.rows = "up";
    a.have_expert_range = 1;
    a.expert_begin = 1;
    a.expert_end = 3;
    a.path = VG_PATH_MOE;
    int32_t routing[2] = {3, 0};
    a.routing = routing;
    a.routing_count = 2;
    import_ok(&a, &f);
    assert_int_equal(f.groups, 2);
    assert_int_equal(f.n, XN / 2);
    assert_int_equal(f.cases[0].m, 3);
    float up[2 * (XN / 2) * XK];
    for (int g = 0; g < 2; g++)
        for (int o = 0; o < XN / 2; o++)
            for (int k = 0; k < XK; k++)
                up[(g * (XN / 2) + o) * XK + k] = mx_value(1 + g, 2 * o + 1, k);
    assert_non_null(strstr(f.provenance, "rows=up"));
    expect_weight(&f, up, dir);
    vg_golden_free(&f);
    vgtest_rmtree(dir);
    free(dir);
}

/* F16 imports bit for bit as fp16; BF16 too when every value is an FP16,
 * and is refused (naming the element) when one is not. */
static void test_import_f16_bf16_as_stored(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    enum { N = 8, K = 24 };
    uint16_t h[N * K], b[N * K];
    float want[N * K];
    for (int i = 0; i < N * K; i++) {
        h[i] = (uint16_t)((i * 2654435761u >> 7) & 0x7BFF); /* finite FP16 codes, both signs */
        want[i] = vg_fp16_to_f32(h[i]);
        b[i] = vg_f32_to_bf16(ldexpf((float)(i % 7) - 3.0f, -(i % 9)));
    }
    tspec t[] = {
        {"a.weight", "F16", 2, {N, K}, h, sizeof h},
        {"b.weight", "BF16", 2, {N, K}, b, sizeof b},
    };
    write_tensors(st, t, 2);
    vg_golden_import_args a = import_args(st, "a");
    vg_golden_file f;
    import_ok(&a, &f);
    assert_int_equal(f.family, VG_FAMILY_FP16);
    assert_memory_equal(f.w_q, h, sizeof h);
    expect_weight(&f, want, dir);
    vg_golden_free(&f);
    a.weight = "b.weight";
    import_ok(&a, &f);
    for (int i = 0; i < N * K; i++)
        want[i] = vg_bf16_to_f32(b[i]);
    expect_weight(&f, want, dir);
    vg_golden_free(&f);
    b[5] = vg_f32_to_bf16(1e-30f);
    write_tensors(st, t, 2);
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_UNSUPPORTED);
    if (!strstr(vg_last_error(), "element 5") || !strstr(vg_last_error(), "--family"))
        fail_msg("%s", vg_last_error());
    vgtest_rmtree(dir);
    free(dir);
}

/* A model folder: model.safetensors.index.json over two shards (AWQ's
 * qweight in one, qzeros and scales in the other), plus a third shard that
 * the index names for another tensor but that does not exist: only the
 * shards a tensor needs are opened.  Then a missing shard, a tensor the
 * shard lacks, and a truncated shard are refused naming both. */
static void write_awq_shards(const char *dir, int truncate_second)
{
    uint32_t qw[QK * QN / 8], qz[QG * QN / 8];
    uint16_t sc[QG * QN];
    awq_tensors(qw, qz, sc);
    char p[700];
    tspec t1[] = {{"model.layers.1.mlp.up_proj.qweight", "I32", 2, {QK, QN / 8}, qw, sizeof qw}};
    tspec t2[] = {
        {"model.layers.1.mlp.up_proj.qzeros", "I32", 2, {QG, QN / 8}, qz, sizeof qz},
        {"model.layers.1.mlp.up_proj.scales", "F16", 2, {QG, QN}, sc, sizeof sc},
    };
    snprintf(p, sizeof p, "%s/model-00001-of-00003.safetensors", dir);
    write_tensors(p, t1, 1);
    snprintf(p, sizeof p, "%s/model-00002-of-00003.safetensors", dir);
    write_tensors(p, t2, 2);
    if (truncate_second)
        assert_int_equal(truncate(p, 200), 0);
}

static void test_import_sharded_index(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char idx[700];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    const char *index =
        "{\"metadata\":{\"total_size\":1},\"weight_map\":{"
        "\"model.layers.1.mlp.up_proj.qweight\":\"model-00001-of-00003.safetensors\","
        "\"model.layers.1.mlp.up_proj.qzeros\":\"model-00002-of-00003.safetensors\","
        "\"model.layers.1.mlp.up_proj.scales\":\"model-00002-of-00003.safetensors\","
        "\"model.layers.1.mlp.up_proj.g_idx\":\"model-00002-of-00003.safetensors\","
        "\"model.layers.9.mlp.up_proj.qweight\":\"model-00003-of-00003.safetensors\"}}";
    write_text(idx, index);
    write_awq_shards(dir, 0);
    vg_golden_import_args a = import_args(NULL, "model.layers.1.mlp.up_proj");
    a.checkpoint = dir;
    vg_golden_file f;
    import_ok(&a, &f);
    float want[QN * QK];
    int4_expected(want);
    /* both shards named with their SHA-256, the missing third not opened */
    if (!strstr(f.provenance, "model-00001-of-00003.safetensors sha256=") ||
        !strstr(f.provenance, "model-00002-of-00003.safetensors sha256=") ||
        strstr(f.provenance, "00003-of"))
        fail_msg("provenance: %s", f.provenance);
    assert_non_null(strstr(f.provenance, "model.layers.1.mlp.up_proj.qweight"));
    expect_weight(&f, want, dir);
    vg_golden_free(&f);

    /* the index points at a shard that is not there */
    a.weight = "model.layers.9.mlp.up_proj";
    assert_int_equal(vg_golden_import(&a, &f) == VG_OK, 0);
    if (!strstr(vg_last_error(), "model.layers.9.mlp.up_proj.qweight") ||
        !strstr(vg_last_error(), "model-00003-of-00003.safetensors"))
        fail_msg("%s", vg_last_error());
    /* the index puts a tensor in a shard that lacks it */
    write_text(idx, "{\"weight_map\":{"
                    "\"model.layers.1.mlp.up_proj.qweight\":\"model-00001-of-00003.safetensors\","
                    "\"model.layers.1.mlp.up_proj.qzeros\":\"model-00002-of-00003.safetensors\","
                    "\"model.layers.1.mlp.up_proj.scales\":\"model-00001-of-00003.safetensors\"}}");
    a.weight = "model.layers.1.mlp.up_proj";
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_NOT_FOUND);
    if (!strstr(vg_last_error(), "'model.layers.1.mlp.up_proj.scales'") ||
        !strstr(vg_last_error(), "shard 'model-00001-of-00003.safetensors'"))
        fail_msg("%s", vg_last_error());
    write_text(idx, index);
    /* a truncated shard */
    write_awq_shards(dir, 1);
    assert_int_equal(vg_golden_import(&a, &f) == VG_OK, 0);
    if (!strstr(vg_last_error(), "model-00002-of-00003.safetensors"))
        fail_msg("%s", vg_last_error());
    /* a tensor the index does not list */
    a.weight = "model.layers.2.mlp.up_proj";
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_NOT_FOUND);
    assert_non_null(strstr(vg_last_error(), "model.layers.2.mlp.up_proj"));
    vgtest_rmtree(dir);
    free(dir);
}

/* DeepSeek-style per-expert FP8 weights gathered into a grouped weight:
 * 5 experts (odd), --experts-range 1:4, a moe routing. */
static void test_import_experts_gather(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    enum { E = 5, N = 130, K = 136 };
    static uint8_t q[E][N * K];
    float sc[E][2 * 2];
    tspec t[2 * E];
    char names[2 * E][96];
    for (int e = 0; e < E; e++) {
        for (int i = 0; i < N * K; i++) {
            uint8_t c = (uint8_t)((i * 37 + e * 11 + 3) & 0xFF);
            q[e][i] = (c & 0x7F) == 0x7F ? (uint8_t)(c ^ 1) : c;
        }
        for (int j = 0; j < 4; j++)
            sc[e][j] = ldexpf(1.0f + (float)j / 4.0f, -8 - e);
        snprintf(names[2 * e], 96, "model.layers.3.mlp.experts.%d.down_proj.weight", e);
        snprintf(names[2 * e + 1], 96, "model.layers.3.mlp.experts.%d.down_proj.weight_scale_inv", e);
        t[2 * e] = (tspec){names[2 * e], "F8_E4M3", 2, {N, K}, q[e], sizeof q[e]};
        t[2 * e + 1] = (tspec){names[2 * e + 1], "F32", 2, {2, 2}, sc[e], sizeof sc[e]};
    }
    write_tensors(st, t, 2 * E);
    vg_golden_import_args a = import_args(st, NULL);
    a.experts = "model.layers.3.mlp.experts.{e}.down_proj";
    a.path = VG_PATH_GROUPED;
    vg_golden_file f;
    import_ok(&a, &f); /* every expert, counted */
    assert_int_equal(f.groups, E);
    vg_golden_free(&f);
    a.have_expert_range = 1;
    a.expert_begin = 1;
    a.expert_end = 4;
    a.path = VG_PATH_MOE;
    int32_t routing[3] = {2, 0, 3};
    a.routing = routing;
    a.routing_count = 3;
    import_ok(&a, &f);
    assert_int_equal(f.family, VG_FAMILY_FP8);
    assert_int_equal(f.groups, 3);
    assert_int_equal(f.cases[0].m, 5);
    assert_int_equal(f.cases[0].offsets[2], 2);
    static float want[3 * N * K];
    for (int g = 0; g < 3; g++) {
        assert_memory_equal((uint8_t *)f.w_q + (size_t)g * N * K, q[1 + g], (size_t)N * K);
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                want[(g * N + n) * K + k] =
                    vg_e4m3_to_f32(q[1 + g][n * K + k]) * sc[1 + g][(n / 128) * 2 + k / 128];
    }
    assert_non_null(strstr(f.provenance, "experts=1:4"));
    assert_non_null(strstr(f.provenance, "experts.3.down_proj.weight_scale_inv"));
    expect_weight(&f, want, dir);
    vg_golden_free(&f);
    /* a range past the last expert names the missing tensor */
    a.expert_end = 7;
    a.routing = NULL;
    a.path = VG_PATH_GROUPED;
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_NOT_FOUND);
    assert_non_null(strstr(vg_last_error(), "experts.5.down_proj"));
    vgtest_rmtree(dir);
    free(dir);
}

/* --scale with --experts: each expert's scale through {e}, for checkpoints
 * whose scales are not named <weight>_scale_inv; --scale without {e} there,
 * and --scale on a weight that has no such scale, are refused. */
static void test_import_experts_scale_pattern(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    enum { E = 3, N = 130, K = 136 };
    static uint8_t q[E][N * K];
    float sc[E][2 * 2];
    tspec t[2 * E];
    char names[2 * E][96];
    for (int e = 0; e < E; e++) {
        for (int i = 0; i < N * K; i++)
            q[e][i] = (uint8_t)((i * 29 + e * 7 + 1) & 0x7E);
        for (int j = 0; j < 4; j++)
            sc[e][j] = ldexpf(1.0f + (float)j / 8.0f, -6 - e);
        snprintf(names[2 * e], 96, "experts.%d.w", e);
        snprintf(names[2 * e + 1], 96, "experts.%d.w_block_scale", e);
        t[2 * e] = (tspec){names[2 * e], "F8_E4M3", 2, {N, K}, q[e], sizeof q[e]};
        t[2 * e + 1] = (tspec){names[2 * e + 1], "F32", 2, {2, 2}, sc[e], sizeof sc[e]};
    }
    write_tensors(st, t, 2 * E);
    vg_golden_import_args a = import_args(st, NULL);
    a.experts = "experts.{e}.w";
    a.path = VG_PATH_GROUPED;
    vg_golden_file f;
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_NOT_FOUND); /* no experts.0.w_scale_inv */
    a.scale = "experts.{e}.w_block_scale";
    import_ok(&a, &f);
    assert_int_equal(f.groups, E);
    static float want[E * N * K];
    for (int g = 0; g < E; g++)
        for (int n = 0; n < N; n++)
            for (int k = 0; k < K; k++)
                want[(g * N + n) * K + k] =
                    vg_e4m3_to_f32(q[g][n * K + k]) * sc[g][(n / 128) * 2 + k / 128];
    assert_non_null(strstr(f.provenance, "experts.2.w_block_scale"));
    expect_weight(&f, want, dir);
    vg_golden_free(&f);
    a.scale = "experts.0.w_block_scale"; /* one expert's scale for all: refused */
    assert_int_equal(vg_golden_import(&a, &f), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "through {e}"));
    /* --scale on an F16 weight (it has no scale to name) */
    uint16_t h[16 * 16];
    for (int i = 0; i < 16 * 16; i++)
        h[i] = vg_f32_to_fp16(0.25f);
    tspec t16 = {"w16", "F16", 2, {16, 16}, h, sizeof h};
    write_tensors(st, &t16, 1);
    vg_golden_import_args b = import_args(st, "w16");
    b.scale = "w16_scale_inv";
    assert_int_equal(vg_golden_import(&b, &f), VG_ERR_INVALID_ARG);
    assert_non_null(strstr(vg_last_error(), "--scale names an F8_E4M3 weight's scale"));
    vgtest_rmtree(dir);
    free(dir);
}

/* Bad files: each is refused naming the tensor and the problem. */
static void expect_refused(const vg_golden_import_args *a, const char *n1, const char *n2)
{
    vg_golden_file f;
    vg_status s = vg_golden_import(a, &f);
    if (s == VG_OK)
        fail_msg("imported a bad file (expected '%s')", n1);
    if (!strstr(vg_last_error(), n1) || (n2 && !strstr(vg_last_error(), n2)))
        fail_msg("message '%s' lacks '%s' / '%s'", vg_last_error(), n1, n2 ? n2 : "");
    assert_null(f.w_q);
}

static void test_import_bad_checkpoints(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char st[600];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    vg_golden_import_args a = import_args(st, "l.o_proj");
    /* NaN E4M3 block scale (nvfp4) */
    write_nvfp4(st, 1, 4.0f, 1);
    expect_refused(&a, "l.o_proj.weight_scale", "NaN scale");
    /* a zero / NaN global scale */
    write_nvfp4(st, 1, 0.0f, 0);
    expect_refused(&a, "l.o_proj.weight_global_scale", "finite and > 0");
    write_nvfp4(st, 0, NAN, 0);
    expect_refused(&a, "l.o_proj.weight_scale_2", "finite and > 0");
    /* E8M0 code 255 */
    write_mxfp4(st, 1);
    a.weight = "model.layers.0.mlp.experts.gate_up_proj";
    a.path = VG_PATH_GROUPED;
    expect_refused(&a, "gate_up_proj_scales", "NaN scale");
    a.path = VG_PATH_DENSE;
    /* AWQ: scales of the wrong dtype, a missing qzeros, a NaN FP16 scale */
    uint32_t qw[QK * QN / 8] = {0}, qz[QG * QN / 8] = {0};
    uint16_t sc[QG * QN];
    float scf[QG * QN];
    for (int i = 0; i < QG * QN; i++) {
        sc[i] = 0x3C00;
        scf[i] = 1.0f;
    }
    a.weight = "p";
    tspec bad_dtype[] = {
        {"p.qweight", "I32", 2, {QK, QN / 8}, qw, sizeof qw},
        {"p.qzeros", "I32", 2, {QG, QN / 8}, qz, sizeof qz},
        {"p.scales", "F32", 2, {QG, QN}, scf, sizeof scf},
    };
    write_tensors(st, bad_dtype, 3);
    expect_refused(&a, "'p.scales' is F32", "expected F16");
    write_tensors(st, bad_dtype, 2);
    expect_refused(&a, "p.scales", NULL);
    bad_dtype[2] = (tspec){"p.scales", "F16", 2, {QG, QN}, sc, sizeof sc};
    write_tensors(st, bad_dtype, 3);
    a.format = "awq";
    {
        tspec no_zeros[] = {bad_dtype[0], bad_dtype[2]};
        write_tensors(st, no_zeros, 2);
        expect_refused(&a, "p.qzeros", NULL);
    }
    sc[17] = 0x7E00; /* FP16 NaN */
    write_tensors(st, bad_dtype, 3);
    expect_refused(&a, "'p.scales' element [1][1]", "NaN");
    /* qzeros of the wrong shape */
    bad_dtype[1].shape[0] = 1;
    bad_dtype[1].bytes = QN / 2;
    sc[17] = 0x3C00;
    write_tensors(st, bad_dtype, 3);
    expect_refused(&a, "'p.qzeros' is I32 [1][2]", "expected I32 [2][2]");
    a.format = NULL;
    /* a truncated single file */
    write_nvfp4(st, 1, 4.0f, 0);
    assert_int_equal(truncate(st, 100), 0);
    a.weight = "l.o_proj";
    expect_refused(&a, st, NULL);
    vgtest_rmtree(dir);
    free(dir);
}

/* The CLI: detection printed, the file verifies, and a bad checkpoint is
 * exit 2 with one line and no output file. */
static void test_cli_import_checkpoint(void **state)
{
    (void)state;
    char *dir = vgtest_mkdtemp();
    char idx[700], out[700];
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    snprintf(out, sizeof out, "%s/awq.h5", dir);
    write_text(idx, "{\"weight_map\":{"
                    "\"model.layers.1.mlp.up_proj.qweight\":\"model-00001-of-00003.safetensors\","
                    "\"model.layers.1.mlp.up_proj.qzeros\":\"model-00002-of-00003.safetensors\","
                    "\"model.layers.1.mlp.up_proj.scales\":\"model-00002-of-00003.safetensors\"}}");
    write_awq_shards(dir, 0);
    const char *tool = getenv("VG_TOOL");
    char *t = (char *)(tool && *tool ? tool : "build/bin/voltgate");
    char *err = NULL;
    char *imp[] = {t, "golden", "import", "--checkpoint", dir, "--weight",
                   "model.layers.1.mlp.up_proj", "--tokens", "3", "-o", out, NULL};
    int rc = run_tool(dir, imp, &err);
    if (rc != 0)
        fail_msg("import exit %d: %s", rc, err);
    free(err);
    char *ver[] = {t, "golden", "verify", out, NULL};
    rc = run_tool(dir, ver, &err);
    if (rc != 0)
        fail_msg("verify exit %d: %s", rc, err);
    free(err);
    write_awq_shards(dir, 1);
    unlink(out);
    rc = run_tool(dir, imp, &err);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(err, "model-00002-of-00003.safetensors"));
    assert_true(strchr(err, '\n') && strchr(err, '\n')[1] == '\0');
    assert_int_equal(access(out, F_OK), -1); /* nothing written */
    free(err);
    vgtest_rmtree(dir);
    free(dir);
}


/* Every format's tiny checkpoint, imported and verified with every CUDA
 * plan (skipped without a device). */
static void import_verify_cuda(const vg_golden_import_args *a)
{
    vg_golden_file f;
    import_ok(a, &f);
    verify_on("cuda", &f);
    vg_golden_free(&f);
}

static void test_import_every_format_cuda(void **state)
{
    (void)state;
    VGTEST_REQUIRE_CUDA();
    char *dir = vgtest_mkdtemp();
    char st[600], idx[700];
    snprintf(st, sizeof st, "%s/model.safetensors", dir);
    snprintf(idx, sizeof idx, "%s/model.safetensors.index.json", dir);
    write_text(idx, "{\"weight_map\":{"
                    "\"model.layers.1.mlp.up_proj.qweight\":\"model-00001-of-00003.safetensors\","
                    "\"model.layers.1.mlp.up_proj.qzeros\":\"model-00002-of-00003.safetensors\","
                    "\"model.layers.1.mlp.up_proj.scales\":\"model-00002-of-00003.safetensors\"}}");
    write_awq_shards(dir, 0);
    vg_golden_import_args a = import_args(NULL, "model.layers.1.mlp.up_proj");
    a.checkpoint = dir;
    import_verify_cuda(&a); /* awq */
    unlink(idx);
    a = import_args(st, "m.q_proj");
    write_gptq(st, 1, NULL);
    a.format = "gptq";
    import_verify_cuda(&a);
    write_gptq(st, 0, NULL);
    a.format = "gptq_v2";
    import_verify_cuda(&a);
    a = import_args(st, "l.o_proj");
    write_nvfp4(st, 0, 4.0f, 0);
    import_verify_cuda(&a);
    write_nvfp4(st, 1, 3.0f, 0);
    import_verify_cuda(&a);
    write_mxfp4(st, 0);
    a = import_args(st, "model.layers.0.mlp.experts.gate_up_proj");
    a.path = VG_PATH_GROUPED;
    import_verify_cuda(&a);
    a.rows = "gate";
    a.path = VG_PATH_MOE;
    int32_t routing[XE] = {4, 0, 1};
    a.routing = routing;
    a.routing_count = XE;
    import_verify_cuda(&a);
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

/* A FIFO in place of a checkpoint folder's index or config JSON: refused
 * at once with its name, not a reader waiting for a writer forever. */
static void test_checkpoint_json_fifo_refused(void **state)
{
    (void)state;
    static const char *const names[] = {"model.safetensors.index.json", "config.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char *dir = vgtest_mkdtemp();
        char fifo[700];
        snprintf(fifo, sizeof fifo, "%s/%s", dir, names[i]);
        assert_int_equal(mkfifo(fifo, 0600), 0);
        if (i == 1) { /* config.json is read once a checkpoint file opened */
            char st[700];
            snprintf(st, sizeof st, "%s/model.safetensors", dir);
            write_st(st, "{}", NULL, 0);
        }
        vg_golden_import_args a = import_args(NULL, "model.layers.1.mlp.up_proj");
        a.checkpoint = dir;
        vg_golden_file f;
        alarm(20);
        assert_int_equal(vg_golden_import(&a, &f) == VG_OK, 0);
        alarm(0);
        if (!strstr(vg_last_error(), names[i]) || !strstr(vg_last_error(), "not a regular file"))
            fail_msg("%s: %s", names[i], vg_last_error());
        vgtest_rmtree(dir);
        free(dir);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_import_fp8_deepseek),
        cmocka_unit_test(test_import_bf16_awq_and_grouped_f16),
        cmocka_unit_test(test_import_refusals),
        cmocka_unit_test(test_header_defects),
        cmocka_unit_test(test_cli_import),
        cmocka_unit_test(test_import_awq_gemm),
        cmocka_unit_test(test_import_gptq_v1_v2),
        cmocka_unit_test(test_import_nvfp4_modelopt),
        cmocka_unit_test(test_import_nvfp4_compressed_tensors),
        cmocka_unit_test(test_import_mxfp4_gptoss),
        cmocka_unit_test(test_import_experts_scale_pattern),
        cmocka_unit_test(test_import_f16_bf16_as_stored),
        cmocka_unit_test(test_import_sharded_index),
        cmocka_unit_test(test_import_experts_gather),
        cmocka_unit_test(test_import_bad_checkpoints),
        cmocka_unit_test(test_cli_import_checkpoint),
        cmocka_unit_test(test_import_every_format_cuda),
        cmocka_unit_test(test_writers_refuse_what_reader_refuses),
        cmocka_unit_test(test_cli_import_output_is_input),
        cmocka_unit_test(test_safetensors_fifo_refused),
        cmocka_unit_test(test_checkpoint_json_fifo_refused),
    };
    return VGTEST_MAIN("golden_import", tests);
}
