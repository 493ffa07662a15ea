/*
 * libFuzzer target for the TOML parser, emitter, tagged JSON and editor.
 *
 * Properties checked on every input that parses:
 *  - parse(emit(t)) succeeds and equals t, and emitting is deterministic;
 *  - the tagged JSON is valid JSON (jansson reads it back);
 *  - opening the text in the editor, setting a key and removing it again
 *    yields text that parses, with every byte before the edit unchanged.
 * Inputs that do not parse must carry a positioned error.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/toml.h"

#define CHECK(c, what)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_toml: property failed: %s\n", what);                             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* A refused edit is fine only for a reason the caller caused; the editor's
 * own guard firing means it planned a wrong splice. */
static void edit_result(int r, const struct as_err *err, const char *what)
{
    if (r == 0)
        return;
    /* (prefix match: messages quote user keys, which may contain anything) */
    static const char guard[] = "cannot edit this file in place";
    static const char invalid[] = "the edit would not leave valid TOML: ";
    if (strncmp(err->msg, guard, sizeof guard - 1) == 0 ||
        (strncmp(err->msg, invalid, sizeof invalid - 1) == 0 &&
         strncmp(err->msg + sizeof invalid - 1, "nesting deeper", 14) != 0)) {
        fprintf(stderr, "fuzz_toml: %s refused: %s\n", what, err->msg);
        abort();
    }
}

static void check_edit(const char *text, size_t len, const toml_value *root)
{
    struct as_err err = AS_ERR_INIT;
    toml_edit *ed = toml_edit_open("fuzz", text, len, &err);
    CHECK(ed, "the editor opens what the parser accepts");
    /* Pick the first table-valued key (if any) as the edit's home. */
    const char *path[3] = {NULL, "fuzz_added_key", NULL};
    size_t n = 1;
    for (size_t i = 0; i < toml_len(root); i++) {
        const toml_kv *kv = toml_entry(root, i);
        if (kv->val->type == TOML_TABLE && strlen(kv->key) == kv->keylen) {
            path[0] = kv->key;
            n = 2;
            break;
        }
    }
    const char *const *p = n == 2 ? path : path + 1;
    const toml_value *home = n == 2 ? toml_get(root, path[0]) : root;
    bool existed = toml_get(home, path[1]) != NULL;
    toml_value *v = toml_new_string("x\n\"y\"");
    int r = toml_edit_set(ed, p, n, v, &err);
    edit_result(r, &err, "set");
    if (r == 0) {
        size_t elen;
        const char *etext = toml_edit_text(ed, &elen);
        toml_value *back = toml_parse("edited", etext, elen, &err);
        CHECK(back, "edited text parses");
        const toml_value *got =
            n == 2 ? toml_get_path(back, path[0], path[1], NULL) : toml_get(back, path[1]);
        CHECK(got && toml_equal(got, v), "edited value reads back");
        toml_free(back);
        CHECK(toml_edit_remove(ed, p, n, &err) == 0, "removing the added key works");
        etext = toml_edit_text(ed, &elen);
        back = toml_parse("removed", etext, elen, &err);
        CHECK(back, "text after remove parses");
        CHECK(existed || toml_equal(back, root), "set then remove gives the original tree");
        toml_free(back);
    }
    toml_free(v);
    toml_edit_free(ed);

    /* Every existing key (first two levels): replace, remove, and add a
     * table / an array-of-tables entry beside it, each on a fresh editor. */
    toml_value *tab = toml_new(TOML_TABLE);
    toml_table_set(tab, "k", toml_new_int(1));
    toml_value *sub = toml_new(TOML_TABLE);
    toml_table_set(sub, "z", toml_new_bool(true));
    toml_table_set(tab, "sub", sub);
    size_t budget = 12;
    for (size_t i = 0; i < toml_len(root) && budget; i++) {
        const toml_kv *kv = toml_entry(root, i);
        if (strlen(kv->key) != kv->keylen)
            continue;
        const toml_value *c = kv->val;
        size_t inner = c->type == TOML_TABLE ? toml_len(c) : 0;
        for (size_t j = 0; j <= inner && j < 3 && budget; j++, budget--) {
            const char *kp[3] = {kv->key, NULL, NULL};
            size_t kn = 1;
            if (j > 0) {
                const toml_kv *k2 = toml_entry(c, j - 1);
                if (strlen(k2->key) != k2->keylen)
                    continue;
                kp[1] = k2->key;
                kn = 2;
            }
            for (int op = 0; op < 4; op++) {
                toml_edit *e2 = toml_edit_open("fuzz", text, len, &err);
                CHECK(e2, "the editor reopens");
                toml_value *nv = toml_new_int(7);
                const char *np[3] = {kp[0], kp[1], NULL};
                if (op == 0) {
                    edit_result(toml_edit_set(e2, kp, kn, nv, &err), &err, "replace");
                } else if (op == 1) {
                    CHECK(toml_edit_remove(e2, kp, kn, &err) == 0, "remove works");
                } else if (op == 2) {
                    np[kn] = "fuzz_t";
                    edit_result(toml_edit_set_table(e2, np, kn + 1, tab, &err), &err, "set_table");
                } else {
                    np[kn] = "fuzz_aot";
                    edit_result(toml_edit_append_array_table(e2, np, kn + 1, tab, &err), &err,
                                "append_array_table");
                }
                size_t elen;
                const char *etext = toml_edit_text(e2, &elen);
                toml_value *back = toml_parse("edited", etext, elen, &err);
                CHECK(back, "text after an edit parses");
                toml_free(back);
                toml_free(nv);
                toml_edit_free(e2);
            }
        }
    }
    toml_free(tab);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *t = toml_parse_ex("fuzz", (const char *)data, size, TOML_PARSE_NUL_KEYS, &err);
    if (!t) {
        CHECK(err.line >= 1 && err.col >= 1 && err.msg[0], "errors carry line:col");
        return 0;
    }
    strbuf out = SB_INIT, again = SB_INIT;
    toml_emit(t, &out);
    toml_value *back = toml_parse_ex("emit", out.buf, out.len, TOML_PARSE_NUL_KEYS, &err);
    CHECK(back, "emitted text parses");
    CHECK(toml_equal(t, back), "parse(emit(t)) == t");
    toml_emit(back, &again);
    CHECK(again.len == out.len && memcmp(again.buf, out.buf, out.len) == 0,
          "emit is deterministic");
    toml_free(back);

    strbuf js = SB_INIT;
    toml_to_tagged_json(t, &js);
    /* The default parser refuses keys with NUL, as does the editor; jansson
     * cannot hold such keys either, so those two checks use its tree. */
    toml_value *plain = toml_parse("fuzz", (const char *)data, size, &err);
    if (plain) {
        json_error_t jerr;
        json_t *j = json_loadb(js.buf, js.len, JSON_ALLOW_NUL, &jerr);
        CHECK(j, "tagged JSON is JSON");
        json_decref(j);
        check_edit((const char *)data, size, plain);
        toml_free(plain);
    }
    sb_release(&js);
    sb_release(&out);
    sb_release(&again);
    toml_free(t);
    return 0;
}
