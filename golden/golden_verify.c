/*
 * The golden verifier's engine: runs the cases of one file through the
 * runtime on one device and compares with y_ref.
 *
 * The output is poisoned with NaN before every run, so an element that a
 * kernel never wrote stays NaN and fails as "unwritten output" instead of
 * passing with whatever the previous run left there.
 */
#include "voltgate/golden.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "voltgate/formats.h"
#include "voltgate/runtime.h"
#include "fileio.h"

#define MAX_PLANS 256

void vg_golden_compare(const float *y, const float *y_ref, size_t count, double *rel_rms,
                       double *max_abs, size_t *nonfinite)
{
    double err2 = 0.0, ref2 = 0.0, worst = 0.0;
    size_t bad = 0;
    for (size_t i = 0; i < count; i++) {
        if (!isfinite(y[i])) {
            bad++;
            continue;
        }
        double d = (double)y[i] - (double)y_ref[i];
        err2 += d * d;
        ref2 += (double)y_ref[i] * (double)y_ref[i];
        if (fabs(d) > worst)
            worst = fabs(d);
    }
    if (bad) { /* no meaningful error figure: report infinity */
        *rel_rms = INFINITY;
        *max_abs = INFINITY;
    } else {
        *rel_rms = ref2 > 0.0 ? sqrt(err2 / ref2) : (err2 > 0.0 ? INFINITY : 0.0);
        *max_abs = worst;
    }
    *nonfinite = bad;
}

/* Device copies of one file's weight. */
typedef struct dev_weight {
    void *q, *scale, *zero;
} dev_weight;

static vg_status upload(vg_device *dev, const void *src, size_t bytes, void **dst)
{
    *dst = NULL;
    if (!src || !bytes)
        return VG_OK;
    vg_status st = vg_device_alloc(dev, bytes, dst);
    if (st == VG_OK && (st = vg_device_upload(dev, *dst, src, bytes)) != VG_OK) {
        vg_device_free(dev, *dst);
        *dst = NULL;
    }
    return st;
}

static void release(vg_device *dev, void **p)
{
    if (*p)
        vg_device_free(dev, *p);
    *p = NULL;
}

/* One row: fill the fixed fields. */
static void row_init(vg_golden_row *r, const char *file, const vg_golden_file *f,
                     const vg_golden_case *c, const char *backend, int32_t rows)
{
    memset(r, 0, sizeof *r);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t stem = strlen(base);
    if (stem > 3 && !strcmp(base + stem - 3, ".h5"))
        stem -= 3;
    snprintf(r->case_name, sizeof r->case_name, "%.*s/%s", (int)stem, base, c->name);
    snprintf(r->file, sizeof r->file, "%s", file);
    r->family = f->family;
    r->path = f->path;
    r->m = c->m;
    r->n = f->n;
    r->k = f->k;
    r->groups = f->groups;
    r->tokens = rows;
    snprintf(r->backend, sizeof r->backend, "%s", backend);
    r->tol_rel_rms = c->tol_rel_rms;
    r->tol_max_abs = c->tol_max_abs;
    r->rel_rms = NAN;
    r->max_abs = NAN;
}

/* Poisons y, runs one plan (or the heuristic when plan_id is NULL),
 * downloads and compares into *r. */
static void run_one(vg_device *dev, const vg_golden_file *f, const vg_golden_case *c,
                    vg_gemm_args *args, const char *plan_id, const void *poison, void *host_y,
                    float *y32, vg_golden_row *r)
{
    size_t count = (size_t)c->m * (size_t)f->n;
    size_t esize = c->y_dtype == VG_DTYPE_F16 ? 2 : 4;
    vg_status st = vg_device_upload(dev, args->y, poison, count * esize);
    vg_dispatch_info info;
    memset(&info, 0, sizeof info);
    if (st == VG_OK)
        st = plan_id ? vg_gemm_with_plan(dev, plan_id, args) : vg_gemm(dev, "gemm", args, &info);
    if (st == VG_OK)
        st = vg_device_synchronize(dev, args->stream);
    if (st == VG_OK)
        st = vg_device_download(dev, host_y, args->y, count * esize);
    if (plan_id)
        snprintf(r->plan, sizeof r->plan, "%s", plan_id);
    else
        snprintf(r->plan, sizeof r->plan, "%s", info.plan && info.plan->id ? info.plan->id : "?");
    if (st != VG_OK) {
        r->pass = 0;
        snprintf(r->note, sizeof r->note, "run failed: %s: %s", vg_status_str(st), vg_last_error());
        return;
    }
    if (esize == 2)
        for (size_t i = 0; i < count; i++)
            y32[i] = vg_fp16_to_f32(((const uint16_t *)host_y)[i]);
    else
        memcpy(y32, host_y, count * sizeof(float));
    size_t nan_left = 0, nonfinite = 0;
    for (size_t i = 0; i < count; i++)
        if (isnan(y32[i]))
            nan_left++;
    vg_golden_compare(y32, c->y_ref, count, &r->rel_rms, &r->max_abs, &nonfinite);
    r->pass = nonfinite == 0 && r->rel_rms <= r->tol_rel_rms && r->max_abs <= r->tol_max_abs;
    if (nan_left)
        snprintf(r->note, sizeof r->note,
                 "unwritten output: %zu of %zu elements NaN after the run (never written, or NaN "
                 "computed)", nan_left, count);
    else if (nonfinite)
        snprintf(r->note, sizeof r->note, "%zu non-finite output elements", nonfinite);
    else if (r->rel_rms > r->tol_rel_rms)
        snprintf(r->note, sizeof r->note, "relative RMS error over tolerance");
    else if (r->max_abs > r->tol_max_abs)
        snprintf(r->note, sizeof r->note, "max abs error over tolerance");
    if (!plan_id && info.path != args->path && vg_path_name(info.path)) {
        size_t used = strlen(r->note);
        snprintf(r->note + used, sizeof r->note - used, "%sran as %s", used ? "; " : "",
                 vg_path_name(info.path));
    }
}

/* The runtime configuration for --plan heuristic: tuning off, so vg_gemm
 * takes the heuristic rule (nothing is measured). */
static const char *HEURISTIC_CONFIG =
    "{\"sm70_fp8\":{\"native\":{\"fp8_tune_small_shapes\":false}}}";

vg_status vg_golden_verify_file(vg_device *dev, const char *file, const vg_golden_file *f,
                                const vg_golden_verify_opts *o, vg_golden_row_fn fn, void *user,
                                int *ran, int *failed)
{
    if (!dev || !file || !f || !o || !o->backend || !o->plan)
        return vg_fail(VG_ERR_INVALID_ARG, "golden verify: NULL argument");
    const char *backend = o->backend;
    int arch = 0;
    vg_device_info(dev, &backend, &arch);
    int mode_all = !strcmp(o->plan, "all"), mode_heur = !strcmp(o->plan, "heuristic");
    int nran = 0, nfail = 0;

    /* the weight, once per file */
    size_t G = (size_t)f->groups;
    dev_weight dw = {NULL, NULL, NULL};
    vg_status st = upload(dev, f->w_q, G * f->layout.q_bytes, &dw.q);
    if (st == VG_OK)
        st = upload(dev, f->w_scale, G * f->layout.scale_bytes, &dw.scale);
    if (st == VG_OK)
        st = upload(dev, f->w_zero, G * f->layout.zero_bytes, &dw.zero);

    vg_config *cfg = NULL;
    int entered = 0;
    if (st == VG_OK && mode_heur) {
        st = vg_config_parse(HEURISTIC_CONFIG, &cfg);
        if (st == VG_OK && (st = vg_policy_enter(dev, cfg)) == VG_OK)
            entered = 1;
    }

    for (int32_t ci = 0; st == VG_OK && ci < f->ncases; ci++) {
        const vg_golden_case *c = &f->cases[ci];
        size_t count = (size_t)c->m * (size_t)f->n;
        size_t esize = c->y_dtype == VG_DTYPE_F16 ? 2 : 4;
        void *dx = NULL, *doff = NULL, *dy = NULL, *dws = NULL;
        void *host_y = malloc(count * esize), *poison = malloc(count * esize);
        float *y32 = malloc(count * sizeof(float));
        if (!host_y || !poison || !y32) {
            st = vg_fail(VG_ERR_NO_MEMORY, "golden verify: out of memory");
            goto next;
        }
        if (esize == 2)
            for (size_t i = 0; i < count; i++)
                ((uint16_t *)poison)[i] = 0x7E00u; /* FP16 quiet NaN */
        else
            for (size_t i = 0; i < count; i++)
                ((float *)poison)[i] = NAN;

        if ((st = upload(dev, c->x, (size_t)c->m * (size_t)f->k * 2, &dx)) != VG_OK)
            goto next;
        if (c->offsets &&
            (st = upload(dev, c->offsets, (G + 1) * sizeof(int32_t), &doff)) != VG_OK)
            goto next;
        if ((st = vg_device_alloc(dev, count * esize, &dy)) != VG_OK)
            goto next;

        vg_gemm_args args;
        memset(&args, 0, sizeof args);
        args.path = f->path;
        args.m = c->m;
        args.w = vg_golden_weight(f);
        args.w.q = dw.q;
        args.w.scale = dw.scale;
        args.w.zero = dw.zero;
        args.offsets = doff;
        args.offsets_host = c->offsets;
        args.x = dx;
        args.y = dy;
        args.y_dtype = c->y_dtype;
        int32_t rows = vg_gemm_max_group_rows(&args);

        size_t wsb = 0;
        if ((st = vg_gemm_workspace_bytes(dev, &args, &wsb)) != VG_OK)
            goto next;
        if (wsb && (st = vg_device_alloc(dev, wsb, &dws)) != VG_OK)
            goto next;
        args.workspace = dws;
        args.workspace_bytes = wsb;

        if (mode_heur) {
            vg_golden_row r;
            row_init(&r, file, f, c, backend, rows);
            run_one(dev, f, c, &args, NULL, poison, host_y, y32, &r);
            nran++;
            nfail += !r.pass;
            if (fn)
                fn(&r, user);
            goto next;
        }

        /* the plans that apply, each with the path it runs on: a grouped
         * case above the grouped kernels' limit runs on both paths the
         * runtime reroutes it to, moe (one grouped launch over the case's
         * offsets) and loop (with fp8_grouped_bmm_decode off) */
        const vg_plan *plans[MAX_PLANS];
        vg_path plan_path[MAX_PLANS];
        size_t np = 0;
        st = vg_device_plans(dev, f->family, f->path, rows, plans, MAX_PLANS, &np);
        np = np > MAX_PLANS ? MAX_PLANS : np;
        for (size_t p = 0; p < np; p++)
            plan_path[p] = f->path;
        if (st == VG_OK && np == 0 && f->path == VG_PATH_GROUPED) {
            static const vg_path reroutes[] = {VG_PATH_MOE, VG_PATH_LOOP};
            for (size_t r = 0; r < 2 && st == VG_OK; r++) {
                size_t n = 0;
                st = vg_device_plans(dev, f->family, reroutes[r], rows, plans + np,
                                     MAX_PLANS - np, &n);
                n = n > MAX_PLANS - np ? MAX_PLANS - np : n;
                for (size_t p = np; p < np + n; p++)
                    plan_path[p] = reroutes[r];
                np += n;
            }
        }
        if (st != VG_OK)
            goto next;
        {
            /* a rerouted call may need a different workspace, and a plan
             * the runtime would not offer at these rows (run here all the
             * same) more than vg_gemm_workspace_bytes counts */
            size_t wsb2 = 0;
            for (size_t p = 0; p < np; p++) {
                size_t need = 0;
                if (!mode_all && !vg_list_has(o->plan, plans[p]->id))
                    continue;
                args.path = plan_path[p];
                if (args.path != f->path &&
                    (st = vg_gemm_workspace_bytes(dev, &args, &need)) != VG_OK)
                    goto next;
                wsb2 = need > wsb2 ? need : wsb2;
                if ((st = vg_gemm_plan_workspace_bytes(dev, plans[p], &args, &need)) != VG_OK)
                    goto next;
                wsb2 = need > wsb2 ? need : wsb2;
            }
            args.path = f->path;
            if (wsb2 > wsb) {
                release(dev, &dws);
                if ((st = vg_device_alloc(dev, wsb2, &dws)) != VG_OK)
                    goto next;
                args.workspace = dws;
                args.workspace_bytes = wsb2;
            }
        }
        if (np == 0 && mode_all) {
            vg_golden_row r;
            row_init(&r, file, f, c, backend, rows);
            snprintf(r.plan, sizeof r.plan, "(none)");
            snprintf(r.note, sizeof r.note, "no plan of the %s backend applies", backend);
            nran++;
            nfail++;
            if (fn)
                fn(&r, user);
        }
        for (size_t p = 0; p < np; p++) {
            if (!mode_all && !vg_list_has(o->plan, plans[p]->id))
                continue;
            vg_golden_row r;
            row_init(&r, file, f, c, backend, rows);
            args.path = plan_path[p];
            run_one(dev, f, c, &args, plans[p]->id, poison, host_y, y32, &r);
            if (args.path != f->path) {
                size_t used = strlen(r.note);
                snprintf(r.note + used, sizeof r.note - used, "%sran as %s", used ? "; " : "",
                         vg_path_name(args.path));
            }
            nran++;
            nfail += !r.pass;
            if (fn)
                fn(&r, user);
        }
    next:
        release(dev, &dx);
        release(dev, &doff);
        release(dev, &dy);
        release(dev, &dws);
        free(host_y);
        free(poison);
        free(y32);
    }
    if (entered)
        vg_policy_leave();
    if (cfg)
        vg_config_free(cfg);
    release(dev, &dw.q);
    release(dev, &dw.scale);
    release(dev, &dw.zero);
    if (ran)
        *ran = nran;
    if (failed)
        *failed = nfail;
    return st;
}
