/*
 * Coordinated warm-up on several GPUs through NCCL (issue 8), one process
 * per GPU, on the cuda backend with its real timers.
 *
 *   coord_nccl_test [--ranks N] WORKDIR        (N defaults to 2)
 *
 * The program launches itself N times (no mpirun needed: the GPU image may
 * not have MPI); rank 0 writes the ncclUniqueId to WORKDIR/nccl.id and the
 * others read it.  Each rank r opens cuda device r and runs:
 *
 *   coordinated   vg_warmup() of wo_a (fp8 grouped 1024x4096, 8 groups) and
 *                 an fp8 dense 1024x4096 layer with fp8_coordinated_tuning
 *                 and freeze_tuning_after_warmup, the vg_comm built by
 *                 voltgate/coord_nccl.h.  Checked: same number of shapes
 *                 measured on every rank, the same plan in every decision
 *                 line of the trace, LUT files identical byte for byte
 *                 (hash through NCCL, and rank 0 compares the files).
 *   uncoordinated the same warm-up with coordination off, for comparison:
 *                 whether the ranks' own choices differ is reported, not
 *                 asserted (real timings decide it).
 *
 * Traces and LUTs stay in WORKDIR (coord.trace.R, coord.lut.R, local.*).
 * Exit 0 pass, 1 fail, 77 skip (fewer than N GPUs).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "voltgate/coord.h"
#include "voltgate/coord_nccl.h"
#include "voltgate/runtime.h"

#define SKIP 77
#define LAUNCH_TIMEOUT_S 540

static int g_rank, g_size, g_failures;
static const char *g_dir;

#define CHECK(cond, ...)                                              \
    do {                                                              \
        if (!(cond)) {                                                \
            g_failures++;                                             \
            fprintf(stderr, "rank %d: FAIL (line %d): ", g_rank, __LINE__); \
            fprintf(stderr, __VA_ARGS__);                             \
            fputc('\n', stderr);                                      \
        }                                                             \
    } while (0)

static void fatal(const char *what, const char *detail)
{
    fprintf(stderr, "rank %d: %s: %s\n", g_rank, what, detail);
    exit(1);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    *len = 0;
    if (!f)
        return NULL;
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *g = realloc(buf, cap * 2);
            if (!g) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = g;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    *len = n;
    return buf;
}

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The plan= values of the decision lines of a trace, "a,b,...". */
static char *decision_plans(const char *text)
{
    size_t cap = strlen(text) + 1, used = 0;
    char *out = malloc(cap);
    if (!out)
        return NULL;
    out[0] = '\0';
    for (const char *line = text; line && *line;) {
        const char *nl = strchr(line, '\n');
        if (strncmp(line, "vg-trace ", 9) == 0) {
            const char *p = strstr(line, " plan=");
            if (p && (!nl || p < nl)) {
                p += 6;
                size_t len = strcspn(p, " \n");
                memcpy(out + used, p, len);
                used += len;
                out[used++] = ',';
                out[used] = '\0';
            }
        }
        line = nl ? nl + 1 : NULL;
    }
    return out;
}

/* 1 when every rank passed the same value (through the coordination comm). */
static int same_everywhere(const vg_comm *comm, uint64_t value)
{
    int64_t v = (int64_t)(value >> 2), mm[2] = {v, -v};
    vg_status st = comm->allreduce_min_i64(mm, 2, comm->handle);
    if (st != VG_OK)
        fatal("allreduce", vg_last_error());
    return mm[0] == -mm[1];
}

typedef struct warm_result {
    uint64_t shapes, lut_hash, plans_hash;
    vg_coord_stats cs;
} warm_result;

static void warm(const char *name, const char *cfg_json, const vg_comm *comm, warm_result *out)
{
    vg_device *dev = NULL;
    vg_status st = vg_device_open("cuda", g_rank, &dev);
    if (st != VG_OK)
        fatal("vg_device_open", vg_last_error());
    char trace[1200], lut[1200];
    snprintf(trace, sizeof trace, "%s/%s.trace.%d", g_dir, name, g_rank);
    snprintf(lut, sizeof lut, "%s/%s.lut.%d", g_dir, name, g_rank);
    unlink(trace);
    vg_trace_set(dev, trace);
    if ((st = vg_device_set_comm(dev, comm)) != VG_OK)
        fatal("vg_device_set_comm", vg_last_error());
    vg_config *cfg = NULL;
    if ((st = vg_config_parse(cfg_json, &cfg)) != VG_OK)
        fatal("vg_config_parse", vg_last_error());
    vg_layer layers[2] = {
        {.family = VG_FAMILY_FP8, .path = VG_PATH_GROUPED, .n = 1024, .k = 4096, .groups = 8},
        {.family = VG_FAMILY_FP8, .path = VG_PATH_DENSE, .n = 1024, .k = 4096, .groups = 1},
    };
    vg_warmup_report rep;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    st = vg_warmup(dev, cfg, layers, 2, &rep);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    CHECK(st == VG_OK, "%s warm-up: %s: %s", name, vg_status_str(st), vg_last_error());
    out->shapes = rep.shapes_measured;
    CHECK(vg_lut_export(dev, lut, 0) == VG_OK, "%s: LUT export: %s", name, vg_last_error());
    vg_device_coord_stats(dev, &out->cs);
    vg_device_set_comm(dev, NULL);
    vg_device_close(dev);
    vg_config_free(cfg);

    size_t len;
    char *text = slurp(lut, &len);
    out->lut_hash = text ? fnv(text, len) : 0;
    free(text);
    text = slurp(trace, &len);
    char *plans = text ? decision_plans(text) : NULL;
    out->plans_hash = plans ? fnv(plans, strlen(plans)) : 0;
    free(plans);
    free(text);
    printf("rank %d %s: %llu shapes measured in %.2f s, rounds %llu, measured together %llu, "
           "agreed plan differed from this rank's own fastest on %llu, LUT %016llx\n",
           g_rank, name, (unsigned long long)rep.shapes_measured,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           (unsigned long long)out->cs.agreements, (unsigned long long)out->cs.measured,
           (unsigned long long)out->cs.diverged, (unsigned long long)out->lut_hash);
    fflush(stdout);
}

static int files_equal(const char *name)
{
    char p0[1200], pq[1200];
    snprintf(p0, sizeof p0, "%s/%s.lut.0", g_dir, name);
    size_t l0, lq;
    char *a = slurp(p0, &l0);
    int same = a != NULL;
    for (int q = 1; q < g_size && same; q++) {
        snprintf(pq, sizeof pq, "%s/%s.lut.%d", g_dir, name, q);
        char *b = slurp(pq, &lq);
        same = b && lq == l0 && memcmp(a, b, l0) == 0;
        free(b);
    }
    free(a);
    return same;
}

static int rank_main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess)
        count = 0;
    if (count < g_size) {
        if (g_rank == 0)
            printf("skipped: %d CUDA device(s), %d needed\n", count, g_size);
        return SKIP;
    }
    if (cudaSetDevice(g_rank) != cudaSuccess)
        fatal("cudaSetDevice", "failed");

    /* The NCCL bootstrap: rank 0's unique id through a file. */
    char idpath[1200], tmp[1300];
    snprintf(idpath, sizeof idpath, "%s/nccl.id", g_dir);
    ncclUniqueId id;
    if (g_rank == 0) {
        ncclResult_t r = ncclGetUniqueId(&id);
        if (r != ncclSuccess)
            fatal("ncclGetUniqueId", ncclGetErrorString(r));
        snprintf(tmp, sizeof tmp, "%s.tmp", idpath);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) != 0 || rename(tmp, idpath) != 0)
            fatal("writing the NCCL id", strerror(errno));
    } else {
        int ok = 0;
        for (int tries = 0; tries < 1200 && !ok; tries++) {
            FILE *f = fopen(idpath, "rb");
            if (f) {
                ok = fread(&id, sizeof id, 1, f) == 1;
                fclose(f);
            }
            if (!ok)
                usleep(50000);
        }
        if (!ok)
            fatal("reading the NCCL id", "rank 0 did not write it within 60 s");
    }
    ncclComm_t nccl;
    ncclResult_t r = ncclCommInitRank(&nccl, g_size, id, g_rank);
    if (r != ncclSuccess)
        fatal("ncclCommInitRank", ncclGetErrorString(r));
    cudaStream_t stream;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
        fatal("cudaStreamCreate", "failed");
    vg_nccl_comm state;
    vg_comm comm;
    if (vg_comm_from_nccl(nccl, stream, &state, &comm) != VG_OK)
        fatal("vg_comm_from_nccl", vg_last_error());
    CHECK(comm.rank == g_rank && comm.size == g_size, "comm says rank %d of %d", comm.rank,
          comm.size);

    warm_result co, lo;
    warm("coord",
         "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":true}},"
         "\"sm70_runtime\":{\"freeze_tuning_after_warmup\":true}}",
         &comm, &co);
    CHECK(co.shapes == GROUPED_DECODE_MAX_TOKENS + VG_TUNE_MAX_DENSE_M,
          "coordinated: %llu shapes measured, want %d", (unsigned long long)co.shapes,
          GROUPED_DECODE_MAX_TOKENS + VG_TUNE_MAX_DENSE_M);
    CHECK(co.cs.measured == co.shapes, "coordinated: %llu rounds measured together, want %llu",
          (unsigned long long)co.cs.measured, (unsigned long long)co.shapes);
    CHECK(same_everywhere(&comm, co.shapes), "coordinated: shape counts differ across ranks");
    CHECK(same_everywhere(&comm, co.plans_hash),
          "coordinated: the ranks' traces show different plans");
    CHECK(same_everywhere(&comm, co.lut_hash), "coordinated: LUT hashes differ across ranks");
    if (g_rank == 0)
        CHECK(files_equal("coord"), "coordinated: LUT files differ byte for byte");

    warm("local", "{\"sm70_fp8\":{\"native\":{\"fp8_coordinated_tuning\":false}}}", &comm, &lo);
    int local_same = same_everywhere(&comm, lo.plans_hash);
    if (g_rank == 0)
        printf("uncoordinated: the ranks' own choices %s (%s LUTs)\n",
               local_same ? "agree on every shape this time" : "DIVERGE",
               files_equal("local") ? "identical" : "different");

    int failures = g_failures;
    int64_t f[1] = {-(int64_t)failures};   /* min of -failures = -max */
    comm.allreduce_min_i64(f, 1, comm.handle);
    vg_nccl_comm_release(&state);
    ncclCommDestroy(nccl);
    cudaStreamDestroy(stream);
    if (g_rank == 0)
        printf("coord_nccl_test: %d ranks, %s\n", g_size, f[0] ? "FAILED" : "passed");
    return f[0] ? 1 : 0;
}

static pid_t g_children[64];
static int g_nchildren;

static void on_alarm(int sig)
{
    (void)sig;
    for (int i = 0; i < g_nchildren; i++)
        kill(g_children[i], SIGKILL);
}

int main(int argc, char **argv)
{
    const char *env_rank = getenv("VG_COORD_RANK");
    int size = 2;
    int argi = 1;
    if (argi + 1 < argc && strcmp(argv[argi], "--ranks") == 0) {
        size = atoi(argv[argi + 1]);
        argi += 2;
    }
    if (argi >= argc || size < 2 || size > 64) {
        fprintf(stderr, "usage: coord_nccl_test [--ranks N (2..64)] WORKDIR\n");
        return 2;
    }
    g_dir = argv[argi];
    if (env_rank) {
        g_rank = atoi(env_rank);
        g_size = size;
        return rank_main();
    }

    /* The launcher: no CUDA here, one child per rank. */
    if (mkdir(g_dir, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "coord_nccl_test: mkdir %s: %s\n", g_dir, strerror(errno));
        return 2;
    }
    char idpath[1200];
    snprintf(idpath, sizeof idpath, "%s/nccl.id", g_dir);
    unlink(idpath);
    for (int r = 0; r < size; r++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            on_alarm(0);
            return 1;
        }
        if (pid == 0) {
            char rank[16];
            snprintf(rank, sizeof rank, "%d", r);
            setenv("VG_COORD_RANK", rank, 1);
            execv("/proc/self/exe", argv);
            perror("execv");
            _exit(1);
        }
        g_children[g_nchildren++] = pid;
    }
    signal(SIGALRM, on_alarm);
    alarm(LAUNCH_TIMEOUT_S);
    int pass = 0, skip = 0, fail = 0;
    for (int i = 0; i < g_nchildren; i++) {
        int status = 0;
        while (waitpid(g_children[i], &status, 0) < 0 && errno == EINTR)
            ;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code == 0)
            pass++;
        else if (code == SKIP)
            skip++;
        else {
            fail++;
            fprintf(stderr, "coord_nccl_test: rank %d exited with %d\n", i, code);
        }
    }
    if (fail)
        return 1;
    return skip == size ? SKIP : skip ? 1 : 0;
}
