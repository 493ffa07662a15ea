/* Unit tests: library sources (PATH semantics), indexes, resolution, trash. */
#include "../testutil.h"

#include "base/fs.h"
#include "library/library.h"

static char *home_of(const char *root)
{
    char *h = NULL;
    assert_true(asprintf(&h, "%s/home/.agentstack", root) > 0);
    mkdir(h, 0700);
    return h;
}

static void skill(const char *dir, const char *rel, const char *desc)
{
    mkdir(dir, 0755);
    char *p = NULL;
    assert_true(asprintf(&p, "%s/SKILL.md", rel) > 0);
    char *text = NULL;
    assert_true(asprintf(&text, "---\ndescription: %s\n---\nbody\n", desc) > 0);
    free(tu_write(dir, p, text));
    free(text);
    free(p);
}

static void test_implicit_local_and_layout(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    char *home = home_of(root);
    skill(home, "lib/skills/review", "Review code");
    free(tu_write(home, "lib/servers/kibana.toml", "type = \"http\"\nurl = \"https://k\"\n"));
    free(tu_write(home, "lib/servers/upstash%2Fcontext7.toml",
                  "type = \"stdio\"\n"
                  "command = \"npx\"\n"));
    free(tu_write(home, "lib/skills/BadName/SKILL.md", "x"));
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(home, &err);
    assert_non_null(lib);
    assert_int_equal(lib->sources.n, 1);
    assert_true(lib->sources.v[0].implicit);
    assert_false(lib->materialized);
    assert_string_equal(lib->sources.v[0].name, "local");
    const struct lib_item *it = NULL;
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "review", &it, &err), 1);
    assert_int_equal(lib_resolve(lib, LIB_SERVER, "kibana", &it, &err), 1);
    assert_int_equal(lib_resolve(lib, LIB_SERVER, "upstash/context7", &it, &err), 1);
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "BadName", &it, &err), 0);
    assert_true(lib_manifest_has(lib, MF_ITEM_SKILL, "review"));
    assert_false(lib_manifest_has(lib, MF_ITEM_SKILL, "nope"));
    strbuf p = SB_INIT;
    assert_int_equal(lib_pin_lookup(lib, PIN_SKILL, "review", &p, &err), 1);
    assert_non_null(strstr(p.buf, "/lib/skills/review"));
    assert_int_equal(lib_pin_lookup(lib, PIN_SERVER, "kibana", &p, &err), 1);
    assert_int_equal(lib_pin_lookup(lib, PIN_SERVER, "ghost", &p, &err), 0);
    sb_release(&p);
    lib_free(lib);
    free(home);
    tu_rmtree(root);
}

static void test_stems(void **state)
{
    (void)state;
    strbuf s = SB_INIT;
    lib_server_stem("upstash/context7", &s);
    assert_string_equal(s.buf, "upstash%2Fcontext7");
    char *back = lib_server_unstem(s.buf);
    assert_string_equal(back, "upstash/context7");
    free(back);
    sb_reset(&s);
    lib_server_stem("..", &s);
    assert_string_equal(s.buf, "%2E%2E");
    sb_reset(&s);
    lib_server_stem("plain-name_1", &s);
    assert_string_equal(s.buf, "plain-name_1");
    sb_release(&s);
    assert_null(lib_server_unstem("a%2"));
    assert_null(lib_server_unstem("a%00"));
    assert_null(lib_server_unstem("%61")); /* 'a' needs no encoding: not canonical */
    assert_true(lib_name_valid("sql-review"));
    assert_false(lib_name_valid("SQL"));
    assert_false(lib_name_valid("../x"));
    assert_false(lib_name_valid(""));
}

/* Two sources holding the same name: first wins, qualified pins, collisions shown. */
static void test_path_semantics(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    char *home = home_of(root);
    char *a = NULL, *b = NULL;
    assert_true(asprintf(&a, "%s/a", root) > 0);
    assert_true(asprintf(&b, "%s/b", root) > 0);
    skill(a, "skills/review", "A's review");
    skill(b, "skills/review", "B's review");
    skill(b, "skills/only-b", "B only");
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(home, &err);
    assert_non_null(lib);
    assert_int_equal(lib_link(lib, a, NULL, false, NULL, &err), 0);
    assert_int_equal(lib_link(lib, b, NULL, false, "team", &err), 0);
    assert_int_equal(lib->sources.n, 3); /* local materialized first */
    assert_string_equal(lib->sources.v[0].name, "local");
    /* duplicate folder and duplicate name are refused */
    assert_int_equal(lib_link(lib, a, "other", false, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "is already linked as 'a'"));
    as_err_clear(&err);
    assert_int_equal(lib_link(lib, root, "a", false, NULL, &err), -1);
    as_err_clear(&err);
    assert_int_equal(lib_sources_save(lib, &err), 0);
    lib_free(lib);

    lib = lib_open(home, &err);
    assert_non_null(lib);
    assert_true(lib->materialized);
    assert_int_equal(lib->sources.n, 3);
    const struct lib_item *it = NULL;
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "review", &it, &err), 1);
    assert_string_equal(lib->sources.v[it->source].name, "a");
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "b:review", &it, &err), 1);
    assert_string_equal(lib->sources.v[it->source].name, "b");
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "lib:b/review", &it, &err), 1);
    assert_string_equal(lib->sources.v[it->source].name, "b");
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "a:only-b", &it, &err), 0);
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "ghost:review", &it, &err), -1);
    assert_non_null(strstr(err.msg, "no linked library named 'ghost'"));
    assert_non_null(strstr(err.msg, "not linked"));
    as_err_clear(&err);
    assert_true(lib_manifest_has(lib, MF_ITEM_SKILL, "b:review"));
    assert_false(lib_manifest_has(lib, MF_ITEM_SKILL, "ghost:review"));

    lib_collisions c = VEC_INIT;
    lib_find_collisions(lib, &c);
    assert_int_equal(c.n, 1);
    strbuf line = SB_INIT;
    lib_collision_format(lib, &c.v[0], &line);
    assert_string_equal(line.buf, "review skill  a used · b shadowed ↳ b:review");
    sb_release(&line);
    lib_collisions_free(&c);

    /* reorder: b first now wins the bare name; every name exactly once */
    const char *order[] = {"b", "a", "local"};
    assert_int_equal(lib_reorder(lib, order, 3, &err), 0);
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "review", &it, &err), 1);
    assert_string_equal(lib->sources.v[it->source].name, "b");
    const char *bad[] = {"b", "b", "local"};
    assert_int_equal(lib_reorder(lib, bad, 3, &err), -1);
    as_err_clear(&err);
    /* unlink all but one; the last is refused */
    assert_int_equal(lib_unlink(lib, "b", &err), 0);
    assert_int_equal(lib_unlink(lib, "a", &err), 0);
    assert_int_equal(lib_unlink(lib, "local", &err), -1);
    assert_non_null(strstr(err.msg, "last library source"));
    lib_free(lib);
    free(a);
    free(b);
    free(home);
    tu_rmtree(root);
}

static void test_index_rules(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    char *home = home_of(root);
    skill(home, "lib/skills/review", "R");
    /* two rows of one name: the source is skipped, the warning names file and name */
    free(tu_write(home, "lib/library.toml",
                  "version = 1\n[[skill]]\nname = \"review\"\n[[skill]]\nname = \"review\"\n"));
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(home, &err);
    assert_non_null(lib);
    assert_int_equal(lib->warnings.n, 1);
    assert_non_null(strstr(lib->warnings.v[0], "library.toml"));
    assert_non_null(strstr(lib->warnings.v[0], "two [[skill]] rows named 'review'"));
    const struct lib_item *it = NULL;
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "review", &it, &err), 0);
    lib_free(lib);

    free(tu_write(home, "lib/library.toml", "version = 2\n"));
    lib = lib_open(home, &err);
    assert_non_null(strstr(lib->warnings.v[0], "upgrade agentstack"));
    lib_free(lib);

    free(tu_write(home, "lib/library.toml",
                  "version = 1\n[[skill]]\nname = \"review\"\n"
                  "colour = \"blue\"\n"));
    lib = lib_open(home, &err);
    assert_non_null(strstr(lib->warnings.v[0], "unknown key 'colour'"));
    lib_free(lib);

    /* a row path may not leave the source */
    free(tu_write(home, "lib/library.toml",
                  "version = 1\n[[skill]]\nname = \"review\"\n"
                  "path = \"../../etc\"\n"));
    lib = lib_open(home, &err);
    assert_int_equal(lib->warnings.n, 1);
    assert_non_null(strstr(lib->warnings.v[0], "traversal"));
    lib_free(lib);

    /* the index is authoritative: an unindexed folder does not resolve */
    free(tu_write(home, "lib/library.toml", "version = 1\n"));
    lib = lib_open(home, &err);
    assert_int_equal(lib->warnings.n, 0);
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "review", &it, &err), 0);
    lib_free(lib);

    /* a broken sources.toml is an error with file:line */
    free(tu_write(home, "sources.toml", "version = 1\n[[source]]\nname = \"x\"\n"));
    lib = lib_open(home, &err);
    assert_null(lib);
    assert_non_null(strstr(err.path, "sources.toml"));
    free(home);
    tu_rmtree(root);
}

static void test_index_save_and_trash(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    char *home = home_of(root);
    skill(home, "lib/skills/review", "R");
    skill(home, "lib/skills/pdf", "P");
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(home, &err);
    struct lib_source *s = lib_first(lib);
    assert_false(s->indexed);
    assert_int_equal(lib_index_save(lib, s, &err), 0);
    lib_free(lib);
    char *idx = NULL;
    assert_true(asprintf(&idx, "%s/lib/library.toml", home) > 0);
    size_t n = 0;
    char *text = tu_read(idx, &n);
    assert_non_null(strstr(text, "version = 1"));
    assert_non_null(strstr(text, "[[skill]]\nname = \"pdf\""));
    assert_true(strstr(text, "name = \"pdf\"") < strstr(text, "name = \"review\""));
    assert_non_null(strstr(text, "checksum = "));
    free(text);

    lib = lib_open(home, &err);
    char *id = NULL;
    assert_int_equal(lib_trash_item(lib, LIB_SKILL, "pdf", &id, &err), 0);
    assert_non_null(strstr(id, "skill-pdf-"));
    const struct lib_item *it = NULL;
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "pdf", &it, &err), 0);
    lib_free(lib);
    char *body = NULL;
    assert_true(asprintf(&body, "%s/lib/skills/pdf", home) > 0);
    assert_false(fs_exists(body));
    text = tu_read(idx, &n);
    assert_null(strstr(text, "\"pdf\""));
    free(text);

    lib = lib_open(home, &err);
    lib_trash_entries t = VEC_INIT;
    lib_trash_list(lib, &t);
    assert_int_equal(t.n, 1);
    assert_string_equal(t.v[0].name, "pdf");
    lib_trash_entries_free(&t);
    assert_int_equal(lib_trash_restore(lib, id, false, &err), 0);
    assert_int_equal(lib_resolve(lib, LIB_SKILL, "pdf", &it, &err), 1);
    assert_true(fs_exists(body));
    lib_trash_list(lib, &t);
    assert_int_equal(t.n, 0);
    lib_trash_entries_free(&t);
    free(id);

    /* trash again, retake the name, restore needs --replace */
    assert_int_equal(lib_trash_item(lib, LIB_SKILL, "pdf", &id, &err), 0);
    lib_free(lib);
    skill(home, "lib/skills/pdf", "new");
    lib = lib_open(home, &err);
    lib_source_put(lib_first(lib), 0, LIB_SKILL, "pdf", NULL);
    assert_int_equal(lib_index_save(lib, lib_first(lib), &err), 0);
    assert_int_equal(lib_trash_restore(lib, id, false, &err), -1);
    assert_non_null(strstr(err.hint, "--replace"));
    as_err_clear(&err);
    assert_int_equal(lib_trash_restore(lib, id, true, &err), 0);
    size_t purged = 0;
    assert_int_equal(lib_trash_empty(lib, NULL, &purged, &err), 0);
    assert_int_equal(purged, 1); /* the replaced one */
    lib_free(lib);
    free(id);
    free(body);
    free(idx);
    free(home);
    tu_rmtree(root);
}

static void test_copy_tree_refuses_symlinks(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    char *src = NULL, *dst = NULL, *link = NULL;
    assert_true(asprintf(&src, "%s/src", root) > 0);
    assert_true(asprintf(&dst, "%s/dst/skill", root) > 0);
    skill(root, "src", "x");
    free(tu_write(src, "scripts/run.sh", "echo hi\n"));
    free(tu_write(src, ".git/config", "[core]\n"));
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_copy_tree(src, dst, &err), 0);
    char *copied = NULL;
    assert_true(asprintf(&copied, "%s/scripts/run.sh", dst) > 0);
    assert_true(fs_exists(copied));
    free(copied);
    assert_true(asprintf(&copied, "%s/.git", dst) > 0);
    assert_false(fs_exists(copied)); /* .git is never copied */
    free(copied);
    /* an existing destination is refused */
    assert_int_equal(lib_copy_tree(src, dst, &err), -1);
    as_err_clear(&err);
    assert_true(asprintf(&link, "%s/evil", src) > 0);
    assert_int_equal(symlink("/etc/passwd", link), 0);
    free(dst);
    assert_true(asprintf(&dst, "%s/dst/two", root) > 0);
    assert_int_equal(lib_copy_tree(src, dst, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    assert_false(fs_exists(dst)); /* nothing half-copied */
    free(src);
    free(dst);
    free(link);
    tu_rmtree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_implicit_local_and_layout),
        cmocka_unit_test(test_stems),
        cmocka_unit_test(test_path_semantics),
        cmocka_unit_test(test_index_rules),
        cmocka_unit_test(test_index_save_and_trash),
        cmocka_unit_test(test_copy_tree_refuses_symlinks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
