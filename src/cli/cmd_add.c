/*
 * agentstack add from git:<url>[@<tag>][#<subdir>] [--toolset N]
 *                 [--with-instructions] [--write]
 * — install a pack (06 §3.1–§3.3; errata 29). The preview fetches and checks
 * the pack and shows every manifest change; --write installs and pins in one
 * transaction. The whole command holds the writer lock, so two installs and
 * the store clone never race.
 */
#include <stdio.h>
#include <string.h>

#include "base/lock.h"
#include "bundle/discover.h"
#include "cli/cli.h"
#include "library/library.h"
#include "library/pack.h"
#include "trust/trust.h"

int cmd_add(int argc, char **argv, struct cli_ctx *ctx);

int cmd_add(int argc, char **argv, struct cli_ctx *ctx)
{
    if (argc < 3 || strcmp(argv[1], "from") != 0)
        return cli_usage_error("add", "this build's add installs packs: "
                                      "agentstack add from git:<owner>/<repo>[@<tag>] --write");
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
        return cli_usage_error("add", "unknown pack source '%s': use git:<owner>/<repo>[@<tag>]"
                                      "[#<subdir>] or git:<full git URL>",
                               spec);
    struct as_err err = AS_ERR_INIT;
    struct bundle_paths p;
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) < 0 ||
        discover_require(&p, &err) < 0) {
        cli_error(&err);
        bundle_paths_free(&p);
        return EXIT_FAIL;
    }
    struct as_lock l;
    if (trust_lock(&l, &err) < 0) {
        cli_error(&err);
        bundle_paths_free(&p);
        return EXIT_FAIL;
    }
    int rc = EXIT_FAIL;
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        cli_error(&err);
    } else {
        for (size_t i = 0; i < lib->warnings.n; i++)
            fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
        fflush(stdout);
        if (lib_pack_add(lib, &p, spec, &o, &err) < 0)
            cli_error(&err);
        else
            rc = EXIT_OK;
    }
    lib_free(lib);
    lock_release(&l);
    bundle_paths_free(&p);
    return rc;
}
