/*
 * agentstack run — protected runs. This file covers the confined modes
 * (--sandbox, --lockdown, with --plan): it resolves the harness (an adapter
 * id, or a command), asks the sandbox module for the one run plan, shows
 * it or executes it, and exits with the harness's status (errata 28).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "adapters/adapters.h"
#include "base/proc.h"
#include "base/strbuf.h"
#include "cli/cli.h"
#include "sandbox/ns.h"
#include "sandbox/plan.h"
#include "sandbox/run.h"

#define NOTHING "nothing was launched"

/* The harness to run: an adapter's detect.bin, or a plain command. */
struct harness {
    char *id;       /* egress identity */
    strbuf bin;     /* absolute host path */
    int has_mcp;
};

static int resolve_harness(const char *name, struct harness *h, struct as_err *err)
{
    struct adp_registry reg = {0};
    const char *bin = NULL;
    h->has_mcp = 0;
    if (adp_registry_load(&reg, true, err) < 0)
        return -1;
    for (size_t i = 0; i < reg.warnings.n; i++)
        fprintf(stderr, "warning: %s\n", reg.warnings.v[i]);
    const struct adp_desc *d = strchr(name, '/') ? NULL : adp_registry_find(&reg, name);
    if (d) {
        if (!d->detect_bin) {
            as_err_set(err, "adapter '%s' names no program to run (detect.bin)", name);
            adp_registry_free(&reg);
            return -1;
        }
        bin = d->detect_bin;
        h->has_mcp = d->has_mcp;
        h->id = xstrdup(d->id);
    } else if (strcmp(name, "shtest") == 0) {
        /* The seed's shell harness (errata 40): sh, no MCP mapping. A drop-in
         * $AGENTSTACK_HOME/adapters/shtest.yaml takes precedence. */
        bin = "sh";
        h->id = xstrdup("shtest");
    } else {
        bin = name;
        const char *slash = strrchr(name, '/');
        h->id = xstrdup(slash ? slash + 1 : name);
    }
    int rc = 0;
    if (strchr(bin, '/')) {
        if (access(bin, X_OK) < 0) {
            as_err_errno(err, "%s", bin);
            rc = -1;
        } else if (bin[0] != '/') {
            char cwd[4096];
            if (!getcwd(cwd, sizeof cwd)) {
                rc = as_err_errno(err, "getcwd");
            } else {
                sb_addf(&h->bin, "%s/%s", cwd, bin);
            }
        } else {
            sb_adds(&h->bin, bin);
        }
    } else if (proc_which(bin, NULL, &h->bin) != 0) {
        if (d)
            as_err_set(err, "%s: '%s' is not on PATH", name, bin);
        else
            as_err_set(err, "'%s' is neither a known CLI nor a command on PATH", name);
        rc = -1;
    }
    adp_registry_free(&reg);
    return rc;
}

static int refuse(const struct as_err *e)
{
    cli_error(e);
    fprintf(stderr, "%s\n", NOTHING);
    return EXIT_FAIL;
}

int cmd_run(int argc, char **argv, struct cli_ctx *ctx);

int cmd_run(int argc, char **argv, struct cli_ctx *ctx)
{
    int sandbox = 0, lockdown = 0, plan_only = 0, locked = 0, unprotected = 0;
    const char *prompt = NULL, *name = NULL;
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (!strcmp(a, "--sandbox"))
            sandbox = 1;
        else if (!strcmp(a, "--lockdown"))
            lockdown = 1;
        else if (!strcmp(a, "--plan"))
            plan_only = 1;
        else if (!strcmp(a, "--locked"))
            locked = 1;
        else if (!strcmp(a, "--unprotected"))
            unprotected = 1;
        else if (!strcmp(a, "--prompt")) {
            if (i + 1 >= argc)
                return cli_usage_error("run", "--prompt needs text");
            prompt = argv[++i];
        } else if (a[0] == '-')
            return cli_usage_error("run", "unknown option '%s'", a);
        else if (!name)
            name = a;
        else
            return cli_usage_error("run", "unexpected argument '%s' (put the command's "
                                          "arguments after --)", a);
    }
    char **rest = argv + i;
    int nrest = argc - i;
    if (!name) {
        if (nrest == 0)
            return cli_usage_error("run", "name a CLI or a command");
        name = rest[0];
        rest++;
        nrest--;
    }

    /* Dispatch (spec 05 §1). */
    if (locked && unprotected) {
        cli_errorf("--locked and --unprotected contradict each other");
        fprintf(stderr, "%s\n", NOTHING);
        return EXIT_FAIL;
    }
    if (prompt && (unprotected || sandbox || lockdown)) {
        cli_errorf("--prompt needs the protected run");
        fprintf(stderr, "why: a headless prompt is only supported under the gated host run\n%s\n",
                NOTHING);
        return EXIT_FAIL;
    }
    if (locked && (sandbox || lockdown)) {
        cli_errorf("--locked with --sandbox/--lockdown is not wired: the sandbox runs its own "
                   "gate");
        fprintf(stderr, "%s\n", NOTHING);
        return EXIT_FAIL;
    }
    if (unprotected && plan_only) {
        cli_errorf("--plan needs a gated run mode");
        fprintf(stderr, "%s\n", NOTHING);
        return EXIT_FAIL;
    }
    if (!sandbox && !lockdown) {
        cli_errorf("only the confined run modes are built so far: add --sandbox or --lockdown");
        fprintf(stderr, "%s\n", NOTHING);
        return EXIT_FAIL;
    }

    struct as_err err = AS_ERR_INIT;
    struct harness h = {NULL, SB_INIT, 0};
    if (resolve_harness(name, &h, &err) < 0) {
        free(h.id);
        sb_release(&h.bin);
        return refuse(&err);
    }
    const char **args = xcalloc((size_t)nrest + 1, sizeof *args);
    for (int k = 0; k < nrest; k++)
        args[k] = rest[k];
    struct sbx_plan_request rq = {
        .mode = lockdown ? SBX_MODE_LOCKDOWN : SBX_MODE_SANDBOX,
        .harness_id = h.id,
        .harness_bin = h.bin.buf,
        .harness_has_mcp = h.has_mcp,
        .args = args,
        .manifest_dir = ctx->manifest_dir,
    };
    struct sbx_plan *plan = NULL;
    int rc = EXIT_FAIL;
    if (sbx_plan_build(&rq, &plan, &err) < 0) {
        rc = refuse(&err);
        goto out;
    }
    for (size_t k = 0; k < plan->notes.n; k++)
        fprintf(stderr, "%s\n", plan->notes.v[k]);
    if (plan->trust == SBX_TRUST_UNTRUSTED || plan->trust == SBX_TRUST_CHANGED)
        fprintf(stderr, "running an unreviewed bundle sandboxed: nothing from it is delivered "
                        "(no servers, skills or secrets)\n");
    if (plan_only) {
        /* A plan that could not run is not a plan: check the backend. */
        if (sbx_ns_probe(&err) < 0) {
            rc = refuse(&err);
            goto out;
        }
        sbx_plan_print(plan, stdout, 1);
        rc = EXIT_OK;
        goto out;
    }
    struct sbx_run_result res;
    if (sbx_run_execute(plan, stdout, &res, &err) < 0) {
        if (!res.launched) {
            rc = refuse(&err);
        } else {
            cli_error(&err);
            rc = EXIT_FAIL;
        }
        goto out;
    }
    fflush(stdout);
    if (res.code == 0) {
        fprintf(stderr, "sandbox exited cleanly.\n");
        rc = 0;
    } else if (res.code > 0) {
        cli_errorf("sandbox exited with code %d", res.code);
        rc = res.code;
    } else if (res.sig > 0) {
        fprintf(stderr, "sandbox was killed by a signal (SIG%s)\n", sigabbrev_np(res.sig));
        rc = 128 + res.sig;
    } else {
        fprintf(stderr, "sandbox was killed by a signal (its init was killed)\n");
        rc = 128 + 9;
    }
    fprintf(stderr, "See what happened: `agentstack report %s`\n", plan->run_id);
out:
    sbx_plan_free(plan);
    free(args);
    free(h.id);
    sb_release(&h.bin);
    return rc;
}
