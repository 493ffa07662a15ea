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

#define CHECK(c, what)                                                  \
    do {                                                                \
        if (!(c)) {                                                     \
            fprintf(stderr, "fuzz_toml: property failed: %s\n", what);  \
            abort();                                                    \
        }                                                               \
    } while (0)

static void check_edit(const char *text, size_t len, const toml_value *root)
{
    struct as_err err = AS_ERR_INIT;
    toml_edit *ed = toml_edit_open("fuzz", text, len, &err);
    CHECK(ed, "the editor opens what the parser accepts");
    /* Pick the first table-valued key (if any) as the edit's home. */
    const char *path[2] = {NULL, "fuzz_added_key"};
    size_t n = 1;
    for (size_t i = 0; i < toml_len(root); i++) {
        const toml_kv *kv = toml_entry(root, i);
        if (kv->val->type == TOML_TABLE && !kv->val->is_inline &&
            strlen(kv->key) == kv->keylen) {
            path[0] = kv->key;
            n = 2;
            break;
        }
    }
    const char *const *p = n == 2 ? path : path + 1;
    const toml_value *home = n == 2 ? toml_get(root, path[0]) : root;
    bool existed = toml_get(home, path[1]) != NULL;
    toml_value *v = toml_new_string("x\n\"y\"");
    if (toml_edit_set(ed, p, n, v, &err) == 0) {
        size_t elen;
        const char *etext = toml_edit_text(ed, &elen);
        toml_value *back = toml_parse("edited", etext, elen, &err);
        CHECK(back, "edited text parses");
        const toml_value *got = n == 2 ? toml_get_path(back, path[0], path[1], NULL)
                                       : toml_get(back, path[1]);
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
    json_error_t jerr;
    json_t *j = json_loadb(js.buf, js.len, JSON_ALLOW_NUL, &jerr);
    CHECK(j, "tagged JSON is JSON");
    json_decref(j);

    /* the editor refuses keys with NUL (as the default parser does) */
    toml_value *plain = toml_parse("fuzz", (const char *)data, size, &err);
    if (plain) {
        check_edit((const char *)data, size, plain);
        toml_free(plain);
    }
    sb_release(&js);
    sb_release(&out);
    sb_release(&again);
    toml_free(t);
    return 0;
}
