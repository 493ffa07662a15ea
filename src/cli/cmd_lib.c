/*
 * agentstack lib <sub> — the central library (docs/library.md): sources, list, link,
 * unlink, reorder, add, add-server, remove*, trash, new, pack-init, sync.
 * Mutations preview unless --write (footer "Dry run."); new, pack-init and
 * sync act directly. Writes hold the one writer lock from the read to the
 * last write.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/strbuf.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/discover.h"
#include "bundle/literal_secret.h"
#include "bundle/manifest.h"
#include "bundle/scan.h"
#include "bundle/skill_md.h"
#include "cli/cli.h"
#include "library/library.h"
#include "library/sync.h"

int cmd_lib(int argc, char **argv, struct cli_ctx *ctx);

#define DRY_RUN "Dry run. Re-run with --write to apply.\n"
#define ADD_MAX_BYTES ((uint64_t)10 << 20)

struct opts {
    bool write, json, first, replace, allow_flagged, init, status, allow_secrets, empty;
    bool from_manifest;
    const char *name, *note, *file, *remote, *message, *source, *restore, *id;
    strvec pos;
    const char *cmd; /* "lib <sub>", for usage errors */
};

static int lib_leaf(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct opts
static const struct cli_option json_options[] = {
    {OPT_BOOL("json", 0, json, "one JSON document for scripts")}, {OPT_END}};
static const struct cli_option write_options[] = {
    {OPT_BOOL("write", 0, write, "change the library (default: preview)")}, {OPT_END}};
static const struct cli_option none_options[] = {{OPT_END}};
static const struct cli_option link_options[] = {
    {OPT_STRING("name", 0, name, "N", "the source's name (default: the folder's)")},
    {OPT_BOOL("first", 0, first, "put it first on the path: it wins every name it holds")},
    {OPT_STRING("note", 0, note, "T", "a note kept with the source")},
    {OPT_BOOL("write", 0, write, "link it (default: preview)")},
    {OPT_END},
};
static const struct cli_option add_options[] = {
    {OPT_STRING("name", 0, name, "N", "the skill's name in the library (default: the folder's)")},
    {OPT_BOOL("replace", 0, replace, "replace a skill of that name")},
    {OPT_BOOL("allow-flagged", 0, allow_flagged,
              "add it even when the content scan flags it (High findings)")},
    {OPT_BOOL("write", 0, write, "copy it into the library (default: preview)")},
    {OPT_END},
};
static const struct cli_option add_server_options[] = {
    {OPT_STRING("file", 0, file, "F", "the server's TOML table from this file")},
    {OPT_BOOL("from-manifest", 0, from_manifest, "the server of that name in this project")},
    {OPT_BOOL("replace", 0, replace, "replace a server of that name")},
    {OPT_BOOL("write", 0, write, "add it (default: preview)")},
    {OPT_END},
};
static const struct cli_option trash_options[] = {
    {OPT_STRING("restore", 0, restore, "ID", "put trash entry ID back")},
    {OPT_BOOL("replace", 0, replace, "with --restore: replace what now holds its name")},
    {OPT_BOOL("empty", 0, empty, "delete the trash for good (all, or --id)")},
    {OPT_STRING("id", 0, id, "ID", "with --empty: only this entry")},
    {OPT_BOOL("json", 0, json, "one JSON document for scripts")},
    {OPT_BOOL("write", 0, write, "with --restore or --empty: do it (default: preview)")},
    {OPT_END},
};
static const struct cli_option sync_options[] = {
    {OPT_STRING("source", 0, source, "N", "the linked source to sync (default: the first)")},
    {OPT_BOOL("init", 0, init,
              "start syncing: git init and commit a plain folder, or clone --remote into an "
              "empty one")},
    {OPT_STRING("remote", 0, remote, "URL", "set origin to URL")},
    {OPT_BOOL("status", 0, status, "the changed files and ahead/behind; change nothing")},
    {OPT_STRING("message", 0, message, "M",
                "the commit message (default \"agentstack library sync\")")},
    {OPT_BOOL("allow-secrets", 0, allow_secrets,
              "sync even when a file looks like it holds a literal secret")},
    {OPT_END},
};
#undef CLI_ARGS

static const struct cli_spec lib_sources_spec = {
    .name = "lib sources",
    .fn = lib_leaf,
    .summary = "the linked sources, in path order",
    .synopsis = CLI_LINES("lib sources [--json]"),
    .options = json_options,
};
static const struct cli_spec lib_list_spec = {
    .name = "lib list",
    .fn = lib_leaf,
    .summary = "every skill, server, hook and extension the library holds, and where from",
    .synopsis = CLI_LINES("lib list [--json]"),
    .options = json_options,
};
static const struct cli_spec lib_link_spec = {
    .name = "lib link",
    .fn = lib_leaf,
    .summary = "put a folder on the library path (a linked source)",
    .synopsis = CLI_LINES("lib link <path> [--name N] [--first] [--note T] [--write]"),
    .options = link_options,
};
static const struct cli_spec lib_unlink_spec = {
    .name = "lib unlink",
    .fn = lib_leaf,
    .summary = "take a source off the library path (its folder stays)",
    .synopsis = CLI_LINES("lib unlink <name> [--write]"),
    .options = write_options,
};
static const struct cli_spec lib_reorder_spec = {
    .name = "lib reorder",
    .fn = lib_leaf,
    .summary = "set the sources' order (the first wins a name)",
    .synopsis = CLI_LINES("lib reorder <name>... [--write]"),
    .options = write_options,
};
static const struct cli_spec lib_add_spec = {
    .name = "lib add",
    .fn = lib_leaf,
    .summary = "copy a local skill folder into the library",
    .synopsis = CLI_LINES("lib add <skill-dir> [--name N] [--replace] [--allow-flagged] [--write]"),
    .options = add_options,
};
static const struct cli_spec lib_add_server_spec = {
    .name = "lib add-server",
    .fn = lib_leaf,
    .summary = "add a server to the library from a file or this project",
    .synopsis =
        CLI_LINES("lib add-server <name> (--file F | --from-manifest) [--replace] [--write]"),
    .options = add_server_options,
};
static const struct cli_spec lib_remove_spec = {
    .name = "lib remove",
    .fn = lib_leaf,
    .summary = "move a skill to the library's trash",
    .synopsis = CLI_LINES("lib remove <name> [--write]"),
    .options = write_options,
};
static const struct cli_spec lib_remove_server_spec = {
    .name = "lib remove-server",
    .fn = lib_leaf,
    .summary = "move a server to the library's trash",
    .synopsis = CLI_LINES("lib remove-server <name> [--write]"),
    .options = write_options,
};
static const struct cli_spec lib_remove_hook_spec = {
    .name = "lib remove-hook",
    .fn = lib_leaf,
    .summary = "move a hook to the library's trash",
    .synopsis = CLI_LINES("lib remove-hook <name> [--write]"),
    .options = write_options,
};
static const struct cli_spec lib_remove_extension_spec = {
    .name = "lib remove-extension",
    .fn = lib_leaf,
    .summary = "move an extension to the library's trash",
    .synopsis = CLI_LINES("lib remove-extension <name> [--write]"),
    .options = write_options,
};
static const struct cli_spec lib_trash_spec = {
    .name = "lib trash",
    .fn = lib_leaf,
    .summary = "list the trash; restore an entry or empty it",
    .synopsis =
        CLI_LINES("lib trash [--restore ID [--replace] | --empty [--id ID]] [--write] [--json]"),
    .options = trash_options,
};
static const struct cli_spec lib_new_spec = {
    .name = "lib new",
    .fn = lib_leaf,
    .summary = "write ./<name>/SKILL.md from a template (then lib add it)",
    .synopsis = CLI_LINES("lib new <name>"),
    .options = none_options,
};
static const struct cli_spec lib_pack_init_spec = {
    .name = "lib pack-init",
    .fn = lib_leaf,
    .summary = "write a pack skeleton here: pack.toml, a starter skill, README.md",
    .synopsis = CLI_LINES("lib pack-init [name]"),
    .options = none_options,
};
static const struct cli_spec lib_sync_spec = {
    .name = "lib sync",
    .fn = lib_leaf,
    .summary = "commit, pull and push a library source over git (no literal secret leaves)",
    .synopsis = CLI_LINES(
        "lib sync [--source N] [--init] [--remote URL] [--status] [--message M] [--allow-secrets]"),
    .options = sync_options,
};

const struct cli_spec cmd_lib_spec = {
    .name = "lib",
    .fn = cmd_lib,
    .summary = "the central library: sources, list, add, remove, trash, sync over git",
    .subs =
        (const struct cli_spec *const[]){
            &lib_sources_spec, &lib_list_spec, &lib_link_spec, &lib_unlink_spec, &lib_reorder_spec,
            &lib_add_spec, &lib_add_server_spec, &lib_remove_spec, &lib_remove_server_spec,
            &lib_remove_hook_spec, &lib_remove_extension_spec, &lib_trash_spec, &lib_new_spec,
            &lib_pack_init_spec, &lib_sync_spec, NULL},
    .description = "Mutations preview unless --write (footer \"Dry run.\"); new, pack-init and "
                   "sync act directly. Writes hold the one writer lock from the read to the last "
                   "write.",
    .examples = CLI_LINES("agentstack lib sources", "agentstack lib link ~/team-skills --write",
                          "agentstack lib sync"),
    .see_also = "search add up",
};

static void sanitized(FILE *f, const char *s)
{
    strbuf b = SB_INIT;
    term_sanitize(&b, s, strlen(s));
    fputs(b.buf, f);
    sb_release(&b);
}

/* The library with its warnings printed (sanitized: they quote sources.toml
 * and library folders), for the subcommands that read it whole. */
static struct library *open_warned(struct cli_lib *cl, bool lock)
{
    struct library *lib = cli_lib_open(cl, lock);
    for (size_t i = 0; lib && i < lib->warnings.n; i++) {
        fputs("warning: ", stderr);
        sanitized(stderr, lib->warnings.v[i]);
        fputc('\n', stderr);
    }
    return lib;
}

/* The "Dry run." footer when not writing: then the command is done. */
static bool dry_run(const struct opts *o, int *rc)
{
    if (o->write)
        return false;
    printf(DRY_RUN);
    *rc = EXIT_OK;
    return true;
}

/* ---- lib sources ------------------------------------------------------------------- */

static void print_collisions(const struct library *lib, const char *title)
{
    lib_collisions c = VEC_INIT;
    lib_find_collisions(lib, &c);
    if (!c.n) {
        printf("No shadowed names.\n");
    } else {
        printf("%s\n", title);
        for (size_t i = 0; i < c.n; i++) {
            strbuf l = SB_INIT;
            lib_collision_format(lib, &c.v[i], &l);
            fputs("  ", stdout);
            sanitized(stdout, l.buf);
            fputc('\n', stdout);
            sb_release(&l);
        }
    }
    lib_collisions_free(&c);
}

static json_t *collisions_json(const struct library *lib)
{
    json_t *a = json_array();
    lib_collisions c = VEC_INIT;
    lib_find_collisions(lib, &c);
    for (size_t i = 0; i < c.n; i++) {
        json_t *sh = json_array();
        for (size_t j = 0; j < c.v[i].shadowed.n; j++)
            json_array_append_new(sh, json_string(lib->sources.v[c.v[i].shadowed.v[j]].name));
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o}", "name", c.v[i].name, "kind",
                                           lib_kind_name(c.v[i].kind), "used",
                                           lib->sources.v[c.v[i].winner].name, "shadowed", sh));
    }
    lib_collisions_free(&c);
    return a;
}

static void emit_json(json_t *j)
{
    strbuf out = SB_INIT;
    json_dump_pretty(j, &out);
    fputs(out.buf, stdout);
    if (!out.len || out.buf[out.len - 1] != '\n')
        fputc('\n', stdout);
    sb_release(&out);
    json_decref(j);
}

static int do_sources(struct opts *o)
{
    struct cli_lib cl = {0};
    struct library *lib = open_warned(&cl, false);
    if (!lib)
        return EXIT_FAIL;
    if (o->json) {
        json_t *src = json_array();
        for (size_t i = 0; i < lib->sources.n; i++) {
            const struct lib_source *s = &lib->sources.v[i];
            json_t *r =
                json_pack("{s:s, s:s, s:b, s:b, s:i}", "name", s->name, "path", s->path, "exists",
                          s->exists, "implicit", s->implicit, "items", (json_int_t)s->items.n);
            if (s->note)
                json_object_set_new(r, "note", json_string(s->note));
            if (s->error)
                json_object_set_new(r, "error", json_string(s->error));
            json_array_append_new(src, r);
        }
        emit_json(json_pack("{s:i, s:o, s:o}", "schema_version", 1, "sources", src, "shadowed",
                            collisions_json(lib)));
        cli_lib_close(&cl);
        return EXIT_OK;
    }
    printf("Library sources (first match wins)\n");
    for (size_t i = 0; i < lib->sources.n; i++) {
        const struct lib_source *s = &lib->sources.v[i];
        printf("  %zu. %-12s ", i + 1, s->name);
        sanitized(stdout, s->path);
        if (!s->exists)
            printf("  (folder not found)");
        else if (s->error)
            printf("  (index unusable — skipped)");
        else
            printf("  (%zu item%s%s)", s->items.n, s->items.n == 1 ? "" : "s",
                   s->indexed ? "" : ", no library.toml");
        if (s->implicit)
            printf("  [implicit]");
        fputc('\n', stdout);
        if (s->note) {
            printf("     note: ");
            sanitized(stdout, s->note);
            fputc('\n', stdout);
        }
    }
    print_collisions(lib, "Shadowed names:");
    cli_lib_close(&cl);
    return EXIT_OK;
}

/* ---- lib list ------------------------------------------------------------------------ */

static char *describe(const struct lib_item *it)
{
    struct as_err err = AS_ERR_INIT;
    if (it->kind == LIB_SKILL) {
        struct skill_md md = {0};
        char *d = NULL;
        if (skill_md_read(it->body, &md, &err) == 0 && md.description)
            d = xstrdup(md.description);
        skill_md_free(&md);
        return d;
    }
    if (it->kind == LIB_SERVER) {
        toml_value *t = toml_parse_file(it->body, LIB_MAX_FILE_BYTES, &err);
        if (!t)
            return xstrdup("(unreadable definition)");
        const toml_value *ty = toml_get(t, "type"), *u = toml_get(t, "url"),
                         *c = toml_get(t, "command");
        char *d = NULL;
        if (ty && ty->type == TOML_STRING && strcmp(ty->u.str.s, "http") == 0 && u &&
            u->type == TOML_STRING)
            d = xasprintf("http: %s", u->u.str.s);
        else if (c && c->type == TOML_STRING)
            d = xasprintf("stdio: %s", c->u.str.s);
        toml_free(t);
        return d;
    }
    if (it->kind == LIB_PACKAGE && it->version)
        return xasprintf("version %s", it->version);
    return NULL;
}

static void list_kind(const struct library *lib, enum lib_kind k, const char *title, json_t *jitems,
                      size_t *shown)
{
    bool header = false;
    for (size_t si = 0; si < lib->sources.n; si++) {
        const struct lib_source *s = &lib->sources.v[si];
        for (size_t j = 0; j < s->items.n; j++) {
            const struct lib_item *it = &s->items.v[j];
            if (it->kind != k)
                continue;
            const struct lib_item *win = NULL;
            struct as_err err = AS_ERR_INIT;
            if (lib_resolve(lib, k, it->name, &win, &err) != 1 || win != it)
                continue; /* shadowed: listed below */
            char *desc = describe(it);
            char hex[65] = "";
            const char *sum = it->checksum;
            if (!sum && lib_body_checksum(k, it->body, hex, &err) == 0)
                sum = hex;
            if (jitems) {
                json_t *r = json_pack("{s:s, s:s, s:s}", "name", it->name, "kind", lib_kind_name(k),
                                      "source", s->name);
                json_object_set_new(r, "description", desc ? json_string(desc) : json_null());
                json_object_set_new(r, "checksum", sum ? json_string(sum) : json_null());
                json_object_set_new(r, "provenance",
                                    it->provenance ? json_string(it->provenance) : json_null());
                json_array_append_new(jitems, r);
            } else {
                if (!header) {
                    printf("%s\n", title);
                    header = true;
                }
                strbuf line = SB_INIT;
                sb_addf(&line, "  %-24s ", it->name);
                if (desc) {
                    strbuf d = SB_INIT;
                    term_sanitize(&d, desc, strlen(desc));
                    if (d.len > 48) {
                        sb_setlen(&d, 45);
                        while (d.len && ((unsigned char)d.buf[d.len - 1] & 0xC0) == 0x80)
                            sb_setlen(&d, d.len - 1);
                        if (d.len && (unsigned char)d.buf[d.len - 1] >= 0xC0)
                            sb_setlen(&d, d.len - 1);
                        sb_adds(&d, "...");
                    }
                    sb_addf(&line, "%-48s ", d.buf);
                    sb_release(&d);
                } else {
                    sb_addf(&line, "%-48s ", "—");
                }
                sb_addf(&line, "%-10s %.12s", s->name, sum ? sum : "(missing)");
                if (it->provenance)
                    sb_addf(&line, "  %s", it->provenance);
                sanitized(stdout, line.buf);
                fputc('\n', stdout);
                sb_release(&line);
            }
            (*shown)++;
            free(desc);
        }
    }
}

static int do_list(struct opts *o)
{
    struct cli_lib cl = {0};
    struct library *lib = open_warned(&cl, false);
    if (!lib)
        return EXIT_FAIL;
    static const struct {
        enum lib_kind k;
        const char *title;
    } kinds[] = {
        {LIB_SKILL, "Skills"}, {LIB_SERVER, "Servers"},           {LIB_EXTENSION, "Extensions"},
        {LIB_HOOK, "Hooks"},   {LIB_INSTRUCTION, "Instructions"}, {LIB_PACKAGE, "Packages"}};
    size_t shown = 0;
    json_t *items = o->json ? json_array() : NULL;
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        list_kind(lib, kinds[i].k, kinds[i].title, items, &shown);
    if (o->json) {
        emit_json(json_pack("{s:i, s:o, s:o}", "schema_version", 1, "items", items, "shadowed",
                            collisions_json(lib)));
        cli_lib_close(&cl);
        return EXIT_OK;
    }
    if (!shown)
        printf("The central library is empty — add a skill: agentstack lib add <dir> --write\n");
    lib_collisions c = VEC_INIT;
    lib_find_collisions(lib, &c);
    if (c.n)
        print_collisions(lib, "Shadowed names");
    lib_collisions_free(&c);
    cli_lib_close(&cl);
    return EXIT_OK;
}

/* ---- link, unlink, reorder -------------------------------------------------------------- */

static int save_sources(struct library *lib)
{
    struct as_err err = AS_ERR_INIT;
    if (lib_sources_save(lib, &err) < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    return EXIT_OK;
}

static int do_link(struct opts *o)
{
    if (o->pos.n != 1)
        return cli_usage_error(o->cmd, "lib link needs one folder: agentstack lib link <path> "
                                       "[--name N] [--first] [--note T] [--write]");
    struct cli_lib cl = {0};
    struct library *lib = cli_lib_open(&cl, o->write);
    if (!lib)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    bool was = lib->materialized;
    int rc = EXIT_FAIL;
    if (lib_link(lib, o->pos.v[0], o->name, o->first, o->note, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    const struct lib_source *s = &lib->sources.v[o->first ? 0 : lib->sources.n - 1];
    printf("+ library source '%s' → ", s->name);
    sanitized(stdout, s->path);
    printf("%s%s\n", s->exists ? "" : "  (folder not found yet)",
           o->first ? "  (first: wins every name it holds)" : "");
    if (!was)
        printf("+ library source 'local' → %s/lib  (kept, now listed in sources.toml)\n",
               lib->home);
    if (dry_run(o, &rc))
        goto out;
    rc = save_sources(lib);
    if (rc == EXIT_OK) {
        printf("✓ linked '%s' (%zu source%s; first match wins)\n", s->name, lib->sources.n,
               lib->sources.n == 1 ? "" : "s");
        lib_collisions c = VEC_INIT;
        lib_find_collisions(lib, &c);
        if (c.n)
            printf("⚠ %zu name%s now shadowed — see agentstack lib sources\n", c.n,
                   c.n == 1 ? " is" : "s are");
        lib_collisions_free(&c);
    }
out:
    cli_lib_close(&cl);
    return rc;
}

static int do_unlink(struct opts *o)
{
    if (o->pos.n != 1)
        return cli_usage_error(o->cmd, "lib unlink needs a source name");
    struct cli_lib cl = {0};
    struct library *lib = cli_lib_open(&cl, o->write);
    if (!lib)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    int rc = EXIT_FAIL;
    long i = lib_source_find(lib, o->pos.v[0]);
    char *path = i >= 0 ? xstrdup(lib->sources.v[i].path) : NULL;
    if (lib_unlink(lib, o->pos.v[0], &err) < 0) {
        cli_error(&err);
        goto out;
    }
    printf("- library source '%s' (", o->pos.v[0]);
    sanitized(stdout, path);
    printf("; the folder is left as it is)\n");
    if (dry_run(o, &rc))
        goto out;
    rc = save_sources(lib);
    if (rc == EXIT_OK)
        printf("✓ unlinked '%s'\n", o->pos.v[0]);
out:
    free(path);
    cli_lib_close(&cl);
    return rc;
}

static int do_reorder(struct opts *o)
{
    struct cli_lib cl = {0};
    struct library *lib = cli_lib_open(&cl, o->write);
    if (!lib)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    int rc = EXIT_FAIL;
    if (lib_reorder(lib, (const char *const *)o->pos.v, o->pos.n, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    printf("Library sources (first match wins)\n");
    for (size_t i = 0; i < lib->sources.n; i++)
        printf("  %zu. %s\n", i + 1, lib->sources.v[i].name);
    printf("(the order applies to the next agentstack lock; pins that would now resolve "
           "differently re-gate trust)\n");
    if (dry_run(o, &rc))
        goto out;
    rc = save_sources(lib);
    if (rc == EXIT_OK)
        printf("✓ reordered\n");
out:
    cli_lib_close(&cl);
    return rc;
}

/* ---- lib add (a local skill folder) ------------------------------------------------------ */

static bool looks_remote(const char *s)
{
    size_t n = strlen(s);
    return strstr(s, "://") || strncmp(s, "git@", 4) == 0 || (n > 4 && !strcmp(s + n - 4, ".git"));
}

static bool in_tmp(const char *abs)
{
    const char *t = getenv("TMPDIR");
    return strncmp(abs, "/tmp/", 5) == 0 || strncmp(abs, "/var/tmp/", 9) == 0 ||
           (t && *t && strncmp(abs, t, strlen(t)) == 0);
}

static int do_add(struct opts *o)
{
    if (o->pos.n != 1)
        return cli_usage_error(o->cmd, "lib add needs one skill folder: agentstack lib add <dir> "
                                       "[--name N] [--replace] [--allow-flagged] [--write]");
    if (looks_remote(o->pos.v[0])) {
        cli_errorf("lib add takes a local skill folder in this build, not '%s'", o->pos.v[0]);
        fprintf(stderr, "  clone it and pass the folder, or install a pack: "
                        "agentstack add from git:<url> --write\n");
        return EXIT_FAIL;
    }
    struct as_err err = AS_ERR_INIT;
    strbuf abs = SB_INIT;
    struct cli_lib cl = {0};
    struct library *lib = NULL;
    struct skill_md md = {0};
    struct scan_report sr;
    scan_report_init(&sr);
    char *name = NULL, *dst = NULL, *trashed = NULL;
    int rc = EXIT_FAIL;
    if (discover_abspath(o->pos.v[0], &abs, &err) < 0 || skill_dir_check(abs.buf, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    if (o->name) {
        name = xstrdup(o->name);
    } else {
        const char *b = strrchr(abs.buf, '/');
        name = xstrdup(b ? b + 1 : abs.buf);
    }
    if (!skill_name_valid(name)) {
        cli_errorf("refusing to materialize skill '%s': names are ^[a-z0-9][a-z0-9._-]{0,63}$",
                   name);
        fprintf(stderr, "  pass --name <valid-name>\n");
        goto out;
    }
    if (skill_md_read(abs.buf, &md, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    struct digest_stats st = {0};
    char hex[65];
    if (digest_tree(abs.buf, DIGEST_TREE_SKILL, NULL, &st, hex, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    char *item = xasprintf("skill '%s'", name);
    int sc = scan_tree(item, abs.buf, name, &sr, &err);
    free(item);
    if (sc < 0) {
        cli_error(&err);
        goto out;
    }
    for (size_t i = 0; i < sr.v.n; i++) {
        strbuf line = SB_INIT;
        scan_finding_format(&sr.v.v[i], &line);
        fprintf(stderr, "%s ", sr.v.v[i].sev == SCAN_HIGH ? "✗" : "⚠");
        sanitized(stderr, line.buf);
        fputc('\n', stderr);
        sb_release(&line);
    }
    if (scan_report_blocking(&sr) && !o->allow_flagged) {
        cli_errorf("skill '%s' failed the content scan (%zu high finding%s) — nothing added", name,
                   sr.high, sr.high == 1 ? "" : "s");
        fprintf(stderr, "  review the findings above; to add it anyway: --allow-flagged\n");
        goto out;
    }
    lib = open_warned(&cl, o->write);
    if (!lib)
        goto out;
    struct lib_source *first = lib_first(lib);
    dst = xasprintf("%s/skills/%s", first->path, name);
    {
        char *rel = xasprintf("skills/%s", name);
        strbuf safe = SB_INIT;
        int ok = fs_contain(first->path, NULL, rel, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT,
                            &safe, &err);
        sb_release(&safe);
        free(rel);
        if (ok < 0) {
            cli_error(&err);
            goto out;
        }
    }
    struct lib_item *have = lib_source_get(first, LIB_SKILL, name);
    if ((have || fs_exists(dst)) && !o->replace) {
        cli_errorf("the library already has a skill '%s' (in '%s')", name, first->name);
        fprintf(stderr, "  pass --replace to replace it (the old one goes to the trash)\n");
        goto out;
    }
    if (!md.description)
        fprintf(stderr, "⚠ %s/SKILL.md has no description: agents pick skills by it\n", abs.buf);
    if (in_tmp(abs.buf))
        fprintf(stderr, "⚠ the source is in a temporary folder; the library keeps its own copy\n");
    if (st.bytes > ADD_MAX_BYTES)
        fprintf(stderr, "⚠ the skill is %llu bytes (over 10 MiB)\n", (unsigned long long)st.bytes);
    for (size_t i = 1; i < lib->sources.n; i++)
        if (lib_source_get(&lib->sources.v[i], LIB_SKILL, name))
            fprintf(stderr, "⚠ shadows skill '%s' in library '%s' (pin that one with %s:%s)\n",
                    name, lib->sources.v[i].name, lib->sources.v[i].name, name);
    printf("%c skill '%s' → ", have ? '~' : '+', name);
    sanitized(stdout, dst);
    printf("  (copied from ");
    sanitized(stdout, abs.buf);
    printf(", %.12s)\n", hex);
    if (dry_run(o, &rc))
        goto out;
    if (have && lib_trash_item(lib, LIB_SKILL, name, &trashed, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    first = lib_first(lib);
    if (!have && fs_exists(dst)) {
        /* an unindexed folder of that name: keep it in the trash, not lost */
        char *aside = xasprintf("%s/.trash/skill-%s-%lld-unindexed", first->path, name,
                                (long long)time(NULL));
        char *td = xasprintf("%s/.trash", first->path);
        fs_mkdirs(td, 0755, &err);
        free(td);
        if (rename(dst, aside) != 0) {
            as_err_errno(&err, "cannot move the existing %s aside", dst);
            free(aside);
            cli_error(&err);
            goto out;
        }
        free(aside);
    }
    if (lib_copy_tree(abs.buf, dst, &err) < 0) {
        cli_error(&err);
        if (trashed) {
            struct as_err e2 = AS_ERR_INIT;
            lib_trash_restore(lib, trashed, true, &e2);
        }
        goto out;
    }
    toml_value *row = toml_new(TOML_TABLE);
    toml_table_set(row, "name", toml_new_string(name));
    toml_table_set(row, "source", toml_new_string("path"));
    char *rel = xasprintf("skills/%s", name);
    toml_table_set(row, "path", toml_new_string(rel));
    free(rel);
    char copied[65];
    if (lib_body_checksum(LIB_SKILL, dst, copied, &err) == 0)
        toml_table_set(row, "checksum", toml_new_string(copied));
    char *prov = xasprintf("path:%s", abs.buf);
    toml_table_set(row, "provenance", toml_new_string(prov));
    free(prov);
    lib_source_put(first, 0, LIB_SKILL, name, row);
    if (lib_index_save(lib, first, &err) < 0) {
        cli_error(&err);
        struct as_err e2 = AS_ERR_INIT;
        fs_rmtree(dst, &e2);
        goto out;
    }
    printf("✓ added '%s' (path) in the central library\n", name);
    if (trashed)
        printf("  the previous copy is in the trash: agentstack lib trash --restore %s "
               "--replace --write\n",
               trashed);
    printf("next: name it in a toolset — skills = [\"%s\"] — then agentstack lock --write\n", name);
    rc = EXIT_OK;
out:
    cli_lib_close(&cl);
    scan_report_free(&sr);
    skill_md_free(&md);
    sb_release(&abs);
    free(name);
    free(dst);
    free(trashed);
    return rc;
}

/* ---- lib add-server ------------------------------------------------------------------------- */

/* Checks a server table the way a manifest would, by loading a one-server
 * manifest built from it. */
static int check_server(const char *name, const toml_value *table, const char *origin,
                        struct as_err *err)
{
    toml_value *root = toml_new(TOML_TABLE);
    toml_table_set(root, "version", toml_new_int(1));
    toml_value *servers = toml_new(TOML_TABLE);
    toml_table_set(servers, name, toml_clone(table));
    toml_table_set(root, "servers", servers);
    strbuf text = SB_INIT;
    toml_emit(root, &text);
    toml_free(root);
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = origin,
                                  .data = text.buf,
                                  .len = text.len,
                                  .manifest_dir = "/"};
    struct manifest *m = manifest_load_bytes(&src, err);
    int rc = 0;
    if (!m) {
        rc = -1;
    } else {
        mf_diags d = VEC_INIT;
        if (manifest_validate(m, NULL, &d)) {
            for (size_t i = 0; i < d.n; i++) {
                if (d.v[i].sev == MF_ERROR) {
                    as_err_set(err, "%s: %s", origin, d.v[i].msg);
                    if (d.v[i].fix)
                        as_err_hint(err, "%s", d.v[i].fix);
                    break;
                }
            }
            rc = -1;
        }
        mf_diags_free(&d);
        manifest_free(m);
    }
    sb_release(&text);
    return rc;
}

static int do_add_server(struct opts *o, struct cli_ctx *ctx)
{
    if (o->pos.n != 1 || (!o->file == !o->from_manifest))
        return cli_usage_error(o->cmd, "usage: agentstack lib add-server <name> (--file F | "
                                       "--from-manifest) [--replace] [--write]");
    const char *name = o->pos.v[0];
    struct as_err err = AS_ERR_INIT;
    toml_value *table = NULL, *doc = NULL;
    struct manifest *m = NULL;
    struct bundle_paths p = {0};
    char *prov = NULL;
    struct cli_lib cl = {0};
    struct library *lib = NULL;
    int rc = EXIT_FAIL;
    if (!name[0] || strchr(name, '\n')) {
        cli_errorf("'%s' is not a usable server name", name);
        return EXIT_FAIL;
    }
    if (o->file) {
        strbuf abs = SB_INIT;
        if (discover_abspath(o->file, &abs, &err) < 0 ||
            !(doc = toml_parse_file(abs.buf, LIB_MAX_FILE_BYTES, &err))) {
            sb_release(&abs);
            cli_error(&err);
            goto out;
        }
        /* Either a bare definition or a one-server [servers.<name>] file. */
        const toml_value *inner = toml_get_path(doc, "servers", name, NULL);
        table = toml_clone(inner && inner->type == TOML_TABLE ? inner : doc);
        prov = xasprintf("file:%s", abs.buf);
        if (check_server(name, table, abs.buf, &err) < 0) {
            sb_release(&abs);
            cli_error(&err);
            goto out;
        }
        sb_release(&abs);
    } else {
        if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0 ||
            discover_require(&p, &err) < 0 || !(m = manifest_load(&p, &err))) {
            cli_error(&err);
            goto out;
        }
        const struct mf_server *s = manifest_server(m, name);
        if (!s) {
            cli_errorf("no [servers.%s] in %s", name, m->path);
            goto out;
        }
        table = toml_clone(s->table);
        prov = xasprintf("manifest:%s", p.manifest_dir);
    }
    lsec_findings f = VEC_INIT;
    lsec_check_server_table(table, &f);
    for (size_t i = 0; i < f.n; i++)
        fprintf(stderr,
                "⚠ '%s' (%s) has a literal value that looks like a secret — lib sync "
                "will refuse it; use ${REF} instead\n",
                f.v[i].key, f.v[i].where);
    lsec_findings_free(&f);
    lib = cli_lib_open(&cl, o->write);
    if (!lib)
        goto out;
    struct lib_source *first = lib_first(lib);
    strbuf rel = SB_INIT;
    lib_item_rel(LIB_SERVER, name, &rel);
    char *dst = xasprintf("%s/%s", first->path, rel.buf);
    {
        strbuf safe = SB_INIT;
        int ok = fs_contain(first->path, NULL, rel.buf, FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT,
                            &safe, &err);
        sb_release(&safe);
        if (ok < 0) {
            sb_release(&rel);
            free(dst);
            cli_error(&err);
            goto out;
        }
    }
    sb_release(&rel);
    bool have = lib_source_get(first, LIB_SERVER, name) || fs_exists(dst);
    if (have && !o->replace) {
        cli_errorf("the library already has a server '%s' (in '%s')", name, first->name);
        fprintf(stderr, "  pass --replace to replace it (the old one goes to the trash)\n");
        free(dst);
        goto out;
    }
    strbuf body = SB_INIT;
    sb_adds(&body, "# agentstack library server definition: secrets as references, never values\n");
    toml_emit(table, &body);
    printf("%c server '%s' → ", have ? '~' : '+', name);
    sanitized(stdout, dst);
    fputc('\n', stdout);
    if (dry_run(o, &rc)) {
        sb_release(&body);
        free(dst);
        goto out;
    }
    char *trashed = NULL;
    if (lib_source_get(first, LIB_SERVER, name) &&
        lib_trash_item(lib, LIB_SERVER, name, &trashed, &err) < 0) {
        cli_error(&err);
        sb_release(&body);
        free(dst);
        goto out;
    }
    first = lib_first(lib);
    char *dir = xasprintf("%s/servers", first->path);
    struct fs_write_opts wo = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
    int w = fs_mkdirs(dir, 0755, &err);
    free(dir);
    if (w == 0)
        w = fs_write_atomic(dst, body.buf, body.len, &wo, &err);
    sb_release(&body);
    if (w < 0) {
        cli_error(&err);
        free(dst);
        free(trashed);
        goto out;
    }
    toml_value *row = toml_new(TOML_TABLE);
    toml_table_set(row, "name", toml_new_string(name));
    char hex[65];
    if (digest_file(dst, hex, &err) == 0)
        toml_table_set(row, "checksum", toml_new_string(hex));
    toml_table_set(row, "provenance", toml_new_string(prov));
    lib_source_put(first, 0, LIB_SERVER, name, row);
    if (lib_index_save(lib, first, &err) < 0) {
        cli_error(&err);
        unlink(dst);
        free(dst);
        free(trashed);
        goto out;
    }
    free(dst);
    printf("✓ added server '%s' in the central library\n", name);
    if (trashed)
        printf("  the previous definition is in the trash: agentstack lib trash --restore %s "
               "--replace --write\n",
               trashed);
    free(trashed);
    rc = EXIT_OK;
out:
    cli_lib_close(&cl);
    toml_free(table);
    toml_free(doc);
    manifest_free(m);
    bundle_paths_free(&p);
    free(prov);
    return rc;
}

/* ---- remove and trash -------------------------------------------------------------------------
 */

static int do_remove(struct opts *o, enum lib_kind kind)
{
    if (o->pos.n != 1)
        return cli_usage_error(o->cmd, "lib remove needs a name");
    const char *name = o->pos.v[0];
    struct cli_lib cl = {0};
    struct library *lib = cli_lib_open(&cl, o->write);
    if (!lib)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    int rc = EXIT_FAIL;
    const struct lib_item *it = NULL;
    int r = lib_resolve(lib, kind, name, &it, &err);
    if (r <= 0) {
        if (r == 0) {
            as_err_set(&err, "no %s '%s' in the central library", lib_kind_name(kind), name);
            as_err_hint(&err, "agentstack lib list");
        }
        cli_error(&err);
        goto out;
    }
    const char *src = lib->sources.v[it->source].name;
    printf("- %s '%s' from library '%s' (its body moves to .trash/; projects are untouched)\n",
           lib_kind_name(kind), it->name, src);
    if (dry_run(o, &rc))
        goto out;
    char *id = NULL;
    char *srcname = xstrdup(src);
    if (lib_trash_item(lib, kind, name, &id, &err) < 0) {
        cli_error(&err);
        free(srcname);
        goto out;
    }
    printf("✓ removed %s '%s' from library '%s'\n", lib_kind_name(kind), name, srcname);
    printf("undo: agentstack lib trash --restore %s --write\n", id);
    free(srcname);
    free(id);
    rc = EXIT_OK;
out:
    cli_lib_close(&cl);
    return rc;
}

static int do_trash(struct opts *o)
{
    bool mutate = o->restore || o->empty;
    struct cli_lib cl = {0};
    struct library *lib = cli_lib_open(&cl, mutate && o->write);
    if (!lib)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    int rc = EXIT_FAIL;
    lib_trash_entries all = VEC_INIT;
    lib_trash_list(lib, &all);
    if (o->restore && o->empty) {
        rc = cli_usage_error(o->cmd, "--restore and --empty do not combine");
        goto out;
    }
    if (!mutate) {
        if (o->json) {
            json_t *a = json_array();
            for (size_t i = 0; i < all.n; i++)
                json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:I}", "id", all.v[i].id,
                                                   "kind", lib_kind_name(all.v[i].kind), "name",
                                                   all.v[i].name, "source",
                                                   lib->sources.v[all.v[i].source].name,
                                                   "trashed_at", (json_int_t)all.v[i].when));
            emit_json(json_pack("{s:i, s:o}", "schema_version", 1, "trash", a));
            rc = EXIT_OK;
            goto out;
        }
        if (!all.n) {
            printf("The library trash is empty.\n");
        } else {
            printf("Library trash (%zu)\n", all.n);
            for (size_t i = 0; i < all.n; i++) {
                char when[32] = "";
                time_t tt = (time_t)all.v[i].when;
                struct tm tmv;
                if (gmtime_r(&tt, &tmv))
                    strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", &tmv);
                printf("  %-40s %s '", all.v[i].id, lib_kind_name(all.v[i].kind));
                sanitized(stdout, all.v[i].name);
                printf("'  in %s  %s\n", lib->sources.v[all.v[i].source].name, when);
            }
            printf("restore: agentstack lib trash --restore <id> --write · purge: agentstack "
                   "lib trash --empty --write\n");
        }
        rc = EXIT_OK;
        goto out;
    }
    if (o->restore) {
        bool found = false;
        for (size_t i = 0; i < all.n; i++)
            found = found || strcmp(all.v[i].id, o->restore) == 0;
        if (!found) {
            cli_errorf("no trash entry '%s'", o->restore);
            fprintf(stderr, "  agentstack lib trash\n");
            goto out;
        }
        printf("+ restore %s%s\n", o->restore, o->replace ? " (replacing the current one)" : "");
        if (dry_run(o, &rc))
            goto out;
        if (lib_trash_restore(lib, o->restore, o->replace, &err) < 0) {
            cli_error(&err);
            goto out;
        }
        printf("✓ restored %s\n", o->restore);
        rc = EXIT_OK;
        goto out;
    }
    size_t n = 0;
    for (size_t i = 0; i < all.n; i++)
        n += !o->id || strcmp(all.v[i].id, o->id) == 0;
    if (o->id && !n) {
        cli_errorf("no trash entry '%s'", o->id);
        goto out;
    }
    printf("- purge %zu trash entr%s for good\n", n, n == 1 ? "y" : "ies");
    if (dry_run(o, &rc))
        goto out;
    size_t purged = 0;
    if (lib_trash_empty(lib, o->id, &purged, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    printf("✓ purged %zu trash entr%s\n", purged, purged == 1 ? "y" : "ies");
    rc = EXIT_OK;
out:
    lib_trash_entries_free(&all);
    cli_lib_close(&cl);
    return rc;
}

/* ---- lib new, lib pack-init
 * ---------------------------------------------------------------------- */

static int write_new(const char *path, const char *text, struct as_err *err)
{
    struct fs_write_opts wo = {.mode = 0644, .symlinks = FS_SYMLINK_REFUSE};
    return fs_write_atomic(path, text, strlen(text), &wo, err);
}

static int do_new(struct opts *o)
{
    if (o->pos.n != 1)
        return cli_usage_error(o->cmd, "lib new needs a skill name");
    const char *n = o->pos.v[0];
    if (!skill_name_valid(n)) {
        cli_errorf("'%s' is not a valid skill name (^[a-z0-9][a-z0-9._-]{0,63}$)", n);
        return EXIT_FAIL;
    }
    if (fs_exists(n)) {
        cli_errorf("./%s already exists — nothing written", n);
        return EXIT_FAIL;
    }
    struct as_err err = AS_ERR_INIT;
    char *file = xasprintf("%s/SKILL.md", n);
    char *text = xasprintf("---\nname: %s\ndescription: One line telling an agent when to use "
                           "this skill.\n---\n\n# %s\n\nWrite the instructions here.\n",
                           n, n);
    int rc = fs_mkdirs(n, 0755, &err);
    if (rc == 0)
        rc = write_new(file, text, &err);
    free(text);
    free(file);
    if (rc < 0) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    printf("✓ created ./%s/SKILL.md\n", n);
    printf("next: edit it, then agentstack lib add ./%s --write\n", n);
    return EXIT_OK;
}

static int do_pack_init(struct opts *o)
{
    if (o->pos.n > 1)
        return cli_usage_error(o->cmd, "lib pack-init takes at most a pack name");
    struct as_err err = AS_ERR_INIT;
    char *name = NULL;
    if (o->pos.n) {
        name = xstrdup(o->pos.v[0]);
    } else {
        char *cwd = getcwd(NULL, 0);
        const char *b = cwd ? strrchr(cwd, '/') : NULL;
        name = xstrdup(b && b[1] ? b + 1 : "pack");
        free(cwd);
        for (char *p = name; *p; p++)
            *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
    }
    int rc = EXIT_FAIL;
    if (!lib_name_valid(name)) {
        cli_errorf("'%s' is not a valid pack name (^[a-z0-9][a-z0-9._-]{0,63}$)", name);
        fprintf(stderr, "  agentstack lib pack-init <name>\n");
        goto out;
    }
    if (fs_exists("pack.toml")) {
        cli_errorf("./pack.toml already exists — nothing written");
        goto out;
    }
    if (fs_exists("skills/starter")) {
        cli_errorf("./skills/starter already exists — nothing written");
        goto out;
    }
    char *pack =
        xasprintf("# agentstack pack — strict: unknown keys are errors.\n"
                  "name = \"%s\"\n"
                  "description = \"What this pack gives an agent\"\n\n"
                  "# Optional: one MCP server, named after the pack. Secrets are names only:\n"
                  "# they become ${REF}s in the project, never values.\n"
                  "# [server]\n# type = \"stdio\"\n# command = \"npx\"\n"
                  "# args = [\"-y\", \"@example/mcp\"]\n# secret_env = [\"EXAMPLE_TOKEN\"]\n\n"
                  "[[skill]]\nname = \"starter\"\npath = \"skills/starter\"\n",
                  name);
    char *skill = xasprintf("---\ndescription: Starter skill of the %s pack.\n---\n\n"
                            "# starter\n\nWrite the instructions here.\n",
                            name);
    char *readme = xasprintf("# %s\n\nAn agentstack pack. Tag a release (git tag v1.0.0) and "
                             "install it with\n\n    agentstack add from git:<url>@v1.0.0 "
                             "--write\n",
                             name);
    int r = fs_mkdirs("skills/starter", 0755, &err);
    if (r == 0)
        r = write_new("pack.toml", pack, &err);
    if (r == 0)
        r = write_new("skills/starter/SKILL.md", skill, &err);
    if (r == 0 && !fs_exists("README.md"))
        r = write_new("README.md", readme, &err);
    free(pack);
    free(skill);
    free(readme);
    if (r < 0) {
        cli_error(&err);
        goto out;
    }
    printf("✓ wrote pack.toml, skills/starter/SKILL.md and README.md for pack '%s'\n", name);
    printf("next: commit, tag v1.0.0, then agentstack add from git:<url>@v1.0.0 --write\n");
    rc = EXIT_OK;
out:
    free(name);
    return rc;
}

/* ---- lib sync -------------------------------------------------------------------------------- */

static int do_sync(struct opts *o)
{
    if (o->pos.n)
        return cli_usage_error(o->cmd, "lib sync takes no positional arguments");
    struct cli_lib cl = {0};
    struct library *lib = open_warned(&cl, !o->status);
    if (!lib)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    struct lib_sync_opts so = {.source = o->source,
                               .init = o->init,
                               .remote = o->remote,
                               .status = o->status,
                               .message = o->message,
                               .allow_secrets = o->allow_secrets,
                               .out = stdout,
                               .diag = stderr};
    fflush(stdout);
    int r = lib_sync(lib, &so, &err);
    int rc = EXIT_OK;
    if (r < 0) {
        cli_error(&err);
        rc = EXIT_FAIL;
    } else if (r > 0) {
        rc = EXIT_FAIL;
    }
    cli_lib_close(&cl);
    return rc;
}

/* ---- dispatch ------------------------------------------------------------------------------- */

/* Every lib subcommand: its own options, then its do_ function. */
static int lib_leaf(int argc, char **argv, struct cli_ctx *ctx)
{
    const struct cli_spec *spec = cli_find_sub(&cmd_lib_spec, argv[0]);
    struct opts o = {.cmd = spec->name};
    int rc = cli_parse(spec, &argc, argv, ctx, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    for (int i = 1; i < argc; i++)
        strvec_push(&o.pos, argv[i]);
    if (spec == &lib_sources_spec)
        rc = do_sources(&o);
    else if (spec == &lib_list_spec)
        rc = do_list(&o);
    else if (spec == &lib_link_spec)
        rc = do_link(&o);
    else if (spec == &lib_unlink_spec)
        rc = do_unlink(&o);
    else if (spec == &lib_reorder_spec)
        rc = do_reorder(&o);
    else if (spec == &lib_add_spec)
        rc = do_add(&o);
    else if (spec == &lib_add_server_spec)
        rc = do_add_server(&o, ctx);
    else if (spec == &lib_remove_spec)
        rc = do_remove(&o, LIB_SKILL);
    else if (spec == &lib_remove_server_spec)
        rc = do_remove(&o, LIB_SERVER);
    else if (spec == &lib_remove_hook_spec)
        rc = do_remove(&o, LIB_HOOK);
    else if (spec == &lib_remove_extension_spec)
        rc = do_remove(&o, LIB_EXTENSION);
    else if (spec == &lib_trash_spec)
        rc = do_trash(&o);
    else if (spec == &lib_new_spec)
        rc = do_new(&o);
    else if (spec == &lib_pack_init_spec)
        rc = do_pack_init(&o);
    else
        rc = do_sync(&o);
    strvec_clear(&o.pos);
    return rc;
}

int cmd_lib(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_lib_spec, argc, argv, ctx);
}
