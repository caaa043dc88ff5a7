/* Status strings and the per-thread error detail behind vg_last_error(). */
#include "voltgate/status.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char last_error[1024];

const char *vg_status_str(vg_status s)
{
    switch (s) {
    case VG_OK: return "ok";
    case VG_ERR_INVALID_ARG: return "invalid argument";
    case VG_ERR_UNSUPPORTED: return "unsupported shape, family or path";
    case VG_ERR_NO_MEMORY: return "out of memory";
    case VG_ERR_IO: return "i/o error";
    case VG_ERR_FORMAT: return "malformed input";
    case VG_ERR_CHECKSUM: return "checksum mismatch";
    case VG_ERR_CONFIG: return "invalid kernel_config";
    case VG_ERR_NO_DEVICE: return "no CUDA device";
    case VG_ERR_CUDA: return "CUDA error";
    case VG_ERR_STATE: return "invalid state";
    case VG_ERR_NOT_FOUND: return "not found";
    case VG_ERR_LIMIT: return "size over a resource limit";
    case VG_ERR_INTERNAL: return "internal error";
    case VG_STATUS_COUNT: break;
    }
    return "unknown status";
}

const char *vg_last_error(void) { return last_error; }

void vg_clear_error(void) { last_error[0] = '\0'; }

vg_status vg_fail(vg_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}
