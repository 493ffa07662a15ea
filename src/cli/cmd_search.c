/*
 * agentstack search [query] [--all] [--json]
 * — what the central library (every linked source) and the project's
 * installed packs offer, by name or description (06 §3.5). Read-only and
 * offline: this build has no embedded catalog and does not query the MCP
 * Registry, and says so.
 */
#include <stdio.h>
#include <string.h>

#include "base/json.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "library/library.h"
#include "library/search.h"

int cmd_search(int argc, char **argv, struct cli_ctx *ctx);

int cmd_search(int argc, char **argv, struct cli_ctx *ctx)
{
    const char *query = NULL;
    bool all = false, json = ctx->json != 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--all") == 0)
            all = true;
        else if (strcmp(argv[i], "--json") == 0)
            json = true;
        else if (argv[i][0] == '-' && argv[i][1])
            return cli_usage_error("search", "unknown option '%s'", argv[i]);
        else if (!query)
            query = argv[i];
        else
            return cli_usage_error("search", "search takes one query (quote several words)");
    }
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(NULL, &err);
    if (!lib) {
        cli_error(&err);
        return EXIT_FAIL;
    }
    for (size_t i = 0; i < lib->warnings.n; i++)
        fprintf(stderr, "warning: %s\n", lib->warnings.v[i]);
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
