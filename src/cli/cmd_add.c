/*
 * agentstack add from git:<url>[@<tag>][#<subdir>] [--toolset N]
 *                 [--with-instructions] [--write]
 * — install a pack (docs/library.md). The preview fetches and checks
 * the pack and shows every manifest change; --write installs and pins in one
 * transaction. The whole command holds the writer lock, so two installs and
 * the store clone never race.
 *
 * agentstack add skill <source> [--skill S] [--list] [--rev R] [--subpath D]
 *                 [--name N] [--toolset T] [--allow-flagged] [--write]
 * — one skill from a path or a git repository, pinned at once.
 */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "library/library.h"
#include "library/pack.h"

int cmd_add(int argc, char **argv, struct cli_ctx *ctx);

struct skill_call {
    const char *spec;
    struct lib_skill_opts o;
};

static int skill_fn(struct library *lib, const struct bundle_paths *p, const void *arg,
                    struct as_err *err)
{
    const struct skill_call *c = arg;
    return lib_add_skill(lib, p, c->spec, &c->o, err);
}

struct pack_call {
    const char *spec;
    struct lib_pack_opts o;
};

static int pack_fn(struct library *lib, const struct bundle_paths *p, const void *arg,
                   struct as_err *err)
{
    const struct pack_call *c = arg;
    return lib_pack_add(lib, p, c->spec, &c->o, err);
}

static int add_skill(int argc, char **argv, struct cli_ctx *ctx);
static int add_from(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct lib_pack_opts
static const struct cli_option from_options[] = {
    {OPT_STRING("toolset", 0, toolset, "NAME", "add the pack's servers to this toolset"),
     .alias = "profile"},
    {OPT_BOOL("with-instructions", 0, with_instructions,
              "also install the pack's instruction files")},
    {OPT_BOOL("write", 0, write, "install and pin (default: fetch, check and preview)")},
    {OPT_END},
};
#undef CLI_ARGS

#define CLI_ARGS struct lib_skill_opts
static const struct cli_option skill_options[] = {
    {OPT_STRING("skill", 0, skill, "S",
                "the skill to take from a repository holding several (as @skill)")},
    {OPT_BOOL("list", 0, list, "list the skills the source holds; add nothing")},
    {OPT_STRING("rev", 0, rev, "R", "the git tag, branch or commit to take (as #ref)")},
    {OPT_STRING("subpath", 0, subpath, "D", "the skill's folder inside the repository")},
    {OPT_STRING("name", 0, name, "N", "the name it gets in the manifest")},
    {OPT_STRING("toolset", 0, toolset, "T", "also add it to this toolset"), .alias = "profile"},
    {OPT_BOOL("allow-flagged", 0, allow_flagged,
              "add it even when the content scan flags it (High findings)")},
    {OPT_BOOL("write", 0, write, "add and pin (default: fetch, check and preview)")},
    {OPT_END},
};
#undef CLI_ARGS

static const struct cli_spec add_from_spec = {
    .name = "add from",
    .fn = add_from,
    .summary = "install a pack from git: its servers and skills, secrets as ${REF}s",
    .synopsis = CLI_LINES("add from git:<owner>/<repo>[@<tag>][#<subdir>] [--toolset N] "
                          "[--with-instructions] [--write]"),
    .description = "git:owner/repo is https://github.com/owner/repo; any other git URL is "
                   "written in full (git:<URL>). The preview fetches and checks the pack and "
                   "shows every manifest change; --write installs and pins in one transaction.",
    .options = from_options,
    .examples = CLI_LINES("agentstack add from git:acme/opsbox@v1.2.0",
                          "agentstack add from git:acme/opsbox@v1.2.0 --write"),
};

static const struct cli_spec add_skill_spec = {
    .name = "add skill",
    .fn = add_skill,
    .summary = "add one skill from a folder or a git repository, pinned at once",
    .synopsis = CLI_LINES("add skill <./dir | owner/repo[@skill][#ref] | git URL> [--skill S]",
                          "add skill SOURCE [--list] [--rev R] [--subpath D] [--name N] "
                          "[--toolset T] [--allow-flagged] [--write]"),
    .options = skill_options,
    .examples = CLI_LINES("agentstack add skill ./skills/review --write",
                          "agentstack add skill acme/skills --list"),
};

const struct cli_spec cmd_add_spec = {
    .name = "add",
    .fn = cmd_add,
    .summary = "install a pack from git: servers + skills, secrets stay ${REF}s",
    .subs = (const struct cli_spec *const[]){&add_from_spec, &add_skill_spec, NULL},
    .description = "The whole command holds the writer lock, so two installs and the store "
                   "clone never race.",
    .see_also = "search remove upgrade lock",
};

static int add_skill(int argc, char **argv, struct cli_ctx *ctx)
{
    struct skill_call c = {.o = {.out = stdout, .diag = stderr}};
    int rc = cli_parse(&add_skill_spec, &argc, argv, ctx, &c.o);
    if (rc != CLI_CONTINUE)
        return rc;
    if (argc > 2)
        return cli_usage_error("add skill", "add skill takes one source");
    if (argc < 2)
        return cli_usage_error("add skill", "add skill needs a source: agentstack add skill "
                                            "<./dir | owner/repo[@skill][#ref] | git URL> --write");
    c.spec = argv[1];
    return cli_with_project(ctx, true, skill_fn, &c);
}

static int add_from(int argc, char **argv, struct cli_ctx *ctx)
{
    struct lib_pack_opts o = {.out = stdout, .diag = stderr};
    int rc = cli_parse(&add_from_spec, &argc, argv, ctx, &o);
    if (rc != CLI_CONTINUE)
        return rc;
    if (argc != 2)
        return cli_usage_error("add from", argc < 2 ? "add from needs a pack source: agentstack "
                                                      "add from git:<owner>/<repo>[@<tag>] --write"
                                                    : "add from takes one pack source");
    const char *spec = argv[1];
    if (strncmp(spec, "git:", 4) != 0)
        return cli_usage_error("add from",
                               "unknown pack source '%s': use git:<owner>/<repo>[@<tag>]"
                               "[#<subdir>] or git:<full git URL>",
                               spec);
    struct pack_call c = {spec, o};
    return cli_with_project(ctx, true, pack_fn, &c);
}

int cmd_add(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_add_spec, argc, argv, ctx);
}
