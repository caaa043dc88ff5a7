/*
 * A vg_comm over a NCCL communicator (voltgate/coord.h), header-only: these
 * static inline functions compile in the caller, which has NCCL and the CUDA
 * runtime, so libvoltgate itself never links NCCL.
 *
 *   #include <cuda_runtime.h>
 *   #include <nccl.h>
 *   #include "voltgate/coord_nccl.h"
 *
 *   vg_nccl_comm state;                       // must outlive the attachment
 *   vg_comm comm;
 *   vg_comm_from_nccl(tp_nccl_comm, stream, &state, &comm);
 *   vg_device_set_comm(dev, &comm);
 *   ...
 *   vg_device_set_comm(dev, NULL);
 *   vg_nccl_comm_release(&state);
 *
 * NCCL reduces device memory, so the state holds a small device buffer
 * (allocated once here, never inside a round: a round may happen while
 * another stream is capturing a graph, where cudaMalloc is not allowed).
 * Each collective copies the host values in, all-reduces them on `stream`,
 * copies them back and waits for the stream.  Give voltgate a stream that is
 * never captured and on which the engine does not enqueue its own NCCL
 * calls in between (or a communicator of its own, ncclCommSplit), as with
 * any collective whose order must match across ranks.
 *
 * The rounds are tiny (8 int64, then one double per candidate plan, at most
 * VG_NCCL_MAX_VALUES), once per newly measured shape; a frozen group calls
 * nothing at all.
 */
#ifndef VOLTGATE_COORD_NCCL_H
#define VOLTGATE_COORD_NCCL_H

#include <stdint.h>
#include <string.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "voltgate/coord.h"

/* Values of one collective the device buffer holds (coord.c sends at most
 * 256 candidate times). */
#define VG_NCCL_MAX_VALUES 512

typedef struct vg_nccl_comm {
    ncclComm_t comm;
    cudaStream_t stream;
    void *dbuf;               /* VG_NCCL_MAX_VALUES * 8 bytes of device memory */
    int device;               /* the CUDA device the buffer and comm live on */
} vg_nccl_comm;

static inline vg_status vg_nccl_fail_nccl(ncclResult_t r, const char *what)
{
    return vg_fail(VG_ERR_CUDA, "coordinated tuning: %s failed: %s", what, ncclGetErrorString(r));
}

static inline vg_status vg_nccl_fail_cuda(cudaError_t e, const char *what)
{
    return vg_fail(VG_ERR_CUDA, "coordinated tuning: %s failed: %s", what, cudaGetErrorString(e));
}

/* One in-place all-reduce of n values of `bytes` each, through the device
 * buffer. */
static inline vg_status vg_nccl_allreduce(void *buf, int n, size_t bytes, ncclDataType_t type,
                                          ncclRedOp_t op, vg_nccl_comm *s)
{
    if (n < 0 || n > VG_NCCL_MAX_VALUES)
        return vg_fail(VG_ERR_LIMIT, "coordinated tuning: %d values in one collective (at most %d)",
                       n, VG_NCCL_MAX_VALUES);
    if (n == 0)
        return VG_OK;   /* every rank sends the same n: nothing to do anywhere */
    int prev = -1;
    cudaError_t e = cudaGetDevice(&prev);
    if (e == cudaSuccess && prev != s->device)
        e = cudaSetDevice(s->device);
    if (e != cudaSuccess)
        return vg_nccl_fail_cuda(e, "cudaSetDevice");
    vg_status st = VG_OK;
    size_t len = (size_t)n * bytes;
    if ((e = cudaMemcpyAsync(s->dbuf, buf, len, cudaMemcpyHostToDevice, s->stream)) != cudaSuccess)
        st = vg_nccl_fail_cuda(e, "cudaMemcpyAsync to the device");
    ncclResult_t r;
    if (st == VG_OK &&
        (r = ncclAllReduce(s->dbuf, s->dbuf, (size_t)n, type, op, s->comm, s->stream)) != ncclSuccess)
        st = vg_nccl_fail_nccl(r, "ncclAllReduce");
    if (st == VG_OK &&
        (e = cudaMemcpyAsync(buf, s->dbuf, len, cudaMemcpyDeviceToHost, s->stream)) != cudaSuccess)
        st = vg_nccl_fail_cuda(e, "cudaMemcpyAsync to the host");
    if (st == VG_OK && (e = cudaStreamSynchronize(s->stream)) != cudaSuccess)
        st = vg_nccl_fail_cuda(e, "cudaStreamSynchronize");
    if (prev >= 0 && prev != s->device)
        cudaSetDevice(prev);
    return st;
}

static inline vg_status vg_nccl_allreduce_max_f64(double *buf, int n, void *handle)
{
    return vg_nccl_allreduce(buf, n, sizeof *buf, ncclFloat64, ncclMax, (vg_nccl_comm *)handle);
}

static inline vg_status vg_nccl_allreduce_min_i64(int64_t *buf, int n, void *handle)
{
    return vg_nccl_allreduce(buf, n, sizeof *buf, ncclInt64, ncclMin, (vg_nccl_comm *)handle);
}

/* Fills *state and *out for `comm`; collectives run on `stream` (0 = the
 * legacy default stream; better a stream of its own).  Allocates the device
 * buffer on the current CUDA device, which must be the communicator's. */
static inline vg_status vg_comm_from_nccl(ncclComm_t comm, cudaStream_t stream,
                                          vg_nccl_comm *state, vg_comm *out)
{
    if (!comm || !state || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_comm_from_nccl: NULL argument");
    memset(state, 0, sizeof *state);
    int rank = 0, size = 0, device = 0;
    ncclResult_t r;
    if ((r = ncclCommUserRank(comm, &rank)) != ncclSuccess)
        return vg_nccl_fail_nccl(r, "ncclCommUserRank");
    if ((r = ncclCommCount(comm, &size)) != ncclSuccess)
        return vg_nccl_fail_nccl(r, "ncclCommCount");
    if ((r = ncclCommCuDevice(comm, &device)) != ncclSuccess)
        return vg_nccl_fail_nccl(r, "ncclCommCuDevice");
    int prev = -1;
    cudaError_t e = cudaGetDevice(&prev);
    if (e == cudaSuccess && prev != device)
        e = cudaSetDevice(device);
    if (e == cudaSuccess)
        e = cudaMalloc(&state->dbuf, (size_t)VG_NCCL_MAX_VALUES * 8);
    if (prev >= 0 && prev != device)
        cudaSetDevice(prev);
    if (e != cudaSuccess) {
        state->dbuf = NULL;
        return vg_nccl_fail_cuda(e, "cudaMalloc of the coordination buffer");
    }
    state->comm = comm;
    state->stream = stream;
    state->device = device;
    out->handle = state;
    out->rank = rank;
    out->size = size;
    out->allreduce_max_f64 = vg_nccl_allreduce_max_f64;
    out->allreduce_min_i64 = vg_nccl_allreduce_min_i64;
    return VG_OK;
}

/* Frees the device buffer (detach the vg_comm first).  The NCCL
 * communicator and the stream stay the caller's. */
static inline void vg_nccl_comm_release(vg_nccl_comm *state)
{
    if (state && state->dbuf) {
        int prev = -1;
        if (cudaGetDevice(&prev) == cudaSuccess && prev != state->device)
            cudaSetDevice(state->device);
        cudaFree(state->dbuf);
        if (prev >= 0 && prev != state->device)
            cudaSetDevice(prev);
        state->dbuf = NULL;
    }
}

#endif
