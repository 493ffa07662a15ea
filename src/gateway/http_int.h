/*
 * Internal to gateway/: the pieces of `agentstack mcp --listen` shared by
 * http_serve.c (sockets, requests, sessions) and http_auth.c (the bearer
 * token file, the listen address, the Origin and Host checks). See
 * docs/gateway.md, "Serving over HTTP".
 */
#ifndef AS_GATEWAY_HTTP_INT_H
#define AS_GATEWAY_HTTP_INT_H

#include <netinet/in.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "base/err.h"
#include "gateway/http_parse.h"

#define HTTP_TOKEN_MAX 256

/* Reads the token of path, or creates the file (O_EXCL, 0600) with 32
 * random bytes in hex. Refuses a symlink, anything but a regular file of
 * this user, a file group or others may read or write, and a token shorter
 * than 16 or longer than HTTP_TOKEN_MAX bytes or holding a space or control
 * byte. 0 + tok (NUL-terminated), or -1 + err. */
int http_token_load(const char *path, char tok[HTTP_TOKEN_MAX + 1], struct as_err *err);

/* Parses "HOST:PORT" (HOST an IPv4 literal, "[IPv6]" or "localhost";
 * PORT 0..65535, 0 = any free port). Refuses a non-loopback host unless
 * any. 0 + sa, or -1 + err saying what to do. */
int http_listen_addr(const char *spec, bool any, struct sockaddr_storage *sa, socklen_t *salen,
                     struct as_err *err);

/* Is this Host value (name[:port]) a loopback name or address? */
bool http_host_loopback(struct http_span host);
/* Is this Origin value http(s)://<loopback>[:port] (no path)? */
bool http_origin_loopback(struct http_span origin);
/* Authorization: "Bearer <tok>", compared in constant time. */
bool http_bearer_ok(struct http_span auth, const char *tok);

#endif
