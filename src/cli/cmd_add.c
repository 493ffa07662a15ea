/*
 * agentstack add from git:<url>[@<tag>][#<subdir>] [--toolset N]
 *                 [--with-instructions] [--write]
 * — install a pack (06 §3.1–§3.3; errata 29). The preview fetches and checks
 * the pack and shows every manifest change; --write installs and pins in one
 * transaction. The whole command holds the writer lock, so two installs and
 * the store clone never race.
 *
 * agentstack add skill <source> [--skill S] [--list] [--rev R] [--subpath D]
 *                 [--name N] [--toolset T] [--allow-flagged] [--write]
 * — one skill from a path or a git repository (06 §3.5), pinned at once.
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

static int add_skill(int argc, char **argv, struct cli_ctx *ctx)
{
    struct skill_call c = {.o = {.out = stdout, .diag = stderr}};
    struct {
        const char *flag;
        const char **dst;
    } vals[] = {{"--skill", &c.o.skill}, {"--rev", &c.o.rev},         {"--subpath", &c.o.subpath},
                {"--name", &c.o.name},   {"--toolset", &c.o.toolset}, {"--profile", &c.o.toolset}};
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i];
        bool taken = false;
        for (size_t k = 0; k < sizeof vals / sizeof vals[0] && !taken; k++) {
            size_t fl = strlen(vals[k].flag);
            if (strcmp(a, vals[k].flag) == 0) {
                if (i + 1 >= argc)
                    return cli_usage_error("add", "%s needs a value", a);
                *vals[k].dst = argv[++i];
                taken = true;
            } else if (strncmp(a, vals[k].flag, fl) == 0 && a[fl] == '=') {
                *vals[k].dst = a + fl + 1;
                taken = true;
            }
        }
        if (taken)
            continue;
        if (strcmp(a, "--write") == 0)
            c.o.write = true;
        else if (strcmp(a, "--list") == 0)
            c.o.list = true;
        else if (strcmp(a, "--allow-flagged") == 0)
            c.o.allow_flagged = true;
        else if (a[0] == '-' && a[1])
            return cli_usage_error("add", "unknown option '%s'", a);
        else if (!c.spec)
            c.spec = a;
        else
            return cli_usage_error("add", "add skill takes one source");
    }
    if (!c.spec)
        return cli_usage_error("add", "add skill needs a source: agentstack add skill "
                                      "<./dir | owner/repo[@skill][#ref] | git URL> --write");
    return cli_with_project(ctx, true, skill_fn, &c);
}

int cmd_add(int argc, char **argv, struct cli_ctx *ctx)
{
    if (argc >= 2 && strcmp(argv[1], "skill") == 0)
        return add_skill(argc, argv, ctx);
    if (argc < 3 || strcmp(argv[1], "from") != 0)
        return cli_usage_error("add", "add installs packs and skills: agentstack add from "
                                      "git:<owner>/<repo>[@<tag>] --write, or agentstack add "
                                      "skill <source> --write");
    const char *spec = argv[2];
    struct lib_pack_opts o = {.out = stdout, .diag = stderr};
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--write") == 0)
            o.write = true;
        else if (strcmp(argv[i], "--with-instructions") == 0)
            o.with_instructions = true;
        else if (strcmp(argv[i], "--toolset") == 0 || strcmp(argv[i], "--profile") == 0) {
            if (i + 1 >= argc)
                return cli_usage_error("add", "%s needs a toolset name", argv[i]);
            o.toolset = argv[++i];
        } else if (strncmp(argv[i], "--toolset=", 10) == 0)
            o.toolset = argv[i] + 10;
        else
            return cli_usage_error("add", "unknown argument '%s'", argv[i]);
    }
    if (strncmp(spec, "git:", 4) != 0)
        return cli_usage_error("add",
                               "unknown pack source '%s': use git:<owner>/<repo>[@<tag>]"
                               "[#<subdir>] or git:<full git URL>",
                               spec);
    struct pack_call c = {spec, o};
    return cli_with_project(ctx, true, pack_fn, &c);
}
