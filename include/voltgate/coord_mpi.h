/*
 * A vg_comm over an MPI communicator (voltgate/coord.h), header-only: these
 * static inline functions compile in the caller, which has MPI, so
 * libvoltgate itself never links MPI.
 *
 *   #include <mpi.h>
 *   #include "voltgate/coord_mpi.h"
 *
 *   vg_comm comm;
 *   vg_comm_from_mpi(tp_group_comm, &comm);   // the engine's TP communicator
 *   vg_device_set_comm(dev, &comm);
 *   ...
 *   vg_device_set_comm(dev, NULL);            // before MPI_Comm_free / MPI_Finalize
 *
 * The handle carries the communicator as its Fortran integer handle
 * (MPI_Comm_c2f), which is portable across MPI implementations (an MPI_Comm
 * is a pointer in Open MPI, an int in MPICH) and needs no storage of its
 * own.  The communicator must stay valid while it is attached.
 *
 * Threads: voltgate calls the collectives of one device from one thread at
 * a time (it serialises the coordinated rounds), so MPI_THREAD_SERIALIZED
 * is enough when several threads call vg_gemm; MPI_THREAD_SINGLE /
 * FUNNELED when only the thread that initialised MPI does.  Collectives on
 * the same communicator from other code of the engine must not interleave
 * with voltgate's: give voltgate a duplicate (MPI_Comm_dup) if they could.
 */
#ifndef VOLTGATE_COORD_MPI_H
#define VOLTGATE_COORD_MPI_H

#include <stdint.h>

#include <mpi.h>

#include "voltgate/coord.h"

static inline MPI_Comm vg_mpi_comm_of(void *handle)
{
    return MPI_Comm_f2c((MPI_Fint)(intptr_t)handle);
}

/* An MPI error as a vg_status with MPI's own text. */
static inline vg_status vg_mpi_fail(int err, const char *what)
{
    char text[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, text, &len) != MPI_SUCCESS)
        text[0] = '\0';
    return vg_fail(VG_ERR_IO, "coordinated tuning: %s failed: %s (MPI error %d)", what, text,
                   err);
}

static inline vg_status vg_mpi_allreduce_max_f64(double *buf, int n, void *handle)
{
    int err = MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_MAX, vg_mpi_comm_of(handle));
    return err == MPI_SUCCESS ? VG_OK : vg_mpi_fail(err, "MPI_Allreduce(MAX, double)");
}

static inline vg_status vg_mpi_allreduce_min_i64(int64_t *buf, int n, void *handle)
{
    int err = MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_INT64_T, MPI_MIN, vg_mpi_comm_of(handle));
    return err == MPI_SUCCESS ? VG_OK : vg_mpi_fail(err, "MPI_Allreduce(MIN, int64)");
}

/* Fills *out for `comm` (rank and size read from it). */
static inline vg_status vg_comm_from_mpi(MPI_Comm comm, vg_comm *out)
{
    if (!out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_comm_from_mpi: out is NULL");
    if (comm == MPI_COMM_NULL)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_comm_from_mpi: MPI_COMM_NULL");
    int rank = 0, size = 0, err;
    if ((err = MPI_Comm_rank(comm, &rank)) != MPI_SUCCESS)
        return vg_mpi_fail(err, "MPI_Comm_rank");
    if ((err = MPI_Comm_size(comm, &size)) != MPI_SUCCESS)
        return vg_mpi_fail(err, "MPI_Comm_size");
    out->handle = (void *)(intptr_t)MPI_Comm_c2f(comm);
    out->rank = rank;
    out->size = size;
    out->allreduce_max_f64 = vg_mpi_allreduce_max_f64;
    out->allreduce_min_i64 = vg_mpi_allreduce_min_i64;
    return VG_OK;
}

#endif
