/*
 * Bad golden files: each corruption of a COPY of a committed file gives its
 * own one-line error naming the file and the dataset or attribute, through
 * the library (vg_golden_read's status and vg_last_error) and through the
 * CLI (`voltgate golden verify` exits 2 with one line on stderr and nothing
 * from HDF5's own error printing).
 */
#include "vgtest.h"

#include <fcntl.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sha256.h"
#include "voltgate/golden.h"

#define SOURCE "golden/cases/fp8-dense.h5"

typedef struct fixture {
    char *dir;
    char file[512];
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = vgtest_mkdtemp();
    snprintf(fx->file, sizeof fx->file, "%s/case.h5", fx->dir);
    FILE *in = fopen(SOURCE, "rb"), *out = fopen(fx->file, "wb");
    if (!in || !out)
        return -1;
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        fwrite(buf, 1, n, out);
    fclose(in);
    fclose(out);
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    vgtest_rmtree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

static char *read_text(const char *path)
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

static const char *tool(void)
{
    const char *t = getenv("VG_TOOL");
    return t && *t ? t : "build/bin/voltgate";
}

/* Runs `voltgate golden verify --backend cpu FILE`; returns the exit code
 * and the stderr text (malloc'ed). */
static int run_verify(const fixture *fx, const char *file, char **err)
{
    char errpath[600], outpath[600];
    snprintf(errpath, sizeof errpath, "%s/stderr.txt", fx->dir);
    snprintf(outpath, sizeof outpath, "%s/stdout.txt", fx->dir);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fe = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int fo = open(outpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fe, 2);
        dup2(fo, 1);
        execl(tool(), tool(), "golden", "verify", "--backend", "cpu", file, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    *err = read_text(errpath);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* The library gives `want` with a message naming the file and holding
 * `needle`; the CLI exits 2 with exactly that one line on stderr. */
static void expect_bad_as_is(const fixture *fx, const char *file, vg_status want,
                             const char *needle)
{
    vg_golden_file f;
    vg_clear_error();
    vg_status st = vg_golden_read(file, &f);
    const char *msg = vg_last_error();
    print_message("  -> %s\n", msg);
    if (st != want)
        fail_msg("status %s, want %s: %s", vg_status_str(st), vg_status_str(want), msg);
    assert_non_null(strstr(msg, file));
    if (!strstr(msg, needle))
        fail_msg("message '%s' lacks '%s'", msg, needle);
    assert_null(strchr(msg, '\n'));

    char *err = NULL;
    int rc = run_verify(fx, file, &err);
    if (rc != 2)
        fail_msg("voltgate exit %d, want 2; stderr: %s", rc, err);
    /* one line, ours, naming the problem; no HDF5 diagnostics */
    char *nl = strchr(err, '\n');
    assert_non_null(nl);
    assert_true(nl[1] == '\0');
    assert_non_null(strstr(err, "voltgate golden verify: "));
    assert_non_null(strstr(err, needle));
    assert_null(strstr(err, "HDF5-DIAG"));
    assert_null(strstr(err, "#000"));
    free(err);
}

/* The damage below is made through HDF5 or by flipping bytes, and the seal
 * (SCHEMA.md) would refuse every such file before the check under test: so
 * the damaged file is sealed again first, as `voltgate golden seal` would
 * after an intended edit, and the reader's checks behind the seal are what
 * refuses it.  The seal's own checks are tested with expect_bad_as_is. */
static void expect_bad(const fixture *fx, const char *file, vg_status want, const char *needle)
{
    vg_golden_seal(file); /* fails on what is no golden file at all: read as it is */
    expect_bad_as_is(fx, file, want, needle);
}

/* ---- helpers that damage the copy through HDF5 ----------------------------- */

static hid_t open_rw(const fixture *fx)
{
    hid_t fid = H5Fopen(fx->file, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(fid >= 0);
    return fid;
}

static void set_int_attr(const fixture *fx, const char *obj, const char *name, int64_t v)
{
    /* H5Oopen + H5Aopen: in HDF5 1.10.8, H5Awrite on an attribute opened
     * with H5Aopen_by_name of a nested object fails ("can't locate open
     * attribute") */
    hid_t fid = open_rw(fx);
    hid_t o = H5Oopen(fid, obj, H5P_DEFAULT);
    hid_t a = H5Aopen(o, name, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, H5T_NATIVE_INT64, &v) >= 0);
    H5Aclose(a);
    H5Oclose(o);
    H5Fclose(fid);
}

static void set_str_attr(const fixture *fx, const char *obj, const char *name, const char *v)
{
    hid_t fid = open_rw(fx);
    hid_t o = H5Oopen(fid, obj, H5P_DEFAULT);
    assert_true(o >= 0);
    H5Adelete(o, name);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(o, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(a >= 0);
    assert_true(H5Awrite(a, t, v) >= 0);
    H5Aclose(a);
    H5Sclose(sp);
    H5Tclose(t);
    H5Oclose(o);
    H5Fclose(fid);
}

static void delete_link(const fixture *fx, const char *name)
{
    hid_t fid = open_rw(fx);
    assert_true(H5Ldelete(fid, name, H5P_DEFAULT) >= 0);
    H5Fclose(fid);
}

/* Replaces dataset `name` with one of type `type` and the given dims. */
static void replace_dataset(const fixture *fx, const char *name, hid_t type, int rank,
                            const hsize_t *dims)
{
    hid_t fid = open_rw(fx);
    assert_true(H5Ldelete(fid, name, H5P_DEFAULT) >= 0);
    hid_t sp = H5Screate_simple(rank, dims, NULL);
    hid_t ds = H5Dcreate2(fid, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(ds >= 0);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(fid);
}

/* File offset of a byte inside dataset `name`'s stored data: the
 * contiguous data, or the first chunk of a chunked dataset. */
static haddr_t data_address(const fixture *fx, const char *name, hsize_t *size)
{
    hid_t fid = H5Fopen(fx->file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(fid, name, H5P_DEFAULT);
    assert_true(ds >= 0);
    haddr_t addr = H5Dget_offset(ds);
    *size = H5Dget_storage_size(ds);
    if (addr == HADDR_UNDEF) { /* chunked */
        hid_t sp = H5Dget_space(ds);
        hsize_t offset[3];
        unsigned mask;
        assert_true(H5Dget_chunk_info(ds, sp, 0, offset, &mask, &addr, size) >= 0);
        H5Sclose(sp);
    }
    H5Dclose(ds);
    H5Fclose(fid);
    assert_true(addr != HADDR_UNDEF);
    return addr;
}

static void flip_byte(const fixture *fx, long where)
{
    FILE *fp = fopen(fx->file, "r+b");
    assert_non_null(fp);
    fseek(fp, where, SEEK_SET);
    int c = fgetc(fp);
    fseek(fp, where, SEEK_SET);
    fputc(c ^ 0x5A, fp);
    fclose(fp);
}

/* Replaces the one occurrence of `from` in the copy's bytes by `to` (same
 * length): a raw edit of what HDF5's API cannot express. */
static void patch_unique_bytes(const fixture *fx, const char *from, const char *to)
{
    size_t len = strlen(from);
    assert_int_equal(strlen(to), len);
    FILE *fp = fopen(fx->file, "r+b");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    char *buf = malloc((size_t)size);
    assert_int_equal(fread(buf, 1, (size_t)size, fp), (size_t)size);
    long at = -1;
    int found = 0;
    for (long i = 0; i + (long)len <= size; i++)
        if (!memcmp(buf + i, from, len)) {
            at = i;
            found++;
        }
    if (found != 1)
        fail_msg("'%s' occurs %d times in %s, want once", from, found, fx->file);
    fseek(fp, at, SEEK_SET);
    assert_int_equal(fwrite(to, 1, len, fp), len);
    fclose(fp);
    free(buf);
}

/* ---- the cases ---------------------------------------------------------------------- */

static void test_pristine_copy_is_good(void **state)
{
    fixture *fx = *state;
    vg_golden_file f;
    if (vg_golden_read(fx->file, &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    vg_golden_free(&f);
}

/* Writes dst = a seal over src's bytes + those bytes, as golden_seal_image in
 * golden_seal.c would (SCHEMA.md, "The seal"): a damaged HDF5 image that
 * carries a valid seal, for the reader's checks behind the seal. */
static void forge_seal(const char *src, const char *dst)
{
    size_t n = 0;
    void *image = vgtest_read_file(src, &n);
    char hex[65], seal[512] = {0};
    vg_sha256_hex(image, n, hex);
    snprintf(seal, sizeof seal, "voltgate-golden-seal/1\nsha256 %s\nbytes %zu\n", hex, n);
    FILE *out = fopen(dst, "wb");
    assert_non_null(out);
    assert_int_equal(fwrite(seal, 1, sizeof seal, out), sizeof seal);
    assert_int_equal(fwrite(image, 1, n, out), n);
    fclose(out);
    free(image);
}

/* Copies src without its first `skip` bytes to dst. */
static void copy_from(const char *src, long skip, const char *dst)
{
    FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
    assert_non_null(in);
    assert_non_null(out);
    fseek(in, skip, SEEK_SET);
    char buf[65536];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, in)) > 0)
        assert_int_equal(fwrite(buf, 1, n, out), n);
    fclose(in);
    fclose(out);
}

/* ---- the seal: damage refused before HDF5 reads a byte ------------------------ */

static void test_seal_truncated(void **state)
{
    fixture *fx = *state;
    struct stat sb;
    stat(fx->file, &sb);
    assert_int_equal(truncate(fx->file, sb.st_size - 1), 0);
    expect_bad_as_is(fx, fx->file, VG_ERR_FORMAT, "bytes follow the seal, the seal says");
}

static void test_seal_flipped_byte(void **state)
{
    fixture *fx = *state;
    struct stat sb;
    stat(fx->file, &sb);
    flip_byte(fx, (long)sb.st_size / 2);
    expect_bad_as_is(fx, fx->file, VG_ERR_FORMAT, "damaged or edited: the SHA-256 of its HDF5 image");
}

static void test_seal_text_damaged(void **state)
{
    fixture *fx = *state;
    flip_byte(fx, 30); /* inside "sha256 <hex>" */
    expect_bad_as_is(fx, fx->file, VG_ERR_FORMAT, "its voltgate seal (the first 512 bytes) does not parse");
}

/* An intended edit through HDF5 is refused until it is sealed again; the
 * edited file then reads, with the edit. */
static void test_seal_after_hdf5_edit(void **state)
{
    fixture *fx = *state;
    set_str_attr(fx, "/", "source", "synthetic-edited");
    expect_bad_as_is(fx, fx->file, VG_ERR_FORMAT, "damaged or edited");
    assert_int_equal(vg_golden_seal(fx->file), VG_OK);
    vg_golden_file f;
    assert_int_equal(vg_golden_read(fx->file, &f), VG_OK);
    assert_string_equal(f.source, "synthetic-edited");
    vg_golden_free(&f);
}

/* A file written before seals (the HDF5 image alone) is refused, not
 * parsed; `voltgate golden seal` checks it in a child and seals it. */
static void test_unsealed_refused_then_sealed(void **state)
{
    fixture *fx = *state;
    char old[600];
    snprintf(old, sizeof old, "%s/unsealed.h5", fx->dir);
    copy_from(fx->file, 512, old);
    expect_bad_as_is(fx, old, VG_ERR_FORMAT, "no voltgate seal");
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "%s golden seal %s >/dev/null", tool(), old);
    assert_int_equal(system(cmd), 0);
    /* sealing the image again gives the same bytes as the original writer */
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", old, fx->file);
    assert_int_equal(system(cmd), 0);
    vg_golden_file f;
    assert_int_equal(vg_golden_read(old, &f), VG_OK);
    vg_golden_free(&f);
}

/* The inputs that crash libhdf5 1.10 (fuzzing) are refused in this process
 * with one line, before HDF5 parses them.  Without the seal, reading them
 * here is a heap-use-after-free / heap-buffer-overflow inside H5Aexists:
 * a crash under `make sanitize` (ASan), and in a plain build whenever the
 * freed memory is reused. */
static void test_hdf5_crashers_refused_in_process(void **state)
{
    fixture *fx = *state;
    expect_bad_as_is(fx, "suites/fuzz/regressions/fuzz_golden/hdf5_uaf_attr_exists",
                     VG_ERR_FORMAT, "no voltgate seal");
    expect_bad_as_is(fx, "suites/fuzz/regressions/fuzz_golden/hdf5_overflow_attr_exists",
                     VG_ERR_FORMAT, "no voltgate seal");
}

static void test_truncated(void **state)
{
    fixture *fx = *state;
    struct stat sb;
    stat(fx->file, &sb);
    assert_int_equal(truncate(fx->file, sb.st_size / 2), 0);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "truncated");
}

static void test_not_hdf5(void **state)
{
    fixture *fx = *state;
    FILE *fp = fopen(fx->file, "w");
    fputs("M,N,K\n1,2,3\n", fp);
    fclose(fp);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "not an HDF5 file");
}

static void test_missing_file(void **state)
{
    fixture *fx = *state;
    char gone[600];
    snprintf(gone, sizeof gone, "%s/gone.h5", fx->dir);
    expect_bad(fx, gone, VG_ERR_IO, "cannot open");
}

static void test_flipped_byte_contiguous(void **state)
{
    fixture *fx = *state;
    hsize_t size;
    haddr_t a = data_address(fx, "cases/m001/x", &size);
    flip_byte(fx, (long)(a + size / 2));
    expect_bad(fx, fx->file, VG_ERR_CHECKSUM, "dataset 'cases/m001/x': SHA-256 mismatch");
}

static void test_flipped_byte_compressed_chunk(void **state)
{
    fixture *fx = *state;
    hsize_t size;
    haddr_t a = data_address(fx, "w_dequant", &size);
    flip_byte(fx, (long)(a + size / 2));
    /* deflate notices or the hash does: either way the dataset is named */
    vg_golden_file f;
    assert_int_equal(vg_golden_seal(fx->file), VG_OK);
    vg_status st = vg_golden_read(fx->file, &f);
    assert_true(st == VG_ERR_FORMAT || st == VG_ERR_CHECKSUM);
    expect_bad(fx, fx->file, st, "dataset 'w_dequant'");
}

static void test_missing_dataset(void **state)
{
    fixture *fx = *state;
    delete_link(fx, "w_scale");
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "dataset 'w_scale' is missing");
}

static void test_missing_case_dataset(void **state)
{
    fixture *fx = *state;
    delete_link(fx, "cases/m064/y_ref");
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "dataset 'cases/m064/y_ref' is missing");
}

static void test_shape_disagrees(void **state)
{
    fixture *fx = *state;
    set_int_attr(fx, "/", "N", 201);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "dataset 'w_q': extents [1][200][392] disagree");
}

/* A weight dataset whose extents disagree while every case agrees. */
static void test_weight_extents_disagree(void **state)
{
    fixture *fx = *state;
    hsize_t d[3] = {1, 200, 391};
    replace_dataset(fx, "w_q", H5T_STD_U8LE, 3, d);
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "dataset 'w_q': extents [1][200][391] disagree with the attributes "
               "(expected [1][200][392])");
}

static void test_unknown_family(void **state)
{
    fixture *fx = *state;
    set_str_attr(fx, "/", "family", "fp7");
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "attribute 'family': unknown family 'fp7'");
}

static void test_unknown_path(void **state)
{
    fixture *fx = *state;
    set_str_attr(fx, "/", "path", "zigzag");
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "attribute 'path': unknown path 'zigzag'");
}

/* A claim of a huge shape is refused before any allocation. */
static void test_huge_shape_refused(void **state)
{
    fixture *fx = *state;
    set_int_attr(fx, "/cases/m001", "M", (int64_t)1 << 30);
    expect_bad(fx, fx->file, VG_ERR_LIMIT, "attribute 'M' = 1073741824 is outside");
}

/* A large but in-bounds claim disagrees with the extents: refused without
 * allocating the claimed 4 GiB (the test would be slow or die otherwise). */
static void test_large_claim_checked_against_extents(void **state)
{
    fixture *fx = *state;
    set_int_attr(fx, "/", "N", 1000000);
    set_int_attr(fx, "/", "K", 1000000);
    clock_t t0 = clock();
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "disagree with the attributes");
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 5.0);
}

/* Extents that agree with huge attributes (an empty chunked dataset, a few
 * KiB on disk, claiming 512 MiB) are refused by the size bound before the
 * reader allocates anything. */
static void test_consistent_huge_dataset_refused(void **state)
{
    fixture *fx = *state;
    set_int_attr(fx, "/", "N", 32768);
    set_int_attr(fx, "/", "K", 16384);
    hid_t fid = open_rw(fx);
    assert_true(H5Ldelete(fid, "w_q", H5P_DEFAULT) >= 0);
    hsize_t dims[3] = {1, 32768, 16384}, chunk[3] = {1, 64, 16384};
    hid_t sp = H5Screate_simple(3, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 3, chunk);
    hid_t ds = H5Dcreate2(fid, "w_q", H5T_STD_U8LE, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(ds >= 0);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(fid);
    expect_bad(fx, fx->file, VG_ERR_LIMIT, "dataset 'w_q': [1][32768][16384] elements exceed the 256 MiB bound");
}

static void test_wrong_dtype(void **state)
{
    fixture *fx = *state;
    hsize_t d[3] = {1, 200, 392};
    replace_dataset(fx, "w_q", H5T_STD_U16LE, 3, d);
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "dataset 'w_q': expected uint8 (format e4m3), found uint16");
}

static void test_wrong_float_type(void **state)
{
    fixture *fx = *state;
    hsize_t d[3] = {1, 200, 392};
    replace_dataset(fx, "w_dequant", H5T_IEEE_F64LE, 3, d);
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "dataset 'w_dequant': expected float32 (format f32), found float64");
}

static void test_wrong_rank(void **state)
{
    fixture *fx = *state;
    hsize_t d[1] = {392};
    replace_dataset(fx, "cases/m001/x", H5T_STD_U16LE, 1, d);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "dataset 'cases/m001/x': expected rank 2, found rank 1");
}

static void test_hash_attribute_edited(void **state)
{
    fixture *fx = *state;
    set_str_attr(fx, "/", "sha256_w_q",
                 "0000000000000000000000000000000000000000000000000000000000000000");
    expect_bad(fx, fx->file, VG_ERR_CHECKSUM, "dataset 'w_q': SHA-256 mismatch");
}

static void test_norm_attribute_edited(void **state)
{
    fixture *fx = *state;
    hid_t fid = open_rw(fx);
    hid_t o = H5Oopen(fid, "/cases/m016", H5P_DEFAULT);
    hid_t a = H5Aopen(o, "y_ref_norm", H5P_DEFAULT);
    assert_true(a >= 0);
    double v = 1.0;
    assert_true(H5Awrite(a, H5T_NATIVE_DOUBLE, &v) >= 0);
    H5Aclose(a);
    H5Oclose(o);
    H5Fclose(fid);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "attribute 'y_ref_norm' = 1 disagrees");
}

static void test_missing_attribute(void **state)
{
    fixture *fx = *state;
    hid_t fid = open_rw(fx);
    assert_true(H5Adelete(fid, "seed") >= 0);
    H5Fclose(fid);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "attribute 'seed' is missing");
}

static void test_case_count_disagrees(void **state)
{
    fixture *fx = *state;
    set_int_attr(fx, "/", "cases", 11);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "attribute 'cases' = 11 but group 'cases' holds 10");
}

static void test_schema_version(void **state)
{
    fixture *fx = *state;
    set_int_attr(fx, "/", "schema_version", 2);
    expect_bad(fx, fx->file, VG_ERR_FORMAT, "attribute 'schema_version' = 2");
}

/* One byte of the group's name heap changed: the name index lists 'm001'
 * for two entries (found by fuzz_golden).  The reader must not read case
 * m001 twice and never read m002; it refuses the file naming the group. */
static void test_duplicate_case_name(void **state)
{
    fixture *fx = *state;
    patch_unique_bytes(fx, "m002", "m001");
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "group 'cases' lists the case name 'm001' twice (entries 0 and 1)");
}

/* The same kind of damage giving names out of order. */
static void test_case_names_out_of_order(void **state)
{
    fixture *fx = *state;
    patch_unique_bytes(fx, "m002", "m000");
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "group 'cases': entry 1 'm000' sorts before entry 0 'm001'");
}

/* fuzz_golden's own input (an awq grouped file whose t01 link reads as
 * t02): refused the same way. */
static void test_duplicate_case_name_fuzz_input(void **state)
{
    fixture *fx = *state;
    /* an unsealed HDF5 image that vg_golden_seal cannot read: forge its seal */
    forge_seal("suites/fuzz/regressions/fuzz_golden/dup_case_name", fx->file);
    expect_bad_as_is(fx, fx->file, VG_ERR_FORMAT, "group 'cases' lists the case name 't02' twice");
}

/* A recipe weight whose regenerated data does not match its hashes (as when
 * the generator changed) is refused with a message saying so. */
static void test_recipe_mismatch(void **state)
{
    fixture *fx = *state;
    int32_t tok[] = {2};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_FP8;
    a.path = VG_PATH_GROUPED;
    a.n = 136;
    a.k = 200;
    a.groups = 2;
    a.seed = 5;
    a.tokens_list = tok;
    a.tokens_count = 1;
    a.recipe_weights = 1;
    vg_golden_file f;
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    assert_int_equal(vg_golden_write(fx->file, &f), VG_OK);
    vg_golden_free(&f);
    /* the recipe reads back, weights rebuilt */
    assert_int_equal(vg_golden_read(fx->file, &f), VG_OK);
    assert_int_equal(f.weights_stored, 0);
    assert_non_null(f.w_q);
    vg_golden_free(&f);
    /* another seed rebuilds another weight: the hashes no longer match */
    set_int_attr(fx, "/", "seed", 6);
    expect_bad(fx, fx->file, VG_ERR_CHECKSUM, "recipe weight 'w_q': the regenerated data");
}

/* A small recipe file (nvfp4 moe, 3 x 16 x 32) whose N was changed to
 * 262161: within RECIPE_MAX_ELEMENTS, so rebuilding the weight first would
 * synthesize, quantize and hash 25 M weights (seconds; fuzz_golden's slow
 * input recipe_n262161).  The cases' extents already disagree with N: the
 * reader must say so, naming the case dataset, before any rebuilding. */
static void test_recipe_shape_checked_before_rebuild(void **state)
{
    fixture *fx = *state;
    static const int32_t routing[] = {2, 0, 1};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_NVFP4;
    a.path = VG_PATH_MOE;
    a.n = 16;
    a.k = 32;
    a.groups = 3;
    a.seed = 7;
    a.routings = routing;
    a.routing_count = 1;
    a.recipe_weights = 1;
    vg_golden_file f;
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    assert_int_equal(vg_golden_write(fx->file, &f), VG_OK);
    vg_golden_free(&f);
    set_int_attr(fx, "/", "N", 262161);
    clock_t t0 = clock();
    vg_status st = vg_golden_read(fx->file, &f);
    double secs = (double)(clock() - t0) / CLOCKS_PER_SEC;
    print_message("  refused in %.3f s CPU: %s\n", secs, vg_last_error());
    assert_int_equal(st, VG_ERR_FORMAT);
    assert_true(secs < 0.5);
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "dataset 'cases/r0/y_ref': extents [3][16] disagree with the attributes "
               "(expected [3][262161])");
}

/* ---- data the file does not hold ------------------------------------------------- */

/* fx->file := a small fp8 dense file, 16 x 32, one case m002 (M = 2). */
static void small_dense_file(const fixture *fx)
{
    static const int32_t ms[] = {2};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_FP8;
    a.path = VG_PATH_DENSE;
    a.n = 16;
    a.k = 32;
    a.groups = 1;
    a.seed = 3;
    a.m_list = ms;
    a.m_count = 1;
    vg_golden_file f;
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    assert_int_equal(vg_golden_write(fx->file, &f), VG_OK);
    vg_golden_free(&f);
}

/* Replaces dataset `name` by an unwritten one of the given extents:
 * chunked 1 x 1 with deflate (a few hundred bytes whatever it claims), or
 * contiguous (nothing allocated until written). */
static void unwritten_dataset(const fixture *fx, const char *name, hid_t type, const hsize_t *dims,
                              int chunked)
{
    hid_t fid = open_rw(fx);
    assert_true(H5Ldelete(fid, name, H5P_DEFAULT) >= 0);
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (chunked) {
        hsize_t chunk[2] = {1, 1};
        assert_true(H5Pset_chunk(dcpl, 2, chunk) >= 0);
        assert_true(H5Pset_deflate(dcpl, 6) >= 0);
    }
    hid_t ds = H5Dcreate2(fid, name, type, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    assert_true(ds >= 0);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(sp);
    H5Fclose(fid);
}

/* Peak resident memory of this process, KiB. */
static long peak_rss_kib(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    while (fp && fgets(line, sizeof line, fp))
        if (!strncmp(line, "VmHWM:", 6))
            kib = strtol(line + 6, NULL, 10);
    if (fp)
        fclose(fp);
    return kib;
}

/* A ~10 KB file whose case claims M = 2^20 with x [2^20][32] and y_ref
 * [2^20][16] never written (64 MiB each, inside the per-dataset bound):
 * refused from the storage size, before anything is allocated or read
 * (test_resource_bounds' golden_huge_shapes, finding of helper F).  The
 * read runs in a child so that its peak memory can be measured alone. */
static void test_unwritten_chunked_claim_refused(void **state)
{
    fixture *fx = *state;
    small_dense_file(fx);
    set_int_attr(fx, "/cases/m002", "M", 1 << 20);
    hid_t fid = open_rw(fx);
    hid_t c = H5Oopen(fid, "/cases/m002", H5P_DEFAULT);
    hid_t ta = H5Aopen(c, "tokens", H5P_DEFAULT);
    int32_t tok = 1 << 20;
    assert_true(H5Awrite(ta, H5T_NATIVE_INT32, &tok) >= 0);
    H5Aclose(ta);
    H5Oclose(c);
    H5Fclose(fid);
    hsize_t dx[2] = {1 << 20, 32}, dy[2] = {1 << 20, 16};
    unwritten_dataset(fx, "cases/m002/x", H5T_STD_U16LE, dx, 1);
    unwritten_dataset(fx, "cases/m002/y_ref", H5T_IEEE_F32LE, dy, 1);
    struct stat sb;
    assert_int_equal(stat(fx->file, &sb), 0);
    print_message("  file of %lld bytes claims 128 MiB\n", (long long)sb.st_size);
    assert_true(sb.st_size < 64 * 1024);

    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        long before = peak_rss_kib();
        vg_golden_file f;
        vg_status st = vg_golden_read(fx->file, &f);
        long grew = peak_rss_kib() - before;
        fprintf(stderr, "  child: %s, peak RSS grew %ld KiB: %s\n", vg_status_str(st), grew,
                vg_last_error());
        _exit(st != VG_ERR_FORMAT ? 1 : grew > 16 * 1024 ? 2 : 0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    if (WEXITSTATUS(status))
        fail_msg("child check %d failed (1 status, 2 memory)", WEXITSTATUS(status));
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "dataset 'cases/m002/x': the file stores 0 bytes for its 67108864 (compressed more "
               "than 1032:1, beyond deflate)");
}

/* The same with a contiguous (uncompressed) x: it must store every byte. */
static void test_unwritten_contiguous_claim_refused(void **state)
{
    fixture *fx = *state;
    small_dense_file(fx);
    hsize_t dx[2] = {2, 32};
    unwritten_dataset(fx, "cases/m002/x", H5T_STD_U16LE, dx, 0);
    expect_bad(fx, fx->file, VG_ERR_FORMAT,
               "dataset 'cases/m002/x': the file stores 0 of its 128 bytes (uncompressed)");
}

/* The rule refuses nothing the writer writes, even data that compresses
 * as well as deflate can: an fp16 file of constant weights and activations
 * (w_dequant 16 MiB of 1.0f) reads back. */
static void test_most_compressible_data_accepted(void **state)
{
    fixture *fx = *state;
    static const int32_t ms[] = {4};
    vg_golden_gen_args a;
    memset(&a, 0, sizeof a);
    a.family = VG_FAMILY_FP16;
    a.path = VG_PATH_DENSE;
    a.n = 2048;
    a.k = 2048;
    a.groups = 1;
    a.seed = 1;
    a.m_list = ms;
    a.m_count = 1;
    vg_golden_file f;
    assert_int_equal(vg_golden_generate(&a, &f), VG_OK);
    size_t nk = (size_t)a.n * (size_t)a.k;
    uint16_t *q = f.w_q;
    for (size_t i = 0; i < nk; i++) {
        q[i] = 0x3C00;   /* 1.0 in FP16 */
        f.w_dequant[i] = 1.0f;
    }
    for (size_t i = 0; i < (size_t)ms[0] * (size_t)a.k; i++)
        f.cases[0].x[i] = 0x3C00;
    assert_int_equal(vg_golden_compute_reference(&f, &f.cases[0]), VG_OK);
    assert_int_equal(vg_golden_write(fx->file, &f), VG_OK);
    vg_golden_free(&f);

    hid_t fid = H5Fopen(fx->file, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(fid, "w_dequant", H5P_DEFAULT);
    double ratio = (double)(nk * sizeof(float)) / (double)H5Dget_storage_size(ds);
    H5Dclose(ds);
    H5Fclose(fid);
    print_message("  w_dequant compressed %.0f:1\n", ratio);
    assert_true(ratio > 500.0);   /* the case is as extreme as meant */
    if (vg_golden_read(fx->file, &f) != VG_OK)
        fail_msg("%s", vg_last_error());
    vg_golden_free(&f);
}

/* Random damage (fixed seed): 60 copies with a few flipped bytes or a cut
 * tail each either still read (a byte HDF5 never uses) or fail with a
 * message naming the file; nothing crashes. */
static void test_random_damage(void **state)
{
    fixture *fx = *state;
    FILE *fp = fopen(SOURCE, "rb");
    assert_non_null(fp);
    fseek(fp, 0, SEEK_END);
    long size = ftell(fp);
    fseek(fp, 0, SEEK_SET);
    unsigned char *orig = malloc((size_t)size), *buf = malloc((size_t)size);
    assert_int_equal(fread(orig, 1, (size_t)size, fp), (size_t)size);
    fclose(fp);
    uint64_t s = 12345;
    int failed_reads = 0;
    for (int round = 0; round < 60; round++) {
        memcpy(buf, orig, (size_t)size);
        long len = size;
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        int flips = 1 + (int)((s >> 60) & 3);
        for (int i = 0; i < flips; i++) {
            s = s * 6364136223846793005ull + 1442695040888963407ull;
            buf[(s >> 16) % (uint64_t)size] ^= (unsigned char)(1 + (s >> 8) % 255);
        }
        if (round % 10 == 9)
            len = (long)((s >> 20) % (uint64_t)size);
        FILE *out = fopen(fx->file, "wb");
        fwrite(buf, 1, (size_t)len, out);
        fclose(out);
        vg_golden_file f;
        vg_status st = vg_golden_read(fx->file, &f);
        if (st == VG_OK) {
            vg_golden_free(&f);
        } else {
            failed_reads++;
            assert_non_null(strstr(vg_last_error(), fx->file));
        }
    }
    print_message("%d of 60 damaged copies refused\n", failed_reads);
    assert_true(failed_reads >= 50);
    free(orig);
    free(buf);
}

/* ---- issue 29: the seal's size first, messages that say what is wrong ------- */

/* A file grown to 3 GiB (sparse) behind an intact seal is refused on its
 * size, before a byte of it is hashed (hashing it takes seconds). */
static void test_seal_size_checked_before_hashing(void **state)
{
    fixture *fx = *state;
    assert_int_equal(truncate(fx->file, (off_t)3 << 30), 0);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    vg_golden_file f;
    vg_status st = vg_golden_read(fx->file, &f);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    print_message("  -> %.3f s: %s\n", s, vg_last_error());
    assert_int_equal(st, VG_ERR_FORMAT);
    assert_non_null(strstr(vg_last_error(), "bytes follow the seal, the seal says"));
    if (s > 1.5)
        fail_msg("refusing a 3 GiB file took %.1f s: the whole file was hashed first", s);
}

/* A seal whose bytes line is negative does not parse; its number is not
 * wrapped to 2^64 - 5 and echoed. */
static void test_seal_negative_bytes(void **state)
{
    fixture *fx = *state;
    size_t n = 0;
    char *image = vgtest_read_file(fx->file, &n);
    char *bytes = strstr(image, "\nbytes ");
    assert_non_null(bytes);
    char *end = strchr(bytes + 7, '\n');
    memset(bytes + 7, 0, (size_t)(end + 1 - (bytes + 7)));
    memcpy(bytes + 7, "-5\n", 3);
    FILE *out = fopen(fx->file, "wb");
    assert_int_equal(fwrite(image, 1, n, out), n);
    fclose(out);
    free(image);
    expect_bad_as_is(fx, fx->file, VG_ERR_FORMAT, "does not parse");
    assert_null(strstr(vg_last_error(), "18446744073709551611"));
}

/* A seal overwritten with zeros leaves the HDF5 signature at byte 512: the
 * message says so, not "no HDF5 signature". */
static void test_zeroed_seal_names_signature_at_512(void **state)
{
    fixture *fx = *state;
    int fd = open(fx->file, O_WRONLY);
    assert_true(fd >= 0);
    char zeros[512] = {0};
    assert_int_equal(pwrite(fd, zeros, sizeof zeros, 0), (ssize_t)sizeof zeros);
    close(fd);
    expect_bad_as_is(fx, fx->file, VG_ERR_FORMAT, "an HDF5 signature follows at byte 512");
    assert_null(strstr(vg_last_error(), "no HDF5 signature"));
}

/* A FIFO in place of a golden file is refused at once. */
static void test_fifo_refused(void **state)
{
    fixture *fx = *state;
    char fifo[600];
    snprintf(fifo, sizeof fifo, "%s/pipe.h5", fx->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    alarm(20);
    vg_golden_file f;
    assert_int_equal(vg_golden_read(fifo, &f), VG_ERR_IO);
    alarm(0);
    assert_non_null(strstr(vg_last_error(), "not a regular file"));
}


int main(int argc, char **argv)
{

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(test_pristine_copy_is_good),
        T(test_seal_truncated),
        T(test_seal_flipped_byte),
        T(test_seal_text_damaged),
        T(test_seal_after_hdf5_edit),
        T(test_seal_size_checked_before_hashing),
        T(test_seal_negative_bytes),
        T(test_zeroed_seal_names_signature_at_512),
        T(test_fifo_refused),
        T(test_unsealed_refused_then_sealed),
        T(test_hdf5_crashers_refused_in_process),
        T(test_truncated),
        T(test_not_hdf5),
        T(test_missing_file),
        T(test_flipped_byte_contiguous),
        T(test_flipped_byte_compressed_chunk),
        T(test_missing_dataset),
        T(test_missing_case_dataset),
        T(test_shape_disagrees),
        T(test_weight_extents_disagree),
        T(test_unknown_family),
        T(test_unknown_path),
        T(test_huge_shape_refused),
        T(test_large_claim_checked_against_extents),
        T(test_consistent_huge_dataset_refused),
        T(test_wrong_dtype),
        T(test_wrong_float_type),
        T(test_wrong_rank),
        T(test_hash_attribute_edited),
        T(test_norm_attribute_edited),
        T(test_missing_attribute),
        T(test_case_count_disagrees),
        T(test_schema_version),
        T(test_duplicate_case_name),
        T(test_case_names_out_of_order),
        T(test_duplicate_case_name_fuzz_input),
        T(test_recipe_mismatch),
        T(test_recipe_shape_checked_before_rebuild),
        T(test_unwritten_chunked_claim_refused),
        T(test_unwritten_contiguous_claim_refused),
        T(test_most_compressible_data_accepted),
        T(test_random_damage),
    };
    return VGTEST_MAIN("golden_badinput", tests);
}
