/*
 * explain — policy as people read it: the per-key summaries `explain`
 * prints, doctor's one-word verdict on the machine floor, the warning for
 * machine rules a repository could dodge by renaming its server, and the
 * near-miss warning of `policy test` (a deny that misses a tool only because
 * globs read '-' and '.' literally).
 */
#include <stdlib.h>
#include <string.h>

#include "policy/pol_internal.h"

static const char *const dim_word[POL_NKEYED] = {"tools", "egress", "secrets"};

void pol_summary(const struct pol_key *k, strbuf *out)
{
    size_t na = 0, nd = 0;
    for (size_t i = 0; i < k->rules.n; i++)
        k->rules.v[i].deny ? nd++ : na++;
    if (!na && !nd) {
        sb_adds(out, "no rule (empty list)");
        return;
    }
    if (na) {
        sb_adds(out, "allow only [");
        size_t w = 0;
        for (size_t i = 0; i < k->rules.n; i++)
            if (!k->rules.v[i].deny)
                sb_addf(out, "%s%s", w++ ? ", " : "", k->rules.v[i].canon);
        sb_addc(out, ']');
    }
    if (nd) {
        sb_adds(out, na ? "; deny [" : "deny [");
        size_t w = 0;
        for (size_t i = 0; i < k->rules.n; i++)
            if (k->rules.v[i].deny)
                sb_addf(out, "%s%s", w++ ? ", " : "", k->rules.v[i].canon);
        sb_addc(out, ']');
    }
}

static const struct pol_key *key_of(const struct pol_layer *l, int dim, const char *name)
{
    if (!l)
        return NULL;
    for (size_t i = 0; i < l->keyed[dim].keys.n; i++)
        if (strcmp(l->keyed[dim].keys.v[i].name, name) == 0)
            return &l->keyed[dim].keys.v[i];
    return NULL;
}

static void rows(const struct pol_layer *l, int dim, const char *label, const char *server,
                 int machine, strbuf *out)
{
    const char *names[2] = {server, "*"};
    for (int i = 0; i < 2; i++) {
        if (i == 0 && (!server || strcmp(server, "*") == 0))
            continue;
        const struct pol_key *k = key_of(l, dim, names[i]);
        if (!k || !k->rules.n)
            continue;
        sb_addf(out, "  %-26s", label);
        pol_summary(k, out);
        if (i == 1)
            sb_adds(out, " (via \"*\")");
        if (machine)
            sb_adds(out, " — this project cannot loosen it");
        sb_addc(out, '\n');
    }
}

void pol_explain_rows(const struct pol_layer *machine, const struct pol_layer *project,
                      const char *server, strbuf *out)
{
    rows(project, POL_TOOLS, "Tool policy", server, 0, out);
    rows(machine, POL_TOOLS, "Tool policy (machine)", server, 1, out);
    rows(project, POL_EGRESS, "Egress (policy)", server, 0, out);
    rows(project, POL_SECRETS, "Secret access (policy)", server, 0, out);
    rows(machine, POL_EGRESS, "Egress (machine)", server, 1, out);
    rows(machine, POL_SECRETS, "Secret access (machine)", server, 1, out);
}

void pol_isolation_text(const struct pol_layer *machine, const struct pol_layer *project,
                        strbuf *out)
{
    if (machine && machine->isolation == POL_ISO_CONFINED)
        sb_adds(out, "confined — each stdio server in a jail of its own ([policy.isolation] "
                     "servers = \"confined\", machine policy — this project cannot turn it "
                     "off)");
    else if (project && project->isolation == POL_ISO_CONFINED)
        sb_adds(out, "confined — each stdio server in a jail of its own ([policy.isolation] "
                     "servers = \"confined\", asked for by the project)");
    else
        sb_adds(out, "host — stdio servers run as you, on the host (set [policy.isolation] "
                     "servers = \"confined\" to jail them)");
}

void pol_isolation_row(const struct pol_layer *machine, const struct pol_layer *project,
                       strbuf *out)
{
    sb_addf(out, "  %-26s", "Isolation");
    pol_isolation_text(machine, project, out);
    sb_addc(out, '\n');
}

/* A write list that does not cover the workspace caps it (narrows). */
static int write_covers_workspace(const struct pol_fslist *w)
{
    for (size_t i = 0; i < w->globs.n; i++) {
        const char *g = w->globs.v[i].pat;
        if (pol_glob_match(g, strlen(g), "./", 2, 0) || pol_glob_match(g, strlen(g), ".", 1, 0))
            return 1;
    }
    return 0;
}

const char *pol_machine_word(const struct pol_layer *m, strbuf *why)
{
    strbuf star = SB_INIT, named = SB_INIT;
    for (int d = 0; m && d < POL_NKEYED; d++) {
        int has_star = 0;
        for (size_t i = 0; i < m->keyed[d].keys.n; i++) {
            const struct pol_key *k = &m->keyed[d].keys.v[i];
            if (!k->rules.n)
                continue;
            if (strcmp(k->name, "*") == 0)
                has_star = 1;
            else
                sb_addf(&named, "%s[policy.%s] %s", named.len ? ", " : "", dim_word[d], k->name);
        }
        if (has_star)
            sb_addf(&star, "%s[policy.%s]", star.len ? ", " : "", dim_word[d]);
    }
    int fs_deny = m && m->fs[2].globs.n;
    int fs_cap = m && m->fs[1].globs.n && !write_covers_workspace(&m->fs[1]);
    const char *word;
    if (star.len || fs_deny || fs_cap) {
        word = "restrictive";
        if (why) {
            if (star.len)
                sb_addf(why, "\"*\" rules in %s bind every server, whatever a repo calls it",
                        star.buf);
            if (fs_deny)
                sb_addf(why, "%s[policy.filesystem] deny globs apply to every project",
                        star.len ? "; " : "");
            if (fs_cap)
                sb_addf(why, "%s[policy.filesystem] write keeps sandboxed workspaces read-only",
                        star.len || fs_deny ? "; " : "");
        }
    } else if (named.len) {
        word = "mixed";
        if (why)
            sb_addf(why,
                    "only server-named rules (%s) — a repo that renames its server dodges them; "
                    "add \"*\" rules for a floor",
                    named.buf);
    } else {
        word = "open";
        if (why)
            sb_adds(why, "no [policy.*] rule narrows anything; try: agentstack policy preset "
                         "developer");
    }
    sb_release(&star);
    sb_release(&named);
    return word;
}

void pol_machine_lint(const struct pol_layer *m, strvec *warnings)
{
    if (!m)
        return;
    for (int d = 0; d < POL_NKEYED; d++) {
        const struct pol_key *star = key_of(m, d, "*");
        for (size_t i = 0; i < m->keyed[d].keys.n; i++) {
            const struct pol_key *k = &m->keyed[d].keys.v[i];
            if (strcmp(k->name, "*") == 0)
                continue;
            for (size_t r = 0; r < k->rules.n; r++) {
                const struct pol_rule *rule = &k->rules.v[r];
                if (!rule->deny)
                    continue;
                int covered = 0;
                for (size_t s = 0; star && s < star->rules.n && !covered; s++)
                    covered =
                        star->rules.v[s].deny && strcmp(star->rules.v[s].canon, rule->canon) == 0;
                if (!covered)
                    strvec_pushf(warnings,
                                 "[policy.%s] %s denies \"!%s\" but \"*\" does not — it can be "
                                 "dodged if a repo renames its server; add \"!%s\" to the \"*\" "
                                 "key",
                                 dim_word[d], k->name, rule->canon, rule->canon);
            }
        }
    }
}

/* s with '-' and '.' read as '_' (the spellings tool names vary on). */
static char *underscored(const char *s, size_t n)
{
    char *o = malloc(n + 1);
    if (!o)
        return NULL;
    for (size_t i = 0; i < n; i++)
        o[i] = (s[i] == '-' || s[i] == '.') ? '_' : s[i];
    o[n] = '\0';
    return o;
}

static const char *side_near_miss(const struct pol_side *sd, const char *tool, const char *t2)
{
    for (uint32_t i = 0; sd && i < sd->deny.n; i++) {
        const struct pol_glob *g = &sd->deny.g[i];
        if (g->malformed || pol_glob_match(g->pat, g->len, tool, strlen(tool), sd->deny.nocase))
            continue; /* it matches as written: not a near miss */
        char *p2 = underscored(g->pat, g->len);
        int hit = p2 && pol_glob_match(p2, g->len, t2, strlen(t2), 1);
        free(p2);
        if (hit)
            return g->disp;
    }
    return NULL;
}

const char *pol_tool_near_miss(const struct pol_ruleset *rs, const char *server, const char *tool,
                               enum pol_by *by)
{
    if (!rs || !tool)
        return NULL;
    char *t2 = underscored(tool, strlen(tool));
    if (!t2)
        return NULL;
    const char *hit = NULL;
    const struct pol_bucket *b = pol_bucket_for(rs, server);
    for (int l = 0; l < 2 && !hit; l++) {
        const struct pol_side *own = &b->side[POL_TOOLS][l];
        hit = side_near_miss(own, tool, t2);
        if (!hit && (own->inherit_any || b == &rs->any))
            hit = side_near_miss(&rs->any.side[POL_TOOLS][l], tool, t2);
        if (hit && by)
            *by = l == POL_MACHINE ? POL_BY_MACHINE : POL_BY_PROJECT;
    }
    free(t2);
    return hit;
}
