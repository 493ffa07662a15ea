/* Keyed argument digests. */
#include "testutil.h"

#include <ctype.h>
#include <sys/wait.h>

#include "audit/audit.h"
#include "base/json.h"
#include "base/sha256.h"

static char *home_of(const char *dir)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/home/.agentstack", dir) > 0);
    return p;
}

static json_t *parse(const char *s)
{
    json_error_t je;
    json_t *v = json_loads(s, 0, &je);
    assert_non_null(v);
    return v;
}

static void digest_of(const char *home, const char *json, char out[AUD_DIGEST_HEX + 1])
{
    json_t *v = json ? parse(json) : NULL;
    aud_args_digest(home, v, out);
    if (v)
        json_decref(v);
}

static void test_key_created_0600_on_first_use(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *home = home_of(dir);
    char *key = NULL, *adir = NULL;
    assert_true(asprintf(&key, "%s/audit/key", home) > 0);
    assert_true(asprintf(&adir, "%s/audit", home) > 0);
    struct stat st;
    assert_int_equal(stat(key, &st), -1);
    char d[AUD_DIGEST_HEX + 1];
    digest_of(home, "{\"a\":1}", d);
    assert_int_equal(stat(key, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 32);
    assert_int_equal(stat(adir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    free(key);
    free(adir);
    free(home);
    tu_rmtree(dir);
}

static void test_digest_formula(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *home = home_of(dir);
    char d1[13], d2[13], d3[13], d4[13], d5[13];
    digest_of(home, "{\"b\":[1,2,{\"y\":\"é/\",\"x\":null}],\"a\":\"hunter2\"}", d1);
    digest_of(home, "{\"a\":\"hunter2\",\"b\":[1,2,{\"x\":null,\"y\":\"é/\"}]}", d2);
    digest_of(home, "{\"a\":\"hunter3\",\"b\":[1,2,{\"x\":null,\"y\":\"é/\"}]}", d3);
    digest_of(home, NULL, d4);
    digest_of(home, "{}", d5);
    assert_int_equal(strlen(d1), 12);
    for (int i = 0; i < 12; i++)
        assert_true(isxdigit((unsigned char)d1[i]) && !isupper((unsigned char)d1[i]));
    assert_string_equal(d1, d2);     /* key order does not matter */
    assert_string_not_equal(d1, d3); /* values do */
    assert_string_equal(d4, d5);     /* missing arguments = {} */
    /* exactly HMAC-SHA-256(key, canonical JSON), first 12 hex */
    unsigned char key[64];
    size_t klen;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(aud_key_load(home, key, &klen, &err), 0);
    assert_int_equal(klen, 32);
    json_t *v = parse("{\"b\":[1,2,{\"y\":\"é/\",\"x\":null}],\"a\":\"hunter2\"}");
    strbuf canon = SB_INIT;
    json_canonical(v, &canon);
    assert_string_equal(canon.buf, "{\"a\":\"hunter2\",\"b\":[1,2,{\"x\":null,\"y\":\"é/\"}]}");
    uint8_t mac[32];
    hmac_sha256(key, klen, canon.buf, canon.len, mac);
    char hex[65];
    hex_encode(mac, 32, hex);
    assert_int_equal(strncmp(hex, d1, 12), 0);
    /* never the unkeyed hash of the same bytes */
    char plain[65];
    sha256_hex(canon.buf, canon.len, plain);
    assert_int_not_equal(strncmp(plain, d1, 12), 0);
    sb_release(&canon);
    json_decref(v);
    free(home);
    tu_rmtree(dir);
}

static void test_rows_never_hold_values(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *home = home_of(dir);
    char d[13];
    digest_of(home, "{\"password\":\"correct-horse-battery\"}", d);
    struct aud_call c = {.ts = 1,
                         .pid = 2,
                         .server = "s",
                         .tool = "login",
                         .args_digest = d,
                         .outcome = "ok",
                         .ms = 3};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(aud_call_append(home, &c, &err), 0);
    char *log = NULL;
    assert_true(asprintf(&log, "%s/audit/calls.jsonl", home) > 0);
    char *text = tu_read(log, NULL);
    assert_null(strstr(text, "correct-horse-battery"));
    assert_null(strstr(text, "password"));
    assert_non_null(strstr(text, d));
    free(text);
    free(log);
    /* a different machine key gives a different digest for the same value */
    char *dir2 = tu_tmpdir();
    char *home2 = home_of(dir2);
    char d2[13];
    digest_of(home2, "{\"password\":\"correct-horse-battery\"}", d2);
    assert_string_not_equal(d, d2);
    free(home2);
    tu_rmtree(dir2);
    free(home);
    tu_rmtree(dir);
}

static void test_unusable_key_gives_empty_digest(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *home = home_of(dir);
    char *key = NULL;
    assert_true(asprintf(&key, "%s/audit/key", home) > 0);
    mkdir(home, 0700);
    free(tu_write(home, "audit/key", "short")); /* 5 bytes: too short to be a key */
    char d[13] = "xxxxxxxxxxxx";
    digest_of(home, "{\"a\":1}", d);
    assert_string_equal(d, "");
    unsigned char k[64];
    size_t kl;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(aud_key_load(home, k, &kl, &err), -1);
    assert_non_null(strstr(err.msg, "bytes"));
    free(key);
    free(home);
    tu_rmtree(dir);

    dir = tu_tmpdir();
    home = home_of(dir);
    char *kd = NULL;
    assert_true(asprintf(&kd, "%s/audit/key", home) > 0);
    mkdir(home, 0700);
    free(tu_write(home, "audit/key/x", "")); /* the key path is a directory */
    digest_of(home, "{\"a\":1}", d);
    assert_string_equal(d, "");
    free(kd);
    free(home);
    tu_rmtree(dir);
}

static void test_racing_creators_agree(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *home = home_of(dir);
    int p[2];
    assert_int_equal(pipe(p), 0);
    enum { N = 8 };
    for (int i = 0; i < N; i++) {
        if (fork() == 0) {
            unsigned char k[64];
            size_t kl = 0;
            struct as_err err = AS_ERR_INIT;
            int r = aud_key_load(home, k, &kl, &err);
            char hex[129] = {0};
            if (r == 0 && kl == 32)
                hex_encode(k, 32, hex);
            if (write(p[1], hex, 64) != 64)
                _exit(1);
            _exit(0);
        }
    }
    close(p[1]);
    char first[65] = {0}, got[65] = {0};
    for (int i = 0; i < N; i++) {
        size_t have = 0;
        while (have < 64) {
            ssize_t k = read(p[0], got + have, 64 - have);
            assert_true(k > 0);
            have += (size_t)k;
        }
        assert_true(got[0] != '\0');
        if (i == 0)
            memcpy(first, got, 65);
        else
            assert_string_equal(first, got);
    }
    while (wait(NULL) > 0)
        ;
    close(p[0]);
    free(home);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_created_0600_on_first_use),
        cmocka_unit_test(test_digest_formula),
        cmocka_unit_test(test_rows_never_hold_values),
        cmocka_unit_test(test_unusable_key_gives_empty_digest),
        cmocka_unit_test(test_racing_creators_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
