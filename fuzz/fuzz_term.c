/*
 * libFuzzer target for the one display rule (base/term.h) and the one
 * containment check (base/fs.h, lexical part).
 *
 * term_sanitize, on any bytes:
 *  - the output holds no C0/C1 control, no DEL and no code point that
 *    term_hidden_label names, and is valid UTF-8;
 *  - sanitizing the output again changes nothing;
 *  - two inputs that differ by one hidden character never print alike: the
 *    input with a U+200B inserted prints differently.
 * term_json_visible keeps the JSON value: jansson reads back the same.
 * fs_contain, on any path under a root that does not exist: a path it
 * accepts is the root, '/', then components none of which is "", "." or
 * "..".
 */
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/utf8.h"

#define CHECK(c, what)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_term: property failed: %s\n", what);                             \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_clean(const strbuf *b)
{
    const unsigned char *p = (const unsigned char *)b->buf;
    for (size_t i = 0; i < b->len;) {
        unsigned cp;
        size_t k = utf8_decode(p + i, b->len - i, &cp);
        CHECK(k, "the output is UTF-8");
        CHECK(cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp < 0xA0), "no control");
        CHECK(!term_hidden_label(cp), "no hidden code point");
        i += k;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    strbuf a = SB_INIT, b = SB_INIT, c = SB_INIT;
    term_sanitize(&a, (const char *)data, size);
    check_clean(&a);
    term_sanitize(&b, a.buf, a.len);
    CHECK(a.len == b.len && memcmp(a.buf, b.buf, a.len) == 0, "sanitizing twice changes nothing");
    /* the same bytes with a zero-width space in the middle */
    size_t mid = size / 2;
    strbuf in = SB_INIT;
    sb_add(&in, data, mid);
    sb_adds(&in, "\xe2\x80\x8b");
    sb_add(&in, data + mid, size - mid);
    term_sanitize(&c, in.buf, in.len);
    CHECK(!(a.len == c.len && memcmp(a.buf, c.buf, a.len) == 0),
          "a hidden character never prints as nothing");
    sb_release(&in);

    /* as a JSON string value */
    json_t *s = json_stringn((const char *)data, size);
    if (s) {
        char *d = json_dumps(s, JSON_ENCODE_ANY);
        strbuf j = SB_INIT;
        sb_adds(&j, d);
        term_json_visible(&j);
        json_error_t je;
        json_t *back = json_loadb(j.buf, j.len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        CHECK(back && json_equal(back, s), "the JSON value is kept");
        json_decref(back);
        sb_release(&j);
        free(d);
        json_decref(s);
    }

    /* as a path under a root that does not exist */
    char *path = strndup((const char *)data, size);
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    static const char root[] = "/nonexistent-fuzz-root/proj";
    if (fs_contain(root, "/nonexistent-fuzz-root/proj/.agentstack", path, 0, &out, &err) == 0) {
        CHECK(strncmp(out.buf, root, sizeof root - 1) == 0 && out.buf[sizeof root - 1] == '/',
              "accepted paths are below the root");
        const char *q = out.buf + sizeof root;
        CHECK(*q, "never the root itself");
        for (;;) {
            size_t n = strcspn(q, "/");
            CHECK(n && !(n == 1 && q[0] == '.') && !(n == 2 && q[0] == '.' && q[1] == '.'),
                  "no empty, '.' or '..' component");
            if (!q[n])
                break;
            q += n + 1;
        }
    }
    sb_release(&out);
    free(path);
    sb_release(&a);
    sb_release(&b);
    sb_release(&c);
    return 0;
}
