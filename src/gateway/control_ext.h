/*
 * Internal to gateway/: the read-only control-plane tools that describe the
 * project rather than proxy it — agentstack_list, _explain, _search and
 * _diff (ext tier; docs/gateway.md) — and the sweep of code-mode endpoint directories
 * a killed gateway left behind.
 *
 * Why separate: these tools only read (manifest, lock, trust store, policy
 * files, the central library through a callback) and never write into the
 * project, so they share none of the dispatch path's state.
 *
 * Guarantees: no secret value is ever read or printed (references appear by
 * name, env and header tables by key only); every string that came from a
 * repository is passed through the hostile-text filter; an untrusted or
 * changed project (auto mode) gets names and the trust note only, no
 * bundle content.
 */
#ifndef AS_GATEWAY_CONTROL_EXT_H
#define AS_GATEWAY_CONTROL_EXT_H

#include <jansson.h>

struct gw;
struct job;

json_t *gw_t_list(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_explain(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_search(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_diff(struct gw *gw, struct job *j, const json_t *args);

/* Removes $home/gateway/<pid>/ directories whose pid is dead (a SIGKILLed
 * gateway cannot delete its endpoint.json). Only real directories owned by
 * this user are touched; symlinks are never followed (at either level),
 * this process's own directory and any live pid's are kept — unless that
 * pid started after the directory's endpoint.json was written (pid reuse). Best-effort:
 * returns how many directories were removed. */
int gw_cm_sweep(const char *home);

#endif
