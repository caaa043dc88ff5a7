/*
 * The operator registry: every operator the library exposes, with its
 * schema, and the list of operators configured to take the engine's native
 * policy.  An operator that takes a native policy argument but is missing
 * from the configured list would run under the `default` partition whatever
 * the engine entered, so test_registry walks the registry and fails naming
 * any such operator (vg_registry_check).
 *
 * vg_gemm() refuses an operator name that is not registered here, so the
 * trace's op= field is always a registered name.
 */
#include <string.h>

#include "internal.h"

static const vg_operator operators[] = {
    {"gemm", "gemm(Tensor x, QWeight w, Policy native) -> Tensor", 1},
    {"grouped_gemm", "grouped_gemm(Tensor x, QWeight[] w, Tensor offsets, Policy native) -> Tensor",
     1},
    {"moe_gemm", "moe_gemm(Tensor x, QWeight[] w, Tensor offsets, Policy native) -> Tensor", 1},
    {"gemm_with_plan", "gemm_with_plan(Tensor x, QWeight w, Tensor? offsets, str plan) -> Tensor",
     0},
    {"warmup", "warmup(Layer[] layers, Policy native) -> WarmupReport", 1},
};

/* The operators configured to receive the engine's native policy. */
static const char *const configured[] = {"gemm", "grouped_gemm", "moe_gemm", "warmup"};

vg_status vg_registry_list(const vg_operator **ops, size_t *count)
{
    if (!ops || !count)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_registry_list: NULL argument");
    *ops = operators;
    *count = sizeof operators / sizeof operators[0];
    return VG_OK;
}

vg_status vg_registry_configured(const char *const **names, size_t *count)
{
    if (!names || !count)
        return vg_fail(VG_ERR_INVALID_ARG, "vg_registry_configured: NULL argument");
    *names = configured;
    *count = sizeof configured / sizeof configured[0];
    return VG_OK;
}

const vg_operator *vg_registry_find(const char *name)
{
    for (size_t i = 0; i < sizeof operators / sizeof operators[0]; i++)
        if (strcmp(operators[i].name, name) == 0)
            return &operators[i];
    return NULL;
}

vg_status vg_registry_check(const vg_operator *ops, size_t n, const char *const *names,
                            size_t count)
{
    for (size_t i = 0; i < n; i++) {
        if (!ops[i].takes_native_policy)
            continue;
        size_t j = 0;
        while (j < count && strcmp(names[j], ops[i].name) != 0)
            j++;
        if (j == count)
            return vg_fail(VG_ERR_NOT_FOUND,
                           "operator '%s' takes a native policy but is not in the configured "
                           "list (schema: %s)",
                           ops[i].name, ops[i].schema);
    }
    return VG_OK;
}
