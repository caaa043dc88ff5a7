/*
 * voltgate replay: warm up, then replay a serving schedule through the
 * tuning runtime, and say which requests measured a shape on the live path.
 *
 *   voltgate replay --config FILE [--lut FILE] --layers SPEC --requests LIST
 *                   [--decode-steps N] [--chunk C] [--backend auto|cpu|cuda]
 *                   [--json FILE] [--engines N]
 *
 * --engines N (1..8) hosts N engines on the device (vg_engine_open with the
 * same config, each its own measured set, freeze and LUT from the config's
 * gemm_lut_path): each warms up, and request r is served by engine
 * r mod N.  Without it the device-level calls (the implicit default engine)
 * serve every request, as before.
 *
 * Each request is a prompt length, prefilled in chunks of C tokens (the last
 * chunk is len mod C when that is not 0), then N decode steps of one token.
 * A chunk of t tokens is one call per layer with t rows per group (dense: M
 * = t); a decode step is one call per layer with one row per group.  Every
 * call really launches on device buffers (synthetic non-zero weights).
 *
 * The last line is exactly
 *   replay: warmup_measured=<n> serving_measured=<n> requests_with_new_shape=<r>/<total>
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "fileio.h"
#include "internal.h"
#include "tools.h"

#define MAX_LAYERS 64
#define MAX_REQUESTS 4096

static void usage(FILE *out)
{
    fprintf(out,
            "usage: voltgate replay --config FILE [--lut FILE] --layers SPEC --requests LIST\n"
            "                       [--decode-steps N] [--chunk C] [--backend auto|cpu|cuda]\n"
            "                       [--json FILE] [--engines N]\n"
            "\n"
            "Warms up the layers inside the config's policy (vg_warmup: grouped decode 1..16\n"
            "tokens per group, dense M 1..64; freezes when freeze_tuning_after_warmup is on),\n"
            "then replays each request: its prompt prefilled in chunks of C tokens (default\n"
            "1020; the last chunk is len mod C), then N decode steps (default 8).\n"
            "\n"
            "  --config FILE     kernel_config JSON\n"
            "  --lut FILE        import FILE before the warm-up when it exists, export the\n"
            "                    config's partition to it at the end\n"
            "  --layers SPEC     comma list of family:path:N:K[:groups] or presets\n"
            "                    (wo_a = fp8:grouped:1024:4096:8)\n"
            "  --requests LIST   comma list of prompt lengths\n"
            "  --json FILE       the result as JSON (tool \"replay\")\n"
            "  --engines N       host N engines (1..8) on the device, each opened with the\n"
            "                    config (own measured set, freeze, LUT: the config's\n"
            "                    gemm_lut_path; --lut is refused with it), each warmed up;\n"
            "                    request r is served by engine r mod N.  The per-request\n"
            "                    lines and the JSON name the engine (engine0, ...; without\n"
            "                    --engines: default); warmup_measured and serving_measured\n"
            "                    are summed over the engines\n"
            "\n"
            "Prints one line per request (measured = shapes measured during it; dispatch_us =\n"
            "time spent deciding, measurements included, launches excluded) and ends with\n"
            "  replay: warmup_measured=<n> serving_measured=<n> requests_with_new_shape=<r>/<total>\n"
            "Every call launches for real: on the cpu backend keep layers small (a full-size\n"
            "wo_a prefill chunk is tens of GFLOP).\n");
}

static int parse_int(const char *s, size_t len, long lo, long hi, long *out)
{
    long long v;
    if (vg_parse_int(s, len, lo, hi, &v) != 0)
        return 0;
    *out = (long)v;
    return 1;
}

/* One "family:path:N:K[:groups]" or a preset into layers[]. */
static int parse_layer(const char *item, vg_layer *l)
{
    if (strcmp(item, "wo_a") == 0)
        item = "fp8:grouped:1024:4096:8";
    char buf[128];
    if (strlen(item) >= sizeof buf)
        return 0;
    /* strtok would skip an empty field and shift the rest into place. */
    if (item[0] == ':' || strstr(item, "::") || (item[0] && item[strlen(item) - 1] == ':'))
        return 0;
    strcpy(buf, item);
    char *parts[6];
    int n = 0;
    for (char *p = strtok(buf, ":"); p && n < 6; p = strtok(NULL, ":"))
        parts[n++] = p;
    if (n < 4 || n > 5)
        return 0;
    long nn, kk, gg = 1;
    if (vg_family_parse(parts[0], &l->family) != VG_OK || vg_path_parse(parts[1], &l->path) != VG_OK)
        return 0;
    if (!parse_int(parts[2], (size_t)-1, 1, 1 << 20, &nn) ||
        !parse_int(parts[3], (size_t)-1, 1, 1 << 20, &kk) ||
        (n == 5 && !parse_int(parts[4], (size_t)-1, 1, 4096, &gg)))
        return 0;
    if (l->path == VG_PATH_DENSE && gg != 1)
        return 0;
    l->n = (int32_t)nn;
    l->k = (int32_t)kk;
    l->groups = (int32_t)gg;
    return 1;
}

typedef struct request_result {
    long prompt;
    uint64_t measured;
    double dispatch_us;
    char engine[24];          /* "default" or "engine<id>" */
} request_result;

#define MAX_ENGINES 8

static const char *op_of(vg_path path)
{
    return path == VG_PATH_DENSE ? "gemm" : path == VG_PATH_MOE ? "moe_gemm" : "grouped_gemm";
}

/* One call per layer with `tokens` rows per group; adds the dispatch time. */
static vg_status step(vg_device *dev, vg_layer_buffers *bufs, int nlayers, int32_t tokens,
                      double *dispatch_us)
{
    for (int i = 0; i < nlayers; i++) {
        vg_gemm_args a;
        vg_dispatch_info info;
        vg_status st = vg_layer_args(&bufs[i], tokens, &a);
        if (st == VG_OK)
            st = vg_gemm(dev, op_of(bufs[i].layer.path), &a, &info);
        if (st != VG_OK)
            return st;
        *dispatch_us += info.dispatch_us;
    }
    return VG_OK;
}

/* Shapes measured so far: the device's default engine, or the sum over the
 * engines (each engine measures only into its own set). */
static uint64_t measured_now(vg_device *dev, vg_engine **engines, long n)
{
    vg_tuning_state ts;
    uint64_t total = 0;
    if (!n) {
        vg_device_tuning_state(dev, &ts);
        return ts.measured_total;
    }
    for (long e = 0; e < n; e++)
        if (vg_engine_tuning_state(engines[e], &ts) == VG_OK)
            total += ts.measured_total;
    return total;
}

static int write_json(const char *path, const char *backend, uint64_t warm, uint64_t serving,
                      int with_new, const request_result *res, int nreq)
{
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "tool", "replay");
    cJSON_AddStringToObject(root, "build", tool_build_id());
    cJSON_AddStringToObject(root, "backend", backend);
    cJSON_AddNumberToObject(root, "warmup_measured", (double)warm);
    cJSON_AddNumberToObject(root, "serving_measured", (double)serving);
    cJSON_AddNumberToObject(root, "requests_with_new_shape", with_new);
    cJSON_AddNumberToObject(root, "requests", nreq);
    cJSON *arr = cJSON_AddArrayToObject(root, "per_request");
    for (int i = 0; i < nreq; i++) {
        cJSON *r = cJSON_CreateObject();
        cJSON_AddNumberToObject(r, "prompt", (double)res[i].prompt);
        cJSON_AddBoolToObject(r, "new_shape", res[i].measured > 0);
        cJSON_AddNumberToObject(r, "measured", (double)res[i].measured);
        cJSON_AddNumberToObject(r, "dispatch_us", res[i].dispatch_us);
        cJSON_AddStringToObject(r, "engine", res[i].engine);
        cJSON_AddItemToArray(arr, r);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text)
        return 0;
    int ok = tool_write_json(path, text);
    free(text);
    return ok;
}

int cmd_replay(int argc, char **argv)
{
    const char *config = NULL, *lut = NULL, *spec = NULL, *requests = NULL, *json = NULL;
    const char *backend = "auto";
    long decode_steps = 8, chunk = 1020, nengines = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return VG_EXIT_OK;
        }
        if (!v || strncmp(a, "--", 2) != 0) {
            fprintf(stderr, "voltgate replay: %s '%s' (try --help)\n",
                    v ? "unknown argument" : "missing value or unknown argument", a);
            return VG_EXIT_USAGE;
        }
        i++;
        if (strcmp(a, "--config") == 0) config = v;
        else if (strcmp(a, "--lut") == 0) lut = v;
        else if (strcmp(a, "--layers") == 0) spec = v;
        else if (strcmp(a, "--requests") == 0) requests = v;
        else if (strcmp(a, "--json") == 0) json = v;
        else if (strcmp(a, "--backend") == 0) backend = v;
        else if (strcmp(a, "--decode-steps") == 0) {
            if (!parse_int(v, (size_t)-1, 0, 1000000, &decode_steps)) {
                fprintf(stderr, "voltgate replay: --decode-steps '%s': expected 0..1000000\n", v);
                return VG_EXIT_USAGE;
            }
        } else if (strcmp(a, "--engines") == 0) {
            if (!parse_int(v, (size_t)-1, 1, MAX_ENGINES, &nengines)) {
                fprintf(stderr, "voltgate replay: --engines '%s': expected 1..%d\n", v,
                        MAX_ENGINES);
                return VG_EXIT_USAGE;
            }
        } else if (strcmp(a, "--chunk") == 0) {
            if (!parse_int(v, (size_t)-1, 1, 1 << 20, &chunk)) {
                fprintf(stderr, "voltgate replay: --chunk '%s': expected 1..1048576\n", v);
                return VG_EXIT_USAGE;
            }
        } else {
            fprintf(stderr, "voltgate replay: unknown option '%s' (try --help)\n", a);
            return VG_EXIT_USAGE;
        }
    }
    if (!config || !spec || !requests) {
        fprintf(stderr, "voltgate replay: --config, --layers and --requests are required "
                        "(try --help)\n");
        return VG_EXIT_USAGE;
    }
    if (nengines && lut) {
        fprintf(stderr, "voltgate replay: --lut cannot be used with --engines (each engine "
                        "owns its LUT: set gemm_lut_path in the config, e.g. with {rank})\n");
        return VG_EXIT_USAGE;
    }
    if ((lut && vg_check_output_path("--lut", lut) != VG_OK) ||
        (json && vg_check_output_path("--json", json) != VG_OK)) {
        fprintf(stderr, "voltgate replay: %s\n", vg_last_error());
        return VG_EXIT_USAGE;
    }
    /* The config is read, the LUT read and written back, the JSON written:
     * one file for two of them would be destroyed by a write. */
    const struct {
        const char *out_flag, *out, *in_flag, *in;
    } clash[] = {{"--json", json, "--config", config}, {"--json", json, "--lut", lut},
                 {"--lut", lut, "--config", config}};
    for (size_t c = 0; c < sizeof clash / sizeof clash[0]; c++)
        if (vg_same_file(clash[c].out, clash[c].in)) {
            fprintf(stderr, "voltgate replay: %s %s is the %s file: give each its own file\n",
                    clash[c].out_flag, clash[c].out, clash[c].in_flag);
            return VG_EXIT_USAGE;
        }
    if (strcmp(backend, "auto") && strcmp(backend, "cpu") && strcmp(backend, "cuda")) {
        fprintf(stderr, "voltgate replay: unknown backend '%s' (auto, cpu or cuda)\n", backend);
        return VG_EXIT_USAGE;
    }
    backend = tool_backend(backend);

    vg_layer layers[MAX_LAYERS];
    int nlayers = 0;
    size_t ilen;
    for (const char *p = spec, *next; p; p = next) {
        next = vg_list_item(p, &ilen);
        char item[128];
        snprintf(item, sizeof item, "%.*s", (int)(ilen < sizeof item ? ilen : sizeof item - 1), p);
        if (nlayers == MAX_LAYERS || ilen >= sizeof item || !parse_layer(item, &layers[nlayers])) {
            fprintf(stderr,
                    "voltgate replay: --layers: bad layer '%s' (family:path:N:K[:groups], "
                    "dense takes 1 group, or a preset: wo_a; at most %d layers)\n",
                    item, MAX_LAYERS);
            return VG_EXIT_USAGE;
        }
        /* a weight the family cannot hold is bad input, refused before the
         * warm-up rather than reported as a failed warm-up after it */
        vg_weight_layout layout;
        if (vg_weight_layout_of(layers[nlayers].family, layers[nlayers].n, layers[nlayers].k,
                                &layout) != VG_OK) {
            fprintf(stderr, "voltgate replay: --layers '%s': %s\n", item, vg_last_error());
            return VG_EXIT_USAGE;
        }
        nlayers++;
    }
    request_result *res = calloc(MAX_REQUESTS, sizeof *res);
    int nreq = 0;
    long longest = 0;
    for (const char *p = requests, *next; p; p = next) {
        next = vg_list_item(p, &ilen);
        long len;
        if (nreq == MAX_REQUESTS || !parse_int(p, ilen, 1, 100000000, &len)) {
            fprintf(stderr, "voltgate replay: --requests: bad prompt length '%.*s' (a positive "
                            "integer; at most %d requests)\n", (int)ilen, p, MAX_REQUESTS);
            free(res);
            return VG_EXIT_USAGE;
        }
        res[nreq++].prompt = len;
        if (len > longest)
            longest = len;
    }
    if (nlayers == 0 || nreq == 0) {
        fprintf(stderr, "voltgate replay: --layers and --requests must not be empty\n");
        free(res);
        return VG_EXIT_USAGE;
    }

    int rc = VG_EXIT_FAIL;
    vg_engine *engines[MAX_ENGINES] = {0};
    vg_config *cfg = NULL;
    vg_device *dev = NULL;
    vg_layer_buffers bufs[MAX_LAYERS];
    int nbufs = 0;
    uint64_t hash = 0;
    vg_status st = vg_config_load(config, &cfg);
    if (st != VG_OK) {
        fprintf(stderr, "voltgate replay: %s\n", vg_last_error());
        rc = VG_EXIT_USAGE;
        goto out;
    }
    vg_config_policy_hash(cfg, &hash);
    if ((st = vg_device_open(backend, 0, &dev)) != VG_OK) {
        fprintf(stderr, "voltgate replay: %s backend: %s\n", backend, vg_last_error());
        rc = st == VG_ERR_NO_DEVICE ? VG_EXIT_SKIP : VG_EXIT_FAIL;
        goto out;
    }
    /* The config's LUT path is checked as the warm-up will (its folder
     * made, a file creatable there) before any work, so that a bad path
     * is bad input, not a failed check after the warm-up. */
    vg_config_fields cf;
    vg_config_get(cfg, &cf);
    if (cf.gemm_lut_path) {
        char expanded[4200];
        if ((st = vg_lut_expand_path(dev, cf.gemm_lut_path, expanded, sizeof expanded)) != VG_OK ||
            (st = vg_lut_prepare_path(expanded)) != VG_OK) {
            fprintf(stderr, "voltgate replay: %s\n", vg_last_error());
            rc = VG_EXIT_USAGE;
            goto out;
        }
    }
    if (lut && access(lut, F_OK) == 0) {
        vg_lut_report lr;
        if ((st = vg_lut_import(dev, lut, hash, &lr)) != VG_OK) {
            fprintf(stderr, "voltgate replay: %s\n", vg_last_error());
            rc = VG_EXIT_USAGE;
            goto out;
        }
        printf("lut: %s skipped_build=%llu skipped_planset=%llu applied=%llu skipped_arch=%llu "
               "skipped_policy=%llu skipped_plan=%llu\n",
               lut, (unsigned long long)lr.skipped_build, (unsigned long long)lr.skipped_planset,
               (unsigned long long)lr.applied, (unsigned long long)lr.skipped_arch,
               (unsigned long long)lr.skipped_policy, (unsigned long long)lr.skipped_plan);
    }

    vg_warmup_report wr = {0};
    for (long e = 0; e < nengines; e++) {
        vg_warmup_report er;
        if ((st = vg_engine_open(dev, cfg, &engines[e])) != VG_OK ||
            (st = vg_engine_warmup(engines[e], layers, nlayers, &er)) != VG_OK) {
            fprintf(stderr, "voltgate replay: engine%ld: %s\n", e, vg_last_error());
            goto out;
        }
        printf("warmup: engine=engine%ld policy=%016llx calls=%llu measured=%llu frozen=%d\n", e,
               (unsigned long long)hash, (unsigned long long)er.calls,
               (unsigned long long)er.shapes_measured, er.frozen);
        wr.calls += er.calls;
        wr.shapes_measured += er.shapes_measured;
    }
    if (!nengines) {
        if ((st = vg_warmup(dev, cfg, layers, nlayers, &wr)) != VG_OK) {
            fprintf(stderr, "voltgate replay: warm-up: %s\n", vg_last_error());
            goto out;
        }
        printf("warmup: policy=%016llx calls=%llu measured=%llu frozen=%d\n",
               (unsigned long long)hash, (unsigned long long)wr.calls,
               (unsigned long long)wr.shapes_measured, wr.frozen);
    }

    int32_t rows = (int32_t)(longest < chunk ? longest : chunk);
    for (; nbufs < nlayers; nbufs++)
        if ((st = vg_layer_buffers_alloc(dev, &layers[nbufs], rows, &bufs[nbufs])) != VG_OK) {
            fprintf(stderr, "voltgate replay: buffers: %s\n", vg_last_error());
            goto out;
        }

    vg_tuning_state ts;
    uint64_t serving_start = measured_now(dev, engines, nengines);
    int with_new = 0;
    if (!nengines && (st = vg_policy_enter(dev, cfg)) != VG_OK)
        goto out;
    for (int r = 0; r < nreq && st == VG_OK; r++) {
        vg_engine *eng = nengines ? engines[r % nengines] : NULL;
        snprintf(res[r].engine, sizeof res[r].engine, nengines ? "engine%d" : "default",
                 (int)(nengines ? r % nengines : 0));
        if (eng && (st = vg_engine_enter(eng)) != VG_OK)
            break;
        uint64_t before = measured_now(dev, engines, nengines);
        long left = res[r].prompt;
        int chunks = 0;
        while (left > 0 && st == VG_OK) {
            int32_t t = (int32_t)(left > chunk ? chunk : left);
            st = step(dev, bufs, nlayers, t, &res[r].dispatch_us);
            left -= t;
            chunks++;
        }
        for (long d = 0; d < decode_steps && st == VG_OK; d++)
            st = step(dev, bufs, nlayers, 1, &res[r].dispatch_us);
        if (st == VG_OK)
            st = vg_device_synchronize(dev, NULL);
        if (eng)
            vg_engine_leave();
        res[r].measured = measured_now(dev, engines, nengines) - before;
        with_new += res[r].measured > 0;
        if (st == VG_OK)
            printf("request %d: prompt=%ld chunks=%d last_chunk=%ld decode_steps=%ld "
                   "measured=%llu new_shape=%s dispatch_us=%.1f engine=%s\n",
                   r + 1, res[r].prompt, chunks,
                   res[r].prompt % chunk ? res[r].prompt % chunk : chunk, decode_steps,
                   (unsigned long long)res[r].measured, res[r].measured ? "yes" : "no",
                   res[r].dispatch_us, res[r].engine);
    }
    if (!nengines)
        vg_policy_leave();
    if (st != VG_OK) {
        fprintf(stderr, "voltgate replay: serving: %s\n", vg_last_error());
        goto out;
    }
    (void)ts;
    uint64_t serving = measured_now(dev, engines, nengines) - serving_start;
    if (lut && (st = vg_lut_export(dev, lut, hash)) != VG_OK) {
        fprintf(stderr, "voltgate replay: %s\n", vg_last_error());
        goto out;
    }
    if (json && !write_json(json, backend, wr.shapes_measured, serving, with_new, res, nreq)) {
        fprintf(stderr, "voltgate replay: cannot write %s\n", json);
        goto out;
    }
    printf("replay: warmup_measured=%llu serving_measured=%llu requests_with_new_shape=%d/%d\n",
           (unsigned long long)wr.shapes_measured, (unsigned long long)serving, with_new, nreq);
    rc = VG_EXIT_OK;
out:
    for (int i = 0; i < nbufs; i++)
        vg_layer_buffers_free(dev, &bufs[i]);
    for (int e = 0; e < MAX_ENGINES; e++)
        if (engines[e])
            vg_engine_close(engines[e]);
    vg_device_close(dev);
    vg_config_free(cfg);
    free(res);
    return rc;
}
