/*
 * apply_int — what apply.c and apply_report.c share: a target's plan
 * (struct tplan) and one run's state (struct run). Module-private.
 */
#ifndef AS_ADAPTERS_APPLY_INT_H
#define AS_ADAPTERS_APPLY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "adapters/engine.h"
#include "adapters/internal.h"
#include "adapters/merge.h"

#define PREVIEW_LINES 8

typedef VEC(const struct adp_desc *) desc_list;

struct tplan {
    const struct adp_desc *d;
    char *path;
    enum adp_format fmt;
    char *key;
    char *note; /* printed instead of a plan */
    bool existed;
    strbuf before, after;
    /* the edit, kept for a re-merge just before the rename */
    VEC(struct adp_rendered) rendered;
    strvec names; /* parallel to rendered */
    strvec removed;
    strvec skip_lines, left_out_lines, unresolved_lines, kept_foreign, left_out_names;
    strvec unresolved_refs; /* the ${REF} names with no value here (apply --json) */
    adp_secrets secrets;
    bool blocked;            /* unresolved secrets, a [policy.secrets] refusal or a store failure */
    bool blocked_unresolved; /* only unresolved secrets: `secret set` is the fix */
    char *block_msg;
    bool trust_blocked;
    /* the CLI holds the gateway: no server is written, the direct entries
     * it serves (in removed) are pruned (oneway.c) */
    bool live;
    bool failed;
    struct as_err err;
    bool changed;
    bool written;
    bool deleted;
    unsigned before_mode; /* the file's own mode just before the write, for undo */
    strvec created_dirs;
    /* use: the toolset's skills */
    bool skills_on;
    char *skills_dir;
    char *skills_note;
    struct adp_skills_req sreq;
    struct adp_skills_plan splan;
    strvec smanaged;
    bool skills_failed;
    struct as_err serr;
    /* lanes (instructions, settings, hooks) edited in this same file, in
     * order after the servers; lane_only: a file without a server section */
    bool lane_only;
    VEC(struct adp_lane *) lanes;
};

struct run {
    const struct adp_apply_opts *o;
    json_t *ledger;
    VEC(const struct mf_server *) servers;
    adp_secrets mask;        /* every resolved value, for previews */
    strvec skill_names;      /* use: the toolset's skills (as placed: bare names) */
    strvec skill_srcs;       /* parallel: resolved source dirs ("" = unresolved) */
    strvec skill_why;        /* parallel: why "" (adp_skills_req.why) */
    struct adp_i_libset lib; /* library servers selected */
    strvec skill_notes;      /* use: why a library skill is not placed */
};

/* Why an entry we rendered before leaves a file now, into out: "no longer
 * in manifest", or, for a server the manifest still declares that the
 * selected toolset leaves out, "declared, but not in toolset 'T'". */
const char *adp_ap_removal_reason(const struct run *R, const char *name, strbuf *out);
/* oneway.c: the live plan of a CLI holding the gateway: removed = the names
 * the ledger entry lists (unless another manifest wrote them) and the
 * selected servers' names. */
void adp_ap_plan_live(struct run *R, struct tplan *t, const json_t *entry, bool other_manifest);
/* Keeps in t->removed only the names t->before holds; true when any is
 * left (false too when the file does not parse: nothing is removed). */
bool adp_ap_live_present(struct tplan *t);
#define ADP_LIVE_NOTE                                                                              \
    "· MCP servers are served live, not written — nothing for `apply` to render here"

/* the first plan past the adapters' own targets (lane-only files follow) */
size_t adp_ap_descs_end(const struct tplan *T, size_t nT);
/* "instructions + settings" for the lanes a file holds; "" when none */
const char *adp_ap_lane_summary(const struct tplan *t, strbuf *out);

/* What one run did, counted for the closing line (apply.c). */
struct ap_counts {
    size_t written, failed, blocked, changed, removing, targets, trust, skill_changes;
    /* blocked by something `secret set` cannot fix: a [policy.secrets] refusal (never
     * overridden, not even by --allow-unresolved) or a store failure */
    size_t blocked_other, blocked_lane;
    strbuf failed_names;
    const char *first_fail; /* points into failbuf */
    char failbuf[2048];
    const char *trust_what;
};

/* apply_print.c: a target's plan or outcome, its lanes and skills, and the
 * closing line (1 with err when the run failed, else 0). */
void adp_ap_print_target(struct run *R, struct tplan *t);
void adp_ap_print_lanes(struct run *R, struct tplan *T, size_t nT, const adp_lane_list *lanes,
                        const struct tplan *st);
void adp_ap_print_skills(struct run *R, const struct tplan *t);
int adp_ap_print_closing(struct run *R, struct tplan *T, size_t nT, const struct ap_counts *c,
                         struct as_err *err);
/* apply_gitignore.c: lists every project file the ledger says we own in the
 * managed block (after the targets were written), into h and report. */
void adp_ap_gitignore_step(struct run *R, const struct adp_registry *r, struct tplan *T, size_t nt,
                           struct adp_hist_entry *h, strbuf *report, size_t *n_written,
                           size_t *n_failed);

/* apply_report.c: `diff` (human and --json) and `instructions` output */
void adp_ap_print_diff(struct run *R, struct tplan *T, size_t nT, const desc_list *descs);
void adp_ap_print_diff_json(struct run *R, struct tplan *T, size_t nT, const desc_list *descs);
/* apply --json: one row per file into rows (engine.h, adp_apply_opts.report) */
void adp_ap_report_rows(struct run *R, struct tplan *T, size_t nT, json_t *rows);
void adp_ap_print_instructions(struct run *R, struct tplan *T, size_t nT,
                               const adp_lane_list *lanes);

#endif
