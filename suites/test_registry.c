/*
 * The operator registry: every operator has a schema; every operator taking
 * a native policy argument is in the configured list (the walk fails naming
 * the one missing); the configured list names only registered operators.
 */
#include "test_decision_util.h"

/* The walk over the real registry. */
static void every_policy_operator_is_configured(void **state)
{
    (void)state;
    const vg_operator *ops = NULL;
    size_t n = 0;
    const char *const *names = NULL;
    size_t count = 0;
    assert_int_equal(vg_registry_list(&ops, &n), VG_OK);
    assert_int_equal(vg_registry_configured(&names, &count), VG_OK);
    assert_true(n > 0);
    for (size_t i = 0; i < n; i++) {
        if (!ops[i].takes_native_policy)
            continue;
        size_t j = 0;
        while (j < count && strcmp(names[j], ops[i].name) != 0)
            j++;
        if (j == count)
            fail_msg("operator '%s' takes a native policy but is not in the configured list",
                     ops[i].name);
    }
    if (vg_registry_check(ops, n, names, count) != VG_OK)
        fail_msg("%s", vg_last_error());
}

static void schemas_are_complete(void **state)
{
    (void)state;
    const vg_operator *ops = NULL;
    size_t n = 0;
    vg_registry_list(&ops, &n);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(ops[i].name);
        assert_non_null(ops[i].schema);
        /* the schema starts with the operator's name and an argument list */
        size_t len = strlen(ops[i].name);
        assert_true(strncmp(ops[i].schema, ops[i].name, len) == 0);
        assert_int_equal(ops[i].schema[len], '(');
        assert_non_null(strstr(ops[i].schema, ") -> "));
        /* a native policy argument in the schema iff the flag says so */
        assert_int_equal(strstr(ops[i].schema, "Policy native") != NULL,
                         ops[i].takes_native_policy != 0);
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(ops[i].name, ops[j].name);
        assert_ptr_equal(vg_registry_find(ops[i].name), &ops[i]);
    }
    assert_null(vg_registry_find("no_such_op"));
}

static void configured_names_are_registered(void **state)
{
    (void)state;
    const char *const *names = NULL;
    size_t count = 0;
    vg_registry_configured(&names, &count);
    for (size_t i = 0; i < count; i++) {
        const vg_operator *op = vg_registry_find(names[i]);
        if (!op)
            fail_msg("configured operator '%s' is not registered", names[i]);
        assert_true(op->takes_native_policy);
    }
}

/* The check itself: a registry with an unconfigured policy operator fails,
 * naming it. */
static void check_names_the_missing_operator(void **state)
{
    (void)state;
    const vg_operator fake[] = {
        {"gemm", "gemm(Tensor x, QWeight w, Policy native) -> Tensor", 1},
        {"fused_gemm", "fused_gemm(Tensor x, QWeight w, Policy native) -> Tensor", 1},
        {"plain", "plain(Tensor x) -> Tensor", 0},
    };
    const char *const listed[] = {"gemm"};
    assert_int_equal(vg_registry_check(fake, 3, listed, 1), VG_ERR_NOT_FOUND);
    assert_non_null(strstr(vg_last_error(), "'fused_gemm'"));
    const char *const both[] = {"fused_gemm", "gemm"};
    assert_int_equal(vg_registry_check(fake, 3, both, 2), VG_OK);
}

/* vg_gemm takes every registered dispatching operator, and nothing else. */
static void gemm_uses_registered_names(void **state)
{
    (void)state;
    vg_device *dev = open_cpu(NULL);
    test_layer l;
    layer_open(&l, dev, VG_FAMILY_FP16, VG_PATH_DENSE, 32, 32, 1, 100);
    vg_gemm_args a = layer_call(&l, 100);
    assert_int_equal(vg_gemm(dev, "gemm", &a, NULL), VG_OK);
    assert_int_equal(vg_gemm(dev, "grouped_gemm", &a, NULL), VG_OK);
    assert_int_equal(vg_gemm(dev, "GEMM", &a, NULL), VG_ERR_NOT_FOUND);
    layer_close(&l);
    vg_device_close(dev);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_policy_operator_is_configured),
        cmocka_unit_test(schemas_are_complete),
        cmocka_unit_test(configured_names_are_registered),
        cmocka_unit_test(check_names_the_missing_operator),
        cmocka_unit_test(gemm_uses_registered_names),
    };
    return VGTEST_MAIN("registry", tests);
}
