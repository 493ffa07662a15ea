/* Internal helpers shared by the guard's files (not part of the module API). */
#ifndef AS_GUARD_INT_H
#define AS_GUARD_INT_H

#include "guard/guard.h"

/* 1 when path is dir or below it, component-wise. */
bool gi_under(const char *path, const char *dir);
/* Appends s cut to max bytes with control bytes as spaces (for reasons). */
void gi_clean(strbuf *out, const char *s, size_t max);

/* Sets a deny (first one wins). by_rule: counts as a rule denial. */
void gi_deny(struct guard_verdict *v, bool by_rule, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* " (built-in rule; deny/allow lists: <file>)" */
void gi_builtin_tail(const struct guard_ctx *x, strbuf *out);

/* The rule text and fix for a filesystem deny decision ([guard] deny or
 * [policy.filesystem] deny, machine or project). */
void gi_glob_rule(const struct guard_ctx *x, const struct pol_decision *d, strbuf *rule,
                  strbuf *fix);

/* Path checks on an absolute lexical path. token is what the agent wrote
 * (for messages, and: no bare-name spelling when it has whitespace). what:
 * "a read of", "a write to", "a delete of", "a command naming". Return 1
 * allowed, 0 denied (v filled). */
int gi_check_glob(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                  const char *outcome, struct guard_verdict *v);
/* The write check. removal: the target is deleted or renamed away, so a
 * parent of the machine home counts as the machine home. */
int gi_check_write(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                   bool removal, struct guard_verdict *v);
/* A read: deny globs, and the machine home's secrets (keys/, secrets.env,
 * audit/key). */
int gi_check_read(const struct guard_ctx *x, const char *token, const char *abs,
                  struct guard_verdict *v);
/* The same for a word a command names (wording "a command naming"). */
int gi_check_name(const struct guard_ctx *x, const char *token, const char *abs,
                  struct guard_verdict *v);

/* The targets of a patch envelope (*** Add/Update/Delete File:, *** Move
 * to:); -1 when it has more than GUARD_MAX_PATCH_LINES lines. */
int gi_envelope_targets(const char *s, strvec *out);
/* The files a unified or git diff writes (+++ / --- / rename to / copy
 * to); strip -1: each path as given and without its first component. */
void gi_diff_targets(const char *s, size_t n, int strip, strvec *out);

/* Shell judging at a nesting depth. */
void gi_judge_shell(const struct guard_ctx *x, const char *cmd, size_t len, int depth,
                    struct guard_verdict *v);

#endif
