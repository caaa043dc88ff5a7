/*
 * Fuzz target: the safetensors header parser (golden/safetensors.c).
 *
 * Input: a whole safetensors file (8-byte length, JSON header, data).  The
 * in-memory parser (vg_st_parse) runs on every input; the file reader
 * (vg_st_open + vg_st_read) on one input in four, and the two must agree.
 * Checks on an accepted file: every tensor lies inside the data section,
 * its byte span equals its element count times the dtype size, no two
 * non-empty tensors overlap, vg_st_find finds each by name and vg_st_read
 * copies exactly its bytes (compared with the input).
 */
#include "fuzz_common.h"

#include "safetensors.h"

static void fuzz_st_check(const vg_safetensors *st, const uint8_t *data, size_t size)
{
    if (st->data_start != 8 + st->header_len || st->data_start + st->data_len != size)
        FUZZ_FAIL("data section [%llu, +%llu) does not end the %zu-byte file",
                  (unsigned long long)st->data_start, (unsigned long long)st->data_len, size);
    for (size_t i = 0; i < st->count; i++) {
        const vg_st_tensor *t = &st->tensors[i];
        if (t->begin > t->end || t->end > st->data_len)
            FUZZ_FAIL("tensor %zu spans [%llu, %llu) outside %llu bytes", i,
                      (unsigned long long)t->begin, (unsigned long long)t->end,
                      (unsigned long long)st->data_len);
        if (t->rank < 0 || t->rank > VG_ST_MAX_RANK || !vg_st_dtype_name(t->dtype))
            FUZZ_FAIL("tensor %zu: rank %d / dtype %d", i, t->rank, (int)t->dtype);
        /* element count in 128 bits' worth of care: it must fit the span */
        unsigned __int128 count = 1;
        for (int d = 0; d < t->rank; d++) {
            if (t->shape[d] < 0)
                FUZZ_FAIL("tensor %zu: negative shape", i);
            count *= (unsigned __int128)t->shape[d];
            if (count > ((unsigned __int128)1 << 64))
                count = ((unsigned __int128)1 << 64);   /* saturate */
        }
        if (count * vg_st_dtype_size(t->dtype) != (unsigned __int128)(t->end - t->begin))
            FUZZ_FAIL("tensor %zu: shape and span disagree", i);
        for (size_t j = 0; j < i; j++) {
            const vg_st_tensor *u = &st->tensors[j];
            if (t->begin < t->end && u->begin < u->end && t->begin < u->end && u->begin < t->end)
                FUZZ_FAIL("tensors %zu and %zu overlap", j, i);
            if (strcmp(t->name, u->name) == 0)
                FUZZ_FAIL("tensor name '%s' twice", t->name);
        }
        const vg_st_tensor *found = NULL;
        if (vg_st_find(st, t->name, &found) != VG_OK || found != t)
            FUZZ_FAIL("vg_st_find('%s') did not find it", t->name);
        size_t bytes = (size_t)(t->end - t->begin);
        uint8_t *buf = malloc(bytes ? bytes : 1);
        if (!buf)
            continue;
        if (vg_st_read(st, t, buf, bytes) != VG_OK)
            FUZZ_FAIL("vg_st_read('%s'): %s", t->name, vg_last_error());
        if (memcmp(buf, data + st->data_start + t->begin, bytes) != 0)
            FUZZ_FAIL("vg_st_read('%s') returned other bytes", t->name);
        if (bytes && vg_st_read(st, t, buf, bytes - 1) == VG_OK)
            FUZZ_FAIL("vg_st_read accepted a wrong size");
        free(buf);
    }
}

static int fuzz_safetensors_one(const uint8_t *data, size_t size)
{
    vg_safetensors *st = NULL;
    vg_status s = vg_st_parse(data, size, &st);
    if (s != VG_OK) {
        if (st)
            FUZZ_FAIL("vg_st_parse refused but set *out");
        if (s != VG_ERR_FORMAT && s != VG_ERR_NO_MEMORY && s != VG_ERR_LIMIT)
            FUZZ_FAIL("vg_st_parse refused with %s", vg_status_str(s));
        if (!vg_last_error()[0])
            FUZZ_FAIL("vg_st_parse refused without a message");
    } else {
        fuzz_st_check(st, data, size);
    }

    if (size && data[size - 1] % 4 == 0) {
        char path[256];
        fuzz_scratch_path("st", path, sizeof path);
        if (fuzz_write_file(path, data, size)) {
            vg_safetensors *fst = NULL;
            vg_status fs = vg_st_open(path, &fst);
            if ((fs == VG_OK) != (s == VG_OK))
                FUZZ_FAIL("vg_st_open says %s, vg_st_parse says %s", vg_status_str(fs),
                          vg_status_str(s));
            if (fs == VG_OK) {
                if (fst->count != st->count || fst->data_len != st->data_len)
                    FUZZ_FAIL("vg_st_open and vg_st_parse disagree on the tensors");
                fuzz_st_check(fst, data, size);
            }
            vg_st_close(fst);
            unlink(path);
        }
    }
    vg_st_close(st);
    return 0;
}

#ifndef FUZZ_NO_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_safetensors_one(data, size);
}
#endif
