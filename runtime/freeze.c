/*
 * Tuning state and the freeze.
 *
 * The freeze must hold against concurrent callers: once
 * vg_device_freeze_tuning() returns, no thread measures again, and no
 * measurement is recorded after it.  The protocol:
 *
 *   measure_begin: under state_lock, refuse when frozen, else in_flight++.
 *   measure_end:   record the plan in the cache, then under state_lock count
 *                  it (before or after the freeze) and in_flight--.
 *   freeze:        under state_lock set frozen, then wait until in_flight
 *                  is 0, then snapshot measured_before_freeze.
 *
 * So a measurement either began before the freeze (and the freeze waits for
 * it to land, counted "before") or sees frozen and never starts.
 * measured_after_freeze counts measurements recorded after the freeze
 * returned, as a check on this very protocol; the suites assert it stays 0.
 */
#include <string.h>

#include "internal.h"

vg_status vg_tuning_init(vg_tuning *t)
{
    memset(t, 0, sizeof *t);
    vg_status st = vg_cache_init(&t->cache);
    if (st != VG_OK)
        return st;
    if (pthread_mutex_init(&t->state_lock, NULL) != 0 || pthread_cond_init(&t->idle, NULL) != 0) {
        vg_cache_destroy(&t->cache);
        return vg_fail(VG_ERR_INTERNAL, "tuning state: mutex init failed");
    }
    atomic_init(&t->frozen, 0);
    atomic_init(&t->measured_total, 0);
    return VG_OK;
}

void vg_tuning_destroy(vg_tuning *t)
{
    vg_cache_destroy(&t->cache);
    pthread_cond_destroy(&t->idle);
    pthread_mutex_destroy(&t->state_lock);
}

int vg_tuning_measure_begin(vg_tuning *t)
{
    int ok;
    pthread_mutex_lock(&t->state_lock);
    ok = !atomic_load(&t->frozen);
    if (ok)
        t->in_flight++;
    pthread_mutex_unlock(&t->state_lock);
    return ok;
}

vg_status vg_tuning_measure_end(vg_tuning *t, const vg_cache_key *key, const vg_plan *plan,
                                double time_us)
{
    vg_status st = VG_OK;
    int was_new = 0;
    if (plan)
        st = vg_cache_put(&t->cache, key, plan, time_us, 0, &was_new);
    pthread_mutex_lock(&t->state_lock);
    if (was_new) {
        atomic_fetch_add(&t->measured_total, 1);
        /* A measurement that began before the freeze may land while the
         * freeze waits for it: that one counts before.  Landing after the
         * freeze returned is impossible by the protocol above. */
        if (t->freeze_done)
            t->measured_after_freeze++;
    }
    if (--t->in_flight == 0)
        pthread_cond_broadcast(&t->idle);
    pthread_mutex_unlock(&t->state_lock);
    return st;
}

vg_status vg_tuning_freeze(vg_tuning *t)
{
    pthread_mutex_lock(&t->state_lock);
    if (!atomic_load(&t->frozen)) {
        atomic_store(&t->frozen, 1);
        while (t->in_flight > 0)
            pthread_cond_wait(&t->idle, &t->state_lock);
        t->measured_before_freeze = atomic_load(&t->measured_total);
        t->freeze_done = 1;
    }
    pthread_mutex_unlock(&t->state_lock);
    return VG_OK;
}

vg_status vg_device_freeze_tuning(vg_device *dev)
{
    if (!dev)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_freeze_tuning: dev is NULL");
    return vg_tuning_freeze(&dev->tuning);
}

vg_status vg_device_tuning_state(vg_device *dev, vg_tuning_state *out)
{
    if (!dev || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_device_tuning_state: NULL argument");
    vg_tuning_read_state(&dev->tuning, out);
    return VG_OK;
}

void vg_tuning_read_state(vg_tuning *t, vg_tuning_state *out)
{
    pthread_mutex_lock(&t->state_lock);
    out->frozen = atomic_load(&t->frozen);
    out->measured_total = atomic_load(&t->measured_total);
    out->measured_before_freeze = out->frozen ? t->measured_before_freeze : out->measured_total;
    out->measured_after_freeze = t->measured_after_freeze;
    pthread_mutex_unlock(&t->state_lock);
    out->cache_entries = vg_cache_entries(&t->cache);
}
