/*
 * The LUT: round trip, partition filters, arch and policy mismatch, stale
 * plans, corrupted / truncated / checksum-mismatch files (nothing applied),
 * imported entries in the frozen lookup, and the atomic write under a
 * simulated crash before the rename.
 */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_decision_util.h"

#define N 64
#define K 128

/* FNV-1a 64 again, so the test can forge files with a valid checksum. */
static uint64_t fnv(const char *s, size_t len)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Replaces the checksum line of `text` by a correct one; returns a new string. */
static char *reseal(const char *text)
{
    const char *sum = strstr(text, "checksum fnv1a64=");
    assert_non_null(sum);
    size_t body = (size_t)(sum - text);
    char *out = malloc(body + 64);
    memcpy(out, text, body);
    sprintf(out + body, "checksum fnv1a64=%016" PRIx64 "\n", fnv(text, body));
    return out;
}

/* Replaces every `from` with `to` (same or different length). */
static char *replace_all(const char *text, const char *from, const char *to)
{
    size_t cap = strlen(text) * 2 + 64, n = 0;
    char *out = malloc(cap);
    size_t fl = strlen(from), tl = strlen(to);
    for (const char *p = text; *p;) {
        if (strncmp(p, from, fl) == 0) {
            memcpy(out + n, to, tl);
            n += tl;
            p += fl;
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return out;
}

typedef struct fixture {
    char *dir;
    char lut[600], trace[600];
    vg_config *engine;
    uint64_t engine_hash;
} fixture;

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    f->dir = vgtest_mkdtemp();
    snprintf(f->lut, sizeof f->lut, "%s/cache.lut", f->dir);
    snprintf(f->trace, sizeof f->trace, "%s/trace.log", f->dir);
    f->engine = parse_cfg("{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}}}");
    vg_config_policy_hash(f->engine, &f->engine_hash);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    vg_config_free(f->engine);
    vgtest_rmtree(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

/* Measures dense fp8 M=1..4 in the default partition and grouped awq
 * 1..3 tokens in the engine's: 7 entries. */
static vg_device *tuned_device(fixture *f, script *s, test_layer *d, test_layer *g)
{
    vg_device *dev = open_cpu(s);
    layer_open(d, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 8);
    layer_open(g, dev, VG_FAMILY_AWQ, VG_PATH_GROUPED, N, K, 2, 8);
    for (int32_t m = 1; m <= 4; m++) {
        vg_gemm_args a = layer_call(d, m);
        assert_int_equal(gemm_ok(dev, &a).decision, VG_DECISION_MEASURE);
    }
    vg_policy_enter(dev, f->engine);
    for (int32_t t = 1; t <= 3; t++) {
        vg_gemm_args a = layer_call(g, t);
        assert_int_equal(gemm_ok(dev, &a).decision, VG_DECISION_MEASURE);
    }
    vg_policy_leave();
    return dev;
}

static uint64_t entries(vg_device *dev)
{
    vg_tuning_state ts;
    vg_device_tuning_state(dev, &ts);
    return ts.cache_entries;
}

static void round_trip(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1, .offset = 1};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    char *text = slurp(f->lut);
    assert_true(strncmp(text, "voltgate-lut 2\n", 15) == 0);
    assert_non_null(strstr(text, "entry arch=0 policy="));
    assert_non_null(strstr(text, " family=awq path=grouped n=64 k=128 groups=2 rows=3 plan="));

    script s2 = {.stride = 1};
    vg_device *fresh = open_cpu(&s2);
    assert_int_equal(vg_trace_set(fresh, f->trace), VG_OK);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(fresh, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.applied, 7);
    assert_int_equal(r.skipped_arch + r.skipped_policy + r.skipped_plan, 0);
    char *tr = slurp(f->trace);
    assert_non_null(strstr(tr, "vg-trace-lut action=import file="));
    assert_non_null(strstr(tr, " applied=7 skipped_arch=0 skipped_policy=0 skipped_plan=0\n"));
    free(tr);

    /* Every imported shape is reuse with the plan measured on `dev`. */
    for (int32_t m = 1; m <= 4; m++) {
        vg_gemm_args a = layer_call(&d, m);
        vg_dispatch_info info = gemm_ok(fresh, &a);
        assert_int_equal(info.decision, VG_DECISION_REUSE);
        assert_ptr_equal(info.plan, script_winner(&s, VG_FAMILY_FP8, VG_PATH_DENSE, m));
    }
    vg_policy_enter(fresh, f->engine);
    for (int32_t t = 1; t <= 3; t++) {
        vg_gemm_args a = layer_call(&g, t);
        vg_dispatch_info info = gemm_ok(fresh, &a);
        assert_int_equal(info.decision, VG_DECISION_REUSE);
        assert_ptr_equal(info.plan, script_winner(&s, VG_FAMILY_AWQ, VG_PATH_GROUPED, t));
    }
    vg_policy_leave();
    assert_int_equal(atomic_load(&s2.calls), 0);
    assert_int_equal(measured_total(fresh), 0);   /* imported is not measured */

    /* Exporting the imported cache gives the same bytes. */
    char again[700];
    snprintf(again, sizeof again, "%s/again.lut", f->dir);
    assert_int_equal(vg_lut_export(fresh, again, 0), VG_OK);
    char *text2 = slurp(again);
    assert_string_equal(text, text2);
    free(text2);

    /* Exporting one partition writes only its entries. */
    assert_int_equal(vg_lut_export(dev, again, f->engine_hash), VG_OK);
    text2 = slurp(again);
    int lines = 0;
    for (char *p = strstr(text2, "entry "); p; p = strstr(p + 1, "entry "))
        lines++;
    assert_int_equal(lines, 3);
    assert_null(strstr(text2, "family=fp8"));
    free(text2);
    free(text);
    vg_device_close(fresh);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

static void policy_and_arch_mismatch(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);

    vg_device *fresh = open_cpu(NULL);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(fresh, f->lut, f->engine_hash, &r), VG_OK);
    assert_int_equal(r.applied, 3);
    assert_int_equal(r.skipped_policy, 4);
    assert_int_equal(entries(fresh), 3);
    vg_device_close(fresh);

    /* The same file as if measured on an sm70. */
    char *text = slurp(f->lut);
    char *other = replace_all(text, "entry arch=0 ", "entry arch=70 ");
    char *sealed = reseal(other);
    spit(f->lut, sealed, strlen(sealed));
    fresh = open_cpu(NULL);
    assert_int_equal(vg_trace_set(fresh, f->trace), VG_OK);
    assert_int_equal(vg_lut_import(fresh, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.applied, 0);
    assert_int_equal(r.skipped_arch, 7);
    assert_int_equal(entries(fresh), 0);
    char *tr = slurp(f->trace);
    assert_non_null(strstr(tr, " applied=0 skipped_arch=7 skipped_policy=0 skipped_plan=0\n"));
    free(tr);
    vg_device_close(fresh);
    free(text);
    free(other);
    free(sealed);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

/* A plan that no longer exists, or that does not apply to its entry, is
 * skipped, never launched. */
static void stale_plan(void **state)
{
    fixture *f = *state;
    script s = {.stride = 0, .forced = NULL};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    char *text = slurp(f->lut);
    /* stride 0: every dense entry names the first dense candidate */
    const vg_plan *dense0 = script_winner(&s, VG_FAMILY_FP8, VG_PATH_DENSE, 1);
    const vg_plan *grouped0 = script_winner(&s, VG_FAMILY_AWQ, VG_PATH_GROUPED, 1);
    char from[200], to[200];
    snprintf(from, sizeof from, "plan=%s ", dense0->id);
    snprintf(to, sizeof to, "plan=cpu.dense.retired.sk9 ");
    char *gone = replace_all(text, from, to);
    char *sealed = reseal(gone);
    spit(f->lut, sealed, strlen(sealed));
    vg_device *fresh = open_cpu(NULL);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(fresh, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.skipped_plan, 4);
    assert_int_equal(r.applied, 3);
    vg_gemm_args a = layer_call(&d, 1);
    vg_dispatch_info info = gemm_ok(fresh, &a);
    assert_int_equal(info.decision, VG_DECISION_MEASURE);   /* not the retired plan */
    vg_device_close(fresh);

    /* A plan that exists but not for that path. */
    snprintf(from, sizeof from, "plan=%s ", grouped0->id);
    snprintf(to, sizeof to, "plan=%s ", dense0->id);
    char *wrong = replace_all(text, from, to);
    free(sealed);
    sealed = reseal(wrong);
    spit(f->lut, sealed, strlen(sealed));
    fresh = open_cpu(NULL);
    assert_int_equal(vg_lut_import(fresh, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.skipped_plan, 3);
    assert_int_equal(r.applied, 4);
    vg_device_close(fresh);
    free(text);
    free(gone);
    free(wrong);
    free(sealed);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

static void expect_refused(fixture *f, const char *data, size_t len, vg_status want,
                           const char *msg_part)
{
    spit(f->lut, data, len);
    vg_device *fresh = open_cpu(NULL);
    vg_lut_report r = {.applied = 99};
    vg_status st = vg_lut_import(fresh, f->lut, 0, &r);
    if (st != want || (msg_part && !strstr(vg_last_error(), msg_part)))
        print_error("got %s: %s (want %s, '%s')\n", vg_status_str(st), vg_last_error(),
                    vg_status_str(want), msg_part ? msg_part : "");
    assert_int_equal(st, want);
    if (msg_part)
        assert_non_null(strstr(vg_last_error(), msg_part));
    assert_non_null(strstr(vg_last_error(), f->lut));
    assert_int_equal(r.applied, 0);
    assert_int_equal(entries(fresh), 0);
    vg_device_close(fresh);
}

static void corrupted_truncated_checksum(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    char *text = slurp(f->lut);
    size_t len = strlen(text);

    /* One changed digit in an entry: the checksum catches it. */
    char *flip = strdup(text);
    char *rows = strstr(flip, "rows=2");
    assert_non_null(rows);
    rows[5] = '7';
    expect_refused(f, flip, len, VG_ERR_CHECKSUM, "checksum mismatch");
    /* A damaged checksum line. */
    strcpy(flip, text);
    flip[len - 2] = flip[len - 2] == '0' ? '1' : '0';
    expect_refused(f, flip, len, VG_ERR_CHECKSUM, "checksum mismatch");

    /* Cut short at every length: always refused, nothing applied. */
    for (size_t cut = 0; cut < len; cut++)
        expect_refused(f, text, cut, VG_ERR_FORMAT, "truncated");

    /* Not a LUT at all, binary, another version, a bad line behind a good checksum. */
    expect_refused(f, "hello world\n", 12, VG_ERR_FORMAT, "line 1: not a voltgate LUT");
    char bin[64] = "voltgate-lut 1\n\0\0\0\0";
    expect_refused(f, bin, 40, VG_ERR_FORMAT, "binary");
    char *v2 = replace_all(text, "voltgate-lut 2\n", "voltgate-lut 3\n");
    char *v2s = reseal(v2);
    expect_refused(f, v2s, strlen(v2s), VG_ERR_FORMAT, "unsupported version");
    char *bad = replace_all(text, "groups=2 rows=3", "groups=2 rows=three");
    char *bads = reseal(bad);
    expect_refused(f, bads, strlen(bads), VG_ERR_FORMAT, "line ");
    char *fam = replace_all(text, "family=awq", "family=int3");
    char *fams = reseal(fam);
    expect_refused(f, fams, strlen(fams), VG_ERR_FORMAT, "malformed entry");
    /* Text after an entry's last field: the message quotes that text, not
     * the checksum line after it. */
    char *sum = strstr(text, "\nchecksum");
    assert_non_null(sum);
    const size_t head = (size_t)(sum - text);
    char *extra = malloc(len + 8);
    assert_non_null(extra);
    memcpy(extra, text, head);
    memcpy(extra + head, " n=65", 5);
    strcpy(extra + head + 5, sum);
    char *extras = reseal(extra);
    expect_refused(f, extras, strlen(extras), VG_ERR_FORMAT, "unexpected text after the last field: ' n=65'");

    vg_device *fresh = open_cpu(NULL);
    char missing[700];
    snprintf(missing, sizeof missing, "%s/none.lut", f->dir);
    assert_int_equal(vg_lut_import(fresh, missing, 0, NULL), VG_ERR_IO);
    assert_non_null(strstr(vg_last_error(), missing));
    snprintf(missing, sizeof missing, "%s/no/dir/x.lut", f->dir);
    assert_int_equal(vg_lut_export(dev, missing, 0), VG_ERR_IO);
    vg_device_close(fresh);
    free(text); free(flip); free(v2); free(v2s); free(bad); free(bads); free(fam); free(fams);
    free(extra); free(extras);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

/* Imported entries count as measured in the frozen lookup. */
static void imported_serve_frozen_lookup(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    script s2 = {.stride = 1};
    vg_device *fresh = open_cpu(&s2);
    assert_int_equal(vg_lut_import(fresh, f->lut, 0, NULL), VG_OK);
    assert_int_equal(vg_device_freeze_tuning(fresh), VG_OK);
    test_layer d8;
    layer_open(&d8, fresh, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 8);
    vg_gemm_args a = layer_call(&d8, 4);
    vg_dispatch_info info = gemm_ok(fresh, &a);
    assert_int_equal(info.decision, VG_DECISION_REUSE);
    assert_ptr_equal(info.plan, script_winner(&s, VG_FAMILY_FP8, VG_PATH_DENSE, 4));
    a = layer_call(&d8, 5);
    assert_int_equal(gemm_ok(fresh, &a).decision, VG_DECISION_HEURISTIC);
    assert_int_equal(atomic_load(&s2.calls), 0);
    layer_close(&d8);
    vg_device_close(fresh);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

static void crash_now(const char *tmp)
{
    (void)tmp;
    _exit(42);
}

/* The process dies after writing the temporary file, before the rename:
 * the old LUT is intact and still imports. */
static void crash_before_rename_keeps_old_file(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    assert_int_equal(vg_lut_export(dev, f->lut, f->engine_hash), VG_OK);  /* old: 3 entries */
    char *old = slurp(f->lut);

    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        vg_lut_before_rename_hook = crash_now;
        vg_lut_export(dev, f->lut, 0);   /* new: 7 entries; dies before the rename */
        _exit(0);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 42);   /* it did die inside the export */
    char *now = slurp(f->lut);
    assert_string_equal(now, old);
    vg_device *fresh = open_cpu(NULL);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(fresh, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.applied, 3);
    vg_device_close(fresh);

    /* Without the crash the new file replaces the old one. */
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    free(now);
    now = slurp(f->lut);
    assert_string_not_equal(now, old);
    fresh = open_cpu(NULL);
    assert_int_equal(vg_lut_import(fresh, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.applied, 7);
    vg_device_close(fresh);
    free(old);
    free(now);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

/* ---- issue 29: hostile inputs ------------------------------------------------ */

static void die_by_sigkill(const char *tmp)
{
    (void)tmp;
    raise(SIGKILL);
}

/* How many `<lut>.tmp.*` names the folder holds. */
static int temporaries(const fixture *f)
{
    DIR *d = opendir(f->dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strncmp(e->d_name, "cache.lut.tmp.", 14) == 0;
    closedir(d);
    return n;
}

/* A LUT export killed by SIGKILL between writing its temporary and the
 * rename leaves <lut>.tmp.<pid>: the next export removes it, and leaves
 * the temporary of a writer that is still alive. */
static void lut_killed_export_temporary_removed(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    pid_t dead = fork();
    assert_true(dead >= 0);
    if (dead == 0) {
        vg_lut_before_rename_hook = die_by_sigkill;
        vg_lut_export(dev, f->lut, 0);
        _exit(0);
    }
    int status = 0;
    waitpid(dead, &status, 0);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    assert_int_equal(temporaries(f), 1);

    /* A live writer: a child blocked on a pipe until the test ends. */
    int hold[2];
    assert_int_equal(pipe(hold), 0);
    pid_t live = fork();
    assert_true(live >= 0);
    if (live == 0) {
        close(hold[1]);
        char c;
        while (read(hold[0], &c, 1) < 0)
            ;
        _exit(0);
    }
    close(hold[0]);
    char live_tmp[700];
    snprintf(live_tmp, sizeof live_tmp, "%s.tmp.%ld", f->lut, (long)live);
    spit(live_tmp, "half", 4);
    assert_int_equal(temporaries(f), 2);

    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    if (temporaries(f) != 1)
        print_error("%d temporaries left after an export (want the live writer's only)\n",
                    temporaries(f));
    assert_int_equal(temporaries(f), 1);
    assert_int_equal(access(live_tmp, F_OK), 0);
    close(hold[1]);
    waitpid(live, &status, 0);
    unlink(live_tmp);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

/* An entry whose n overflows int, one with a sign or trailing text in a
 * number, and the same key twice with another plan: each refused, the
 * message naming the field or both lines. */
static void lut_entry_numbers_and_duplicates(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1};
    test_layer d, g;
    vg_device *dev = tuned_device(f, &s, &d, &g);
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    char *text = slurp(f->lut);

    char n64[32];
    snprintf(n64, sizeof n64, "n=%d ", N);
    const char *const bad_n[] = {"n=99999999999 ", "n=+64 ", "n=64x ", "n= ", "n=-64 "};
    for (size_t i = 0; i < sizeof bad_n / sizeof bad_n[0]; i++) {
        char *b = replace_all(text, n64, bad_n[i]);
        char *bs = reseal(b);
        expect_refused(f, bs, strlen(bs), VG_ERR_FORMAT, "field 'n'");
        free(b);
        free(bs);
    }
    char *r = replace_all(text, "rows=3 ", "rows=3z ");
    char *rs = reseal(r);
    expect_refused(f, rs, strlen(rs), VG_ERR_FORMAT, "field 'rows'");
    free(r);
    free(rs);

    /* The first entry again, with another plan id: two lines, one key. */
    const char *e1 = strstr(text, "entry ");
    const char *e1end = strchr(e1, '\n') + 1;
    const char *plan = strstr(e1, " plan=") + 6;
    const char *plan_end = strchr(plan, ' ');
    const char *sum = strstr(text, "checksum fnv1a64=");
    size_t head = (size_t)(sum - text);
    char *dup = malloc(strlen(text) * 2 + 64);
    memcpy(dup, text, head);
    size_t at = head;
    memcpy(dup + at, e1, (size_t)(plan - e1));
    at += (size_t)(plan - e1);
    at += (size_t)sprintf(dup + at, "other_plan");
    memcpy(dup + at, plan_end, (size_t)(e1end - plan_end));
    at += (size_t)(e1end - plan_end);
    strcpy(dup + at, "checksum fnv1a64=0000000000000000\n");
    char *dups = reseal(dup);
    int last_line = 1;
    for (const char *p = dups; *p; p++)
        last_line += *p == '\n';
    last_line -= 2;  /* the appended entry; the checksum line follows it */
    char both[64];
    snprintf(both, sizeof both, "line 2 and line %d", last_line);
    expect_refused(f, dups, strlen(dups), VG_ERR_FORMAT, both);
    free(dup);
    free(dups);
    free(text);
    layer_close(&d);
    layer_close(&g);
    vg_device_close(dev);
}

/* A FIFO as the LUT: refused at once (it would wait for a writer forever),
 * and a folder is named as a folder, not "read error". */
static void lut_fifo_and_folder_refused(void **state)
{
    fixture *f = *state;
    char fifo[700];
    snprintf(fifo, sizeof fifo, "%s/pipe.lut", f->dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    vg_device *dev = open_cpu(NULL);
    /* If the reader blocked, the alarm ends the suite instead of hanging it. */
    alarm(20);
    assert_int_equal(vg_lut_import(dev, fifo, 0, NULL), VG_ERR_IO);
    alarm(0);
    assert_non_null(strstr(vg_last_error(), "not a regular file"));
    assert_int_equal(vg_lut_import(dev, f->dir, 0, NULL), VG_ERR_IO);
    if (!strstr(vg_last_error(), "is a folder"))
        print_error("folder as LUT: %s\n", vg_last_error());
    assert_non_null(strstr(vg_last_error(), "is a folder"));
    vg_device_close(dev);
}

/* A fresh cpu device timed by `s` that imported f->lut, whose one entry
 * must apply. */
static vg_device *import_one_entry(fixture *f, script *s)
{
    vg_device *dev = open_cpu(s);
    vg_lut_report r;
    assert_int_equal(vg_lut_import(dev, f->lut, 0, &r), VG_OK);
    assert_int_equal(r.applied, 1);
    return dev;
}

/* A bucket entry round-trips: the 128 bucket measured at M=100 is written
 * as rows=128, and a fresh device that imports it serves every M of the
 * bucket (and, frozen, the smaller M below it) with that plan, timing
 * nothing. */
static void lut_bucket_round_trip(void **state)
{
    fixture *f = *state;
    script s = {.stride = 1, .offset = 1};
    vg_device *dev = open_cpu(&s);
    test_layer d;
    layer_open(&d, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 200);
    const vg_plan *won = expect_call(dev, &d, 100, VG_DECISION_MEASURE).plan;
    assert_int_equal(vg_lut_export(dev, f->lut, 0), VG_OK);
    char *text = slurp(f->lut);
    assert_non_null(strstr(text, " family=fp8 path=dense n=64 k=128 groups=1 rows=128 plan="));
    assert_null(strstr(text, "rows=100 "));
    free(text);

    script s2 = {.stride = 1};
    vg_device *fresh = import_one_entry(f, &s2);
    const int32_t bucket[] = {65, 100, 127, 128};
    expect_reused(fresh, &d, bucket, sizeof bucket / sizeof bucket[0], won);
    assert_int_equal(vg_device_freeze_tuning(fresh), VG_OK);
    const int32_t below[] = {30};
    expect_reused(fresh, &d, below, 1, won);
    assert_int_equal(atomic_load(&s2.calls), 0);
    assert_int_equal(measured_total(fresh), 0);
    vg_device_close(fresh);
    layer_close(&d);
    vg_device_close(dev);
}

/* A LUT written before the buckets (here a hand-written version-1 file:
 * rows=64, the largest shape the exact limits measured) still imports and
 * serves its shape; the 128 bucket above it is not in it and is measured. */
static void lut_before_buckets_still_imports(void **state)
{
    fixture *f = *state;
    const vg_plan *plan = script_winner(&(script){.stride = 1, .offset = 1}, VG_FAMILY_FP8,
                                        VG_PATH_DENSE, VG_TUNE_MAX_DENSE_M);
    char body[512];
    snprintf(body, sizeof body,
             "voltgate-lut 1\n"
             "entry arch=0 policy=%016" PRIx64 " family=fp8 path=dense n=%d k=%d groups=1 "
             "rows=%d plan=%s us=2.5\n"
             "checksum fnv1a64=0000000000000000\n",
             default_hash(), N, K, VG_TUNE_MAX_DENSE_M, plan->id);
    char *sealed = reseal(body);
    spit(f->lut, sealed, strlen(sealed));
    free(sealed);

    script s = {.stride = 1};
    vg_device *dev = import_one_entry(f, &s);
    test_layer d;
    layer_open(&d, dev, VG_FAMILY_FP8, VG_PATH_DENSE, N, K, 1, 100);
    const int32_t imported[] = {VG_TUNE_MAX_DENSE_M};
    expect_reused(dev, &d, imported, 1, plan);
    assert_int_equal(atomic_load(&s.calls), 0);
    expect_call(dev, &d, VG_TUNE_MAX_DENSE_M + 1, VG_DECISION_MEASURE);
    assert_int_equal(measured_total(dev), 1);
    layer_close(&d);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(policy_and_arch_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(stale_plan, setup, teardown),
        cmocka_unit_test_setup_teardown(corrupted_truncated_checksum, setup, teardown),
        cmocka_unit_test_setup_teardown(imported_serve_frozen_lookup, setup, teardown),
        cmocka_unit_test_setup_teardown(crash_before_rename_keeps_old_file, setup, teardown),
        cmocka_unit_test_setup_teardown(lut_killed_export_temporary_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(lut_entry_numbers_and_duplicates, setup, teardown),
        cmocka_unit_test_setup_teardown(lut_fifo_and_folder_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(lut_bucket_round_trip, setup, teardown),
        cmocka_unit_test_setup_teardown(lut_before_buckets_still_imports, setup, teardown),
    };
    return VGTEST_MAIN("lut", tests);
}
