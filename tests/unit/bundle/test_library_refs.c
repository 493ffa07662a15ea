/* Library names through the bundle's two hooks (docs/library.md): qualified
 * toolset references `<source>:<name>` / `lib:<source>/<name>` accepted by
 * manifest_validate only when the library callback resolves them, two
 * references a CLI would hold under one name refused, and scan_bundle_lib
 * scanning the library copies the caller's resolver finds (a linked source,
 * a library extension) — the bytes lock pins. */
#include "testutil.h"

#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "bundle/scan.h"

/* ---- manifest_validate ---------------------------------------------------- */

static bool fake_has(void *ctx, enum mf_item_kind kind, const char *name)
{
    (void)ctx;
    static const char *const skills[] = {"review", "b:review", "lib:b/review", NULL};
    static const char *const servers[] = {"kibana", "team:kibana", "lib:team/kibana", NULL};
    const char *const *set = kind == MF_ITEM_SKILL    ? skills
                             : kind == MF_ITEM_SERVER ? servers
                                                      : NULL;
    for (size_t i = 0; set && set[i]; i++)
        if (strcmp(set[i], name) == 0)
            return true;
    return false;
}

static size_t validate(const char *text, bool with_lib, mf_diags *d)
{
    struct as_err err = AS_ERR_INIT;
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = "/p/.agentstack/agentstack.toml",
                                  .data = text,
                                  .len = strlen(text)};
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    struct manifest_env env = {.library_has = with_lib ? fake_has : NULL};
    size_t n = manifest_validate(m, &env, d);
    for (size_t i = 0; i < d->n; i++)
        d->v[i].pos.file = NULL; /* points into the freed model */
    manifest_free(m);
    return n;
}

static const struct mf_diag *find(const mf_diags *d, const char *text)
{
    for (size_t i = 0; i < d->n; i++)
        if (strstr(d->v[i].msg, text))
            return &d->v[i];
    return NULL;
}

static size_t toolset(const char *servers, const char *skills, bool with_lib, mf_diags *d)
{
    char *text = xasprintf("version = 1\n[servers.\"a:b\"]\ntype = \"stdio\"\ncommand = \"x\"\n"
                           "[servers.b]\ntype = \"stdio\"\ncommand = \"y\"\n"
                           "[toolsets.t]\nservers = [%s]\nskills = [%s]\n",
                           servers, skills);
    size_t n = validate(text, with_lib, d);
    free(text);
    return n;
}

static void test_qualified_skill_refs(void **state)
{
    (void)state;
    mf_diags d = VEC_INIT;
    assert_int_equal(toolset("", "\"b:review\"", true, &d), 0);
    mf_diags_free(&d);
    assert_int_equal(toolset("", "\"lib:b/review\"", true, &d), 0);
    mf_diags_free(&d);

    /* the library does not resolve it: the source is named in the fix */
    assert_int_equal(toolset("", "\"c:review\"", true, &d), 1);
    const struct mf_diag *x = find(&d, "which the central library does not resolve");
    assert_non_null(x);
    assert_non_null(strstr(x->msg, "'c:review'"));
    assert_non_null(x->fix);
    assert_non_null(strstr(x->fix, "source 'c'"));
    mf_diags_free(&d);

    /* no library at all: nothing qualified resolves */
    assert_int_equal(toolset("", "\"b:review\"", false, &d), 1);
    mf_diags_free(&d);

    /* the name part is still a skill name */
    assert_int_equal(toolset("", "\"b:Bad\"", true, &d), 1);
    assert_non_null(find(&d, "skill names must match"));
    mf_diags_free(&d);

    /* not qualified (the source part is no library name): the name rule */
    assert_int_equal(toolset("", "\"B:review\"", true, &d), 1);
    assert_non_null(find(&d, "refusing to materialize skill 'B:review'"));
    mf_diags_free(&d);
}

static void test_same_cli_name(void **state)
{
    (void)state;
    mf_diags d = VEC_INIT;
    assert_int_equal(toolset("", "\"review\", \"b:review\"", true, &d), 1);
    const struct mf_diag *x = find(&d, "names skill 'review' twice");
    assert_non_null(x);
    assert_non_null(strstr(x->msg, "'review' and 'b:review'"));
    mf_diags_free(&d);

    assert_int_equal(toolset("\"kibana\", \"lib:team/kibana\"", "", true, &d), 1);
    assert_non_null(find(&d, "names server 'kibana' twice"));
    mf_diags_free(&d);

    /* the same reference twice is one server, not a clash */
    assert_int_equal(toolset("\"team:kibana\", \"team:kibana\"", "", true, &d), 0);
    mf_diags_free(&d);

    /* a declared server whose name holds ':' keeps that name: no clash with "b" */
    assert_int_equal(toolset("\"a:b\", \"b\"", "", true, &d), 0);
    mf_diags_free(&d);

    /* qualified servers resolve through the library; an unknown source is named */
    assert_int_equal(toolset("\"team:kibana\"", "", true, &d), 0);
    mf_diags_free(&d);
    assert_int_equal(toolset("\"ghost:kibana\"", "", true, &d), 1);
    x = find(&d, "references server 'ghost:kibana'");
    assert_non_null(x);
    assert_non_null(strstr(x->fix, "source 'ghost'"));
    mf_diags_free(&d);
}

/* ---- scan_bundle_lib ------------------------------------------------------ */

struct fake_lib {
    char *skill_dir; /* what "team:rev" resolves to */
};

static int fake_lookup(void *ctx, enum pin_kind kind, const char *name, strbuf *path,
                       struct as_err *err)
{
    (void)err;
    struct fake_lib *l = ctx;
    if (kind == PIN_SKILL && (strcmp(name, "team:rev") == 0 || strcmp(name, "rev") == 0)) {
        sb_reset(path);
        sb_adds(path, l->skill_dir);
        return 1;
    }
    return 0;
}

static void test_scan_linked_source(void **state)
{
    (void)state;
    char *d = tu_tmpdir();
    free(tu_write(d, "proj/.agentstack/agentstack.toml",
                  "version = 1\n[toolsets.t]\nskills = [\"team:rev\"]\n"
                  "[extensions.fmt]\ntarget = \"pi\"\n"));
    /* a linked source outside $AGENTSTACK_HOME, a zero-width space inside */
    free(tu_write(d, "team/skills/rev/SKILL.md",
                  "---\ndescription: r\n---\nreview\xe2\x80\x8b carefully\n"));
    /* a library extension in the implicit local source, a bidi override */
    free(tu_write(d, "home/lib/extensions/fmt/index.js", "let a = 1; // \xe2\x80\xae\n"));
    char *proj = xasprintf("%s/proj", d), *home = xasprintf("%s/home", d);
    struct fake_lib lib = {xasprintf("%s/team/skills/rev", d)};
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_at(proj, &p, &err), 0);
    struct manifest *m = manifest_load(&p, &err);
    if (!m)
        fail_msg("%s", err.msg);

    struct scan_report r;
    scan_report_init(&r);
    assert_int_equal(scan_bundle_lib(m, home, fake_lookup, &lib, &r, &err), 0);
    assert_int_equal(r.high, 2);
    bool saw_skill = false, saw_ext = false;
    for (size_t i = 0; i < r.v.n; i++) {
        const struct scan_finding *f = &r.v.v[i];
        if (f->cp == 0x200B) {
            saw_skill = true;
            assert_non_null(strstr(f->file, "team/skills/rev/SKILL.md"));
            assert_int_equal(f->line, 4);
            assert_int_equal(f->col, 7);
        }
        if (f->cp == 0x202E) {
            saw_ext = true;
            assert_string_equal(f->item, "extension 'fmt'");
            assert_non_null(strstr(f->file, "home/lib/extensions/fmt/index.js"));
        }
    }
    assert_true(saw_skill);
    assert_true(saw_ext);
    scan_report_free(&r);

    /* Without the resolver the linked source is unknown: noted, never
     * silently passed as clean. */
    scan_report_init(&r);
    assert_int_equal(scan_bundle(m, home, &r, &err), 0);
    assert_int_equal(r.high, 1); /* the extension only */
    bool noted = false;
    for (size_t i = 0; i < r.notes.n; i++)
        noted |= strstr(r.notes.v[i], "not scanned") != NULL;
    assert_true(noted);
    scan_report_free(&r);

    manifest_free(m);
    bundle_paths_free(&p);
    free(lib.skill_dir);
    free(proj);
    free(home);
    tu_rmtree(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qualified_skill_refs),
        cmocka_unit_test(test_same_cli_name),
        cmocka_unit_test(test_scan_linked_source),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
