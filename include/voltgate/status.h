/*
 * voltgate status codes.
 *
 * Every public vg_ function returns a vg_status.  vg_status_str() gives a
 * fixed one-line description of the code; vg_last_error() gives the detail of
 * the most recent failure on the calling thread (the JSON path of a config
 * error, the file and dataset of a golden error, ...).
 */
#ifndef VOLTGATE_STATUS_H
#define VOLTGATE_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum vg_status {
    VG_OK = 0,
    VG_ERR_INVALID_ARG,      /* a NULL, a negative size, an unknown enum value */
    VG_ERR_UNSUPPORTED,      /* a shape, family or path the kernels do not take */
    VG_ERR_NO_MEMORY,        /* host or device allocation failed */
    VG_ERR_IO,               /* open/read/write/rename failed */
    VG_ERR_FORMAT,           /* a file or text that does not parse */
    VG_ERR_CHECKSUM,         /* a checksum or hash does not match */
    VG_ERR_CONFIG,           /* kernel_config JSON: unknown key, wrong type, bad value */
    VG_ERR_NO_DEVICE,        /* no CUDA device, or the backend is not built */
    VG_ERR_CUDA,             /* a CUDA runtime or cuBLAS call failed */
    VG_ERR_STATE,            /* call not allowed in this state (closed engine, ...) */
    VG_ERR_NOT_FOUND,        /* unknown plan id, operator, dataset ... */
    VG_ERR_LIMIT,            /* a size over a resource bound, refused before allocating */
    VG_ERR_INTERNAL,         /* a bug in voltgate */
    VG_STATUS_COUNT
} vg_status;

/* Fixed description of a status code, never NULL. */
const char *vg_status_str(vg_status s);

/* Detail of the last failure on this thread ("" when none).  Valid until the
 * next voltgate call on the same thread. */
const char *vg_last_error(void);

/* Records a formatted detail for vg_last_error() and returns s, so that
 * library code can write `return vg_fail(VG_ERR_IO, "open %s: %s", ...)`. */
vg_status vg_fail(vg_status s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Clears vg_last_error() on this thread. */
void vg_clear_error(void);

#ifdef __cplusplus
}
#endif
#endif
