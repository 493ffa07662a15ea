/*
 * libFuzzer target for the literal-secret detector and the redactor
 * (bundle/literal_secret.h): any bytes as free text, as a key/value pair
 * (split at the first '='), as an argv list (split at NUL bytes) and as a
 * URL. Never crashes, leaks or hangs (linear time: every rule looks at
 * bounded windows), and:
 *  - redaction leaves nothing it would hide: redacting its output again
 *    hides nothing, and with nothing hidden the output is the input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/literal_secret.h"

#define CHECK(c, what)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_secret: property failed: %s\n", what);                           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    size_t n = strlen(s); /* the text stops at a NUL */

    lsec_findings f = VEC_INIT;
    lsec_check_text("t", s, n, &f);
    lsec_check_url("url", s, &f);
    char *eq = strchr(s, '=');
    if (eq) {
        *eq = '\0';
        (void)lsec_classify(s, eq + 1);
        lsec_check_pair("p", s, eq + 1, &f);
        *eq = '=';
    }
    lsec_findings_free(&f);

    /* argv: the input's NUL-separated words */
    const char *args[64];
    size_t na = 0;
    /* s holds NULs at the input's NULs: each word is a C string */
    char *words = malloc(size + 1);
    memcpy(words, data, size);
    words[size] = '\0';
    for (size_t i = 0; i < size && na < 64; na++) {
        args[na] = words + i;
        while (i < size && words[i])
            i++;
        i++;
    }
    lsec_check_args("args", args, na, &f);
    lsec_findings_free(&f);
    free(words);

    strbuf out = SB_INIT, again = SB_INIT;
    size_t hid = lsec_redact(s, n, &out);
    CHECK(hid == 0 ? out.len == n && memcmp(out.buf, s, n) == 0 : 1,
          "nothing hidden, nothing changed");
    CHECK(lsec_redact(out.buf, out.len, &again) == 0, "redacted text hides nothing more");
    sb_release(&out);
    sb_release(&again);
    free(s);
    return 0;
}
