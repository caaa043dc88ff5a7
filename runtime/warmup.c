/*
 * Warm-up: run every decode shape of the engine's layers once, inside the
 * engine's policy, so serving finds them measured (and, with
 * freeze_tuning_after_warmup, never measures again).  vg_warmup() warms the
 * device's default engine, vg_engine_warmup() an engine (issue 10).
 *
 * The bug this prevents: a warm-up that ran outside the engine's policy
 * measured into the `default` partition, which serving never reads, so
 * serving measured again on live requests.  vg_warmup() therefore enters
 * cfg's policy itself and leaves it before returning, whatever the caller's
 * thread had entered.
 *
 * Shapes: grouped, loop and moe layers run 1..GROUPED_DECODE_MAX_TOKENS
 * tokens per group (one offsets row per token count, prepared once); dense
 * layers run M = 1..VG_TUNE_MAX_DENSE_M.  Every call really launches, on
 * real device buffers: the weights are synthetic (a fixed non-zero code in
 * every element, valid scales) because quantizing real weights of a large
 * layer costs more than the warm-up itself and the plans' speed does not
 * depend on the values.
 *
 * With gemm_lut_path set, its placeholders are expanded for the device
 * ({device}, {arch}, {rank}), the folder is created and checked writable
 * (a clear error now rather than at the export), the LUT is imported first
 * (when the file exists; only entries of cfg's policy, and only entries of
 * this build and plan set unless reuse_lut_across_builds) and the cache of
 * that policy is exported after the warm-up when it measured anything.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "voltgate/family.h"
#include "internal.h"

/* Fills `bytes` of device memory at dst with a repeating pattern. */
static vg_status fill(vg_device *dev, void *dst, size_t bytes, const void *pattern, size_t plen)
{
    enum { CHUNK = 1 << 20 };
    unsigned char *stage = malloc(CHUNK);
    if (!stage)
        return vg_fail(VG_ERR_NO_MEMORY, "warm-up: out of memory");
    for (size_t i = 0; i < CHUNK; i++)
        stage[i] = ((const unsigned char *)pattern)[i % plen];
    vg_status st = VG_OK;
    for (size_t off = 0; off < bytes && st == VG_OK; off += CHUNK) {
        size_t n = bytes - off < CHUNK ? bytes - off : CHUNK;
        st = vg_device_upload(dev, (char *)dst + off, stage, n);
    }
    free(stage);
    return st;
}

void vg_layer_buffers_free(vg_device *dev, vg_layer_buffers *b)
{
    vg_device_free(dev, b->q);
    vg_device_free(dev, b->scale);
    vg_device_free(dev, b->zero);
    vg_device_free(dev, b->x);
    vg_device_free(dev, b->y);
    vg_device_free(dev, b->offsets_dev);
    free(b->offsets_host);
    memset(b, 0, sizeof *b);
}

vg_status vg_layer_buffers_alloc(vg_device *dev, const vg_layer *layer,
                                 int32_t max_rows_per_group, vg_layer_buffers *b)
{
    memset(b, 0, sizeof *b);
    if (!dev || !layer || max_rows_per_group < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "layer buffers: bad argument");
    if ((unsigned)layer->family >= VG_FAMILY_COUNT || (unsigned)layer->path >= VG_PATH_COUNT)
        return vg_fail(VG_ERR_INVALID_ARG, "layer: invalid family %d or path %d",
                       (int)layer->family, (int)layer->path);
    b->layer = *layer;
    if (layer->path == VG_PATH_DENSE)
        b->layer.groups = 1;
    else if (layer->groups < 1)
        return vg_fail(VG_ERR_INVALID_ARG, "layer %s/%s: groups must be >= 1, got %d",
                       vg_family_name(layer->family), vg_path_name(layer->path),
                       (int)layer->groups);
    b->max_rows_per_group = max_rows_per_group;
    vg_weight_layout lay;
    vg_status st = vg_weight_layout_of(layer->family, layer->n, layer->k, &lay);
    if (st != VG_OK)
        return st;
    size_t g = (size_t)b->layer.groups;
    size_t rows = (size_t)max_rows_per_group * g;
    size_t x_bytes = rows * (size_t)layer->k * 2, y_bytes = rows * (size_t)layer->n * 4;
    size_t off_count = (size_t)max_rows_per_group * (g + 1);

    /* Non-zero codes and valid scales of each family (the family table's
     * fills; test_family checks that they dequantize to finite, non-zero
     * weights); X is FP16 0.1 everywhere. */
    static const uint16_t fp16_tenth = 0x2E66;
    const vg_family_desc *d = vg_family_desc_of(layer->family);
    unsigned char qpat[4], spat[4], zpat[4];
    size_t qlen = d->q.bytes, slen = d->scale.bytes, zlen = d->zero.bytes;
    vg_family_fill_bytes(&d->q, qpat);
    vg_family_fill_bytes(&d->scale, spat);
    vg_family_fill_bytes(&d->zero, zpat);

    if ((st = vg_device_alloc(dev, lay.q_bytes * g, &b->q)) != VG_OK ||
        (st = fill(dev, b->q, lay.q_bytes * g, qpat, qlen)) != VG_OK)
        goto fail;
    if (lay.scale_bytes &&
        ((st = vg_device_alloc(dev, lay.scale_bytes * g, &b->scale)) != VG_OK ||
         (st = fill(dev, b->scale, lay.scale_bytes * g, spat, slen)) != VG_OK))
        goto fail;
    if (lay.zero_bytes &&
        ((st = vg_device_alloc(dev, lay.zero_bytes * g, &b->zero)) != VG_OK ||
         (st = fill(dev, b->zero, lay.zero_bytes * g, zpat, zlen)) != VG_OK))
        goto fail;
    if ((st = vg_device_alloc(dev, x_bytes, (void **)&b->x)) != VG_OK ||
        (st = fill(dev, b->x, x_bytes, &fp16_tenth, 2)) != VG_OK ||
        (st = vg_device_alloc(dev, y_bytes, (void **)&b->y)) != VG_OK)
        goto fail;
    if (layer->path != VG_PATH_DENSE) {
        /* One offsets row per token count, built once: a decode step never
         * builds one. */
        b->offsets_host = malloc(off_count * sizeof *b->offsets_host);
        if (!b->offsets_host) {
            st = vg_fail(VG_ERR_NO_MEMORY, "warm-up: out of memory");
            goto fail;
        }
        for (size_t t = 1; t <= (size_t)max_rows_per_group; t++)
            for (size_t j = 0; j <= g; j++)
                b->offsets_host[(t - 1) * (g + 1) + j] = (int32_t)(j * t);
        if ((st = vg_device_alloc(dev, off_count * sizeof(int32_t), (void **)&b->offsets_dev)) !=
                VG_OK ||
            (st = vg_device_upload(dev, b->offsets_dev, b->offsets_host,
                                   off_count * sizeof(int32_t))) != VG_OK)
            goto fail;
    }
    return VG_OK;
fail:
    vg_layer_buffers_free(dev, b);
    return st;
}

vg_status vg_layer_args(const vg_layer_buffers *b, int32_t tokens, vg_gemm_args *a)
{
    if (tokens < 1 || tokens > b->max_rows_per_group)
        return vg_fail(VG_ERR_INVALID_ARG, "layer args: %d tokens, buffers hold 1..%d",
                       (int)tokens, (int)b->max_rows_per_group);
    memset(a, 0, sizeof *a);
    int32_t g = b->layer.groups;
    a->path = b->layer.path;
    a->m = tokens * g;
    a->w = (vg_weight){.family = b->layer.family, .n = b->layer.n, .k = b->layer.k,
                       .groups = g, .q = b->q, .scale = b->scale, .zero = b->zero,
                       .tensor_scale = 1.0f};
    if (b->layer.path != VG_PATH_DENSE) {
        a->offsets = b->offsets_dev + (size_t)(tokens - 1) * (size_t)(g + 1);
        a->offsets_host = b->offsets_host + (size_t)(tokens - 1) * (size_t)(g + 1);
    }
    a->x = b->x;
    a->y = b->y;
    a->y_dtype = VG_DTYPE_F32;
    return VG_OK;
}

static const char *op_of(vg_path path)
{
    return path == VG_PATH_DENSE ? "gemm" : path == VG_PATH_MOE ? "moe_gemm" : "grouped_gemm";
}

/* The warm-up calls of `layers`, inside whatever the thread entered. */
static vg_status warm_layers(vg_device *dev, const vg_layer *layers, int n, vg_warmup_report *r)
{
    for (int i = 0; i < n; i++) {
        int32_t top = layers[i].path == VG_PATH_DENSE ? VG_TUNE_MAX_DENSE_M
                                                      : GROUPED_DECODE_MAX_TOKENS;
        vg_layer_buffers b;
        vg_status st = vg_layer_buffers_alloc(dev, &layers[i], top, &b);
        if (st != VG_OK)
            return st;
        for (int32_t t = 1; t <= top && st == VG_OK; t++) {
            vg_gemm_args a;
            if ((st = vg_layer_args(&b, t, &a)) == VG_OK &&
                (st = vg_gemm(dev, op_of(layers[i].path), &a, NULL)) == VG_OK)
                r->calls++;
        }
        if (st == VG_OK)
            st = vg_device_synchronize(dev, NULL);
        vg_layer_buffers_free(dev, &b);
        if (st != VG_OK)
            return st;
    }
    return VG_OK;
}

vg_status vg_warmup(vg_device *dev, const vg_config *cfg, const vg_layer *layers, int n,
                    vg_warmup_report *report)
{
    if (!dev || !cfg || (n > 0 && !layers) || n < 0)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_warmup: bad argument");
    vg_warmup_report r = {0};
    /* The partitions of cfg: one hash per family (the same for families
     * without per_family options). */
    vg_policy pol;
    vg_policy_from_config(cfg, &pol);
    uint64_t hashes[VG_FAMILY_COUNT];
    size_t nh = vg_policy_hashes(&pol, hashes);
    char lut[4200];
    vg_lut_report lr;
    vg_status st =
        vg_lut_begin_for_config(dev, &dev->tuning, cfg, hashes, nh, lut, sizeof lut, &lr);
    if (st != VG_OK)
        return st;

    uint64_t before = atomic_load(&dev->tuning.measured_total);
    if ((st = vg_policy_enter(dev, cfg)) != VG_OK)
        return st;
    st = warm_layers(dev, layers, n, &r);
    vg_policy_leave();
    r.shapes_measured = atomic_load(&dev->tuning.measured_total) - before;
    if (st == VG_OK && lut[0] && r.shapes_measured > 0)
        st = vg_lut_export_policies(dev, &dev->tuning, lut, hashes, nh);
    if (st == VG_OK && cfg->f.freeze_tuning_after_warmup)
        st = vg_device_freeze_tuning(dev);
    r.frozen = atomic_load(&dev->tuning.frozen);
    if (report)
        *report = r;
    return st;
}

vg_status vg_engine_warmup(vg_engine *e, const vg_layer *layers, int n, vg_warmup_report *report)
{
    vg_status st = vg_engine_check(e, "vg_engine_warmup");
    if (st != VG_OK)
        return st;
    if ((n > 0 && !layers) || n < 0)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_engine_warmup: bad layers");
    if (!vg_engine_acquire(e))
        return VG_ERR_STATE;
    vg_warmup_report r = {0};
    uint64_t before = atomic_load(&e->tuning.measured_total);
    if ((st = vg_engine_enter(e)) == VG_OK) {
        st = warm_layers(e->dev, layers, n, &r);
        vg_engine_leave();
    }
    r.shapes_measured = atomic_load(&e->tuning.measured_total) - before;
    if (st == VG_OK && e->lut[0] && r.shapes_measured > 0)
    {
        uint64_t hashes[VG_FAMILY_COUNT];
        size_t nh = vg_policy_hashes(&e->pol, hashes);
        st = vg_lut_export_policies(e->dev, &e->tuning, e->lut, hashes, nh);
    }
    if (st == VG_OK && e->cfg->f.freeze_tuning_after_warmup)
        st = vg_tuning_freeze(&e->tuning);
    r.frozen = atomic_load(&e->tuning.frozen);
    vg_engine_release(e);
    if (report)
        *report = r;
    return st;
}
