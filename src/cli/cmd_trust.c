/*
 * agentstack trust [PATH] [--list | --revoke | --preview | --yes --consented D]
 * [--allow-flagged] (docs/trust.md). The review, the blockers and the grant
 * all derive from one snapshot of the three files; --consented recomputes the
 * digest from disk inside the writer lock and must match exactly. At a
 * terminal, drifted skills and instructions are answered one by one (accept /
 * keep the approved bytes / block); accepting re-hashes and patches the
 * lock inside the writer lock. High content-scan findings refuse the grant
 * unless --allow-flagged: delivery needs Trusted and matching pins, so the
 * grant is where hidden text is stopped.
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
#include "bundle/lockfile.h"
#include "bundle/manifest.h"
#include "bundle/scan.h"
#include "cli/cli.h"
#include "library/library.h"
#include "trust/trust.h"
#include "cli/json_out.h"

int cmd_trust(int argc, char **argv, struct cli_ctx *ctx);

struct trust_args {
    const char *path;
    bool list, revoke, preview, yes, allow_flagged, json;
    const char *consented;
};

#define CLI_ARGS struct trust_args
static const struct cli_option trust_options[] = {
    {OPT_BOOL("preview", 0, preview, "show the review and its digest; decide nothing")},
    {OPT_BOOL("list", 0, list, "the projects trusted on this machine (also: trust list)")},
    {OPT_BOOL("revoke", 0, revoke, "withdraw this project's trust")},
    {OPT_BOOL("yes", 'y', yes, "grant without a terminal (needs --consented)")},
    {OPT_STRING("consented", 0, consented, "DIGEST",
                "the digest --preview printed: the grant is for exactly those bytes"),
     .alias = "consented-digest"},
    {OPT_BOOL("allow-flagged", 0, allow_flagged, "grant even with High content-scan findings")},
    {OPT_BOOL("json", 0, json, "with --list: one JSON document (docs/json.md)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_trust_spec = {
    .name = "trust",
    .fn = cmd_trust,
    .summary = "review and approve a project's exact bytes on this machine",
    .synopsis = CLI_LINES("trust [PATH] [--preview | --list [--json] | --revoke]",
                          "trust [PATH] --yes --consented DIGEST [--allow-flagged]"),
    .description = "The review, the blockers and the grant all come from one snapshot of the "
                   "manifest, the lock and the policy; --consented is recomputed from disk "
                   "under the writer lock and must match exactly. Without a terminal it "
                   "refuses and prints the non-interactive form.",
    .options = trust_options,
    .examples = CLI_LINES("agentstack trust", "agentstack trust --preview",
                          "agentstack trust --yes --consented <digest from --preview>"),
    .see_also = "lock status doctor",
    .flags = CLI_JSON_ERRORS,
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct trust_args *a)
{
    int rc = cli_parse(&cmd_trust_spec, &argc, argv, ctx, a);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "list") == 0)
            a->list = true;
        else if (a->path)
            return cli_usage_error("trust", "only one project path may be given");
        else
            a->path = argv[i];
    }
    int modes = a->list + a->revoke + a->preview;
    if (modes > 1)
        return cli_usage_error("trust", "--list, --revoke and --preview exclude each other");
    if (modes && (a->yes || a->consented || a->allow_flagged))
        return cli_usage_error("trust", "--yes/--consented/--allow-flagged only apply to a grant");
    if (a->json && !a->list)
        return cli_usage_error("trust", "--json goes with --list (--preview is JSON already)");
    return CLI_CONTINUE;
}

/* ---- --list ------------------------------------------------------------- */

/* --list --json: {trusted: [{path, digest, state}], store_corrupt}
 * (docs/json.md); state is current, changed, gone or unreadable. */
static int do_list(bool json)
{
    struct as_err err = AS_ERR_INIT;
    struct trust_store s;
    if (trust_store_load(&s, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    if (s.corrupt)
        term_fprintf(stderr,
                     "warning: %s is unreadable or corrupt; every project counts as "
                     "untrusted\n",
                     s.path);
    json_t *t = json_object_get(s.root, "trusted");
    json_t *rows = json_array();
    if (json_object_size(t) == 0 && !json)
        term_printf("no trusted projects\n");
    const char *key;
    json_t *e;
    json_object_foreach(t, key, e)
    {
        const char *d = json_get_str(e, "digest");
        struct bundle_paths p;
        struct as_err e2 = AS_ERR_INIT;
        const char *state = "project is gone", *word = "gone";
        bool current = false;
        if (discover_at(key, &p, &e2) == 0 && p.found) {
            struct manifest_snapshot snap;
            manifest_snapshot_init(&snap);
            if (manifest_snapshot_read(&p, &snap, &e2) == 0) {
                char now[CONSENT_DIGEST_LEN + 1];
                consent_digest_snapshot(&snap, now);
                current = strcmp(now, d) == 0;
                state = current ? "current" : "changed since trusted";
                word = current ? "current" : "changed";
            } else {
                state = word = "unreadable";
            }
            manifest_snapshot_release(&snap);
        }
        bundle_paths_free(&p);
        if (json) {
            json_array_append_new(
                rows, json_pack("{s:s,s:s?,s:s}", "path", key, "digest", d, "state", word));
            continue;
        }
        strbuf line = SB_INIT;
        sb_adds(&line, current ? "  ✓ " : "  ⚠ ");
        term_sanitize(&line, key, strlen(key));
        sb_addf(&line, " · %s · %s\n", d, state);
        fputs(line.buf, stdout);
        sb_release(&line);
    }
    if (json) {
        json_t *doc = cli_json_doc("trust", true);
        json_object_set_new(doc, "trusted", rows);
        json_object_set_new(doc, "store_corrupt", json_boolean(s.corrupt));
        cli_json_print(doc);
    } else {
        json_decref(rows);
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
        term_printf("%s was not trusted; nothing to revoke.\n", shown);
        rc = EXIT_OK;
    } else {
        char *digest = xstrdup(d);
        json_object_del(json_object_get(s.root, "trusted"), key.buf);
        if (trust_store_save(&s, &err) < 0) {
            cli_error(&err);
        } else {
            struct as_err lerr = AS_ERR_INIT;
            if (trust_log("revoke", key.buf, digest, &lerr) < 0)
                term_fprintf(stderr, "warning: trust.jsonl not written: %s\n", lerr.msg);
            term_printf("✓ trust revoked for %s — agents will not load its servers, skills or "
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

/* Exact string equality; the diagnosis is derived from the fresh digest. */
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

/* One line from the terminal, trimmed; false at EOF. */
static bool read_answer(char *buf, size_t n)
{
    if (!fgets(buf, (int)n, stdin))
        return false;
    size_t len = strlen(buf);
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r' || buf[len - 1] == ' '))
        buf[--len] = '\0';
    return true;
}

static bool ask_terminal(const char *base)
{
    term_printf("\nTrust %s with exactly these bytes? [y/N] ", base);
    fflush(stdout);
    char line[64];
    if (!read_answer(line, sizeof line))
        return false;
    return line[0] == 'y' || line[0] == 'Y';
}

/* ---- drift answers -------------------------------------------------------- */

enum answer { ANS_NONE, ANS_ACCEPT, ANS_KEEP, ANS_BLOCK };

struct drift_answer {
    const struct trust_pin_result *x;
    enum answer ans;
    char live[SHA256_HEX_LEN + 1];     /* the live digest the reviewer saw */
    char approved[SHA256_HEX_LEN + 1]; /* "" when there is none */
};
typedef VEC(struct drift_answer) drift_answers;

static void item_label(const struct pin_item *it, strbuf *out)
{
    if (it->kind == PIN_VARIANT)
        sb_addf(out, "instruction '%s' variant ", it->name);
    else
        sb_addf(out, "%s '%s'", pin_kind_name(it->kind), it->name);
    if (it->kind == PIN_VARIANT)
        term_sanitize(out, it->declared_path, strlen(it->declared_path));
}

/* Asks about every answerable item. Returns the number of drifted items that
 * were left unanswered (each keeps its blocker). */
static size_t ask_drift(const struct trust_review *r, drift_answers *out)
{
    size_t open = 0;
    bool header = false;
    for (size_t i = 0; i < r->pins.results.n; i++) {
        const struct trust_pin_result *x = &r->pins.results.v[i];
        if (!trust_answerable(x))
            continue;
        if (!header) {
            term_printf(
                "\nDrifted content — for each: [a]ccept the live bytes, [k]eep the approved "
                "bytes (delivered from the content store), [b]lock it (never delivered), or "
                "Enter to %s\n",
                "leave it as it is (a drifted item keeps blocking)");
            header = true;
        }
        struct drift_answer a = {x, ANS_NONE, "", ""};
        snprintf(a.live, sizeof a.live, "%s", trust_live_pin(x->item));
        const char *ap = trust_approved_pin(r, x);
        snprintf(a.approved, sizeof a.approved, "%s", ap ? ap : "");
        strbuf label = SB_INIT;
        item_label(x->item, &label);
        const char *now = x->item->decision == PIN_DECISION_KEEP    ? "kept"
                          : x->item->decision == PIN_DECISION_BLOCK ? "blocked"
                                                                    : "drifted";
        term_printf("  %s — %s (approved %.12s, live %.12s): ", label.buf, now,
                    a.approved[0] ? a.approved : "none", a.live[0] ? a.live : "unreadable");
        fflush(stdout);
        sb_release(&label);
        char line[64];
        if (read_answer(line, sizeof line)) {
            if (line[0] == 'a' || line[0] == 'A')
                a.ans = a.live[0] ? ANS_ACCEPT : ANS_NONE;
            else if (line[0] == 'k' || line[0] == 'K')
                a.ans = a.approved[0] ? ANS_KEEP : ANS_NONE;
            else if (line[0] == 'b' || line[0] == 'B')
                a.ans = ANS_BLOCK;
        }
        if (a.ans == ANS_NONE && x->status == PIN_DRIFTED)
            open++;
        vec_push(out, a);
    }
    return open;
}

static const struct drift_answer *answer_for(const drift_answers *ans, const struct pin_item *it)
{
    for (size_t i = 0; ans && i < ans->n; i++)
        if (ans->v[i].x->item == it)
            return &ans->v[i];
    return NULL;
}

/* A decision row in trust.json's shape. */
static json_t *decision_json(const struct pin_item *it, enum answer a, const char *pin)
{
    json_t *d = json_object();
    json_object_set_new(d, "kind", json_string(pin_decision_kind(it)));
    json_object_set_new(d, "name", json_string(it->name));
    if (it->kind == PIN_VARIANT)
        json_object_set_new(d, "variant", json_string(it->declared_path));
    json_t *ans = json_object();
    json_object_set_new(ans, "answer", json_string(a == ANS_KEEP ? "keep-pinned" : "blocked"));
    if (pin && pin[0])
        json_object_set_new(ans, "pin", json_string(pin));
    json_object_set_new(d, "answer", ans);
    return d;
}

static bool decision_is(json_t *d, const struct pin_item *it)
{
    const char *k = json_get_str(d, "kind"), *n = json_get_str(d, "name");
    const char *v = json_get_str(d, "variant");
    const char *want = pin_decision_kind(it);
    const char *wv = it->kind == PIN_VARIANT ? it->declared_path : NULL;
    return k && n && want && strcmp(k, want) == 0 && strcmp(n, it->name) == 0 &&
           ((!v && !wv) || (v && wv && strcmp(v, wv) == 0));
}

/* The decisions to record: prior ones for items still present and not
 * answered now, then this review's keep/block answers. */
static json_t *merge_decisions(const struct trust_review *r, const drift_answers *ans,
                               size_t *decided, size_t *undecided)
{
    json_t *out = json_array();
    for (size_t i = 0; i < json_array_size(r->prior_decisions); i++) {
        json_t *d = json_array_get(r->prior_decisions, i);
        const struct pin_item *match = NULL;
        for (size_t j = 0; j < r->pins.results.n && !match; j++)
            if (decision_is(d, r->pins.results.v[j].item))
                match = r->pins.results.v[j].item;
        const struct drift_answer *a = match ? answer_for(ans, match) : NULL;
        if (!match || (a && a->ans == ANS_ACCEPT)) {
            (*undecided)++;
            continue;
        }
        if (a && a->ans != ANS_NONE)
            continue; /* replaced below */
        json_array_append_new(out, json_deep_copy(d));
    }
    for (size_t i = 0; ans && i < ans->n; i++) {
        const struct drift_answer *a = &ans->v[i];
        if (a->ans != ANS_KEEP && a->ans != ANS_BLOCK)
            continue;
        json_array_append_new(out, decision_json(a->x->item, a->ans, a->approved));
        (*decided)++;
    }
    return out;
}

/* The surface as recorded: accepted items at their live pin, kept and
 * blocked ones at the approved pin. */
static json_t *surface_with_answers(const struct trust_review *r, const drift_answers *ans)
{
    json_t *s = trust_review_surface(r);
    for (size_t i = 0; ans && i < ans->n; i++) {
        const struct drift_answer *a = &ans->v[i];
        const struct pin_item *it = a->x->item;
        if (it->kind == PIN_VARIANT || a->ans == ANS_NONE)
            continue;
        const char *kind = it->kind == PIN_SKILL ? "skill" : "instruction";
        const char *pin = a->ans == ANS_ACCEPT ? a->live : a->approved;
        for (size_t j = 0; j < json_array_size(s); j++) {
            json_t *e = json_array_get(s, j);
            const char *k = json_get_str(e, "kind"), *n = json_get_str(e, "name");
            if (k && n && strcmp(k, kind) == 0 && strcmp(n, it->name) == 0 && pin[0])
                json_object_set_new(e, "pin", json_string(pin));
        }
    }
    return s;
}

static bool same_blob(bool ha, const strbuf *a, bool hb, const strbuf *b)
{
    return ha == hb && (!ha || (a->len == b->len && memcmp(a->buf, b->buf, a->len) == 0));
}

/* Accepting re-hashes each accepted item, refuses if its bytes are not those
 * shown, patches those checksums into the snapshot's lock, deposits the
 * accepted bytes and returns the digest of the files as written. */
static int accept_pins(const struct trust_review *r, const drift_answers *ans, char *digest,
                       struct as_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < ans->n; i++)
        n += ans->v[i].ans == ANS_ACCEPT;
    if (!n)
        return 0;
    pin_items fresh = VEC_INIT;
    struct pin_opts po = {.home = r->home,
                          .library = r->lib.pin,
                          .library_ctx = r->lib.ctx,
                          .lock = r->pins.lock,
                          .no_decisions = true};
    struct lockfile *l = NULL;
    pin_items accepted = VEC_INIT;
    strvec warnings = STRVEC_INIT;
    struct manifest_snapshot after;
    manifest_snapshot_init(&after);
    int rc = -1;
    if (pin_collect(r->m, &po, &fresh, err) < 0)
        goto out;
    for (size_t i = 0; i < ans->n; i++) {
        const struct drift_answer *a = &ans->v[i];
        if (a->ans != ANS_ACCEPT)
            continue;
        const struct pin_item *want = a->x->item, *got = NULL;
        for (size_t j = 0; j < fresh.n && !got; j++) {
            const struct pin_item *f = &fresh.v[j];
            if (f->kind == want->kind && strcmp(f->name, want->name) == 0 &&
                ((!f->declared_path && !want->declared_path) ||
                 (f->declared_path && want->declared_path &&
                  strcmp(f->declared_path, want->declared_path) == 0)))
                got = f;
        }
        if (!got || got->state != PIN_OK || strcmp(got->checksum, a->live) != 0) {
            strbuf label = SB_INIT;
            item_label(want, &label);
            as_err_set(err,
                       "changed while you were reviewing: %s no longer has the bytes "
                       "shown (%.12s); nothing was written",
                       label.buf, a->live);
            as_err_hint(err, "review it again: agentstack trust .");
            sb_release(&label);
            goto out;
        }
        vec_push(&accepted, *got); /* borrowed: fresh owns the strings */
    }
    if (!r->snap.has_lock ||
        !(l = lockfile_parse(r->paths->lock, r->snap.lock.buf, r->snap.lock.len, err)))
        goto out;
    for (size_t i = 0; i < accepted.n; i++) {
        const struct pin_item *it = &accepted.v[i];
        char *c = (char *)pin_locked_checksum(l, it);
        if (!c) {
            as_err_set(err, "%s '%s' has no row in agentstack.lock to patch",
                       pin_kind_name(it->kind), it->name);
            goto out;
        }
        memcpy(c, it->checksum, SHA256_HEX_LEN + 1);
    }
    /* The stamp still describes the manifest: only pins moved. */
    bool written = false;
    if (lockfile_save(l, r->paths->lock, r->paths->project_root, r->snap.lock.buf, r->snap.lock.len,
                      true, &written, err) < 0)
        goto out;
    pin_deposit(&accepted, r->home, &warnings);
    for (size_t i = 0; i < warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", warnings.v[i]);
    /* The digest comes from the bytes as written; the manifest and overlay
     * must still be the ones reviewed. */
    if (manifest_snapshot_read(r->paths, &after, err) < 0)
        goto out;
    if (!same_blob(after.has_manifest, &after.manifest, r->snap.has_manifest, &r->snap.manifest) ||
        !same_blob(after.has_overlay, &after.overlay, r->snap.has_overlay, &r->snap.overlay)) {
        as_err_set(err, "changed while you were reviewing: the manifest was edited; "
                        "agentstack.lock holds the accepted pins, but nothing was trusted");
        as_err_hint(err, "review it again: agentstack trust .");
        goto out;
    }
    consent_digest_snapshot(&after, digest);
    rc = 1;
out:
    manifest_snapshot_release(&after);
    strvec_clear(&warnings);
    vec_free(&accepted);
    pin_items_free(&fresh);
    lockfile_free(l);
    return rc;
}

static int grant(const struct trust_review *r, const char *consented, const drift_answers *ans)
{
    struct as_err err = AS_ERR_INIT;
    struct as_lock wl = {-1};
    if (trust_lock(&wl, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    int rc = EXIT_FAIL;
    char record[CONSENT_DIGEST_LEN + 1];
    snprintf(record, sizeof record, "%s", r->status.digest); /* the snapshot, never re-read */
    char fresh[CONSENT_DIGEST_LEN + 1];
    if (consented || ans) {
        struct manifest_snapshot snap;
        manifest_snapshot_init(&snap);
        if (manifest_snapshot_read(r->paths, &snap, &err) < 0) {
            cli_error(&err);
            manifest_snapshot_release(&snap);
            goto out;
        }
        consent_digest_snapshot(&snap, fresh);
        manifest_snapshot_release(&snap);
        if (consented && strcmp(consented, fresh) != 0) {
            rc = consented_mismatch(consented, fresh);
            goto out;
        }
        if (strcmp(fresh, r->status.digest) != 0) {
            cli_errorf("changed while you were reviewing: the manifest, overlay or lock was "
                       "edited; nothing was written — run agentstack trust . again");
            goto out;
        }
    }
    if (ans) {
        int a = accept_pins(r, ans, record, &err);
        if (a < 0) {
            cli_error(&err);
            goto out;
        }
    }
    struct trust_store s;
    if (trust_store_load(&s, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (s.corrupt)
        term_fprintf(stderr, "warning: %s was corrupt; it is replaced by a fresh store\n", s.path);
    const char *key = r->status.key.buf;
    const char *prev = trust_store_digest(&s, key);
    bool existed = prev != NULL;
    bool same = existed && strcmp(prev, record) == 0;
    size_t decided = 0, undecided = 0;
    json_t *decisions =
        ans ? merge_decisions(r, ans, &decided, &undecided)
            : json_deep_copy(json_object_get(trust_store_entry(&s, key), "decisions"));
    json_t *e = json_object();
    json_object_set_new(e, "digest", json_string(record));
    json_object_set_new(e, "trusted_at", json_integer((json_int_t)time(NULL)));
    json_object_set_new(e, "surface", surface_with_answers(r, ans));
    if (json_array_size(decisions))
        json_object_set_new(e, "decisions", json_incref(decisions));
    json_decref(decisions);
    json_object_set_new(json_object_get(s.root, "trusted"), key, e);
    if (trust_store_save(&s, &err) < 0) {
        cli_error(&err);
        trust_store_free(&s);
        goto out;
    }
    trust_store_free(&s);
    struct as_err lerr = AS_ERR_INIT;
    if (!same && trust_log(existed ? "regrant" : "grant", key, record, &lerr) < 0)
        term_fprintf(stderr, "warning: trust.jsonl not written: %s\n", lerr.msg);
    /* Decisions are stored after the grant, and logged after it. */
    if (decided && trust_log("decide", key, record, &lerr) < 0)
        term_fprintf(stderr, "warning: trust.jsonl not written: %s\n", lerr.msg);
    if (undecided && trust_log("undecide", key, record, &lerr) < 0)
        term_fprintf(stderr, "warning: trust.jsonl not written: %s\n", lerr.msg);
    term_printf("✓ trusted at %s.\n", record);
    for (size_t i = 0; ans && i < ans->n; i++) {
        const struct drift_answer *a = &ans->v[i];
        if (a->ans == ANS_NONE)
            continue;
        strbuf label = SB_INIT;
        item_label(a->x->item, &label);
        term_printf("  %s: %s\n", label.buf,
                    a->ans == ANS_ACCEPT ? "accepted — agentstack.lock now pins the live bytes"
                    : a->ans == ANS_KEEP ? "kept — the approved bytes are delivered from the store"
                                         : "blocked — it is not delivered");
        sb_release(&label);
    }
    term_printf(
        "  any edit to agentstack.toml, agentstack.local.toml or agentstack.lock needs a new "
        "review;\n  drifted skills, instructions or executables block use until re-pinned;\n"
        "  undo with: agentstack trust --revoke\n");
    rc = EXIT_OK;
out:
    lock_release(&wl);
    return rc;
}

/* Blockers a terminal answer can lift: drifted skills and instructions. */
static size_t hard_blockers(const struct trust_review *r)
{
    size_t soft = 0;
    for (size_t i = 0; i < r->pins.results.n; i++) {
        const struct trust_pin_result *x = &r->pins.results.v[i];
        soft += x->blocks && trust_answerable(x);
    }
    return r->blockers.n - soft;
}

static void print_blockers(const struct trust_review *r)
{
    strbuf b = SB_INIT;
    trust_review_blockers(r, &b);
    /* one blocker a line: each line goes out sanitized on its own */
    const char *p = b.buf;
    for (bool first = true; *p; first = false) {
        size_t n = strcspn(p, "\n");
        if (first)
            cli_errorf("%.*s", (int)n, p);
        else
            term_fprintf(stderr, "%.*s\n", (int)n, p);
        p += n + (p[n] == '\n');
    }
    sb_release(&b);
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
    memset(&r, 0, sizeof r);
    drift_answers answers = VEC_INIT;
    int rc = EXIT_FAIL;
    /* Library names are verified where `lock` pinned them: every linked
     * source, qualified refs in theirs. */
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        cli_error(&err);
        goto out;
    }
    for (size_t i = 0; i < lib->warnings.n; i++) {
        strbuf b = SB_INIT;
        term_sanitize(&b, lib->warnings.v[i], strlen(lib->warnings.v[i]));
        term_fprintf(stderr, "warning: %s\n", b.buf);
        sb_release(&b);
    }
    struct trust_library tl = {.pin = lib_pin_lookup, .has = lib_manifest_has, .ctx = lib};
    if (trust_review_build(&p, &tl, &r, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (r.store_corrupt)
        term_fprintf(stderr,
                     "warning: trust.json is unreadable or corrupt; every project counts as "
                     "untrusted until it is trusted again\n");
    if (a->preview) {
        json_t *j = trust_review_preview(&r);
        strbuf sb = SB_INIT;
        json_dump_pretty(j, &sb);
        term_json_visible(&sb);
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
        term_fprintf(stderr,
                     "warning: no agentstack.lock yet, but this project has content to pin: "
                     "agentstack lock --write\n");
    bool tty = term_isatty(0);
    bool interactive = tty && !a->yes && !a->consented;
    if (r.blockers.n && (!interactive || hard_blockers(&r))) {
        print_blockers(&r);
        goto out;
    }
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
    /* consent is a person's act: not from a process tree that holds an agent
     * (docs/trust.md, "Consent is a person's act") */
    const char *person = getenv(TRUST_CONSENT_OVERRIDE);
    strbuf agent = SB_INIT;
    if (!(person && !strcmp(person, "1")) && trust_agent_context(&agent)) {
        cli_errorf("refusing to trust: %s — consent is given by a person at their own terminal, "
                   "outside any agent session; open a terminal of your own and run agentstack "
                   "trust there (nothing was written)",
                   agent.buf);
        sb_release(&agent);
        goto out;
    }
    sb_release(&agent);
    if ((scan_report_blocking(&r.scan) || r.scan_error) && !a->allow_flagged) {
        if (r.scan_error)
            cli_errorf("refusing to trust: the content scan could not run (%s)", r.scan_error);
        else
            cli_errorf("refusing to trust: the content scan found %zu high finding%s (hidden "
                       "text in what this project puts into agents' context) — nothing was "
                       "written",
                       r.scan.high, r.scan.high == 1 ? "" : "s");
        term_fprintf(stderr, "  review the findings above; to trust it anyway: agentstack trust . "
                             "--allow-flagged\n");
        goto out;
    }
    if (interactive) {
        size_t open = ask_drift(&r, &answers);
        if (open) {
            cli_errorf("cannot trust %s: %zu drifted item%s left unanswered — nothing was "
                       "written",
                       p.base, open, open == 1 ? "" : "s");
            term_fprintf(stderr,
                         "  answer a, k or b for each, or re-pin: agentstack lock --write\n");
            goto out;
        }
        if (!ask_terminal(p.base)) {
            term_printf("not trusted; nothing was written\n");
            goto out;
        }
    }
    rc = grant(&r, a->consented, interactive ? &answers : NULL);
out:
    vec_free(&answers);
    trust_review_free(&r);
    lib_free(lib);
    bundle_paths_free(&p);
    return rc;
}

int cmd_trust(int argc, char **argv, struct cli_ctx *ctx)
{
    struct trust_args a = {0};
    int rc = parse(argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a.list)
        return do_list(a.json);
    if (a.revoke)
        return do_revoke(&a, ctx);
    return do_trust(&a, ctx);
}
