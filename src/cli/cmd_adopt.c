/*
 * agentstack adopt [--target ID]... [--scope project|global] [--write]
 *                  [--secrets keychain|env|file|skip] [--no-keychain]
 * (docs/adapters.md): pulls a deliberate hand edit of a CLI's native config back into
 * the manifest — a server added by hand, or a field changed by hand.
 *
 * Each native entry is read through the same inverse mapping as init and
 * compared with the manifest's server after its ${REF}s resolve, so a
 * rendered entry (secrets filled in, cwd wrapped) reads as in sync and only
 * real edits show. Secrets in an adopted entry are lifted into ${REF}s,
 * reusing the manifest's names for values it already knows. Two CLIs holding
 * different edits of one server are a conflict: nothing is adopted for it
 * until --target picks one. Preview by default; --write edits only the
 * affected keys of the manifest (comments and layout kept).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters/adapters.h"
#include "base/fs.h"
#include "base/toml.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "bundle/ref.h"
#include "cli/cli.h"
#include "onboard/onboard.h"
#include "secrets/backends.h"

int cmd_adopt(int argc, char **argv, struct cli_ctx *ctx);

struct adopt_args {
    strvec targets;
    int scope;
    bool write;
    int dest; /* enum onb_dest */
};

#define CLI_ARGS struct adopt_args
static const struct cli_option adopt_options[] = {
    {OPT_LIST("target", 0, targets, "ID",
              "adopt from this CLI only (and pick its edit when two CLIs differ)")},
    {OPT_ENUM("scope", 0, scope, cli_scope_choices,
              "the CLIs' project or global files (default: project inside one)")},
    {OPT_BOOL("write", 0, write, "edit the manifest's affected keys (default: preview)")},
    {OPT_ENUM("secrets", 0, dest, cli_secret_dest_choices,
              "where lifted secrets go (default: the OS keychain)")},
    {OPT_SET("no-keychain", 0, dest, ONB_DEST_SKIP, "store no secret values (--secrets skip)")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_adopt_spec = {
    .name = "adopt",
    .fn = cmd_adopt,
    .summary = "pull hand edits of a CLI's native config back into the manifest",
    .synopsis = CLI_LINES("adopt [--target ID]... [--scope project|global] [--write]",
                          "adopt [--secrets keychain|env|file|skip] [--no-keychain]"),
    .description = "Previews what it would adopt; --write edits only the affected manifest keys "
                   "(comments and layout kept). Secrets in an adopted entry become ${REF}s.",
    .options = adopt_options,
    .examples = CLI_LINES("agentstack adopt", "agentstack adopt --target cursor --write"),
    .see_also = "diff apply init",
};

static int parse(int argc, char **argv, struct cli_ctx *ctx, struct adopt_args *a)
{
    a->dest = ONB_DEST_KEYCHAIN;
    int rc = cli_parse(&cmd_adopt_spec, &argc, argv, ctx, a);
    if (rc == CLI_CONTINUE)
        rc = cli_no_arguments(&cmd_adopt_spec, argc, argv);
    if (rc != CLI_CONTINUE)
        strvec_clear(&a->targets);
    return rc;
}

/* ---- comparing ------------------------------------------------------------- */

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Fields of b that differ from a, as a "url, headers" list. */
static void changed_fields(const struct onb_server *a, const struct onb_server *b, strbuf *out)
{
    struct onb_server ta = *a, tb = *b;
    const char *names[7];
    size_t n = 0;
    if (a->http != b->http)
        names[n++] = "type";
    if (!same_str(a->url, b->url))
        names[n++] = "url";
    if (!same_str(a->command, b->command))
        names[n++] = "command";
    /* compare args / headers / env via onb_server_same on copies that differ
     * only in that field */
    ta.http = tb.http;
    ta.url = tb.url;
    ta.command = tb.command;
    ta.cwd = tb.cwd;
    ta.hdr_keys = tb.hdr_keys;
    ta.hdr_vals = tb.hdr_vals;
    ta.env_keys = tb.env_keys;
    ta.env_vals = tb.env_vals;
    if (!onb_server_same(&ta, &tb))
        names[n++] = "args";
    if (!same_str(a->cwd, b->cwd))
        names[n++] = "cwd";
    ta = tb;
    ta.hdr_keys = a->hdr_keys;
    ta.hdr_vals = a->hdr_vals;
    if (!onb_server_same(&ta, &tb))
        names[n++] = "headers";
    ta = tb;
    ta.env_keys = a->env_keys;
    ta.env_vals = a->env_vals;
    if (!onb_server_same(&ta, &tb))
        names[n++] = "env";
    for (size_t i = 0; i < n; i++)
        sb_addf(out, "%s%s", i ? ", " : "", names[i]);
}

/* ---- building TOML values --------------------------------------------------- */

static toml_value *strmap(const strvec *k, const strvec *v)
{
    toml_value *t = toml_new(TOML_TABLE);
    t->is_inline = 1;
    for (size_t i = 0; i < k->n; i++)
        toml_table_set(t, k->v[i], toml_new_string(v->v[i]));
    return t;
}

static toml_value *strlist(const strvec *v)
{
    toml_value *a = toml_new(TOML_ARRAY);
    for (size_t i = 0; i < v->n; i++)
        toml_array_push(a, toml_new_string(v->v[i]));
    return a;
}

static toml_value *server_table(const struct onb_server *s)
{
    toml_value *t = toml_new(TOML_TABLE);
    toml_table_set(t, "type", toml_new_string(s->http ? "http" : "stdio"));
    if (s->http && s->url)
        toml_table_set(t, "url", toml_new_string(s->url));
    if (!s->http && s->command)
        toml_table_set(t, "command", toml_new_string(s->command));
    if (!s->http && s->args.n)
        toml_table_set(t, "args", strlist(&s->args));
    if (!s->http && s->cwd)
        toml_table_set(t, "cwd", toml_new_string(s->cwd));
    if (s->hdr_keys.n)
        toml_table_set(t, "headers", strmap(&s->hdr_keys, &s->hdr_vals));
    if (s->env_keys.n)
        toml_table_set(t, "env", strmap(&s->env_keys, &s->env_vals));
    if (s->extra && toml_len(s->extra))
        toml_table_set(t, "extra", toml_clone(s->extra));
    return t;
}

/* Sets (v non-NULL) or removes one key of [servers.<name>]. */
static int edit_key(toml_edit *ed, const char *name, const char *key, toml_value *v,
                    struct as_err *err)
{
    const char *path[] = {"servers", name, key};
    int rc = v ? toml_edit_set(ed, path, 3, v, err) : toml_edit_remove(ed, path, 3, err);
    toml_free(v);
    return rc;
}

/* Applies an update: only the fields that differ change. */
static int edit_update(toml_edit *ed, const struct onb_server *cur, const struct onb_server *s,
                       struct as_err *err)
{
    strbuf f = SB_INIT;
    changed_fields(cur, s, &f);
    int rc = 0;
    if (rc == 0 && strstr(f.buf, "type"))
        rc = edit_key(ed, s->name, "type", toml_new_string(s->http ? "http" : "stdio"), err);
    if (rc == 0 && strstr(f.buf, "url"))
        rc = edit_key(ed, s->name, "url", s->url ? toml_new_string(s->url) : NULL, err);
    if (rc == 0 && strstr(f.buf, "command"))
        rc = edit_key(ed, s->name, "command", s->command ? toml_new_string(s->command) : NULL, err);
    if (rc == 0 && strstr(f.buf, "args"))
        rc = edit_key(ed, s->name, "args", s->args.n ? strlist(&s->args) : NULL, err);
    if (rc == 0 && strstr(f.buf, "cwd"))
        rc = edit_key(ed, s->name, "cwd", s->cwd ? toml_new_string(s->cwd) : NULL, err);
    if (rc == 0 && strstr(f.buf, "headers"))
        rc = edit_key(ed, s->name, "headers",
                      s->hdr_keys.n ? strmap(&s->hdr_keys, &s->hdr_vals) : NULL, err);
    if (rc == 0 && strstr(f.buf, "env"))
        rc = edit_key(ed, s->name, "env", s->env_keys.n ? strmap(&s->env_keys, &s->env_vals) : NULL,
                      err);
    sb_release(&f);
    return rc;
}

/* ---- secrets --------------------------------------------------------------- */

static int taken_cb(void *ctx, const char *name, const char *value)
{
    struct sec_chain *c = ctx;
    strbuf v = SB_INIT;
    struct sec_result r;
    enum sec_status s = sec_resolve(c, name, &v, &r);
    int rc = s == SEC_FOUND ? (strcmp(v.buf, value) == 0 ? 1 : 2) : 0;
    sb_release_secure(&v);
    return rc;
}

/* A rendered entry holds the manifest's resolved values; map each back to
 * its ${NAME} (whole values, a header's value after its scheme, and inside
 * a URL) so only real edits differ. */
static void unresolve_value(char **slot, const onb_lifts *known, bool substring)
{
    static const char *const schemes[] = {"Bearer ", "Basic ", "Token ", "token ", ""};
    for (size_t i = 0; i < known->n; i++) {
        const char *val = known->v[i].value;
        size_t vl = strlen(val);
        for (size_t k = 0; k < sizeof schemes / sizeof *schemes; k++) {
            size_t sl = strlen(schemes[k]);
            if (strncmp(*slot, schemes[k], sl) == 0 && strcmp(*slot + sl, val) == 0) {
                char *nv = xasprintf("%s${%s}", schemes[k], known->v[i].name);
                explicit_bzero(*slot, strlen(*slot));
                free(*slot);
                *slot = nv;
                return;
            }
        }
        const char *at;
        if (substring && vl >= 6 && (at = strstr(*slot, val))) {
            char *nv =
                xasprintf("%.*s${%s}%s", (int)(at - *slot), *slot, known->v[i].name, at + vl);
            explicit_bzero(*slot, strlen(*slot));
            free(*slot);
            *slot = nv;
        }
    }
}

static void unresolve(struct onb_server *s, const onb_lifts *known)
{
    if (s->url)
        unresolve_value(&s->url, known, true);
    for (size_t i = 0; i < s->hdr_vals.n; i++)
        unresolve_value(&s->hdr_vals.v[i], known, false);
    for (size_t i = 0; i < s->env_vals.n; i++)
        unresolve_value(&s->env_vals.v[i], known, false);
    for (size_t i = 0; i < s->args.n; i++)
        unresolve_value(&s->args.v[i], known, false);
}

/* ---- the plan -------------------------------------------------------------- */

struct change {
    struct onb_server *s;        /* points into the import */
    const struct mf_server *cur; /* NULL: a new server */
    struct onb_server cur_shape; /* cur, resolved and anchored (for diffs) */
    strvec origins;
};
typedef VEC(struct change) changes;

/* Values the manifest already names (resolved through the chain) keep
 * their names: seeded first, marked reused. */
static void seed_known(const struct manifest *m, struct sec_chain *chain, onb_lifts *lifts)
{
    strvec refs = STRVEC_INIT;
    ref_manifest_refs(m, &refs);
    for (size_t i = 0; i < refs.n; i++) {
        strbuf v = SB_INIT;
        if (sec_resolve(chain, refs.v[i], &v, NULL) == SEC_FOUND && v.len) {
            struct onb_lift l = {0};
            l.name = xstrdup(refs.v[i]);
            l.value = xstrdup(v.buf);
            l.reused = true;
            vec_push(lifts, l);
        }
        sb_release_secure(&v);
    }
    strvec_clear(&refs);
}

/* Compare each native entry with the manifest: in sync (counted), the
 * same change seen from another CLI (merged), or a change; a name changed
 * differently in two CLIs is a conflict. */
static size_t classify(const struct manifest *m, struct onb_import *im, changes *ch,
                       strvec *conflicts)
{
    size_t in_sync = 0;
    for (size_t i = 0; i < im->servers.n; i++) {
        struct onb_server *s = &im->servers.v[i];
        const struct mf_server *cur = manifest_server(m, s->name);
        struct onb_server shape = {0};
        if (cur) {
            onb_server_from_manifest(cur, &shape);
            if (shape.cwd && shape.cwd[0] != '/' && strncmp(shape.cwd, "${", 2) != 0 &&
                m->project_root) {
                char *abs = xasprintf("%s/%s", m->project_root, shape.cwd);
                free(shape.cwd);
                shape.cwd = abs;
            }
            if (onb_server_same(&shape, s)) {
                in_sync++;
                onb_server_free(&shape);
                continue;
            }
        }
        struct change *same = NULL, *other = NULL;
        for (size_t k = 0; k < ch->n; k++)
            if (strcmp(ch->v[k].s->name, s->name) == 0) {
                if (onb_server_same(ch->v[k].s, s))
                    same = &ch->v[k];
                else
                    other = &ch->v[k];
            }
        if (same) {
            strvec_push(&same->origins, s->origins.v[0]);
            onb_server_free(&shape);
            continue;
        }
        if (other) {
            if (strvec_find(conflicts, s->name) < 0)
                strvec_push(conflicts, s->name);
        }
        struct change c = {s, cur, shape, STRVEC_INIT};
        strvec_push(&c.origins, s->origins.v[0]);
        vec_push(ch, c);
    }
    return in_sync;
}

/* The plan: problems and notes of the import, each server to add or
 * update, each conflict, and each secret value lifted out. */
static void print_plan(const struct onb_import *im, const changes *ch, const strvec *conflicts,
                       const onb_lifts *lifts, size_t seeded, enum onb_dest dest, size_t *n_adopt,
                       size_t *to_store)
{
    for (size_t i = 0; i < im->problems.n; i++)
        printf("✗ %s\n", im->problems.v[i]);
    for (size_t i = 0; i < im->notes.n; i++)
        printf("↳ %s\n", im->notes.v[i]);
    for (size_t k = 0; k < ch->n; k++) {
        const struct change *c = &ch->v[k];
        if (strvec_find(conflicts, c->s->name) >= 0)
            continue;
        (*n_adopt)++;
        printf("%s '%s'  ← ", c->cur ? "~ update" : "+ add", c->s->name);
        for (size_t i = 0; i < c->origins.n; i++)
            printf("%s%s", i ? " · " : "", c->origins.v[i]);
        if (c->cur) {
            strbuf f = SB_INIT;
            changed_fields(&c->cur_shape, c->s, &f);
            printf(" — hand-edited: %s", f.buf);
            sb_release(&f);
        }
        printf("\n");
        if (!c->cur) {
            strbuf blk = SB_INIT;
            struct onb_server tmp = *c->s;
            strvec none = STRVEC_INIT;
            tmp.origins = none;
            onb_server_toml(&tmp, &blk);
            for (char *line = strtok(blk.buf, "\n"); line; line = strtok(NULL, "\n"))
                printf("    %s\n", line);
            sb_release(&blk);
        }
    }
    for (size_t i = 0; i < conflicts->n; i++) {
        printf("! conflict: '%s' was edited differently in ", conflicts->v[i]);
        bool first = true;
        for (size_t k = 0; k < ch->n; k++)
            if (strcmp(ch->v[k].s->name, conflicts->v[i]) == 0) {
                printf("%s%s", first ? "" : " and ", ch->v[k].origins.v[0]);
                first = false;
            }
        printf(" — pick one with --target <cli>; nothing adopted for it\n");
    }
    for (size_t i = seeded; i < lifts->n; i++) {
        const struct onb_lift *l = &lifts->v[i];
        *to_store += !l->reused;
        printf("🔑 ${%s} ← ", l->name);
        for (size_t k = 0; k < l->where.n; k++)
            printf("%s%s", k ? ", " : "", l->where.v[k]);
        printf(" → %s\n", l->reused ? "already stored with this value" : onb_dest_name(dest));
    }
}

/* Each change, edited into the manifest key by key. */
static int edit_changes(toml_edit *ed, const changes *ch, const strvec *conflicts,
                        struct as_err *err)
{
    for (size_t k = 0; k < ch->n; k++) {
        const struct change *c = &ch->v[k];
        if (strvec_find(conflicts, c->s->name) >= 0)
            continue;
        int e;
        if (c->cur) {
            e = edit_update(ed, &c->cur_shape, c->s, err);
        } else {
            const char *path[] = {"servers", c->s->name};
            toml_value *t = server_table(c->s);
            e = toml_edit_set_table(ed, path, 2, t, err);
            toml_free(t);
        }
        if (e < 0) {
            as_err_prefix(err, "cannot edit [servers.%s]", c->s->name);
            return -1;
        }
    }
    return 0;
}

int cmd_adopt(int argc, char **argv, struct cli_ctx *ctx)
{
    struct adopt_args a = {0};
    int rc = parse(argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p = {0};
    struct manifest *m = NULL;
    struct adp_registry reg = {0};
    bool have_reg = false;
    struct onb_import im = {0};
    onb_lifts lifts = VEC_INIT;
    struct onb_stored stored = {0};
    struct sec_chain *chain = NULL;
    changes ch = VEC_INIT;
    strbuf mpath = SB_INIT, text = SB_INIT, disp = SB_INIT;
    strvec conflicts = STRVEC_INIT;
    toml_edit *ed = NULL;
    rc = EXIT_FAIL;

    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0)
        goto fail;
    bool global = a.scope ? a.scope == CLI_SCOPE_GLOBAL : !p.found;
    if (!global) {
        if (discover_require(&p, &err) < 0)
            goto fail;
        if (!(m = manifest_load(&p, &err)))
            goto fail;
        sb_adds(&mpath, p.manifest);
    } else {
        int absent = 0;
        m = manifest_load_machine(&absent, &err);
        if (!m) {
            if (absent) {
                as_err_set(&err, "there is no machine manifest to adopt into");
                as_err_hint(&err, "agentstack init --global");
            }
            goto fail;
        }
        if (home_path(HOME_MACHINE_MANIFEST, &mpath, &err) < 0)
            goto fail;
    }
    if (global && a.dest == ONB_DEST_ENV) {
        rc = cli_usage_error("adopt", "--secrets env needs a project; use keychain or file");
        goto out;
    }
    if (adp_registry_load(&reg, true, &err) < 0)
        goto fail;
    have_reg = true;
    if (adp_registry_check_ids(&reg, &a.targets, &err) < 0) {
        cli_error(&err);
        rc = EXIT_USAGE;
        goto out;
    }

    struct onb_import_opts io = {.project_root = global ? NULL : p.project_root,
                                 .only = &a.targets,
                                 .skip_global = !global,
                                 .skip_project = global,
                                 .no_merge = true};
    if (onb_import(&reg, &io, &im, &err) < 0)
        goto fail;

    /* Known values keep their known names. */
    struct sec_chain_opts co = {.project_dotenv = global ? NULL : p.env_file};
    chain = sec_chain_full(&co);
    seed_known(m, chain, &lifts);
    size_t seeded = lifts.n;
    for (size_t i = 0; i < im.servers.n; i++)
        unresolve(&im.servers.v[i], &lifts);
    onb_lift_secrets(&im, taken_cb, chain, &lifts);

    /* Compare each native entry with the manifest. */
    size_t in_sync = classify(m, &im, &ch, &conflicts);

    size_t n_adopt = 0, to_store = 0;
    print_plan(&im, &ch, &conflicts, &lifts, seeded, a.dest, &n_adopt, &to_store);
    onb_display_rel(mpath.buf, &disp);
    if (!n_adopt) {
        printf("✓ nothing to adopt — %zu native entr%s match%s the manifest\n", in_sync,
               in_sync == 1 ? "y" : "ies", in_sync == 1 ? "es" : "");
        rc = EXIT_OK;
        goto out;
    }
    if (!a.write) {
        printf("Dry run. Re-run with --write to adopt %zu server%s into %s.\n", n_adopt,
               n_adopt == 1 ? "" : "s", disp.buf);
        rc = EXIT_OK;
        goto out;
    }

    /* Write: secrets, then the manifest (edited key by key), validated first. */
    if (to_store && a.dest == ONB_DEST_KEYCHAIN && sec_keychain_probe(&err) < 0) {
        char why[2048];
        snprintf(why, sizeof why, "%s", err.msg);
        as_err_set(&err, "the OS keychain is unreachable (%s) — nothing was adopted", why);
        as_err_hint(&err, "choose where the secrets go: --secrets env | file | skip");
        goto fail;
    }
    if (fs_read_file(mpath.buf, MANIFEST_MAX_BYTES, 0, &text, &err) < 0)
        goto fail;
    if (!(ed = toml_edit_open(mpath.buf, text.buf, text.len, &err)))
        goto fail;
    if (edit_changes(ed, &ch, &conflicts, &err) < 0)
        goto fail;
    size_t nlen = 0;
    const char *ntext = toml_edit_text(ed, &nlen);
    struct manifest_source src = {.kind = global ? MANIFEST_MACHINE : MANIFEST_PROJECT,
                                  .path = mpath.buf,
                                  .data = ntext,
                                  .len = nlen};
    struct manifest *check = manifest_load_bytes(&src, &err);
    if (!check) {
        as_err_prefix(&err, "the adopted manifest would not load; nothing was written");
        goto fail;
    }
    manifest_free(check);
    /* Values go to the project .env only where git ignores it (or will,
     * with the rule appended and confirmed first); a .agentstack symlinked
     * out of the project refuses before anything is written. */
    struct onb_dotenv_plan dp = {0};
    if (to_store && a.dest == ONB_DEST_ENV &&
        (discover_check_layout(&p, &err) < 0 || onb_dotenv_check(&p, &dp, &err) < 0 ||
         onb_dotenv_ignore(&p, &dp, &err) < 0))
        goto fail;
    if (to_store && onb_store_lifts(&lifts, a.dest, global ? NULL : p.env_file, &stored, &err) < 0)
        goto fail_rollback;
    struct fs_write_opts wo = {.mode = 0644,
                               .symlinks = FS_SYMLINK_FOLLOW,
                               .contain_root = global ? NULL : p.project_root};
    if (fs_write_atomic(mpath.buf, ntext, nlen, &wo, &err) < 0)
        goto fail_rollback;
    if (to_store && a.dest == ONB_DEST_ENV && !dp.in_work_tree) {
        bool added = false;
        struct as_err gerr = AS_ERR_INIT;
        sec_gitignore_env(p.project_root, dp.rule, &added, &gerr);
    }
    printf("✓ adopted %zu server%s into %s\n", n_adopt, n_adopt == 1 ? "" : "s", disp.buf);
    for (size_t k = 0; k < ch.n && m->toolsets.n; k++)
        if (!ch.v[k].cur && strvec_find(&conflicts, ch.v[k].s->name) < 0)
            printf("  · '%s' is in no toolset yet — add it to one to activate it with use\n",
                   ch.v[k].s->name);
    printf("  · the other CLIs get it from: agentstack apply --write\n");
    if (!global)
        printf("  · the manifest changed: review and trust it again — agentstack trust .\n");
    rc = EXIT_OK;
    goto out;

fail_rollback:
    onb_rollback(&stored);
fail:
    fflush(stdout); /* the plan above, before the error, even through a pipe */
    cli_error(&err);
    rc = EXIT_FAIL;
out:
    fflush(stdout);
    toml_edit_free(ed);
    for (size_t k = 0; k < ch.n; k++) {
        onb_server_free(&ch.v[k].cur_shape);
        strvec_clear(&ch.v[k].origins);
    }
    vec_free(&ch);
    strvec_clear(&conflicts);
    sec_chain_free(chain);
    onb_stored_free(&stored);
    onb_lifts_free(&lifts);
    onb_import_free(&im);
    if (have_reg)
        adp_registry_free(&reg);
    manifest_free(m);
    bundle_paths_free(&p);
    sb_release(&mpath);
    sb_release(&text);
    sb_release(&disp);
    strvec_clear(&a.targets);
    return rc;
}
