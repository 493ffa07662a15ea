/*
 * libsecret loaded on the first keychain call (src/secrets/secret_dl.c):
 * nothing of libsecret or glib is in memory before; without the library the
 * keychain refuses every call with an error naming the package (never a
 * fallback, never "missing"), while later layers of the chain still answer;
 * a library of that name that is not libsecret is refused; once it can be
 * loaded, it loads without a restart and stays. The tests run in this order
 * in one process: the failures first, because a loaded libsecret stays
 * loaded and the keychain's probe answer is kept for the process.
 */
#include "testutil.h"

#include <dlfcn.h>

#include "secrets/backends.h"
#include "secrets/secret_dl.h"

#define NO_LIBSECRET "this build has no libsecret (install libsecret-1-dev, reconfigure)"

static const char *const absent[] = {"libagentstack-test-absent-secret.so.0", NULL};

static int in_memory(const char *soname)
{
    void *h = dlopen(soname, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

static void test_nothing_loaded_before_use(void **state)
{
    (void)state;
    assert_false(in_memory("libsecret-1.so.0"));
    assert_false(in_memory("libglib-2.0.so.0"));
    assert_false(in_memory("libgio-2.0.so.0"));
    assert_false(in_memory("libgobject-2.0.so.0"));
}

static void test_absent_library_keychain_refuses(void **state)
{
    (void)state;
    if (!sec_keychain_compiled())
        tu_skip(NO_LIBSECRET);
    char *tmp = tu_tmpdir();
    sec__libsecret_set_names(absent);
    /* A bus address, so the probe gets past the bus check to the load; no
     * D-Bus connection is made because the load fails first. */
    setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/agentstack-test-bus", 1);

    struct as_err err = AS_ERR_INIT;
    assert_null(sec_libsecret_load(&err));
    assert_non_null(strstr(err.msg, "libsecret is not installed: apt-get install libsecret-1-0"));
    assert_non_null(strstr(err.msg, "libagentstack-test-absent-secret.so.0"));

    as_err_clear(&err);
    assert_int_equal(sec_keychain_probe(&err), -1);
    assert_non_null(strstr(err.msg, "libsecret is not installed: apt-get install libsecret-1-0"));

    as_err_clear(&err);
    assert_int_equal(sec_keychain_store("T", "value-not-echoed", 16, &err), -1);
    assert_non_null(strstr(err.msg, "apt-get install libsecret-1-0"));
    assert_null(strstr(err.msg, "value-not-echoed"));

    strbuf v = SB_INIT;
    as_err_clear(&err);
    assert_int_equal(sec_keychain_lookup("T", &v, &err), SEC_FAILED);
    assert_non_null(strstr(err.msg, "keychain read failed: libsecret is not installed"));

    bool existed = true;
    as_err_clear(&err);
    assert_int_equal(sec_keychain_delete("T", &existed, &err), -1);
    assert_false(existed);
    assert_non_null(strstr(err.msg, "apt-get install libsecret-1-0"));

    strvec names = STRVEC_INIT;
    as_err_clear(&err);
    assert_int_equal(sec_keychain_names(&names, &err), -1);
    assert_int_equal(names.n, 0);
    assert_non_null(strstr(err.msg, "apt-get install libsecret-1-0"));

    /* the chain reports the keychain failed, never missing; env still answers */
    unsetenv("T");
    setenv("T2", "from-env", 1);
    struct sec_chain_opts o = {0};
    struct sec_chain *c = sec_chain_full(&o);
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "T", &v, &r), SEC_FAILED);
    sb_reset(&v);
    assert_int_equal(sec_resolve(c, "T2", &v, &r), SEC_FOUND);
    assert_string_equal(v.buf, "from-env");
    sec_chain_free(c);
    sb_release_secure(&v);
    strvec_clear(&names);

    /* a failed load maps nothing */
    assert_false(in_memory("libglib-2.0.so.0"));
    unsetenv("DBUS_SESSION_BUS_ADDRESS");
    tu_rmtree(tmp);
}

static void test_library_without_secret_symbols(void **state)
{
    (void)state;
    if (!sec_keychain_compiled())
        tu_skip(NO_LIBSECRET);
    /* loads, but is not libsecret: refused (and closed again) */
    const char *wrong[] = {"libjansson.so.4", NULL};
    sec__libsecret_set_names(wrong);
    struct as_err err = AS_ERR_INIT;
    assert_null(sec_libsecret_load(&err));
    assert_non_null(strstr(err.msg, "(libjansson.so.4) lacks secret_password_lookup_binary_sync"));
    assert_non_null(strstr(err.msg, "apt-get install libsecret-1-0"));
    assert_false(in_memory("libglib-2.0.so.0"));
}

static void test_installed_later_loads_and_stays(void **state)
{
    (void)state;
    if (!sec_keychain_compiled())
        tu_skip(NO_LIBSECRET);
    struct as_err err = AS_ERR_INIT;
    sec__libsecret_set_names(absent);
    assert_null(sec_libsecret_load(&err));

    sec__libsecret_set_names(NULL); /* "installed": the default name loads */
    as_err_clear(&err);
    const struct sec_libsecret *a = sec_libsecret_load(&err);
    assert_non_null(a);
    assert_false(as_err_isset(&err));
    assert_true(in_memory("libsecret-1.so.0"));
    assert_true(in_memory("libglib-2.0.so.0"));
    assert_true(in_memory("libgio-2.0.so.0"));

    /* loaded once: the same table, whatever the names say now */
    sec__libsecret_set_names(absent);
    assert_ptr_equal(sec_libsecret_load(&err), a);
    sec__libsecret_set_names(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nothing_loaded_before_use),
        cmocka_unit_test(test_absent_library_keychain_refuses),
        cmocka_unit_test(test_library_without_secret_symbols),
        cmocka_unit_test(test_installed_later_loads_and_stays),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
