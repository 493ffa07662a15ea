/* sh rules fs — programs that change files, with the options that say
 * which: the destructive list (rm, shred, dd of=, mkfs, diskutil, chmod -R,
 * find -delete), and the writers whose targets the write check sees (tee,
 * truncate, touch, mkdir, install, cp, mv, ln with their target-directory
 * options, sed -i and its w/e commands, awk output, sort -o, uniq, curl,
 * wget, tar, unzip, patch and git apply). Options are parsed as getopt
 * does (clusters, attached values, --opt=value), so `cp a -t/etc`,
 * `install -Dt /etc a` and `mv --target-directory /etc a` name /etc. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "guard/sh_judge.h"

static bool in(const char *s, const char *const *l)
{
    for (size_t i = 0; l[i]; i++)
        if (!strcmp(s, l[i]))
            return true;
    return false;
}

static struct sh_xw sub_word(struct sh_j *j, const struct sh_xw *w, size_t off)
{
    struct sh_xw r = *w;
    if (off > w->len)
        off = w->len;
    r.text = sh_strndup(j->a, w->text + off, w->len - off);
    r.active = sh_alloc(j->a, w->len - off + 1);
    memcpy(r.active, w->active + off, w->len - off);
    r.len = w->len - off;
    return r;
}

static struct sh_xw plain_word(struct sh_j *j, const char *text)
{
    struct sh_xw w = {0};
    w.len = strlen(text);
    w.text = sh_strndup(j->a, text, w.len);
    w.active = sh_alloc(j->a, w.len + 1);
    return w;
}

/* ---- getopt-like parsing ------------------------------------------------- */

struct optspec {
    const char *shorts_with_arg; /* letters taking a value: "tS" */
    const char *const *longs_with_arg;
};

/* An option's value: by letter or long name. */
struct optval {
    char letter;
    const char *lng;
    struct sh_xw val;
};

struct parsed {
    VEC(struct sh_xw) ops; /* operands */
    VEC(char) letters;     /* short options seen */
    strvec longs;          /* long options seen (name without value) */
    VEC(struct optval) vals;
};

static void parse_opts(struct sh_j *j, const struct sh_cmd *c, size_t from, const struct optspec *o,
                       struct parsed *pr)
{
    bool dd = false;
    for (size_t i = from; i < c->n; i++) {
        const struct sh_xw *w = &c->w[i];
        const char *t = w->text;
        if (dd || w->unres || !sh_is_flag(t)) {
            vec_push(&pr->ops, *w);
            continue;
        }
        if (!strcmp(t, "--")) {
            dd = true;
            continue;
        }
        if (t[1] == '-') {
            const char *eq = strchr(t, '=');
            char *name = sh_strndup(j->a, t + 2, eq ? (size_t)(eq - t - 2) : strlen(t + 2));
            strvec_push(&pr->longs, name);
            bool takes = o->longs_with_arg && in(name, o->longs_with_arg);
            if (takes) {
                struct optval v = {0, name, {0}};
                if (eq)
                    v.val = sub_word(j, w, (size_t)(eq - t) + 1);
                else if (i + 1 < c->n)
                    v.val = c->w[++i];
                vec_push(&pr->vals, v);
            }
            continue;
        }
        for (size_t k = 1; t[k]; k++) {
            char ch = t[k];
            vec_push(&pr->letters, ch);
            if (o->shorts_with_arg && strchr(o->shorts_with_arg, ch)) {
                struct optval v = {ch, NULL, {0}};
                if (t[k + 1])
                    v.val = sub_word(j, w, k + 1);
                else if (i + 1 < c->n)
                    v.val = c->w[++i];
                vec_push(&pr->vals, v);
                break;
            }
        }
    }
}

static void parsed_free(struct parsed *pr)
{
    vec_free(&pr->ops);
    vec_free(&pr->letters);
    strvec_clear(&pr->longs);
    vec_free(&pr->vals);
}

static bool has_letter(const struct parsed *pr, char ch)
{
    for (size_t i = 0; i < pr->letters.n; i++)
        if (pr->letters.v[i] == ch)
            return true;
    return false;
}

static bool has_long(const struct parsed *pr, const char *name)
{
    return strvec_find(&pr->longs, name) >= 0;
}

/* The value of option letter / long name (last one wins), or NULL. */
static const struct sh_xw *val_of(const struct parsed *pr, char letter, const char *lng)
{
    const struct sh_xw *r = NULL;
    for (size_t i = 0; i < pr->vals.n; i++) {
        const struct optval *v = &pr->vals.v[i];
        if ((letter && v->letter == letter) || (lng && v->lng && !strcmp(v->lng, lng)))
            r = &v->val;
    }
    return r && r->text ? r : NULL;
}

static void all_values(struct sh_j *j, struct sh_cmd *c, const struct parsed *pr, char letter,
                       const char *lng, enum sh_op op, const char *cmd)
{
    for (size_t i = 0; i < pr->vals.n && !j->v->deny; i++) {
        const struct optval *v = &pr->vals.v[i];
        if (((letter && v->letter == letter) || (lng && v->lng && !strcmp(v->lng, lng))) &&
            v->val.text)
            sh_operand(j, c, &v->val, op, cmd);
    }
}

static void ops_all(struct sh_j *j, struct sh_cmd *c, const struct parsed *pr, size_t from,
                    enum sh_op op, const char *cmd)
{
    for (size_t i = from; i < pr->ops.n && !j->v->deny; i++)
        sh_operand(j, c, &pr->ops.v[i], op, cmd);
}

/* ---- rm and the destructive list ----------------------------------------- */

static void rule_rm(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    struct optspec o = {"", NULL};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    bool rec = has_letter(&pr, 'r') || has_letter(&pr, 'R') || has_long(&pr, "recursive");
    if (c->tail_unknown && rec) {
        sh_deny_builtin(j,
                        "recursive rm through %s was refused — its targets come from input "
                        "the guard cannot see",
                        c->via ? c->via : "xargs");
    } else if (c->tail_unknown) {
        sh_unreadable(j, c, "rm of files that come from %s's input", c->via ? c->via : "xargs");
    } else if (has_long(&pr, "no-preserve-root")) {
        sh_deny_builtin(j, "rm --no-preserve-root was refused — it removes /");
    }
    ops_all(j, c, &pr, 0, OP_DELETE, "rm");
    parsed_free(&pr);
}

static void rule_dd(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    for (size_t k = p + 1; k < c->n && !j->v->deny; k++) {
        const struct sh_xw *w = &c->w[k];
        if (!strncmp(w->text, "if=", 3)) {
            struct sh_xw t = sub_word(j, w, 3);
            sh_operand(j, c, &t, OP_READ, "dd");
        } else if (!strncmp(w->text, "of=", 3)) {
            struct sh_xw t = sub_word(j, w, 3);
            const char *abs = t.unres ? "" : sh_abs(j, c->st, t.text);
            if (!strncmp(abs, "/dev/", 5) && strcmp(abs, "/dev/null") != 0) {
                strbuf s = SB_INIT;
                gi_clean(&s, t.text, 200);
                sh_deny_builtin(j, "dd of=%s was refused — it overwrites a device", s.buf);
                sb_release(&s);
            } else {
                sh_operand(j, c, &t, OP_WRITE, "dd");
            }
        }
    }
}

static void rule_chmod(struct sh_j *j, struct sh_cmd *c, size_t p, const char *cmd)
{
    static const char *const longs[] = {"reference", "from", NULL};
    struct optspec o = {"", longs};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    bool rec = has_letter(&pr, 'R') || has_long(&pr, "recursive");
    size_t first = val_of(&pr, 0, "reference") ? 0 : 1;
    /* chmod -rwx file: a mode that looks like an option */
    strbuf label = SB_INIT;
    sb_addf(&label, "%s%s", cmd, rec ? " -R" : "");
    ops_all(j, c, &pr, first, rec ? OP_RECURSE : OP_WRITE, label.buf);
    sb_release(&label);
    parsed_free(&pr);
}

/* ---- writers -------------------------------------------------------------- */

static void rule_simple(struct sh_j *j, struct sh_cmd *c, size_t p, const char *shorts,
                        const char *const *longs, const char *cmd)
{
    struct optspec o = {shorts, longs};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    ops_all(j, c, &pr, 0, OP_WRITE, cmd);
    parsed_free(&pr);
}

static void rule_install(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    static const char *const longs[] = {"mode",   "owner",         "group",   "target-directory",
                                        "suffix", "strip-program", "context", NULL};
    struct optspec o = {"mogtSZ", longs};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    const struct sh_xw *t = val_of(&pr, 't', "target-directory");
    if (t)
        sh_operand(j, c, t, OP_WRITE, "install");
    else if (has_letter(&pr, 'd') || has_long(&pr, "directory"))
        ops_all(j, c, &pr, 0, OP_WRITE, "install");
    else if (pr.ops.n >= 2)
        ops_all(j, c, &pr, pr.ops.n - 1, OP_WRITE, "install");
    parsed_free(&pr);
}

static void rule_mv_cp_ln(struct sh_j *j, struct sh_cmd *c, size_t p, const char *cmd)
{
    static const char *const longs[] = {"target-directory", "suffix",  "backup",
                                        "sparse",           "reflink", "preserve",
                                        "no-preserve",      "context", NULL};
    struct optspec o = {"tS", longs};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    bool mv = !strcmp(cmd, "mv"), ln = !strcmp(cmd, "ln");
    const struct sh_xw *t = val_of(&pr, 't', "target-directory");
    size_t nsrc;
    if (t) {
        sh_operand(j, c, t, OP_WRITE, cmd);
        nsrc = pr.ops.n;
    } else if (pr.ops.n >= 2) {
        sh_operand(j, c, &pr.ops.v[pr.ops.n - 1], OP_WRITE, cmd);
        nsrc = pr.ops.n - 1;
    } else {
        nsrc = ln ? pr.ops.n : 0; /* ln TARGET: a link in the current directory */
        if (ln && pr.ops.n == 1) {
            struct sh_xw here = plain_word(j, sh_base(pr.ops.v[0].text));
            sh_operand(j, c, &here, OP_WRITE, cmd);
        }
    }
    for (size_t i = 0; i < nsrc && !j->v->deny; i++) {
        const struct sh_xw *s = &pr.ops.v[i];
        if (mv) {
            sh_operand(j, c, s, OP_MOVE, cmd);
        } else if (ln && !s->unres && !s->glob) {
            /* a link pointing into the machine home, resolved where the
             * link will be (a symlink target is relative to its directory) */
            const char *base = c->st->cwd;
            if ((has_letter(&pr, 's') || has_long(&pr, "symbolic")) && s->text[0] != '/') {
                const struct sh_xw *dst = t ? t : pr.ops.n >= 2 ? &pr.ops.v[pr.ops.n - 1] : NULL;
                if (dst && !dst->unres) {
                    const char *d = sh_abs(j, c->st, dst->text);
                    if (!t && !fs_is_dir(d)) {
                        char *slash = strrchr(d, '/');
                        base = slash && slash != d ? sh_strndup(j->a, d, (size_t)(slash - d)) : "/";
                    } else {
                        base = d;
                    }
                }
            }
            strbuf abs = SB_INIT, real = SB_INIT;
            guard_lexical(base, j->x->home, s->text, &abs);
            struct as_err e = AS_ERR_INIT;
            bool resolved = fs_canonicalize(abs.buf, &real, &e) == 0;
            const struct guard_ctx *x = j->x;
            if (gi_under(abs.buf, x->ash) ||
                (x->ash_real && resolved && gi_under(real.buf, x->ash_real)) ||
                gi_under(x->ash, abs.buf)) {
                strbuf sh = SB_INIT;
                gi_clean(&sh, s->text, 200);
                gi_deny(j->v, true,
                        "a link to %s was refused — it points into agentstack's machine home %s "
                        "(consent, policy and evidence); agents never reach it through a link · "
                        "nothing was written",
                        sh.buf, x->ash);
                sb_release(&sh);
            }
            sb_release(&abs);
            sb_release(&real);
        }
    }
    parsed_free(&pr);
}

static void rule_sort_uniq(struct sh_j *j, struct sh_cmd *c, size_t p, bool uniq)
{
    static const char *const sort_l[] = {
        "output",   "key",         "field-separator",  "buffer-size",   "temporary-directory",
        "parallel", "files0-from", "compress-program", "random-source", NULL};
    static const char *const uniq_l[] = {"skip-fields", "skip-chars",   "check-chars",
                                         "group",       "all-repeated", NULL};
    struct optspec o = {uniq ? "fsw" : "oktSTz", uniq ? uniq_l : sort_l};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    if (uniq) {
        if (pr.ops.n >= 2)
            sh_operand(j, c, &pr.ops.v[1], OP_WRITE, "uniq");
    } else {
        all_values(j, c, &pr, 'o', "output", OP_WRITE, "sort");
        const struct sh_xw *cp = val_of(&pr, 0, "compress-program");
        if (cp && !cp->unres)
            sh_judge_text(j, c->st, cp->text, cp->len, NULL, 0);
    }
    parsed_free(&pr);
}

static void rule_curl_wget(struct sh_j *j, struct sh_cmd *c, size_t p, bool wget)
{
    static const char *const curl_l[] = {
        "output",  "output-dir", "dump-header", "cookie-jar", "trace",   "trace-ascii", "stderr",
        "libcurl", "config",     "etag-save",   "hsts",       "alt-svc", "netrc-file",  NULL};
    static const char *const wget_l[] = {
        "output-document", "directory-prefix", "output-file", "append-output",
        "save-cookies",    "input-file",       "warc-file",   NULL};
    struct optspec o = {wget ? "OPoai" : "oDcK", wget ? wget_l : curl_l};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    if (wget) {
        all_values(j, c, &pr, 'O', "output-document", OP_WRITE, "wget");
        all_values(j, c, &pr, 'P', "directory-prefix", OP_WRITE, "wget");
        all_values(j, c, &pr, 'o', "output-file", OP_WRITE, "wget");
        all_values(j, c, &pr, 'a', "append-output", OP_WRITE, "wget");
        all_values(j, c, &pr, 0, "save-cookies", OP_WRITE, "wget");
        all_values(j, c, &pr, 'i', "input-file", OP_READ, "wget");
    } else {
        all_values(j, c, &pr, 'o', "output", OP_WRITE, "curl");
        all_values(j, c, &pr, 0, "output-dir", OP_WRITE, "curl");
        all_values(j, c, &pr, 'D', "dump-header", OP_WRITE, "curl");
        all_values(j, c, &pr, 'c', "cookie-jar", OP_WRITE, "curl");
        static const char *const more[] = {"trace",     "trace-ascii", "stderr",  "libcurl",
                                           "etag-save", "hsts",        "alt-svc", NULL};
        for (size_t k = 0; more[k]; k++)
            all_values(j, c, &pr, 0, more[k], OP_WRITE, "curl");
        all_values(j, c, &pr, 'K', "config", OP_READ, "curl");
        all_values(j, c, &pr, 0, "netrc-file", OP_READ, "curl");
        /* -n / --netrc read the user's credentials file */
        if (has_letter(&pr, 'n') || has_long(&pr, "netrc") || has_long(&pr, "netrc-optional")) {
            struct sh_xw nrc = plain_word(j, "~/.netrc");
            if (j->x->home) {
                strbuf p2 = SB_INIT;
                sb_addf(&p2, "%s/.netrc", j->x->home);
                nrc = plain_word(j, p2.buf);
                sb_release(&p2);
            }
            sh_operand(j, c, &nrc, OP_READ, "curl --netrc");
        }
    }
    parsed_free(&pr);
}

static void rule_tar(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    /* old style: tar czf FILE … */
    struct sh_cmd cc = *c;
    VEC(struct sh_xw) w = VEC_INIT;
    for (size_t k = 0; k < c->n; k++) {
        if (k == p + 1 && !sh_is_flag(c->w[k].text) && !c->w[k].unres &&
            strspn(c->w[k].text, "AcdrtuxzjJvfpCkmoOPSWhlb") == c->w[k].len) {
            strbuf b = SB_INIT;
            sb_addf(&b, "-%s", c->w[k].text);
            struct sh_xw nw = plain_word(j, b.buf);
            nw.src = c->w[k].src;
            vec_push(&w, nw);
            sb_release(&b);
        } else {
            vec_push(&w, c->w[k]);
        }
    }
    cc.w = sh_alloc(j->a, (w.n + 1) * sizeof *cc.w);
    memcpy(cc.w, w.v, w.n * sizeof *cc.w);
    cc.n = w.n;
    vec_free(&w);
    static const char *const longs[] = {"file",  "directory", "exclude",   "files-from", "owner",
                                        "group", "mode",      "transform", "index-file", NULL};
    struct optspec o = {"fCbFgKLNTVX", longs};
    struct parsed pr = {0};
    parse_opts(j, &cc, p + 1, &o, &pr);
    bool create = has_letter(&pr, 'c') || has_letter(&pr, 'r') || has_letter(&pr, 'u') ||
                  has_letter(&pr, 'A') || has_long(&pr, "create") || has_long(&pr, "append") ||
                  has_long(&pr, "update");
    bool extract = has_letter(&pr, 'x') || has_long(&pr, "extract") || has_long(&pr, "get");
    const struct sh_xw *f = val_of(&pr, 'f', "file");
    if (create && f && !sh_eq(f, "-"))
        sh_operand(j, c, f, OP_WRITE, "tar");
    if (extract) {
        const struct sh_xw *d = val_of(&pr, 'C', "directory");
        struct sh_xw here = plain_word(j, ".");
        sh_operand(j, c, d ? d : &here, OP_WRITE, "tar -x");
    }
    all_values(j, c, &pr, 'T', "files-from", OP_READ, "tar");
    parsed_free(&pr);
}

static void rule_unzip(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    struct optspec o = {"dxP", NULL};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    const struct sh_xw *d = val_of(&pr, 'd', NULL);
    struct sh_xw here = plain_word(j, ".");
    if (!has_letter(&pr, 'l') && !has_letter(&pr, 'p') && !has_letter(&pr, 't') &&
        !has_letter(&pr, 'Z'))
        sh_operand(j, c, d ? d : &here, OP_WRITE, "unzip");
    parsed_free(&pr);
}

/* ---- patches ------------------------------------------------------------- */

/* The files a unified / git diff writes: +++, ---, rename/copy to. strip:
 * leading components to drop (-1: try 0 and 1). */
void gi_diff_targets(const char *s, size_t n, int strip, strvec *out)
{
    for (size_t i = 0; i < n;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t le = nl ? (size_t)(nl - s) : n;
        const char *l = s + i;
        size_t ll = le - i;
        const char *path = NULL;
        size_t pl = 0;
        if (ll > 4 && (!strncmp(l, "+++ ", 4) || !strncmp(l, "--- ", 4))) {
            path = l + 4;
            pl = ll - 4;
            const char *tab = memchr(path, '\t', pl);
            if (tab)
                pl = (size_t)(tab - path);
        } else if (ll > 10 && !strncmp(l, "rename to ", 10)) {
            path = l + 10;
            pl = ll - 10;
        } else if (ll > 8 && !strncmp(l, "copy to ", 8)) {
            path = l + 8;
            pl = ll - 8;
        }
        while (path && pl && (path[pl - 1] == '\r' || path[pl - 1] == ' '))
            pl--;
        if (path && pl && !(pl == 9 && !strncmp(path, "/dev/null", 9))) {
            char *p0 = xstrndup(path, pl);
            if (strip != 0)
                strvec_push(out, p0);
            if (strip != 0 || strip == -1) {
                const char *slash = strchr(p0, '/');
                if (slash && slash[1])
                    strvec_push(out, slash + 1);
            }
            if (strip == 0)
                strvec_push(out, p0);
            free(p0);
        }
        i = nl ? le + 1 : n;
    }
}

static void diff_writes(struct sh_j *j, struct sh_cmd *c, const char *text, size_t len,
                        const char *cmd)
{
    strvec t = STRVEC_INIT;
    gi_diff_targets(text, len, -1, &t);
    for (size_t i = 0; i < t.n && !j->v->deny; i++) {
        struct sh_xw w = plain_word(j, t.v[i]);
        sh_operand(j, c, &w, OP_WRITE, cmd);
    }
    strvec_clear(&t);
}

/* Reads a patch file the command will apply (bounded), or refuses. */
static bool patch_from_file(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *f,
                            const char *cmd)
{
    if (f->unres || f->glob || f->procsub) {
        sh_unreadable(j, c, "%s of a patch the guard cannot read (%s)", cmd, sh_show(j, f));
        return false;
    }
    strbuf b = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    const char *abs = sh_abs(j, c->st, f->text);
    if (fs_read_file(abs, (size_t)4 << 20, 0, &b, &e) < 0) {
        sh_unreadable(j, c, "%s of %s, a patch the guard cannot read now", cmd, sh_show(j, f));
        sb_release(&b);
        return false;
    }
    diff_writes(j, c, b.buf, b.len, cmd);
    sb_release(&b);
    return !j->v->deny;
}

void sh_rule_patch_input(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *file,
                         const char *cmd)
{
    if (file) {
        patch_from_file(j, c, file, cmd);
    } else if ((c->in == IN_HEREDOC || c->in == IN_HERESTR) && c->in_known) {
        diff_writes(j, c, c->in_text, c->in_len, cmd);
    } else if (c->in == IN_FILE && c->in_path) {
        struct sh_xw w = plain_word(j, c->in_path);
        patch_from_file(j, c, &w, cmd);
    } else {
        sh_unreadable(j, c, "%s reads a patch from input the guard cannot read", cmd);
    }
}

static void rule_patch(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    static const char *const longs[] = {"input",           "output",      "directory",
                                        "strip",           "reject-file", "prefix",
                                        "basename-prefix", "suffix",      NULL};
    struct optspec o = {"ioDdpFrBYzVg", longs};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    if (val_of(&pr, 'd', "directory")) {
        sh_unreadable(j, c, "patch -d applies the patch in another directory");
        parsed_free(&pr);
        return;
    }
    all_values(j, c, &pr, 'o', "output", OP_WRITE, "patch");
    all_values(j, c, &pr, 'r', "reject-file", OP_WRITE, "patch");
    if (pr.ops.n >= 1)
        sh_operand(j, c, &pr.ops.v[0], OP_WRITE, "patch");
    const struct sh_xw *in_f = val_of(&pr, 'i', "input");
    if (!in_f && pr.ops.n >= 2)
        in_f = &pr.ops.v[1];
    if (!j->v->deny && !has_long(&pr, "dry-run"))
        sh_rule_patch_input(j, c, in_f, "patch");
    parsed_free(&pr);
}

/* ---- sed ----------------------------------------------------------------- */

/* Walks a sed script: r/R read files, w/W and s///w write them, e and
 * s///e run commands. Unknown commands refuse. */
static void sed_script(struct sh_j *j, struct sh_cmd *c, const char *s, size_t n)
{
    size_t i = 0;
#define SKIPWS()                                                                                   \
    while (i < n && (s[i] == ' ' || s[i] == '\t'))                                                 \
    i++
    while (i < n && !j->v->deny) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == ';'))
            i++;
        if (i >= n)
            break;
        /* addresses */
        for (int a = 0; a < 2 && i < n; a++) {
            if (isdigit((unsigned char)s[i])) {
                while (i < n && (isdigit((unsigned char)s[i]) || s[i] == '~'))
                    i++;
            } else if (s[i] == '$') {
                i++;
            } else if (s[i] == '/' || s[i] == '\\') {
                char d = s[i] == '\\' && i + 1 < n ? s[++i] : '/';
                i++;
                while (i < n && s[i] != d)
                    i += s[i] == '\\' ? 2 : 1;
                i++;
                while (i < n && (s[i] == 'I' || s[i] == 'M'))
                    i++;
            } else if (a == 1 && (s[i] == '+' || s[i] == '~')) {
                i++;
                while (i < n && isdigit((unsigned char)s[i]))
                    i++;
            }
            SKIPWS();
            if (a == 0 && i < n && s[i] == ',') {
                i++;
                SKIPWS();
                continue;
            }
            break;
        }
        SKIPWS();
        while (i < n && s[i] == '!') {
            i++;
            SKIPWS();
        }
        if (i >= n)
            break;
        char cmd = s[i++];
        size_t rest_start = i, rest_end;
        const char *nl = memchr(s + i, '\n', n - i);
        rest_end = nl ? (size_t)(nl - s) : n;
        switch (cmd) {
        case '{':
        case '}':
        case '=':
        case 'd':
        case 'D':
        case 'g':
        case 'G':
        case 'h':
        case 'H':
        case 'n':
        case 'N':
        case 'p':
        case 'P':
        case 'x':
        case 'z':
        case 'F':
            break;
        case 'q':
        case 'Q':
        case 'l':
        case 'L':
            while (i < n && isdigit((unsigned char)s[i]))
                i++;
            break;
        case '#':
        case 'a':
        case 'i':
        case 'c':
            /* text to the end of the line (with \ continuations) */
            while (i < n && s[i] != '\n')
                i += s[i] == '\\' ? 2 : 1;
            break;
        case ':':
        case 'b':
        case 't':
        case 'T':
        case 'v':
            while (i < n && s[i] != '\n' && s[i] != ';')
                i++;
            break;
        case 'r':
        case 'R':
        case 'w':
        case 'W': {
            size_t a = rest_start;
            while (a < rest_end && (s[a] == ' ' || s[a] == '\t'))
                a++;
            char *f = sh_strndup(j->a, s + a, rest_end - a);
            struct sh_xw w = plain_word(j, f);
            if (strcmp(f, "/dev/stdout") && strcmp(f, "/dev/stderr") && strcmp(f, "/dev/stdin"))
                sh_operand(j, c, &w, cmd == 'r' || cmd == 'R' ? OP_READ : OP_WRITE, "sed");
            i = rest_end;
            break;
        }
        case 'e': {
            size_t a = rest_start;
            while (a < rest_end && (s[a] == ' ' || s[a] == '\t'))
                a++;
            if (a >= rest_end)
                sh_unreadable(j, c, "sed's e command runs the text it edits as a command");
            else
                sh_judge_text(j, c->st, s + a, rest_end - a, NULL, 0);
            i = rest_end;
            break;
        }
        case 's':
        case 'y': {
            if (i >= n) {
                sh_unreadable(j, c, "a sed script the guard cannot read");
                return;
            }
            char d = s[i++];
            for (int part = 0; part < 2; part++) {
                while (i < n && s[i] != d) {
                    if (s[i] == '\\')
                        i++;
                    i++;
                }
                if (i >= n) {
                    sh_unreadable(j, c, "a sed script the guard cannot read");
                    return;
                }
                i++;
            }
            if (cmd == 'y')
                break;
            while (i < n && strchr("gpiImMe0123456789w", s[i])) {
                if (s[i] == 'e') {
                    sh_unreadable(j, c, "sed's s///e runs the text it edits as a command");
                    return;
                }
                if (s[i] == 'w') {
                    size_t a = i + 1;
                    nl = memchr(s + a, '\n', n - a);
                    size_t e = nl ? (size_t)(nl - s) : n;
                    while (a < e && s[a] == ' ')
                        a++;
                    char *f = sh_strndup(j->a, s + a, e - a);
                    struct sh_xw w = plain_word(j, f);
                    if (strcmp(f, "/dev/stdout") && strcmp(f, "/dev/stderr"))
                        sh_operand(j, c, &w, OP_WRITE, "sed");
                    i = e;
                    break;
                }
                i++;
            }
            break;
        }
        default:
            sh_unreadable(j, c, "a sed command the guard does not know ('%c')", cmd);
            return;
        }
    }
#undef SKIPWS
}

static void rule_sed(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    static const char *const longs[] = {"expression", "file", "line-length", "in-place", NULL};
    struct optspec o = {"efl", longs};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    bool inplace = has_letter(&pr, 'i') || has_long(&pr, "in-place");
    /* -i takes an optional attached suffix: "-i.bak" parses as letters */
    bool sandbox = has_long(&pr, "sandbox");
    bool script_opt = false;
    for (size_t i = 0; i < pr.vals.n && !j->v->deny; i++) {
        const struct optval *v = &pr.vals.v[i];
        bool e = v->letter == 'e' || (v->lng && !strcmp(v->lng, "expression"));
        bool f = v->letter == 'f' || (v->lng && !strcmp(v->lng, "file"));
        if (!e && !f)
            continue;
        script_opt = true;
        if (v->val.unres) {
            sh_unreadable(j, c, "a sed script that depends on %s", v->val.unres);
            break;
        }
        if (e) {
            if (!sandbox)
                sed_script(j, c, v->val.text, v->val.len);
        } else {
            strbuf b = SB_INIT;
            struct as_err er = AS_ERR_INIT;
            const char *abs = sh_abs(j, c->st, v->val.text);
            if (!sh_operand(j, c, &v->val, OP_READ, "sed -f"))
                ;
            else if (fs_read_file(abs, 256 << 10, 0, &b, &er) < 0)
                sh_unreadable(j, c, "sed -f %s, a script the guard cannot read now",
                              sh_show(j, &v->val));
            else if (!sandbox)
                sed_script(j, c, b.buf, b.len);
            sb_release(&b);
        }
    }
    size_t files = 0;
    if (!script_opt && pr.ops.n) {
        const struct sh_xw *sc = &pr.ops.v[0];
        if (sc->unres) {
            sh_unreadable(j, c, "a sed script that depends on %s", sc->unres);
        } else {
            /* mark it as data for the unresolved rule */
            for (size_t k = p + 1; k < c->n; k++)
                if (c->w[k].text == sc->text)
                    c->unres_ok[k] = true;
            if (!sandbox)
                sed_script(j, c, sc->text, sc->len);
        }
        files = 1;
    }
    if (inplace)
        ops_all(j, c, &pr, files, OP_WRITE, "sed -i");
    parsed_free(&pr);
}

/* ---- awk ----------------------------------------------------------------- */

/* awk programs: system(), pipes and getline from commands run commands;
 * print > file writes one. String literals are judged; anything else
 * refuses. */
static void awk_program(struct sh_j *j, struct sh_cmd *c, const char *s, size_t n)
{
    char last = '(';
    bool in_print = false;
    for (size_t i = 0; i < n && !j->v->deny; i++) {
        char ch = s[i];
        if (ch == '"') {
            size_t a = ++i;
            while (i < n && s[i] != '"')
                i += s[i] == '\\' ? 2 : 1;
            (void)a;
            last = 'a';
            continue;
        }
        if (ch == '/' && strchr("(,~!{};&|=<>?:\n", last)) {
            i++;
            while (i < n && s[i] != '/' && s[i] != '\n')
                i += s[i] == '\\' ? 2 : 1;
            last = 'a';
            continue;
        }
        if (ch == '#') {
            while (i < n && s[i] != '\n')
                i++;
            continue;
        }
        if (isalpha((unsigned char)ch) || ch == '_') {
            size_t a = i;
            while (i < n && (isalnum((unsigned char)s[i]) || s[i] == '_'))
                i++;
            size_t l = i - a;
            i--;
            if ((l == 6 && !strncmp(s + a, "system", 6)) ||
                (l == 7 && !strncmp(s + a, "getline", 7) && a > 0 && memchr(s, '|', a))) {
                sh_unreadable(j, c, "an awk program that runs commands (%.*s)", (int)l, s + a);
                return;
            }
            if ((l == 5 && !strncmp(s + a, "print", 5)) || (l == 6 && !strncmp(s + a, "printf", 6)))
                in_print = true;
            last = 'a';
            continue;
        }
        if (ch == ';' || ch == '}' || ch == '\n' || ch == '{')
            in_print = false;
        if (ch == '|' && !(i + 1 < n && s[i + 1] == '|') && !(i > 0 && s[i - 1] == '|')) {
            sh_unreadable(j, c, "an awk program that pipes to or from a command");
            return;
        }
        if (ch == '>' && in_print) {
            size_t a = i + 1;
            if (a < n && s[a] == '>')
                a++;
            while (a < n && s[a] == ' ')
                a++;
            if (a < n && s[a] == '"') {
                size_t e = a + 1;
                while (e < n && s[e] != '"')
                    e++;
                char *f = sh_strndup(j->a, s + a + 1, e - a - 1);
                struct sh_xw w = plain_word(j, f);
                if (strcmp(f, "/dev/stdout") && strcmp(f, "/dev/stderr"))
                    sh_operand(j, c, &w, OP_WRITE, "awk");
                i = e;
            } else {
                sh_unreadable(j, c, "an awk program that writes to a file it names at run time");
                return;
            }
            continue;
        }
        if (!isspace((unsigned char)ch))
            last = ch;
    }
}

static void rule_awk(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    static const char *const longs[] = {"field-separator", "assign", "file", "source",
                                        "include",         "exec",   "load", NULL};
    struct optspec o = {"FvfeiEl", longs};
    struct parsed pr = {0};
    parse_opts(j, c, p + 1, &o, &pr);
    bool prog_opt = false, inplace = false;
    for (size_t i = 0; i < pr.vals.n && !j->v->deny; i++) {
        const struct optval *v = &pr.vals.v[i];
        char L = v->letter;
        const char *lng = v->lng ? v->lng : "";
        if (L == 'f' || L == 'E' || !strcmp(lng, "file") || !strcmp(lng, "exec")) {
            prog_opt = true;
            sh_operand(j, c, &v->val, OP_READ, "awk -f");
            strbuf b = SB_INIT;
            struct as_err er = AS_ERR_INIT;
            if (!v->val.unres &&
                fs_read_file(sh_abs(j, c->st, v->val.text), 256 << 10, 0, &b, &er) == 0)
                awk_program(j, c, b.buf, b.len);
            else if (!j->v->deny)
                sh_unreadable(j, c, "awk -f %s, a program the guard cannot read now",
                              sh_show(j, &v->val));
            sb_release(&b);
        } else if (L == 'e' || !strcmp(lng, "source")) {
            prog_opt = true;
            if (v->val.unres)
                sh_unreadable(j, c, "an awk program that depends on %s", v->val.unres);
            else
                awk_program(j, c, v->val.text, v->val.len);
        } else if (L == 'i' || !strcmp(lng, "include")) {
            if (sh_eq(&v->val, "inplace"))
                inplace = true;
            else
                sh_unreadable(j, c, "awk -i %s loads a library", sh_show(j, &v->val));
        } else if (L == 'l' || !strcmp(lng, "load")) {
            sh_unreadable(j, c, "awk -l loads an extension");
        }
    }
    size_t files = 0;
    if (!prog_opt && pr.ops.n && !j->v->deny) {
        const struct sh_xw *pg = &pr.ops.v[0];
        if (pg->unres) {
            sh_unreadable(j, c, "an awk program that depends on %s", pg->unres);
        } else {
            for (size_t k = p + 1; k < c->n; k++)
                if (c->w[k].text == pg->text)
                    c->unres_ok[k] = true;
            awk_program(j, c, pg->text, pg->len);
        }
        files = 1;
    }
    if (inplace)
        ops_all(j, c, &pr, files, OP_WRITE, "awk -i inplace");
    parsed_free(&pr);
}

/* ---- dispatch ------------------------------------------------------------ */

static const char *const known[] = {
    "rm",    "rmdir", "unlink",   "shred", "dd",    "diskutil", "chmod", "chown",
    "chgrp", "tee",   "truncate", "touch", "mkdir", "install",  "cp",    "mv",
    "ln",    "sed",   "gsed",     "awk",   "gawk",  "mawk",     "nawk",  "sort",
    "uniq",  "curl",  "wget",     "tar",   "unzip", "patch",    NULL};

bool sh_rules_fs_known(const char *b)
{
    return in(b, known) || !strncmp(b, "mkfs", 4);
}

void sh_rules_fs(struct sh_j *j, struct sh_cmd *c, size_t p, const char *b)
{
    if (!strcmp(b, "rm"))
        rule_rm(j, c, p);
    else if (!strcmp(b, "rmdir") || !strcmp(b, "unlink")) {
        struct optspec o = {"", NULL};
        struct parsed pr = {0};
        parse_opts(j, c, p + 1, &o, &pr);
        ops_all(j, c, &pr, 0, OP_DELETE, b);
        parsed_free(&pr);
    } else if (!strcmp(b, "shred"))
        sh_deny_builtin(j, "shred was refused — it destroys file contents beyond recovery");
    else if (!strcmp(b, "dd"))
        rule_dd(j, c, p);
    else if (!strcmp(b, "diskutil")) {
        static const char *const erase[] = {"eraseDisk", "eraseVolume", "partitionDisk",
                                            "zeroDisk",  "secureErase", "reformat",
                                            NULL};
        if (p + 1 < c->n && in(c->w[p + 1].text, erase))
            sh_deny_builtin(j, "diskutil %s was refused — it erases a disk", c->w[p + 1].text);
    } else if (!strncmp(b, "mkfs", 4)) {
        sh_deny_builtin(j, "%s was refused — it formats a disk", b);
    } else if (!strcmp(b, "chmod") || !strcmp(b, "chown") || !strcmp(b, "chgrp")) {
        rule_chmod(j, c, p, b);
    } else if (!strcmp(b, "tee")) {
        static const char *const l[] = {"output-error", NULL};
        rule_simple(j, c, p, "", l, "tee");
    } else if (!strcmp(b, "truncate")) {
        static const char *const l[] = {"size", "reference", NULL};
        rule_simple(j, c, p, "sr", l, "truncate");
    } else if (!strcmp(b, "touch")) {
        static const char *const l[] = {"date", "reference", "time", NULL};
        rule_simple(j, c, p, "dtr", l, "touch");
    } else if (!strcmp(b, "mkdir")) {
        static const char *const l[] = {"mode", "context", NULL};
        rule_simple(j, c, p, "mZ", l, "mkdir");
    } else if (!strcmp(b, "install")) {
        rule_install(j, c, p);
    } else if (!strcmp(b, "cp") || !strcmp(b, "mv") || !strcmp(b, "ln")) {
        rule_mv_cp_ln(j, c, p, b);
    } else if (!strcmp(b, "sed") || !strcmp(b, "gsed")) {
        rule_sed(j, c, p);
    } else if (!strcmp(b, "awk") || !strcmp(b, "gawk") || !strcmp(b, "mawk") ||
               !strcmp(b, "nawk")) {
        rule_awk(j, c, p);
    } else if (!strcmp(b, "sort") || !strcmp(b, "uniq")) {
        rule_sort_uniq(j, c, p, b[0] == 'u');
    } else if (!strcmp(b, "curl") || !strcmp(b, "wget")) {
        rule_curl_wget(j, c, p, b[0] == 'w');
    } else if (!strcmp(b, "tar")) {
        rule_tar(j, c, p);
    } else if (!strcmp(b, "unzip")) {
        rule_unzip(j, c, p);
    } else if (!strcmp(b, "patch")) {
        rule_patch(j, c, p);
    }
}
