/*
 * policy — the machine floor and the project's requested policy, compiled
 * into one ruleset that every enforcer (gateway, egress proxy, host guard,
 * sandbox planner) consults.
 *
 * Why it exists: a repository may narrow what its agents can do, but it must
 * never loosen what the machine owner decided. Keeping the grammar, the
 * layer combination and the decisions in one place means there is exactly
 * one answer to "may server S call tool T / reach host H / read ${REF} /
 * write the workspace", and every refusal names the rule and the layer that
 * produced it.
 *
 * Guarantees:
 *  - Invariant: for every project layer B and machine layer M, whatever the
 *    machine layer alone denies, the compiled ruleset denies (effective(B, M)
 *    is a subset of M in every dimension). Filesystem `deny` is a union;
 *    filesystem `write` with no list in either layer is deny-by-default.
 *  - Patterns are validated when a layer is built: bad grammar is an error
 *    with path:line:col, never a silently empty rule. URL-shaped egress
 *    patterns are refused.
 *  - Deny patterns match tool and secret names ASCII-case-insensitively
 *    (`!delete_*` blocks `DELETE_all`); allow patterns are case-sensitive.
 *    Hosts (subjects and patterns) are lowercased, lose one trailing dot,
 *    numeric IPv4 spellings become dotted quads, IPv6 is canonicalized, and
 *    Unicode patterns become their xn-- form; a non-ASCII subject host is
 *    refused.
 *  - Decisions never allocate and never fail open: a ruleset whose version
 *    is newer than this build, a malformed compiled pattern, or an invalid
 *    subject all deny.
 *  - policy/ knows no manifest types: it takes rule lists (or the TOML value
 *    of a [policy] table) and answers decisions.
 */
#ifndef AS_POLICY_POLICY_H
#define AS_POLICY_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"
#include "base/vec.h"

/* Wire-format version of the compiled ruleset (2 added :port, 3 added
 * gateway_only_hosts). A ruleset claiming a larger version denies everything. */
#define POL_WIRE_VERSION 3

/* Authoring caps: exceeding one is an error when a layer is
 * built and a fail-closed (malformed) rule when a compiled ruleset is loaded. */
#define POL_MAX_PATTERN 512     /* bytes, tools/egress/secrets entries */
#define POL_MAX_FS_PATTERN 4096 /* bytes, filesystem globs */
#define POL_MAX_STARS 16        /* '*' runs per pattern */
#define POL_MAX_ENTRIES 4096    /* entries per key / per filesystem list */
#define POL_MAX_KEYS 4096       /* keys per keyed dimension */
#define POL_HOST_MAX 253        /* normalized host name bytes */

enum pol_dim {
    POL_TOOLS,
    POL_EGRESS,
    POL_SECRETS,
    POL_FS_READ,
    POL_FS_WRITE,
    POL_FS_DENY,
    POL_NDIMS
};
#define POL_NKEYED 3 /* tools, egress, secrets are keyed by server */

enum pol_layer_id { POL_MACHINE = 0, POL_PROJECT = 1 };

/* ---- layers: the rule lists as one file wrote them ---------------------- */

struct pol_rule {
    char *text;    /* as written, including a leading '!' */
    char *canon;   /* normalized rule without '!' (egress: host[:port|:*]) */
    char *pat;     /* what subjects are matched against (egress: the host glob) */
    uint16_t port; /* egress: pinned port, 0 = any */
    unsigned deny : 1;
    unsigned line, col;
};

struct pol_key {
    char *name; /* server name, or "*" for every server */
    unsigned line, col;
    VEC(struct pol_rule) rules;
};

struct pol_keyed {
    VEC(struct pol_key) keys; /* file order */
};

struct pol_fslist {
    VEC(struct pol_rule) globs; /* file order; never '!' (literal in fs lists) */
    unsigned present : 1;       /* the key was written (even as []) */
    unsigned line, col;
};

/* [policy.workflows] caps; effective = min(request, cap). -1 = unset. */
struct pol_workflow_caps {
    int64_t max_agents, max_wall_seconds, max_concurrent, max_resident_result_bytes;
};

/* [policy.isolation] servers: how a gateway runs stdio servers. */
enum pol_isolation {
    POL_ISO_UNSET = -1,
    POL_ISO_HOST = 0,     /* as the user, on the host */
    POL_ISO_CONFINED = 1, /* each in a jail of its own (docs/enforcement.md) */
};

/* One layer. Read-only for users; build with pol_layer_* functions. */
struct pol_layer {
    enum pol_layer_id id;
    char *path; /* source file, for messages (may be NULL) */
    struct pol_keyed keyed[POL_NKEYED];
    struct pol_fslist fs[3]; /* read, write, deny */
    strvec require, forbid, allowed_sources;
    struct pol_workflow_caps workflows;
    enum pol_isolation isolation; /* [policy.isolation] servers, or POL_ISO_UNSET */
};

struct pol_layer *pol_layer_new(enum pol_layer_id id, const char *path);
void pol_layer_free(struct pol_layer *l);
/* Declares key in a keyed dimension (an empty list is "no rule", but explain
 * shows it). Returns the key. */
struct pol_key *pol_layer_key(struct pol_layer *l, enum pol_dim dim, const char *key, unsigned line,
                              unsigned col);
/* Adds one entry. Keyed dimensions: key is a server name or "*", entry may
 * start with '!'. Filesystem dimensions: key is ignored, entry is a glob.
 * Validates the grammar; on error err names path:line:col (when line != 0)
 * and the fix, and the layer is unchanged. */
int pol_layer_add(struct pol_layer *l, enum pol_dim dim, const char *key, const char *entry,
                  unsigned line, unsigned col, struct as_err *err);
/* True when the layer has no rule in any dimension (workflows etc. ignored). */
int pol_layer_is_empty(const struct pol_layer *l);

/* Builds a layer from the value of a [policy] table (NULL = empty layer).
 * Strict: unknown keys are errors with a did-you-mean, wrong types are
 * errors, all at path:line:col. */
struct pol_layer *pol_layer_from_toml(const toml_value *policy_table, const char *path,
                                      enum pol_layer_id id, struct as_err *err);

/* ---- the machine file --------------------------------------------------- */

enum pol_machine_state {
    POL_UNCONFIGURED, /* no $AGENTSTACK_HOME/agentstack.toml: empty floor */
    POL_CURRENT,      /* parsed and valid */
    POL_BLOCKED,      /* present but broken: every enforcement path refuses */
};

/* Loads the machine layer from path (normally $AGENTSTACK_HOME/agentstack.toml).
 * Absent → *state = POL_UNCONFIGURED and an empty layer. Broken (unreadable,
 * > 8 MiB, bad TOML, version != 1, unknown root key, any [policy] error) →
 * NULL, *state = POL_BLOCKED, err names path:line:col, contains
 * "refusing to continue", and err.hint says how to fix it. There is no
 * last-known-good fallback. */
struct pol_layer *pol_machine_load(const char *path, enum pol_machine_state *state,
                                   struct as_err *err);
/* The checks of pol_machine_load on bytes already read (for writers that
 * must validate a new machine file before replacing the old one). NULL +
 * err (path:line:col, hint) when the text would be BLOCKED. */
struct pol_layer *pol_machine_parse(const char *path, const char *data, size_t len,
                                    struct as_err *err);
/* The machine file path: $AGENTSTACK_HOME/agentstack.toml, else
 * $HOME/.agentstack/agentstack.toml. -1 + err when neither is set. */
int pol_machine_path(strbuf *out, struct as_err *err);

/* ---- the compiled ruleset ----------------------------------------------- */

struct pol_ruleset;

/* Compiles machine ∩ project (either may be NULL). home is used only to
 * expand a leading ~, $HOME or ${HOME} in filesystem deny globs; NULL with
 * such a glob is an error. */
struct pol_ruleset *pol_compile(const struct pol_layer *machine, const struct pol_layer *project,
                                const char *home, struct as_err *err);
/* A ruleset that denies every decision with reason (for consumers that could
 * not load one: fail closed, never fall back to project-only policy). */
struct pol_ruleset *pol_ruleset_deny_all(const char *reason);
void pol_ruleset_free(struct pol_ruleset *rs);
/* Lockdown only: declared MCP hosts, denied on every port before any egress
 * rule (they are reachable through the gateway relay only). Hosts are
 * normalized; a host that is not canonical is an error. */
int pol_ruleset_set_gateway_only(struct pol_ruleset *rs, const char *const *hosts, size_t n,
                                 struct as_err *err);

/* Wire form: compact JSON, byte-identical for equal inputs. */
void pol_ruleset_to_json(const struct pol_ruleset *rs, strbuf *out);
/* Parses the wire form strictly (unknown fields, wrong types → NULL + err).
 * A version newer than POL_WIRE_VERSION loads as a ruleset that denies
 * everything (fail closed); a pattern that does not parse becomes a
 * malformed rule that denies every decision it takes part in. */
struct pol_ruleset *pol_ruleset_from_json(const char *text, size_t len, struct as_err *err);

/* ---- decisions ---------------------------------------------------------- */

/* Who decided. */
enum pol_by {
    POL_BY_NONE, /* allowed: nothing objected */
    POL_BY_MACHINE,
    POL_BY_PROJECT,
    POL_BY_DEFAULT, /* filesystem write: deny-by-default */
    POL_BY_SYSTEM,  /* ruleset version, gateway-only host, invalid subject */
};

enum pol_why {
    POL_ALLOWED,
    POL_DENY_RULE,       /* a '!' rule matched: pattern */
    POL_NOT_ALLOWLISTED, /* an allowlist was missed: allowlist[0..n_allow) */
    POL_MALFORMED,       /* a malformed compiled pattern: pattern */
    POL_DEFAULT_DENY,    /* filesystem write with no scope anywhere */
    POL_VERSION,         /* ruleset newer than this build */
    POL_GATEWAY_ONLY,    /* lockdown: host served through the gateway relay */
    POL_BAD_SUBJECT,     /* subject fails its grammar (non-ASCII host, bad tool name) */
    POL_UNAVAILABLE,     /* deny-all ruleset: reason */
    POL_LOCAL_ADDRESS,   /* egress address in a local class no rule names: subject, reason */
};

/* A decision. Pointers refer into the ruleset (and subject into the caller's
 * string): valid while both live. */
struct pol_decision {
    int allow;
    enum pol_dim dim;
    enum pol_by by;
    enum pol_why why;
    const char *pattern;          /* rule text without '!' (DENY_RULE, MALFORMED) */
    const char *const *allowlist; /* NOT_ALLOWLISTED: the allowlist that missed */
    size_t n_allow;
    const char *subject; /* the subject as given */
    int version;         /* POL_VERSION: the ruleset's version */
    const char *reason;  /* POL_UNAVAILABLE */
};

/* Keyed decisions. server is the manifest's server name (a server named "*"
 * is governed only by "*" rules). port: egress query port, 0 = none given
 * (write/spawn-time checks: pinned ports are then ignored). Returns 1 allow,
 * 0 deny, and fills d (may be NULL). */
int pol_decide(const struct pol_ruleset *rs, enum pol_dim dim, const char *server,
               const char *subject, unsigned port, struct pol_decision *d);
static inline int pol_tool(const struct pol_ruleset *rs, const char *server, const char *tool,
                           struct pol_decision *d)
{
    return pol_decide(rs, POL_TOOLS, server, tool, 0, d);
}
static inline int pol_egress(const struct pol_ruleset *rs, const char *server, const char *host,
                             unsigned port, struct pol_decision *d)
{
    return pol_decide(rs, POL_EGRESS, server, host, port, d);
}
static inline int pol_secret(const struct pol_ruleset *rs, const char *server, const char *ref,
                             struct pol_decision *d)
{
    return pol_decide(rs, POL_SECRETS, server, ref, 0, d);
}

/* ---- egress by address (address.c) -------------------------------------- */

#define POL_ADDR_TEXT_MAX 48 /* canonical address text, NUL included */

/* Canonical text of an address (family AF_INET/AF_INET6, addr its bytes):
 * IPv4 dotted quad; an IPv6 address reaching an IPv4 one (::ffff:a.b.c.d,
 * ::a.b.c.d, 64:ff9b::a.b.c.d) as that IPv4 address; other IPv6 as inet_ntop
 * writes it; 0.0.0.0 as 127.0.0.1 and :: as ::1 (what dialling them
 * reaches). Host normalization renders IP literals the same way. -1 for
 * another family or n < 16. */
int pol_addr_text(int family, const void *addr, char *out, size_t n);
int pol_addr_canon(const struct sockaddr *sa, char *out, size_t n);
/* The class of an address egress never dials unless named — "loopback",
 * "unspecified", "private", "CGNAT", "link-local" (169.254.169.254
 * included), "documentation", "benchmarking", "multicast", "reserved"
 * (every IPv6 address outside 2000::/3 but fe80::/10, fc00::/7 and ff00::/8,
 * which have their own names; 6to4, Teredo, ORCHID) — or NULL for a global
 * address. Mapped and compatible IPv6 addresses are judged as their IPv4
 * address. Another family: "not an IP address". */
const char *pol_addr_local_class(const struct sockaddr *sa);

enum pol_local {
    POL_LOCAL_NAMED, /* a local address only where an allow rule names it (the gateway) */
    POL_LOCAL_NEVER, /* never a local address (the sandbox egress proxy) */
    POL_LOCAL_ANY,   /* local addresses like any other (proxy test allowance only) */
};

/* Rules on one address that host (normalized; NULL when the destination was
 * the address itself) resolved to, after the host passed pol_egress. 1 =
 * the address may be dialled. Refused (0, d filled, addr = its canonical
 * text): any deny rule of either layer matching the address; an address in
 * a local class (pol_addr_local_class) unless `local` allows it — under
 * POL_LOCAL_NAMED, a star-free allow entry of either layer (key server or
 * "*", port pin honoured) equal to the address or to host names it. The
 * machine layer's denies still win over such an allow. */
int pol_egress_address(const struct pol_ruleset *rs, const char *server, const char *host,
                       const struct sockaddr *sa, unsigned port, enum pol_local local,
                       char addr[POL_ADDR_TEXT_MAX], struct pol_decision *d);
/* [policy.isolation] servers in effect: CONFINED when either layer asks
 * for it — a project may ask, and can never turn the machine's setting off
 * — and for a ruleset that denies everything (fail closed). *by (may be
 * NULL) gets the layer that asked (POL_BY_MACHINE first), else
 * POL_BY_NONE. */
enum pol_isolation pol_isolation_of(const struct pol_ruleset *rs, enum pol_by *by);

/* May the sandbox mount the workspace read-write? 1 rw, 0 read-only (d says
 * why: deny-by-default, or the layer whose write list does not cover it). */
int pol_fs_workspace_writable(const struct pol_ruleset *rs, struct pol_decision *d);
/* Filesystem deny: 0 (denied) when any spelling matches any deny glob of
 * either layer (machine first), else 1. spellings: see pol_fs_spellings. */
int pol_fs_allowed(const struct pol_ruleset *rs, const char *const *spellings, size_t n,
                   struct pol_decision *d);
/* Could some path matching a shell glob be denied? queries are spellings
 * of one shell pattern (absolute, workspace-relative, bare name) in which
 * '*' is any run without '/', '?' one byte other than '/', "**" any run,
 * and every other byte literal (callers turn bracket expressions into '?').
 * 0 (d says which rule) when any query and any deny glob of either layer
 * have a string in common; 1 otherwise. Exact for this grammar; a query
 * pair too large to decide (over 2^22 states) counts as a match. */
#define POL_MAY_DENY_NAMED 1 /* see pol_fs_may_deny */
/* flags POL_MAY_DENY_NAMED: a deny glob scoped to a directory (a literal
 * "secrets/" then a wildcard) counts for a query that reaches it only
 * through a "**" when the query's text before its first "**" already names
 * that directory: a recursive pattern over *.ts files names no denied
 * directory. */
int pol_fs_may_deny(const struct pol_ruleset *rs, const char *const *queries, size_t n, int flags,
                    struct pol_decision *d);
/* The intersection test itself: does some string match both the policy
 * glob pat (spec grammar) and the shell query q (grammar above)? */
int pol_glob_intersects(const char *pat, size_t plen, const char *q, size_t qlen);

/* Lexical spellings of path for pol_fs_allowed: ~/$HOME expanded (home may be
 * NULL), joined to workspace when relative, "." and ".." resolved lexically;
 * pushes the absolute path, the workspace-relative path when inside the
 * workspace, and (with_basename) the bare file name. The host guard adds
 * the symlink-resolved forms itself. */
void pol_fs_spellings(const char *path, const char *workspace, const char *home, int with_basename,
                      strvec *out);

/* Refusal text (docs/policy.md, "Refusal text"):
 *   denied by [policy.tools] rule "!delete_*"
 *   not in the [policy.tools] allowlist (get_*, list_*)
 * + " (machine policy — ~/.agentstack/agentstack.toml)" for the machine layer.
 * Appends to out; nothing for an allow. */
void pol_decision_text(const struct pol_decision *d, strbuf *out);
/* Short report form: denied by rule "!delete_*" (machine policy). */
void pol_decision_short(const struct pol_decision *d, strbuf *out);
/* "machine", "project", "deny-by-default", "system", "" — the audit `layer`. */
const char *pol_by_name(enum pol_by by);
/* "[policy.tools]", "[policy.egress]", "[policy.secrets]",
 * "[policy.filesystem] read|write|deny". */
const char *pol_dim_display(enum pol_dim dim);

/* ---- grammar helpers (shared with validators and the proxy) ------------- */

/* Anchored byte-wise glob match of docs/policy.md "Globs" ('*' = any run, all else
 * literal); nocase folds ASCII letters. */
int pol_glob_match(const char *pat, size_t plen, const char *s, size_t n, int nocase);

/* Normalizes a subject host (a CONNECT host, a URL host): optional [v6]
 * brackets removed, one trailing '.' dropped, ASCII-lowercased, numeric IPv4
 * spellings (2852039166, 0xA9FEA9FE, 0251.254.169.254, 169.254.43518) turned
 * into dotted quads, IPv6 canonicalized. Refuses (-1, *why set) non-ASCII,
 * empty, over-long, and anything that is neither an LDH/underscore name nor
 * an IP literal. out must hold POL_HOST_MAX + 1 bytes. */
int pol_host_normalize(const char *host, size_t len, char *out, const char **why);

/* Parses one egress entry (without its '!'): host | host:port | host:* |
 * bare IPv6 | [v6] | [v6]:* | [v6]:N. The host may be a glob and may be
 * Unicode (converted to xn--). On success fills host (normalized glob,
 * POL_HOST_MAX + 1 bytes), *port (0 = any) and canon (the normalized entry,
 * POL_MAX_PATTERN + 1 bytes); on error returns -1 and *why. */
int pol_egress_parse(const char *entry, char *host, uint16_t *port, char *canon, const char **why);
/* Test seam: the sonames tried when a Unicode label first needs libidn2
 * (NULL restores the default). */
void pol__idn2_set_names(const char *const *names);

/* ---- explain and doctor ------------------------------------------------- */

/* Appends the summary of one key's list: "allow only [a, b]; deny [x]". */
void pol_summary(const struct pol_key *k, strbuf *out);
/* Appends the explain rows for server (either layer may be NULL):
 * "Tool policy", "Egress (policy)", "Secret access (policy)" for the project,
 * "Tool policy (machine)", "Egress (machine)", "Secret access (machine)" for
 * the machine, one line per key that governs the server ("*" rows say
 * (via "*")); machine rows end with "this project cannot loosen it". */
void pol_explain_rows(const struct pol_layer *machine, const struct pol_layer *project,
                      const char *server, strbuf *out);
/* How stdio servers run under these layers, one line: "confined — …" or
 * "host — …" (the layer that asked, or how to ask). */
void pol_isolation_text(const struct pol_layer *machine, const struct pol_layer *project,
                        strbuf *out);
/* The "Isolation" row of explain: the same text after the label. */
void pol_isolation_row(const struct pol_layer *machine, const struct pol_layer *project,
                       strbuf *out);
/* Doctor's one-word verdict on the machine layer: "open", "restrictive"
 * (a "*" rule or a narrowing filesystem scope), "mixed" (named keys only);
 * why gets the reason. For unconfigured/blocked use the load state. */
const char *pol_machine_word(const struct pol_layer *machine, strbuf *why);
/* `policy test`'s near miss: the text of a tool deny rule (either layer, key
 * server or "*") that does not match tool as written but would once '-' and
 * '.' in both were read as '_' (`!delete_*` vs `delete-all`, `delete.all`),
 * with *by its layer; NULL when none. Globs are literal: such a tool is
 * allowed, and this says so. */
const char *pol_tool_near_miss(const struct pol_ruleset *rs, const char *server, const char *tool,
                               enum pol_by *by);
/* Doctor's warnings: each named-key machine deny without the same "*" deny
 * (a repo can dodge it by renaming its server). One line per finding. */
void pol_machine_lint(const struct pol_layer *machine, strvec *warnings);

/* ---- presets ------------------------------------------------------------ */

struct pol_preset {
    const char *name; /* developer, compatible, locked-down, ci */
    const char *summary;
    const char *text; /* a complete machine manifest (TOML) */
};
extern const struct pol_preset pol_presets[];
extern const size_t pol_npresets;
const struct pol_preset *pol_preset_find(const char *name);
/* The machine file's new text for preset p: old == NULL (no
 * file) → the preset file whole; else only [policy.tools|egress|secrets|
 * filesystem|isolation] change (replaced, or removed when the preset has none), every
 * other byte — comments, [guard], [policy] require/forbid/allowed_sources/
 * workflows — stays. Validate the result with pol_machine_parse before
 * writing it. -1 + err when old is not TOML. */
int pol_preset_apply(const struct pol_preset *p, const char *path, const char *old, size_t len,
                     strbuf *out, struct as_err *err);

#endif
