/* Standing decisions (docs/trust.md) as pin_collect applies them: a kept item keeps
 * its approved pin and resolves to the approved copy in the content store
 * (nothing when the copy is missing), a blocked item keeps its pin and
 * resolves to nothing, a decision without a well-formed pin is ignored, and
 * no_decisions gives the raw live pins. */
#include "testutil.h"

#include "base/strbuf.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"
#include "bundle/store.h"

struct fx {
    char *dir, *home, *proj;
    char p1[SHA256_HEX_LEN + 1], p2[SHA256_HEX_LEN + 1];
    struct manifest *m;
};

static const char MF[] = "version = 1\n[skills.notes]\npath = \"skills/notes\"\n";

static void setup_fx(struct fx *f)
{
    f->dir = tu_tmpdir();
    f->home = xasprintf("%s/home/.agentstack", f->dir);
    f->proj = xasprintf("%s/proj", f->dir);
    free(tu_write(f->dir, "proj/skills/notes/SKILL.md", "v1\n"));
    char *skill = xasprintf("%s/skills/notes", f->proj);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_skill_tree(skill, f->p1, &err), 0);
    assert_int_equal(store_deposit_tree(f->home, skill, STORE_SKILL_TREE, f->p1, NULL, &err), 0);
    free(tu_write(f->dir, "proj/skills/notes/SKILL.md", "v2\n"));
    assert_int_equal(digest_skill_tree(skill, f->p2, &err), 0);
    free(skill);
    char *path = xasprintf("%s/agentstack.toml", f->proj);
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = path,
                                  .data = MF,
                                  .len = sizeof MF - 1,
                                  .manifest_dir = f->proj,
                                  .project_root = f->proj};
    f->m = manifest_load_bytes(&src, &err);
    assert_non_null(f->m);
    free(path);
}

static void write_decision(struct fx *f, const char *answer, const char *pin)
{
    char *real = realpath(f->proj, NULL);
    strbuf j = SB_INIT;
    sb_addf(&j,
            "{\"trusted\": {\"%s\": {\"digest\": \"sha256:00\", \"decisions\": [{\"kind\": "
            "\"skill\", \"name\": \"notes\", \"answer\": {\"answer\": \"%s\"",
            real, answer);
    if (pin)
        sb_addf(&j, ", \"pin\": \"%s\"", pin);
    sb_adds(&j, "}}]}}}");
    free(tu_write(f->dir, "home/.agentstack/trust.json", j.buf));
    sb_release(&j);
    free(real);
}

static const struct pin_item *collect(struct fx *f, pin_items *items, bool raw)
{
    struct pin_opts o = {.home = f->home, .no_decisions = raw};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(pin_collect(f->m, &o, items, &err), 0);
    assert_int_equal(items->n, 1);
    return &items->v[0];
}

static void teardown_fx(struct fx *f)
{
    manifest_free(f->m);
    tu_rmtree(f->dir);
    free(f->home);
    free(f->proj);
}

static void test_keep(void **state)
{
    (void)state;
    struct fx f;
    setup_fx(&f);
    write_decision(&f, "keep-pinned", f.p1);
    pin_items items = VEC_INIT;
    const struct pin_item *it = collect(&f, &items, false);
    assert_int_equal(it->decision, PIN_DECISION_KEEP);
    assert_int_equal(it->state, PIN_OK);
    assert_string_equal(it->checksum, f.p1);
    assert_string_equal(it->live_checksum, f.p2);
    assert_false(it->omitted);
    char *want = xasprintf("%s/store/content/%s", f.home, f.p1);
    assert_non_null(it->fs_path);
    assert_string_equal(it->fs_path, want);
    free(want);
    pin_items_free(&items);
    /* The review asks for the raw live pin. */
    it = collect(&f, &items, true);
    assert_int_equal(it->decision, PIN_DECISION_NONE);
    assert_string_equal(it->checksum, f.p2);
    pin_items_free(&items);
    /* A wrong deposit is never served: the kept item is omitted. */
    char *rel = xasprintf("home/.agentstack/store/content/%s/SKILL.md", f.p1);
    free(tu_write(f.dir, rel, "tampered\n"));
    free(rel);
    it = collect(&f, &items, false);
    assert_true(it->omitted);
    assert_null(it->fs_path);
    assert_string_equal(it->checksum, f.p1);
    pin_items_free(&items);
    teardown_fx(&f);
}

static void test_block(void **state)
{
    (void)state;
    struct fx f;
    setup_fx(&f);
    write_decision(&f, "blocked", f.p1);
    pin_items items = VEC_INIT;
    const struct pin_item *it = collect(&f, &items, false);
    assert_int_equal(it->decision, PIN_DECISION_BLOCK);
    assert_true(it->omitted);
    assert_null(it->fs_path);
    assert_string_equal(it->checksum, f.p1);
    pin_items_free(&items);
    teardown_fx(&f);
}

static void test_ignored(void **state)
{
    (void)state;
    struct fx f;
    setup_fx(&f);
    const char *bad[][2] = {{"keep-pinned", NULL}, {"keep-pinned", "xyz"}, {"maybe", NULL}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        write_decision(&f, bad[i][0], bad[i][1]);
        pin_items items = VEC_INIT;
        const struct pin_item *it = collect(&f, &items, false);
        assert_int_equal(it->decision, PIN_DECISION_NONE);
        assert_string_equal(it->checksum, f.p2);
        assert_false(it->omitted);
        pin_items_free(&items);
    }
    /* A corrupt trust.json means no decisions. */
    free(tu_write(f.dir, "home/.agentstack/trust.json", "{not json"));
    pin_items items = VEC_INIT;
    assert_int_equal(collect(&f, &items, false)->decision, PIN_DECISION_NONE);
    pin_items_free(&items);
    teardown_fx(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keep),
        cmocka_unit_test(test_block),
        cmocka_unit_test(test_ignored),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
