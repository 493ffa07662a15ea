/* apply_report — what `agentstack diff` (human and --json) and
 * `agentstack instructions` print from apply's read-only plan. Split out of
 * apply.c, which plans and writes; this file only reports. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/apply_int.h"
#include "base/fs.h"
#include "base/lock.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/lockfile.h"

/* ---- diff: where the files stand against the manifest ------------------ */

static bool hand_edited(struct run *R, const struct tplan *t)
{
    json_t *e = adp_ledger_entry(R->ledger, t->key, false);
    const char *hash = json_string_value(json_object_get(e, "last_hash"));
    if (!hash || !t->existed || t->lane_only)
        return false;
    char cur[17];
    adp_fnv1a64_hex(t->before.buf, t->before.len, cur);
    return strcmp(cur, hash) != 0;
}

void adp_ap_print_diff(struct run *R, struct tplan *T, size_t nT, const desc_list *descs)
{
    FILE *out = R->o->out;
    size_t drifted = 0, blocked = 0;
    term_fprintf(out, "Scope: %s\n", R->o->project_scope ? "project" : "global");
    for (size_t i = 0; i < descs->n; i++) {
        bool off = false;
        for (size_t k = 0; k < nT; k++) {
            struct tplan *t = &T[k];
            if (t->d != descs->v[i] || (t->note && k >= descs->n))
                continue;
            strbuf dp = SB_INIT;
            if (t->path)
                adp_i_display_path(t->path, &dp);
            if (t->lane_only) {
                strbuf what = SB_INIT;
                for (size_t j = 0; j < t->lanes.n; j++)
                    sb_addf(&what, "%s%s", j ? " + " : "", adp_lane_name(t->lanes.v[j]->kind));
                term_fprintf(out, "  · %s → %s\n", what.buf, dp.buf);
                sb_release(&what);
            } else {
                term_fprintf(out, "%s%s%s%s\n", t->d->display, dp.len ? " (" : "", dp.buf,
                             dp.len ? ")" : "");
            }
            sb_release(&dp);
            if (t->note) {
                term_fprintf(out, "  %s\n", t->note);
                continue;
            }
            if (t->failed) {
                char buf[2048];
                term_fprintf(out, "  ✗ %s\n", as_err_str(&t->err, buf, sizeof buf));
                off = true;
                continue;
            }
            /* A blocked lane leaves the file as it is, so it compares equal:
             * say why it would not be written instead of "in sync". */
            bool lane_blocked = false;
            for (size_t j = 0; j < t->lanes.n; j++) {
                const struct adp_lane *l = t->lanes.v[j];
                if (!l->blocked)
                    continue;
                lane_blocked = true;
                for (size_t n = 0; n < l->lines.n; n++)
                    term_fprintf(out, "  %s\n", l->lines.v[n]);
            }
            if (lane_blocked) {
                blocked++;
                continue;
            }
            if (hand_edited(R, t)) {
                term_fprintf(out, "  ⚠ hand-edited: this file no longer matches what agentstack "
                                  "last wrote\n");
                off = true;
            }
            for (size_t j = 0; j < t->names.n; j++)
                term_fprintf(out, "  managed         %s\n", t->names.v[j]);
            for (size_t j = 0; j < t->kept_foreign.n; j++)
                term_fprintf(out, "  foreign (kept)  %s\n", t->kept_foreign.v[j]);
            for (size_t j = 0; j < t->removed.n; j++) {
                strbuf why = SB_INIT;
                term_fprintf(out, "  − %s (%s)\n", t->removed.v[j],
                             adp_ap_removal_reason(R, t->removed.v[j], &why));
                sb_release(&why);
            }
            if (t->changed) {
                strbuf diff = SB_INIT;
                size_t a, r;
                adp_diff(t->before.buf, t->before.len, t->after.buf, t->after.len, &R->mask,
                         R->o->color, R->o->verbose ? 0 : PREVIEW_LINES, &diff, &a, &r);
                fputs(diff.buf, out);
                sb_release_secure(&diff);
                term_fprintf(out, "  ~ differs from the manifest (+%zu / -%zu lines)\n", a, r);
                off = true;
            } else {
                term_fprintf(out, "  ✓ in sync\n");
            }
        }
        drifted += off;
    }
    if (blocked)
        fprintf(out, "✗ %zu file%s would not be written — see the ✗ lines above.\n", blocked,
                blocked == 1 ? "" : "s");
    if (drifted)
        term_fprintf(out, "%zu target%s drifted. Run agentstack apply --write to reconcile.\n",
                     drifted, drifted == 1 ? "" : "s");
    else if (!blocked)
        term_fprintf(out, "✓ all targets in sync with the manifest.\n");
}

/* diff --json: the same report as one document on stdout, for scripts. The
 * ledger keeps one hash per file, so hand-editing is a property of the
 * target, not of an entry. Diff text is left out: line counts only, so no
 * resolved value can leak through a line the masker did not know. */
void adp_ap_print_diff_json(struct run *R, struct tplan *T, size_t nT, const desc_list *descs)
{
    json_t *doc = json_object(), *targets = json_array();
    size_t drifted = 0;
    json_object_set_new(doc, "schema_version", json_integer(1));
    json_object_set_new(doc, "command", json_string("diff"));
    json_object_set_new(doc, "scope", json_string(R->o->project_scope ? "project" : "global"));
    for (size_t i = 0; i < descs->n; i++) {
        bool off = false;
        for (size_t k = 0; k < nT; k++) {
            struct tplan *t = &T[k];
            if (t->d != descs->v[i] || (t->note && k >= descs->n))
                continue;
            json_t *o = json_object();
            json_object_set_new(o, "id", json_string(t->d->id));
            json_object_set_new(o, "display", json_string(t->d->display));
            json_object_set_new(o, "path", t->path ? json_string(t->path) : json_null());
            strbuf what = SB_INIT;
            if (t->lane_only)
                for (size_t j = 0; j < t->lanes.n; j++)
                    sb_addf(&what, "%s%s", j ? " + " : "", adp_lane_name(t->lanes.v[j]->kind));
            else
                sb_adds(&what, "servers");
            json_object_set_new(o, "kind", json_string(what.buf));
            sb_release(&what);
            json_t *entries = json_array(), *removed = json_array();
            const char *state;
            bool he = false;
            if (t->note) {
                state = "skipped";
                json_object_set_new(o, "note", json_string(t->note));
            } else if (t->failed) {
                char buf[2048];
                state = "failed";
                json_object_set_new(o, "error", json_string(as_err_str(&t->err, buf, sizeof buf)));
                off = true;
            } else {
                he = hand_edited(R, t);
                off |= he;
                for (size_t j = 0; j < t->names.n; j++)
                    json_array_append_new(
                        entries, json_pack("{s:s,s:s}", "name", t->names.v[j], "state", "managed"));
                for (size_t j = 0; j < t->kept_foreign.n; j++)
                    json_array_append_new(
                        entries,
                        json_pack("{s:s,s:s}", "name", t->kept_foreign.v[j], "state", "foreign"));
                for (size_t j = 0; j < t->removed.n; j++)
                    json_array_append_new(removed, json_string(t->removed.v[j]));
                size_t a = 0, r = 0;
                if (t->changed) {
                    strbuf diff = SB_INIT;
                    adp_diff(t->before.buf, t->before.len, t->after.buf, t->after.len, &R->mask,
                             false, 0, &diff, &a, &r);
                    sb_release_secure(&diff);
                    off = true;
                }
                state = t->changed ? "differs" : (he ? "hand-edited" : "in_sync");
                json_object_set_new(o, "added_lines", json_integer((json_int_t)a));
                json_object_set_new(o, "removed_lines", json_integer((json_int_t)r));
            }
            json_object_set_new(o, "state", json_string(state));
            json_object_set_new(o, "hand_edited", json_boolean(he));
            json_object_set_new(o, "entries", entries);
            json_object_set_new(o, "removed", removed);
            json_array_append_new(targets, o);
        }
        drifted += off;
    }
    json_object_set_new(doc, "targets", targets);
    json_object_set_new(doc, "drifted", json_integer((json_int_t)drifted));
    json_object_set_new(doc, "in_sync", json_boolean(drifted == 0));
    char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    if (text) {
        fputs(text, R->o->out);
        fputc('\n', R->o->out);
    }
    free(text);
    json_decref(doc);
}

/* apply --json: what each file is and what happened to it, in fixed words
 * (docs/json.md). Names only — of servers, and the ${REF}s a line names —
 * never a value, and no diff text. */
static json_t *names_json(const strvec *v)
{
    json_t *a = json_array();
    for (size_t i = 0; i < v->n; i++)
        json_array_append_new(a, json_string(v->v[i]));
    return a;
}

void adp_ap_report_rows(struct run *R, struct tplan *T, size_t nT, json_t *rows)
{
    const struct adp_apply_opts *o = R->o;
    for (size_t k = 0; k < nT; k++) {
        struct tplan *t = &T[k];
        json_t *row = json_object();
        json_object_set_new(row, "id", json_string(t->d->id));
        json_object_set_new(row, "display", json_string(t->d->display));
        json_object_set_new(row, "path", t->path ? json_string(t->path) : json_null());
        strbuf what = SB_INIT;
        if (t->lane_only)
            adp_ap_lane_summary(t, &what);
        else
            sb_adds(&what, "servers");
        json_object_set_new(row, "kind", json_string(what.buf));
        sb_release(&what);
        const char *state;
        if (t->note) {
            state = "skipped";
            json_object_set_new(row, "note", json_string(t->note));
        } else if (t->failed) {
            char buf[2048];
            state = "failed";
            json_object_set_new(row, "error", json_string(as_err_str(&t->err, buf, sizeof buf)));
        } else if (t->blocked) {
            state = "blocked";
            if (t->block_msg)
                json_object_set_new(row, "reason", json_string(t->block_msg));
        } else if (t->trust_blocked && o->write) {
            state = "refused";
            if (o->trust_refusal)
                json_object_set_new(row, "reason", json_string(o->trust_refusal));
        } else if (t->written || t->deleted) {
            state = "written";
        } else if (t->changed) {
            state = "would_change";
        } else {
            state = "in_sync";
        }
        json_object_set_new(row, "state", json_string(state));
        json_object_set_new(row, "servers", names_json(&t->names));
        json_object_set_new(row, "removed", names_json(&t->removed));
        json_object_set_new(row, "kept_foreign", names_json(&t->kept_foreign));
        json_object_set_new(row, "left_out", names_json(&t->left_out_names));
        json_object_set_new(row, "unresolved", names_json(&t->unresolved_refs));
        json_array_append_new(rows, row);
    }
}

/* instructions: each compiled file once, with the CLIs that read it, its
 * lines, the preview and the outcome in fixed words; then what no CLI can
 * take (a CLI without an instruction file). */
void adp_ap_print_instructions(struct run *R, struct tplan *T, size_t nT,
                               const adp_lane_list *lanes)
{
    const struct adp_apply_opts *o = R->o;
    FILE *out = o->out;
    size_t shown = 0;
    for (size_t k = adp_ap_descs_end(T, nT); k < nT; k++) {
        struct tplan *t = &T[k];
        for (size_t i = 0; i < t->lanes.n; i++) {
            const struct adp_lane *l = t->lanes.v[i];
            if (l->kind != ADP_LANE_INSTRUCTIONS)
                continue;
            shown++;
            strbuf dp = SB_INIT, who = SB_INIT;
            adp_i_display_path(l->path, &dp);
            for (size_t j = 0; j < l->owners.n; j++)
                sb_addf(&who, "%s%s", j ? " · " : "", l->owners.v[j]->display);
            term_fprintf(out, "%s (%s)\n", dp.buf, who.buf);
            sb_release(&dp);
            sb_release(&who);
            for (size_t j = 0; j < l->frag_names.n; j++)
                term_fprintf(out, "  fragment %s%s\n", l->frag_names.v[j],
                             l->frag_pick.v[j] >= 0 ? " (variant)" : "");
            for (size_t j = 0; j < l->lines.n; j++) /* the trust refusal among them */
                term_fprintf(out, "  %s\n", l->lines.v[j]);
        }
        if (t->failed) {
            char buf[4096];
            term_fprintf(out, "  ✗ %s\n", as_err_str(&t->err, buf, sizeof buf));
            if (t->err.hint[0])
                term_fprintf(out, "    ↳ %s\n", t->err.hint);
            continue;
        }
        bool blocked = false;
        for (size_t i = 0; i < t->lanes.n; i++)
            blocked |= t->lanes.v[i]->blocked ||
                       (t->lanes.v[i]->trust_blocked && t->lanes.v[i]->content[0]);
        if (blocked && !t->changed)
            continue;
        if (!t->changed) {
            term_fprintf(out, "  ✓ up to date\n");
            continue;
        }
        strbuf diff = SB_INIT;
        size_t a, r;
        adp_diff(t->before.buf, t->before.len, t->after.buf, t->after.len, &R->mask, o->color,
                 o->verbose ? 0 : PREVIEW_LINES, &diff, &a, &r);
        fputs(diff.buf, out);
        sb_release_secure(&diff);
        strbuf sum = SB_INIT;
        adp_ap_lane_summary(t, &sum);
        if (o->write && t->deleted)
            term_fprintf(out, "  − removed empty %s\n", t->path);
        else if (o->write && t->written)
            term_fprintf(out, "  ✓ wrote %s\n", sum.len ? sum.buf : "managed region");
        else if (!o->write)
            term_fprintf(out, "  → would update %s\n", sum.len ? sum.buf : "managed region");
        sb_release(&sum);
    }
    for (size_t i = 0; i < lanes->n; i++)
        if (lanes->v[i]->kind == ADP_LANE_NOTE)
            term_fprintf(out, "%s: %s\n", lanes->v[i]->first->display, lanes->v[i]->note);
    if (!shown)
        term_fprintf(out, "· no instructions declared for these CLIs — nothing to compile\n");
}
