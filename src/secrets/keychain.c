/*
 * The OS keychain through the freedesktop Secret Service (libsecret), see
 * backends.h. Items are service=agentstack, account=<NAME>. Without
 * libsecret at build time every call fails with "no keychain support in
 * this build"; without it at run time (it is dlopened on the first keychain
 * call, see secret_dl.h) every call fails with "libsecret is not installed:
 * apt-get install libsecret-1-0" — never a fallback.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "secrets/backends.h"

#ifdef AS_HAVE_LIBSECRET
#include "secrets/secret_dl.h"

/* Set by the probe once libsecret is loaded; every libsecret or glib call
 * below runs after a successful probe, so through this table. */
static const struct sec_libsecret *ls;

static const SecretSchema kc_schema = {
    "org.agentstack.Secret",
    SECRET_SCHEMA_DONT_MATCH_NAME,
    {
        {"service", SECRET_SCHEMA_ATTRIBUTE_STRING},
        {"account", SECRET_SCHEMA_ATTRIBUTE_STRING},
        {NULL, 0},
    },
    0,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
    NULL,
};

#if defined(__SANITIZE_ADDRESS__)
/* Sanitizer builds only: libsecret's search path leaks the small proxy
 * structs it builds for each item (inside libsecret/libgio, not ours).
 * The fast unwinder often stops in glib (no frame pointers there), so the
 * glib frame is named too; nothing else in agentstack allocates through glib,
 * so LeakSanitizer still fails on our own leaks. */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
    return "leak:libsecret-1.so\nleak:libgio-2.0.so\nleak:libglib-2.0.so\n";
}
#endif

/* A watchdog that cancels one libsecret call after the deadline, so a
 * keyring waiting on an unanswerable unlock prompt fails instead of hanging. */
struct kc_watch {
    GCancellable *cancel;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
    int fired;
    int started;
};

static void *kc_watch_main(void *arg)
{
    struct kc_watch *w = arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += SEC_KEYCHAIN_TIMEOUT_MS / 1000;
    until.tv_nsec += (long)(SEC_KEYCHAIN_TIMEOUT_MS % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&w->mu);
    while (!w->done) {
        if (pthread_cond_timedwait(&w->cv, &w->mu, &until) == ETIMEDOUT) {
            if (!w->done) {
                w->fired = 1;
                ls->g_cancellable_cancel(w->cancel);
            }
            break;
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

static void kc_watch_start(struct kc_watch *w)
{
    memset(w, 0, sizeof *w);
    w->cancel = ls->g_cancellable_new();
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->started = pthread_create(&w->thread, NULL, kc_watch_main, w) == 0;
}

/* Returns 1 when the watchdog cancelled the call. */
static int kc_watch_stop(struct kc_watch *w)
{
    pthread_mutex_lock(&w->mu);
    w->done = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (w->started)
        pthread_join(w->thread, NULL);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    ls->g_object_unref(w->cancel);
    return w->fired;
}

static void kc_cause(GError *gerr, int fired, struct as_err *err, const char *what)
{
    if (fired)
        as_err_set(err,
                   "%s: the Secret Service did not answer within %d s (is the keyring "
                   "locked, waiting for a password prompt?)",
                   what, SEC_KEYCHAIN_TIMEOUT_MS / 1000);
    else
        as_err_set(err, "%s: %s", what, gerr && gerr->message ? gerr->message : "unknown error");
}
#endif

bool sec_keychain_compiled(void)
{
#ifdef AS_HAVE_LIBSECRET
    return true;
#else
    return false;
#endif
}

/* A session bus is reachable when DBUS_SESSION_BUS_ADDRESS is set or the
 * systemd user bus socket exists. Checking first keeps GIO from trying X11
 * autolaunch on a headless machine. */
static int session_bus_present(void)
{
    const char *a = getenv("DBUS_SESSION_BUS_ADDRESS");
    if (a && *a)
        return 1;
    const char *rt = getenv("XDG_RUNTIME_DIR");
    char p[4096];
    if (rt && *rt)
        snprintf(p, sizeof p, "%s/bus", rt);
    else
        snprintf(p, sizeof p, "/run/user/%ld/bus", (long)getuid());
    struct stat st;
    return stat(p, &st) == 0 && S_ISSOCK(st.st_mode);
}

static int probe_done;
static int probe_ok;
/* As long as an error message: it carries the loader's error verbatim. */
static char probe_why[sizeof(((struct as_err *)0)->msg)];

#ifdef AS_HAVE_LIBSECRET
/* Checks that something owns (or can be activated as) org.freedesktop.secrets. */
static int probe_service(char *why, size_t n)
{
    struct kc_watch w;
    kc_watch_start(&w);
    GError *gerr = NULL;
    SecretService *svc = ls->service_get_sync(SECRET_SERVICE_OPEN_SESSION, w.cancel, &gerr);
    int fired = kc_watch_stop(&w);
    if (!svc) {
        snprintf(why, n, "no Secret Service on the session bus: %s",
                 fired ? "it did not answer in time"
                       : (gerr && gerr->message ? gerr->message : "unknown error"));
        if (gerr)
            ls->g_error_free(gerr);
        return -1;
    }
    ls->g_object_unref(svc);
    return 0;
}
#endif

int sec_keychain_probe(struct as_err *err)
{
    if (!probe_done) {
        probe_done = 1;
        probe_ok = 0;
#ifdef AS_HAVE_LIBSECRET
        /* The bus first: where there is none, the keychain is unusable
         * anyway and libsecret is never loaded. */
        struct as_err lerr = AS_ERR_INIT;
        if (!session_bus_present())
            snprintf(probe_why, sizeof probe_why,
                     "no Secret Service on the session bus: no D-Bus session bus "
                     "(DBUS_SESSION_BUS_ADDRESS is unset)");
        else if (!(ls = sec_libsecret_load(&lerr)))
            snprintf(probe_why, sizeof probe_why, "%s", lerr.msg);
        else if (probe_service(probe_why, sizeof probe_why) == 0)
            probe_ok = 1;
#else
        (void)session_bus_present;
        snprintf(probe_why, sizeof probe_why,
                 "no keychain support in this build "
                 "(built without libsecret)");
#endif
    }
    if (probe_ok)
        return 0;
    return as_err_set(err, "%s", probe_why);
}

int sec_keychain_store(const char *name, const char *value, size_t len, struct as_err *err)
{
    if (sec_value_check(SEC_STORE_KEYCHAIN, value, len, err) < 0)
        return -1;
    if (sec_keychain_probe(err) < 0)
        return -1;
#ifdef AS_HAVE_LIBSECRET
    char label[256];
    snprintf(label, sizeof label, "agentstack: %s", name);
    SecretValue *sv = ls->value_new(value, (gssize)len, "text/plain");
    struct kc_watch w;
    kc_watch_start(&w);
    GError *gerr = NULL;
    gboolean ok = ls->password_store_binary_sync(&kc_schema, SECRET_COLLECTION_DEFAULT, label, sv,
                                                 w.cancel, &gerr, "service", SEC_KEYCHAIN_SERVICE,
                                                 "account", name, NULL);
    int fired = kc_watch_stop(&w);
    ls->value_unref(sv);
    if (!ok) {
        kc_cause(gerr, fired, err, "keychain write failed");
        if (gerr)
            ls->g_error_free(gerr);
        return -1;
    }
    return 0;
#else
    (void)name;
    return -1;
#endif
}

#ifdef AS_HAVE_LIBSECRET
static enum sec_status lookup_once(const char *name, strbuf *out, struct as_err *err)
{
    struct kc_watch w;
    kc_watch_start(&w);
    GError *gerr = NULL;
    SecretValue *sv = ls->password_lookup_binary_sync(&kc_schema, w.cancel, &gerr, "service",
                                                      SEC_KEYCHAIN_SERVICE, "account", name, NULL);
    int fired = kc_watch_stop(&w);
    if (gerr || fired) {
        kc_cause(gerr, fired, err, "keychain read failed");
        if (gerr)
            ls->g_error_free(gerr);
        if (sv)
            ls->value_unref(sv);
        return SEC_FAILED;
    }
    if (!sv)
        return SEC_MISSING;
    gsize n = 0;
    const gchar *p = ls->value_get(sv, &n);
    sb_add(out, p, n);
    ls->value_unref(sv);
    return SEC_FOUND;
}
#endif

enum sec_status sec_keychain_lookup(const char *name, strbuf *out, struct as_err *err)
{
    struct as_err perr = AS_ERR_INIT;
    if (sec_keychain_probe(&perr) < 0) {
        as_err_set(err, "keychain read failed: %s", perr.msg);
        return SEC_FAILED;
    }
#ifdef AS_HAVE_LIBSECRET
    enum sec_status st = lookup_once(name, out, err);
    if (st == SEC_FAILED) {
        /* One retry (a freshly activated daemon may drop the first call). */
        sb_release_secure(out);
        as_err_clear(err);
        st = lookup_once(name, out, err);
    }
    return st;
#else
    (void)name;
    (void)out;
    return SEC_FAILED;
#endif
}

int sec_keychain_delete(const char *name, bool *existed, struct as_err *err)
{
    if (existed)
        *existed = false;
    if (sec_keychain_probe(err) < 0)
        return -1;
#ifdef AS_HAVE_LIBSECRET
    struct kc_watch w;
    kc_watch_start(&w);
    GError *gerr = NULL;
    gboolean had = ls->password_clear_sync(&kc_schema, w.cancel, &gerr, "service",
                                           SEC_KEYCHAIN_SERVICE, "account", name, NULL);
    int fired = kc_watch_stop(&w);
    if (gerr || fired) {
        kc_cause(gerr, fired, err, "keychain delete failed");
        if (gerr)
            ls->g_error_free(gerr);
        return -1;
    }
    if (existed)
        *existed = had;
    return 0;
#else
    (void)name;
    return -1;
#endif
}

int sec_keychain_names(strvec *names, struct as_err *err)
{
    if (sec_keychain_probe(err) < 0)
        return -1;
#ifdef AS_HAVE_LIBSECRET
    struct kc_watch w;
    kc_watch_start(&w);
    GError *gerr = NULL;
    /* No SECRET_SEARCH_UNLOCK / LOAD_SECRETS: attributes only. */
    GList *items = ls->password_search_sync(&kc_schema, SECRET_SEARCH_ALL, w.cancel, &gerr,
                                            "service", SEC_KEYCHAIN_SERVICE, NULL);
    int fired = kc_watch_stop(&w);
    if (gerr || fired) {
        kc_cause(gerr, fired, err, "keychain search failed");
        if (gerr)
            ls->g_error_free(gerr);
        ls->g_list_free_full(items, ls->g_object_unref);
        return -1;
    }
    for (GList *l = items; l; l = l->next) {
        /* A plain cast, not SECRET_RETRIEVABLE(): the checked cast calls two
         * more glib functions, and the search returns SecretRetrievable items
         * by contract. */
        GHashTable *attrs = ls->retrievable_get_attributes((SecretRetrievable *)l->data);
        const char *acct = attrs ? ls->g_hash_table_lookup(attrs, "account") : NULL;
        if (acct && strvec_find(names, acct) < 0)
            strvec_push(names, acct);
        if (attrs)
            ls->g_hash_table_unref(attrs);
    }
    ls->g_list_free_full(items, ls->g_object_unref);
    strvec_sort(names);
    return 0;
#else
    (void)names;
    return -1;
#endif
}

static enum sec_status kc_backend_lookup(void *ctx, const char *name, strbuf *out,
                                         struct as_err *err)
{
    (void)ctx;
    return sec_keychain_lookup(name, out, err);
}

struct sec_backend sec_backend_keychain(void)
{
    struct sec_backend b = {"keychain", kc_backend_lookup, NULL, NULL};
    return b;
}
