/* sha256 / hex / HMAC / file hashing against published vectors. */
#include "testutil.h"

#include <fcntl.h>

#include "base/sha256.h"

static const char *EMPTY = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const char *ABC = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

static void test_known_vectors(void **st)
{
    (void)st;
    char hex[65];
    sha256_hex("", 0, hex);
    assert_string_equal(hex, EMPTY);
    sha256_hex("abc", 3, hex);
    assert_string_equal(hex, ABC);
    /* FIPS 180-2 two-block vector */
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha256_hex(m, strlen(m), hex);
    assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_streaming_equals_oneshot(void **st)
{
    (void)st;
    sha256_ctx c;
    sha256_init(&c);
    sha256_update(&c, "a", 1);
    sha256_update(&c, "", 0);
    sha256_update(&c, "bc", 2);
    uint8_t d[32];
    sha256_final(&c, d);
    char hex[65];
    hex_encode(d, 32, hex);
    assert_string_equal(hex, ABC);
    assert_null(c.md);
    sha256_init(&c);
    sha256_update(&c, "x", 1);
    sha256_abort(&c);
    assert_null(c.md);
}

static void test_u64le_framing(void **st)
{
    (void)st;
    const uint8_t le[8] = {0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01};
    uint8_t a[32], b[32];
    sha256_ctx c;
    sha256_init(&c);
    sha256_update_u64le(&c, 0x0102030405060708ULL);
    sha256_final(&c, a);
    sha256(le, 8, b);
    assert_memory_equal(a, b, 32);
}

static void test_hex_roundtrip(void **st)
{
    (void)st;
    uint8_t in[4] = {0x00, 0xff, 0xa5, 0x10}, out[4];
    char hex[9];
    hex_encode(in, 4, hex);
    assert_string_equal(hex, "00ffa510");
    assert_int_equal(hex_decode("00FFa510", out, 4), 0);
    assert_memory_equal(in, out, 4);
    assert_int_equal(hex_decode("00fg", out, 2), -1);
    assert_int_equal(hex_decode("0", out, 1), -1);
}

static void test_normalize(void **st)
{
    (void)st;
    char out[65];
    char up[80];
    snprintf(up, sizeof up, "sha256:%s", ABC);
    for (char *p = up + 7; *p; p++)
        if (*p >= 'a' && *p <= 'f')
            *p = (char)(*p - 32);
    assert_int_equal(sha256_normalize_hex(up, out), 0);
    assert_string_equal(out, ABC);
    assert_int_equal(sha256_normalize_hex(ABC, out), 0);
    assert_string_equal(out, ABC);
    assert_int_equal(sha256_normalize_hex("abc", out), -1);
    char bad[65];
    memcpy(bad, ABC, 65);
    bad[10] = 'z';
    assert_int_equal(sha256_normalize_hex(bad, out), -1);
    snprintf(up, sizeof up, "%s0", ABC);
    assert_int_equal(sha256_normalize_hex(up, out), -1);
    snprintf(up, sizeof up, "md5:%s", ABC);
    assert_int_equal(sha256_normalize_hex(up, out), -1);
}

static void test_hmac_rfc4231(void **st)
{
    (void)st;
    uint8_t key[20], d[32];
    memset(key, 0x0b, sizeof key);
    char hex[65];
    hmac_sha256(key, sizeof key, "Hi There", 8, d);
    hex_encode(d, 32, hex);
    assert_string_equal(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
    hmac_sha256("Jefe", 4, "what do ya want for nothing?", 28, d);
    hex_encode(d, 32, hex);
    assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    /* empty key and message: still a valid MAC, not a crash */
    hmac_sha256("", 0, "", 0, d);
    hex_encode(d, 32, hex);
    assert_string_equal(hex, "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

static void test_ct_equal(void **st)
{
    (void)st;
    assert_int_equal(ct_equal("abcd", "abcd", 4), 1);
    assert_int_equal(ct_equal("abcd", "abce", 4), 0);
    assert_int_equal(ct_equal("x", "y", 0), 1);
}

static void test_file(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *p = tu_write(dir, "f", "abc");
    char hex[65];
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sha256_file_hex(p, hex, &err), 0);
    assert_string_equal(hex, ABC);

    /* larger than the 64 KiB buffer: streaming must equal the one-shot digest */
    size_t n = 200 * 1024 + 17;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)(i * 31 + 7);
    char *bp = NULL;
    assert_true(asprintf(&bp, "%s/big", dir) > 0);
    FILE *f = fopen(bp, "wb");
    fwrite(big, 1, n, f);
    fclose(f);
    char want[65];
    sha256_hex(big, n, want);
    assert_int_equal(sha256_file_hex(bp, hex, &err), 0);
    assert_string_equal(hex, want);

    /* a symlink is never followed */
    char *lp = NULL;
    assert_true(asprintf(&lp, "%s/link", dir) > 0);
    assert_int_equal(symlink(p, lp), 0);
    assert_int_equal(sha256_file_hex(lp, hex, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));

    /* missing file: error names it */
    char *mp = NULL;
    assert_true(asprintf(&mp, "%s/missing", dir) > 0);
    assert_int_equal(sha256_file_hex(mp, hex, &err), -1);
    assert_non_null(strstr(err.msg, "missing"));

    /* a FIFO is refused, not waited on */
    char *fp = NULL;
    assert_true(asprintf(&fp, "%s/fifo", dir) > 0);
    assert_int_equal(mkfifo(fp, 0600), 0);
    assert_int_equal(sha256_file_hex(fp, hex, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));

    free(big);
    free(bp);
    free(lp);
    free(mp);
    free(fp);
    free(p);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_vectors), cmocka_unit_test(test_streaming_equals_oneshot),
        cmocka_unit_test(test_u64le_framing), cmocka_unit_test(test_hex_roundtrip),
        cmocka_unit_test(test_normalize),     cmocka_unit_test(test_hmac_rfc4231),
        cmocka_unit_test(test_ct_equal),      cmocka_unit_test(test_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
