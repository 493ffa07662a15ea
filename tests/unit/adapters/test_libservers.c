/* Library servers for apply (docs/library.md): a definition is found through the
 * caller's pin_library_fn, read once, rendered only from bytes that hash to
 * its agentstack.lock row (a delivering run), and decoded with the
 * manifest's own checks; a bad definition, a symlink or a missing item is a
 * clear error. The bare name of a qualified reference is the CLI's name. */
#include "testutil.h"

#include <unistd.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "base/sha256.h"
#include "bundle/lockfile.h"

static const char *DEF = "type = \"http\"\nurl = \"https://kibana.example/mcp\"\n"
                         "[headers]\nAuthorization = \"Bearer ${KIBANA_TOKEN}\"\n";

struct fake_lib {
    char *dir; /* servers/<name>.toml live here */
    int calls;
};

/* A linked source that resolves "team:<n>" and "<n>" to <dir>/<n>.toml. */
static int lookup(void *ctx, enum pin_kind kind, const char *name, strbuf *path, struct as_err *err)
{
    struct fake_lib *l = ctx;
    l->calls++;
    if (kind != PIN_SERVER)
        return 0;
    if (strcmp(name, "ghost:x") == 0)
        return as_err_set(err, "no linked library named 'ghost'");
    const char *bare = pin_ref_name(name, NULL);
    sb_reset(path);
    sb_addf(path, "%s/%s.toml", l->dir, bare);
    return access(path->buf, F_OK) == 0 || strcmp(bare, "link") == 0 ? 1 : 0;
}

static struct manifest *project(void)
{
    const char *text = "version = 1\n[toolsets.t]\nservers = [\"team:kibana\"]\n";
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = "/p/.agentstack/agentstack.toml",
                                  .data = text,
                                  .len = strlen(text)};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    return m;
}

static struct lockfile *lock_with(const char *name, const char *source, const char *hex)
{
    char *text = xasprintf("version = 2\n\n[[server]]\nname = \"%s\"\nsource = \"%s\"\n"
                           "checksum = \"%s\"\n",
                           name, source, hex);
    struct as_err err = AS_ERR_INIT;
    struct lockfile *l = lockfile_parse("agentstack.lock", text, strlen(text), &err);
    if (!l)
        fail_msg("%s", err.msg);
    free(text);
    return l;
}

static void test_bare_names(void **state)
{
    (void)state;
    assert_string_equal(pin_ref_name("team:kibana", NULL), "kibana");
    assert_string_equal(pin_ref_name("lib:team/upstash/context7", NULL), "upstash/context7");
    assert_string_equal(pin_ref_name("kibana", NULL), "kibana");
    assert_string_equal(pin_ref_name("Team:kibana", NULL), "Team:kibana"); /* no source name */
    assert_string_equal(pin_ref_name(":x", NULL), ":x");
    assert_string_equal(pin_ref_name("team:", NULL), "team:");
}

static void test_pinned_bytes_only(void **state)
{
    (void)state;
    char *d = tu_tmpdir();
    free(tu_write(d, "servers/kibana.toml", DEF));
    struct fake_lib fl = {xasprintf("%s/servers", d), 0};
    struct manifest *m = project();
    struct adp_apply_opts o = {.m = m, .library = lookup, .library_ctx = &fl, .write = true};
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(DEF, strlen(DEF), hex);
    struct as_err err = AS_ERR_INIT;
    struct manifest *lm = NULL;

    /* the row is keyed by the bare name (or the ref): both accepted */
    struct lockfile *l = lock_with("kibana", "library", hex);
    o.lock = l;
    assert_int_equal(adp_i_library_server(&o, "team:kibana", true, &lm, &err), 0);
    assert_non_null(lm);
    assert_int_equal(lm->servers.n, 1);
    const struct mf_server *s = &lm->servers.v[0];
    assert_string_equal(s->name, "kibana");
    assert_int_equal(s->type, MF_SERVER_HTTP);
    assert_string_equal(s->url, "https://kibana.example/mcp");
    assert_int_equal(s->headers.n, 1);
    assert_string_equal(s->headers.v[0].value, "Bearer ${KIBANA_TOKEN}");
    manifest_free(lm);
    lockfile_free(l);

    l = lock_with("team:kibana", "library", hex);
    o.lock = l;
    assert_int_equal(adp_i_library_server(&o, "team:kibana", true, &lm, &err), 0);
    manifest_free(lm);
    lockfile_free(l);

    /* other bytes than the pin: refused, whatever the gate said before */
    char other[SHA256_HEX_LEN + 1];
    sha256_hex("x", 1, other);
    l = lock_with("kibana", "library", other);
    o.lock = l;
    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "team:kibana", true, &lm, &err), -1);
    assert_null(lm);
    assert_non_null(strstr(err.msg, "no longer matches agentstack.lock"));
    assert_non_null(strstr(err.msg, "not rendered"));
    assert_non_null(strstr(err.hint, "agentstack lock --write"));
    lockfile_free(l);

    /* an inline row of that name is not the library's pin */
    l = lock_with("kibana", "inline", hex);
    o.lock = l;
    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "team:kibana", true, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "is not pinned in agentstack.lock"));
    lockfile_free(l);

    /* no lock at all on a delivering run: refused */
    o.lock = NULL;
    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "team:kibana", true, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "is not pinned"));

    /* a preview of an untrusted project shows it without a pin */
    assert_int_equal(adp_i_library_server(&o, "team:kibana", false, &lm, &err), 0);
    manifest_free(lm);

    /* when the pin check runs */
    o.trust_refusal = NULL;
    assert_true(adp_i_check_library_pins(&o)); /* project, delivering */
    o.trust_refusal = "not trusted";
    assert_false(adp_i_check_library_pins(&o));
    o.trust_refusal = NULL;
    o.write = false;
    assert_false(adp_i_check_library_pins(&o)); /* preview, no lock */

    manifest_free(m);
    free(fl.dir);
    tu_rmtree(d);
}

static void test_bad_definitions(void **state)
{
    (void)state;
    char *d = tu_tmpdir();
    free(tu_write(d, "servers/typo.toml", "type = \"stdio\"\ncomand = \"x\"\n"));
    free(tu_write(d, "servers/nourl.toml", "type = \"http\"\n"));
    free(tu_write(d, "servers/broken.toml", "type = \"stdio\n"));
    free(tu_write(d, "servers/wrapped.toml",
                  "[servers.wrapped]\ntype = \"stdio\"\n"
                  "command = \"x\"\n"));
    free(tu_write(d, "real.toml", DEF));
    char *link = xasprintf("%s/servers/link.toml", d), *real = xasprintf("%s/real.toml", d);
    assert_int_equal(symlink(real, link), 0);
    struct fake_lib fl = {xasprintf("%s/servers", d), 0};
    struct manifest *m = project();
    struct adp_apply_opts o = {.m = m, .library = lookup, .library_ctx = &fl};
    struct manifest *lm = NULL;
    struct as_err err = AS_ERR_INIT;

    assert_int_equal(adp_i_library_server(&o, "typo", false, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "library server 'typo'"));
    assert_non_null(strstr(err.msg, "typo.toml"));
    assert_non_null(strstr(err.msg, "comand"));

    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "nourl", false, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "has no `url`"));

    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "broken", false, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "library server 'broken'"));
    assert_true(err.line > 0); /* a syntax error keeps the file's own position */

    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "wrapped", false, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "servers"));

    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "link", false, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "library server 'link'"));

    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "missing", false, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "neither in [servers]"));
    assert_non_null(strstr(err.hint, "agentstack lib add-server missing"));

    as_err_clear(&err);
    assert_int_equal(adp_i_library_server(&o, "ghost:x", false, &lm, &err), -1);
    assert_non_null(strstr(err.msg, "no linked library named 'ghost'"));
    assert_null(lm);

    /* one load per reference, however many toolsets name it */
    struct adp_i_libset set = {0};
    free(tu_write(d, "servers/kibana.toml", DEF));
    fl.calls = 0;
    const struct mf_server *a = adp_i_libset_get(&set, &o, "team:kibana", false, &err);
    const struct mf_server *b = adp_i_libset_get(&set, &o, "team:kibana", false, &err);
    assert_non_null(a);
    assert_ptr_equal(a, b);
    assert_int_equal(fl.calls, 1);
    assert_string_equal(adp_i_libset_ref(&set, a), "team:kibana");
    assert_null(adp_i_libset_ref(&set, NULL));
    adp_i_libset_free(&set);

    manifest_free(m);
    free(fl.dir);
    free(link);
    free(real);
    tu_rmtree(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bare_names),
        cmocka_unit_test(test_pinned_bytes_only),
        cmocka_unit_test(test_bad_definitions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
