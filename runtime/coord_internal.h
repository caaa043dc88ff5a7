/*
 * Coordinated tuning, as the decision sees it (coord.c; the public side is
 * include/voltgate/coord.h).  Kept out of internal.h so that the runtime's
 * other files do not change for it: gemm.c calls vg_coord_decide() right
 * after vg_dispatch_decide(), device_close.c calls vg_coord_device_closed()
 * when a device goes away.
 */
#ifndef VOLTGATE_RUNTIME_COORD_INTERNAL_H
#define VOLTGATE_RUNTIME_COORD_INTERNAL_H

#include "internal.h"
#include "voltgate/coord.h"

/* Called by vg_gemm() after vg_dispatch_decide() when the policy has
 * fp8_coordinated_tuning on.  `args` has the rerouted path (c->path).
 *
 * *handled = 0: nothing to coordinate (no communicator on the device, the
 *   shape is cached, outside the limits, or every rank is known frozen);
 *   c is untouched and the caller goes on as without coordination.
 * *handled = 1: the ranks agreed; c holds the agreed decision and plan
 *   (MEASURE with the winner, whose slowest-rank time is in *winner_us, or
 *   the agreed REUSE/HEURISTIC) and the caller must not measure.
 *
 * Errors: VG_ERR_STATE when the ranks are at different calls or have
 * different candidate plans (on every rank alike), or the communicator's own
 * status when a collective fails. */
vg_status vg_coord_decide(vg_device *dev, const char *op, const vg_policy *pol,
                          const vg_gemm_args *args, vg_choice *c, double *winner_us,
                          int *handled);

/* Forgets the communicator of a device that is being closed, so that a
 * later device at the same address does not inherit it. */
void vg_coord_device_closed(vg_device *dev);

#endif
