/*
 * exec_guest — the two JavaScript files staged next to a tools_execute
 * program: bootstrap.mjs (maps `agentstack:runtime`, imports the program,
 * writes its default export as JSON to the result file) and runtime.mjs
 * (`input`, and `tools`, whose calls go to the gateway's relay).
 *
 * Why here, as text: the guest must run exactly these bytes, versioned with
 * the gateway that answers them; nothing is fetched or installed.
 * Guarantees: the bootstrap never prints guest data to stdout; a failure
 * leaves one `agentstack-error-code: <CODE>` line on stderr (CODE limited
 * to [A-Za-z0-9_-]) and exits 1; success writes only the result file and
 * exits 0. The relay token is read from /app/token, never from the env.
 */
#ifndef AS_GATEWAY_EXEC_GUEST_H
#define AS_GATEWAY_EXEC_GUEST_H

extern const char gw_exec_bootstrap_mjs[];
extern const char gw_exec_runtime_mjs[];

#endif
