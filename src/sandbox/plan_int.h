/*
 * plan_int — what the plan builder's files share inside the sandbox module.
 *
 * Why: sbx_plan_build (plan.c) stays the one entry point that builds a run
 * plan; the host modes' half of it lives in plan_host.c so neither file
 * grows past what one reader can hold. Nothing here is for other modules.
 */
#ifndef AS_SANDBOX_PLAN_INT_H
#define AS_SANDBOX_PLAN_INT_H

#include <stdio.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "bundle/manifest.h"
#include "policy/policy.h"
#include "sandbox/plan.h"

/* realpath(path), or NULL. */
char *sbx_i_canon(const char *path);

/* ---- the view (view.c): what a confined process sees ------------------- */

struct sbx_view {
    sbx_mounts *mounts;    /* appended to, in order */
    const char *workspace; /* host directory (canonical), or NULL */
    const char *inside;    /* where the workspace appears in the view */
    uid_t uid;             /* the inside ids, for the synthesized passwd/group */
    gid_t gid;
};

void sbx_i_mount(struct sbx_view *v, enum sbx_mount_kind k, const char *src, const char *dst,
                 const char *data, int optional);
int sbx_i_has_mount(const struct sbx_view *v, const char *dst);
void sbx_i_mounts_free(sbx_mounts *m);
/* 1 when `path` is `dir` or lies below it (plain string test on canonical paths). */
int sbx_i_path_within(const char *dir, const char *path);
/* Refuses a workspace that would expose the user's home or the machine home. */
int sbx_i_check_workspace(const char *ws, const char *home_canon, const char *ah_canon,
                          struct as_err *err);
/* /proc, the read-only system directories, a synthesized /etc, /dev, /tmp. */
void sbx_i_system_view(struct sbx_view *v, const char *rootfs);
/* The workspace at v->inside (read-write only when `writable`), .git's
 * config and hooks read-only in a writable one, every `.env*` entry at any
 * depth and the overlay of the root, manifest_dir (may be NULL) and
 * .agentstack/ shadowed. -1 + err when the workspace cannot be walked
 * within its bounds (nothing may be launched on such a view). */
int sbx_i_workspace_view(struct sbx_view *v, int writable, const char *manifest_dir,
                         struct as_err *err);
/* The program bin: exec_path = its path inside, extra_path = a PATH entry
 * to add ("" when in the system directories), *real_out (may be NULL) its
 * realpath; binds its install prefix read-only when outside them. */
int sbx_i_program_view(struct sbx_view *v, const char *bin, const char *home_canon,
                       const char *ah_canon, char **real_out, strbuf *exec_path, strbuf *extra_path,
                       struct as_err *err);

/* The normalized host of an http(s) URL; -1 when it cannot be classified
 * (not http(s), a ${REF} or '%' in the authority, not canonical). */
int sbx_i_url_host(const char *url, char out[POL_HOST_MAX + 1]);

/* Adds "toolsets here: a, b" to err's hint (nothing when there are none). */
void sbx_i_toolset_hint(const struct manifest *m, struct as_err *err);

/* The host modes' part of sbx_plan_build: p already holds the mode,
 * posture, harness id and run id. -1 + err on a refusal that is not a
 * gate (broken machine policy, unknown toolset, no such directory). */
int sbx_i_plan_host(const struct sbx_plan_request *rq, struct sbx_plan *p, struct as_err *err);

/* The frozen authority (p->grant) for the fence in p->fence_servers/skills,
 * p->ruleset and p->consent_digest; ts (may be NULL) adds model/effort. */
void sbx_i_build_grant(struct sbx_plan *p, const struct manifest *m, const struct mf_toolset *ts);

/* The confined modes' gateway routing (plan_gateway.c): decides whether the
 * trusted bundle's servers reach the sandbox through the gateway's face and
 * fills the gateway_* and grant fields. digest: the consent digest the
 * project is trusted at. -1 + err when --lockdown must refuse. */
int sbx_i_plan_gateway(const struct sbx_plan_request *rq, struct sbx_plan *p,
                       const struct manifest *m, const char *digest, struct as_err *err);

/* Bounds of the workspace walk for `.env*` entries (plan_shadow.c). */
#define SBX_SHADOW_MAX_ENTRIES 1000000
#define SBX_SHADOW_MAX_DEPTH 128
#define SBX_SHADOW_MAX_HITS 4096

/* Every `.env*` entry of the canonical workspace, at any depth, as
 * workspace-relative paths: regular files into files, directories into dirs
 * (a symlink at its in-workspace target). -1 + err (and both lists empty)
 * when a bound is exceeded or a directory cannot be read. */
int sbx_i_find_env_files(const char *workspace, strvec *files, strvec *dirs, struct as_err *err);

/* sbx_plan_print for the host modes. */
void sbx_i_print_host(const struct sbx_plan *p, FILE *f, int full);

#endif
