/* Consent digest vectors (docs/formats.md): absent and empty differ; every byte counts. */
#include "testutil.h"

#include "bundle/consent.h"
#include "bundle/manifest.h"

static void test_vectors(void **state)
{
    (void)state;
    char d[CONSENT_DIGEST_LEN + 1];
    struct digest_blob m = {1, "version = 1\n", 12}, absent = {0, NULL, 0}, empty = {1, "", 0};
    consent_digest(&m, &absent, &absent, d);
    assert_string_equal(d, "sha256:a7c918d915c80fba994decacf21f774ff375f964e80123711c907b5600344"
                           "83f");
    consent_digest(&m, &absent, &empty, d);
    assert_string_equal(d, "sha256:af65eb2df0e8fa9a7320e76cf1cf6a57b05e3a6a21bd6d2e213157342b28c"
                           "f7f");
}

static void test_every_change_moves_it(void **state)
{
    (void)state;
    char base[CONSENT_DIGEST_LEN + 1], d[CONSENT_DIGEST_LEN + 1];
    struct digest_blob m = {1, "version = 1\n", 12}, absent = {0, NULL, 0}, empty = {1, "", 0};
    consent_digest(&m, &absent, &absent, base);
    /* A comment edit. */
    struct digest_blob m2 = {1, "version = 1\n#\n", 14};
    consent_digest(&m2, &absent, &absent, d);
    assert_string_not_equal(base, d);
    /* An empty overlay (absent != empty). */
    consent_digest(&m, &empty, &absent, d);
    assert_string_not_equal(base, d);
    /* The same bytes moved between files are a different surface. */
    struct digest_blob a = {1, "x", 1};
    char d1[CONSENT_DIGEST_LEN + 1], d2[CONSENT_DIGEST_LEN + 1];
    consent_digest(&m, &a, &empty, d1);
    consent_digest(&m, &empty, &a, d2);
    assert_string_not_equal(d1, d2);
    /* No manifest at all differs from an empty one. */
    consent_digest(&absent, &absent, &absent, d1);
    consent_digest(&empty, &absent, &absent, d2);
    assert_string_not_equal(d1, d2);
}

static void test_snapshot_form(void **state)
{
    (void)state;
    struct manifest_snapshot s;
    memset(&s, 0, sizeof s);
    s.has_manifest = true;
    s.manifest.buf = "version = 1\n";
    s.manifest.len = 12;
    s.overlay.buf = "";
    s.lock.buf = "";
    s.has_lock = true;
    char d[CONSENT_DIGEST_LEN + 1];
    consent_digest_snapshot(&s, d);
    assert_string_equal(d, "sha256:af65eb2df0e8fa9a7320e76cf1cf6a57b05e3a6a21bd6d2e213157342b28c"
                           "f7f");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_every_change_moves_it),
        cmocka_unit_test(test_snapshot_form),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
