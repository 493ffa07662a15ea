/* sh rules self — agentstack itself, judged by meaning.
 *
 * Why: `agentstack trust . --yes --consented …` gives consent on a
 * person's behalf however it is spelled: by any path, through a symlink or
 * a renamed copy of this binary (found by inode, else by its bytes),
 * through a wrapper. Consent, policy, secrets and the guard are a person's
 * act; the verbs that change them are refused here, and every other verb
 * is one of a known list (an unknown verb is refused, never guessed).
 * Interpreters' inline code is scanned (not understood) for the machine
 * home, agentstack's authority verbs and denied file names.
 */
#include <ctype.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/xalloc.h"
#include "guard/sh_judge.h"

/* ---- this binary --------------------------------------------------------- */

static bool same_binary(const struct guard_ctx *x, const char *path)
{
    struct stat st;
    if (!x->self_size || stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return false;
    if (st.st_dev == x->self_dev && st.st_ino == x->self_ino)
        return true;
    if ((size_t)st.st_size != x->self_size)
        return false;
    /* a copy: the same bytes */
    int a = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), b = open(path, O_RDONLY | O_CLOEXEC);
    bool same = false;
    if (a >= 0 && b >= 0) {
        void *ma = mmap(NULL, x->self_size, PROT_READ, MAP_PRIVATE, a, 0);
        void *mb = mmap(NULL, x->self_size, PROT_READ, MAP_PRIVATE, b, 0);
        if (ma != MAP_FAILED && mb != MAP_FAILED)
            same = memcmp(ma, mb, x->self_size) == 0;
        if (ma != MAP_FAILED)
            munmap(ma, x->self_size);
        if (mb != MAP_FAILED)
            munmap(mb, x->self_size);
    }
    if (a >= 0)
        close(a);
    if (b >= 0)
        close(b);
    return same;
}

/* The file a program word runs (PATH search for bare names), or NULL. */
const char *sh_resolve_program(struct sh_j *j, const struct sh_cmd *c, const char *word)
{
    if (strchr(word, '/')) {
        const char *abs = sh_abs(j, c->st, word);
        return access(abs, F_OK) == 0 ? abs : NULL;
    }
    const char *path = getenv("PATH");
    if (!path)
        return NULL;
    strbuf p = SB_INIT;
    const char *found = NULL;
    for (const char *s = path; !found;) {
        const char *e = strchr(s, ':');
        size_t l = e ? (size_t)(e - s) : strlen(s);
        sb_reset(&p);
        if (l)
            sb_add(&p, s, l);
        else
            sb_adds(&p, c->st->cwd);
        sb_addf(&p, "/%s", word);
        if (access(p.buf, X_OK) == 0)
            found = sh_strndup(j->a, p.buf, p.len);
        if (!e)
            break;
        s = e + 1;
    }
    sb_release(&p);
    return found;
}

/* Programs common enough that checking their identity is not worth a
 * PATH search: none of them is this binary by that name. */
static const char *const common[] = {
    "ls",       "cat",      "head",     "tail",    "grep",     "egrep",     "fgrep",    "rg",
    "wc",       "sort",     "uniq",     "diff",    "less",     "more",      "jq",       "yq",
    "curl",     "wget",     "npm",      "yarn",    "pnpm",     "cargo",     "rustc",    "go",
    "gcc",      "cc",       "g++",      "clang",   "make",     "cmake",     "ninja",    "tar",
    "gzip",     "gunzip",   "zip",      "unzip",   "ssh",      "scp",       "rsync",    "cut",
    "tr",       "xxd",      "od",       "file",    "stat",     "du",        "df",       "ps",
    "kill",     "pkill",    "top",      "htop",    "date",     "pip",       "pip3",     "pytest",
    "tsc",      "eslint",   "prettier", "docker",  "kubectl",  "java",      "javac",    "mvn",
    "gradle",   "dotnet",   "swift",    "ruby",    "gem",      "bundle",    "rake",     "tree",
    "realpath", "readlink", "column",   "paste",   "join",     "comm",      "fold",     "fmt",
    "nl",       "rev",      "tac",      "strings", "md5sum",   "sha256sum", "sha1sum",  "base64",
    "bc",       "dc",       "man",      "info",    "ping",     "dig",       "nslookup", "host",
    "lsof",     "free",     "uptime",   "env",     "printenv", "locale",    "hostname", "history",
    "fc",       "git",      "node",     "npx",     "python3",  "python",    "bash",     "sh",
    "gh",       "hg",       "svn",      NULL};

bool sh_is_self(struct sh_j *j, const struct sh_cmd *c, const char *word)
{
    const char *b = sh_base(word);
    if (!strcmp(b, "agentstack"))
        return true;
    /* a bare name the guard has a rule for is that program; a path or an
     * unknown name is looked up (once per judgment) */
    if (!strchr(word, '/') && (sh_in(b, common) || sh_known_program(b)))
        return false;
    for (size_t i = 0; i < j->nself; i++)
        if (!strcmp(j->self_cache[i].word, word) && j->self_cache[i].cwd == c->st->cwd)
            return j->self_cache[i].self;
    const char *f = sh_resolve_program(j, c, word);
    bool self = f && same_binary(j->x, f);
    if (j->nself < SH_SELF_CACHE) {
        j->self_cache[j->nself].word = sh_strndup(j->a, word, strlen(word));
        j->self_cache[j->nself].cwd = c->st->cwd;
        j->self_cache[j->nself++].self = self;
    }
    return self;
}

/* ---- agentstack by meaning ----------------------------------------------- */

/* Verbs that read, or write only what `apply --write` and the manifest
 * edits write (the CLIs' own files, the project's manifest and lock): an
 * agent may run them, and every manifest edit re-gates trust
 * (docs/guard.md, "agentstack itself"). */
static const char *const as_safe[] = {
    "help",        "version",      "lock",     "diff",     "status",   "bootstrap",   "doctor",
    "search",      "report",       "runs",     "audit",    "install",  "apply",       "use",
    "session",     "instructions", "restore",  "undo",     "connect",  "gateway",     "mcp",
    "demo-server", "lib",          "add",      "upgrade",  "remove",   "up",          "adopt",
    "init",        "verify",       "self",     "kill",     "run",      "explain",     "why",
    "toolset",     "lease",        "adapters", "settings", "delivery", "completions", "unrender",
    "export",      "import",       NULL};

void sh_rule_agentstack(struct sh_j *j, struct sh_cmd *c, size_t p)
{
    size_t i = p + 1, verb = 0;
    bool found = false;
    for (; i < c->n; i++) {
        const struct sh_xw *w = &c->w[i];
        if (w->unres) {
            sh_unreadable(j, c, "an agentstack command whose words depend on %s", w->unres);
            return;
        }
        if (!strcmp(w->text, "--manifest-dir")) {
            i++;
            continue;
        }
        if (sh_is_flag(w->text))
            continue;
        /* `more` and `x` are a namespace: the verb is the word after */
        if (!strcmp(w->text, "more") || !strcmp(w->text, "x"))
            continue;
        verb = i;
        found = true;
        break;
    }
    if (c->tail_unknown && !found) {
        sh_unreadable(j, c, "an agentstack command built from %s's input", c->via);
        return;
    }
    if (!found)
        return; /* bare `agentstack`: status */
    const char *v = c->w[verb].text;
    bool yes = sh_has_word(c, verb + 1, "--yes") || sh_has_word(c, verb + 1, "-y");
    strbuf what = SB_INIT;
    gi_clean(&what, v, 40);
    bool deny = false;
    if (!strcmp(v, "trust")) {
        deny = !(sh_has_word(c, verb + 1, "--preview") || sh_has_word(c, verb + 1, "--list") ||
                 sh_has_word(c, verb + 1, "list"));
    } else if (!strcmp(v, "yes") || !strcmp(v, "sign")) {
        deny = true;
    } else if (!strcmp(v, "policy")) {
        deny = sh_has_word(c, verb + 1, "--write");
    } else if (!strcmp(v, "guard")) {
        const char *sub = sh_T(c, verb + 1);
        deny = !(!strcmp(sub, "test") || !strcmp(sub, "status") || !strcmp(sub, "check") ||
                 sh_is_flag(sub) || !sub[0]);
        if (deny)
            sb_addf(&what, " %s", sub);
    } else if (!strcmp(v, "secret")) {
        const char *sub = sh_T(c, verb + 1);
        deny = !strcmp(sub, "set") || !strcmp(sub, "rm") ||
               (!strcmp(sub, "get") && sh_has_word(c, verb + 2, "--reveal"));
        if (deny)
            sb_addf(&what, " %s", sub);
    } else if (!strcmp(v, "auth")) {
        /* a login stores an OAuth token in the secret store, a logout
         * revokes and deletes one: the user's credentials (docs/oauth.md) */
        const char *sub = sh_T(c, verb + 1);
        deny = !strcmp(sub, "login") || !strcmp(sub, "logout");
        if (deny)
            sb_addf(&what, " %s", sub);
    } else if (!strcmp(v, "lib")) {
        deny = !strcmp(sh_T(c, verb + 1), "sync") && sh_has_word(c, verb + 2, "--allow-secrets");
        if (deny)
            sb_adds(&what, " sync --allow-secrets");
    } else if (!strcmp(v, "uninstall")) {
        /* reverting the CLIs' files is apply's write; deleting the machine
         * home erases the trust store, the evidence chains and the keys */
        deny = sh_has_word(c, verb + 1, "--write") && !sh_has_word(c, verb + 1, "--keep-home");
        if (deny)
            sb_adds(&what, " --write (without --keep-home)");
    } else if (!strcmp(v, "init") || !strcmp(v, "apply") || !strcmp(v, "upgrade") ||
               !strcmp(v, "lock")) {
        deny = yes;
        if (deny)
            sb_adds(&what, " --yes");
    } else if (!sh_in(v, as_safe)) {
        strbuf m = SB_INIT;
        sb_addf(&m, "`agentstack %s` is a command the guard does not know", what.buf);
        sh_deny_authority(j, m.buf);
        sb_release(&m);
        sb_release(&what);
        return;
    }
    if (deny) {
        strbuf m = SB_INIT;
        sb_addf(&m, "`agentstack %s` changes consent, policy, secrets or the guard", what.buf);
        sh_deny_authority(j, m.buf);
        sb_release(&m);
    } else if (c->tail_unknown) {
        sh_unreadable(j, c, "an agentstack command completed by %s's input", c->via);
    }
    sb_release(&what);
}

/* Text (inline code, a script) that names agentstack's authority. */
static bool text_names_authority(const struct guard_ctx *x, const char *s, size_t n)
{
    if (memmem(s, n, ".agentstack", 11) || memmem(s, n, "AGENTSTACK_", 11) ||
        (x->ash && memmem(s, n, x->ash, strlen(x->ash))) ||
        (x->ash_real && memmem(s, n, x->ash_real, strlen(x->ash_real))))
        return true;
    if (memmem(s, n, "agentstack", 10)) {
        static const char *const verbs[] = {"trust", "consented", "secret", "policy",
                                            "guard", "sign",      NULL};
        for (size_t i = 0; verbs[i]; i++)
            if (memmem(s, n, verbs[i], strlen(verbs[i])))
                return true;
    }
    return false;
}

/* Path-like tokens of code text that name a denied file: open(".env"). */
static void scan_code_names(struct sh_j *j, struct sh_cmd *c, const char *s, size_t n,
                            const char *prog)
{
    size_t i = 0;
    while (i < n && !j->v->deny) {
        while (i < n && strchr(" \t\n\r'\"`()[]{},;:=+<>|&*!?$\\", s[i]))
            i++;
        size_t a = i;
        while (i < n && !strchr(" \t\n\r'\"`()[]{},;:=+<>|&*!?$\\", s[i]))
            i++;
        if (i > a && i - a < 1024) {
            char *tok = sh_strndup(j->a, s + a, i - a);
            const char *abs = sh_abs(j, c->st, tok);
            strbuf what = SB_INIT;
            sb_addf(&what, "%s code naming", prog);
            gi_check_glob(j->x, tok, abs, what.buf, "the command did not run", j->v);
            sb_release(&what);
        }
    }
}

void sh_judge_code(struct sh_j *j, struct sh_cmd *c, const char *prog, const char *code, size_t n)
{
    if (text_names_authority(j->x, code, n)) {
        sh_deny_builtin(j,
                        "%s code naming agentstack's machine home or consent was refused — "
                        "agents never touch consent, policy or evidence",
                        prog);
        return;
    }
    scan_code_names(j, c, code, n, prog);
    /* the names were checked; what the code does is not understood */
    if (!j->v->deny)
        sh_unreadable(j, c, "%s runs inline code, which the guard does not read", prog);
}

bool sh_common_program(const char *b)
{
    return sh_in(b, common);
}
