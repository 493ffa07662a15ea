/*
 * mcp_sessions — the gateway's native-session callbacks (see mcp_sessions.c).
 */
#ifndef AS_CLI_MCP_SESSIONS_H
#define AS_CLI_MCP_SESSIONS_H

#include "gateway/gateway.h"

/* Sets o->session_start and o->session_end. */
void cli_mcp_session_hooks(struct gw_opts *o);

#endif
