/*
 * Internal to mcp/: the transport-independent client state (client.c) and
 * the hooks the stdio and HTTP transports (stdio.c, http.c) use. Nothing
 * outside src/mcp/ includes this.
 *
 * Re-entrancy rule: every entry from the loop into a client (fd callback,
 * timer) is bracketed by mcp__enter/mcp__leave, so a user callback may free
 * the client and the free waits until the outermost frame returns.
 */
#ifndef AS_MCP_CLIENT_INT_H
#define AS_MCP_CLIENT_INT_H

#include "mcp/mcp.h"

struct mcp_client;

struct mcp_transport_ops {
    enum mcp_status open_fail; /* status when open fails */
    /* Spawns/connects. -1 + err: the start fails with MCP_E_SPAWN/MCP_E_HTTP. */
    int (*open)(struct mcp_client *c, struct as_err *err);
    /* Sends one message; id is the request id, 0 for notifications and
     * replies. Failures are reported through mcp__transport_failed or
     * mcp__request_failed, from the loop. */
    void (*send)(struct mcp_client *c, const json_t *msg, uint64_t id);
    /* Sends one message already encoded as a compact line (no '\n'). May be
     * NULL: callers then build a message tree for send. */
    void (*send_raw)(struct mcp_client *c, const char *line, size_t len, uint64_t id);
    /* Stops work for one request id (HTTP aborts its transfer). May be NULL. */
    void (*abort)(struct mcp_client *c, uint64_t id);
    /* After a failure: tear down in the background (no callback). */
    void (*drop)(struct mcp_client *c, int grace_ms);
    /* Orderly close; calls mcp__closed(c) from the loop when everything is gone. */
    void (*close)(struct mcp_client *c, int grace_ms);
    /* Synchronous hard stop and free of the transport state. */
    void (*destroy)(struct mcp_client *c);
};

struct pending {
    struct mcp_client *c;
    uint64_t id; /* wire id and caller's handle */
    mcp_reply_fn cb;
    void *ctx;
    uint64_t timer;
    json_t *msg; /* the request until it is sent */
    int sent;
    int internal;         /* handshake traffic: sent while STARTING */
    int raw;              /* mcp_client_call_tool_raw: a plain success may arrive raw */
    enum mcp_status fail; /* set when completion is deferred to a 0 ms timer */
    char *fail_msg;
    struct pending *next;
};

struct mcp_client {
    struct mcp_loop *loop;
    const struct mcp_transport_ops *ops;
    void *tr;
    enum mcp_client_state state;
    char *client_name, *client_version, *want_version;
    enum mcp_handshake handshake;
    int start_timeout_ms, silence_ms, kill_grace_ms;
    size_t max_frame;
    mcp_notify_fn on_notification;
    void *notify_ctx;

    uint64_t next_id;
    size_t raw_pending;    /* live requests with raw set: worth trying mcp_raw_response */
    struct pending *live;  /* waiting for an answer (or queued until READY) */
    struct pending *limbo; /* off the wire, completion deferred to a timer */

    mcp_reply_fn start_cb;
    void *start_ctx;
    uint64_t start_timer, silence_timer, start_fail_timer;
    uint64_t start_deadline;
    uint64_t hs_discover, hs_init; /* ids of the handshake requests in flight */
    enum mcp_status start_fail;
    char *start_fail_msg;
    char *version;
    int modern;
    json_t *server_result;

    mcp_reply_fn shut_cb;
    void *shut_ctx;
    uint64_t shut_timer;

    int busy, doomed, destroying;

    /* filled by the transports */
    strbuf stderr_head;
    long pid;
    int exit_status;
    char *session_id;
};

struct mcp_client *mcp__client_new(struct mcp_loop *loop, const struct mcp_client_opts *o,
                                   const struct mcp_transport_ops *ops);

void mcp__enter(struct mcp_client *c);
/* Returns 1 when the client was destroyed (the caller must not touch it). */
int mcp__leave(struct mcp_client *c);

/* A line/frame from the server. */
void mcp__on_line(struct mcp_client *c, const char *data, size_t len);
/* A frame over the cap was dropped; id is its top-level id if known. */
void mcp__on_oversize(struct mcp_client *c, const json_t *id, size_t len);
/* The connection is gone: every pending request fails; state DEAD. */
void mcp__transport_failed(struct mcp_client *c, enum mcp_status st, const char *msg);
/* One request failed at the transport (HTTP). */
void mcp__request_failed(struct mcp_client *c, uint64_t id, enum mcp_status st, const char *msg,
                         long http_status);
/* Like mcp__request_failed, but completes from the loop: for failures found
 * inside an API call (send), where no callback may run. */
void mcp__fail_later(struct mcp_client *c, uint64_t id, enum mcp_status st, const char *msg);
/* 1 while request id is still waiting for an answer. */
int mcp__pending(const struct mcp_client *c, uint64_t id);
/* The transport finished an orderly close. */
void mcp__closed(struct mcp_client *c);

#endif
