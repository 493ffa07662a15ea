/*
 * toml-decode — the toml-test decoder interface for our parser: TOML on
 * stdin, tagged JSON on stdout, exit 0; invalid input prints the error
 * ("<stdin>:line:col: what") on stderr and exits 1.
 */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/toml.h"

/* Far above anything in the corpus; keeps a runaway pipe from eating memory. */
#define MAX_INPUT ((size_t)256 << 20)

int main(void)
{
    strbuf in = SB_INIT;
    for (;;) {
        sb_grow(&in, 65536);
        ssize_t r = read(0, in.buf + in.len, 65536);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            perror("toml-decode: reading stdin");
            return 1;
        }
        if (r == 0)
            break;
        sb_setlen(&in, in.len + (size_t)r);
        if (in.len > MAX_INPUT) {
            fprintf(stderr, "toml-decode: input exceeds the %zu-byte limit\n", MAX_INPUT);
            return 1;
        }
    }
    struct as_err err = AS_ERR_INIT;
    toml_value *root = toml_parse_ex("<stdin>", in.buf, in.len, TOML_PARSE_NUL_KEYS, &err);
    sb_release(&in);
    if (!root) {
        char buf[4096];
        fprintf(stderr, "toml-decode: %s\n", as_err_str(&err, buf, sizeof buf));
        return 1;
    }
    strbuf out = SB_INIT;
    toml_to_tagged_json(root, &out);
    sb_addc(&out, '\n');
    toml_free(root);
    int ok = fwrite(out.buf, 1, out.len, stdout) == out.len && fflush(stdout) == 0;
    sb_release(&out);
    return ok ? 0 : 1;
}
