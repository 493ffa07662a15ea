/*
 * Internal to gateway/: the control-plane tools that change the project —
 * agentstack_add_server, _add_skill, _create_toolset (and its unlisted
 * alias _create_profile), _session_start, _session_end, _session_freeze.
 *
 * Why here and why so narrow: an agent may propose a change to what the
 * project declares, but the change must be a person's to accept. So each
 * tool writes only what its name says — the manifest (or, for sessions,
 * the native files of `agentstack session start|end`, through the CLI's own
 * code behind gw_opts callbacks) — and the manifest's new bytes re-gate
 * trust: nothing it added is served, spawned or resolved until a person
 * runs `agentstack lock --write` and `agentstack trust` in a terminal.
 *
 * Guarantees (one gate, write_gate, in front of every tool):
 *  - refused under a frozen grant (a run's grant is fixed) and when the
 *    project is not trusted now (a fresh digest, in either gateway mode),
 *    with the trust refusal's text and one `trust` audit row;
 *  - nothing is run, fetched or resolved: `${REF}`s are written as given,
 *    and a literal secret in env, headers, args or url is refused (use a
 *    ${REF}); paths stay inside the project;
 *  - the write is atomic, under the machine writer lock, format-preserving,
 *    and only when the result still loads as a manifest;
 *  - every string echoed back passes the hostile-text filter.
 */
#ifndef AS_GATEWAY_CONTROL_WRITE_H
#define AS_GATEWAY_CONTROL_WRITE_H

#include <jansson.h>

struct gw;
struct job;

json_t *gw_t_add_server(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_add_skill(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_create_toolset(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_session_start(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_session_end(struct gw *gw, struct job *j, const json_t *args);
json_t *gw_t_session_freeze(struct gw *gw, struct job *j, const json_t *args);

#endif
