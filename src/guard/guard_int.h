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

/* Path checks on an absolute lexical path. token is what the agent wrote
 * (for messages, and: no bare-name spelling when it has whitespace). what:
 * "a read of", "a write to", "a delete of", "a command naming". Return 1
 * allowed, 0 denied (v filled). */
int gi_check_glob(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                  const char *outcome, struct guard_verdict *v);
int gi_check_write(const struct guard_ctx *x, const char *token, const char *abs, const char *what,
                   struct guard_verdict *v);

/* Shell judging at a nesting depth. */
void gi_judge_shell(const struct guard_ctx *x, const char *cmd, size_t len, int depth,
                    struct guard_verdict *v);

#endif
