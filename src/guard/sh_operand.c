/* sh operand — one file a command names, reads, writes or removes, checked
 * as the guard checks paths (deny globs, the machine home, write roots,
 * the protected directories of removals), also when the word is a glob:
 * statically (a pattern that spells a denied name, can reach the machine
 * home, or removes everything in a protected directory) and against the
 * files it matches now, dotfiles included. A word that does not resolve is
 * refused as unreadable, never guessed. */
#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "guard/sh_judge.h"

/* ---- operands ------------------------------------------------------------ */

const char *sh_abs(struct sh_j *j, const struct sh_st *st, const char *path)
{
    strbuf b = SB_INIT;
    guard_lexical(st->cwd ? st->cwd : j->x->cwd, j->x->home, path, &b);
    const char *r = sh_strndup(j->a, b.buf, b.len);
    sb_release(&b);
    return r;
}

static bool removes(enum sh_op op)
{
    return op == OP_DELETE || op == OP_MOVE || op == OP_RECURSE;
}

/* A literal path. */
static int path_check(struct sh_j *j, struct sh_cmd *c, const char *token, const char *abs,
                      enum sh_op op, const char *cmdname)
{
    const struct guard_ctx *x = j->x;
    switch (op) {
    case OP_NAME:
        return gi_check_name(x, token, abs, j->v);
    case OP_READ:
        return gi_check_read(x, token, abs, j->v);
    case OP_WRITE:
        return gi_check_write(x, token, abs, "a write to", false, j->v);
    case OP_MOVE:
        return gi_check_write(x, token, abs, "a move of", true, j->v);
    case OP_DELETE:
    case OP_RECURSE: {
        bool ws = op == OP_DELETE;
        const char *what = !strcmp(abs, "/")                   ? "/"
                           : x->home && !strcmp(abs, x->home)  ? "your home directory"
                           : x->home && gi_under(x->home, abs) ? "a parent of your home"
                           : ws && !strcmp(abs, x->workspace)  ? "the workspace root"
                           : ws && gi_under(x->workspace, abs) ? "a parent of the workspace"
                                                               : NULL;
        (void)c;
        if (what) {
            strbuf t = SB_INIT;
            gi_clean(&t, token, 200);
            sh_deny_builtin(j, "%s %s was refused — it would remove %s", cmdname, t.buf, what);
            sb_release(&t);
            return 0;
        }
        return gi_check_write(x, token, abs, "a delete of", true, j->v);
    }
    }
    return 0;
}

/* The shell pattern of a glob word as a query (see pol_fs_may_deny): '*'
 * and "**" kept, '?' and bracket expressions as '?', a quoted * or ? as '?'.
 * esc: the same for glob(3), quoted bytes escaped. */
static void glob_forms(const struct sh_xw *w, strbuf *query, strbuf *esc)
{
    for (size_t i = 0; i < w->len; i++) {
        char ch = w->text[i];
        bool act = w->active[i];
        if (act && ch == '[') {
            size_t k = i + 1;
            if (k < w->len && (w->text[k] == '!' || w->text[k] == '^'))
                k++;
            if (k < w->len && w->text[k] == ']')
                k++;
            while (k < w->len && !(w->text[k] == ']' && w->active[k]))
                k++;
            if (k < w->len) {
                sb_addc(query, '?');
                sb_add(esc, w->text + i, k - i + 1);
                i = k;
                continue;
            }
        }
        if (act && (ch == '*' || ch == '?')) {
            sb_addc(query, ch);
            sb_addc(esc, ch);
            continue;
        }
        sb_addc(query, (ch == '*' || ch == '?') ? '?' : ch);
        if (strchr("*?[\\", ch))
            sb_addc(esc, '\\');
        sb_addc(esc, ch);
    }
}

/* Could the absolute query pattern q name the machine home, something in
 * it, or (removals) one of its parents? */
static bool glob_hits_home(const struct guard_ctx *x, const char *q, bool removal)
{
    const char *homes[2] = {x->ash, x->ash_real};
    for (int h = 0; h < 2; h++) {
        const char *ash = homes[h];
        if (!ash)
            continue;
        strbuf in = SB_INIT;
        sb_addf(&in, "%s/*", ash);
        bool hit = pol_glob_intersects(ash, strlen(ash), q, strlen(q)) ||
                   pol_glob_intersects(in.buf, in.len, q, strlen(q));
        sb_release(&in);
        for (size_t l = strlen(ash); removal && !hit && l > 1; l--)
            if (ash[l - 1] == '/' && l - 1 > 0)
                hit = pol_glob_intersects(ash, l - 1, q, strlen(q));
        if (hit)
            return true;
    }
    return false;
}

/* The files an absolute glob (quoted bytes backslash-escaped) matches now,
 * component by component with readdir + fnmatch, dotfiles included (the
 * guard assumes dotglob: more matches, never fewer). Bounded: -1 when more
 * than SH_MAX_GLOB match or more than SH_GLOB_VISIT directory entries are
 * read, so a pattern over the whole disk cannot stall the hook. */
#define SH_GLOB_VISIT 20000

static bool has_meta(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) {
            i++;
            continue;
        }
        if (s[i] == '*' || s[i] == '?' || s[i] == '[')
            return true;
    }
    return false;
}

static void unescape(const char *s, size_t n, strbuf *out)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n)
            i++;
        sb_addc(out, s[i]);
    }
}

static int bounded_glob(const char *pat, strvec *out)
{
    strvec cur = STRVEC_INIT, next = STRVEC_INIT;
    strvec_push(&cur, "");
    size_t visited = 0;
    int rc = 0;
    const char *p = pat;
    while (*p == '/')
        p++;
    while (*p && rc == 0) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == 0) {
            p++;
            continue;
        }
        char *comp = xstrndup(p, l);
        bool meta = has_meta(p, l);
        for (size_t i = 0; i < cur.n && rc == 0; i++) {
            strbuf b = SB_INIT;
            if (!meta) {
                sb_addf(&b, "%s/", cur.v[i]);
                unescape(p, l, &b);
                struct stat st;
                if (lstat(b.buf, &st) == 0)
                    strvec_push(&next, b.buf);
                sb_release(&b);
                continue;
            }
            DIR *d = opendir(cur.v[i][0] ? cur.v[i] : "/");
            struct dirent *de;
            while (d && (de = readdir(d))) {
                if (++visited > SH_GLOB_VISIT) {
                    rc = -1;
                    break;
                }
                if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
                    continue;
                if (fnmatch(comp, de->d_name, 0) != 0)
                    continue;
                sb_reset(&b);
                sb_addf(&b, "%s/%s", cur.v[i], de->d_name);
                strvec_push(&next, b.buf);
                if (next.n > SH_MAX_GLOB)
                    rc = -1;
            }
            if (d)
                closedir(d);
            sb_release(&b);
        }
        free(comp);
        strvec_clear(&cur);
        cur = next;
        memset(&next, 0, sizeof next);
        p += l;
    }
    for (size_t i = 0; rc == 0 && i < cur.n; i++)
        strvec_push(out, cur.v[i][0] ? cur.v[i] : "/");
    strvec_clear(&cur);
    strvec_clear(&next);
    return rc;
}

static int glob_operand(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *w, enum sh_op op,
                        const char *cmdname)
{
    const struct guard_ctx *x = j->x;
    strbuf q = SB_INIT, esc = SB_INIT, qa = SB_INIT, ea = SB_INIT;
    glob_forms(w, &q, &esc);
    guard_lexical(c->st->cwd, x->home, q.buf, &qa);
    guard_lexical(c->st->cwd, x->home, esc.buf, &ea);
    const char *show = sh_show(j, w);
    int ok = 1;
    /* 1. statically: a pattern that spells a denied name */
    const char *last = strrchr(qa.buf, '/');
    last = last ? last + 1 : qa.buf;
    bool literal_last = false;
    for (const char *p = last; *p; p++)
        literal_last |= *p != '*' && *p != '?';
    if (literal_last) {
        const char *qs[3];
        size_t nq = 0;
        qs[nq++] = qa.buf;
        size_t wl = strlen(x->workspace);
        if (!strncmp(qa.buf, x->workspace, wl) && qa.buf[wl] == '/')
            qs[nq++] = qa.buf + wl + 1;
        qs[nq++] = last;
        struct pol_decision d;
        if (!pol_fs_may_deny(x->rs, qs, nq, POL_MAY_DENY_NAMED, &d)) {
            strbuf rule = SB_INIT, fix = SB_INIT;
            gi_glob_rule(x, &d, &rule, &fix);
            sb_release(&fix);
            gi_deny(j->v, true,
                    "%s %s was refused — the pattern can match a denied name (%s) · the command "
                    "did not run · name the files you mean without a wildcard",
                    op == OP_NAME || op == OP_READ ? "a command naming" : "a write to", show,
                    rule.buf);
            sb_release(&rule);
            ok = 0;
            goto out;
        }
    }
    /* 2. writes: the machine home, the directory the matches are in */
    if (op != OP_NAME && op != OP_READ) {
        if (glob_hits_home(x, qa.buf, removes(op))) {
            gi_deny(j->v, true,
                    "a write to %s was refused — the pattern can match agentstack's machine "
                    "home %s (consent, policy and evidence); agents never write it · nothing was "
                    "written",
                    show, x->ash);
            ok = 0;
            goto out;
        }
        /* the literal directory before the first wildcard component */
        strbuf dir = SB_INIT;
        const char *p = qa.buf, *cut = qa.buf;
        for (const char *s = qa.buf; *s; s++) {
            if (*s == '/')
                cut = s;
            if (*s == '*' || *s == '?')
                break;
            p = s;
        }
        (void)p;
        sb_add(&dir, qa.buf, cut > qa.buf ? (size_t)(cut - qa.buf) : 1);
        const char *comp = cut + (cut[0] == '/');
        size_t cl = strcspn(comp, "/");
        bool match_all = true;
        for (size_t k = 0; k < cl; k++)
            match_all &= comp[k] == '*' || comp[k] == '?' || (k == 0 && comp[k] == '.');
        if ((op == OP_DELETE || op == OP_RECURSE) && match_all) {
            bool ws = op == OP_DELETE;
            const char *d = dir.buf;
            const char *what = !strcmp(d, "/")                   ? "/"
                               : x->home && gi_under(x->home, d) ? "your home directory"
                               : ws && gi_under(x->workspace, d) ? "the workspace root"
                                                                 : NULL;
            if (what) {
                sh_deny_builtin(j, "%s %s was refused — it would remove everything in %s", cmdname,
                                show, what);
                ok = 0;
            }
        }
        if (ok)
            ok = gi_check_write(x, show, dir.buf, removes(op) ? "a delete in" : "a write in", false,
                                j->v);
        sb_release(&dir);
        if (!ok)
            goto out;
    }
    /* 3. what the pattern matches now, file by file (dotfiles too) */
    strvec matches = STRVEC_INIT;
    int rc = bounded_glob(ea.buf, &matches);
    if (rc < 0) {
        sh_unreadable(j, c,
                      "%s matches more files than the guard reads (%d) or reaches too "
                      "many directories",
                      show, SH_MAX_GLOB);
        ok = j->v->deny ? 0 : 1;
    } else {
        for (size_t i = 0; i < matches.n && ok; i++)
            ok = path_check(j, c, matches.v[i], matches.v[i], op, cmdname);
    }
    strvec_clear(&matches);
out:
    sb_release(&q);
    sb_release(&esc);
    sb_release(&qa);
    sb_release(&ea);
    return ok && !j->v->deny;
}

int sh_operand(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *w, enum sh_op op,
               const char *cmdname)
{
    if (j->v->deny)
        return 0;
    if (w->procsub)
        return 1; /* a pipe to or from a judged command */
    if (w->refuse) {
        sh_unreadable(j, c, "%s uses %s", sh_show(j, w), w->refuse);
        return !j->v->deny;
    }
    if (w->unres) {
        if (op == OP_NAME)
            return 1; /* judged by the unresolved-argument rule */
        sh_unreadable(j, c, "the %s of %s depends on %s, which the guard cannot resolve",
                      op == OP_READ ? "file read" : "target", cmdname, w->unres);
        return !j->v->deny;
    }
    if (w->glob)
        return glob_operand(j, c, w, op, cmdname);
    if (!w->text[0])
        return 1;
    const char *abs = sh_abs(j, c->st, w->text);
    return path_check(j, c, w->text, abs, op, cmdname);
}
