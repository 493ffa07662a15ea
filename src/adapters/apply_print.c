/* apply_print — what `apply` (and `use`) print from a run: each target's
 * plan or outcome, the lanes and skills under it, and the closing line with
 * its exit status. Split out of apply.c, which plans and writes; nothing
 * here writes a file. See docs/adapters.md for the text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "adapters/apply_int.h"
#include "base/fs.h"
#include "base/term.h"
#include "base/xalloc.h"

/* ---- output --------------------------------------------------------------- */

void adp_ap_print_target(struct run *R, struct tplan *t)
{
    const struct adp_apply_opts *o = R->o;
    FILE *out = o->out;
    strbuf dp = SB_INIT;
    if (t->path)
        adp_i_display_path(t->path, &dp);
    if (t->note && strncmp(t->note, "·", strlen("·")) != 0) {
        term_fprintf(out, "%s\n", t->note);
        sb_release(&dp);
        return;
    }
    if (dp.len)
        term_fprintf(out, "%s (%s)\n", t->d->display, dp.buf);
    else
        term_fprintf(out, "%s\n", t->d->display);
    if (t->note) {
        term_fprintf(out, "  %s\n", t->note);
        sb_release(&dp);
        return;
    }
    if (t->live)
        term_fprintf(out, "  %s\n", ADP_LIVE_NOTE);
    for (size_t i = 0; i < t->skip_lines.n; i++)
        term_fprintf(out, "  %s\n", t->skip_lines.v[i]);
    for (size_t i = 0; i < t->left_out_lines.n; i++)
        term_fprintf(out, "  %s\n", t->left_out_lines.v[i]);
    for (size_t i = 0; i < t->unresolved_lines.n; i++)
        term_fprintf(out, "  %s\n", t->unresolved_lines.v[i]);
    if (t->kept_foreign.n) {
        strbuf n = SB_INIT;
        for (size_t i = 0; i < t->kept_foreign.n; i++)
            sb_addf(&n, "%s%s", i ? ", " : "", t->kept_foreign.v[i]);
        term_fprintf(out,
                     "  ⚠ keeping %s — applied by another manifest ↳ keep: agentstack adopt · "
                     "prune: agentstack apply --prune-foreign\n",
                     n.buf);
        sb_release(&n);
    }
    if (t->failed) {
        char buf[4096];
        term_fprintf(out, "  ✗ %s\n", as_err_str(&t->err, buf, sizeof buf));
        if (t->err.hint[0])
            term_fprintf(out, "    ↳ %s\n", t->err.hint);
        sb_release(&dp);
        return;
    }
    if (t->trust_blocked)
        term_fprintf(out, "  ✗ refusing to render MCP servers: %s\n", o->trust_refusal);
    strbuf why = SB_INIT;
    for (size_t i = 0; t->live && i < t->removed.n; i++)
        term_fprintf(out, "  − %s '%s' from %s (the gateway serves it — one delivery per server)\n",
                     o->write ? "removing" : "would REMOVE", t->removed.v[i], dp.buf);
    for (size_t i = 0; !t->live && i < t->removed.n; i++) {
        if (o->write && !t->blocked)
            term_fprintf(out, "  − pruning '%s' (%s)\n", t->removed.v[i],
                         adp_ap_removal_reason(R, t->removed.v[i], &why));
        else
            term_fprintf(out, "  − would REMOVE '%s' from %s (%s)\n", t->removed.v[i], dp.buf,
                         adp_ap_removal_reason(R, t->removed.v[i], &why));
    }
    sb_release(&why);
    if (t->changed && !t->blocked && !t->trust_blocked && t->secrets.n) {
        /* Which files hold resolved values (named by reference, never the value). */
        strbuf names = SB_INIT;
        strvec seen = STRVEC_INIT;
        for (size_t i = 0; i < t->secrets.n; i++) {
            if (strvec_find(&seen, t->secrets.v[i].name) >= 0)
                continue;
            strvec_push(&seen, t->secrets.v[i].name);
            sb_addf(&names, "%s${%s}", seen.n > 1 ? ", " : "", t->secrets.v[i].name);
        }
        term_fprintf(out, "  · %s the resolved value of %s (a new file is created 0600)\n",
                     o->write ? "holds" : "will hold", names.buf);
        strvec_clear(&seen);
        sb_release(&names);
    }
    if (t->changed) {
        strbuf diff = SB_INIT;
        size_t a, r;
        adp_diff(t->before.buf, t->before.len, t->after.buf, t->after.len, &R->mask, o->color,
                 o->verbose ? 0 : PREVIEW_LINES, &diff, &a, &r);
        fputs(diff.buf, out);
        if (!o->verbose)
            term_fprintf(out, "  ~ +%zu / -%zu lines%s\n", a, r,
                         (r == 0 && a > 0) ? " (new content)" : "");
        sb_release_secure(&diff);
    }
    if (t->blocked) {
        term_fprintf(out, "  ✗ %s\n", t->block_msg);
    } else if (!t->changed) {
        term_fprintf(out, "  ✓ %sup to date\n", o->use ? "servers " : "");
    } else if (o->write && t->deleted) {
        term_fprintf(out, "  − removed empty %s\n", dp.buf);
    } else if (o->write && t->written) {
        size_t n = t->trust_blocked ? 0 : t->rendered.n;
        if (n)
            term_fprintf(out, "  ✓ wrote %zu server%s\n", n, n == 1 ? "" : "s");
        else
            term_fprintf(out, "  ✓ wrote %s\n", dp.buf);
    } else if (o->write && !t->written && !t->trust_blocked) {
        char buf[4096];
        term_fprintf(out, "  ✗ %s\n", as_err_str(&t->err, buf, sizeof buf));
        if (t->err.hint[0])
            term_fprintf(out, "    ↳ %s\n", t->err.hint);
    } else if (!o->write) {
        size_t n = t->rendered.n;
        strbuf sum = SB_INIT;
        if (n)
            term_fprintf(out, "  → %zu server%s to apply\n", n, n == 1 ? "" : "s");
        else if (t->lanes.n && adp_ap_lane_summary(t, &sum)[0])
            term_fprintf(out, "  → would update %s\n", sum.buf);
        else
            term_fprintf(out, "  → changes to apply\n");
        sb_release(&sum);
    }
    sb_release(&dp);
}

/* Lane-only files come after the server targets in T. */
size_t adp_ap_descs_end(const struct tplan *T, size_t nT)
{
    size_t k = 0;
    while (k < nT && !T[k].lane_only)
        k++;
    return k;
}

const char *adp_ap_lane_summary(const struct tplan *t, strbuf *out)
{
    for (size_t i = 0; i < t->lanes.n; i++) {
        const struct adp_lane *l = t->lanes.v[i];
        if (l->blocked || (l->trust_blocked && l->kind == ADP_LANE_INSTRUCTIONS))
            continue;
        if (out->len)
            sb_adds(out, " · ");
        if (l->kind == ADP_LANE_INSTRUCTIONS)
            sb_adds(out, l->content[0] ? "managed region" : "removal of the managed region");
        else if (l->trust_blocked || !l->names.n)
            sb_addf(out, "removal of %zu %s", l->removes.n,
                    l->kind == ADP_LANE_SETTINGS ? "setting(s)" : "hooks key");
        else
            sb_addf(out, "%zu %s%s", l->names.n, l->kind == ADP_LANE_SETTINGS ? "setting" : "hook",
                    l->names.n == 1 ? "" : "s");
    }
    return out->buf;
}

static void print_lane_head(FILE *out, const struct adp_lane *l, const struct adp_desc *d)
{
    strbuf dp = SB_INIT;
    adp_i_display_path(l->path, &dp);
    if (l->first != d)
        term_fprintf(out, "  · %s → %s (shared with %s)\n", adp_lane_name(l->kind), dp.buf,
                     l->first->display);
    else
        term_fprintf(out, "  · %s → %s\n", adp_lane_name(l->kind), dp.buf);
    sb_release(&dp);
    for (size_t k = 0; l->first == d && k < l->lines.n; k++)
        term_fprintf(out, "    %s\n", l->lines.v[k]);
}

static bool lane_owned_by(const struct adp_lane *l, const struct adp_desc *d)
{
    for (size_t k = 0; k < l->owners.n; k++)
        if (l->owners.v[k] == d)
            return true;
    return false;
}

/* Lanes print under each CLI that names them: notes; lanes sharing the
 * server file (their bytes are in the server diff above); then each file of
 * their own with its lanes, the diff and the outcome. A file shared with a
 * CLI printed earlier is only named. */
void adp_ap_print_lanes(struct run *R, struct tplan *T, size_t nT, const adp_lane_list *lanes,
                        const struct tplan *st)
{
    const struct adp_apply_opts *o = R->o;
    FILE *out = o->out;
    for (size_t i = 0; i < lanes->n; i++)
        if (lanes->v[i]->kind == ADP_LANE_NOTE && lanes->v[i]->first == st->d)
            term_fprintf(out, "  %s\n", lanes->v[i]->note);
    for (size_t i = 0; i < st->lanes.n && !st->note; i++)
        print_lane_head(out, st->lanes.v[i], st->d);
    for (size_t k = adp_ap_descs_end(T, nT); k < nT; k++) {
        struct tplan *t = &T[k];
        bool mine = false;
        for (size_t i = 0; i < t->lanes.n; i++)
            mine |= lane_owned_by(t->lanes.v[i], st->d);
        if (!mine)
            continue;
        for (size_t i = 0; i < t->lanes.n; i++)
            if (lane_owned_by(t->lanes.v[i], st->d))
                print_lane_head(out, t->lanes.v[i], st->d);
        if (t->d != st->d)
            continue;
        if (t->failed) {
            char buf[4096];
            term_fprintf(out, "    ✗ %s\n", as_err_str(&t->err, buf, sizeof buf));
            if (t->err.hint[0])
                term_fprintf(out, "      ↳ %s\n", t->err.hint);
            continue;
        }
        strbuf sum = SB_INIT;
        adp_ap_lane_summary(t, &sum);
        if (!t->changed) {
            if (sum.len)
                term_fprintf(out, "    ✓ up to date\n");
        } else {
            strbuf diff = SB_INIT;
            size_t a, r;
            adp_diff(t->before.buf, t->before.len, t->after.buf, t->after.len, &R->mask, o->color,
                     o->verbose ? 0 : PREVIEW_LINES, &diff, &a, &r);
            /* one more level of indent: the file sits under its CLI */
            for (const char *p = diff.buf; *p;) {
                const char *nl = strchr(p, '\n');
                size_t n = nl ? (size_t)(nl - p) : strlen(p);
                fprintf(out, "  %.*s\n", (int)n, p);
                p += n + (nl ? 1 : 0);
            }
            sb_release_secure(&diff);
            if (!o->verbose)
                term_fprintf(out, "    ~ +%zu / -%zu lines%s\n", a, r,
                             (r == 0 && a > 0) ? " (new content)" : "");
            if (o->write && t->deleted)
                term_fprintf(out, "    − removed empty %s\n", t->path);
            else if (o->write && t->written)
                term_fprintf(out, "    ✓ wrote %s\n", sum.buf);
            else if (!o->write)
                term_fprintf(out, "    → would update %s\n", sum.buf);
        }
        sb_release(&sum);
    }
}

void adp_ap_print_skills(struct run *R, const struct tplan *t)
{
    FILE *out = R->o->out;
    if (t->skills_note)
        term_fprintf(out, "  %s\n", t->skills_note);
    if (t->skills_failed) {
        char buf[2048];
        term_fprintf(out, "  ✗ skills: %s\n", as_err_str(&t->serr, buf, sizeof buf));
        return;
    }
    for (size_t i = 0; t->skills_on && i < t->splan.lines.n; i++)
        term_fprintf(out, "  %s\n", t->splan.lines.v[i]);
}

/* The closing line's fix for blocked targets. `secret set` fixes only a missing value: a ref
 * [policy.secrets] refuses stays refused whatever the store holds or --allow-unresolved says,
 * so those point at the manifest (or the policy that refused it). */
static const char *blocked_fix(size_t n_blocked, size_t n_other, size_t n_lane)
{
    /* A blocked lane (an instruction fragment missing, drifted from the lock
     * or carrying a region marker line) has its own fix on its ✗ line. */
    if (n_lane)
        return "see the ✗ line for each";
    if (!n_other)
        return "agentstack secret set NAME (or pass --allow-unresolved)";
    if (n_other == n_blocked)
        return "see the ✗ line for each — remove a ${REF} that [policy.secrets] refuses from "
               "agentstack.toml, or change the policy that refuses it (--allow-unresolved never "
               "skips a policy refusal)";
    return "agentstack secret set NAME for an unresolved secret; a ${REF} that "
           "[policy.secrets] refuses must come out of agentstack.toml (or the policy must "
           "change) — see the ✗ line for each";
}

/* The closing line for a run with counts c, and whether it failed: 1 with
 * err (blocked or failed writes, a trust refusal), else 0. */
int adp_ap_print_closing(struct run *R, struct tplan *T, size_t nT, const struct ap_counts *c,
                         struct as_err *err)
{
    const struct adp_apply_opts *o = R->o;
    FILE *out = o->out;
    int rc = 0;
    if (o->instructions) {
        size_t n_files = 0, n_lane_written = 0;
        for (size_t k = adp_ap_descs_end(T, nT); k < nT; k++) {
            n_files += T[k].changed && !T[k].failed;
            n_lane_written += T[k].written;
        }
        if (c->blocked) {
            term_fprintf(out, "✗ instructions not written to %zu file%s — see the ✗ lines above\n",
                         c->blocked, c->blocked == 1 ? "" : "s");
            if (o->write) {
                as_err_set(err, "%zu instruction file%s blocked — see the ✗ lines above",
                           c->blocked, c->blocked == 1 ? "" : "s");
                rc = 1;
            }
        } else if (!o->write && n_files) {
            term_fprintf(out,
                         "%zu instruction file%s would change. Re-run with --write to write.\n",
                         n_files, n_files == 1 ? "" : "s");
        } else if (o->write && n_lane_written) {
            term_fprintf(out,
                         "✓ wrote %zu instruction file%s.\nundo: agentstack restore --last "
                         "--write\n",
                         n_lane_written, n_lane_written == 1 ? "" : "s");
        } else if (c->trust && !o->write) {
            term_fprintf(out, "✗ --write would refuse — see the ✗ lines above\n");
        } else if (!c->failed && !c->trust) {
            term_fprintf(out, "✓ nothing to write — every instruction file up to date\n");
        }
    } else if (c->blocked) {
        term_fprintf(out,
                     "Wrote %zu of %zu targets; %zu blocked — see the ✗ line for each; see ✗ "
                     "above.\n",
                     c->written, c->targets, c->blocked);
        const char *fix = blocked_fix(c->blocked, c->blocked_other, c->blocked_lane);
        as_err_set(err, "%zu blocked write%s on %zu target%s — fix: %s", c->blocked,
                   c->blocked == 1 ? "" : "s", c->blocked, c->blocked == 1 ? "" : "s", fix);
        if (!o->write) {
            term_fprintf(out,
                         "%zu target%s would change — but --write would refuse on %zu target%s: "
                         "fix: %s\n",
                         c->changed, c->changed == 1 ? "" : "s", c->blocked,
                         c->blocked == 1 ? "" : "s", fix);
            as_err_clear(err);
        } else {
            rc = 1;
        }
    } else if (!o->write && o->use) {
        if (c->changed || c->skill_changes)
            term_fprintf(out, "Dry run. Re-run with --write to apply.\n");
        else if (!c->failed)
            term_fprintf(out, "✓ nothing to write — every target in sync\n");
    } else if (!o->write) {
        if (c->changed) {
            term_fprintf(out, "%zu target%s would change", c->changed, c->changed == 1 ? "" : "s");
            if (c->removing)
                term_fprintf(out, ", REMOVING %zu server entr%s", c->removing,
                             c->removing == 1 ? "y" : "ies");
            term_fprintf(out, ". Re-run with --write to write.\n");
        } else if (!c->failed) {
            term_fprintf(out, "✓ nothing to write — every target in sync\n");
        }
    } else {
        size_t in_sync = c->targets - c->failed;
        if (c->written == 0 && c->skill_changes == 0 && !c->failed && !c->trust)
            term_fprintf(out, "%zu target%s already in sync — nothing to change.\n", c->targets,
                         c->targets == 1 ? "" : "s");
        else if (c->written)
            term_fprintf(out, "%zu target%s in sync — wrote %zu.\n", in_sync,
                         in_sync == 1 ? "" : "s", c->written);
        if (c->written || c->skill_changes) {
            term_fprintf(out, "Restart the affected CLIs (or start a new session) to load the "
                              "change.\n");
            if (!o->caller_holds_lock) /* a session is undone by `session end` */
                term_fprintf(out, "undo: agentstack restore --last --write\n");
        }
    }
    if (c->trust && !c->blocked && o->write) {
        as_err_set(err, "refusing to render %s: %s", c->trust_what ? c->trust_what : "MCP servers",
                   o->trust_refusal);
        rc = 1;
    }
    if (c->failed && !c->blocked) {
        as_err_set(err, "write failed on %zu target(s): %s — %s", c->failed, c->failed_names.buf,
                   c->first_fail ? c->first_fail : "see above");
        rc = 1;
    }

    return rc;
}
