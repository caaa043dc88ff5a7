/*
 * Closing a device, from the top down: what holds the device lets go
 * before the device frees what it owns.  It lives above device.c so that
 * the device knows nothing of coordination or engines.
 */
#include "coord_internal.h"
#include "internal.h"

vg_status vg_device_close(vg_device *dev)
{
    if (!dev)
        return VG_OK;
    vg_coord_device_closed(dev);   /* a later device at this address starts clean */
    vg_engines_destroy(dev);       /* waits for their calls in flight */
    vg_device_destroy(dev);
    return VG_OK;
}
