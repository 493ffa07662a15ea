/*
 * url — the authority (host and port) of an http(s) URL, read one way.
 *
 * Why: the gateway decides egress on an HTTP upstream's host, the trust
 * card and `doctor` show it, `policy explain` judges it, the no-proxy rule
 * matches it, and libcurl dials it. Six hand-written readers of the same
 * URL disagreed in the corners (the first '@' or the last one, a port of
 * "443abc", a percent-encoded host). A host that the decision reads one
 * way and the dialler another is a way past the egress rules, so every
 * reader uses this one, and this one refuses every URL that could be read
 * two ways rather than guessing.
 *
 * Guarantees: url_authority() accepts only `http://` or `https://`
 * (either case) followed by an authority of the form
 * [userinfo@]host[:port], where the userinfo holds no second '@', the host
 * is a non-empty name or a bracketed IPv6 literal, the port is 1-65535 in
 * decimal digits only, and no byte of the authority is a control
 * character, a space, a backslash or a '%'. Anything else is refused with
 * a reason; nothing is ever partly filled on refusal. It allocates
 * nothing and reads at most the URL's bytes.
 */
#ifndef AS_BASE_URL_H
#define AS_BASE_URL_H

#include <stdbool.h>
#include <stddef.h>

#define URL_HOST_MAX 255

struct url_authority {
    bool https;                  /* the scheme: https (else http) */
    bool bracketed;              /* the host was an [IPv6] literal */
    bool has_userinfo;           /* a user[:password]@ came before the host */
    bool port_given;             /* the URL named a port */
    unsigned port;               /* the port named, or the scheme's (80, 443) */
    char host[URL_HOST_MAX + 1]; /* as written, without the brackets */
    size_t host_off;             /* where the host starts in the URL (after '[') */
    size_t authority_end;        /* offset of the first byte after the authority */
};

/* Reads url's authority into *out: 0, or -1 with *why (a static phrase
 * such as "two '@' in the URL's authority") and *out untouched. */
int url_authority(const char *url, struct url_authority *out, const char **why);

#endif
