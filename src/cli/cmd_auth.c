/*
 * agentstack auth login <server> | status [--json] | logout <server> —
 * OAuth logins for the project's HTTP MCP servers (docs/oauth.md).
 *
 * Why: a remote MCP server that answers 401 wants a token from its
 * authorization server; a person has to approve that once, in a browser.
 * This command does the part only a person can start, so the gateway
 * never has to (it reports "needs login" and names this command).
 *
 * Guarantees:
 *  - login prints the authorization URL and opens nothing; it listens on
 *    127.0.0.1 (an ephemeral port) for exactly one redirect to /callback,
 *    whose `state` must be the one it made (a wrong one fails the login,
 *    no code is exchanged); then it exchanges the code with the PKCE
 *    verifier and the resource indicator, and stores the tokens in the
 *    secret store only. Any refusal of oauth/ stops it before anything is
 *    stored.
 *  - status and --json never show a token (they read the login record,
 *    not the secret store).
 *  - logout revokes the refresh and access tokens where the authorization
 *    server offers revocation, then deletes them and the record; a failed
 *    revocation is said, and the local tokens are deleted anyway.
 * Exit: 0 done, 1 failure (a refusal, a timeout, no such server), 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "oauth/oauth.h"

int cmd_auth(int argc, char **argv, struct cli_ctx *ctx);

struct auth_args {
    bool json;
    const char *client_id;
    long timeout;
};

#define CLI_ARGS struct auth_args
static const struct cli_option login_options[] = {
    {OPT_STRING("client-id", 0, client_id, "ID",
                "a client_id registered with the authorization server (else registered "
                "dynamically)")},
    {OPT_INT("timeout", 0, timeout, "SECONDS", 1, 3600,
             "how long to wait for the browser's redirect (default 300)")},
    {OPT_END},
};
static const struct cli_option status_options[] = {
    {OPT_BOOL("json", 0, json, "one JSON document (never a token)")},
    {OPT_END},
};
#undef CLI_ARGS

static int auth_leaf(int argc, char **argv, struct cli_ctx *ctx);

static const struct cli_spec auth_login_spec = {
    .name = "auth login",
    .fn = auth_leaf,
    .summary = "log in to an HTTP MCP server with OAuth (prints the URL to open)",
    .synopsis = CLI_LINES("auth login <server> [--client-id ID] [--timeout SECONDS]"),
    .description = "Discovers the server's authorization server, registers a client when it "
                   "offers registration, prints the authorization URL and waits for the "
                   "redirect on 127.0.0.1. The tokens go to the secret store.",
    .options = login_options,
};
static const struct cli_spec auth_status_spec = {
    .name = "auth status",
    .fn = auth_leaf,
    .summary = "per server: logged in or not, expiry, scopes (never a token)",
    .synopsis = CLI_LINES("auth status [--json]"),
    .options = status_options,
};
static const struct cli_spec auth_logout_spec = {
    .name = "auth logout",
    .fn = auth_leaf,
    .summary = "revoke (where offered) and delete a server's stored tokens",
    .synopsis = CLI_LINES("auth logout <server>"),
};

const struct cli_spec cmd_auth_spec = {
    .name = "auth",
    .fn = cmd_auth,
    .summary = "OAuth logins for HTTP MCP servers: login, status, logout",
    .subs = (const struct cli_spec *const[]){&auth_login_spec, &auth_status_spec, &auth_logout_spec,
                                             NULL},
    .examples = CLI_LINES("agentstack auth login notion", "agentstack auth status --json"),
    .see_also = "gateway secret doctor",
};

/* ---- the server's URL --------------------------------------------------------- */

static int server_url(struct cli_ctx *ctx, const char *server, strbuf *url)
{
    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return -1;
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load(&p, &err);
    int rc = -1;
    const struct mf_server *s = m ? manifest_server(m, server) : NULL;
    if (!m)
        cli_error(&err);
    else if (!s)
        cli_errorf("the manifest declares no server '%s'", server);
    else if (s->type != MF_SERVER_HTTP || !s->url)
        cli_errorf("server '%s' is not an HTTP server; OAuth is for HTTP servers", server);
    else if (strstr(s->url, "${"))
        cli_errorf("server '%s': its URL holds ${…} references; a login needs a literal URL",
                   server);
    else {
        sb_adds(url, s->url);
        rc = 0;
    }
    if (m)
        manifest_free(m);
    bundle_paths_free(&p);
    return rc;
}

/* ---- the loopback redirect -------------------------------------------------------- */

static int listen_loopback(unsigned *port, struct as_err *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return as_err_errno(err, "cannot open the redirect listener");
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 4) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &n) < 0) {
        as_err_errno(err, "cannot listen on 127.0.0.1");
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static void answer(int c, int status, const char *text)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n",
                     status,
                     status == 200   ? "OK"
                     : status == 404 ? "Not Found"
                                     : "Bad Request",
                     strlen(text));
    if (write(c, head, (size_t)n) < 0 || write(c, text, strlen(text)) < 0)
        return; /* the browser went away: the outcome stands */
}

/* Reads one request head (8 KiB at most, 5 s); its target in *target. */
static int read_request(int c, strbuf *target)
{
    char buf[8192];
    size_t len = 0;
    while (len < sizeof buf - 1) {
        struct pollfd pf = {c, POLLIN, 0};
        if (poll(&pf, 1, 5000) <= 0)
            return -1;
        ssize_t r = read(c, buf + len, sizeof buf - 1 - len);
        if (r <= 0)
            return -1;
        len += (size_t)r;
        buf[len] = '\0';
        if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
            break;
    }
    buf[len] = '\0';
    if (strncmp(buf, "GET ", 4) != 0)
        return -1;
    const char *t = buf + 4;
    size_t tn = strcspn(t, " \r\n");
    sb_add(target, t, tn);
    return 0;
}

/* Waits for the one redirect; 0 + code, -1 + err (wrong state, an error
 * from the server, the deadline). Other paths get 404 and are not counted. */
static int await_code(int lfd, const char *state, long timeout_s, strbuf *code, struct as_err *err)
{
    time_t deadline = time(NULL) + timeout_s;
    for (;;) {
        long left = (long)(deadline - time(NULL));
        if (left <= 0)
            return as_err_set(err, "no redirect came back within %ld s", timeout_s);
        struct pollfd pf = {lfd, POLLIN, 0};
        int pr = poll(&pf, 1, (int)(left * 1000));
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            continue;
        int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0)
            continue;
        strbuf target = SB_INIT;
        if (read_request(c, &target) < 0) {
            close(c);
            sb_release(&target);
            continue;
        }
        const char *q = strchr(target.buf, '?');
        size_t plen = q ? (size_t)(q - target.buf) : target.len;
        if (plen != 9 || strncmp(target.buf, "/callback", 9) != 0) {
            answer(c, 404, "not found\n");
            close(c);
            sb_release(&target);
            continue;
        }
        strbuf got = SB_INIT, e = SB_INIT;
        int rc = 0;
        int has_state = oauth_query_get(q ? q + 1 : "", "state", &got);
        if (has_state != 1 || strlen(state) != got.len || !ct_equal(state, got.buf, got.len))
            rc = as_err_set(err, "the redirect's state is not the one this login sent; "
                                 "refused (no code was exchanged)");
        else if (oauth_query_get(q + 1, "error", &e) == 1)
            rc = as_err_set(err, "the authorization server refused the login (%.64s)", e.buf);
        else if (oauth_query_get(q + 1, "code", code) != 1 || !code->len)
            rc = as_err_set(err, "the redirect carries no code");
        answer(c, rc == 0 ? 200 : 400,
               rc == 0 ? "agentstack: logged in; you can close this tab.\n"
                       : "agentstack: the login failed; see the terminal.\n");
        close(c);
        sb_release(&got);
        sb_release(&e);
        sb_release_secure(&target);
        return rc;
    }
}

/* ---- login ------------------------------------------------------------------------ */

static int do_login(struct cli_ctx *ctx, const char *server, const struct auth_args *a)
{
    strbuf url = SB_INIT;
    if (server_url(ctx, server, &url) < 0) {
        sb_release(&url);
        return EXIT_FAIL;
    }
    struct as_err err = AS_ERR_INIT;
    struct oauth_login l = {0};
    struct oauth_tokens t = {0};
    strbuf redirect = SB_INIT, verifier = SB_INIT, challenge = SB_INIT, state = SB_INIT;
    strbuf authz = SB_INIT, code = SB_INIT;
    unsigned port = 0;
    int lfd = -1;
    int rc = oauth_discover(server, url.buf, &l, &err);
    if (rc == 0 && (lfd = listen_loopback(&port, &err)) < 0)
        rc = -1;
    if (rc == 0) {
        sb_addf(&redirect, "http://127.0.0.1:%u/callback", port);
        if (a->client_id)
            l.client_id = xstrdup(a->client_id);
        else if (!l.registration_endpoint) {
            rc = as_err_set(&err, "the authorization server offers no dynamic client "
                                  "registration, and no client_id was given");
            as_err_hint(&err, "agentstack auth login %s --client-id ID", server);
        } else
            rc = oauth_register(&l, redirect.buf, &err);
    }
    if (rc == 0)
        rc = oauth_pkce_verifier(&verifier, &err);
    if (rc == 0)
        rc = oauth_pkce_verifier(&state, &err); /* 256 random bits, base64url */
    if (rc == 0) {
        oauth_pkce_challenge(verifier.buf, &challenge);
        oauth_authorize_url(&l, redirect.buf, state.buf, challenge.buf, &authz);
        printf("Open this URL in a browser to log in to '%s':\n\n  %s\n\nWaiting for the "
               "redirect on %s ...\n",
               server, authz.buf, redirect.buf);
        fflush(stdout);
        rc = await_code(lfd, state.buf, a->timeout ? a->timeout : 300, &code, &err);
    }
    if (lfd >= 0)
        close(lfd); /* one use: no second redirect is read */
    if (rc == 0)
        rc = oauth_exchange_code(&l, code.buf, verifier.buf, redirect.buf, &t, &err);
    if (rc == 0) {
        struct oauth_login old;
        struct as_err e2 = AS_ERR_INIT;
        if (oauth_record_load(server, &old, &e2) == 1) {
            oauth_tokens_delete(&old, &e2); /* the earlier login's tokens, wherever they were */
            oauth_login_free(&old);
        }
        l.expires_at = t.expires_in ? (long long)time(NULL) + t.expires_in : 0;
        l.has_refresh = t.refresh_token != NULL;
        if (t.scope) {
            free(l.scope);
            l.scope = xstrdup(t.scope);
        }
        rc = oauth_tokens_save(&l, &t, &err);
    }
    if (rc == 0)
        rc = oauth_record_save(&l, &err);
    if (rc == 0) {
        printf("logged in to '%s' (tokens in the %s store", server,
               strcmp(l.store, "keychain") == 0 ? "OS keychain" : "file");
        if (t.expires_in)
            printf("; the access token expires in %lld s", t.expires_in);
        printf(")\n");
    } else {
        as_err_prefix(&err, "login to '%s' failed", server);
        cli_error(&err);
    }
    oauth_tokens_free(&t);
    oauth_login_free(&l);
    sb_release_secure(&verifier);
    sb_release_secure(&state);
    sb_release_secure(&code);
    sb_release(&challenge);
    sb_release(&authz);
    sb_release(&redirect);
    sb_release(&url);
    return rc == 0 ? EXIT_OK : EXIT_FAIL;
}

/* ---- status and logout ------------------------------------------------------------ */

static json_t *status_row(const struct oauth_login *l)
{
    json_t *o = json_object();
    long long now = (long long)time(NULL);
    bool expired = l->expires_at && l->expires_at <= now;
    bool usable = l->issuer && !l->needs_login && (!expired || l->has_refresh);
    json_object_set_new(o, "server", json_string(l->server));
    json_object_set_new(o, "resource", json_string(l->resource));
    json_object_set_new(o, "logged_in", json_boolean(usable));
    json_object_set_new(o, "needs_login", json_boolean(!usable));
    if (l->issuer)
        json_object_set_new(o, "issuer", json_string(l->issuer));
    json_object_set_new(o, "expires_at", l->expires_at ? json_integer(l->expires_at) : json_null());
    json_object_set_new(o, "refreshable", json_boolean(l->has_refresh));
    json_object_set_new(o, "scopes", l->scope ? json_string(l->scope) : json_null());
    if (l->store)
        json_object_set_new(o, "store", json_string(l->store));
    if (!usable) {
        const char *why = l->reason    ? l->reason
                          : !l->issuer ? "never logged in"
                                       : "the access token expired and there is no refresh token";
        json_object_set_new(o, "reason", json_string(why));
        strbuf c = SB_INIT;
        oauth_login_command(l->server, &c);
        json_object_set_new(o, "fix", json_string(c.buf));
        sb_release(&c);
    }
    return o;
}

static void print_row(json_t *r)
{
    const char *server = json_string_value(json_object_get(r, "server"));
    if (json_is_true(json_object_get(r, "logged_in"))) {
        printf("%s: logged in", server);
        json_t *ex = json_object_get(r, "expires_at");
        if (json_is_integer(ex)) {
            long long left = (long long)json_integer_value(ex) - (long long)time(NULL);
            if (left > 0)
                printf(", the access token expires in %lld s", left);
            else
                printf(", the access token expired (it is refreshed at the next use)");
        }
        const char *sc = json_string_value(json_object_get(r, "scopes"));
        printf("%s%s\n", sc ? ", scopes: " : "", sc ? sc : "");
    } else {
        printf("%s: needs login (%s): run `%s`\n", server,
               json_string_value(json_object_get(r, "reason")),
               json_string_value(json_object_get(r, "fix")));
    }
}

static int do_status(struct cli_ctx *ctx, bool json)
{
    (void)ctx;
    strvec names = STRVEC_INIT;
    struct as_err err = AS_ERR_INIT;
    if (oauth_record_names(&names, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    json_t *rows = json_array();
    int rc = EXIT_OK;
    for (size_t i = 0; i < names.n; i++) {
        struct oauth_login l;
        if (oauth_record_load(names.v[i], &l, &err) != 1) {
            cli_error(&err);
            rc = EXIT_FAIL;
            continue;
        }
        json_array_append_new(rows, status_row(&l));
        oauth_login_free(&l);
    }
    if (json) {
        json_t *doc = json_pack("{s:o}", "servers", rows);
        char *s = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", s);
        free(s);
        json_decref(doc);
    } else {
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) print_row(r);
        if (!json_array_size(rows))
            printf("no OAuth logins on this machine\n");
        json_decref(rows);
    }
    strvec_clear(&names);
    return rc;
}

static int do_logout(const char *server)
{
    struct as_err err = AS_ERR_INIT;
    struct oauth_login l;
    int have = oauth_record_load(server, &l, &err);
    if (have <= 0) {
        if (have == 0)
            cli_errorf("no OAuth login for '%s' on this machine", server);
        else
            cli_error(&err);
        return EXIT_FAIL;
    }
    struct oauth_tokens t = {0};
    bool offered = false;
    int revoke_failed = 0;
    if (l.issuer && oauth_tokens_load(&l, &t, &err) == 1) {
        if (t.refresh_token &&
            oauth_revoke(&l, t.refresh_token, "refresh_token", &offered, &err) < 0)
            revoke_failed = 1;
        if (!revoke_failed && oauth_revoke(&l, t.access_token, "access_token", &offered, &err) < 0)
            revoke_failed = 1;
        if (revoke_failed)
            fprintf(stderr, "warning: %s (the local tokens are deleted anyway)\n", err.msg);
    }
    oauth_tokens_free(&t);
    int rc = 0;
    if (l.issuer)
        rc = oauth_tokens_delete(&l, &err);
    if (rc == 0)
        rc = oauth_record_remove(server, &err);
    if (rc < 0)
        cli_error(&err);
    else
        printf("logged out of '%s'%s\n", server,
               !l.issuer       ? ""
               : revoke_failed ? " (revocation failed)"
               : offered       ? " (tokens revoked at the authorization server)"
                               : " (the authorization server offers no revocation)");
    oauth_login_free(&l);
    return rc == 0 ? EXIT_OK : EXIT_FAIL;
}

static int auth_leaf(int argc, char **argv, struct cli_ctx *ctx)
{
    const struct cli_spec *spec = cli_find_sub(&cmd_auth_spec, argv[0]);
    struct auth_args a = {0};
    int prc = cli_parse(spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (spec == &auth_status_spec) {
        if (argc > 1)
            return cli_usage_error(spec->name, "unexpected argument '%s'", argv[1]);
        return do_status(ctx, a.json);
    }
    if (argc < 2)
        return cli_usage_error(spec->name, "which server? (a name from [servers])");
    if (argc > 2)
        return cli_usage_error(spec->name, "unexpected argument '%s'", argv[2]);
    strbuf path = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    int ok = oauth_record_path(argv[1], &path, &err);
    sb_release(&path);
    if (ok < 0)
        return cli_usage_error(spec->name, "'%s' is not a server name", argv[1]);
    if (spec == &auth_login_spec)
        return do_login(ctx, argv[1], &a);
    return do_logout(argv[1]);
}

int cmd_auth(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_auth_spec, argc, argv, ctx);
}
