/*
 * store — where a login lives (docs/oauth.md, "What is stored where"):
 *  - the login record, $AGENTSTACK_HOME/oauth/<server>.json (0600, in a
 *    0700 directory): issuer, endpoints, client_id, scope, expiry and
 *    whether a login is needed. No secret is in it, so `auth status`,
 *    `status` and `doctor` read it without touching a secret store.
 *  - the tokens, in the secret store only (docs/secrets.md): the OS
 *    keychain when a Secret Service answers at the first save, else the
 *    0600 file store, under AGENTSTACK_OAUTH_<server> (oauth_secret_name).
 *    The value is base64url of {"access_token","refresh_token"}, so no
 *    byte of a token can break the file store's KEY=value lines.
 *
 * Guarantees: a record naming another server than its file is refused;
 * the tokens are read back only from the store the record names; buffers
 * that held tokens are wiped; no token is ever written to the record.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/fs.h"
#include "base/xalloc.h"
#include "oauth/oauth.h"
#include "secrets/backends.h"

static int home(strbuf *out, struct as_err *err)
{
    if (sec_file_store_path(out, err) < 0)
        return -1;
    sb_setlen(out, out->len - strlen("/secrets.env"));
    return 0;
}

static int server_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 64 || !(islower((unsigned char)s[0]) || isdigit((unsigned char)s[0])))
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || strchr("._-", s[i])))
            return 0;
    return 1;
}

int oauth_record_path(const char *server, strbuf *out, struct as_err *err)
{
    if (!server_ok(server))
        return as_err_set(err, "'%s' is not a server name", server);
    if (home(out, err) < 0)
        return -1;
    sb_addf(out, "/oauth/%s.json", server);
    return 0;
}

static char *dup_member(json_t *o, const char *k)
{
    const char *v = json_string_value(json_object_get(o, k));
    return v ? xstrdup(v) : NULL;
}

int oauth_record_load(const char *server, struct oauth_login *l, struct as_err *err)
{
    memset(l, 0, sizeof *l);
    strbuf path = SB_INIT, text = SB_INIT;
    if (oauth_record_path(server, &path, err) < 0) {
        sb_release(&path);
        return -1;
    }
    if (!fs_exists(path.buf)) {
        sb_release(&path);
        return 0;
    }
    int rc = fs_read_file(path.buf, OAUTH_BODY_MAX, 1, &text, err);
    json_error_t je;
    json_t *o = rc == 0 ? json_loadb(text.buf, text.len, JSON_REJECT_DUPLICATES, &je) : NULL;
    const char *name = json_string_value(json_object_get(o, "server"));
    if (rc == 0 && (!json_is_object(o) || !name || strcmp(name, server) != 0 ||
                    !json_string_value(json_object_get(o, "resource")))) {
        rc = as_err_set(err, "%s: not a login record of server '%s'", path.buf, server);
    } else if (rc == 0) {
        l->server = xstrdup(server);
        l->resource = dup_member(o, "resource");
        l->issuer = dup_member(o, "issuer");
        l->authorization_endpoint = dup_member(o, "authorization_endpoint");
        l->token_endpoint = dup_member(o, "token_endpoint");
        l->registration_endpoint = dup_member(o, "registration_endpoint");
        l->revocation_endpoint = dup_member(o, "revocation_endpoint");
        l->client_id = dup_member(o, "client_id");
        l->scope = dup_member(o, "scope");
        l->reason = dup_member(o, "reason");
        l->store = dup_member(o, "store");
        l->expires_at = (long long)json_integer_value(json_object_get(o, "expires_at"));
        l->has_refresh = json_is_true(json_object_get(o, "has_refresh"));
        l->needs_login = json_is_true(json_object_get(o, "needs_login"));
        rc = 1;
    }
    if (o)
        json_decref(o);
    sb_release(&text);
    sb_release(&path);
    return rc;
}

static void set_opt(json_t *o, const char *k, const char *v)
{
    if (v)
        json_object_set_new(o, k, json_string(v));
}

int oauth_record_save(const struct oauth_login *l, struct as_err *err)
{
    strbuf path = SB_INIT;
    if (oauth_record_path(l->server, &path, err) < 0) {
        sb_release(&path);
        return -1;
    }
    strbuf dir = SB_INIT;
    sb_add(&dir, path.buf, (size_t)(strrchr(path.buf, '/') - path.buf));
    int rc = fs_private_dir(dir.buf, err);
    json_t *o = json_object();
    set_opt(o, "server", l->server);
    set_opt(o, "resource", l->resource);
    set_opt(o, "issuer", l->issuer);
    set_opt(o, "authorization_endpoint", l->authorization_endpoint);
    set_opt(o, "token_endpoint", l->token_endpoint);
    set_opt(o, "registration_endpoint", l->registration_endpoint);
    set_opt(o, "revocation_endpoint", l->revocation_endpoint);
    set_opt(o, "client_id", l->client_id);
    set_opt(o, "scope", l->scope);
    set_opt(o, "store", l->store);
    json_object_set_new(o, "expires_at", json_integer(l->expires_at));
    json_object_set_new(o, "has_refresh", json_boolean(l->has_refresh));
    json_object_set_new(o, "needs_login", json_boolean(l->needs_login));
    set_opt(o, "reason", l->needs_login ? l->reason : NULL);
    char *text = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    struct fs_write_opts wo = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
    if (rc == 0)
        rc = fs_write_exact(path.buf, text, strlen(text), &wo, err);
    free(text);
    sb_release(&dir);
    sb_release(&path);
    return rc;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int oauth_record_names(strvec *out, struct as_err *err)
{
    strbuf dir = SB_INIT;
    if (home(&dir, err) < 0) {
        sb_release(&dir);
        return -1;
    }
    sb_adds(&dir, "/oauth");
    DIR *d = opendir(dir.buf);
    sb_release(&dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (n > 5 && strcmp(e->d_name + n - 5, ".json") == 0) {
            char *s = xstrndup(e->d_name, n - 5);
            if (server_ok(s))
                strvec_push(out, s);
            free(s);
        }
    }
    closedir(d);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, name_cmp);
    return 0;
}

int oauth_record_remove(const char *server, struct as_err *err)
{
    strbuf path = SB_INIT;
    int rc = oauth_record_path(server, &path, err);
    if (rc == 0 && unlink(path.buf) < 0 && errno != ENOENT)
        rc = as_err_errno(err, "cannot remove %s", path.buf);
    sb_release(&path);
    return rc;
}

/* '_' doubles, '-' is _H, '.' is _D: no two server names share a secret. */
void oauth_secret_name(const char *server, strbuf *out)
{
    sb_adds(out, "AGENTSTACK_OAUTH_");
    for (const char *p = server; *p; p++) {
        if (*p == '_')
            sb_adds(out, "__");
        else if (*p == '-')
            sb_adds(out, "_H");
        else if (*p == '.')
            sb_adds(out, "_D");
        else
            sb_addc(out, (char)toupper((unsigned char)*p));
    }
}

static int use_keychain(const struct oauth_login *l)
{
    return l->store && strcmp(l->store, "keychain") == 0;
}

int oauth_tokens_save(struct oauth_login *l, const struct oauth_tokens *t, struct as_err *err)
{
    if (!l->store) {
        struct as_err probe = AS_ERR_INIT;
        l->store = xstrdup(sec_keychain_probe(&probe) == 0 ? "keychain" : "file");
    }
    json_t *o = json_object();
    json_object_set_new(o, "access_token", json_string(t->access_token));
    if (t->refresh_token)
        json_object_set_new(o, "refresh_token", json_string(t->refresh_token));
    char *text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    strbuf v = SB_INIT, name = SB_INIT, path = SB_INIT;
    oauth_b64url(text, strlen(text), &v);
    explicit_bzero(text, strlen(text));
    free(text);
    oauth_secret_name(l->server, &name);
    int rc;
    if (use_keychain(l)) {
        rc = sec_keychain_store(name.buf, v.buf, v.len, err);
    } else {
        rc = sec_file_store_path(&path, err);
        strbuf lock = SB_INIT;
        if (rc == 0 && home(&lock, err) == 0)
            rc = sec_dotenv_set(path.buf, name.buf, v.buf, v.len, SEC_STORE_FILE, lock.buf, err);
        sb_release(&lock);
    }
    sb_release_secure(&v);
    sb_release(&name);
    sb_release(&path);
    return rc;
}

static int decode_tokens(const strbuf *v, struct oauth_tokens *t, struct as_err *err)
{
    strbuf std = SB_INIT, raw = SB_INIT;
    for (size_t i = 0; i < v->len; i++)
        sb_addc(&std, v->buf[i] == '-' ? '+' : v->buf[i] == '_' ? '/' : v->buf[i]);
    while (std.len % 4)
        sb_addc(&std, '=');
    int rc = base64_decode(std.buf, std.len, &raw);
    sb_release_secure(&std);
    json_error_t je;
    json_t *o = rc == 0 ? json_loadb(raw.buf, raw.len, 0, &je) : NULL;
    sb_release_secure(&raw);
    const char *at = json_string_value(json_object_get(o, "access_token"));
    const char *rt = json_string_value(json_object_get(o, "refresh_token"));
    if (!at) {
        rc = as_err_set(err, "the stored tokens are unreadable");
    } else {
        t->access_token = xstrdup(at);
        t->refresh_token = rt ? xstrdup(rt) : NULL;
        rc = 1;
    }
    if (o) {
        /* jansson keeps its own copies: wipe them before they are freed */
        json_t *s = json_object_get(o, "access_token");
        if (s && json_string_value(s))
            explicit_bzero((char *)json_string_value(s), strlen(json_string_value(s)));
        s = json_object_get(o, "refresh_token");
        if (s && json_string_value(s))
            explicit_bzero((char *)json_string_value(s), strlen(json_string_value(s)));
        json_decref(o);
    }
    return rc;
}

int oauth_tokens_load(const struct oauth_login *l, struct oauth_tokens *t, struct as_err *err)
{
    memset(t, 0, sizeof *t);
    strbuf name = SB_INIT, v = SB_INIT;
    oauth_secret_name(l->server, &name);
    enum sec_status st;
    if (use_keychain(l)) {
        st = sec_keychain_lookup(name.buf, &v, err);
    } else {
        strbuf path = SB_INIT;
        st = SEC_FAILED;
        if (sec_file_store_path(&path, err) == 0) {
            struct sec_backend b = sec_backend_dotenv("file", path.buf, 1);
            st = b.lookup(b.ctx, name.buf, &v, err);
            if (b.release)
                b.release(b.ctx);
        }
        sb_release(&path);
    }
    int rc = st == SEC_FOUND ? decode_tokens(&v, t, err) : st == SEC_MISSING ? 0 : -1;
    sb_release_secure(&v);
    sb_release(&name);
    return rc;
}

int oauth_tokens_delete(const struct oauth_login *l, struct as_err *err)
{
    strbuf name = SB_INIT;
    oauth_secret_name(l->server, &name);
    bool existed = false;
    int rc;
    if (use_keychain(l)) {
        rc = sec_keychain_delete(name.buf, &existed, err);
    } else {
        strbuf path = SB_INIT, lock = SB_INIT;
        rc = sec_file_store_path(&path, err);
        if (rc == 0)
            rc = home(&lock, err);
        if (rc == 0)
            rc = sec_dotenv_remove(path.buf, name.buf, &existed, lock.buf, err);
        sb_release(&path);
        sb_release(&lock);
    }
    sb_release(&name);
    return rc;
}

void oauth_mark_needs_login(const char *server, const char *url, const char *reason)
{
    struct oauth_login l;
    struct as_err err = AS_ERR_INIT;
    int have = oauth_record_load(server, &l, &err);
    if (have < 0)
        return;
    if (have == 0) {
        strbuf canon = SB_INIT;
        if (oauth_resource_canon(url, &canon) < 0) {
            sb_release(&canon);
            return;
        }
        l.server = xstrdup(server);
        l.resource = sb_detach(&canon, NULL);
    }
    if (!l.needs_login || !l.reason || strcmp(l.reason, reason) != 0) {
        l.needs_login = true;
        free(l.reason);
        l.reason = xstrdup(reason);
        oauth_record_save(&l, &err);
    }
    oauth_login_free(&l);
}

int oauth_needs_login(const char *server, strbuf *reason)
{
    struct oauth_login l;
    struct as_err err = AS_ERR_INIT;
    int have = oauth_record_load(server, &l, &err);
    if (have < 0) {
        sb_addf(reason, "its login record is unreadable: %s", err.msg);
        return 1;
    }
    if (have == 0)
        return 0;
    int need = 1;
    if (l.needs_login)
        sb_adds(reason, l.reason ? l.reason : "the server refused the stored token");
    else if (!l.issuer)
        sb_adds(reason, "never logged in");
    else if (l.expires_at && l.expires_at <= (long long)time(NULL) && !l.has_refresh)
        sb_adds(reason, "the access token expired and there is no refresh token");
    else
        need = 0;
    oauth_login_free(&l);
    return need;
}

void oauth_login_command(const char *server, strbuf *out)
{
    sb_addf(out, "agentstack auth login %s", server);
}
