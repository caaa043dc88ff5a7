/*
 * Engines: several tuning states on one device (issue 10; the contract is
 * in include/voltgate/runtime.h).
 *
 * An engine is a vg_tuning of its own (cache, freeze, counters: the decision
 * code only ever sees a vg_tuning), the policy of its config, and its LUT
 * path.  Handles: a closed engine keeps its shell (magic, id, closed flag)
 * on the device's list until vg_device_close, so a stale handle is checked
 * safely and gives VG_ERR_STATE; only the tuning state and the config are
 * freed at close.
 *
 * In flight: every call that uses the engine (vg_gemm under
 * vg_engine_enter, warm-up, freeze, state) increments in_flight, then checks
 * closed (both seq_cst); close sets closed, then waits under `lock` until
 * in_flight is 0.  So a call either sees closed and backs out, or close
 * waits for it: the tuning state is never freed under a running call.
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int vg_engine_acquire(vg_engine *e)
{
    atomic_fetch_add(&e->in_flight, 1);
    if (atomic_load(&e->closed)) {
        vg_engine_release(e);
        vg_fail(VG_ERR_STATE, "engine %d is closed", e->id);
        return 0;
    }
    return 1;
}

void vg_engine_release(vg_engine *e)
{
    if (atomic_fetch_sub(&e->in_flight, 1) == 1 && atomic_load(&e->closed)) {
        pthread_mutex_lock(&e->lock);
        pthread_cond_broadcast(&e->idle);
        pthread_mutex_unlock(&e->lock);
    }
}

vg_status vg_engine_check(const vg_engine *e, const char *fn)
{
    if (!e || e->magic != VG_ENGINE_MAGIC)
        return vg_fail(VG_ERR_INVALID_ARG, "%s: not an engine", fn);
    return VG_OK;
}

vg_status vg_engine_open(vg_device *dev, const vg_config *cfg, vg_engine **out)
{
    if (!dev || !cfg || !out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_engine_open: NULL argument");
    *out = NULL;
    vg_engine *e = calloc(1, sizeof *e);
    if (!e)
        return vg_fail(VG_ERR_NO_MEMORY, "vg_engine_open: out of memory");
    char *json = NULL;
    vg_status st = vg_config_to_json(cfg, &json);
    if (st == VG_OK)
        st = vg_config_parse(json, &e->cfg);
    free(json);
    if (st != VG_OK) {
        free(e);
        return st;
    }
    if ((st = vg_tuning_init(&e->tuning)) != VG_OK) {
        vg_config_free(e->cfg);
        free(e);
        return st;
    }
    e->dev = dev;
    vg_policy_from_config(e->cfg, &e->pol);
    if (e->cfg->f.share_measured_plans_across_engines)
        e->tuning.shared = &dev->shared;
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->idle, NULL);
    atomic_init(&e->closed, 0);
    atomic_init(&e->in_flight, 0);

    /* The LUT: expanded, folder prepared, imported (errors now, at start). */
    vg_lut_report lr;
    uint64_t hashes[VG_FAMILY_COUNT];
    size_t nh = vg_policy_hashes(&e->pol, hashes);
    st = vg_lut_begin_for_config(dev, &e->tuning, e->cfg, hashes, nh, e->lut, sizeof e->lut, &lr);
    if (st != VG_OK) {
        vg_tuning_destroy(&e->tuning);
        vg_config_free(e->cfg);
        pthread_mutex_destroy(&e->lock);
        pthread_cond_destroy(&e->idle);
        free(e);
        return st;
    }
    e->magic = VG_ENGINE_MAGIC;
    pthread_mutex_lock(&dev->engines_lock);
    e->id = dev->engines_opened++;
    e->next = dev->engines;
    dev->engines = e;
    pthread_mutex_unlock(&dev->engines_lock);
    *out = e;
    return VG_OK;
}

vg_status vg_engine_close(vg_engine *e)
{
    vg_status st = vg_engine_check(e, "vg_engine_close");
    if (st != VG_OK)
        return st;
    int was = 0;
    if (!atomic_compare_exchange_strong(&e->closed, &was, 1))
        return vg_fail(VG_ERR_STATE, "vg_engine_close: engine %d is already closed", e->id);
    pthread_mutex_lock(&e->lock);
    while (atomic_load(&e->in_flight) > 0)
        pthread_cond_wait(&e->idle, &e->lock);
    pthread_mutex_unlock(&e->lock);
    vg_tuning_destroy(&e->tuning);
    vg_config_free(e->cfg);
    e->cfg = NULL;
    return VG_OK;
}

void vg_engines_destroy(vg_device *dev)
{
    vg_engine *e = dev->engines;
    dev->engines = NULL;
    while (e) {
        vg_engine *next = e->next;
        if (!atomic_load(&e->closed))
            vg_engine_close(e);
        e->magic = 0;
        pthread_mutex_destroy(&e->lock);
        pthread_cond_destroy(&e->idle);
        free(e);
        e = next;
    }
}

vg_status vg_engine_id(const vg_engine *e, int *id)
{
    vg_status st = vg_engine_check(e, "vg_engine_id");
    if (st != VG_OK)
        return st;
    if (!id)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_engine_id: id is NULL");
    *id = e->id;
    return VG_OK;
}

vg_status vg_engine_freeze_tuning(vg_engine *e)
{
    vg_status st = vg_engine_check(e, "vg_engine_freeze_tuning");
    if (st != VG_OK)
        return st;
    if (!vg_engine_acquire(e))
        return VG_ERR_STATE;
    st = vg_tuning_freeze(&e->tuning);
    vg_engine_release(e);
    return st;
}

vg_status vg_engine_tuning_state(vg_engine *e, vg_tuning_state *out)
{
    vg_status st = vg_engine_check(e, "vg_engine_tuning_state");
    if (st != VG_OK)
        return st;
    if (!out)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_engine_tuning_state: out is NULL");
    if (!vg_engine_acquire(e))
        return VG_ERR_STATE;
    vg_tuning_read_state(&e->tuning, out);
    vg_engine_release(e);
    return VG_OK;
}
