/* guard judge — path checks (deny globs, the machine home, write roots) and
 * the judgement of one classified action (spec 03 §7.4). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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
static void glob_rule(const struct guard_ctx *x, const struct pol_decision *d, strbuf *rule,
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

int gi_check_glob(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                  const char *outcome, struct guard_verdict *v)
{
    strvec sp = STRVEC_INIT;
    bool base = !has_ws(token);
    pol_fs_spellings(abs, x->workspace, x->home, base, &sp);
    strbuf real = SB_INIT, wsr = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    if (fs_canonicalize(abs, &real, &e) == 0) {
        if (fs_canonicalize(x->workspace, &wsr, &e) != 0)
            sb_adds(&wsr, x->workspace);
        pol_fs_spellings(real.buf, wsr.buf, x->home, base, &sp);
        pol_fs_spellings(real.buf, x->workspace, x->home, base, &sp);
    }
    /* the token as written, when it is a relative path (matches "sub/.env" style globs) */
    if (token[0] && token[0] != '/' && token[0] != '~' && token[0] != '$')
        strvec_push(&sp, token);
    struct pol_decision d;
    int ok = pol_fs_allowed(x->rs, (const char *const *)sp.v, sp.n, &d);
    if (!ok) {
        strbuf rule = SB_INIT, fix = SB_INIT, tok = SB_INIT;
        glob_rule(x, &d, &rule, &fix);
        gi_clean(&tok, token, 200);
        gi_deny(v, true, "%s %s was refused — %s · %s · %s", what, tok.buf, rule.buf, outcome,
                fix.buf);
        sb_release(&rule);
        sb_release(&fix);
        sb_release(&tok);
    }
    strvec_clear(&sp);
    sb_release(&real);
    sb_release(&wsr);
    return ok;
}

static bool in_roots(const strvec *roots, const char *p)
{
    for (size_t i = 0; i < roots->n; i++)
        if (gi_under(p, roots->v[i]))
            return true;
    return false;
}

int gi_check_write(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                   struct guard_verdict *v)
{
    if (!gi_check_glob(x, token, abs, what, "nothing was written", v))
        return 0;
    strbuf tok = SB_INIT;
    gi_clean(&tok, token, 200);
    if (gi_under(abs, "/dev")) {
        if (!strcmp(abs, "/dev/null") || !strcmp(abs, "/dev/stdout") ||
            !strcmp(abs, "/dev/stderr")) {
            sb_release(&tok);
            return 1;
        }
        strbuf t = SB_INIT;
        gi_builtin_tail(x, &t);
        gi_deny(v, true,
                "%s %s was refused — devices other than /dev/null, /dev/stdout and "
                "/dev/stderr are never written · nothing was written%s",
                what, tok.buf, t.buf);
        sb_release(&t);
        sb_release(&tok);
        return 0;
    }
    strbuf real = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool resolved = fs_canonicalize(abs, &real, &e) == 0;
    if (gi_under(abs, x->ash) || (resolved && x->ash_real && gi_under(real.buf, x->ash_real))) {
        gi_deny(v, true,
                "%s %s was refused — %s is agentstack's machine home (consent, policy and "
                "evidence); agents never write it, and allow_roots cannot lift this · nothing "
                "was written",
                what, tok.buf, x->ash);
        sb_release(&real);
        sb_release(&tok);
        return 0;
    }
    bool ok = in_roots(&x->roots, abs) && (!resolved || in_roots(&x->roots_real, real.buf));
    if (!ok) {
        strbuf parent = SB_INIT;
        sb_adds(&parent, abs);
        char *slash = strrchr(parent.buf, '/');
        if (slash && slash != parent.buf)
            sb_setlen(&parent, (size_t)(slash - parent.buf));
        else
            sb_setlen(&parent, 1);
        gi_deny(v, true,
                "%s %s was refused — it is outside the workspace (%s), the temp dirs and "
                "[guard] allow_roots%s · nothing was written · to allow it, add "
                "allow_roots = [\"%s\"] under [guard] in %s",
                what, tok.buf, x->workspace,
                resolved && strcmp(real.buf, abs) != 0 && in_roots(&x->roots, abs)
                    ? " (through a symlink)"
                    : "",
                parent.buf, x->machine_display);
        sb_release(&parent);
    }
    sb_release(&real);
    sb_release(&tok);
    return ok;
}

/* ---- actions ------------------------------------------------------------- */

void guard_judge_read(const struct guard_ctx *x, const char *path, struct guard_verdict *v)
{
    strbuf abs = SB_INIT;
    guard_lexical(x->cwd, x->home, path, &abs);
    gi_check_glob(x, path, abs.buf, "a read of", "nothing was read", v);
    sb_release(&abs);
}

void guard_judge_write(const struct guard_ctx *x, const char *path, struct guard_verdict *v)
{
    strbuf abs = SB_INIT;
    guard_lexical(x->cwd, x->home, path, &abs);
    gi_check_write(x, path, abs.buf, "a write to", v);
    sb_release(&abs);
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
    strvec_clear(&a->paths);
    memset(a, 0, sizeof *a);
}
