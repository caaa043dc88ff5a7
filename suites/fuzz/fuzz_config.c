/*
 * Fuzz target: the kernel_config JSON parser (runtime/config.c).
 *
 * The input is the JSON text.  Besides "no crash, no leak, no UB" it checks
 * the parser's contract on every input:
 *   - a refusal is VG_ERR_CONFIG (or VG_ERR_NO_MEMORY) with a non-empty
 *     vg_last_error();
 *   - an accepted config survives vg_config_to_json -> vg_config_parse with
 *     the same fields and the same policy hash;
 *   - vg_config_load on the same bytes in a file agrees with vg_config_parse
 *     (a NUL byte in the file is the one documented difference).
 */
#include "fuzz_common.h"

#include "voltgate/runtime.h"

static void fuzz_config_same(const vg_config *a, const vg_config *b, const char *what)
{
    vg_config_fields fa, fb;
    if (vg_config_get(a, &fa) != VG_OK || vg_config_get(b, &fb) != VG_OK)
        FUZZ_FAIL("%s: vg_config_get failed: %s", what, vg_last_error());
    if (fa.fp8_grouped_bmm_decode != fb.fp8_grouped_bmm_decode ||
        fa.fp8_tune_small_shapes != fb.fp8_tune_small_shapes ||
        fa.fp8_coordinated_tuning != fb.fp8_coordinated_tuning ||
        fa.freeze_tuning_after_warmup != fb.freeze_tuning_after_warmup)
        FUZZ_FAIL("%s: boolean fields differ", what);
    if ((fa.gemm_lut_path == NULL) != (fb.gemm_lut_path == NULL) ||
        (fa.gemm_lut_path && strcmp(fa.gemm_lut_path, fb.gemm_lut_path) != 0))
        FUZZ_FAIL("%s: gemm_lut_path differs", what);
    uint64_t ha = 0, hb = 0;
    if (vg_config_policy_hash(a, &ha) != VG_OK || vg_config_policy_hash(b, &hb) != VG_OK)
        FUZZ_FAIL("%s: vg_config_policy_hash failed: %s", what, vg_last_error());
    if (ha != hb)
        FUZZ_FAIL("%s: policy hash %016llx != %016llx", what, (unsigned long long)ha,
                  (unsigned long long)hb);
}

static int fuzz_config_one(const uint8_t *data, size_t size)
{
    char *json = malloc(size + 1);
    if (!json)
        return 0;
    memcpy(json, data, size);
    json[size] = '\0';

    vg_config *cfg = NULL;
    vg_status st = vg_config_parse(json, &cfg);
    if (st != VG_OK) {
        if (st != VG_ERR_CONFIG && st != VG_ERR_NO_MEMORY)
            FUZZ_FAIL("vg_config_parse refused with %s, not VG_ERR_CONFIG", vg_status_str(st));
        if (!vg_last_error()[0])
            FUZZ_FAIL("vg_config_parse refused without a message");
        if (cfg)
            FUZZ_FAIL("vg_config_parse refused but set *out");
    } else {
        char *canon = NULL;
        if (vg_config_to_json(cfg, &canon) != VG_OK)
            FUZZ_FAIL("vg_config_to_json failed on an accepted config: %s", vg_last_error());
        vg_config *again = NULL;
        if (vg_config_parse(canon, &again) != VG_OK)
            FUZZ_FAIL("canonical JSON does not parse: %s (%s)", vg_last_error(), canon);
        fuzz_config_same(cfg, again, "round trip");
        vg_config_free(again);
        free(canon);
    }

    /* The file path, on one input in four (a write per input is slow). */
    if (size && data[size / 2] % 4 == 0) {
        char path[256];
        fuzz_scratch_path("config", path, sizeof path);
        if (fuzz_write_file(path, data, size)) {
            vg_config *loaded = NULL;
            vg_status lst = vg_config_load(path, &loaded);
            int has_nul = strlen(json) != size;
            if (!has_nul && (lst == VG_OK) != (st == VG_OK))
                FUZZ_FAIL("vg_config_load says %s, vg_config_parse says %s", vg_status_str(lst),
                          vg_status_str(st));
            if (has_nul && lst == VG_OK)
                FUZZ_FAIL("vg_config_load accepted a file with a NUL byte");
            if (lst == VG_OK && st == VG_OK)
                fuzz_config_same(cfg, loaded, "load vs parse");
            vg_config_free(loaded);
            unlink(path);
        }
    }
    vg_config_free(cfg);
    free(json);
    return 0;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_config_one(data, size);
}
#endif
