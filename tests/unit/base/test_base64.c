/* base64: the RFC 4648 vectors both ways, and the strict decoder refusing
 * every text that is not the one canonical encoding of some bytes. */
#include "testutil.h"

#include "base/base64.h"

static void test_rfc_vectors(void **state)
{
    (void)state;
    static const char *const plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
    static const char *const coded[] = {"",         "Zg==",     "Zm8=",    "Zm9v",
                                        "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t i = 0; i < 7; i++) {
        strbuf e = SB_INIT, d = SB_INIT;
        base64_encode(plain[i], strlen(plain[i]), &e);
        assert_string_equal(e.buf ? e.buf : "", coded[i]);
        assert_int_equal(base64_decode(coded[i], strlen(coded[i]), &d), 0);
        assert_int_equal(d.len, strlen(plain[i]));
        assert_memory_equal(d.len ? d.buf : "", plain[i], d.len);
        sb_release(&e);
        sb_release(&d);
    }
}

static void test_every_byte_round_trips(void **state)
{
    (void)state;
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    for (size_t n = 0; n <= 256; n += 37) {
        strbuf e = SB_INIT, d = SB_INIT;
        base64_encode(all, n, &e);
        assert_int_equal(base64_decode(e.buf ? e.buf : "", e.len, &d), 0);
        assert_int_equal(d.len, n);
        if (n)
            assert_memory_equal(d.buf, all, n);
        sb_release(&e);
        sb_release(&d);
    }
}

static void test_non_canonical_refused(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "Zg=",      /* length not a multiple of 4 */
        "Zg",       /* unpadded */
        "Z===",     /* three pad characters */
        "Zh==",     /* unused bits set: "Zg==" is the one spelling of "f" */
        "Zm9=",     /* unused bits set in a one-pad group */
        "Zg==Zm9v", /* padding before the end */
        "Zm9v\n",   /* a newline */
        "Zm 9",     /* a space */
        "Zm-_",     /* the URL alphabet */
        "=Zm9",     /* padding first */
        "Zm=v",     /* padding in the middle of a group */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        strbuf d = SB_INIT;
        sb_adds(&d, "keep");
        if (base64_decode(bad[i], strlen(bad[i]), &d) == 0)
            fail_msg("'%s' accepted", bad[i]);
        assert_string_equal(d.buf, "keep"); /* out as it was */
        sb_release(&d);
    }
    strbuf d = SB_INIT;
    assert_int_equal(base64_decode("Zm\0v", 4, &d), -1); /* a NUL inside */
    sb_release(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc_vectors),
        cmocka_unit_test(test_every_byte_round_trips),
        cmocka_unit_test(test_non_canonical_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
