/*
 * Internal to gateway/: native sessions as seen over MCP (ext tier; docs/gateway.md).
 *
 * Why a view here: agentstack_session_list only reads
 * $AGENTSTACK_HOME/sessions.json (through gw_opts.session_list: that file
 * belongs to adapters/, which sits above this module). Starting and ending
 * a session write the CLIs' native files, so they run the CLI's own code
 * behind gw_opts callbacks, gated in control_write.c.
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
