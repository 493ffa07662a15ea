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

#include "base/err.h"
#include "bundle/manifest.h"
#include "policy/policy.h"
#include "sandbox/plan.h"

/* realpath(path), or NULL. */
char *sbx_i_canon(const char *path);

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

/* sbx_plan_print for the host modes. */
void sbx_i_print_host(const struct sbx_plan *p, FILE *f, int full);

#endif
