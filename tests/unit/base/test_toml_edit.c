/* toml editor: exact results on hand-written files, and the property that
 * an edit changes only its span and yields the intended tree, over the
 * toml-test valid corpus. */
#include "testutil.h"

#include "base/toml.h"

static toml_edit *open_ok(const char *text)
{
    struct as_err err = AS_ERR_INIT;
    toml_edit *ed = toml_edit_open("e.toml", text, strlen(text), &err);
    if (!ed)
        fail_msg("open: %u:%u: %s", err.line, err.col, err.msg);
    return ed;
}

static void expect_text(const toml_edit *ed, const char *want)
{
    size_t len;
    const char *got = toml_edit_text(ed, &len);
    if (len != strlen(want) || memcmp(got, want, len) != 0)
        fail_msg("edited text differs:\n--- got\n%.*s--- want\n%s---", (int)len, got, want);
}

#define P(...) ((const char *const[]){__VA_ARGS__})
#define NP(...) (sizeof((const char *const[]){__VA_ARGS__}) / sizeof(const char *))

static void set_ok(toml_edit *ed, const char *const *path, size_t n, toml_value *v)
{
    struct as_err err = AS_ERR_INIT;
    if (toml_edit_set(ed, path, n, v, &err))
        fail_msg("set: %s", err.msg);
    toml_free(v);
}

static const char doc[] = "# Top comment\n"
                          "title = \"demo\"   # trailing\n"
                          "\n"
                          "[servers.demo]\n"
                          "command = 'node'     # literal quoting\n"
                          "\"quoted key\" = 1\n"
                          "point = { x = 1, y = 2 }\n"
                          "\n"
                          "# about tools\n"
                          "[[tools]]\n"
                          "name = \"a\"\n"
                          "\n"
                          "[[tools]]\n"
                          "name = \"b\"\n";

static void test_set_existing(void **state)
{
    (void)state;
    toml_edit *ed = open_ok(doc);
    set_ok(ed, P("title"), 1, toml_new_string("new \"t\""));
    size_t off, olen, nlen;
    toml_edit_last_span(ed, &off, &olen, &nlen);
    assert_int_equal(off, strlen("# Top comment\ntitle = "));
    assert_int_equal(olen, strlen("\"demo\""));
    assert_int_equal(nlen, strlen("\"new \\\"t\\\"\""));
    set_ok(ed, P("servers", "demo", "quoted key"), 3, toml_new_int(2));
    set_ok(ed, P("servers", "demo", "point", "y"), 4, toml_new_float(2.5));
    set_ok(ed, P("tools", "name"), 2, toml_new_string("B")); /* the last entry */
    expect_text(ed, "# Top comment\n"
                    "title = \"new \\\"t\\\"\"   # trailing\n"
                    "\n"
                    "[servers.demo]\n"
                    "command = 'node'     # literal quoting\n"
                    "\"quoted key\" = 2\n"
                    "point = { x = 1, y = 2.5 }\n"
                    "\n"
                    "# about tools\n"
                    "[[tools]]\n"
                    "name = \"a\"\n"
                    "\n"
                    "[[tools]]\n"
                    "name = \"B\"\n");
    assert_int_equal(toml_get_path(toml_edit_root(ed), "servers", "demo", "quoted key", NULL)->u.i,
                     2);
    toml_edit_free(ed);
}

static void test_add_keys(void **state)
{
    (void)state;
    toml_edit *ed = open_ok(doc);
    set_ok(ed, P("version"), 1, toml_new_int(2));
    toml_value *arr = toml_new(TOML_ARRAY);
    toml_array_push(arr, toml_new_string("x"));
    set_ok(ed, P("servers", "demo", "args"), 3, arr);
    size_t off, olen, nlen;
    toml_edit_last_span(ed, &off, &olen, &nlen);
    assert_int_equal(olen, 0); /* a pure insertion */
    set_ok(ed, P("servers", "demo", "point", "z"), 4, toml_new_int(3));
    set_ok(ed, P("servers", "other", "x"), 3, toml_new_bool(true));
    set_ok(ed, P("servers", "k"), 2, toml_new_int(7)); /* [servers] is implicit */
    expect_text(ed, "# Top comment\n"
                    "title = \"demo\"   # trailing\n"
                    "version = 2\n"
                    "\n"
                    "[servers.demo]\n"
                    "command = 'node'     # literal quoting\n"
                    "\"quoted key\" = 1\n"
                    "point = { x = 1, y = 2, z = 3 }\n"
                    "args = [\"x\"]\n"
                    "\n"
                    "# about tools\n"
                    "[[tools]]\n"
                    "name = \"a\"\n"
                    "\n"
                    "[[tools]]\n"
                    "name = \"b\"\n"
                    "\n"
                    "[servers.other]\n"
                    "x = true\n"
                    "\n"
                    "[servers]\n"
                    "k = 7\n");
    toml_edit_free(ed);
}

static void test_remove(void **state)
{
    (void)state;
    toml_edit *ed = open_ok(doc);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(toml_edit_remove(ed, P("servers", "demo", "command"), 3, &err), 0);
    assert_int_equal(toml_edit_remove(ed, P("servers", "demo", "point", "x"), 4, &err), 0);
    assert_int_equal(toml_edit_remove(ed, P("nope"), 1, &err), 0);
    assert_int_equal(toml_edit_remove(ed, P("title", "x"), 2, &err), 0);
    expect_text(ed, "# Top comment\n"
                    "title = \"demo\"   # trailing\n"
                    "\n"
                    "[servers.demo]\n"
                    "\"quoted key\" = 1\n"
                    "point = { y = 2 }\n"
                    "\n"
                    "# about tools\n"
                    "[[tools]]\n"
                    "name = \"a\"\n"
                    "\n"
                    "[[tools]]\n"
                    "name = \"b\"\n");
    assert_int_equal(toml_edit_remove(ed, P("servers"), 1, &err), 0);
    expect_text(ed, "# Top comment\n"
                    "title = \"demo\"   # trailing\n"
                    "\n"
                    "# about tools\n"
                    "[[tools]]\n"
                    "name = \"a\"\n"
                    "\n"
                    "[[tools]]\n"
                    "name = \"b\"\n");
    assert_int_equal(toml_edit_remove(ed, P("tools"), 1, &err), 0);
    expect_text(ed, "# Top comment\n"
                    "title = \"demo\"   # trailing\n"
                    "\n"
                    "# about tools\n");
    assert_null(toml_get(toml_edit_root(ed), "tools"));
    toml_edit_free(ed);
}

static void test_tables(void **state)
{
    (void)state;
    toml_edit *ed = open_ok(doc);
    struct as_err err = AS_ERR_INIT;
    toml_value *t = toml_new(TOML_TABLE);
    toml_table_set(t, "command", toml_new_string("python"));
    toml_value *env = toml_new(TOML_TABLE);
    toml_table_set(env, "A", toml_new_string("1"));
    toml_table_set(t, "env", env);
    assert_int_equal(toml_edit_set_table(ed, P("servers", "demo"), 2, t, &err), 0);
    toml_value *tool = toml_new(TOML_TABLE);
    toml_table_set(tool, "name", toml_new_string("c"));
    assert_int_equal(toml_edit_append_array_table(ed, P("tools"), 1, tool, &err), 0);
    assert_int_equal(toml_edit_append_array_table(ed, P("hooks", "pre"), 2, tool, &err), 0);
    toml_value *empty = toml_new(TOML_TABLE);
    assert_int_equal(toml_edit_set_table(ed, P("fresh"), 1, empty, &err), 0);
    toml_free(empty);
    expect_text(ed, "# Top comment\n"
                    "title = \"demo\"   # trailing\n"
                    "\n"
                    "[servers.demo]\n"
                    "command = \"python\"\n"
                    "\n"
                    "[servers.demo.env]\n"
                    "A = \"1\"\n"
                    "\n"
                    "# about tools\n"
                    "[[tools]]\n"
                    "name = \"a\"\n"
                    "\n"
                    "[[tools]]\n"
                    "name = \"b\"\n"
                    "\n"
                    "[[tools]]\n"
                    "name = \"c\"\n"
                    "\n"
                    "[[hooks.pre]]\n"
                    "name = \"c\"\n"
                    "\n"
                    "[fresh]\n");
    assert_int_equal(toml_len(toml_get(toml_edit_root(ed), "tools")), 3);
    toml_free(t);
    toml_free(tool);
    toml_edit_free(ed);
}

static void test_odd_files(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    /* CRLF, no final newline, dotted keys, comment-only root */
    toml_edit *ed = open_ok("a = 1\r\n[fruit]\r\napple.color = \"red\"\r\n[x]\r\ny = 1");
    set_ok(ed, P("fruit", "apple", "taste"), 3, toml_new_string("sweet"));
    set_ok(ed, P("x", "z"), 2, toml_new_int(2));
    set_ok(ed, P("b"), 1, toml_new_int(2));
    expect_text(ed, "a = 1\r\nb = 2\r\n[fruit]\r\napple.color = \"red\"\r\n"
                    "apple.taste = \"sweet\"\r\n[x]\r\ny = 1\r\nz = 2\r\n");
    toml_edit_free(ed);

    ed = open_ok("");
    set_ok(ed, P("a"), 1, toml_new_int(1));
    set_ok(ed, P("t", "b"), 2, toml_new_int(2));
    expect_text(ed, "a = 1\n\n[t]\nb = 2\n");
    toml_edit_free(ed);

    ed = open_ok("# header comment\n\n# about a\n[a]\nx = 1\n");
    set_ok(ed, P("k"), 1, toml_new_int(1));
    expect_text(ed, "# header comment\n\nk = 1\n\n# about a\n[a]\nx = 1\n");
    toml_edit_free(ed);

    /* a byte-order mark stays the first bytes (found by fuzz_toml) */
    ed = open_ok("\xef\xbb\xbf[[s]]\n");
    set_ok(ed, P("k"), 1, toml_new_int(1));
    expect_text(ed, "\xef\xbb\xbfk = 1\n\n[[s]]\n");
    assert_int_equal(toml_edit_remove(ed, P("s"), 1, &err), 0);
    assert_int_equal(toml_edit_remove(ed, P("k"), 1, &err), 0);
    expect_text(ed, "\xef\xbb\xbf");
    toml_edit_free(ed);

    /* replacing a section with a scalar, and a dotted table with a value */
    ed = open_ok("[a]\nx = 1\n[b]\nc.d = 1\nc.e = 2\nkeep = 3\n");
    set_ok(ed, P("a"), 1, toml_new_int(5));
    set_ok(ed, P("b", "c"), 2, toml_new_string("flat"));
    expect_text(ed, "a = 5\n\n[b]\nkeep = 3\nc = \"flat\"\n");
    toml_edit_free(ed);

    /* removing the last dotted key removes its table */
    ed = open_ok("[t]\nsub.only = 1\nz = 0\n");
    assert_int_equal(toml_edit_remove(ed, P("t", "sub", "only"), 3, &err), 0);
    expect_text(ed, "[t]\nz = 0\n");
    assert_null(toml_get_path(toml_edit_root(ed), "t", "sub", NULL));
    toml_edit_free(ed);

    /* a header-only parent and odd quoting are kept */
    ed = open_ok("[ 'a b' . \"c\" ]  # hdr\nv = '''\n# not a comment\n'''\n[next]\n");
    set_ok(ed, P("a b", "c", "w"), 3, toml_new_int(1));
    set_ok(ed, P("a b", "x"), 2, toml_new_int(2));
    expect_text(ed, "[ 'a b' . \"c\" ]  # hdr\nv = '''\n# not a comment\n'''\nw = 1\n[next]\n"
                    "\n[\"a b\"]\nx = 2\n");
    assert_int_equal(toml_edit_remove(ed, P("a b", "c"), 2, &err), 0);
    expect_text(ed, "[next]\n\n[\"a b\"]\nx = 2\n");
    toml_edit_free(ed);
}

static void test_refusals(void **state)
{
    (void)state;
    toml_edit *ed = open_ok("a = 1\ns = 'x'\narr = [1]\n");
    struct as_err err = AS_ERR_INIT;
    toml_value *v = toml_new_int(1);
    assert_int_equal(toml_edit_set(ed, P("a", "b"), 2, v, &err), -1);
    assert_string_equal(err.msg, "'a' is an integer, not a table");
    assert_int_equal(err.line, 1);
    assert_int_equal(toml_edit_set(ed, NULL, 0, v, &err), -1);
    toml_value *t = toml_new(TOML_TABLE);
    assert_int_equal(toml_edit_append_array_table(ed, P("s"), 1, t, &err), -1);
    assert_string_equal(err.msg, "'s' is a string, not an array of tables");
    assert_int_equal(toml_edit_append_array_table(ed, P("arr"), 1, t, &err), -1);
    assert_int_equal(toml_edit_set_table(ed, P("x"), 1, v, &err), -1);
    /* an edit whose result would break the depth limit is refused whole */
    const char *deep[TOML_MAX_DEPTH];
    for (size_t i = 0; i < TOML_MAX_DEPTH; i++)
        deep[i] = "d";
    toml_value *nest = toml_new(TOML_ARRAY);
    toml_array_push(nest, toml_new(TOML_ARRAY));
    assert_int_equal(toml_edit_set(ed, deep, TOML_MAX_DEPTH, nest, &err), -1);
    assert_string_equal(err.msg,
                        "the edit would not leave valid TOML: nesting deeper than 128 levels");
    assert_int_equal(toml_edit_set(ed, deep, TOML_MAX_DEPTH, v, &err), 0); /* at the limit */
    assert_int_equal(toml_edit_remove(ed, deep, 1, &err), 0);
    toml_free(nest);
    /* nothing changed */
    expect_text(ed, "a = 1\ns = 'x'\narr = [1]\n");
    toml_free(v);
    toml_free(t);
    toml_edit_free(ed);
    assert_null(toml_edit_open("bad.toml", "a = ", 4, &err));
    assert_string_equal(err.path, "bad.toml");
}

static void test_set_remove_restores(void **state)
{
    (void)state;
    /* adding a key or table and removing it again gives back the same bytes */
    static const char *const paths[][3] = {
        {"new", NULL, NULL},    {"servers", "demo", "new"}, {"servers", "x", "y"},
        {"tools", "new", NULL}, {"brand", "new", "k"},
    };
    static const size_t lens[] = {1, 3, 3, 2, 3};
    static const size_t remove_at[] = {1, 3, 2, 2, 1};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        toml_edit *ed = open_ok(doc);
        struct as_err err = AS_ERR_INIT;
        set_ok(ed, paths[i], lens[i], toml_new_string("v"));
        assert_int_equal(toml_edit_remove(ed, paths[i], remove_at[i], &err), 0);
        expect_text(ed, doc);
        toml_edit_free(ed);
    }
}

/* ---- property over the corpus ------------------------------------------- */

struct kpath {
    const char *seg[8];
    size_t n;
    const toml_value *val;
};

static void collect_paths(const toml_value *t, struct kpath *cur, struct kpath *out, size_t *n,
                          size_t max)
{
    for (size_t i = 0; i < toml_len(t) && *n < max; i++) {
        const toml_kv *kv = toml_entry(t, i);
        if (cur->n >= 8)
            return;
        cur->seg[cur->n++] = kv->key;
        cur->val = kv->val;
        out[(*n)++] = *cur;
        const toml_value *c = kv->val;
        if (c->type == TOML_ARRAY && c->is_array_of_tables)
            c = toml_at(c, toml_len(c) - 1);
        if (c->type == TOML_TABLE)
            collect_paths(c, cur, out, n, max);
        cur->n--;
    }
}

/* Old and new text agree outside the reported span. */
static void check_span(const char *old, size_t olen, const toml_edit *ed)
{
    size_t nlen, off, ol, nl;
    const char *nw = toml_edit_text(ed, &nlen);
    toml_edit_last_span(ed, &off, &ol, &nl);
    assert_true(off + ol <= olen);
    assert_int_equal(nlen - nl, olen - ol);
    assert_memory_equal(old, nw, off);
    assert_memory_equal(old + off + ol, nw + off + nl, olen - off - ol);
}

static toml_value *nav(toml_value *root, const char *const *seg, size_t n)
{
    toml_value *t = root;
    for (size_t i = 0; i < n && t; i++) {
        t = toml_get(t, seg[i]);
        if (t && t->type == TOML_ARRAY && t->is_array_of_tables)
            t = toml_at(t, toml_len(t) - 1);
        if (t && t->type != TOML_TABLE)
            return NULL;
    }
    return t;
}

static void edit_file(const char *name, const char *text, size_t len, int *edits)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *orig = toml_parse("c", text, len, &err);
    if (!orig)
        return; /* keys with NUL: the editor refuses them like the default parser */
    struct kpath cur = {{0}, 0, NULL}, paths[64];
    size_t np = 0;
    collect_paths(orig, &cur, paths, &np, 64);
    for (size_t i = 0; i < np; i++) {
        struct kpath *kp = &paths[i];
        for (int op = 0; op < 4; op++) {
            toml_edit *ed = toml_edit_open("c", text, len, &err);
            assert_non_null(ed);
            toml_value *expect = toml_clone(orig);
            toml_value *parent = nav(expect, kp->seg, kp->n - 1);
            if (!parent) { /* under an array that is not of tables */
                toml_free(expect);
                toml_edit_free(ed);
                continue;
            }
            int r;
            const char *seg[9];
            memcpy(seg, kp->seg, sizeof kp->seg);
            size_t n = kp->n;
            if (op == 0) { /* replace the value */
                toml_value *v = toml_new_string("edited \"value\"\n");
                r = toml_edit_set(ed, seg, n, v, &err);
                toml_table_set(parent, seg[n - 1], v);
            } else if (op == 1) { /* add a sibling */
                toml_value *v = toml_new_int(424242);
                seg[n - 1] = "added-key";
                if (toml_get(parent, "added-key")) {
                    toml_free(v);
                    toml_free(expect);
                    toml_edit_free(ed);
                    continue;
                }
                r = toml_edit_set(ed, seg, n, v, &err);
                toml_table_set(parent, seg[n - 1], v);
            } else if (op == 2) { /* remove */
                r = toml_edit_remove(ed, seg, n, &err);
                toml_table_remove(parent, seg[n - 1]);
            } else { /* add a key inside, if it is a table */
                toml_value *t = nav(expect, seg, n);
                if (!t || toml_get(t, "inner-key") || n >= 8) {
                    toml_free(expect);
                    toml_edit_free(ed);
                    continue;
                }
                seg[n++] = "inner-key";
                toml_value *v = toml_new_bool(true);
                r = toml_edit_set(ed, seg, n, v, &err);
                toml_table_set(t, "inner-key", v);
            }
            if (r != 0)
                fail_msg("%s: op %d on %s (n=%zu) refused: %s", name, op, seg[0], n, err.msg);
            check_span(text, len, ed);
            size_t elen;
            const char *et = toml_edit_text(ed, &elen);
            toml_value *got = toml_parse("edited", et, elen, &err);
            assert_non_null(got);
            if (op == 2 && !toml_equal(got, expect)) {
                /* a table that only existed through the removed key goes too */
                for (size_t k = n - 1; k > 0; k--) {
                    toml_value *t = nav(expect, seg, k);
                    if (t && toml_len(t) == 0 && !t->priv_defined)
                        toml_table_remove(nav(expect, seg, k - 1), seg[k - 1]);
                }
            }
            if (!toml_equal(got, expect))
                fail_msg("%s: op %d on %s: tree differs\n%.*s", name, op, seg[0], (int)elen, et);
            (*edits)++;
            toml_free(got);
            toml_free(expect);
            toml_edit_free(ed);
        }
    }
    toml_free(orig);
}

static void test_corpus_edits(void **state)
{
    (void)state;
    char list[4200];
    snprintf(list, sizeof list, "%s/toml-test/tests/files-toml-1.0.0", tu_data_dir());
    FILE *f = fopen(list, "r");
    if (!f)
        fail_msg("cannot open %s", list);
    char line[1024];
    int edits = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        size_t l = strlen(line);
        if (strncmp(line, "valid/", 6) != 0 || l < 5 || strcmp(line + l - 5, ".toml") != 0)
            continue;
        char path[4200];
        snprintf(path, sizeof path, "%s/toml-test/tests/%s", tu_data_dir(), line);
        size_t len;
        char *text = tu_read(path, &len);
        assert_non_null(text);
        edit_file(line, text, len, &edits);
        free(text);
    }
    fclose(f);
    print_message("corpus edits checked: %d\n", edits);
    assert_true(edits > 1000);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_existing),
        cmocka_unit_test(test_add_keys),
        cmocka_unit_test(test_remove),
        cmocka_unit_test(test_tables),
        cmocka_unit_test(test_odd_files),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_set_remove_restores),
        cmocka_unit_test(test_corpus_edits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
