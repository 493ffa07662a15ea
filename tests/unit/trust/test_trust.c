/* Trust store, hash-chained trust.jsonl and the state check. */
#include "testutil.h"

#include "base/sha256.h"
#include "bundle/discover.h"
#include "trust/trust.h"

static char *project(const char *t, const char *manifest)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/proj", t) > 0);
    mkdir(p, 0755);
    free(tu_write(p, ".agentstack/agentstack.toml", manifest));
    return p;
}

static void status_of(const char *dir, struct trust_status *st)
{
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_at(dir, &p, &err), 0);
    if (trust_check(&p, st, &err) != 0)
        fail_msg("trust_check: %s", err.msg);
    bundle_paths_free(&p);
}

static void test_states(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    char *p = project(t, "version = 1\n");
    struct trust_status st;
    status_of(p, &st);
    assert_int_equal(st.state, TRUST_UNTRUSTED);
    assert_string_equal(st.digest, "sha256:a7c918d915c80fba994decacf21f774ff375f964e80123711c907b"
                                   "560034483f");
    /* Grant it. */
    struct trust_store s;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(trust_store_load(&s, &err), 0);
    assert_false(s.corrupt);
    json_t *e = json_object();
    json_object_set_new(e, "digest", json_string(st.digest));
    json_object_set_new(json_object_get(s.root, "trusted"), st.key.buf, e);
    assert_int_equal(trust_store_save(&s, &err), 0);
    trust_store_free(&s);
    trust_status_release(&st);
    status_of(p, &st);
    assert_int_equal(st.state, TRUST_TRUSTED);
    trust_status_release(&st);
    /* An empty overlay changes it; deleting it restores. */
    char *ov = tu_write(p, ".agentstack/agentstack.local.toml", "");
    status_of(p, &st);
    assert_int_equal(st.state, TRUST_CHANGED);
    assert_string_equal(trust_state_name(st.state), "drifted");
    trust_status_release(&st);
    unlink(ov);
    free(ov);
    status_of(p, &st);
    assert_int_equal(st.state, TRUST_TRUSTED);
    trust_status_release(&st);
    /* A corrupt store reads as empty. */
    char *tj = NULL;
    assert_true(asprintf(&tj, "%s/home/.agentstack/trust.json", t) > 0);
    FILE *f = fopen(tj, "w");
    fputs("{\"trusted\": [", f);
    fclose(f);
    assert_int_equal(trust_store_load(&s, &err), 0);
    assert_true(s.corrupt);
    trust_store_free(&s);
    status_of(p, &st);
    assert_int_equal(st.state, TRUST_UNTRUSTED);
    trust_status_release(&st);
    free(tj);
    free(p);
    tu_rmtree(t);
}

static void test_log_chain(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(trust_log("grant", "/p", "sha256:00", &err), 0);
    assert_int_equal(trust_log("revoke", "/p\"q", "sha256:11", &err), 0);
    char *path = NULL;
    assert_true(asprintf(&path, "%s/home/.agentstack/audit/trust.jsonl", t) > 0);
    char *text = tu_read(path, NULL);
    assert_non_null(text);
    char *nl = strchr(text, '\n');
    assert_non_null(nl);
    char first_hash[65];
    sha256_hex(text, (size_t)(nl - text), first_hash);
    assert_non_null(strstr(text, "\"prev\":\"0000000000000000000000000000000000000000000000000"
                                 "000000000000000\"}\n"));
    char want[100];
    snprintf(want, sizeof want, "\"prev\":\"%s\"}\n", first_hash);
    assert_non_null(strstr(nl + 1, want));
    assert_non_null(strstr(nl + 1, "\"project\":\"/p\\\"q\""));
    assert_non_null(strstr(text, "{\"ts\":"));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    free(text);
    free(path);
    tu_rmtree(t);
}

static void test_repin(void **state)
{
    (void)state;
    char *t = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    /* Never creates an entry. */
    assert_int_equal(trust_repin("/p", "sha256:a", "sha256:b", false, &err), 0);
    struct trust_store s;
    assert_int_equal(trust_store_load(&s, &err), 0);
    json_t *e = json_object();
    json_object_set_new(e, "digest", json_string("sha256:a"));
    json_object_set_new(json_object_get(s.root, "trusted"), "/p", e);
    assert_int_equal(trust_store_save(&s, &err), 0);
    trust_store_free(&s);
    /* Only from the expected digest. */
    assert_int_equal(trust_repin("/p", "sha256:x", "sha256:b", false, &err), 0);
    assert_int_equal(trust_repin("/p", "sha256:a", "sha256:b", false, &err), 1);
    assert_int_equal(trust_store_load(&s, &err), 0);
    assert_string_equal(trust_store_digest(&s, "/p"), "sha256:b");
    trust_store_free(&s);
    char *path = NULL;
    assert_true(asprintf(&path, "%s/home/.agentstack/audit/trust.jsonl", t) > 0);
    char *text = tu_read(path, NULL);
    assert_non_null(strstr(text, "\"action\":\"repin\""));
    free(text);
    free(path);
    tu_rmtree(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_states),
        cmocka_unit_test(test_log_chain),
        cmocka_unit_test(test_repin),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
