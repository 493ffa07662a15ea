/*
 * toml-decode — the toml-test decoder interface for our parser: TOML on
 * stdin, tagged JSON on stdout, exit 0; invalid input prints the error
 * ("<stdin>:line:col: what") on stderr and exits 1.
 *
 *   toml-decode < file.toml
 *   toml-decode --batch FILE...
 *
 * --batch decodes each FILE exactly as the interface would had it come on
 * stdin (same function, same "<stdin>" name in messages) and prints, per
 * file, a line "== <exit> <stdout bytes> <stderr bytes>" followed by those
 * bytes: one process for the whole corpus instead of one per file, so
 * e2e/test_toml_conformance does not pay a sanitizer start-up 919 times.
 * The test also runs the stdin interface on a sample and requires the same
 * bytes.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "base/toml.h"

/* Far above anything in the corpus; keeps a runaway pipe from eating memory. */
#define MAX_INPUT ((size_t)256 << 20)

/* Reads fd to the end into in; 0, or 1 with the reason in errout. */
static int read_all(int fd, const char *what, strbuf *in, strbuf *errout)
{
    for (;;) {
        sb_grow(in, 65536);
        ssize_t r = read(fd, in->buf + in->len, 65536);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            sb_addf(errout, "toml-decode: reading %s: %s\n", what, strerror(errno));
            return 1;
        }
        if (r == 0)
            return 0;
        sb_setlen(in, in->len + (size_t)r);
        if (in->len > MAX_INPUT) {
            sb_addf(errout, "toml-decode: input exceeds the %zu-byte limit\n", MAX_INPUT);
            return 1;
        }
    }
}

/* One decode as the interface runs it: the tagged JSON and a newline into
 * out, or "toml-decode: <error>" into errout; returns the exit status. */
static int decode(const char *buf, size_t len, strbuf *out, strbuf *errout)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *root = toml_parse_ex("<stdin>", buf, len, TOML_PARSE_NUL_KEYS, &err);
    if (!root) {
        char msg[4096];
        sb_addf(errout, "toml-decode: %s\n", as_err_str(&err, msg, sizeof msg));
        return 1;
    }
    toml_to_tagged_json(root, out);
    sb_addc(out, '\n');
    toml_free(root);
    return 0;
}

static int batch(int n, char **paths)
{
    for (int i = 0; i < n; i++) {
        strbuf in = SB_INIT, out = SB_INIT, errout = SB_INIT;
        int rc;
        FILE *f = fopen(paths[i], "rb");
        if (!f) {
            sb_addf(&errout, "toml-decode: %s: %s\n", paths[i], strerror(errno));
            rc = 2;
        } else {
            rc = read_all(fileno(f), paths[i], &in, &errout);
            fclose(f);
            if (rc == 0)
                rc = decode(in.buf, in.len, &out, &errout);
        }
        printf("== %d %zu %zu\n", rc, out.len, errout.len);
        fwrite(out.buf, 1, out.len, stdout);
        fwrite(errout.buf, 1, errout.len, stdout);
        sb_release(&in);
        sb_release(&out);
        sb_release(&errout);
    }
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--batch") == 0)
        return batch(argc - 2, argv + 2);
    if (argc > 1) {
        fprintf(stderr, "usage: toml-decode < file.toml | toml-decode --batch FILE...\n");
        return 2;
    }
    strbuf in = SB_INIT, out = SB_INIT, errout = SB_INIT;
    int rc = read_all(0, "stdin", &in, &errout);
    if (rc == 0)
        rc = decode(in.buf, in.len, &out, &errout);
    sb_release(&in);
    int ok = fwrite(out.buf, 1, out.len, stdout) == out.len && fflush(stdout) == 0;
    fwrite(errout.buf, 1, errout.len, stderr);
    sb_release(&out);
    sb_release(&errout);
    return rc ? rc : ok ? 0 : 1;
}
