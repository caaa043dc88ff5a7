/*
 * A recipe golden file stores no weight, only how the generator made it (a
 * seed, the family and the shape) and the SHA-256 of each weight dataset.
 * The generator rebuilds it (golden_gen.c); the reader checks the rebuilt
 * data against the stored hashes.  Internal to golden/.
 */
#ifndef VOLTGATE_GOLDEN_RECIPE_H
#define VOLTGATE_GOLDEN_RECIPE_H

#include "voltgate/golden.h"

/* Fills f->w_q, w_scale, w_zero, w_tensor_scale and w_dequant from f's seed,
 * family, groups, n and k, as `voltgate golden gen` made them.  f->layout
 * must be set.  Messages start with "recipe weight: "; on failure what was
 * allocated stays in f for vg_golden_free. */
vg_status vg_golden_rebuild_recipe(vg_golden_file *f);

#endif
