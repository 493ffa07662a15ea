/*
 * agentstack trust [PATH] [--list | --revoke | --preview | --yes --consented D]
 * (01 §6.4–§6.9). The review, the blockers and the grant all derive from one
 * snapshot of the three files; --consented recomputes the digest from disk
 * inside the writer lock and must match exactly.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/lock.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/consent.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "trust/trust.h"

int cmd_trust(int argc, char **argv, struct cli_ctx *ctx);

struct trust_args {
    const char *path;
    bool list, revoke, preview, yes;
    const char *consented;
};

static int parse(int argc, char **argv, struct trust_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--list") == 0 || strcmp(s, "list") == 0)
            a->list = true;
        else if (strcmp(s, "--revoke") == 0)
            a->revoke = true;
        else if (strcmp(s, "--preview") == 0)
            a->preview = true;
        else if (strcmp(s, "--yes") == 0 || strcmp(s, "-y") == 0)
            a->yes = true;
        else if (strcmp(s, "--consented") == 0 || strcmp(s, "--consented-digest") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("trust", "%s needs the digest from --preview", s);
            a->consented = argv[++i];
        } else if (strncmp(s, "--consented=", 12) == 0)
            a->consented = s + 12;
        else if (strncmp(s, "--consented-digest=", 19) == 0)
            a->consented = s + 19;
        else if (s[0] == '-')
            return cli_usage_error("trust", "unknown option '%s'", s);
        else if (a->path)
            return cli_usage_error("trust", "only one project path may be given");
        else
            a->path = s;
    }
    int modes = a->list + a->revoke + a->preview;
    if (modes > 1)
        return cli_usage_error("trust", "--list, --revoke and --preview exclude each other");
    if (modes && (a->yes || a->consented))
        return cli_usage_error("trust", "--yes/--consented only apply to a grant");
    return 0;
}

/* ---- --list ------------------------------------------------------------- */

static int do_list(void)
{
    struct as_err err = AS_ERR_INIT;
    struct trust_store s;
    if (trust_store_load(&s, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    if (s.corrupt)
        fprintf(stderr,
                "warning: %s is unreadable or corrupt; every project counts as "
                "untrusted\n",
                s.path);
    json_t *t = json_object_get(s.root, "trusted");
    if (json_object_size(t) == 0)
        printf("no trusted projects\n");
    const char *key;
    json_t *e;
    json_object_foreach(t, key, e)
    {
        const char *d = json_get_str(e, "digest");
        struct bundle_paths p;
        struct as_err e2 = AS_ERR_INIT;
        const char *state = "project is gone";
        bool current = false;
        if (discover_at(key, &p, &e2) == 0 && p.found) {
            struct manifest_snapshot snap;
            manifest_snapshot_init(&snap);
            if (manifest_snapshot_read(&p, &snap, &e2) == 0) {
                char now[CONSENT_DIGEST_LEN + 1];
                consent_digest_snapshot(&snap, now);
                current = strcmp(now, d) == 0;
                state = current ? "current" : "changed since trusted";
            } else {
                state = "unreadable";
            }
            manifest_snapshot_release(&snap);
        }
        bundle_paths_free(&p);
        strbuf line = SB_INIT;
        sb_adds(&line, current ? "  ✓ " : "  ⚠ ");
        term_sanitize(&line, key, strlen(key));
        sb_addf(&line, " · %s · %s\n", d, state);
        fputs(line.buf, stdout);
        sb_release(&line);
    }
    trust_store_free(&s);
    return EXIT_OK;
}

/* ---- --revoke ----------------------------------------------------------- */

static int do_revoke(const struct trust_args *a, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    strbuf key = SB_INIT;
    const char *shown;
    if (discover_trust_target(a->path, ctx->manifest_dir, &p, &err) == 0) {
        discover_project_key(p.base, &key);
        shown = p.base;
    } else if (a->path) {
        /* A vanished project can still be revoked by the path it was trusted at. */
        memset(&p, 0, sizeof p);
        if (a->path[0] == '/') {
            sb_adds(&key, a->path);
        } else {
            char *cwd = getcwd(NULL, 0);
            sb_addf(&key, "%s/%s", cwd ? cwd : ".", a->path);
            free(cwd);
        }
        while (key.len > 1 && key.buf[key.len - 1] == '/')
            sb_setlen(&key, key.len - 1);
        shown = key.buf;
    } else {
        cli_error(&err);
        sb_release(&key);
        return EXIT_FAIL;
    }
    struct as_lock wl = {-1};
    int rc = EXIT_FAIL;
    if (trust_lock(&wl, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    struct trust_store s;
    if (trust_store_load(&s, &err) < 0) {
        cli_error(&err);
        lock_release(&wl);
        goto out;
    }
    const char *d = trust_store_digest(&s, key.buf);
    if (!d) {
        printf("%s was not trusted; nothing to revoke.\n", shown);
        rc = EXIT_OK;
    } else {
        char *digest = xstrdup(d);
        json_object_del(json_object_get(s.root, "trusted"), key.buf);
        if (trust_store_save(&s, &err) < 0) {
            cli_error(&err);
        } else {
            struct as_err lerr = AS_ERR_INIT;
            if (trust_log("revoke", key.buf, digest, &lerr) < 0)
                fprintf(stderr, "warning: trust.jsonl not written: %s\n", lerr.msg);
            printf("✓ trust revoked for %s — agents will not load its servers, skills or "
                   "instructions until you trust it again\n",
                   shown);
            rc = EXIT_OK;
        }
        free(digest);
    }
    trust_store_free(&s);
    lock_release(&wl);
out:
    sb_release(&key);
    bundle_paths_free(&p);
    return rc;
}

/* ---- grant -------------------------------------------------------------- */

/* §6.7: exact string equality; the diagnosis is derived from the fresh digest. */
static int consented_mismatch(const char *given, const char *fresh)
{
    char *doubled = xasprintf("sha256:%s", fresh);
    const char *bare = fresh + 7;
    if (strcmp(given, doubled) == 0)
        cli_errorf("consented digest has a doubled \"sha256:\" prefix — the surface has NOT "
                   "changed; pass --consented %s",
                   fresh);
    else if (strcmp(given, bare) == 0)
        cli_errorf("consented digest is bare hex without the \"sha256:\" prefix — the surface "
                   "has NOT changed; pass --consented %s",
                   fresh);
    else
        cli_errorf("consented digest does not match the current surface (consented %s, "
                   "current %s); nothing was written — review again with: agentstack trust "
                   ". --preview",
                   given, fresh);
    free(doubled);
    return EXIT_FAIL;
}

static bool ask_terminal(const char *base)
{
    printf("\nTrust %s with exactly these bytes? [y/N] ", base);
    fflush(stdout);
    char line[64];
    if (!fgets(line, sizeof line, stdin))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

static int grant(const struct trust_review *r, const char *consented)
{
    struct as_err err = AS_ERR_INIT;
    struct as_lock wl = {-1};
    if (trust_lock(&wl, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    int rc = EXIT_FAIL;
    const char *record = r->status.digest; /* the snapshot, never re-read */
    char fresh[CONSENT_DIGEST_LEN + 1];
    if (consented) {
        struct manifest_snapshot snap;
        manifest_snapshot_init(&snap);
        if (manifest_snapshot_read(r->paths, &snap, &err) < 0) {
            cli_error(&err);
            manifest_snapshot_release(&snap);
            goto out;
        }
        consent_digest_snapshot(&snap, fresh);
        manifest_snapshot_release(&snap);
        if (strcmp(consented, fresh) != 0) {
            rc = consented_mismatch(consented, fresh);
            goto out;
        }
        if (strcmp(fresh, r->status.digest) != 0) {
            cli_errorf("the project changed while you were reviewing it; nothing was written — "
                       "run agentstack trust . again");
            goto out;
        }
        record = fresh;
    }
    struct trust_store s;
    if (trust_store_load(&s, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (s.corrupt)
        fprintf(stderr, "warning: %s was corrupt; it is replaced by a fresh store\n", s.path);
    const char *key = r->status.key.buf;
    const char *prev = trust_store_digest(&s, key);
    bool existed = prev != NULL;
    bool same = existed && strcmp(prev, record) == 0;
    json_t *e = json_object();
    json_object_set_new(e, "digest", json_string(record));
    json_object_set_new(e, "trusted_at", json_integer((json_int_t)time(NULL)));
    json_object_set_new(e, "surface", trust_review_surface(r));
    json_object_set_new(json_object_get(s.root, "trusted"), key, e);
    if (trust_store_save(&s, &err) < 0) {
        cli_error(&err);
        trust_store_free(&s);
        goto out;
    }
    trust_store_free(&s);
    if (!same) {
        struct as_err lerr = AS_ERR_INIT;
        if (trust_log(existed ? "regrant" : "grant", key, record, &lerr) < 0)
            fprintf(stderr, "warning: trust.jsonl not written: %s\n", lerr.msg);
    }
    printf("✓ trusted at %s.\n", record);
    printf("  any edit to agentstack.toml, agentstack.local.toml or agentstack.lock needs a new "
           "review;\n  drifted skills, instructions or executables block use until re-pinned;\n"
           "  undo with: agentstack trust --revoke\n");
    rc = EXIT_OK;
out:
    lock_release(&wl);
    return rc;
}

static int do_trust(const struct trust_args *a, struct cli_ctx *ctx)
{
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    if (discover_trust_target(a->path, ctx->manifest_dir, &p, &err) < 0) {
        cli_error(&err);
        bundle_paths_free(&p);
        return EXIT_FAIL;
    }
    struct trust_review r;
    int rc = EXIT_FAIL;
    if (trust_review_build(&p, &r, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (r.store_corrupt)
        fprintf(stderr, "warning: trust.json is unreadable or corrupt; every project counts as "
                        "untrusted until it is trusted again\n");
    if (a->preview) {
        json_t *j = trust_review_preview(&r);
        strbuf sb = SB_INIT;
        json_dump_pretty(j, &sb);
        fputs(sb.buf, stdout);
        sb_release(&sb);
        json_decref(j);
        rc = EXIT_OK;
        goto out;
    }
    strbuf card = SB_INIT;
    trust_review_render(&r, &card);
    fputs(card.buf, stdout);
    sb_release(&card);
    fflush(stdout);
    if (r.lock_first)
        fprintf(stderr, "warning: no agentstack.lock yet, but this project has content to pin: "
                        "agentstack lock --write\n");
    if (r.blockers.n) {
        strbuf b = SB_INIT;
        trust_review_blockers(&r, &b);
        cli_errorf("%s", b.buf);
        sb_release(&b);
        goto out;
    }
    bool tty = term_isatty(0);
    if (a->yes && !a->consented) {
        cli_errorf("refusing to trust: --yes requires --consented <surface_digest> (from "
                   "agentstack trust . --preview)");
        goto out;
    }
    if (!a->yes && !tty) {
        cli_errorf("refusing to trust: stdin is not a terminal — review with agentstack trust . "
                   "--preview, then agentstack trust . --yes --consented <surface_digest>");
        goto out;
    }
    if (!a->yes && !ask_terminal(p.base)) {
        printf("not trusted; nothing was written\n");
        rc = EXIT_FAIL;
        goto out;
    }
    rc = grant(&r, a->consented);
out:
    trust_review_free(&r);
    bundle_paths_free(&p);
    return rc;
}

int cmd_trust(int argc, char **argv, struct cli_ctx *ctx)
{
    struct trust_args a = {0};
    int rc = parse(argc, argv, &a);
    if (rc)
        return rc;
    if (a.list)
        return do_list();
    if (a.revoke)
        return do_revoke(&a, ctx);
    return do_trust(&a, ctx);
}
