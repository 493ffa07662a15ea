/*
 * agentstack yes — take what is waiting in this project live with one
 * review, at a person's terminal (docs/commands.md, "yes").
 *
 * Why: a skill written by hand (.agentstack/skills/<name>/SKILL.md) or a
 * house rule (.agentstack/instructions/<name>.md) is inert until it is
 * declared, pinned, approved and rendered — four commands. `yes` is those
 * four as one step: it declares the dropped files, runs `lock --write`, then
 * `trust` (its card and its one question), then `use <toolset> --write`
 * (`apply --write` when the manifest has no toolsets).
 *
 * Guarantees:
 *  - No way around the trust gate: the approval is `trust`'s own, with the
 *    card of exactly the bytes it grants, its blockers, its content scan and
 *    its refusal inside an agent's process tree. `yes` has no --yes, no
 *    --consented and no other non-interactive form.
 *  - Without a terminal on stdin, or from a process tree that holds an
 *    agent, it refuses before writing anything and names the explicit
 *    commands (the non-interactive path goes through `trust --consented`).
 *  - Declining (or any failure before the grant) puts the manifest and the
 *    lock back byte for byte: the dropped files stay on disk, undeclared and
 *    inert. A file changed meanwhile by someone else is left as it is, with
 *    a warning.
 *  - Only names `lock` and `trust` accept are declared: skill names are
 *    checked (skill_name_valid); a dropped folder without SKILL.md, a
 *    symlink or a non-regular file is not a drop.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/term.h"
#include "base/toml.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "bundle/skill_md.h"
#include "cli/cli.h"
#include "cli/mfedit.h"
#include "trust/trust.h"

int cmd_yes(int argc, char **argv, struct cli_ctx *ctx);
int cmd_lock(int argc, char **argv, struct cli_ctx *ctx);
int cmd_trust(int argc, char **argv, struct cli_ctx *ctx);
int cmd_apply(int argc, char **argv, struct cli_ctx *ctx);
int cmd_use(int argc, char **argv, struct cli_ctx *ctx);

const struct cli_spec cmd_yes_spec = {
    .name = "yes",
    .fn = cmd_yes,
    .summary = "declare dropped skills and instructions, pin, review once and render",
    .synopsis = CLI_LINES("yes"),
    .description =
        "Finds the skills (.agentstack/skills/<name>/SKILL.md) and instructions "
        "(.agentstack/instructions/<name>.md) dropped into the project but not declared, "
        "declares them in the manifest (and in the default toolset), then runs agentstack "
        "lock --write, agentstack trust and agentstack use <toolset> --write (apply --write "
        "when there are no toolsets). The one question is "
        "trust's, on the card of exactly the bytes it approves; declining puts the manifest "
        "and lock back as they were. A person's answer: without a terminal, or inside an "
        "agent's session, it refuses and names the explicit commands.",
    .examples = CLI_LINES("agentstack yes"),
    .see_also = "trust lock use apply undo",
};

/* ---- what was dropped ----------------------------------------------------- */

struct drop {
    char *name;
    bool skill; /* else an instruction */
};
typedef VEC(struct drop) drops;

static bool is_regular(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static bool is_dir(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Does a declared path of the manifest name this file or folder? */
static bool path_declared(const struct manifest *m, const char *declared, const char *real)
{
    if (!declared)
        return false;
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    bool hit = false;
    if (manifest_item_path(m, declared, NULL, &out, &err) == 0) {
        char r[PATH_MAX];
        hit = realpath(out.buf, r) && strcmp(r, real) == 0;
    }
    sb_release(&out);
    return hit;
}

static bool skill_declared(const struct manifest *m, const char *name, const char *real)
{
    if (manifest_skill(m, name))
        return true;
    for (size_t i = 0; i < m->skills.n; i++)
        if (m->skills.v[i].source == MF_SOURCE_PATH && path_declared(m, m->skills.v[i].path, real))
            return true;
    return false;
}

static bool instruction_declared(const struct manifest *m, const char *name, const char *real)
{
    if (manifest_instruction(m, name))
        return true;
    for (size_t i = 0; i < m->instructions.n; i++) {
        const struct mf_instruction *in = &m->instructions.v[i];
        if (in->inherited)
            continue;
        if (path_declared(m, in->path, real))
            return true;
        for (size_t k = 0; k < in->variants.n; k++)
            if (path_declared(m, in->variants.v[k].path, real))
                return true;
    }
    return false;
}

static int by_name(const void *a, const void *b)
{
    const struct drop *x = a, *y = b;
    return x->skill != y->skill ? (x->skill ? -1 : 1) : strcmp(x->name, y->name);
}

/* The undeclared skills and instructions under the manifest dir, sorted. */
static void find_drops(const struct manifest *m, const char *manifest_dir, drops *out)
{
    strbuf dir = SB_INIT, f = SB_INIT;
    char real[PATH_MAX];
    sb_addf(&dir, "%s/skills", manifest_dir);
    DIR *d = is_dir(dir.buf) ? opendir(dir.buf) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.' || !skill_name_valid(e->d_name))
            continue;
        sb_reset(&f);
        sb_addf(&f, "%s/%s", dir.buf, e->d_name);
        if (!is_dir(f.buf) || !realpath(f.buf, real))
            continue;
        sb_adds(&f, "/SKILL.md");
        if (!is_regular(f.buf) || skill_declared(m, e->d_name, real))
            continue;
        vec_push(out, ((struct drop){xstrdup(e->d_name), true}));
    }
    if (d)
        closedir(d);
    sb_reset(&dir);
    sb_addf(&dir, "%s/instructions", manifest_dir);
    d = is_dir(dir.buf) ? opendir(dir.buf) : NULL;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n < 4 || strcmp(e->d_name + n - 3, ".md") != 0)
            continue;
        char *name = xstrndup(e->d_name, n - 3);
        sb_reset(&f);
        sb_addf(&f, "%s/%s", dir.buf, e->d_name);
        if (!skill_name_valid(name) || !is_regular(f.buf) || !realpath(f.buf, real) ||
            instruction_declared(m, name, real)) {
            free(name);
            continue;
        }
        vec_push(out, ((struct drop){name, false}));
    }
    if (d)
        closedir(d);
    if (out->n)
        qsort(out->v, out->n, sizeof *out->v, by_name);
    sb_release(&dir);
    sb_release(&f);
}

static void drops_free(drops *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->v[i].name);
    vec_free(v);
}

/* ---- declaring them ------------------------------------------------------- */

/* The toolset a new skill belongs in: the default, else the only one; NULL
 * when there are no toolsets (every skill is served) or it cannot be told. */
static const struct mf_toolset *home_toolset(const struct manifest *m)
{
    if (m->default_toolset)
        return manifest_toolset(m, m->default_toolset);
    return m->toolsets.n == 1 ? &m->toolsets.v[0] : NULL;
}

static bool lists_all(const struct mf_toolset *t)
{
    for (size_t i = 0; i < t->skills.n; i++)
        if (!strcmp(t->skills.v[i], "*"))
            return true;
    return false;
}

static int declare(toml_edit *ed, const struct manifest *m, const void *arg, strbuf *summary,
                   struct as_err *err)
{
    const drops *dv = arg;
    (void)summary;
    for (size_t i = 0; i < dv->n; i++) {
        const struct drop *d = &dv->v[i];
        strbuf rel = SB_INIT;
        if (d->skill)
            sb_addf(&rel, "./skills/%s", d->name);
        else
            sb_addf(&rel, "./instructions/%s.md", d->name);
        toml_value *tab = toml_new(TOML_TABLE);
        toml_table_set(tab, "path", toml_new_string(rel.buf));
        const char *path[2] = {d->skill ? "skills" : "instructions", d->name};
        int rc = toml_edit_set_table(ed, path, 2, tab, err);
        toml_free(tab);
        sb_release(&rel);
        if (rc < 0)
            return -1;
    }
    const struct mf_toolset *t = home_toolset(m);
    if (!t || lists_all(t))
        return 0;
    toml_value *arr = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < t->skills.n; i++)
        toml_array_push(arr, toml_new_string(t->skills.v[i]));
    size_t added = 0;
    for (size_t i = 0; i < dv->n; i++)
        if (dv->v[i].skill) {
            toml_array_push(arr, toml_new_string(dv->v[i].name));
            added++;
        }
    int rc = 0;
    if (added) {
        const char *path[3] = {cli_toolsets_key(m), t->name, "skills"};
        rc = toml_edit_set(ed, path, 3, arr, err);
    }
    toml_free(arr);
    return rc;
}

/* ---- putting things back -------------------------------------------------- */

struct saved {
    const char *path;
    strbuf before; /* the bytes before yes */
    bool existed;
    strbuf ours; /* the bytes yes (or lock) left there */
    bool ours_set;
};

static int read_opt(const char *path, strbuf *out, bool *exists, struct as_err *err)
{
    sb_reset(out);
    *exists = is_regular(path);
    if (!*exists)
        return 0;
    return fs_read_file(path, 8u << 20, 1, out, err);
}

/* Records what is there now, as yes's own bytes. */
static void mark_ours(struct saved *s)
{
    struct as_err err = AS_ERR_INIT;
    bool exists;
    s->ours_set = read_opt(s->path, &s->ours, &exists, &err) == 0 && exists;
}

static void put_back(struct saved *s, const struct bundle_paths *p)
{
    if (!s->ours_set)
        return;
    struct as_err err = AS_ERR_INIT;
    strbuf now = SB_INIT;
    bool exists;
    if (read_opt(s->path, &now, &exists, &err) < 0 || !exists || now.len != s->ours.len ||
        memcmp(now.buf, s->ours.buf, now.len) != 0) {
        term_fprintf(stderr, "warning: %s changed meanwhile; left as it is\n", s->path);
        sb_release(&now);
        return;
    }
    sb_release(&now);
    if (s->before.len == s->ours.len && memcmp(s->before.buf, s->ours.buf, s->ours.len) == 0 &&
        s->existed)
        return;
    struct fs_write_opts wo = {0644, FS_SYMLINK_FOLLOW, p->project_root, NULL};
    if (s->existed ? fs_write_atomic(s->path, s->before.buf, s->before.len, &wo, &err)
                   : (unlink(s->path) == 0 || errno == ENOENT ? 0 : -1)) {
        term_fprintf(stderr, "warning: %s not put back: %s\n", s->path,
                     err.msg[0] ? err.msg : strerror(errno));
        return;
    }
    term_printf("· put back %s\n", s->path);
}

/* ---- the command ---------------------------------------------------------- */

static void explicit_path(void)
{
    term_fprintf(stderr,
                 "  the same, each step its own command:\n"
                 "    declare the files in agentstack.toml: [skills.<name>] path = "
                 "\"./skills/<name>\", [instructions.<name>] path = \"./instructions/<name>.md\"\n"
                 "    agentstack lock --write\n"
                 "    agentstack trust . --preview        # its surface_digest\n"
                 "    agentstack trust . --yes --consented <surface_digest>\n"
                 "    agentstack use --write              # apply --write with no toolsets\n");
}

/* Runs one step as its own command would, echoing it first. */
static int run_step(int (*fn)(int, char **, struct cli_ctx *), struct cli_ctx *ctx,
                    const char *const *args)
{
    strvec av = STRVEC_INIT;
    strbuf line = SB_INIT;
    for (size_t i = 0; args[i]; i++) {
        strvec_push(&av, args[i]);
        sb_addf(&line, "%s%s", i ? " " : "", args[i]);
    }
    term_printf("→ agentstack %s\n", line.buf);
    fflush(stdout);
    struct cli_ctx sub = *ctx;
    int rc = fn((int)av.n, av.v, &sub);
    fflush(stdout);
    strvec_clear(&av);
    sb_release(&line);
    return rc;
}

/* Declares the drops in the manifest (cli_manifest_edit_now: under the
 * writer lock, checked to load, atomic). 0 written, -1 after printing why. */
static int write_declarations(const struct bundle_paths *p, const drops *dv)
{
    struct as_err err = AS_ERR_INIT;
    if (cli_manifest_edit_now(p, declare, dv, &err) < 0) {
        cli_error(&err);
        return -1;
    }
    term_printf("✓ declared in %s\n", p->manifest);
    return 0;
}

static bool trusted_now(const struct bundle_paths *p)
{
    struct trust_status ts;
    memset(&ts, 0, sizeof ts);
    struct as_err err = AS_ERR_INIT;
    bool t = trust_check(p, &ts, &err) == 0 && ts.state == TRUST_TRUSTED;
    trust_status_release(&ts);
    return t;
}

int cmd_yes(int argc, char **argv, struct cli_ctx *ctx)
{
    int rc = cli_parse(&cmd_yes_spec, &argc, argv, ctx, NULL);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_yes_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        return rc;
    /* a person's answer: checked before anything is read or written */
    if (!term_isatty(0)) {
        cli_errorf("refusing to say yes: stdin is not a terminal — yes is a person's answer, "
                   "given at their own terminal (nothing was written)");
        explicit_path();
        return EXIT_FAIL;
    }
    const char *person = getenv(TRUST_CONSENT_OVERRIDE);
    strbuf agent = SB_INIT;
    if (!(person && !strcmp(person, "1")) && trust_agent_context(&agent)) {
        cli_errorf("refusing to say yes: %s — consent is given by a person at their own "
                   "terminal, outside any agent session (nothing was written)",
                   agent.buf);
        sb_release(&agent);
        return EXIT_FAIL;
    }
    sb_release(&agent);

    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    drops dv = VEC_INIT;
    char *activate = NULL; /* the toolset use activates, or NULL for apply */
    struct saved man = {.path = p.manifest, .before = SB_INIT, .ours = SB_INIT};
    struct saved lck = {.path = p.lock, .before = SB_INIT, .ours = SB_INIT};
    rc = EXIT_FAIL;
    struct manifest *m = manifest_load(&p, &err);
    if (!m) {
        cli_error(&err);
        goto out;
    }
    find_drops(m, p.manifest_dir, &dv);
    const struct mf_toolset *home = home_toolset(m);
    bool several = !home && m->toolsets.n > 1;
    activate = home ? xstrdup(home->name) : NULL;
    if (read_opt(man.path, &man.before, &man.existed, &err) < 0 ||
        read_opt(lck.path, &lck.before, &lck.existed, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (dv.n) {
        term_printf("Dropped into %s, not declared yet:\n", p.manifest_dir);
        for (size_t i = 0; i < dv.n; i++)
            term_printf("  + %s %s (%s/%s%s)\n", dv.v[i].skill ? "skill" : "instruction",
                        dv.v[i].name, dv.v[i].skill ? "skills" : "instructions", dv.v[i].name,
                        dv.v[i].skill ? "/SKILL.md" : ".md");
        if (home && !lists_all(home))
            term_printf("  skills join toolset '%s'\n", home->name);
        else if (several)
            term_printf("  several toolsets and no default: add the skills to one with "
                        "agentstack toolset create, or list them in [toolsets.<name>] skills\n");
        term_printf("Declaring them, pinning, then one review; declining puts the manifest and "
                    "lock back as they were.\n");
    } else if (trusted_now(&p)) {
        term_printf("Nothing waiting: no undeclared files, and this project is trusted at its "
                    "current bytes.\n");
    } else {
        term_printf("No undeclared files; pinning, then one review of this project.\n");
    }
    manifest_free(m);
    m = NULL;
    fflush(stdout);

    if (dv.n) {
        if (write_declarations(&p, &dv) < 0)
            goto out;
        mark_ours(&man);
    }
    if (run_step(cmd_lock, ctx, (const char *const[]){"lock", "--write", NULL}) != EXIT_OK) {
        cli_errorf("yes stopped: lock --write failed (see above)");
        goto back;
    }
    mark_ours(&lck);
    if (!trusted_now(&p)) {
        if (run_step(cmd_trust, ctx, (const char *const[]){"trust", NULL}) != EXIT_OK ||
            !trusted_now(&p)) {
            term_printf("not trusted: the manifest and lock go back as they were");
            term_printf(dv.n ? "; the dropped files stay on disk, undeclared and inert\n" : "\n");
            goto back;
        }
    } else {
        term_printf("· trust: already trusted at these bytes\n");
    }
    /* a toolset's skills are placed by use; with no toolsets, apply
     * renders every server */
    if (activate)
        rc = run_step(cmd_use, ctx, (const char *const[]){"use", activate, "--write", NULL});
    else
        rc = run_step(cmd_apply, ctx, (const char *const[]){"apply", "--write", NULL});
    if (rc == EXIT_OK)
        term_printf("Undo: agentstack undo (the CLIs' files), agentstack trust --revoke (the "
                    "approval).\n");
    goto out;
back:
    put_back(&lck, &p);
    put_back(&man, &p);
    rc = EXIT_FAIL;
out:
    if (m)
        manifest_free(m);
    drops_free(&dv);
    free(activate);
    sb_release(&man.before);
    sb_release(&man.ours);
    sb_release(&lck.before);
    sb_release(&lck.ours);
    bundle_paths_free(&p);
    return rc;
}
