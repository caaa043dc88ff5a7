/*
 * A validating safetensors reader (huggingface/safetensors format):
 *   8 bytes  little-endian u64 N, the header length
 *   N bytes  UTF-8 JSON object: "name": {"dtype": "F16", "shape": [..],
 *            "data_offsets": [begin, end]}, plus an optional "__metadata__"
 *            object of strings
 *   rest     the data section; offsets are relative to its start
 *
 * The header is parsed with cJSON and every claim is checked against the
 * file before anything is trusted: header length within the file and under
 * VG_ST_MAX_HEADER, a JSON object, each tensor's dtype known, shape
 * non-negative integers whose product times the dtype size equals
 * end - begin (overflow-checked), offsets inside the data section, no two
 * tensors overlapping, no duplicate names.  vg_st_parse() works on memory
 * so that a fuzzer can drive it without files.
 */
#ifndef VOLTGATE_GOLDEN_SAFETENSORS_H
#define VOLTGATE_GOLDEN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "voltgate/status.h"

#define VG_ST_MAX_HEADER (100u * 1024u * 1024u) /* the format's own limit */
#define VG_ST_MAX_RANK 8

typedef enum vg_st_dtype {
    VG_ST_BOOL, VG_ST_U8, VG_ST_I8, VG_ST_F8_E4M3, VG_ST_F8_E5M2, VG_ST_I16, VG_ST_U16,
    VG_ST_F16, VG_ST_BF16, VG_ST_I32, VG_ST_U32, VG_ST_F32, VG_ST_I64, VG_ST_U64, VG_ST_F64,
    VG_ST_DTYPE_COUNT
} vg_st_dtype;

typedef struct vg_st_tensor {
    char *name;
    vg_st_dtype dtype;
    int rank;
    int64_t shape[VG_ST_MAX_RANK];
    uint64_t begin, end;     /* relative to the data section */
} vg_st_tensor;

typedef struct vg_safetensors {
    char *path;              /* NULL for vg_st_parse */
    uint64_t header_len;
    uint64_t data_start;     /* 8 + header_len */
    uint64_t data_len;
    size_t count;
    vg_st_tensor *tensors;
    const uint8_t *mem;      /* vg_st_parse: the caller's bytes (not owned) */
} vg_safetensors;

/* "F16" ... ; NULL for an invalid value.  Element size in bytes. */
const char *vg_st_dtype_name(vg_st_dtype t);
size_t vg_st_dtype_size(vg_st_dtype t);

/* Opens and validates a file (the data is read later, on demand). */
vg_status vg_st_open(const char *path, vg_safetensors **out);
/* Validates an in-memory file of `size` bytes; the bytes must outlive *out. */
vg_status vg_st_parse(const void *bytes, size_t size, vg_safetensors **out);
vg_status vg_st_close(vg_safetensors *st);

/* The tensor called `name`, VG_ERR_NOT_FOUND (naming it) when absent. */
vg_status vg_st_find(const vg_safetensors *st, const char *name, const vg_st_tensor **out);
/* Copies a tensor's bytes (little-endian, as stored) into dst of `bytes`
 * (must equal end - begin). */
vg_status vg_st_read(const vg_safetensors *st, const vg_st_tensor *t, void *dst, size_t bytes);
/* Copies `bytes` bytes of a tensor starting `offset` bytes into it (one
 * expert of a fused [E][...] tensor); the range must lie inside the tensor. */
vg_status vg_st_read_at(const vg_safetensors *st, const vg_st_tensor *t, uint64_t offset,
                        void *dst, size_t bytes);

#endif
