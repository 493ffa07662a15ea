/*
 * bearer — the stored access token, for an upstream client's requests
 * (docs/oauth.md, "In the gateway").
 *
 * Why: the gateway builds an HTTP upstream once and sends many requests
 * over hours; the token it was built with expires. Each request asks here
 * for its Authorization line, and a token close to expiry is refreshed
 * first, so no request goes out with a token known to be stale.
 *
 * Guarantees:
 *  - Never interactive: no browser, no prompt, nothing on stdio; what a
 *    person must do is recorded (the login record's needs_login and
 *    reason) and said by `auth status`, `status`, `doctor` and the
 *    gateway, as the command `agentstack auth login <server>`.
 *  - A refresh stores the new tokens before the new access token is used;
 *    a refresh token the answer rotates is replaced, one it leaves out is
 *    kept. A refresh refused because another process (a second gateway)
 *    rotated the token first takes the tokens that process stored.
 *  - A record marked as needing a login is not used until a login clears
 *    it; the reason never holds a token.
 *  - The token is held in this struct only while the client lives and is
 *    wiped when it is freed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/xalloc.h"
#include "oauth/oauth.h"

struct oauth_bearer {
    char *server, *url;
    struct oauth_login l;
    struct oauth_tokens t;
    bool loaded;
};

struct oauth_bearer *oauth_bearer_open(const char *server, const char *url)
{
    struct oauth_login l;
    struct as_err err = AS_ERR_INIT;
    if (oauth_record_load(server, &l, &err) != 1)
        return NULL;
    struct oauth_bearer *b = xcalloc(1, sizeof *b);
    b->server = xstrdup(server);
    b->url = xstrdup(url);
    b->l = l;
    return b;
}

void oauth_bearer_free(struct oauth_bearer *b)
{
    if (!b)
        return;
    oauth_tokens_free(&b->t);
    oauth_login_free(&b->l);
    free(b->server);
    free(b->url);
    free(b);
}

static int need(struct oauth_bearer *b, const char *reason, char *why, size_t whysz)
{
    b->l.needs_login = true;
    free(b->l.reason);
    b->l.reason = xstrdup(reason);
    struct as_err err = AS_ERR_INIT;
    oauth_record_save(&b->l, &err);
    oauth_tokens_free(&b->t);
    b->loaded = false;
    snprintf(why, whysz, "needs login (%s): run `agentstack auth login %s`", reason, b->server);
    return -1;
}

/* Another process using the same login (a second gateway) may have
 * refreshed first, spending the refresh token held here: 1 when the store
 * now holds other tokens, which are taken (with the record's expiry). */
static int adopt_stored(struct oauth_bearer *b)
{
    struct as_err err = AS_ERR_INIT;
    struct oauth_login l;
    struct oauth_tokens st = {0};
    if (oauth_record_load(b->server, &l, &err) != 1)
        return 0;
    int r = oauth_tokens_load(&l, &st, &err);
    int other = r == 1 && st.refresh_token && b->t.refresh_token &&
                strcmp(st.refresh_token, b->t.refresh_token) != 0;
    if (other) {
        oauth_tokens_free(&b->t);
        b->t = st;
        oauth_login_free(&b->l);
        b->l = l;
        return 1;
    }
    oauth_tokens_free(&st);
    oauth_login_free(&l);
    return 0;
}

static int refresh(struct oauth_bearer *b, char *why, size_t whysz)
{
    struct as_err err = AS_ERR_INIT;
    struct oauth_tokens nt = {0};
    int rc = oauth_refresh(&b->l, b->t.refresh_token, &nt, &err);
    if (rc < 0 && adopt_stored(b)) {
        long long now = (long long)time(NULL);
        if (!b->l.expires_at || now + OAUTH_REFRESH_MARGIN_S < b->l.expires_at)
            return 0; /* the other process's fresh token */
        err = (struct as_err)AS_ERR_INIT;
        rc = oauth_refresh(&b->l, b->t.refresh_token, &nt, &err);
    }
    if (rc < 0) {
        err.msg[300] = '\0'; /* the reason stays one short line */
        return need(b, err.msg, why, whysz);
    }
    if (!nt.refresh_token && b->t.refresh_token)
        nt.refresh_token = xstrdup(b->t.refresh_token);
    b->l.expires_at = nt.expires_in ? (long long)time(NULL) + nt.expires_in : 0;
    b->l.has_refresh = nt.refresh_token != NULL;
    if (nt.scope) {
        free(b->l.scope);
        b->l.scope = xstrdup(nt.scope);
    }
    if (oauth_tokens_save(&b->l, &nt, &err) < 0 || oauth_record_save(&b->l, &err) < 0) {
        oauth_tokens_free(&nt);
        snprintf(why, whysz, "the refreshed tokens could not be stored: %s", err.msg);
        return -1;
    }
    oauth_tokens_free(&b->t);
    b->t = nt;
    return 0;
}

int oauth_bearer_header(struct oauth_bearer *b, strbuf *line, char *why, size_t whysz)
{
    struct as_err err = AS_ERR_INIT;
    if (b->l.needs_login) {
        /* a login in another process may have cleared it since */
        struct oauth_login fresh;
        if (oauth_record_load(b->server, &fresh, &err) == 1) {
            oauth_login_free(&b->l);
            b->l = fresh;
            oauth_tokens_free(&b->t);
            b->loaded = false;
        }
        if (b->l.needs_login) {
            snprintf(why, whysz, "needs login: run `agentstack auth login %s`", b->server);
            return -1;
        }
    }
    if (!oauth_resource_same(b->l.resource, b->url))
        return need(b, "the login was made for another URL", why, whysz);
    if (!b->loaded) {
        int r = oauth_tokens_load(&b->l, &b->t, &err);
        if (r < 0) {
            snprintf(why, whysz, "the stored tokens could not be read: %s", err.msg);
            return -1;
        }
        if (r == 0)
            return need(b, "no tokens are stored", why, whysz);
        b->loaded = true;
    }
    long long now = (long long)time(NULL);
    if (b->l.expires_at && now + OAUTH_REFRESH_MARGIN_S >= b->l.expires_at) {
        if (!b->t.refresh_token)
            return need(b, "the access token expired and there is no refresh token", why, whysz);
        if (refresh(b, why, whysz) < 0)
            return -1;
    }
    sb_addf(line, "Authorization: Bearer %s", b->t.access_token);
    return 0;
}

void oauth_bearer_refused(struct oauth_bearer *b)
{
    char why[400];
    need(b, "the server refused the stored token (HTTP 401)", why, sizeof why);
}

int oauth_bearer_auth_cb(void *ctx, strbuf *line, char *why, size_t whysz)
{
    return oauth_bearer_header(ctx, line, why, whysz);
}

void oauth_bearer_refused_cb(void *ctx)
{
    oauth_bearer_refused(ctx);
}

int oauth_bearer_needs_login(const struct oauth_bearer *b)
{
    return b && b->l.needs_login;
}
