/*
 * Lifting inline secrets out of imported servers into ${REF}s (key-name
 * rules, plus the value shapes of bundle/literal_secret.h); see onboard.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "bundle/literal_secret.h"
#include "onboard/onboard.h"

void onb_lifts_free(onb_lifts *l)
{
    for (size_t i = 0; i < l->n; i++) {
        free(l->v[i].name);
        explicit_bzero(l->v[i].value, strlen(l->v[i].value));
        free(l->v[i].value);
        strvec_clear(&l->v[i].where);
    }
    vec_free(l);
}

struct lifter {
    onb_lifts *out;
    onb_taken_fn taken;
    void *ctx;
};

/* NAME from free text: upper-cased, non-alnum → '_', never a leading digit. */
static void ref_name(const char *s, const char *suffix, strbuf *out)
{
    sb_reset(out);
    while (*s == '-')
        s++;
    if (isdigit((unsigned char)*s) || !*s)
        sb_addc(out, '_');
    for (; *s; s++)
        sb_addc(out, isalnum((unsigned char)*s) ? (char)toupper((unsigned char)*s) : '_');
    if (suffix)
        sb_adds(out, suffix);
}

/* The ref for value (shared when an equal value was lifted before), with
 * its name derived from base. Returns the name (owned by the lift). */
static const char *lift(struct lifter *L, const char *base, const char *value, const char *where)
{
    for (size_t i = 0; i < L->out->n; i++)
        if (strcmp(L->out->v[i].value, value) == 0) {
            strvec_push(&L->out->v[i].where, where);
            return L->out->v[i].name;
        }
    strbuf name = SB_INIT;
    bool reused = false;
    for (int k = 1;; k++) {
        sb_reset(&name);
        sb_adds(&name, base);
        if (k > 1)
            sb_addf(&name, "_%d", k);
        bool used = false;
        for (size_t i = 0; i < L->out->n; i++)
            if (strcmp(L->out->v[i].name, name.buf) == 0)
                used = true;
        if (used)
            continue;
        int t = L->taken ? L->taken(L->ctx, name.buf, value) : 0;
        if (t == 2)
            continue;
        reused = t == 1;
        break;
    }
    struct onb_lift l = {0};
    l.name = sb_detach(&name, NULL);
    l.value = xstrdup(value);
    l.reused = reused;
    strvec_push(&l.where, where);
    vec_push(L->out, l);
    return L->out->v[L->out->n - 1].name;
}

static bool has_ref(const char *v)
{
    return strstr(v, "${") != NULL;
}

static const char *const schemes[] = {"Bearer ", "Basic ", "Token ", "token "};

/* Whether to lift value under key: the one detector (bundle/literal_secret.h)
 * says it is a secret, and a value a name alone flags is at least six bytes
 * (shorter ones are placeholders more often than credentials). */
static bool liftable(const char *key, const char *value)
{
    enum lsec_why w = lsec_classify(key, value);
    return w != LSEC_NONE && (w != LSEC_KEY_NAME || strlen(value) >= 6);
}

static void lift_headers(struct lifter *L, struct onb_server *s, const char *server_ref)
{
    for (size_t i = 0; i < s->hdr_keys.n; i++) {
        char *v = s->hdr_vals.v[i];
        if (has_ref(v))
            continue;
        const char *scheme = "";
        const char *secret = v;
        for (size_t k = 0; k < sizeof schemes / sizeof *schemes; k++)
            if (strncmp(v, schemes[k], strlen(schemes[k])) == 0) {
                scheme = schemes[k];
                secret = v + strlen(scheme);
            }
        if (!liftable(s->hdr_keys.v[i], secret))
            continue;
        char *where = xasprintf("%s headers.%s", s->name, s->hdr_keys.v[i]);
        const char *name = lift(L, server_ref, secret, where);
        free(where);
        char *nv = xasprintf("%s${%s}", scheme, name);
        explicit_bzero(v, strlen(v));
        free(v);
        s->hdr_vals.v[i] = nv;
    }
}

static void lift_env(struct lifter *L, struct onb_server *s)
{
    strbuf base = SB_INIT;
    for (size_t i = 0; i < s->env_keys.n; i++) {
        char *v = s->env_vals.v[i];
        const char *k = s->env_keys.v[i];
        if (has_ref(v))
            continue;
        if (strstr(v, "://") ? lsec_value_shape(v) == LSEC_NONE : !liftable(k, v))
            continue;
        ref_name(k, NULL, &base);
        char *where = xasprintf("%s env.%s", s->name, k);
        const char *name = lift(L, base.buf, v, where);
        free(where);
        char *nv = xasprintf("${%s}", name);
        explicit_bzero(v, strlen(v));
        free(v);
        s->env_vals.v[i] = nv;
    }
    sb_release(&base);
}

static void lift_args(struct lifter *L, struct onb_server *s, const char *server_ref)
{
    strbuf base = SB_INIT;
    for (size_t i = 0; i < s->args.n; i++) {
        char *a = s->args.v[i];
        if (has_ref(a))
            continue;
        char *where = xasprintf("%s args[%zu]", s->name, i);
        const char *eq = strchr(a, '=');
        if (eq && eq > a) {
            /* k=v / --k=v with a secret-looking k */
            char *k = xstrndup(a, (size_t)(eq - a));
            const char *v = eq + 1;
            if (lsec_key_secretish(k) && liftable(k, v) && lsec_value_literal(v)) {
                ref_name(k, NULL, &base);
                const char *name = lift(L, base.buf, v, where);
                char *na = xasprintf("%s=${%s}", k, name);
                explicit_bzero(a, strlen(a));
                free(a);
                s->args.v[i] = na;
                free(k);
                free(where);
                continue;
            }
            free(k);
        }
        if (a[0] == '-' && i + 1 < s->args.n && !strchr(a, '=') && lsec_key_secretish(a)) {
            /* --token VALUE */
            char *v = s->args.v[i + 1];
            if (v[0] != '-' && liftable(a, v) && lsec_value_literal(v)) {
                char *w2 = xasprintf("%s args[%zu]", s->name, i + 1);
                ref_name(a, NULL, &base);
                const char *name = lift(L, base.buf, v, w2);
                free(w2);
                char *nv = xasprintf("${%s}", name);
                explicit_bzero(v, strlen(v));
                free(v);
                s->args.v[i + 1] = nv;
                i++;
                free(where);
                continue;
            }
        }
        if (lsec_value_shape(a) != LSEC_NONE) {
            const char *name = lift(L, server_ref, a, where);
            char *na = xasprintf("${%s}", name);
            explicit_bzero(a, strlen(a));
            free(a);
            s->args.v[i] = na;
        }
        free(where);
    }
    sb_release(&base);
}

/* Query parameters with a secret-looking name, and a userinfo password. */
static void lift_url(struct lifter *L, struct onb_server *s, const char *server_ref)
{
    if (!s->url || has_ref(s->url))
        return;
    strbuf out = SB_INIT, base = SB_INIT;
    const char *u = s->url;
    bool changed = false;
    const char *scheme_end = strstr(u, "://");
    const char *auth = scheme_end ? scheme_end + 3 : u;
    const char *auth_end = auth + strcspn(auth, "/?#");
    const char *at = memchr(auth, '@', (size_t)(auth_end - auth));
    const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    if (colon && at > colon + 1) {
        char *pw = xstrndup(colon + 1, (size_t)(at - colon - 1));
        char *where = xasprintf("%s url password", s->name);
        strbuf nm = SB_INIT;
        sb_addf(&nm, "%s", server_ref);
        /* server_ref ends in _TOKEN; a password reads better as _PASSWORD */
        if (nm.len > 6 && strcmp(nm.buf + nm.len - 6, "_TOKEN") == 0)
            sb_setlen(&nm, nm.len - 6);
        sb_adds(&nm, "_PASSWORD");
        const char *name = lift(L, nm.buf, pw, where);
        sb_add(&out, u, (size_t)(colon + 1 - u));
        sb_addf(&out, "${%s}", name);
        u = at;
        changed = true;
        explicit_bzero(pw, strlen(pw));
        free(pw);
        free(where);
        sb_release(&nm);
    }
    const char *q = strchr(u, '?');
    if (!q) {
        sb_adds(&out, u);
    } else {
        sb_add(&out, u, (size_t)(q + 1 - u));
        const char *p = q + 1;
        while (*p) {
            size_t n = strcspn(p, "&#");
            const char *eq = memchr(p, '=', n);
            if (eq) {
                char *k = xstrndup(p, (size_t)(eq - p));
                char *v = xstrndup(eq + 1, n - (size_t)(eq + 1 - p));
                if ((lsec_key_secretish(k) && strlen(v) >= 6) || lsec_value_shape(v) != LSEC_NONE) {
                    char *where = xasprintf("%s url ?%s", s->name, k);
                    ref_name(k, NULL, &base);
                    const char *name = lift(L, base.buf, v, where);
                    sb_addf(&out, "%s=${%s}", k, name);
                    free(where);
                    changed = true;
                } else {
                    sb_add(&out, p, n);
                }
                explicit_bzero(v, strlen(v));
                free(k);
                free(v);
            } else {
                sb_add(&out, p, n);
            }
            p += n;
            if (*p == '&') {
                sb_addc(&out, '&');
                p++;
            } else if (*p == '#') {
                sb_adds(&out, p);
                break;
            }
        }
    }
    if (changed) {
        explicit_bzero(s->url, strlen(s->url));
        free(s->url);
        s->url = sb_detach(&out, NULL);
    }
    sb_release(&out);
    sb_release(&base);
}

void onb_lift_secrets(struct onb_import *im, onb_taken_fn taken, void *ctx, onb_lifts *out)
{
    struct lifter L = {out, taken, ctx};
    strbuf sref = SB_INIT;
    for (size_t i = 0; i < im->servers.n; i++) {
        struct onb_server *s = &im->servers.v[i];
        ref_name(s->name, "_TOKEN", &sref);
        lift_headers(&L, s, sref.buf);
        lift_env(&L, s);
        lift_args(&L, s, sref.buf);
        lift_url(&L, s, sref.buf);
    }
    sb_release(&sref);
}
