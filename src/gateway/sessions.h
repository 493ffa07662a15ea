/*
 * Internal to gateway/: native sessions as seen over MCP (ext tier; docs/gateway.md).
 *
 * Why only a view: a native session writes the harness's own files into the
 * project (.mcp.json, skills, settings) and its end rewrites them, and
 * nothing in the gateway may write into the project except lease_freeze
 * (the manifest only). So agentstack_session_start, _end and _freeze are not
 * built and not listed; agentstack_session_list is, because it
 * only reads $AGENTSTACK_HOME/sessions.json (through gw_opts.session_list:
 * that file belongs to adapters/, which sits above this module).
 *
 * Guarantees: nothing is written anywhere; only this connection's project's
 * session is reported (other projects' paths on the machine are never shown
 * to an agent); every string from the record passes the hostile-text filter.
 */
#ifndef AS_GATEWAY_SESSIONS_H
#define AS_GATEWAY_SESSIONS_H

#include <jansson.h>

#include "base/err.h"
#include "base/strbuf.h"

struct gw;
struct job;

/* Is a native session active for this connection's project (it
 * refuses a lease)? 1 + its toolset (hostile-text filtered) appended to
 * `toolset`; 0 when none, or when no project or no session reader is bound;
 * -1 + err when the record cannot be read. Reads only. */
int gw_native_session(struct gw *gw, strbuf *toolset, struct as_err *err);
json_t *gw_t_session_list(struct gw *gw, struct job *j, const json_t *args);

#endif
