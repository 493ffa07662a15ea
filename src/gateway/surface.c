/*
 * Surfaces (see gw_int.h): the one function that derives which upstreams a
 * connection sees from (trust, selection, machine policy), the upstream
 * definitions it builds (secrets resolved through [policy.secrets], the
 * scrubbed environment, pins to re-prove before a spawn), and discovery.
 *
 * Nothing here spawns a process or opens a connection except gw_up_ensure,
 * which only dispatch (a call) and discovery (a search or listing) reach.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/fs.h"
#include "base/sha256.h"
#include "base/toml.h"
#include "base/url.h"
#include "base/xalloc.h"
#include "bundle/codepin.h"
#include "bundle/digest.h"
#include "bundle/store.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"
#include "bundle/ref.h"
#include "gateway/gw_int.h"
#include "oauth/oauth.h"
#include "secrets/backends.h"
#include "secrets/secrets.h"
#include "trust/trust.h"

extern char **environ;

#define GW_DISC_DEADLINE_MS 4000

/* ---- freeing -------------------------------------------------------------- */

static void free_vec_secure(char **v)
{
    if (!v)
        return;
    for (size_t i = 0; v[i]; i++) {
        explicit_bzero(v[i], strlen(v[i]));
        free(v[i]);
    }
    free(v);
}

static void free_secure(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

static void tool_free(struct gw_tool *t)
{
    free(t->server);
    free(t->name);
    free(t->full);
    free(t->desc);
    json_decref(t->schema);
    json_decref(t->extra);
}

static void up_free(struct gw_up *up)
{
    free(up->name);
    free_vec_secure(up->argv);
    free_vec_secure(up->envp);
    free_vec_secure(up->headers);
    oauth_bearer_free(up->oauth);
    free_secure(up->cwd);
    free(up->cwd_rel);
    strvec_clear(&up->secret_names);
    for (size_t i = 0; i < up->secret_vals.n; i++)
        explicit_bzero(up->secret_vals.v[i], strlen(up->secret_vals.v[i]));
    strvec_clear(&up->secret_vals);
    free_secure(up->url);
    free(up->egress_host);
    strvec_clear(&up->unresolved);
    strvec_clear(&up->denied);
    for (size_t i = 0; i < up->pins.n; i++) {
        free(up->pins.v[i].path);
        free(up->pins.v[i].rel);
    }
    vec_free(&up->pins);
    for (size_t i = 0; i < up->tools.n; i++)
        tool_free(&up->tools.v[i]);
    vec_free(&up->tools);
    free(up->log_path);
    gw_jail_release(up);
    gw_nt_up_free(up);
    free(up);
}

static void up_closed(void *ctx, const struct mcp_reply *r)
{
    (void)r;
    struct gw_up *up = ctx;
    struct mcp_client *c = up->client;
    up->client = NULL;
    mcp_client_free(c);
    struct gw *gw = up->gw;
    if (gw->closing)
        gw->closing--;
    up_free(up);
    gw_maybe_finish(gw);
}

void gw_surface_ref(struct gw_surface *sf)
{
    sf->refs++;
}

void gw_surface_unref(struct gw_surface *sf)
{
    if (!sf || --sf->refs > 0)
        return;
    struct gw *gw = sf->gw;
    for (size_t i = 0; i < sf->ups.n; i++) {
        struct gw_up *up = sf->ups.v[i];
        if (up->client && mcp_client_state(up->client) != MCP_ST_IDLE &&
            mcp_client_state(up->client) != MCP_ST_CLOSED) {
            /* The up outlives the surface until its group is gone. */
            up->sf = NULL;
            up->def = NULL;
            gw->closing++;
            mcp_client_shutdown(up->client, GW_KILL_GRACE_MS, up_closed, up);
        } else {
            if (up->client)
                mcp_client_free(up->client);
            up_free(up);
        }
    }
    vec_free(&sf->ups);
    for (size_t i = 0; i < sf->skipped.n; i++) {
        free(sf->skipped.v[i].name);
        free(sf->skipped.v[i].why);
    }
    vec_free(&sf->skipped);
    free(sf->note);
    free(sf->regate_why);
    strvec_clear(&sf->prior);
    free(sf->toolset);
    vec_free(&sf->waiters);
    if (sf->rs)
        pol_ruleset_free(sf->rs);
    if (sf->m)
        manifest_free(sf->m);
    for (size_t i = 0; i < sf->libm.n; i++)
        manifest_free(sf->libm.v[i]);
    vec_free(&sf->libm);
    free(sf);
}

struct gw_up *gw_surface_up(const struct gw_surface *sf, const char *server)
{
    for (size_t i = 0; i < sf->ups.n; i++)
        if (strcmp(sf->ups.v[i]->name, server) == 0)
            return sf->ups.v[i];
    return NULL;
}

struct gw_surface *gw_surface_gated(struct gw *gw, enum gw_gate gate, const char *note)
{
    struct gw_surface *sf = xcalloc(1, sizeof *sf);
    sf->refs = 1;
    sf->gw = gw;
    sf->gate = gate;
    sf->note = note ? xstrdup(note) : NULL;
    return sf;
}

/* ---- building ------------------------------------------------------------- */

struct secret_val {
    char *name;
    strbuf value;
    int state; /* 0 resolved, 1 unresolved, 2 denied */
};

struct resolver {
    VEC(struct secret_val) v;
};

static int lookup_cb(void *ctx, const char *name, strbuf *out, struct as_err *err)
{
    (void)err;
    struct resolver *r = ctx;
    for (size_t i = 0; i < r->v.n; i++)
        if (strcmp(r->v.v[i].name, name) == 0) {
            if (r->v.v[i].state == 0)
                sb_add(out, r->v.v[i].value.buf, r->v.v[i].value.len);
            else
                sb_addf(out, "${%s}", name); /* unresolved refs stay literal */
            return 0;
        }
    sb_addf(out, "${%s}", name);
    return 0;
}

static char *expand(struct resolver *r, const char *s)
{
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    ref_expand(s, lookup_cb, r, &out, &err);
    return sb_detach(&out, NULL);
}

static bool env_allowed(const char *name, size_t n, const strvec *extra)
{
    static const char *const fixed[] = {"PATH",
                                        "HOME",
                                        "USER",
                                        "LOGNAME",
                                        "SHELL",
                                        "LANG",
                                        "TZ",
                                        "TERM",
                                        "TMPDIR",
                                        "SSL_CERT_FILE",
                                        "NODE_EXTRA_CA_CERTS",
                                        "HTTP_PROXY",
                                        "HTTPS_PROXY",
                                        "NO_PROXY",
                                        "http_proxy",
                                        "https_proxy",
                                        "no_proxy",
                                        NULL};
    for (size_t i = 0; fixed[i]; i++)
        if (strlen(fixed[i]) == n && memcmp(fixed[i], name, n) == 0)
            return true;
    if ((n > 3 && memcmp(name, "LC_", 3) == 0) || (n > 4 && memcmp(name, "XDG_", 4) == 0))
        return true;
    for (size_t i = 0; i < extra->n; i++) {
        const char *e = extra->v[i];
        size_t el = strlen(e);
        if (el && e[el - 1] == '*') {
            if (n >= el - 1 && memcmp(name, e, el - 1) == 0)
                return true;
        } else if (el == n && memcmp(e, name, n) == 0) {
            return true;
        }
    }
    return false;
}

/* The scrubbed environment (docs/gateway.md) plus the server's own. */
static char **build_env(struct gw *gw, struct resolver *r, const struct mf_server *def)
{
    strvec env = STRVEC_INIT;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        size_t n = (size_t)(eq - *e);
        bool overridden = false;
        for (size_t i = 0; i < def->env.n; i++)
            if (strlen(def->env.v[i].key) == n && memcmp(def->env.v[i].key, *e, n) == 0)
                overridden = true;
        if (!overridden && env_allowed(*e, n, &gw->passthrough))
            strvec_push(&env, *e);
    }
    for (size_t i = 0; i < def->env.n; i++) {
        char *v = expand(r, def->env.v[i].value);
        strvec_push_take(&env, xasprintf("%s=%s", def->env.v[i].key, v));
        free_secure(v);
    }
    /* NULL would mean "inherit everything" to the client: never hand it one. */
    return env.v ? env.v : xcalloc(1, sizeof(char *));
}

static void add_skip(struct gw_surface *sf, const char *name, const char *family, const char *why)
{
    struct gw_skip k = {xstrdup(name), xstrdup(why), family};
    vec_push(&sf->skipped, k);
}

static void pin_row(struct gw *gw, struct gw_surface *sf, const char *server, const char *why)
{
    if (sf)
        add_skip(sf, server, "pin", why);
    gw_note("server '%s' skipped — %s", server, why);
    strbuf d = SB_INIT;
    sb_addf(&d, "skipped: %s", why);
    gw_audit(gw, server, "pin", "", "denied", d.buf, NULL, NULL, 0);
    sb_release(&d);
}

void gw_pin_drift(const struct gw *gw, const struct gw_exec_pin *pin, strbuf *why)
{
    strbuf rel = SB_INIT;
    if (pin->tree &&
        store_tree_first_change(gw->home, pin->checksum, STORE_CODE_TREE, pin->path, &rel) == 1)
        sb_addf(why, "%s/%s drifted from agentstack.lock since this connection checked it",
                pin->rel, rel.buf);
    else
        sb_addf(why, "%s%s drifted from agentstack.lock since this connection checked it", pin->rel,
                pin->tree ? "/ (a file in it)" : "");
    sb_release(&rel);
}

/* Checks a server's pins; 0 ok (exec pins recorded on up), -1 skipped. A
 * library definition (lib_verified) was already proved against the lock on
 * the very bytes it was built from; only its executables are checked here. */
static int check_pins(struct gw *gw, const struct trust_pins *pins, const struct mf_server *def,
                      struct gw_up *up, bool lib_verified)
{
    bool gated = gw->proj.gated || gw->grant; /* a grant serves only pinned bytes */
    codepin_refs code = VEC_INIT;
    codepin_collect(gw->proj.paths.project_root, def, &code, NULL);
    int rc = 0;
    for (size_t i = 0; pins && i < pins->results.n && rc == 0; i++) {
        const struct trust_pin_result *r = &pins->results.v[i];
        const struct pin_item *it = r->item;
        bool mine = false;
        if (it->kind == PIN_SERVER && strcmp(it->name, def->name) == 0 && !lib_verified)
            mine = true;
        /* Its own code (a cwd that cannot be pinned is reported under the
         * cwd's own name: it is this server's too, and refuses it). */
        for (size_t k = 0; it->kind == PIN_EXECUTABLE && it->sub && k < code.n && !mine; k++)
            mine = strcmp(codepin_kind_name(code.v[k].kind), it->sub) == 0 &&
                   strcmp(code.v[k].rel, it->name) == 0;
        if (it->kind == PIN_EXECUTABLE && it->sub && strcmp(it->sub, "root") == 0)
            for (size_t k = 0; k < def->integrity_roots.n; k++)
                if (strcmp(def->integrity_roots.v[k], it->name) == 0)
                    mine = true;
        if (!mine)
            continue;
        if (r->status == PIN_MATCHES) {
            bool tree = strcmp(it->sub ? it->sub : "", "tree") == 0;
            if (it->kind == PIN_EXECUTABLE && (tree || strcmp(it->sub, "file") == 0) &&
                it->fs_path) {
                struct gw_exec_pin p = {xstrdup(it->fs_path), xstrdup(it->name), tree, {0}};
                memcpy(p.checksum, it->checksum, sizeof p.checksum);
                vec_push(&up->pins, p);
            }
            continue;
        }
        if (r->status == PIN_UNPINNED && !gated)
            continue; /* a named project (--manifest-dir) may run unlocked */
        /* A drifted code tree: name the file that moved (the lock's copy is
         * in the content store), not only the directory. */
        strbuf rel = SB_INIT, msg = SB_INIT;
        const char *locked = pins->lock ? pin_locked_checksum(pins->lock, it) : NULL;
        if (r->status == PIN_DRIFTED && it->kind == PIN_EXECUTABLE && it->sub &&
            strcmp(it->sub, "tree") == 0 && locked && it->fs_path &&
            store_tree_first_change(gw->home, locked, STORE_CODE_TREE, it->fs_path, &rel) == 1)
            sb_addf(&msg, "server code tree '%s': %s/%s drifted from agentstack.lock", it->name,
                    it->name, rel.buf);
        pin_row(gw, up->sf, def->name,
                msg.len      ? msg.buf
                : r->message ? r->message
                             : "pin check failed");
        sb_release(&rel);
        sb_release(&msg);
        rc = -1;
    }
    if (rc == 0 && gated && pins && pins->lock_unreadable) {
        pin_row(gw, up->sf, def->name,
                pins->lock_error ? pins->lock_error : "agentstack.lock unreadable");
        rc = -1;
    }
    codepin_free(&code);
    return rc;
}

static void resolve_refs(struct gw *gw, struct sec_chain *chain, const struct pol_ruleset *rs,
                         const struct mf_server *def, struct resolver *res, struct gw_up *up)
{
    strvec refs = STRVEC_INIT;
    ref_server_refs(def, &refs);
    for (size_t i = 0; i < refs.n; i++) {
        struct secret_val sv = {xstrdup(refs.v[i]), SB_INIT, 0};
        struct pol_decision d;
        if (!pol_secret(rs, def->name, refs.v[i], &d)) {
            /* A denied reference never reaches a store. */
            strbuf why = SB_INIT, detail = SB_INIT;
            pol_decision_text(&d, &why);
            sb_addf(&detail, "blocked: server '%s' may not read ${%s} — %s", def->name, refs.v[i],
                    why.buf);
            gw_note("%s", detail.buf);
            gw_audit(gw, def->name, "secret", "", "denied", detail.buf, d.pattern,
                     pol_by_name(d.by), 0);
            sb_release(&why);
            sb_release(&detail);
            sv.state = 2;
            strvec_push(&up->denied, refs.v[i]);
        } else {
            struct sec_result r;
            if (sec_resolve(chain, refs.v[i], &sv.value, &r) != SEC_FOUND) {
                sv.state = 1;
                strvec_push(&up->unresolved, refs.v[i]);
                up->unresolved_hint = true;
                if (r.status == SEC_FAILED)
                    gw_note("server '%s': ${%s} could not be read (%s)", def->name, refs.v[i],
                            r.why);
            }
        }
        vec_push(&res->v, sv);
    }
    strvec_clear(&refs);
}

static void resolver_free(struct resolver *r)
{
    for (size_t i = 0; i < r->v.n; i++) {
        free(r->v.v[i].name);
        sb_release_secure(&r->v.v[i].value);
    }
    vec_free(&r->v);
}

static struct gw_up *up_build(struct gw *gw, struct gw_surface *sf, struct sec_chain *chain,
                              const struct trust_pins *pins, const struct mf_server *def,
                              bool lib_verified)
{
    struct gw_up *up = xcalloc(1, sizeof *up);
    up->sf = sf;
    up->gw = gw;
    up->name = xstrdup(def->name);
    up->def = def;
    up->http = def->type == MF_SERVER_HTTP;
    if (check_pins(gw, pins, def, up, lib_verified) < 0) {
        up_free(up);
        return NULL;
    }
    struct resolver res = {0};
    resolve_refs(gw, chain, sf->rs, def, &res, up);
    const char *root = sf->m->project_root;
    if (up->http) {
        up->url = expand(&res, def->url ? def->url : "");
        char norm[POL_HOST_MAX + 1];
        unsigned port = 0;
        const char *why = NULL;
        struct pol_decision d;
        /* A URL whose host two readers could read differently is never
         * judged as either: it is not served (base/url.h). */
        struct url_authority ua;
        const char *url_why = NULL;
        if (url_authority(up->url, &ua, &url_why) < 0) {
            strbuf detail = SB_INIT;
            sb_addf(&detail, "skipped: its URL is refused: %s", url_why);
            gw_note("server '%s' %s", def->name, detail.buf);
            add_skip(sf, def->name, "url", detail.buf);
            gw_audit(gw, def->name, "egress", "", "denied", detail.buf, NULL, NULL, 0);
            sb_release(&detail);
            resolver_free(&res);
            up_free(up);
            return NULL;
        }
        port = ua.port;
        bool known = ref_url_host_known(up->url) &&
                     pol_host_normalize(ua.host, strlen(ua.host), norm, &why) == 0;
        int ok = known ? pol_egress(sf->rs, def->name, norm, port, &d)
                       : pol_egress(sf->rs, def->name, "unknown.invalid", 0, &d);
        /* An address for a host is judged as an address too: 0.0.0.0 and
         * [::ffff:0.0.0.0] reach this machine (docs/policy.md "Egress by
         * address"); names are judged at the dial (gw_egress_dial_check). */
        char addr[POL_ADDR_TEXT_MAX];
        if (ok && known)
            ok = gw_egress_literal(sf->rs, def->name, norm, port, addr, &d);
        up->egress_host = known ? xstrdup(norm) : NULL;
        up->egress_port = port;
        if (!ok) {
            strbuf t = SB_INIT, detail = SB_INIT;
            pol_decision_text(&d, &t);
            if (known)
                sb_addf(&detail, "skipped: host %s — %s", norm, t.buf);
            else
                sb_addf(&detail, "skipped: the server's host is unknown while [policy.egress] "
                                 "constrains it");
            gw_note("server '%s' %s", def->name, detail.buf);
            add_skip(sf, def->name, "egress", detail.buf);
            gw_audit(gw, def->name, "egress", "", "denied", detail.buf, known ? d.pattern : NULL,
                     known ? pol_by_name(d.by) : NULL, 0);
            sb_release(&t);
            sb_release(&detail);
            resolver_free(&res);
            up_free(up);
            return NULL;
        }
        strvec h = STRVEC_INIT;
        strbuf bad = SB_INIT;
        for (size_t i = 0; i < def->headers.n && !bad.len; i++) {
            const char *key = def->headers.v[i].key;
            char *v = expand(&res, def->headers.v[i].value);
            /* libcurl sends each string as written: a CR/LF (a resolved
             * secret's included) would add header lines of its choosing.
             * Never name the value: it may be the secret. */
            if (!manifest_header_name_ok(key))
                sb_adds(&bad, "a header name is not an HTTP token (RFC 9110)");
            else if (manifest_header_value_bad(v))
                sb_addf(&bad,
                        "header '%s' holds a control character (CR, LF or another) once "
                        "its ${…} references are resolved",
                        key);
            else
                strvec_push_take(&h, xasprintf("%s: %s", key, v));
            free_secure(v);
        }
        up->headers = h.v ? h.v : xcalloc(1, sizeof(char *));
        if (bad.len) {
            strbuf detail = SB_INIT;
            sb_addf(&detail, "skipped: %s; refusing to send it", bad.buf);
            gw_note("server '%s' %s", def->name, detail.buf);
            add_skip(sf, def->name, "secret", detail.buf);
            gw_audit(gw, def->name, "secret", "", "denied", detail.buf, NULL, NULL, 0);
            sb_release(&detail);
            sb_release(&bad);
            resolver_free(&res);
            up_free(up);
            return NULL;
        }
        sb_release(&bad);
        up->oauth = oauth_bearer_open(def->name, up->url);
    } else {
        strvec argv = STRVEC_INIT;
        strvec_push_take(&argv, expand(&res, def->command ? def->command : ""));
        for (size_t i = 0; i < def->args.n; i++)
            strvec_push_take(&argv, expand(&res, def->args.v[i]));
        up->argv = argv.v;
        up->envp = build_env(gw, &res, def);
        if (def->cwd && def->cwd[0]) {
            char *c = expand(&res, def->cwd);
            up->cwd = c[0] == '/' ? c : xasprintf("%s/%s", root, c);
            if (up->cwd != c)
                free_secure(c);
            if (def->cwd[0] != '/' && !strstr(def->cwd, "${"))
                up->cwd_rel = xstrdup(def->cwd);
        } else {
            up->cwd = xstrdup(root);
        }
        gw_jail_assign(up, sf);
        gw_code_watch(up);
        strbuf sub = SB_INIT, log = SB_INIT, fname = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        sb_adds(&sub, gw->proj.root_sha12 ? gw->proj.root_sha12 : "none");
        /* logs/ and logs/<sha12>/ re-tightened and never a symlink: a refused
         * one leaves the upstream running with its stderr discarded. */
        int ok = home_path(HOME_LOGS_DIR, &log, &err) == 0 && fs_private_dir(log.buf, &err) == 0;
        if (ok) {
            sb_addf(&log, "/%s", sub.buf);
            ok = fs_private_dir(log.buf, &err) == 0;
        }
        if (ok) {
            gw_file_safe(def->name, &fname);
            sb_addf(&log, "/%s.log", fname.buf);
            up->log_path = sb_detach(&log, NULL);
        } else {
            gw_note("server '%s': stderr not logged: %s", def->name, err.msg);
        }
        sb_release(&sub);
        sb_release(&log);
        sb_release(&fname);
    }
    /* Kept to mask them out of our own messages about this upstream (a spawn
     * error names argv[0], a chdir error the cwd): stderr never carries a
     * secret value. */
    for (size_t i = 0; i < res.v.n; i++)
        if (res.v.v[i].state == 0 && res.v.v[i].value.len) {
            strvec_push(&up->secret_names, res.v.v[i].name);
            strvec_push(&up->secret_vals, res.v.v[i].value.buf);
        }
    resolver_free(&res);
    return up;
}

/* msg with every secret value resolved for up replaced by its ${NAME}
 * (sec_mask: no byte of a value is left, even where two overlap). */
static char *up_mask(const struct gw_up *up, const char *msg)
{
    struct sec_masked *v = xcalloc(up->secret_vals.n + 1, sizeof *v);
    for (size_t i = 0; i < up->secret_vals.n; i++)
        v[i] = (struct sec_masked){up->secret_names.v[i], up->secret_vals.v[i]};
    strbuf out = SB_INIT;
    const char *m = msg ? msg : "";
    sec_mask(v, up->secret_vals.n, m, strlen(m), &out);
    free(v);
    return sb_detach(&out, NULL);
}

/* ---- library servers ----------------------------------------------------- */

static int library_path(struct gw *gw, const char *name, strbuf *path, struct as_err *err)
{
    if (gw->o.library_server)
        return gw->o.library_server(name, path, err);
    return pin_library_default(gw->home, PIN_SERVER, name, path);
}

/* A library definition as a one-server model, decoded and checked exactly
 * like an inline [servers.<name>] table (anchored at this project). */
static struct manifest *library_model(struct gw *gw, const char *name, const char *path,
                                      const strbuf *bytes, struct as_err *err)
{
    toml_value *doc = toml_parse(path, bytes->buf, bytes->len, err);
    if (!doc)
        return NULL;
    if (doc->type != TOML_TABLE) {
        toml_free(doc);
        as_err_set(err, "%s is not a TOML table", path);
        return NULL;
    }
    /* Stored bare (lib add-server); a one-server [servers.<name>] file is accepted too. */
    const toml_value *inner = toml_get_path(doc, "servers", name, NULL);
    toml_value *root = toml_new(TOML_TABLE);
    toml_table_set(root, "version", toml_new_int(MANIFEST_VERSION));
    toml_value *servers = toml_new(TOML_TABLE);
    toml_table_set(servers, name, toml_clone(inner && inner->type == TOML_TABLE ? inner : doc));
    toml_table_set(root, "servers", servers);
    toml_free(doc);
    strbuf text = SB_INIT;
    toml_emit(root, &text);
    toml_free(root);
    struct manifest_source src = {0};
    src.kind = MANIFEST_PROJECT;
    src.path = path;
    src.data = text.buf;
    src.len = text.len;
    src.manifest_dir = gw->proj.paths.manifest_dir;
    src.project_root = gw->proj.paths.project_root;
    struct manifest *m = manifest_load_bytes(&src, err);
    sb_release_secure(&text); /* a definition may carry a literal value */
    if (m && !manifest_server(m, name)) {
        manifest_free(m);
        as_err_set(err, "%s defines no server '%s'", path, name);
        return NULL;
    }
    return m;
}

/* The definition of a server the manifest takes from the central library,
 * served only when the bytes read match its lock pin; else a `pin` row and
 * NULL. The model lives as long as the surface. */
static const struct mf_server *library_server(struct gw *gw, struct gw_surface *sf,
                                              const char *name, const struct trust_pins *pins)
{
    if (!pins || pins->lock_unreadable) {
        pin_row(gw, sf, name,
                "a library server, and agentstack.lock cannot be read to check its pin");
        return NULL;
    }
    const struct lock_server *ls = pins->lock ? lockfile_server(pins->lock, name) : NULL;
    strbuf path = SB_INIT, bytes = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    const struct mf_server *def = NULL;
    char buf[2300];
    int found = library_path(gw, name, &path, &err);
    if (found < 0) {
        strbuf why = SB_INIT;
        sb_addf(&why, "its library definition cannot be found: %s",
                as_err_str(&err, buf, sizeof buf));
        pin_row(gw, sf, name, why.buf);
        sb_release(&why);
    } else if (found == 0) {
        pin_row(gw, sf, name, "neither in [servers] nor in the central library");
    } else if (!ls) {
        pin_row(gw, sf, name,
                "a library server that is not pinned in agentstack.lock — a person reviews it "
                "and runs `agentstack lock --write`");
    } else if (fs_read_file(path.buf, MANIFEST_MAX_BYTES, 1, &bytes, &err) < 0) {
        strbuf why = SB_INIT;
        sb_addf(&why, "its library definition cannot be read: %s",
                as_err_str(&err, buf, sizeof buf));
        pin_row(gw, sf, name, why.buf);
        sb_release(&why);
    } else {
        char hex[SHA256_HEX_LEN + 1];
        sha256_hex(bytes.buf, bytes.len, hex);
        if (strcmp(hex, ls->checksum) != 0) {
            strbuf why = SB_INIT;
            sb_addf(&why,
                    "its library definition drifted from agentstack.lock (locked %.12s, current "
                    "%.12s) — a person reviews it and runs `agentstack lock --write`",
                    ls->checksum, hex);
            pin_row(gw, sf, name, why.buf);
            sb_release(&why);
        } else {
            struct manifest *lm = library_model(gw, name, path.buf, &bytes, &err);
            if (!lm) {
                strbuf why = SB_INIT;
                sb_addf(&why, "its library definition cannot be used: %s",
                        as_err_str(&err, buf, sizeof buf));
                pin_row(gw, sf, name, why.buf);
                sb_release(&why);
            } else {
                vec_push(&sf->libm, lm);
                def = manifest_server(lm, name);
            }
        }
    }
    sb_release(&path);
    sb_release_secure(&bytes);
    return def;
}

static void set_note(struct gw_surface *sf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_note(struct gw_surface *sf, const char *fmt, ...)
{
    strbuf s = SB_INIT;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&s, fmt, ap);
    va_end(ap);
    free(sf->note);
    sf->note = sb_detach(&s, NULL);
}

static struct gw_surface *broken(struct gw *gw, const char *what, const struct as_err *err)
{
    char buf[4096];
    strbuf n = SB_INIT;
    sb_addf(&n, "%s, so none of this project's MCP servers are proxied: %s", what,
            as_err_str(err, buf, sizeof buf));
    if (err->hint[0])
        sb_addf(&n, "\nFix: %s", err->hint);
    gw_note("%s", n.buf);
    struct gw_surface *sf = gw_surface_gated(gw, GW_GATE_BROKEN, n.buf);
    sb_release(&n);
    return sf;
}

/* Loads the machine layer and its [gateway] settings. */
static struct pol_layer *machine_layer(struct gw *gw, struct as_err *err)
{
    strbuf path = SB_INIT;
    if (pol_machine_path(&path, err) < 0) {
        sb_release(&path);
        return NULL;
    }
    enum pol_machine_state st;
    struct pol_layer *l = pol_machine_load(path.buf, &st, err);
    sb_release(&path);
    if (!l)
        return NULL;
    gw->max_result = GW_RESULT_MAX_DEFAULT;
    strvec_clear(&gw->passthrough);
    if (st == POL_CURRENT) {
        int absent = 0;
        struct manifest *mm = manifest_load_machine(&absent, err);
        if (!mm && !absent) {
            pol_layer_free(l);
            return NULL;
        }
        if (mm) {
            if (mm->gateway.max_result_bytes > 0)
                gw->max_result = mm->gateway.max_result_bytes;
            for (size_t i = 0; i < mm->gateway.env_passthrough.n; i++)
                strvec_push(&gw->passthrough, mm->gateway.env_passthrough.v[i]);
            manifest_free(mm);
        }
    }
    return l;
}

struct gw_surface *gw_surface_build(struct gw *gw, const struct gw_build_in *in)
{
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_snapshot(&gw->proj.paths, in->snap, &err);
    if (!m)
        return broken(gw, "The project manifest cannot be loaded", &err);
    struct pol_layer *ml = machine_layer(gw, &err);
    if (!ml) {
        manifest_free(m);
        return broken(gw, "The machine policy cannot be used (fail closed)", &err);
    }
    struct pol_ruleset *rs = NULL;
    if (in->ruleset_json) {
        /* A frozen grant: the ruleset the run was admitted under, whatever
         * the policy files say now (the machine file still gives [gateway]). */
        pol_layer_free(ml);
        rs = pol_ruleset_from_json(in->ruleset_json, strlen(in->ruleset_json), &err);
        if (!rs) {
            manifest_free(m);
            return broken(gw, "The grant's frozen ruleset cannot be used", &err);
        }
    } else {
        struct pol_layer *pl = pol_layer_from_toml(m->policy, m->path, POL_PROJECT, &err);
        if (!pl) {
            pol_layer_free(ml);
            manifest_free(m);
            return broken(gw, "The project's [policy] cannot be used", &err);
        }
        const char *home_dir = getenv("HOME");
        rs = pol_compile(ml, pl, home_dir, &err);
        pol_layer_free(ml);
        pol_layer_free(pl);
        if (!rs) {
            manifest_free(m);
            return broken(gw, "The policy cannot be compiled", &err);
        }
    }
    struct gw_surface *sf = gw_surface_gated(gw, GW_GATE_OPEN, NULL);
    sf->m = m;
    sf->rs = rs;
    if (in->trusted && in->digest) {
        sf->has_anchor = true;
        snprintf(sf->anchor, sizeof sf->anchor, "%s", in->digest);
    }
    /* Which servers: the selected toolset, else (fenced) none, else all. */
    strvec names = STRVEC_INIT;
    if (in->servers) {
        if (gw->grant && gw->grant->toolset)
            sf->toolset = xstrdup(gw->grant->toolset);
        for (size_t i = 0; i < in->servers->n; i++)
            strvec_push(&names, in->servers->v[i]);
    } else if (in->toolset) {
        sf->toolset = xstrdup(in->toolset);
        const struct mf_toolset *ts = manifest_toolset(m, in->toolset);
        if (!ts)
            set_note(sf,
                     "The toolset '%s' is no longer in the manifest, so no upstream MCP "
                     "servers are proxied.",
                     in->toolset);
        for (size_t i = 0; ts && i < ts->servers.n; i++)
            strvec_push(&names, ts->servers.v[i]);
    } else if (in->fence && m->toolsets.n > 0) {
        sf->fenced = true;
        set_note(sf,
                 "This project fences its MCP servers behind toolsets and no lease is open: "
                 "open one with agentstack_lease_open (profile=%s).",
                 m->toolsets.v[0].name);
    } else {
        for (size_t i = 0; i < m->servers.n; i++)
            strvec_push(&names, m->servers.v[i].name);
    }
    if (names.n) {
        struct trust_pins pins;
        bool have_pins =
            trust_verify_pins(m, gw->proj.paths.lock, in->snap->lock.buf, in->snap->lock.len,
                              in->snap->has_lock, gw->home, &pins, &err) == 0;
        if (!have_pins)
            gw_note("pins could not be checked: %s", err.msg);
        /* env → keychain → file store → project .env (varlock stays out until
         * the gateway checks the lock pins .env.schema). */
        struct sec_chain_opts so = {0};
        so.project_dotenv = gw->proj.paths.env_file;
        struct sec_chain *chain = sec_chain_full(&so);
        for (size_t i = 0; i < names.n; i++) {
            if (gw_surface_up(sf, names.v[i]))
                continue;
            const struct mf_server *def = manifest_server(m, names.v[i]);
            bool lib = def == NULL;
            if (lib && !(def = library_server(gw, sf, names.v[i], have_pins ? &pins : NULL)))
                continue;
            if (!have_pins && gw->proj.gated) {
                pin_row(gw, sf, def->name, "pins could not be checked");
                continue;
            }
            struct gw_up *up = up_build(gw, sf, chain, have_pins ? &pins : NULL, def, lib);
            if (up)
                vec_push(&sf->ups, up);
        }
        sec_chain_free(chain);
        if (have_pins)
            trust_pins_free(&pins);
    }
    strvec_clear(&names);
    return sf;
}

/* ---- clients and discovery ------------------------------------------------- */

static struct mcp_client *make_client(struct gw *gw, struct gw_up *up)
{
    struct mcp_client_opts o = {0};
    o.client_name = "agentstack-gateway";
    o.client_version = gw->o.version;
    o.handshake = MCP_HS_DISCOVER;
    o.start_timeout_ms = up->http ? GW_HTTP_TIMEOUT_MS : gw->start_ms;
    o.kill_grace_ms = GW_KILL_GRACE_MS;
    o.on_notification = gw_up_notified;
    o.notify_ctx = up;
    if (up->http) {
        struct mcp_http_opts ho = {up->url,
                                   (const char *const *)up->headers,
                                   GW_HTTP_TIMEOUT_MS,
                                   gw_egress_dial_check,
                                   up,
                                   NULL,
                                   NULL,
                                   NULL};
        if (up->oauth) {
            ho.auth = oauth_bearer_auth_cb;
            ho.auth_refused = oauth_bearer_refused_cb;
            ho.auth_ctx = up->oauth;
        }
        return mcp_client_http(gw->loop, &ho, &o);
    }
    struct mcp_stdio_opts so = {(const char *const *)up->argv,
                                (const char *const *)up->envp,
                                up->cwd,
                                up->log_path,
                                0,
                                up->iso != GW_ISO_HOST ? gw_jail_spawn : NULL,
                                up};
    return mcp_client_stdio(gw->loop, &so, &o);
}

/* A 401, or a stored login that cannot be used: said by tools_search,
 * status and doctor as `agentstack auth login <server>` (docs/oauth.md). */
static void note_auth(struct gw_up *up, const struct mcp_reply *r)
{
    if (!up->http)
        return;
    if (r->status == MCP_OK) {
        up->needs_login = false; /* a login made since, or the token accepted again */
        return;
    }
    /* A manifest that sends its own Authorization header made its choice:
     * its 401 is that header's, not a missing login. */
    bool own = false;
    for (size_t i = 0; up->def && i < up->def->headers.n; i++)
        own = own || strcasecmp(up->def->headers.v[i].key, "authorization") == 0;
    if (own && !up->oauth)
        return;
    if (r->http_status == 401 && !up->oauth && up->url)
        oauth_mark_needs_login(up->name, up->url, "the server asks for authorization (HTTP 401)");
    if (r->http_status == 401 || oauth_bearer_needs_login(up->oauth))
        up->needs_login = true;
}

static void start_done(void *ctx, const struct mcp_reply *r)
{
    struct gw_up *up = ctx;
    note_auth(up, r);
    if (r->status != MCP_OK) {
        char *m = up_mask(up, r->message);
        gw_note("upstream '%s' did not start: %s (%s)", up->name, mcp_status_name(r->status), m);
        free_secure(m);
    }
}

int gw_up_ensure(struct gw_up *up, strbuf *why)
{
    struct gw *gw = up->gw;
    if (!up->client)
        up->client = make_client(gw, up);
    enum mcp_client_state st = mcp_client_state(up->client);
    if (st != MCP_ST_IDLE && st != MCP_ST_DEAD)
        return 0;
    /* Spawn only the bytes that were pinned: a script edited after the
     * surface was built is refused, not run; and only in the directory that
     * was checked: a project-relative cwd swapped for a symlink since then
     * would run whatever it points at. */
    if (up->cwd_rel) {
        strbuf real = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        int bad = fs_contain(up->sf->m->project_root, NULL, up->cwd_rel, MF_CONTAINED, &real, &err);
        sb_release(&real);
        if (bad < 0) {
            sb_addf(why, "cwd %s", err.msg);
            return -1;
        }
    }
    if (up->iso != GW_ISO_HOST) {
        /* Verified on one read, and those bytes are what the jail runs. */
        int r = gw_jail_prepare(up, why);
        if (r < 0)
            return r;
    }
    /* On the host this is verify-then-exec: a swap between this check and
     * the interpreter's open is not seen (docs/enforcement.md). */
    if (up->iso == GW_ISO_HOST && gw_pins_verify(up, why) < 0)
        return -1;
    up->code_seen = gw->code_gen;
    struct as_err err = AS_ERR_INIT;
    mcp_client_start(up->client, start_done, up, &err);
    return 0;
}

static void disc_finish(struct gw_surface *sf)
{
    if (sf->disc == 2)
        return;
    sf->disc = 2;
    /* Waiters may re-enter (and add waiters); run a detached copy. */
    struct gw_waiter *w = sf->waiters.v;
    size_t n = sf->waiters.n;
    sf->waiters.v = NULL;
    sf->waiters.n = sf->waiters.cap = 0;
    for (size_t i = 0; i < n; i++)
        w[i].fn(sf->gw, w[i].job);
    free(w);
    gw_surface_unref(sf); /* the discovery's own reference */
}

static void disc_deadline(struct mcp_loop *loop, void *ctx)
{
    (void)loop;
    struct gw_surface *sf = ctx;
    for (size_t i = 0; i < sf->ups.n; i++)
        if (sf->ups.v[i]->disc == 1) {
            gw_note("upstream '%s' did not list its tools in time; searching without it",
                    sf->ups.v[i]->name);
            sf->ups.v[i]->disc = 2;
            sf->ups.v[i]->late = true;
        }
    sf->disc_left = 0;
    sf->disc_timer = 0;
    disc_finish(sf);
}

void gw_up_store_tools(struct gw_up *up, const json_t *result)
{
    for (size_t i = 0; i < up->tools.n; i++)
        tool_free(&up->tools.v[i]);
    up->tools.n = 0;
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(result, "tools"), i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name || !gw_tool_name_ok(name)) {
            strbuf shown = SB_INIT;
            gw_one_line(name ? name : "(no name)", 80, &shown);
            gw_note("upstream '%s': tool '%s' hidden (its name is not [A-Za-z0-9_.-]{1,128})",
                    up->name, shown.buf);
            sb_release(&shown);
            continue;
        }
        bool dup = false;
        for (size_t k = 0; k < up->tools.n && !dup; k++)
            dup = strcmp(up->tools.v[k].name, name) == 0;
        if (dup)
            continue;
        struct gw_tool tool = {0};
        tool.server = xstrdup(up->name);
        tool.name = xstrdup(name);
        tool.full = xasprintf("%s__%s", up->name, name);
        strbuf d = SB_INIT;
        sb_addf(&d, "[via %s] ", up->name);
        const char *desc = json_string_value(json_object_get(t, "description"));
        gw_one_line(desc ? desc : "", GW_DESC_MAX, &d);
        sb_rtrim(&d);
        tool.desc = sb_detach(&d, NULL);
        tool.schema = gw_schema_clean(json_object_get(t, "inputSchema"));
        tool.extra = mcp_tool_extras(t, gw_one_line, GW_DESC_MAX, gw_schema_clean);
        vec_push(&up->tools, tool);
    }
}

static void on_listed(void *ctx, const struct mcp_reply *r)
{
    struct gw_up *up = ctx;
    struct gw_surface *sf = up->sf;
    if (!sf)
        return; /* its surface is gone; the client is shutting down */
    up->late = false;
    note_auth(up, r);
    if (r->status == MCP_OK)
        gw_up_store_tools(up, r->result);
    else {
        char *m = up_mask(up, r->message);
        gw_note("upstream '%s' could not list its tools: %s (%s)", up->name,
                mcp_status_name(r->status), m);
        free_secure(m);
    }
    if (up->disc != 1)
        return; /* late, after the deadline: cached for the next search */
    up->disc = 2;
    if (sf->disc_left && --sf->disc_left == 0 && sf->disc == 1) {
        mcp_loop_timer_cancel(sf->gw->loop, sf->disc_timer);
        sf->disc_timer = 0;
        disc_finish(sf);
    }
}

void gw_surface_discover(struct gw_surface *sf, void (*fn)(struct gw *, struct job *),
                         struct job *j)
{
    if (sf->disc == 2 || sf->ups.n == 0) {
        sf->disc = 2;
        fn(sf->gw, j);
        return;
    }
    struct gw_waiter w = {fn, j};
    vec_push(&sf->waiters, w);
    if (sf->disc == 1)
        return;
    sf->disc = 1;
    gw_surface_ref(sf);
    sf->disc_left = 0;
    for (size_t i = 0; i < sf->ups.n; i++) {
        struct gw_up *up = sf->ups.v[i];
        if (up->disc == 2)
            continue;
        strbuf why = SB_INIT;
        int r = gw_up_ensure(up, &why);
        if (r == -2) {
            gw_note("server '%s' cannot be confined, so it is not started (no host "
                    "fallback): %s",
                    up->name, why.buf);
            sb_release(&why);
            up->disc = 2;
            continue;
        }
        if (r < 0) {
            pin_row(sf->gw, NULL, up->name, why.buf);
            sb_release(&why);
            up->disc = 2;
            continue;
        }
        sb_release(&why);
        up->disc = 1;
        sf->disc_left++;
    }
    if (sf->disc_left == 0) {
        disc_finish(sf);
        return;
    }
    sf->disc_timer = mcp_loop_timer(sf->gw->loop, GW_DISC_DEADLINE_MS, disc_deadline, sf);
    /* Issue the listings after counting, so a synchronous failure cannot
     * finish discovery before every upstream was asked. */
    for (size_t i = 0; i < sf->ups.n; i++) {
        struct gw_up *up = sf->ups.v[i];
        if (up->disc == 1)
            mcp_client_list_tools(up->client, sf->gw->call_ms, GW_MAX_TOOLS, GW_MAX_PAGES,
                                  on_listed, up);
    }
}

static int tool_cmp(const void *a, const void *b)
{
    const struct gw_tool *x = *(const struct gw_tool *const *)a;
    const struct gw_tool *y = *(const struct gw_tool *const *)b;
    return strcmp(x->full, y->full);
}

void gw_surface_allowed(const struct gw_surface *sf, gw_toolvec *out)
{
    for (size_t i = 0; i < sf->ups.n; i++) {
        const struct gw_up *up = sf->ups.v[i];
        for (size_t k = 0; k < up->tools.n; k++)
            if (pol_tool(sf->rs, up->name, up->tools.v[k].name, NULL))
                vec_push(out, &up->tools.v[k]);
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, tool_cmp);
}
