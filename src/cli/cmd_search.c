/*
 * agentstack search [query] [--all] [--json]
 * — what the central library (every linked source) and the project's
 * installed packs offer, by name or description (docs/library.md). Read-only and
 * offline: this build has no embedded catalog and does not query the MCP
 * Registry, and says so.
 */
#include <stdio.h>
#include <string.h>

#include "base/term.h"
#include "base/json.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "library/library.h"
#include "library/search.h"

int cmd_search(int argc, char **argv, struct cli_ctx *ctx);

struct search_args {
    bool all, json;
};

#define CLI_ARGS struct search_args
static const struct cli_option search_options[] = {
    {OPT_BOOL("all", 0, all, "also list names a source earlier on the path shadows")},
    {OPT_BOOL("json", 0, json, "the matches as one JSON document")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_search_spec = {
    .name = "search",
    .fn = cmd_search,
    .summary = "find skills, servers and packs in the library and installed packs",
    .synopsis = CLI_LINES("search [query] [--all] [--json]"),
    .description = "Searches the central library's sources and, inside a project, its installed "
                   "packs. No match is not an error.",
    .options = search_options,
    .examples = CLI_LINES("agentstack search github", "agentstack search --all --json"),
    .see_also = "add lib",
};

int cmd_search(int argc, char **argv, struct cli_ctx *ctx)
{
    struct search_args a = {.json = ctx->json != 0};
    int prc = cli_parse(&cmd_search_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (argc > 2)
        return cli_usage_error("search", "search takes one query (quote several words)");
    const char *query = argc > 1 ? argv[1] : NULL;
    bool all = a.all, json = a.json;
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    for (size_t i = 0; i < lib->warnings.n; i++)
        term_fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
    /* The project is optional: outside one, only the library is searched. */
    struct bundle_paths p = {0};
    struct manifest *m = NULL;
    if (discover_project(ctx->manifest_dir, NULL, &p, &err) == 0 && p.found) {
        m = manifest_load(&p, &err);
        if (!m) {
            fprintf(stderr,
                    "warning: the project's manifest was not read, so installed packs "
                    "are not searched: %s\n",
                    err.msg);
        }
    }
    as_err_clear(&err);
    lib_hits hits = VEC_INIT;
    lib_search(lib, m, query, all, &hits);
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < hits.n; i++) {
            const struct lib_hit *h = &hits.v[i];
            json_t *o =
                json_pack("{s:s, s:s, s:s, s:b, s:b}", "name", h->name, "kind", h->badge, "source",
                          h->source, "in_manifest", h->in_manifest, "shadowed", h->shadowed);
            json_object_set_new(o, "description",
                                h->description ? json_string(h->description) : json_null());
            json_array_append_new(arr, o);
        }
        json_t *j = json_pack("{s:i, s:s, s:o, s:o}", "schema_version", 1, "command", "search",
                              "query", query ? json_string(query) : json_null(), "results", arr);
        strbuf out = SB_INIT;
        json_dump_pretty(j, &out);
        fputs(out.buf, stdout);
        if (!out.len || out.buf[out.len - 1] != '\n')
            fputc('\n', stdout);
        sb_release(&out);
        json_decref(j);
    } else {
        if (query)
            printf("Results for '%s' — central library (%zu source%s)%s\n", query, lib->sources.n,
                   lib->sources.n == 1 ? "" : "s", m ? " and installed packs" : "");
        else
            printf("Everything in the central library (%zu source%s)%s\n", lib->sources.n,
                   lib->sources.n == 1 ? "" : "s", m ? " and installed packs" : "");
        for (size_t i = 0; i < hits.n; i++) {
            const struct lib_hit *h = &hits.v[i];
            char b[16];
            snprintf(b, sizeof b, "[%s]", h->badge);
            printf("  %-13s %-24s %-44s %s%s%s\n", b, h->name,
                   h->description ? h->description : "—", h->source,
                   h->in_manifest ? "  (in manifest)" : "", h->shadowed ? "  (shadowed)" : "");
        }
        if (!hits.n)
            printf("  no match%s\n", query ? "" : " — the library is empty");
        printf("%zu result%s. Not searched here: a vendor catalog and the MCP Registry.\n", hits.n,
               hits.n == 1 ? "" : "s");
    }
    lib_hits_free(&hits);
    manifest_free(m);
    bundle_paths_free(&p);
    lib_free(lib);
    return EXIT_OK;
}
