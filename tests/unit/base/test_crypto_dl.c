/*
 * libcrypto on first use (base/crypto_dl.h): not mapped until a digest is
 * asked for, the real library once it is, and a clean refusal — exit status
 * 1 and a message naming the library — when it cannot be loaded, never a
 * digest computed some other way.
 */
#include "testutil.h"

#include <dlfcn.h>
#include <sys/wait.h>

#include "base/crypto_dl.h"
#include "base/sha256.h"

static const char *const SONAME = "libcrypto.so.3";

static int mapped(void)
{
    void *h = dlopen(SONAME, RTLD_NOW | RTLD_NOLOAD);
    if (h)
        dlclose(h);
    return h != NULL;
}

/* Runs first: nothing in this process has hashed yet. */
static void test_not_mapped_before_first_digest(void **st)
{
    (void)st;
    assert_false(mapped());
    assert_false(crypto_loaded());
    /* the helpers that need no libcrypto leave it unmapped */
    assert_true(ct_equal("abc", "abc", 3));
    assert_false(ct_equal("abc", "abd", 3));
    assert_true(ct_equal("", "", 0));
    char hex[7];
    hex_encode((const uint8_t *)"\x01\xab\xff", 3, hex);
    assert_string_equal(hex, "01abff");
    assert_false(mapped());
}

static void test_unloadable_library_ends_the_process(void **st)
{
    (void)st;
    int pfd[2];
    assert_int_equal(pipe(pfd), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(pfd[1], 2);
        static const char *const bad[] = {"libagentstack-no-such-crypto.so.3", NULL};
        crypto__set_names(bad);
        char hex[65];
        sha256_hex("abc", 3, hex);
        _exit(0); /* reached only if a digest was made without libcrypto */
    }
    close(pfd[1]);
    char buf[2048];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof buf - 1 && (n = read(pfd[0], buf + got, sizeof buf - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
    close(pfd[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    assert_non_null(strstr(buf, "agentstack: libcrypto is not installed"));
    assert_non_null(strstr(buf, "libssl3"));
    assert_non_null(strstr(buf, "libagentstack-no-such-crypto.so.3"));
}

static void test_first_digest_loads_the_system_library(void **st)
{
    (void)st;
    char hex[65];
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    assert_true(crypto_loaded());
    assert_true(mapped());
    /* the table is complete: every entry point resolved */
    const struct as_libcrypto *c = crypto_api();
    const void *const *fn = (const void *const *)(const void *)c;
    for (size_t i = 0; i < sizeof *c / sizeof(void *); i++)
        assert_non_null(fn[i]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_not_mapped_before_first_digest),
        cmocka_unit_test(test_unloadable_library_ends_the_process),
        cmocka_unit_test(test_first_digest_loads_the_system_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
