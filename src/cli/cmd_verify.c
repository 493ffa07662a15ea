/*
 * agentstack verify [--pubkey HEX | --publishers FILE] [--signature HEX] —
 * checks agentstack.lock.sig (or --signature) against the raw lock bytes
 * (docs/formats.md). With no key named it uses $AGENTSTACK_HOME/publishers
 * when that file exists, else this machine's own signing key (the one
 * `agentstack sign` uses), and says which key it checked. Exit 0 valid, 1 invalid or missing. Valid
 * says only who signed these bytes; it never creates trust.
 */
#include <stdio.h>
#include <string.h>

#include "base/fs.h"
#include "base/sha256.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/sign.h"
#include "cli/cli.h"

int cmd_verify(int argc, char **argv, struct cli_ctx *ctx);

/* Reads trusted keys: one hex key a line; blank lines and '#' comments skipped. */
static int read_publishers(const char *path, strbuf *keys, size_t *n, struct as_err *err)
{
    strbuf text = SB_INIT;
    if (fs_read_file(path, 1 << 20, 0, &text, err) < 0) {
        sb_release(&text);
        return -1;
    }
    *n = 0;
    unsigned line = 0;
    for (char *s = text.buf; s && *s;) {
        char *nl = strchr(s, '\n');
        if (nl)
            *nl = '\0';
        line++;
        char *t = s;
        while (*t == ' ' || *t == '\t')
            t++;
        if (*t && *t != '#') {
            uint8_t k[SIGN_PUB_LEN];
            if (sign_parse_hex(t, k, SIGN_PUB_LEN) < 0) {
                sb_release(&text);
                return as_err_at(err, path, line, 1, "not a 64-hex-char ed25519 public key");
            }
            sb_add(keys, k, SIGN_PUB_LEN);
            (*n)++;
        }
        s = nl ? nl + 1 : NULL;
    }
    sb_release(&text);
    if (!*n)
        return as_err_set(err, "%s lists no public keys", path);
    return 0;
}

/* This machine's signing key (never created here): its public half goes
 * into keys, and which names it with its hex, for the verdict line. */
static int machine_key(strbuf *keys, char *which, size_t cap)
{
    struct as_err err = AS_ERR_INIT;
    strbuf dir = SB_INIT;
    uint8_t pub[SIGN_PUB_LEN];
    int got = home_path(HOME_KEYS_DIR, &dir, &err) < 0 ? -1 : sign_key_public(dir.buf, pub, &err);
    sb_release(&dir);
    if (got < 0) {
        cli_error(&err);
        return -1;
    }
    if (got == 0) {
        cli_errorf("this machine has no signing key yet, so there is nothing to check against");
        fprintf(stderr, "  sign the lock here with: agentstack sign\n"
                        "  or name the signer: agentstack verify --pubkey HEX\n");
        return -1;
    }
    char hex[2 * SIGN_PUB_LEN + 1];
    hex_encode(pub, SIGN_PUB_LEN, hex);
    snprintf(which, cap, "this machine's key %s", hex);
    sb_add(keys, pub, SIGN_PUB_LEN);
    return 0;
}

struct verify_args {
    const char *pubkey, *publishers, *signature;
};

#define CLI_ARGS struct verify_args
static const struct cli_option verify_options[] = {
    {OPT_STRING("pubkey", 0, pubkey, "HEX", "the signer's ed25519 public key (64 hex chars)")},
    {OPT_STRING("publishers", 0, publishers, "FILE",
                "a file of trusted public keys, one per line ('#' comments)")},
    {OPT_STRING("signature", 0, signature, "HEX",
                "the signature to check (default: agentstack.lock.sig)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_verify_spec = {
    .name = "verify",
    .fn = cmd_verify,
    .summary = "check agentstack.lock.sig against a public key",
    .synopsis = CLI_LINES("verify [--pubkey HEX | --publishers FILE] [--signature HEX]"),
    .description = "Checks the lock's exact bytes against the signature; exit 1 when no key "
                   "signed them. With no key given, checks against the trusted publishers "
                   "file in the agentstack home when there is one, else this machine's own "
                   "signing key (the one 'agentstack sign' uses). A good signature does not "
                   "trust the project.",
    .options = verify_options,
    .examples =
        CLI_LINES("agentstack verify", "agentstack verify --publishers .github/publishers.txt"),
    .see_also = "sign trust",
};

int cmd_verify(int argc, char **argv, struct cli_ctx *ctx)
{
    struct verify_args va = {0};
    int prc = cli_parse(&cmd_verify_spec, &argc, argv, ctx, &va);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_verify_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    const char *pubkey = va.pubkey, *publishers = va.publishers, *sigarg = va.signature;
    if (pubkey && publishers)
        return cli_usage_error("verify", "give --pubkey or --publishers, not both");
    struct as_err err = AS_ERR_INIT;
    strbuf keys = SB_INIT, lock = SB_INIT, sigtext = SB_INIT, pubs = SB_INIT;
    struct bundle_paths p;
    size_t nkeys = 0;
    char which[4200] = "this public key";
    int rc = EXIT_FAIL;
    memset(&p, 0, sizeof p);
    if (pubkey) {
        uint8_t k[SIGN_PUB_LEN];
        if (sign_parse_hex(pubkey, k, SIGN_PUB_LEN) < 0) {
            cli_errorf("--pubkey is not a 64-hex-char ed25519 public key");
            goto out;
        }
        sb_add(&keys, k, SIGN_PUB_LEN);
        nkeys = 1;
    } else {
        if (!publishers) {
            if (home_path(HOME_PUBLISHERS, &pubs, &err) < 0) {
                cli_error(&err);
                goto out;
            }
            if (fs_exists(pubs.buf))
                publishers = pubs.buf;
        }
        if (publishers) {
            if (read_publishers(publishers, &keys, &nkeys, &err) < 0) {
                cli_error(&err);
                goto out;
            }
            snprintf(which, sizeof which, "a key in %s", publishers);
        } else if (machine_key(&keys, which, sizeof which) < 0) {
            goto out;
        } else {
            nkeys = 1;
        }
    }
    if (cli_project(ctx, &p) < 0)
        goto out;
    uint8_t sig[SIGN_SIG_LEN];
    if (sigarg) {
        sb_adds(&sigtext, sigarg);
    } else if (fs_read_file(p.lock_sig, 4096, 0, &sigtext, &err) < 0) {
        cli_errorf("no signature: %s is missing or unreadable", p.lock_sig);
        fprintf(stderr, "  sign the lock with: agentstack sign\n");
        goto out;
    }
    if (sign_parse_hex(sigtext.buf, sig, SIGN_SIG_LEN) < 0) {
        cli_errorf("signature is not 128 hex chars");
        goto out;
    }
    if (fs_read_file(p.lock, 8388608, 0, &lock, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    for (size_t i = 0; i < nkeys; i++) {
        if (sign_verify((const uint8_t *)keys.buf + i * SIGN_PUB_LEN, sig, lock.buf, lock.len)) {
            printf("✓ agentstack.lock signature is valid for %s.\n", which);
            rc = EXIT_OK;
            goto out;
        }
    }
    cli_errorf("signature does NOT match agentstack.lock (checked %zu key%s: %s)", nkeys,
               nkeys == 1 ? "" : "s", which);
out:
    sb_release(&keys);
    sb_release(&lock);
    sb_release(&sigtext);
    sb_release(&pubs);
    bundle_paths_free(&p);
    return rc;
}
