/* guard judge — path checks (deny globs, the machine home, write roots) and
 * the judgement of one classified action. */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "guard/guard_int.h"

bool gi_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return path[0] == '/';
    return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

void gi_clean(strbuf *out, const char *s, size_t max)
{
    size_t n = strlen(s);
    size_t cut = n > max ? max : n;
    while (cut < n && cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80)
        cut--;
    for (size_t i = 0; i < cut; i++) {
        unsigned char c = (unsigned char)s[i];
        sb_addc(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
    }
    if (cut < n)
        sb_adds(out, "…");
}

void guard_verdict_init(struct guard_verdict *v)
{
    memset(v, 0, sizeof *v);
    sb_init(&v->reason, 0);
    sb_init(&v->subject, 0);
}

void guard_verdict_release(struct guard_verdict *v)
{
    sb_release(&v->reason);
    sb_release(&v->subject);
}

void gi_deny(struct guard_verdict *v, bool by_rule, const char *fmt, ...)
{
    if (v->deny)
        return;
    v->deny = true;
    v->by_rule = by_rule;
    va_list ap;
    va_start(ap, fmt);
    sb_vaddf(&v->reason, fmt, ap);
    va_end(ap);
}

void gi_builtin_tail(const struct guard_ctx *x, strbuf *out)
{
    sb_addf(out, " (built-in rule; deny/allow lists: %s)", x->machine_display);
}

static bool has_ws(const char *s)
{
    return strpbrk(s, " \t\n\r") != NULL;
}

/* Where a denying glob came from, for the fix. */
void gi_glob_rule(const struct guard_ctx *x, const struct pol_decision *d, strbuf *rule,
                  strbuf *fix)
{
    bool guard_table =
        d->by == POL_BY_MACHINE && d->pattern && strvec_find(&x->guard_deny, d->pattern) >= 0;
    if (guard_table) {
        sb_addf(rule, "denied by [guard] deny rule \"%s\" (machine policy — %s)", d->pattern,
                x->machine_display);
        sb_addf(fix, "to allow it, remove \"%s\" from [guard] deny in %s", d->pattern,
                x->machine_display);
    } else {
        pol_decision_text(d, rule);
        if (d->by == POL_BY_MACHINE)
            sb_addf(fix, "to allow it, edit [policy.filesystem] deny in %s", x->machine_display);
        else
            sb_addf(fix, "to allow it, edit [policy.filesystem] deny in %s",
                    x->project_manifest ? x->project_manifest : "the project manifest");
    }
}

static int check_glob(const struct guard_ctx *x, const char *token, const char *abs,
                      const char *what, const char *outcome, bool for_write,
                      struct guard_verdict *v);

int gi_check_glob(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                  const char *outcome, struct guard_verdict *v)
{
    return check_glob(x, token, abs, what, outcome, false, v);
}

/* for_write: the target may not exist yet, and a symlinked directory on its
 * way decides where it lands; a read of a path that does not exist reads
 * nothing, so its lexical spellings are enough (one lstat, no realpath). */
static int check_glob(const struct guard_ctx *x, const char *token, const char *abs,
                      const char *what, const char *outcome, bool for_write,
                      struct guard_verdict *v)
{
    strvec sp = STRVEC_INIT;
    bool base = !has_ws(token);
    pol_fs_spellings(abs, x->workspace, x->home, base, &sp);
    strbuf real = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    struct stat st;
    bool look = for_write || lstat(abs, &st) == 0;
    if (look && fs_canonicalize(abs, &real, &e) == 0 && strcmp(real.buf, abs) != 0) {
        pol_fs_spellings(real.buf, x->workspace_real ? x->workspace_real : x->workspace, x->home,
                         base, &sp);
        pol_fs_spellings(real.buf, x->workspace, x->home, base, &sp);
    } else if (x->workspace_real && strcmp(x->workspace_real, x->workspace) != 0) {
        pol_fs_spellings(abs, x->workspace_real, x->home, base, &sp);
    }
    /* the token as written, when it is a relative path (matches "sub/.env" style globs) */
    if (token[0] && token[0] != '/' && token[0] != '~' && token[0] != '$')
        strvec_push(&sp, token);
    struct pol_decision d;
    int ok = pol_fs_allowed(x->rs, (const char *const *)sp.v, sp.n, &d);
    if (!ok) {
        strbuf rule = SB_INIT, fix = SB_INIT, tok = SB_INIT;
        gi_glob_rule(x, &d, &rule, &fix);
        gi_clean(&tok, token, 200);
        gi_deny(v, true, "%s %s was refused — %s · %s · %s", what, tok.buf, rule.buf, outcome,
                fix.buf);
        sb_release(&rule);
        sb_release(&fix);
        sb_release(&tok);
    }
    strvec_clear(&sp);
    sb_release(&real);
    return ok;
}

static bool in_roots(const strvec *roots, const char *p)
{
    for (size_t i = 0; i < roots->n; i++)
        if (gi_under(p, roots->v[i]))
            return true;
    return false;
}

/* Code git runs without the guard seeing it: hooks and the repository's
 * config (aliases, pagers, filters). */
static bool git_code_path(const char *p)
{
    size_t n = strlen(p);
    return strstr(p, "/.git/hooks/") != NULL || (n >= 11 && !strcmp(p + n - 11, "/.git/hooks")) ||
           (n >= 12 && !strcmp(p + n - 12, "/.git/config"));
}

static bool is_machine_file(const struct guard_ctx *x, const char *abs, const char *real,
                            bool resolved)
{
    if (x->machine_path && !strcmp(abs, x->machine_path))
        return true;
    if (x->machine_real && resolved && !strcmp(real, x->machine_real))
        return true;
    struct stat st;
    return x->machine_id && stat(abs, &st) == 0 &&
           (unsigned long long)st.st_dev == x->machine_dev &&
           (unsigned long long)st.st_ino == x->machine_ino;
}

int gi_check_write(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                   bool removal, struct guard_verdict *v)
{
    if (!check_glob(x, token, abs, what, "nothing was written", true, v))
        return 0;
    strbuf tok = SB_INIT;
    gi_clean(&tok, token, 200);
    if (gi_under(abs, "/dev")) {
        if (!strcmp(abs, "/dev/null") || !strcmp(abs, "/dev/stdout") ||
            !strcmp(abs, "/dev/stderr") || !strcmp(abs, "/dev/tty")) {
            sb_release(&tok);
            return 1;
        }
        strbuf t = SB_INIT;
        gi_builtin_tail(x, &t);
        gi_deny(v, true,
                "%s %s was refused — devices other than /dev/null, /dev/stdout, /dev/stderr and "
                "/dev/tty are never written · nothing was written%s",
                what, tok.buf, t.buf);
        sb_release(&t);
        sb_release(&tok);
        return 0;
    }
    strbuf real = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool resolved = fs_canonicalize(abs, &real, &e) == 0;
    bool home =
        gi_under(abs, x->ash) || (resolved && x->ash_real && gi_under(real.buf, x->ash_real));
    bool parent = removal && (gi_under(x->ash, abs) ||
                              (resolved && x->ash_real && gi_under(x->ash_real, real.buf)));
    if (home || parent || is_machine_file(x, abs, real.buf, resolved)) {
        gi_deny(v, true,
                "%s %s was refused — %s%s is agentstack's machine home (consent, policy and "
                "evidence); agents never write it, and allow_roots cannot lift this · nothing "
                "was written",
                what, tok.buf, parent && !home ? "it holds " : "",
                home || parent ? x->ash : "the machine file of");
        sb_release(&real);
        sb_release(&tok);
        return 0;
    }
    if (git_code_path(abs) || (resolved && git_code_path(real.buf))) {
        strbuf t = SB_INIT;
        gi_builtin_tail(x, &t);
        gi_deny(v, true,
                "%s %s was refused — git runs what its hooks and config say without the guard "
                "seeing it · nothing was written · change git settings with git config, which "
                "the guard judges%s",
                what, tok.buf, t.buf);
        sb_release(&t);
        sb_release(&real);
        sb_release(&tok);
        return 0;
    }
    bool ok = in_roots(&x->roots, abs) && (!resolved || in_roots(&x->roots_real, real.buf));
    if (!ok) {
        strbuf parentdir = SB_INIT;
        sb_adds(&parentdir, abs);
        char *slash = strrchr(parentdir.buf, '/');
        if (slash && slash != parentdir.buf)
            sb_setlen(&parentdir, (size_t)(slash - parentdir.buf));
        else
            sb_setlen(&parentdir, 1);
        gi_deny(v, true,
                "%s %s was refused — it is outside the workspace (%s), the temp dirs and "
                "[guard] allow_roots%s · nothing was written · to allow it, add "
                "allow_roots = [\"%s\"] under [guard] in %s",
                what, tok.buf, x->workspace,
                resolved && strcmp(real.buf, abs) != 0 && in_roots(&x->roots, abs)
                    ? " (through a symlink)"
                    : "",
                parentdir.buf, x->machine_display);
        sb_release(&parentdir);
    }
    sb_release(&real);
    sb_release(&tok);
    return ok;
}

/* The machine home's secrets: the signing key, the file secret store, the
 * audit key. */
static bool home_secret(const char *ash, const char *p)
{
    if (!ash || !gi_under(p, ash))
        return false;
    const char *rel = p + strlen(ash);
    if (*rel == '/')
        rel++;
    return !strcmp(rel, "keys") || !strncmp(rel, "keys/", 5) || !strcmp(rel, "secrets.env") ||
           !strcmp(rel, "audit/key");
}

static int check_secret(const struct guard_ctx *x, const char *token, const char *abs,
                        const char *what, const char *outcome, struct guard_verdict *v);

int gi_check_read(const struct guard_ctx *x, const char *token, const char *abs,
                  struct guard_verdict *v)
{
    return check_secret(x, token, abs, "a read of", "nothing was read", v);
}

int gi_check_name(const struct guard_ctx *x, const char *token, const char *abs,
                  struct guard_verdict *v)
{
    return check_secret(x, token, abs, "a command naming", "the command did not run", v);
}

static int check_secret(const struct guard_ctx *x, const char *token, const char *abs,
                        const char *what, const char *outcome, struct guard_verdict *v)
{
    if (!gi_check_glob(x, token, abs, what, outcome, v))
        return 0;
    strbuf real = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    struct stat st;
    bool secret = home_secret(x->ash, abs) ||
                  (x->ash_real && lstat(abs, &st) == 0 && fs_canonicalize(abs, &real, &e) == 0 &&
                   home_secret(x->ash_real, real.buf));
    sb_release(&real);
    if (secret) {
        strbuf tok = SB_INIT;
        gi_clean(&tok, token, 200);
        gi_deny(v, true,
                "%s %s was refused — it is one of agentstack's own secrets (signing key, secret "
                "store, audit key) · %s",
                what, tok.buf, outcome);
        sb_release(&tok);
        return 0;
    }
    return 1;
}

/* ---- actions ------------------------------------------------------------- */

void guard_judge_read(const struct guard_ctx *x, const char *path, struct guard_verdict *v)
{
    strbuf abs = SB_INIT;
    guard_lexical(x->cwd, x->home, path, &abs);
    gi_check_read(x, path, abs.buf, v);
    sb_release(&abs);
}

void guard_judge_write(const struct guard_ctx *x, const char *path, struct guard_verdict *v)
{
    strbuf abs = SB_INIT;
    guard_lexical(x->cwd, x->home, path, &abs);
    gi_check_write(x, path, abs.buf, "a write to", false, v);
    sb_release(&abs);
}

/* A tool glob as queries for pol_fs_may_deny: {a,b} and [..] widened to
 * wildcards; a glob without '/' matches a file name at any depth. */
void guard_judge_glob(const struct guard_ctx *x, const char *base, const char *glob, bool content,
                      struct guard_verdict *v)
{
    strbuf g = SB_INIT, b = SB_INIT, abs = SB_INIT, deep = SB_INIT;
    for (const char *p = glob; *p; p++) {
        if (*p == '{') {
            const char *e = strchr(p, '}');
            if (e) {
                sb_addc(&g, '*');
                p = e;
                continue;
            }
        }
        if (*p == '[') {
            const char *e = strchr(p + 1, ']');
            if (e) {
                sb_addc(&g, '?');
                p = e;
                continue;
            }
        }
        sb_addc(&g, *p == '\\' ? '?' : *p);
    }
    const char *q = g.buf;
    while (q[0] == '.' && q[1] == '/')
        q += 2;
    guard_lexical(x->cwd, x->home, base && base[0] ? base : ".", &b);
    guard_lexical(b.buf, x->home, q, &abs);
    const char *last = strrchr(abs.buf, '/');
    last = last ? last + 1 : abs.buf;
    bool literal = false;
    for (const char *p = last; *p; p++)
        literal |= *p != '*' && *p != '?';
    if (!content && !literal)
        goto out;
    const char *qs[4];
    size_t n = 0;
    qs[n++] = abs.buf;
    size_t wl = strlen(x->workspace);
    if (!strncmp(abs.buf, x->workspace, wl) && abs.buf[wl] == '/')
        qs[n++] = abs.buf + wl + 1;
    if (!strchr(q, '/')) {
        sb_addf(&deep, "%s/**/%s", b.buf, q);
        qs[n++] = deep.buf;
    }
    qs[n++] = last; /* the file name the glob selects */
    struct pol_decision d;
    if (!pol_fs_may_deny(x->rs, qs, n, POL_MAY_DENY_NAMED, &d)) {
        strbuf rule = SB_INIT, fix = SB_INIT, tok = SB_INIT;
        gi_glob_rule(x, &d, &rule, &fix);
        gi_clean(&tok, glob, 200);
        gi_deny(v, true,
                "a search over %s was refused — the pattern can select a denied file (%s) · "
                "nothing was read · %s",
                tok.buf, rule.buf, fix.buf);
        sb_release(&rule);
        sb_release(&fix);
        sb_release(&tok);
    }
out:
    sb_release(&g);
    sb_release(&b);
    sb_release(&abs);
    sb_release(&deep);
}

void guard_judge_shell(const struct guard_ctx *x, const char *cmd, struct guard_verdict *v)
{
    gi_judge_shell(x, cmd, strlen(cmd), 0, v);
}

static void subject_paths(strbuf *s, const char *prefix, const strvec *paths)
{
    strbuf all = SB_INIT;
    for (size_t i = 0; i < paths->n; i++)
        sb_addf(&all, "%s%s", i ? ", " : "", paths->v[i]);
    sb_adds(s, prefix);
    guard_redact(all.buf, all.len, s);
    sb_release(&all);
}

void guard_judge(const struct guard_ctx *x, const struct guard_action *a, struct guard_verdict *v)
{
    switch (a->kind) {
    case GUARD_K_NONE:
        sb_adds(&v->subject, "other");
        break;
    case GUARD_K_READ:
        subject_paths(&v->subject, "read: ", &a->paths);
        for (size_t i = 0; i < a->paths.n && !v->deny; i++)
            guard_judge_read(x, a->paths.v[i], v);
        break;
    case GUARD_K_WRITE:
        subject_paths(&v->subject, "write: ", &a->paths);
        for (size_t i = 0; i < a->paths.n && !v->deny; i++)
            guard_judge_write(x, a->paths.v[i], v);
        break;
    case GUARD_K_WRITE_UNKNOWN: {
        sb_adds(&v->subject, "write: (target undetermined)");
        strbuf t = SB_INIT;
        gi_clean(&t, a->tool ? a->tool : "a writer tool", 100);
        gi_deny(v, true,
                "a write by %s named no file the guard could check · nothing was written · "
                "write with a tool call that names its target file",
                t.buf);
        sb_release(&t);
        break;
    }
    case GUARD_K_SHELL:
        sb_adds(&v->subject, "bash: ");
        guard_redact(a->command, strlen(a->command), &v->subject);
        guard_judge_shell(x, a->command, v);
        break;
    }
    /* a shell action that also named a path (an unusual tool): judge both */
    if (a->kind == GUARD_K_SHELL && a->paths.n && !v->deny)
        for (size_t i = 0; i < a->paths.n && !v->deny; i++)
            guard_judge_read(x, a->paths.v[i], v);
    /* what a writer reads, and every file glob */
    for (size_t i = 0; i < a->reads.n && !v->deny; i++)
        guard_judge_read(x, a->reads.v[i], v);
    for (size_t i = 0; i < a->globs.n && !v->deny; i++)
        guard_judge_glob(x, a->glob_base, a->globs.v[i], a->glob_content, v);
    if (v->deny && a->globs.n && a->kind == GUARD_K_READ && !a->paths.n) {
        sb_reset(&v->subject);
        subject_paths(&v->subject, "read: ", &a->globs);
    }
    if (v->subject.len > GUARD_TOOL_MAX) {
        size_t cut = GUARD_TOOL_MAX;
        while (cut > 0 && ((unsigned char)v->subject.buf[cut] & 0xC0) == 0x80)
            cut--;
        sb_setlen(&v->subject, cut);
    }
}

void guard_action_free(struct guard_action *a)
{
    free(a->tool);
    free(a->command);
    free(a->cwd);
    free(a->cwd_rel);
    free(a->glob_base);
    strvec_clear(&a->paths);
    strvec_clear(&a->reads);
    strvec_clear(&a->globs);
    memset(a, 0, sizeof *a);
}
