/*
 * Fuzz target: the LUT importer (runtime/lut_import.c, vg_lut_import).
 *
 * Input: one flag byte, then the file's bytes.  Flag bit 0 set: the bytes
 * are a LUT body and the target appends the correct "checksum fnv1a64="
 * line, so that mutations get past the checksum and reach the entry parser;
 * clear: the bytes are written as they are (checksum, truncation, binary
 * data paths).
 *
 * Checks, besides "no crash, no leak, no UB":
 *   - a refusal is FORMAT / CHECKSUM / LIMIT / NO_MEMORY / IO with a message
 *     and applies nothing (the cache stays empty);
 *   - an accepted file round-trips: export, import into a fresh device,
 *     export again: every entry applies, the same count, the same bytes.
 */
#include "fuzz_common.h"

#include "voltgate/runtime.h"

static uint64_t fuzz_lut_entries(vg_device *dev)
{
    vg_tuning_state ts;
    if (vg_device_tuning_state(dev, &ts) != VG_OK)
        FUZZ_FAIL("vg_device_tuning_state: %s", vg_last_error());
    return ts.cache_entries;
}

static vg_device *fuzz_lut_open(void)
{
    vg_device *dev = NULL;
    if (vg_device_open("cpu", 0, &dev) != VG_OK)
        FUZZ_FAIL("vg_device_open(cpu): %s", vg_last_error());
    vg_trace_set(dev, NULL);
    return dev;
}

static void fuzz_lut_round_trip(vg_device *dev, const char *base)
{
    char p2[300], p3[300];
    snprintf(p2, sizeof p2, "%s.export1", base);
    snprintf(p3, sizeof p3, "%s.export2", base);
    uint64_t n = fuzz_lut_entries(dev);
    if (vg_lut_export(dev, p2, 0) != VG_OK)
        FUZZ_FAIL("export of an imported LUT failed: %s", vg_last_error());
    vg_device *again = fuzz_lut_open();
    vg_lut_report r;
    if (vg_lut_import(again, p2, 0, &r) != VG_OK)
        FUZZ_FAIL("the library's own export does not import: %s", vg_last_error());
    if (r.applied != n || r.skipped_arch || r.skipped_plan || r.skipped_policy)
        FUZZ_FAIL("re-import applied %llu of %llu (arch %llu, plan %llu, policy %llu skipped)",
                  (unsigned long long)r.applied, (unsigned long long)n,
                  (unsigned long long)r.skipped_arch, (unsigned long long)r.skipped_plan,
                  (unsigned long long)r.skipped_policy);
    if (fuzz_lut_entries(again) != n)
        FUZZ_FAIL("re-import holds %llu entries, not %llu",
                  (unsigned long long)fuzz_lut_entries(again), (unsigned long long)n);
    if (vg_lut_export(again, p3, 0) != VG_OK)
        FUZZ_FAIL("second export failed: %s", vg_last_error());
    size_t l2 = 0, l3 = 0;
    char *b2 = fuzz_read_file(p2, &l2), *b3 = fuzz_read_file(p3, &l3);
    if (!b2 || !b3 || l2 != l3 || memcmp(b2, b3, l2) != 0)
        FUZZ_FAIL("export -> import -> export changed the bytes (%zu vs %zu)", l2, l3);
    free(b2);
    free(b3);
    vg_device_close(again);
    unlink(p2);
    unlink(p3);
}

static int fuzz_lut_one(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int repair = data[0] & 1;
    data++;
    size--;

    char path[256];
    fuzz_scratch_path("lut", path, sizeof path);
    size_t len = size + (repair ? 64 : 0);
    char *bytes = malloc(len + 1);
    if (!bytes)
        return 0;
    memcpy(bytes, data, size);
    len = size;
    if (repair)
        len += (size_t)snprintf(bytes + size, 64, "checksum fnv1a64=%016llx\n",
                                (unsigned long long)fuzz_fnv1a64(data, size));
    if (!fuzz_write_file(path, bytes, len)) {
        free(bytes);
        return 0;
    }
    free(bytes);

    /* The first import goes into a long-lived device (opening one costs a
     * 16 MiB workspace): a refusal must leave its entry count unchanged.
     * Only an accepted file gets a fresh device, for the round trip. */
    static vg_device *base;
    static unsigned uses;
    if (!base || ++uses % 1024 == 0) {
        if (base)
            vg_device_close(base);
        base = fuzz_lut_open();
    }
    uint64_t before = fuzz_lut_entries(base);
    vg_lut_report r;
    memset(&r, 0xab, sizeof r);
    vg_status st = vg_lut_import(base, path, 0, &r);
    if (st != VG_OK) {
        if (st != VG_ERR_FORMAT && st != VG_ERR_CHECKSUM && st != VG_ERR_LIMIT &&
            st != VG_ERR_NO_MEMORY && st != VG_ERR_IO)
            FUZZ_FAIL("vg_lut_import refused with %s", vg_status_str(st));
        if (!vg_last_error()[0])
            FUZZ_FAIL("vg_lut_import refused without a message");
        if (fuzz_lut_entries(base) != before)
            FUZZ_FAIL("a refused LUT changed the cache from %llu to %llu entries",
                      (unsigned long long)before, (unsigned long long)fuzz_lut_entries(base));
    } else {
        vg_device *dev = fuzz_lut_open();
        vg_lut_report r2;
        if (vg_lut_import(dev, path, 0, &r2) != VG_OK || memcmp(&r, &r2, sizeof r) != 0)
            FUZZ_FAIL("the same file imports differently into a fresh device: %s",
                      vg_last_error());
        if (fuzz_lut_entries(dev) > r.applied)
            FUZZ_FAIL("cache holds %llu entries but the report says %llu applied",
                      (unsigned long long)fuzz_lut_entries(dev), (unsigned long long)r.applied);
        fuzz_lut_round_trip(dev, path);
        vg_device_close(dev);
    }
    unlink(path);
    return 0;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_lut_one(data, size);
}
#endif
