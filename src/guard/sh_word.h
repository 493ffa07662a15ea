/* sh word — expansion of one parsed word, as bash would do it, as far as
 * the guard can know: brace expansion (lists and sequences), tilde, $'…'
 * (every escape), parameters whose values are known, the two command
 * substitutions whose output is known ($(pwd), $(git rev-parse
 * --show-toplevel)), field splitting of known unquoted values. Whatever is
 * not known leaves the word unresolved (with the reason) instead of
 * guessed. Internal to the guard. */
#ifndef AS_GUARD_SH_WORD_H
#define AS_GUARD_SH_WORD_H

#include "base/vec.h"
#include "guard/sh.h"

#define SH_MAX_FIELDS 4096 /* brace expansion and splitting of one word */

enum sh_pstate {
    SHV_UNKNOWN, /* not known (the environment, a read, a loop over a glob) */
    SHV_UNSET,
    SHV_SET,
};

/* What expansion needs from the judge. */
struct sh_xctx {
    void *u;
    /* A parameter's value: name is a variable name, a digit string or one of
     * @ * # ? - $ ! 0. *val is valid until the judgement ends. */
    enum sh_pstate (*param)(void *u, const char *name, const char **val);
    const char *home; /* NULL when unknown */
    const char *pwd;  /* the tracked working directory (NULL: unknown) */
    const char *oldpwd;
    /* git's toplevel of pwd, or NULL (computed only when a word asks) */
    const char *(*toplevel)(void *u);
};

/* One word after expansion. */
struct sh_xw {
    char *text;            /* NUL-terminated; unknown expansions are \x01 */
    unsigned char *active; /* per byte: 1 when unquoted (glob syntax applies) */
    size_t len;
    const char *unres;  /* the first expansion whose value is unknown, or NULL */
    const char *refuse; /* a form the guard does not evaluate, or NULL */
    bool glob;          /* an unquoted *, ? or [...] */
    bool procsub;       /* the word is a <(…) / >(…) */
    bool split_unknown; /* an unquoted unknown expansion: the word count is unknown */
    const struct sh_word *src;
};
typedef VEC(struct sh_xw) sh_xwords;

/* Expands w into fields appended to out. assignment: the value of
 * NAME=value (no brace expansion, splitting or globbing; ~ after = and :).
 * Returns 0, or -1 with *why when expansion itself is refused (a brace
 * expansion over SH_MAX_FIELDS words). */
int sh_expand(struct sh_arena *a, const struct sh_word *w, const struct sh_xctx *x, bool assignment,
              sh_xwords *out, const char **why);

/* Evaluates a $'…' body (raw text between the quotes) into out; bash stops
 * at a NUL, so does this. */
void sh_ansic(const char *raw, size_t n, strbuf *out);

/* The word's source text (for messages). */
const char *sh_word_text(struct sh_arena *a, const char *src, const struct sh_word *w);

#endif
