/*
 * agentstack doctor [--ci] [--deep] [--all] [--json] — what is wrong with
 * this project on this machine, and the command that fixes each thing
 * (docs/ci.md).
 *
 * --ci (= --all + --deep) is the CI gate: deterministic and non-interactive.
 * It never prompts, never needs a terminal, never reads a keychain, never
 * writes anything and never touches the network. Errors (exit 1): the
 * manifest does not load or validate, lock drift (a pin missing, drifted or
 * unresolvable; no lock at all), policy violations (a broken machine policy;
 * a policy key naming no server; a secret reference or declared host the
 * effective ruleset refuses), unresolved required secrets (looked up by
 * presence only: process environment, $AGENTSTACK_HOME/secrets.env, the
 * project's .env) and blocking (High) content findings. A project .env that
 * holds values while git (asked hardened, bundle/git.h) does not ignore it
 * is a warning. Native-config drift
 * (a CLI file that no longer matches what agentstack last wrote) and
 * prompt-injection heuristics are warnings. Plain doctor shares the code
 * with human output and exits 1 when it reports an error too (0 with only
 * warnings); without a manifest it reports needs_setup and exits 0.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/adapters.h"
#include "adapters/engine.h"
#include "adapters/merge.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "base/term.h"
#include "base/url.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/literal_secret.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "bundle/scan.h"
#include "cli/cli.h"
#include "guard/guard.h"
#include "library/library.h"
#include "library/sync.h"
#include "oauth/oauth.h"
#include "onboard/onboard.h"
#include "policy/policy.h"
#include "trust/trust.h"

int cmd_doctor(int argc, char **argv, struct cli_ctx *ctx);

enum lvl { L_OK, L_INFO, L_WARN, L_ERR };

struct dline {
    enum lvl level;
    char *msg;
    char *fix; /* runnable command or edit, or NULL */
};

struct dsec {
    const char *title;
    VEC(struct dline) lines;
    char *summary; /* folded form when clean */
    bool ran;      /* the section checked something */
};

struct doc {
    struct dsec sec[8];
    size_t nsec;
    size_t errors, warnings, notes;
    const char *next_cmd;
    char *next_why;
    char *next_buf;
    bool next_is_err;
};

enum { S_MANIFEST, S_SECRETS, S_DRIFT, S_SCAN, S_REPRO, S_MPOLICY, S_POLICY, S_COUNT };

static void add(struct doc *d, int s, enum lvl l, const char *fix, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add(struct doc *d, int s, enum lvl l, const char *fix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf m = SB_INIT;
    sb_vaddf(&m, fmt, ap);
    va_end(ap);
    struct dline x = {l, sb_detach(&m, NULL), fix ? xstrdup(fix) : NULL};
    vec_push(&d->sec[s].lines, x);
    d->sec[s].ran = true;
    if (l == L_ERR)
        d->errors++;
    else if (l == L_WARN)
        d->warnings++;
    /* next: the first error's fix; a warning's only while there is no error */
    bool take = fix && (l == L_ERR ? !d->next_is_err : l == L_WARN && !d->next_cmd && !d->next_buf);
    if (take) {
        free(d->next_buf);
        free(d->next_why);
        d->next_buf = xstrdup(fix);
        d->next_why = xstrdup(x.msg);
        d->next_is_err = l == L_ERR;
    }
}

/* True when section s holds nothing worse than a note. */
static bool section_clean(const struct doc *d, int s)
{
    for (size_t i = 0; i < d->sec[s].lines.n; i++)
        if (d->sec[s].lines.v[i].level > L_INFO)
            return false;
    return true;
}

static void summary(struct doc *d, int s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void summary(struct doc *d, int s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    strbuf m = SB_INIT;
    sb_vaddf(&m, fmt, ap);
    va_end(ap);
    free(d->sec[s].summary);
    d->sec[s].summary = sb_detach(&m, NULL);
    d->sec[s].ran = true;
}

/* ---- sections ------------------------------------------------------------ */

/* Where each reference would resolve, by presence only (status
 * surfaces locate, they never read a value): the environment, the keychain's
 * item names (attributes only; --ci never asks a keychain), the file store
 * and the project .env. A reference held in the file store is flagged: the
 * value sits in plaintext on disk — a warning where a keychain
 * answers (move it), a note where none does (the deliberate headless
 * choice). A file store that is not private is an error: the chain refuses
 * to read it. */
static void check_secrets(struct doc *d, const struct manifest *m, const struct bundle_paths *p,
                          const char *home, struct library *lib, const struct pol_ruleset *rs,
                          bool ci)
{
    /* What apply would deliver: the library servers a toolset names count
     * as much as [servers] (their ${REF}s block the write just the same). */
    struct adp_effective eff;
    adp_effective_servers(m, home, lib ? lib_pin_lookup : NULL, lib, &eff);
    if (section_clean(d, S_MANIFEST))
        for (size_t i = 0; i < eff.problems.n; i++)
            add(d, S_SECRETS, L_WARN, NULL, "the secrets of a library server are not known: %s",
                eff.problems.v[i]);
    strvec all = STRVEC_INIT;
    adp_effective_refs(m, &eff, &all);
    struct onb_locator l;
    onb_locator_init(&l, p->env_file, !ci && all.n > 0);
    strvec_clear(&all);
    const char *store = l.file_store ? l.file_store : "$AGENTSTACK_HOME/secrets.env";
    /* The chain refuses a file store that is not private to this user
     * (secrets/sec_chain.c): every secret in it would fail at apply. */
    struct stat fst;
    bool store_ok = true;
    if (l.file_store && lstat(l.file_store, &fst) == 0 && S_ISREG(fst.st_mode) &&
        ((fst.st_mode & 077) || fst.st_uid != geteuid())) {
        store_ok = false;
        char *fix = xasprintf("chmod 600 %s", l.file_store);
        add(d, S_SECRETS, L_ERR, fix,
            "the file store %s is not private to you (mode %03o, owner %ld) — none of its "
            "secrets resolve until it is",
            l.file_store, (unsigned)(fst.st_mode & 0777), (long)fst.st_uid);
        free(fix);
    }
    /* Values in a project .env that git would commit: init refuses to put
     * them there, but a hand-made .env, a "!.env" rule or a symlinked
     * .agentstack added later is only caught here. */
    size_t nvals = 0;
    strbuf why = SB_INIT;
    struct as_err gerr = AS_ERR_INIT;
    int exposed = onb_dotenv_exposed(p->env_file, &nvals, &why, &gerr);
    if (exposed != 0) {
        char *real = realpath(p->env_file, NULL);
        bool moved = real && strcmp(real, p->env_file) != 0;
        char *fix = xasprintf("make git ignore it (git check-ignore -v %s shows the rule that "
                              "decides), or move the values out: agentstack secret set NAME",
                              real ? real : p->env_file);
        if (exposed > 0)
            add(d, S_SECRETS, L_WARN, fix,
                "%s%s%s%s holds %zu secret value%s and git does not ignore it (%s) — "
                "`git add` would commit them",
                p->env_file, moved ? " (really " : "", moved ? real : "", moved ? ")" : "", nvals,
                nvals == 1 ? "" : "s", why.buf);
        else
            add(d, S_SECRETS, L_WARN, NULL,
                "%s holds %zu secret value%s; whether git ignores it is unknown: %s", p->env_file,
                nvals, nvals == 1 ? "" : "s", gerr.msg);
        free(fix);
        free(real);
    }
    sb_release(&why);
    size_t total = 0, missing = 0;
    strvec seen = STRVEC_INIT;
    for (size_t i = 0; i < eff.servers.n; i++) {
        const struct mf_server *s = eff.servers.v[i];
        const char *kind = eff.library_refs.v[i][0] ? "library server" : "server";
        strvec refs = STRVEC_INIT;
        ref_server_refs(s, &refs);
        for (size_t j = 0; j < refs.n; j++) {
            const char *r = refs.v[j];
            if (rs && !pol_secret(rs, s->name, r, NULL))
                continue; /* refused by policy: reported under Policy */
            if (strvec_find(&seen, r) >= 0)
                continue;
            strvec_push(&seen, r);
            total++;
            const char *where = onb_locate(&l, r, NULL);
            if (where && strcmp(where, "file") == 0 && store_ok) {
                char *fix = xasprintf("agentstack secret set %s && agentstack secret rm %s "
                                      "--store file",
                                      r, r);
                add(d, S_SECRETS, l.kc_ok ? L_WARN : L_INFO, l.kc_ok ? fix : NULL,
                    "${%s} is held in the file store %s — plaintext on disk%s", r, store,
                    ci        ? " (--ci never asks a keychain)"
                    : l.kc_ok ? "; the OS keychain is reachable, move it there"
                              : " (no keychain answered here)");
                free(fix);
            }
            if (where)
                continue;
            missing++;
            char *fix = xasprintf("agentstack secret set %s", r);
            add(d, S_SECRETS, L_ERR, fix,
                "${%s} not found (%s '%s') — looked in the environment, %s%s and %s%s%s%s", r, kind,
                s->name, l.kc_ok ? "the OS keychain, " : "", store, p->env_file,
                ci        ? " (a keychain is never read in --ci)"
                : l.kc_ok ? ""
                          : " (the OS keychain could not be asked: ",
                !ci && !l.kc_ok ? l.kc_why : "", !ci && !l.kc_ok ? ")" : "");
            free(fix);
        }
        strvec_clear(&refs);
    }
    if (!missing && section_clean(d, S_SECRETS))
        summary(d, S_SECRETS,
                total ? "%zu secret reference%s resolved (presence only)" : "no secret references",
                total, total == 1 ? "" : "s");
    strvec_clear(&seen);
    onb_locator_free(&l);
    adp_effective_free(&eff);
}

/* HTTP servers whose OAuth login must be made again (docs/oauth.md). */
static void check_logins(struct doc *d, const struct manifest *m)
{
    for (size_t i = 0; i < m->servers.n; i++) {
        const struct mf_server *s = &m->servers.v[i];
        strbuf why = SB_INIT, fix = SB_INIT;
        if (s->type == MF_SERVER_HTTP && oauth_needs_login(s->name, &why)) {
            oauth_login_command(s->name, &fix);
            add(d, S_SECRETS, L_WARN, fix.buf, "server '%s' needs an OAuth login (%s)", s->name,
                why.buf);
        }
        sb_release(&why);
        sb_release(&fix);
    }
}

/* Host of an http(s) URL (base/url.h), or NULL. */
static char *url_host(const char *url)
{
    struct url_authority a;
    const char *why;
    return url_authority(url, &a, &why) == 0 ? xstrdup(a.host) : NULL;
}

/* ---- [policy] require / forbid / allowed_sources ------------------------- */

/* One named thing the manifest declares, for forbid and allowed_sources. */
struct named {
    const char *kind;  /* "server", "skill", ... */
    const char *table; /* "servers", "skills", ... */
    const char *name;
    const char *git; /* git URL it comes from, or NULL */
    struct mf_pos pos;
};
typedef VEC(struct named) named_list;

static void named_push(named_list *v, const char *kind, const char *table, const char *name,
                       const char *git, struct mf_pos pos)
{
    struct named x = {kind, table, name, git, pos};
    vec_push(v, x);
}

/* The URL of a pack ledger id git:<url>@<tag>[#<subdir>], or
 * NULL when the source is not a git id. */
static char *pack_url(const char *source)
{
    if (strncmp(source, "git:", 4) != 0)
        return NULL;
    const char *u = source + 4;
    size_t n = strcspn(u, "#");
    const char *at = NULL;
    for (size_t i = 0; i < n; i++)
        if (u[i] == '@')
            at = u + i;
    if (at && at + 1 < u + n && !memchr(at + 1, '/', (size_t)(u + n - at - 1)) &&
        !memchr(at + 1, ':', (size_t)(u + n - at - 1)))
        n = (size_t)(at - u);
    return n ? xstrndup(u, n) : NULL;
}

static void collect_named(const struct manifest *m, named_list *out, strvec *owned)
{
    for (size_t i = 0; i < m->servers.n; i++)
        named_push(out, "server", "servers", m->servers.v[i].name, NULL, m->servers.v[i].pos);
    for (size_t i = 0; i < m->skills.n; i++)
        named_push(out, "skill", "skills", m->skills.v[i].name, m->skills.v[i].git,
                   m->skills.v[i].pos);
    for (size_t i = 0; i < m->instructions.n; i++)
        named_push(out, "instruction", "instructions", m->instructions.v[i].name, NULL,
                   m->instructions.v[i].pos);
    for (size_t i = 0; i < m->extensions.n; i++)
        named_push(out, "extension", "extensions", m->extensions.v[i].name, m->extensions.v[i].git,
                   m->extensions.v[i].pos);
    for (size_t i = 0; i < m->workflows.n; i++)
        named_push(out, "workflow", "workflows", m->workflows.v[i].name, m->workflows.v[i].git,
                   m->workflows.v[i].pos);
    if (m->packs && m->packs->type == TOML_TABLE) {
        for (size_t i = 0; i < m->packs->u.tab.n; i++) {
            const toml_kv *kv = &m->packs->u.tab.kv[i];
            const toml_value *src = toml_get(kv->val, "source");
            char *url = src && src->type == TOML_STRING ? pack_url(src->u.str.s) : NULL;
            if (url)
                strvec_push_take(owned, url);
            struct mf_pos pos = {.file = m->path, .line = kv->line, .col = kv->col};
            named_push(out, "pack", "packs", kv->key, url, pos);
        }
    }
}

/* Where a layer's lists live, for messages. */
static const char *layer_where(const struct pol_layer *l, strbuf *buf)
{
    sb_reset(buf);
    if (l->id == POL_MACHINE)
        sb_adds(buf, "machine policy — ~/.agentstack/agentstack.toml");
    else
        sb_addf(buf, "project policy — %s", l->path ? l->path : "the manifest");
    return buf->buf;
}

/* allowed_sources is matched as `add from git:` matches it (library/pack.c):
 * against git:<url>, its scheme-less form, and the URL as written. */
static bool source_allowed(const strvec *allowed, const char *url, char **bare_out)
{
    const char *u = strncmp(url, "git:", 4) == 0 ? url + 4 : url;
    char *full = xasprintf("git:%s", u);
    const char *p = strstr(u, "://");
    char *bare = xasprintf("git:%s", p ? p + 3 : u);
    bool ok = false;
    for (size_t i = 0; i < allowed->n && !ok; i++) {
        const char *pat = allowed->v[i];
        size_t pl = strlen(pat);
        ok = pol_glob_match(pat, pl, full, strlen(full), 0) ||
             pol_glob_match(pat, pl, bare, strlen(bare), 0) ||
             pol_glob_match(pat, pl, u, strlen(u), 0);
    }
    free(full);
    *bare_out = bare;
    return ok;
}

/* Doctor's Policy section covers require/forbid/allowed_sources; two of
 * them have a defined meaning (docs/library.md): `forbid` names what may not be
 * installed (checked here against every name the manifest declares), and
 * `allowed_sources` where git content may come from (checked against every
 * git source: skills, extensions, workflows, installed packs). Both layers'
 * lists apply, as `add from git:` applies the machine's allowed_sources.
 * `require` has no defined meaning yet: it is reported, never
 * guessed at. */
static void check_lists(struct doc *d, const struct manifest *m, const struct pol_layer *proj,
                        const struct pol_layer *machine)
{
    named_list items = VEC_INIT;
    strvec owned = STRVEC_INIT;
    strbuf where = SB_INIT;
    collect_named(m, &items, &owned);
    const struct pol_layer *layers[2] = {machine, proj};
    for (int li = 0; li < 2; li++) {
        const struct pol_layer *l = layers[li];
        if (!l)
            continue;
        const char *policy_file =
            l->id == POL_MACHINE ? "~/.agentstack/agentstack.toml" : (l->path ? l->path : m->path);
        for (size_t r = 0; r < l->forbid.n; r++) {
            const char *pat = l->forbid.v[r];
            for (size_t i = 0; i < items.n; i++) {
                const struct named *x = &items.v[i];
                if (!pol_glob_match(pat, strlen(pat), x->name, strlen(x->name), 0))
                    continue;
                char *fix = xasprintf("remove [%s.%s] from %s, or drop \"%s\" from [policy] "
                                      "forbid in %s",
                                      x->table, x->name, x->pos.file ? x->pos.file : m->path, pat,
                                      policy_file);
                add(d, S_POLICY, L_ERR, fix,
                    "%s:%u:%u: %s '%s' is forbidden by [policy] forbid rule \"%s\" (%s)",
                    x->pos.file ? x->pos.file : m->path, x->pos.line, x->pos.col, x->kind, x->name,
                    pat, layer_where(l, &where));
                free(fix);
            }
        }
        if (!l->allowed_sources.n)
            continue;
        for (size_t i = 0; i < items.n; i++) {
            const struct named *x = &items.v[i];
            char *bare = NULL;
            if (!x->git || source_allowed(&l->allowed_sources, x->git, &bare)) {
                free(bare);
                continue;
            }
            char *fix = xasprintf("add a matching pattern (e.g. \"%s\") to [policy] "
                                  "allowed_sources in %s, or take the %s from an allowed source",
                                  bare, policy_file, x->kind);
            add(d, S_POLICY, L_ERR, fix,
                "%s:%u:%u: %s '%s' comes from %s, which is not in [policy] allowed_sources "
                "(%s)",
                x->pos.file ? x->pos.file : m->path, x->pos.line, x->pos.col, x->kind, x->name,
                x->git, layer_where(l, &where));
            free(fix);
            free(bare);
        }
    }
    for (int li = 0; li < 2; li++) {
        if (layers[li] && layers[li]->require.n) {
            add(d, S_POLICY, L_INFO, NULL,
                "[policy] require (%zu entr%s, %s) is not checked: it has no defined "
                "meaning yet",
                layers[li]->require.n, layers[li]->require.n == 1 ? "y" : "ies",
                layer_where(layers[li], &where));
            d->notes++;
        }
    }
    sb_release(&where);
    strvec_clear(&owned);
    vec_free(&items);
}

static void check_policy(struct doc *d, const struct manifest *m, struct pol_layer *machine,
                         enum pol_machine_state mst, const char *machine_err,
                         const char *machine_hint, struct pol_ruleset **rs_out)
{
    static const char *const dims[] = {"tools", "egress", "secrets"};
    struct as_err err = AS_ERR_INIT;
    if (mst == POL_BLOCKED)
        add(d, S_POLICY, L_ERR,
            machine_hint[0] ? machine_hint
                            : "fix ~/.agentstack/agentstack.toml (the error names the line)",
            "machine policy BLOCKED — %s", machine_err);
    struct pol_layer *proj = pol_layer_from_toml(m->policy, m->path, POL_PROJECT, &err);
    if (!proj) {
        char buf[4096];
        add(d, S_POLICY, L_ERR, err.hint[0] ? err.hint : NULL, "%s",
            as_err_str(&err, buf, sizeof buf));
        return;
    }
    for (int dim = 0; dim < POL_NKEYED; dim++)
        for (size_t k = 0; k < proj->keyed[dim].keys.n; k++) {
            const struct pol_key *key = &proj->keyed[dim].keys.v[k];
            if (strcmp(key->name, "*") != 0 && !manifest_server(m, key->name)) {
                char *fix = xasprintf("rename the key in [policy.%s] to a server of the "
                                      "manifest, or to \"*\"",
                                      dims[dim]);
                add(d, S_POLICY, L_ERR, fix,
                    "%s:%u:%u: [policy.%s] '%s' — no such server in the manifest", m->path,
                    key->line, key->col, dims[dim], key->name);
                free(fix);
            }
        }
    check_lists(d, m, proj, mst == POL_BLOCKED ? NULL : machine);
    strvec lint = STRVEC_INIT;
    if (machine)
        pol_machine_lint(machine, &lint);
    for (size_t i = 0; i < lint.n; i++)
        add(d, S_POLICY, L_WARN, "add the same deny under the \"*\" key of the machine file", "%s",
            lint.v[i]);
    strvec_clear(&lint);
    const char *home = getenv("HOME");
    struct pol_ruleset *rs =
        mst == POL_BLOCKED ? NULL : pol_compile(machine, proj, home ? home : "/", &err);
    if (!rs && mst != POL_BLOCKED) {
        char buf[4096];
        add(d, S_POLICY, L_ERR, NULL, "%s", as_err_str(&err, buf, sizeof buf));
    }
    size_t refused = 0;
    for (size_t i = 0; rs && i < m->servers.n; i++) {
        const struct mf_server *s = &m->servers.v[i];
        strvec refs = STRVEC_INIT;
        ref_server_refs(s, &refs);
        for (size_t j = 0; j < refs.n; j++) {
            struct pol_decision dec;
            if (pol_secret(rs, s->name, refs.v[j], &dec))
                continue;
            strbuf t = SB_INIT;
            pol_decision_text(&dec, &t);
            char *fix = xasprintf("remove ${%s} from [servers.%s] in %s (the machine floor "
                                  "cannot be loosened by a project)",
                                  refs.v[j], s->name, s->pos.file ? s->pos.file : m->path);
            add(d, S_POLICY, L_ERR, fix, "%s:%u:%u: server '%s' may not read ${%s} — %s",
                s->pos.file ? s->pos.file : m->path, s->pos.line, s->pos.col, s->name, refs.v[j],
                t.buf);
            free(fix);
            sb_release(&t);
            refused++;
        }
        strvec_clear(&refs);
        if (s->type == MF_SERVER_HTTP && s->url && ref_url_host_known(s->url)) {
            char *host = url_host(s->url);
            struct pol_decision dec;
            if (host && !pol_egress(rs, s->name, host, 0, &dec)) {
                strbuf t = SB_INIT;
                pol_decision_text(&dec, &t);
                char *fix = xasprintf("point [servers.%s] url at an allowed host, or ask the "
                                      "machine owner",
                                      s->name);
                add(d, S_POLICY, L_ERR, fix,
                    "%s:%u:%u: server '%s' contacts %s — ✗ BLOCKED by [policy.egress] at "
                    "write/spawn time: %s",
                    s->pos.file ? s->pos.file : m->path, s->pos.line, s->pos.col, s->name, host,
                    t.buf);
                free(fix);
                sb_release(&t);
                refused++;
            }
            free(host);
        }
    }
    if (section_clean(d, S_POLICY) && mst != POL_BLOCKED && rs)
        summary(d, S_POLICY, "the effective ruleset allows every declared secret and host");
    pol_layer_free(proj);
    *rs_out = rs;
    (void)refused;
}

/* An instruction body with a managed-region marker line: apply refuses to
 * render it (the line would end the region early), so doctor says where
 * it is before apply does. Library bodies are checked when compiled. */
static void check_markers(struct doc *d, const pin_items *items)
{
    for (size_t i = 0; i < items->n; i++) {
        const struct pin_item *it = &items->v[i];
        if ((it->kind != PIN_INSTRUCTION && it->kind != PIN_VARIANT) || it->library || !it->fs_path)
            continue;
        strbuf body = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        const char *which = NULL;
        size_t at = 0;
        if (fs_read_file(it->fs_path, (size_t)4 << 20, 0, &body, &err) == 0)
            at = adp_md_marker_line(body.buf, body.len, &which);
        if (at)
            add(d, S_MANIFEST, L_ERR, "remove that line from the fragment, or indent it",
                "%s '%s': %s:%zu is a managed-region marker line (%s) — apply refuses to "
                "render it",
                pin_kind_name(it->kind), it->name, it->fs_path, at, which);
        sb_release(&body);
    }
}

/* Library items (linked sources, qualified `<source>:<name>`) are pinned and
 * verified through the library's own resolver, where `lock` pinned them;
 * lib NULL (sources.toml unusable) leaves the implicit local source only. */
static void check_lock(struct doc *d, const struct manifest *m, const struct bundle_paths *p,
                       const struct manifest_snapshot *snap, const char *home, struct library *lib,
                       bool *locked)
{
    struct as_err err = AS_ERR_INIT;
    struct lockfile *lock = NULL;
    *locked = snap->has_lock;
    if (snap->has_lock) {
        lock = lockfile_parse(p->lock, snap->lock.buf, snap->lock.len, &err);
        if (!lock) {
            char buf[4096];
            add(d, S_REPRO, L_ERR, "agentstack lock --write", "%s",
                as_err_str(&err, buf, sizeof buf));
            return;
        }
    }
    pin_items items = VEC_INIT;
    struct pin_opts o = {
        .home = home, .lock = lock, .library = lib ? lib_pin_lookup : NULL, .library_ctx = lib};
    if (pin_collect(m, &o, &items, &err) < 0) {
        char buf[4096];
        add(d, S_REPRO, L_ERR, NULL, "%s", as_err_str(&err, buf, sizeof buf));
        pin_items_free(&items);
        lockfile_free(lock);
        return;
    }
    check_markers(d, &items);
    const char *fix = "agentstack lock --write   (then review and trust: agentstack trust .)";
    if (!lock && items.n) {
        add(d, S_REPRO, L_ERR, fix,
            "%s does not exist — %zu item%s (skills, servers, instructions, executables) are "
            "not pinned",
            p->lock, items.n, items.n == 1 ? "" : "s");
    }
    size_t ok = 0;
    for (size_t i = 0; lock && i < items.n; i++) {
        struct pin_item *it = &items.v[i];
        strbuf desc = SB_INIT;
        if (it->state == PIN_FAILED) {
            add(d, S_REPRO, L_ERR, fix, "%s '%s': %s", pin_kind_name(it->kind), it->name,
                it->error ? it->error : "cannot be pinned");
            sb_release(&desc);
            continue;
        }
        enum pin_status st = pin_verify_item(lock, it);
        if (st == PIN_MATCHES) {
            ok++;
        } else {
            pin_describe(lock, it, st, &desc);
            const char *where = it->fs_path ? it->fs_path : it->declared_path;
            if (st == PIN_UNAVAILABLE)
                add(d, S_REPRO, L_WARN, "agentstack install", "%s%s%s (not verified)", desc.buf,
                    where ? " — " : "", where ? where : "");
            else
                add(d, S_REPRO, L_ERR, fix, "%s%s%s (lock drift: %s)", desc.buf, where ? " — " : "",
                    where ? where : "", p->lock);
        }
        sb_release(&desc);
    }
    if (lock && lock->manifest_digest) {
        struct digest_blob mb = {snap->has_manifest, snap->manifest.buf, snap->manifest.len};
        struct digest_blob ob = {snap->has_overlay, snap->overlay.buf, snap->overlay.len};
        char hex[SHA256_HEX_LEN + 1];
        digest_manifest_stamp(&mb, &ob, hex);
        if (strcmp(hex, lock->manifest_digest) != 0)
            add(d, S_REPRO, L_WARN, fix,
                "%s is older than the manifest (its manifest stamp differs)", p->lock);
    }
    if (!d->sec[S_REPRO].lines.n)
        summary(d, S_REPRO, lock ? "%zu pin%s match %s" : "nothing to pin", ok, ok == 1 ? "" : "s",
                lock ? p->lock : "");
    pin_items_free(&items);
    lockfile_free(lock);
}

/* Literal secrets in what the repository commits: the manifest file's
 * servers (the local overlay is the user's own and may hold anything), and
 * with --deep the files of its path skills. The one detector lib sync uses
 * (bundle/literal_secret.h). An error under --ci (a credential in a
 * repository is unsafe content), a warning otherwise. */
static void check_literals(struct doc *d, const struct manifest *m,
                           const struct manifest_snapshot *snap, bool ci, bool deep)
{
    enum lvl lvl = ci ? L_ERR : L_WARN;
    struct as_err err = AS_ERR_INIT;
    toml_value *t = snap->has_manifest
                        ? toml_parse(m->path, snap->manifest.buf, snap->manifest.len, &err)
                        : NULL;
    const toml_value *servers = t ? toml_get(t, "servers") : NULL;
    for (size_t i = 0; servers && servers->type == TOML_TABLE && i < toml_len(servers); i++) {
        const toml_kv *kv = toml_entry(servers, i);
        lsec_findings f = VEC_INIT;
        lsec_check_server_table(kv->val, &f);
        for (size_t k = 0; k < f.n; k++)
            add(d, S_SECRETS, lvl,
                "store it with `agentstack secret set NAME` and write ${NAME} in its place",
                "%s:%u:%u: server '%s' holds a literal secret: '%s' in %s (%s)", m->path, kv->line,
                kv->col, kv->key, f.v[k].key, f.v[k].where, lsec_why_text(f.v[k].why));
        lsec_findings_free(&f);
    }
    toml_free(t);
    for (size_t i = 0; deep && i < m->skills.n; i++) {
        const struct mf_skill *sk = &m->skills.v[i];
        strbuf dir = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        lib_secret_hits hits = VEC_INIT;
        if (sk->source == MF_SOURCE_PATH && sk->path &&
            manifest_item_path(m, sk->path, NULL, &dir, &e2) == 0 && fs_is_dir(dir.buf) &&
            lib_secret_scan_tree(dir.buf, &hits, &e2) == 0)
            for (size_t k = 0; k < hits.n; k++)
                add(d, S_SECRETS, lvl, "replace the value with a ${REF} the skill's reader sets",
                    "skill '%s': %s/%s holds a literal secret ('%s', %s)", sk->name, sk->path,
                    hits.v[k].file, hits.v[k].key, lsec_why_text(hits.v[k].why));
        lib_secret_hits_free(&hits);
        sb_release(&dir);
    }
}

static void check_scan(struct doc *d, const struct manifest *m, const char *home,
                       struct library *lib, bool deep)
{
    if (!deep) {
        add(d, S_SCAN, L_INFO, "agentstack doctor --deep", "not scanned (reads every skill body)");
        d->notes++;
        return;
    }
    struct scan_report r;
    scan_report_init(&r);
    struct as_err err = AS_ERR_INIT;
    if (scan_bundle_lib(m, home, lib ? lib_pin_lookup : NULL, lib, &r, &err) < 0) {
        char buf[4096];
        add(d, S_SCAN, L_ERR, NULL, "content scan failed: %s", as_err_str(&err, buf, sizeof buf));
        scan_report_free(&r);
        return;
    }
    for (size_t i = 0; i < r.v.n; i++) {
        const struct scan_finding *f = &r.v.v[i];
        strbuf t = SB_INIT;
        scan_finding_format(f, &t);
        add(d, S_SCAN, f->sev == SCAN_HIGH ? L_ERR : L_WARN, f->fix, "%s%s%s",
            f->item ? f->item : "", f->item ? ": " : "", t.buf);
        sb_release(&t);
    }
    for (size_t i = 0; i < r.notes.n; i++) {
        add(d, S_SCAN, L_INFO, NULL, "%s", r.notes.v[i]);
        d->notes++;
    }
    if (!r.v.n)
        summary(d, S_SCAN, "no hidden-unicode or injection findings (%zu file%s)", r.files,
                r.files == 1 ? "" : "s");
    scan_report_free(&r);
}

/* A CLI that connect registered the gateway in runs the binary it was
 * given: gone (a rebuild elsewhere, a `make clean`), that CLI has no
 * servers at all. An error, with the fix. */
static void check_gateway_binaries(struct doc *d, const struct adp_registry *reg)
{
    json_t *ledger = NULL;
    struct as_err err = AS_ERR_INIT;
    if (adp_ledger_load(&ledger, &err) != 0)
        return;
    const char *key;
    json_t *e;
    json_object_foreach(json_object_get(ledger, "targets"), key, e)
    {
        const char *cmd = json_string_value(json_object_get(e, "gateway_command"));
        if (!cmd || !json_object_get(e, "gateway") || strstr(key, "@project:"))
            continue;
        struct stat st;
        if (stat(cmd, &st) == 0 && S_ISREG(st.st_mode) && access(cmd, X_OK) == 0)
            continue;
        const struct adp_desc *a = adp_registry_find(reg, key);
        add(d, S_DRIFT, L_ERR,
            "agentstack self link (from the build you use), then: agentstack connect --all "
            "--write",
            "%s runs the gateway as %s, which is gone or not executable — that CLI gets no "
            "servers",
            a ? a->display : key, cmd);
    }
    json_decref(ledger);
}

/* One delivery per server (docs/adapters.md, "Where servers go"): a CLI
 * that holds the gateway and also a direct entry for a server the gateway
 * serves runs that server outside policy and audit. An error, with the
 * fix (apply prunes such entries from a CLI served live). */
static void check_live_duplicates(struct doc *d, const struct adp_registry *reg,
                                  const struct manifest *m)
{
    adp_live_dups dups = VEC_INIT;
    struct as_err err = AS_ERR_INIT;
    if (adp_live_duplicates(reg, m, m->project_root, &dups, &err) == 0)
        for (size_t i = 0; i < dups.n; i++) {
            /* apply prunes what it rendered, and in a project file any entry
             * for a served server; a hand-added entry in a user file is the
             * user's to take out. */
            strbuf fix = SB_INIT;
            if (!dups.v[i].global)
                sb_adds(&fix, "agentstack apply --write");
            else if (dups.v[i].ours)
                sb_adds(&fix, "agentstack apply --scope global --write");
            else
                sb_addf(&fix, "remove '%s' from %s (agentstack did not write it and leaves it)",
                        dups.v[i].name, dups.v[i].path);
            add(d, S_DRIFT, L_ERR, fix.buf,
                "%s holds '%s' directly beside the gateway (%s) — the CLI runs it outside "
                "policy and audit",
                dups.v[i].display, dups.v[i].name, dups.v[i].path);
            sb_release(&fix);
        }
    adp_live_dups_free(&dups);
}

/* Native-config drift comes from the adapters' own report (the same one
 * `diff` uses), which also covers the gateway entries `connect` wrote into
 * the CLIs' user files. Always a warning, never an error: the
 * project still verifies; the file on disk just is not what we last wrote. */
static void check_drift(struct doc *d, const struct manifest *m)
{
    struct as_err err = AS_ERR_INIT;
    struct adp_registry reg = {0};
    if (adp_registry_load(&reg, true, &err) < 0) {
        add(d, S_DRIFT, L_WARN, NULL, "cannot load the adapter descriptors: %s", err.msg);
        return;
    }
    adp_drift_list drift = VEC_INIT;
    size_t checked = 0;
    if (adp_drift_report(&reg, m->path, m->project_root, &drift, &checked, &err) < 0) {
        char buf[4096];
        add(d, S_DRIFT, L_WARN, err.hint[0] ? err.hint : NULL,
            "cannot read the ownership ledger: %s", as_err_str(&err, buf, sizeof buf));
    } else {
        for (size_t i = 0; i < drift.n; i++)
            add(d, S_DRIFT, L_WARN, "agentstack diff", "%s", drift.v[i].line);
        if (!drift.n)
            summary(d, S_DRIFT,
                    checked ? "%zu rendered file%s match what agentstack wrote"
                            : "nothing rendered for this project yet",
                    checked, checked == 1 ? "" : "s");
    }
    adp_drift_list_free(&drift);
    check_gateway_binaries(d, &reg);
    check_live_duplicates(d, &reg, m);
    adp_registry_free(&reg);
}

/* ---- output -------------------------------------------------------------- */

static const char *mark(enum lvl l)
{
    return l == L_OK ? "✓" : l == L_INFO ? "·" : l == L_WARN ? "⚠" : "✗";
}

static const char *lvl_name(enum lvl l)
{
    return l == L_OK ? "ok" : l == L_INFO ? "info" : l == L_WARN ? "warn" : "error";
}

static void print_text(const struct doc *d, const char *root, bool all)
{
    term_printf("agentstack doctor — %s\n", root);
    for (size_t s = 0; s < d->nsec; s++) {
        const struct dsec *x = &d->sec[s];
        if (!x->ran)
            continue;
        bool clean = true;
        for (size_t i = 0; i < x->lines.n; i++)
            clean &= x->lines.v[i].level <= L_INFO;
        if (clean && x->summary && !x->lines.n) {
            term_printf("%s ✓ %s\n", x->title, x->summary);
            continue;
        }
        if (clean && !all && !x->summary) {
            /* informational only */
        }
        term_printf("%s\n", x->title);
        for (size_t i = 0; i < x->lines.n; i++) {
            strbuf m = SB_INIT;
            term_sanitize(&m, x->lines.v[i].msg, strlen(x->lines.v[i].msg));
            term_printf("  %s %s\n", mark(x->lines.v[i].level), m.buf);
            if (x->lines.v[i].fix)
                term_printf("    ↳ %s\n", x->lines.v[i].fix);
            sb_release(&m);
        }
        if (x->summary && clean)
            term_printf("  ✓ %s\n", x->summary);
    }
    term_printf("%zu error%s, %zu warning%s", d->errors, d->errors == 1 ? "" : "s", d->warnings,
                d->warnings == 1 ? "" : "s");
    if (d->notes)
        term_printf(", %zu note%s", d->notes, d->notes == 1 ? "" : "s");
    term_printf(".\n");
}

static json_t *to_json(const struct doc *d, const char *readiness, const char *trust, bool ci,
                       bool locked, bool guard_on, bool mp)
{
    json_t *o = json_object();
    json_object_set_new(o, "schema_version", json_integer(1));
    json_object_set_new(o, "features", json_pack("[s,s,s]", "ci", "deep", "json"));
    json_object_set_new(o, "superseded", json_array());
    json_object_set_new(o, "state", json_string(d->errors ? "needs_attention" : "ready"));
    json_object_set_new(o, "readiness", json_string(readiness));
    json_object_set_new(o, "next_action", d->next_buf ? json_string(d->next_buf) : json_null());
    json_object_set_new(o, "next_step", d->next_why ? json_string(d->next_why) : json_null());
    json_object_set_new(o, "errors", json_integer((json_int_t)d->errors));
    json_object_set_new(o, "warnings", json_integer((json_int_t)d->warnings));
    json_object_set_new(o, "advisories", json_integer((json_int_t)d->notes));
    json_object_set_new(o, "trust", trust ? json_string(trust) : json_null());
    json_object_set_new(o, "mode", json_string(ci ? "ci" : "default"));
    json_object_set_new(o, "locked", json_boolean(locked));
    json_object_set_new(o, "probe", json_null());
    json_object_set_new(o, "protection",
                        json_pack("{s:b,s:b}", "guard", guard_on, "machine_policy", mp));
    json_t *secs = json_array();
    for (size_t s = 0; s < d->nsec; s++) {
        const struct dsec *x = &d->sec[s];
        json_t *lines = json_array();
        for (size_t i = 0; i < x->lines.n; i++) {
            json_t *l = json_pack("{s:s,s:s}", "level", lvl_name(x->lines.v[i].level), "msg",
                                  x->lines.v[i].msg);
            if (x->lines.v[i].fix)
                json_object_set_new(l, "fix", json_string(x->lines.v[i].fix));
            json_array_append_new(lines, l);
        }
        bool clean = true;
        for (size_t i = 0; i < x->lines.n; i++)
            clean &= x->lines.v[i].level <= L_INFO;
        if (x->summary && clean)
            json_array_append_new(lines, json_pack("{s:s,s:s}", "level", "ok", "msg", x->summary));
        json_array_append_new(secs, json_pack("{s:s,s:b,s:o}", "title", x->title, "relevant",
                                              x->ran, "lines", lines));
    }
    json_object_set_new(o, "sections", secs);
    return o;
}

static void doc_free(struct doc *d)
{
    for (size_t s = 0; s < d->nsec; s++) {
        for (size_t i = 0; i < d->sec[s].lines.n; i++) {
            free(d->sec[s].lines.v[i].msg);
            free(d->sec[s].lines.v[i].fix);
        }
        vec_free(&d->sec[s].lines);
        free(d->sec[s].summary);
    }
    free(d->next_buf);
    free(d->next_why);
}

/* ---- the command --------------------------------------------------------- */

struct doctor_args {
    bool ci, deep, all, json;
};

#define CLI_ARGS struct doctor_args
static const struct cli_option doctor_options[] = {
    {OPT_BOOL("ci", 0, ci,
              "the pipeline gate: --all --deep, exit 1 on any error, never prompts or writes")},
    {OPT_BOOL("deep", 0, deep, "hidden Unicode is an error, injection heuristics a warning")},
    {OPT_BOOL("all", 0, all, "every section, clean ones too")},
    {OPT_BOOL("json", 0, json, "one JSON document (schema_version 1) for scripts")},
    {OPT_UNBUILT("live")},
    {OPT_UNBUILT("probe")},
    {OPT_UNBUILT("fix")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_doctor_spec = {
    .name = "doctor",
    .fn = cmd_doctor,
    .summary = "check this project on this machine; --ci is the pipeline gate",
    .synopsis = CLI_LINES("doctor [--ci] [--deep] [--all] [--json]"),
    .description =
        "Each problem comes with the command that fixes it. --ci errors (exit 1): the manifest "
        "does not load or validate, lock drift, policy violations, unresolved required secrets "
        "(by presence: environment, secrets.env, the project's .env) and blocking content "
        "findings. --ci never prompts, never reads a keychain, writes nothing and uses no "
        "network.",
    .options = doctor_options,
    .examples = CLI_LINES("agentstack doctor", "agentstack doctor --ci"),
    .see_also = "status lock trust",
};

int cmd_doctor(int argc, char **argv, struct cli_ctx *ctx)
{
    struct doctor_args a = {0};
    int prc = cli_parse(&cmd_doctor_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&cmd_doctor_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    bool ci = a.ci, deep = a.deep, all = a.all, json = a.json;
    if (ci)
        all = deep = true;
    struct doc d = {0};
    static const char *const titles[S_COUNT] = {"Manifest",     "Secrets",         "Drift",
                                                "Content scan", "Reproducibility", "Machine policy",
                                                "Policy"};
    d.nsec = S_COUNT;
    for (int s = 0; s < S_COUNT; s++)
        d.sec[s].title = titles[s];

    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    strbuf home = SB_INIT;
    if (home_dir(&home, &err) < 0) {
        bundle_paths_free(&p);
        cli_error(&err);
        return EXIT_FAIL;
    }
    if (!p.found) {
        if (ci) {
            discover_require(&p, &err);
            cli_error(&err);
            term_fprintf(stderr, "doctor found 1 error(s) — see report above\n");
        } else if (json) {
            printf("{\"schema_version\":1,\"state\":\"needs_setup\",\"readiness\":\"empty\","
                   "\"next_action\":\"agentstack init\",\"errors\":0,\"warnings\":0}\n");
        } else {
            term_printf(
                "No agentstack manifest here (needs_setup).\nnext: agentstack init   create "
                "a manifest for this project\n");
        }
        bundle_paths_free(&p);
        sb_release(&home);
        return ci ? EXIT_FAIL : EXIT_OK;
    }

    /* machine policy */
    strbuf mpath = SB_INIT;
    enum pol_machine_state mst = POL_UNCONFIGURED;
    struct pol_layer *machine = NULL;
    char mbuf[4096] = "", mhint[sizeof err.hint] = "";
    if (pol_machine_path(&mpath, &err) == 0)
        machine = pol_machine_load(mpath.buf, &mst, &err);
    if (mst == POL_BLOCKED) {
        as_err_str(&err, mbuf, sizeof mbuf);
        snprintf(mhint, sizeof mhint, "%s", err.hint);
        add(&d, S_MPOLICY, L_ERR, err.hint[0] ? err.hint : NULL, "blocked — %s", mbuf);
    } else if (mst == POL_UNCONFIGURED) {
        summary(&d, S_MPOLICY, "unconfigured — no %s, so nothing narrows this project", mpath.buf);
    } else {
        strbuf why = SB_INIT;
        const char *word = pol_machine_word(machine, &why);
        summary(&d, S_MPOLICY, "%s — %s", word, why.buf);
        sb_release(&why);
    }
    as_err_clear(&err);

    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct manifest *m = NULL;
    if (manifest_snapshot_read(&p, &snap, &err) == 0)
        m = manifest_load_snapshot(&p, &snap, &err);
    const char *trust = NULL;
    bool locked = false;
    if (!m) {
        char buf[4096];
        add(&d, S_MANIFEST, L_ERR, err.hint[0] ? err.hint : NULL, "%s",
            as_err_str(&err, buf, sizeof buf));
    } else {
        struct adp_registry reg = {0};
        struct as_err e2 = AS_ERR_INIT;
        const char **ids = NULL;
        size_t nids = 0;
        if (adp_registry_load(&reg, true, &e2) == 0) {
            ids = xcalloc(reg.v.n + 1, sizeof *ids);
            for (size_t i = 0; i < reg.v.n; i++)
                ids[nids++] = reg.v.v[i]->id;
        }
        /* The central library answers for skills a toolset names without a
         * [skills.X] table (init puts imported skills there). */
        struct as_err le = AS_ERR_INIT;
        struct library *lib = lib_open(NULL, &le);
        if (!lib) {
            char buf[4096];
            add(&d, S_MANIFEST, L_WARN, le.hint[0] ? le.hint : NULL,
                "the central library cannot be read (library names do not resolve): %s",
                as_err_str(&le, buf, sizeof buf));
        }
        for (size_t i = 0; lib && i < lib->warnings.n; i++)
            add(&d, S_MANIFEST, L_WARN, NULL, "library: %s", lib->warnings.v[i]);
        struct manifest_env env = {.adapter_ids = ids,
                                   .n_adapter_ids = nids,
                                   .check_paths = true,
                                   .library_has = lib ? lib_manifest_has : NULL,
                                   .library_ctx = lib};
        mf_diags diags = VEC_INIT;
        manifest_validate(m, ids ? &env : NULL, &diags);
        for (size_t i = 0; i < m->warnings.n; i++) {
            strbuf t = SB_INIT;
            mf_diag_message(&m->warnings.v[i], &t);
            add(&d, S_MANIFEST, L_WARN, m->warnings.v[i].fix, "%s", t.buf);
            sb_release(&t);
        }
        for (size_t i = 0; i < diags.n; i++) {
            const struct mf_diag *g = &diags.v[i];
            strbuf t = SB_INIT;
            mf_diag_message(g, &t);
            add(&d, S_MANIFEST, g->sev == MF_ERROR ? L_ERR : L_WARN, g->fix, "%s", t.buf);
            sb_release(&t);
        }
        mf_diags_free(&diags);
        free(ids);
        adp_registry_free(&reg);
        if (!d.sec[S_MANIFEST].lines.n)
            summary(&d, S_MANIFEST, "%s is valid", p.manifest);

        struct pol_ruleset *rs = NULL;
        check_policy(&d, m, machine, mst, mbuf, mhint, &rs);
        check_secrets(&d, m, &p, home.buf, lib, rs, ci);
        check_logins(&d, m);
        check_literals(&d, m, &snap, ci, deep);
        check_lock(&d, m, &p, &snap, home.buf, lib, &locked);
        check_scan(&d, m, home.buf, lib, deep);
        lib_free(lib);
        check_drift(&d, m);
        if (rs)
            pol_ruleset_free(rs);
        struct trust_status st = {0};
        if (trust_check_snapshot(&p, &snap, &st, &e2) == 0)
            trust = trust_state_name(st.state);
        trust_status_release(&st);
    }
    struct guard_config gc;
    guard_config_load(&gc, false);
    bool guard_on = gc.state == GUARD_ON;
    guard_config_free(&gc);

    const char *readiness = d.errors                            ? "needs_attention"
                            : trust && strcmp(trust, "trusted") ? "untrusted"
                            : !locked                           ? "never_activated"
                                                                : "ready";
    if (json) {
        json_t *o = to_json(&d, readiness, trust, ci, locked, guard_on, mst == POL_CURRENT);
        strbuf out = SB_INIT;
        json_dump_pretty(o, &out);
        term_json_visible(&out);
        fputs(out.buf, stdout);
        sb_release(&out);
        json_decref(o);
    } else {
        print_text(&d, p.project_root ? p.project_root : p.base, all);
        term_printf("readiness: %s%s\n", readiness,
                    trust ? (strcmp(trust, "trusted") ? " (untrusted: CI checks never need consent)"
                                                      : " (trusted)")
                          : "");
        if (d.next_buf)
            term_printf("next: %s   %s\n", d.next_buf, d.next_why);
        else if (trust && strcmp(trust, "trusted"))
            term_printf("next: agentstack trust .   review and approve this project on this "
                        "machine\n");
        else
            term_printf("next: agentstack status   everything checks out\n");
    }
    /* An error is exit 1 in both forms (docs/exit-codes.md); --ci differs in
     * what it checks (every section, deep), not in how it exits. */
    int rc = EXIT_OK;
    if (d.errors) {
        term_fprintf(stderr, "doctor found %zu error(s) — see report above\n", d.errors);
        rc = EXIT_FAIL;
    }
    manifest_free(m);
    manifest_snapshot_release(&snap);
    if (machine)
        pol_layer_free(machine);
    doc_free(&d);
    sb_release(&mpath);
    sb_release(&home);
    bundle_paths_free(&p);
    return rc;
}
