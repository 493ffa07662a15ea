/*
 * explain — what this machine knows about one name of the project: a server,
 * skill, instruction or toolset. `agentstack explain` (the card) and
 * `agentstack why` (the short "where from, where live" rows) both render the
 * facts gathered here, so the two can never disagree.
 *
 * Why one collector: every fact comes from a file a command already trusts
 * to decide something — the manifest (declaration, targets, toolsets), the
 * lock verified item by item the way `doctor` and `trust` verify it (pin),
 * trust.json (approved), the two policy layers (`policy explain`'s rows),
 * the call log (used). Nothing is re-derived differently here.
 *
 * Guarantees: reads only; no secret value is read or printed — references
 * appear by name with the store that holds them (presence only, as
 * `secret list` reports it); strings from the repository are printed through
 * term_sanitize by the renderers.
 */
#ifndef AS_CLI_EXPLAIN_H
#define AS_CLI_EXPLAIN_H

#include <stdbool.h>

#include "base/strbuf.h"
#include "base/vec.h"
#include "cli/parse_options.h"

struct xp_secret {
    char *name;
    const char *where; /* the store that holds it ("env", "keychain", …), or NULL: unresolved */
};

struct xp_facts {
    char *name;
    const char *kind;     /* "server" | "skill" | "instruction" | "toolset" */
    const char *scope;    /* "project" | "global" (the machine manifest) */
    strbuf manifest;      /* the manifest file that was read */
    strbuf origin;        /* where it is declared or comes from */
    strbuf source;        /* how it runs / where its bytes are */
    const char *pin;      /* "pinned" | "not pinned" | "drifted" | "not verified" | "—" */
    strbuf pin_detail;    /* the locked digest, or what differs */
    const char *approved; /* "trusted" | "changed since trusted" | "untrusted" */
    strvec targets;       /* the CLIs it renders into ("*" = every default target) */
    strvec toolsets;      /* toolsets naming it (for a toolset: its members) */
    VEC(struct xp_secret) secrets;
    bool render_locally;  /* [delivery] render_locally */
    bool live;            /* served through the gateway to connected CLIs */
    strvec live_clis;     /* the CLIs with the gateway registered */
    strbuf model;         /* toolset model, or empty */
    size_t calls, denied; /* brokered call rows naming this server */
    strbuf policy;        /* `policy explain`'s rows (servers) */
    strbuf isolation;     /* the Isolation row (servers) */
    strvec signals;       /* safety signals, one line each */
};

/* Gathers the facts about name in the project (or the machine manifest when
 * there is no project). 0 filled, 1 nothing has that name (f->kind NULL),
 * -1 + err. Release f in every case. */
int xp_facts_load(const struct cli_ctx *ctx, const char *name, struct xp_facts *f,
                  struct as_err *err);
void xp_facts_release(struct xp_facts *f);

/* "error: nothing named '<name>' in this project" naming agentstack search
 * and agentstack lib list (explain and why). */
void cli_explain_unknown(const char *name);

/* The facts as one JSON document (explain --json). */
char *xp_facts_json(const struct xp_facts *f);

#endif
