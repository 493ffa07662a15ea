/*
 * agentstack sign [--print-key-only] — Ed25519 over the raw bytes of
 * agentstack.lock with the persistent key under $AGENTSTACK_HOME/keys/
 * (docs/formats.md). A signature never creates trust.
 */
#include <stdio.h>
#include <string.h>

#include "base/fs.h"
#include "base/sha256.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/sign.h"
#include "cli/cli.h"

int cmd_sign(int argc, char **argv, struct cli_ctx *ctx);

struct sign_args {
    bool key_only;
};

#define CLI_ARGS struct sign_args
static const struct cli_option sign_options[] = {
    {OPT_BOOL("print-key-only", 0, key_only, "sign, then print only the public key (for CI)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_sign_spec = {
    .name = "sign",
    .fn = cmd_sign,
    .summary = "sign agentstack.lock with this machine's ed25519 key",
    .synopsis = CLI_LINES("sign [--print-key-only]"),
    .description = "Writes agentstack.lock.sig next to the lock; the key is created under the "
                   "machine home on first use.\nA signature never creates trust: a machine "
                   "still runs `agentstack trust`.",
    .options = sign_options,
    .examples = CLI_LINES("agentstack sign", "agentstack verify --pubkey HEX"),
    .see_also = "verify lock trust",
};

int cmd_sign(int argc, char **argv, struct cli_ctx *ctx)
{
    struct sign_args a = {0};
    int prc = cli_parse(&cmd_sign_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_sign_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    bool key_only = a.key_only;
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    strbuf lock = SB_INIT, keys = SB_INIT;
    int rc = EXIT_FAIL;
    if (cli_project(ctx, &p) < 0)
        goto out;
    if (!fs_exists(p.lock)) {
        cli_errorf("no agentstack.lock to sign in %s", p.manifest_dir);
        fprintf(stderr, "  create it first: agentstack lock --write\n");
        goto out;
    }
    if (fs_read_file(p.lock, 8388608, 0, &lock, &err) < 0 ||
        home_ensure(HOME_KEYS_DIR, &keys, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    uint8_t sig[SIGN_SIG_LEN], pub[SIGN_PUB_LEN];
    int created = 0;
    if (sign_message(keys.buf, lock.buf, lock.len, sig, pub, &created, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    char sighex[2 * SIGN_SIG_LEN + 1], pubhex[2 * SIGN_PUB_LEN + 1];
    hex_encode(sig, SIGN_SIG_LEN, sighex);
    hex_encode(pub, SIGN_PUB_LEN, pubhex);
    struct fs_write_opts o = {
        .mode = 0644, .symlinks = FS_SYMLINK_FOLLOW, .contain_root = p.project_root};
    if (fs_write_atomic(p.lock_sig, sighex, strlen(sighex), &o, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (key_only) {
        printf("%s\n", pubhex);
    } else {
        if (created)
            fprintf(stderr, "created a signing key: %s/ed25519.key (0600)\n", keys.buf);
        printf("✓ signed %s\n", p.lock);
        printf("  signature → %s\n", p.lock_sig);
        printf("  public key: %s\n", pubhex);
        printf("  check it with: agentstack verify --pubkey %s\n", pubhex);
    }
    rc = EXIT_OK;
out:
    sb_release(&lock);
    sb_release(&keys);
    bundle_paths_free(&p);
    return rc;
}
