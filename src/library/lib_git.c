/* git — the hardened git runner; see git.h. */
#include "library/git.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/proc.h"
#include "base/xalloc.h"
#include "bundle/git.h"
#include "bundle/git_run.h"

extern char **environ;

static const char *const pass_env[] = {
    "PATH",          "HOME",          "USER",
    "LOGNAME",       "TMPDIR",        "TZ",
    "SSH_AUTH_SOCK", "SSL_CERT_FILE", "SSL_CERT_DIR",
    "HTTP_PROXY",    "HTTPS_PROXY",   "NO_PROXY",
    "http_proxy",    "https_proxy",   "no_proxy",
    "ALL_PROXY",     "all_proxy",     "GIT_ALLOW_PROTOCOL",
};

static void build_env(strvec *env, bool global_config, const char *name, const char *email)
{
    bool have_proto = false;
    for (char **e = environ; e && *e; e++) {
        for (size_t i = 0; i < sizeof pass_env / sizeof *pass_env; i++) {
            size_t kl = strlen(pass_env[i]);
            if (strncmp(*e, pass_env[i], kl) == 0 && (*e)[kl] == '=') {
                strvec_push(env, *e);
                if (strcmp(pass_env[i], "GIT_ALLOW_PROTOCOL") == 0)
                    have_proto = true;
            }
        }
    }
    if (!have_proto)
        strvec_push(env, "GIT_ALLOW_PROTOCOL=https:ssh:file");
    strvec_push(env, "GIT_TERMINAL_PROMPT=0");
    strvec_push(env, "GIT_SSH_COMMAND=ssh -oBatchMode=yes");
    strvec_push(env, "GIT_LFS_SKIP_SMUDGE=1");
    strvec_push(env, "GIT_CONFIG_NOSYSTEM=1");
    strvec_push(env, "GIT_ASKPASS=");
    strvec_push(env, "GIT_PROXY_COMMAND=");
    strvec_push(env, "SSH_ASKPASS=");
    strvec_push(env, "LC_ALL=C");
    strvec_push(env, "LANGUAGE=C");
    if (!global_config)
        strvec_push(env, "GIT_CONFIG_GLOBAL=/dev/null");
    if (name && email) {
        strvec_pushf(env, "GIT_AUTHOR_NAME=%s", name);
        strvec_pushf(env, "GIT_AUTHOR_EMAIL=%s", email);
        strvec_pushf(env, "GIT_COMMITTER_NAME=%s", name);
        strvec_pushf(env, "GIT_COMMITTER_EMAIL=%s", email);
    }
}

static int run(const char *cwd, const char *const *args, strbuf *out, strbuf *errout,
               bool global_config, bool progress, struct as_err *err);

/* The user's identity for library commits, read once from their own
 * global config (a read-only `git config --get`); "agentstack" otherwise. */
static void identity(char **name, char **email)
{
    static char *n, *e;
    static bool done;
    if (!done) {
        done = true;
        strbuf o = SB_INIT;
        struct as_err err = AS_ERR_INIT;
        const char *a1[] = {"config", "--global", "--get", "user.name", NULL};
        if (run(NULL, a1, &o, NULL, true, false, &err) == 0) {
            sb_rtrim(&o);
            if (o.len)
                n = xstrdup(o.buf);
        }
        sb_reset(&o);
        const char *a2[] = {"config", "--global", "--get", "user.email", NULL};
        if (run(NULL, a2, &o, NULL, true, false, &err) == 0) {
            sb_rtrim(&o);
            if (o.len)
                e = xstrdup(o.buf);
        }
        sb_release(&o);
        if (!n)
            n = xstrdup("agentstack");
        if (!e)
            e = xstrdup("agentstack@localhost");
    }
    *name = n;
    *email = e;
}

static int run(const char *cwd, const char *const *args, strbuf *out, strbuf *errout,
               bool global_config, bool progress, struct as_err *err)
{
    strvec argv = STRVEC_INIT, env = STRVEC_INIT;
    strvec_push(&argv, "git");
    git_harden_argv(&argv); /* the one option list (bundle/git.h) */
    for (size_t i = 0; args[i]; i++)
        strvec_push(&argv, args[i]);
    char *name = NULL, *email = NULL;
    if (!global_config)
        identity(&name, &email);
    build_env(&env, global_config, name, email);

    /* The deadline, the group and the stream caps: bundle/git_run.h. */
    struct git_run r = {
        .argv = (const char *const *)argv.v,
        .envp = (const char *const *)env.v,
        .cwd = cwd,
        .out = out,
        .errout = errout,
        .max_stream = LIB_GIT_MAX_STREAM,
        .progress = progress,
        .verb = args[0],
    };
    int rc = git_run_bounded(&r, err);
    if (rc < 0 && strstr(err->msg, "command not found"))
        as_err_hint(err, "install git (apt-get install git) — the library and packs use it");
    strvec_clear(&argv);
    strvec_clear(&env);
    return rc;
}

int lib_git(const char *cwd, const char *const *args, strbuf *out, strbuf *errout,
            struct as_err *err)
{
    return run(cwd, args, out, errout, false, false, err);
}

int lib_git_net(const char *cwd, const char *const *args, strbuf *out, strbuf *errout,
                struct as_err *err)
{
    if (!git_progress_wanted())
        return run(cwd, args, out, errout, false, false, err);
    /* the same call with its -q turned into --progress, shown as it comes */
    size_t n = 0;
    while (args[n])
        n++;
    const char **v = xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = !strcmp(args[i], "-q") || !strcmp(args[i], "--quiet") ? "--progress" : args[i];
    int rc = run(cwd, v, out, errout, false, true, err);
    free(v);
    return rc;
}

void lib_git_last_line(const char *text, strbuf *out)
{
    sb_reset(out);
    const char *end = text + strlen(text);
    while (end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    sb_add(out, start, (size_t)(end - start));
}

int lib_git_ok(const char *cwd, const char *const *args, strbuf *out, struct as_err *err)
{
    strbuf e = SB_INIT;
    int st = lib_git(cwd, args, out, &e, err);
    if (st > 0) {
        strbuf last = SB_INIT;
        lib_git_last_line(e.buf, &last);
        as_err_set(err, "git %s failed: %s", args[0], last.len ? last.buf : "(no message)");
        sb_release(&last);
        st = -1;
    }
    sb_release(&e);
    return st < 0 ? -1 : 0;
}

int lib_git_url_check(const char *url, bool ingest, struct as_err *err)
{
    if (!url || !*url)
        return as_err_set(err, "empty git URL");
    if (url[0] == '-')
        return as_err_set(err, "refusing git URL '%s': it starts with '-'", url);
    if (strncmp(url, "ext::", 5) == 0 || strncmp(url, "fd::", 4) == 0 || strstr(url, "::"))
        return as_err_set(err,
                          "refusing git URL '%s': remote helpers (ext::, fd::) can run "
                          "commands",
                          url);
    if (ingest && strncmp(url, "http://", 7) == 0) {
        as_err_set(err, "refusing git URL '%s': plain http:// can be tampered with in transit",
                   url);
        as_err_hint(err, "use the https:// URL");
        return -1;
    }
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            return as_err_set(err, "refusing git URL with control characters");
    return 0;
}

bool lib_git_available(void)
{
    strbuf p = SB_INIT;
    bool ok = proc_which("git", NULL, &p) == 0;
    sb_release(&p);
    return ok;
}
