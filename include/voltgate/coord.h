/*
 * voltgate coordinated tuning (fp8_coordinated_tuning, DESIGN.md): the ranks
 * of one tensor-parallel group choose the same plan for every shape they
 * measure, so that no rank runs a different kernel (a rank-divergent choice
 * deadlocks or skews collective timing) and every rank's LUT holds the same
 * bytes.
 *
 * The runtime never starts a transport.  The engine already has one (an MPI
 * communicator on CPUs, a NCCL communicator between GPUs) and hands it over
 * as a vg_comm: two all-reduce callbacks and an opaque handle.
 * voltgate/coord_mpi.h and voltgate/coord_nccl.h build one from an MPI_Comm
 * or a ncclComm_t; they are header-only, compiled in the caller, so
 * libvoltgate itself never links MPI or NCCL.
 *
 * What happens on a call that may measure (policy with
 * fp8_coordinated_tuning on, a communicator set on the device, the shape
 * within the bucket range (vg_tune_bucket_rows) and not in this rank's
 * cache):
 *
 *   1. Agreement (one allreduce_min_i64): each rank says whether it can
 *      measure (not frozen, not capturing, tuning on) and which call it is
 *      at (a hash of family, path, n, k, groups, rows) and which candidate
 *      plans it has (a hash of their ids in table order).  If the call or
 *      the candidates differ between ranks, every rank fails with
 *      VG_ERR_STATE naming the mismatch.  If any rank cannot measure, no
 *      rank measures: every rank takes the same non-measure rule (the
 *      frozen lookup -- next larger measured shape, else the heuristic --
 *      or, when a rank has tuning off, the heuristic), never a split
 *      decision.
 *   2. Measurement: each rank times every candidate locally; one
 *      allreduce_max_f64 gives each candidate's slowest-rank time; the
 *      winner is the candidate whose slowest rank is fastest (ties: the
 *      first in plan table order).  Every rank stores the winner with that
 *      slowest-rank time, so the caches -- and the exported LUTs -- are
 *      byte for byte the same on every rank.
 *
 * Requirements on the caller (the same as for any collective): every rank
 * of the group issues the calls that may measure in the same order, from
 * one thread at a time per device (voltgate serialises the coordinated
 * calls of one device, so several threads are safe only if they issue the
 * same calls in the same order on every rank), with the same kernel_config
 * and the same starting cache (the same LUT, or none), and, for grouped and
 * moe calls, the same routing (offsets) and GPU arch: a call the backend's
 * rule decides by its routing ("uneven groups", runtime/POLICY.md) has no
 * round, so ranks whose routings differ would fall out of step, which the
 * call hash cannot see (it holds the largest group's rows only); the ranks of
 * a tensor-parallel group see one routing.  A rank whose calls
 * get out of step is caught by the call hash of step 1 and fails with
 * VG_ERR_STATE rather than agreeing on the wrong shape.
 *
 * Once an agreement finds every rank frozen, the device remembers it and
 * stops calling the communicator: a freeze is final, so no rank can ever
 * measure again and serving pays no collective.
 *
 * Trace: besides the usual decision line (whose decision= and plan= are
 * the agreed ones), every round writes one line of its own prefix, so a
 * parser of decision lines skips it:
 *
 *   vg-trace-coord rank=<r> size=<n> op=<name> family=<f> path=<p> m=<M>
 *       n=<N> k=<K> groups=<G> policy=<16 hex>
 *       outcome=<measured|refused|untimed> decision=<measure|reuse|heuristic>
 *       plan=<agreed plan> refused_by=<lowest refusing rank, -1 if none>
 *       reason=<frozen|capturing|tuning-off|none>
 *       local_best=<this rank's own fastest, or none> slowest_us=<time stored>
 *       all_frozen=<0|1>
 *
 * (on one line).  local_best != plan shows where this rank alone would
 * have chosen differently.
 *
 * LUT: the ranks may share one gemm_lut_path (they write the same bytes,
 * each through its own temporary file and an atomic rename) or use one
 * each; they must start from the same LUT.
 */
#ifndef VOLTGATE_COORD_H
#define VOLTGATE_COORD_H

#include <stdint.h>

#include "voltgate/runtime.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An engine's communicator.  Both callbacks are collective: every rank
 * calls them with the same n, in the same order; the result (element-wise
 * maximum / minimum over the ranks) replaces buf on every rank.  They
 * return VG_OK or a vg_status (set vg_last_error() with vg_fail()). */
typedef struct vg_comm {
    void *handle;             /* the caller's; passed back to the callbacks */
    int rank, size;           /* this rank, ranks in the group (size >= 1) */
    vg_status (*allreduce_max_f64)(double *buf, int n, void *handle);
    vg_status (*allreduce_min_i64)(int64_t *buf, int n, void *handle);
} vg_comm;

/* Attaches a communicator to the device (copied; the handle stays the
 * caller's and must outlive the attachment).  NULL detaches.  Detach before
 * vg_device_close().  VG_ERR_INVALID_ARG when a callback is NULL or rank /
 * size are out of range. */
vg_status vg_device_set_comm(vg_device *dev, const vg_comm *comm);

/* Counters of the coordinated calls of one device (for tests and reports). */
typedef struct vg_coord_stats {
    int attached;             /* a communicator is set */
    int rank, size;
    uint64_t agreements;      /* agreement rounds (step 1) */
    uint64_t measured;        /* rounds that measured together (step 2) */
    uint64_t refused;         /* rounds where some rank could not measure */
    uint64_t diverged;        /* measured rounds whose agreed plan differs from
                                 this rank's own fastest */
    int all_frozen;           /* every rank was seen frozen: no more rounds */
} vg_coord_stats;
vg_status vg_device_coord_stats(vg_device *dev, vg_coord_stats *out);

#ifdef __cplusplus
}
#endif
#endif
