/* Ed25519 signing: RFC 8032 vector, persistent 0600 key, refusals. */
#include <sys/stat.h>

#include "testutil.h"

#include "base/sha256.h"
#include "bundle/sign.h"

/* RFC 8032 section 7.1 TEST 2 */
#define SEED "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb"
#define PUB "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c"
#define SIG                                                                                        \
    "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f1" \
    "1d8c387b2eaeb4302aeeb00d291612bb0c00"

static void test_rfc8032(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char keys[2048];
    snprintf(keys, sizeof keys, "%s/keys", t);
    mkdir(keys, 0700);
    char *k = tu_write(keys, "ed25519.key", SEED "\n");
    chmod(k, 0600);
    uint8_t sig[64], pub[32], want_pub[32], want_sig[64];
    int created = 1;
    struct as_err err = AS_ERR_INIT;
    const uint8_t msg[1] = {0x72};
    assert_int_equal(sign_message(keys, msg, 1, sig, pub, &created, &err), 0);
    assert_int_equal(created, 0);
    assert_int_equal(sign_parse_hex(PUB, want_pub, 32), 0);
    assert_int_equal(sign_parse_hex(SIG, want_sig, 64), 0);
    assert_memory_equal(pub, want_pub, 32);
    assert_memory_equal(sig, want_sig, 64);
    assert_int_equal(sign_verify(pub, sig, msg, 1), 1);
    const uint8_t other[1] = {0x73};
    assert_int_equal(sign_verify(pub, sig, other, 1), 0);
    /* The .pub file was derived. */
    char pp[4096];
    snprintf(pp, sizeof pp, "%s/ed25519.pub", keys);
    char *pubtxt = tu_read(pp, NULL);
    assert_string_equal(pubtxt, PUB "\n");
    free(pubtxt);
    free(k);
    tu_rmtree(t);
}

static void test_create_and_persist(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char keys[2048], kp[4096];
    snprintf(keys, sizeof keys, "%s/home/.agentstack/keys", t);
    snprintf(kp, sizeof kp, "%s/ed25519.key", keys);
    uint8_t pub1[32], pub2[32], sig[64];
    int created = 0;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sign_key_ensure(keys, pub1, &created, &err), 0);
    assert_int_equal(created, 1);
    struct stat st;
    assert_int_equal(stat(kp, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(sign_message(keys, "lock", 4, sig, pub2, &created, &err), 0);
    assert_int_equal(created, 0);
    assert_memory_equal(pub1, pub2, 32);
    assert_int_equal(sign_verify(pub1, sig, "lock", 4), 1);
    sig[10] ^= 1;
    assert_int_equal(sign_verify(pub1, sig, "lock", 4), 0);

    /* A key readable by others is refused, not used. */
    chmod(kp, 0644);
    as_err_clear(&err);
    assert_int_equal(sign_message(keys, "lock", 4, sig, pub2, &created, &err), -1);
    assert_non_null(strstr(err.msg, "readable by other users"));
    chmod(kp, 0600);
    /* A symlinked key is refused. */
    char alt[4096];
    snprintf(alt, sizeof alt, "%s/real.key", t);
    rename(kp, alt);
    assert_int_equal(symlink(alt, kp), 0);
    as_err_clear(&err);
    assert_int_equal(sign_key_ensure(keys, pub2, &created, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    tu_rmtree(t);
}

static void test_hex_parse(void **state)
{
    (void)state;
    uint8_t k[32];
    assert_int_equal(sign_parse_hex("  " PUB "\n", k, 32), 0);
    const char *upper = "3D4017C3E843895A92B70AA74D1B7EBC9C982CCF2EC4968CC0CD55F12AF4660C";
    assert_int_equal(sign_parse_hex(upper, k, 32), 0);
    assert_int_equal(sign_parse_hex("abc", k, 32), -1);
    assert_int_equal(sign_parse_hex(PUB "00", k, 32), -1);
    const char *bad = "zz4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c";
    assert_int_equal(sign_parse_hex(bad, k, 32), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc8032),
        cmocka_unit_test(test_create_and_persist),
        cmocka_unit_test(test_hex_parse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
