/*
 * sh — the host guard's shell reader (internal to the guard module).
 *
 * Why: a guard that splits command text by hand judges what it understood
 * and lets everything else through. This reader parses the bash dialect
 * agents write into a tree — lists, pipelines, && / ||, subshells, groups,
 * if/while/until/for/case, [[ ]], (( )), function definitions — and each
 * word into its parts (literal runs, quotes, $'…', ${…}, $(…), `…`, $((…)),
 * <(…)), so that the judge can resolve every word it needs or refuse the
 * command as unreadable.
 *
 * Guarantees:
 *  - Parsing never fails open: anything this reader does not know (a
 *    syntax error, an unterminated quote, a construct it does not model)
 *    makes sh_parse return NULL with the reason and the byte offset; the
 *    guard then denies.
 *  - Bounded: nesting (compound commands, $(…), ${…}) is capped at
 *    SH_MAX_NEST; the whole tree lives in one arena freed at once; every
 *    scan is linear in the input (heredoc delimiters are matched per line).
 *  - Offsets (start/end) index the source the node was parsed from; bodies
 *    of `…` are unescaped into their own buffer (src of the sub-tree).
 */
#ifndef AS_GUARD_SH_H
#define AS_GUARD_SH_H

#include <stdbool.h>
#include <stddef.h>

#define SH_MAX_NEST 48

/* ---- arena --------------------------------------------------------------- */

struct sh_chunk;
struct sh_arena {
    struct sh_chunk *head;
};
void *sh_alloc(struct sh_arena *a, size_t n); /* zeroed */
char *sh_strndup(struct sh_arena *a, const char *s, size_t n);
void sh_arena_free(struct sh_arena *a);

/* ---- words --------------------------------------------------------------- */

enum sh_part_kind {
    SP_LIT,     /* literal bytes; quoted ones are never syntax (glob, brace, ~) */
    SP_ANSIC,   /* $'…' raw text, escapes not yet evaluated */
    SP_PARAM,   /* $name, ${…} */
    SP_CMDSUB,  /* $(…) or `…` */
    SP_ARITH,   /* $((…)) raw text */
    SP_PROCSUB, /* <(…) or >(…), a whole word */
    SP_ARRAY,   /* the (…) of name=(…): words */
};

enum sh_param_op {
    PO_PLAIN,       /* $x ${x} */
    PO_DEFAULT,     /* ${x-w} ${x:-w} */
    PO_ASSIGN,      /* ${x=w} ${x:=w} */
    PO_ALT,         /* ${x+w} ${x:+w} */
    PO_ERROR,       /* ${x?w} ${x:?w} */
    PO_LENGTH,      /* ${#x} */
    PO_TRIM,        /* ${x#p} ${x##p} ${x%p} ${x%%p} */
    PO_SUBST,       /* ${x/p/r} ${x//p/r} ${x/#p/r} ${x/%p/r} */
    PO_CASE,        /* ${x^} ${x^^} ${x,} ${x,,} */
    PO_UNSUPPORTED, /* ${!x}, ${x[…]}, ${x:off}, ${x@op}: not evaluated */
};

struct sh_word;
struct sh_node;

struct sh_part {
    enum sh_part_kind kind;
    bool quoted;      /* inside "…" (or a backslash escape for SP_LIT) */
    const char *text; /* SP_LIT bytes; SP_ANSIC/SP_ARITH raw; SP_PARAM name */
    size_t len;
    /* SP_PARAM */
    enum sh_param_op op;
    bool colon;              /* the ':' forms */
    struct sh_word *opword;  /* the word of -,=,+,?,#,%,/ forms (NULL if none) */
    struct sh_word *opword2; /* the replacement of / forms */
    const char *why;         /* PO_UNSUPPORTED: what it is */
    /* SP_CMDSUB, SP_PROCSUB */
    struct sh_node *body;
    const char *body_src; /* the buffer body offsets refer to */
    size_t body_start, body_end;
    bool out; /* SP_PROCSUB: >(…) */
    /* SP_ARRAY */
    struct sh_word *elems;
    size_t nelems;
};

struct sh_word {
    struct sh_part *parts;
    size_t nparts;
    size_t start, end; /* source span */
    bool has_quotes;   /* any quoting at all ("" is an empty word, not none) */
};

/* ---- redirections -------------------------------------------------------- */

enum sh_redir_kind {
    RK_IN,      /* < */
    RK_OUT,     /* > >| */
    RK_APPEND,  /* >> */
    RK_RDWR,    /* <> */
    RK_ANDOUT,  /* &> &>> >& word (both streams to a file) */
    RK_DUP,     /* n>&m n<&m n>&- */
    RK_HEREDOC, /* << <<- */
    RK_HERESTR, /* <<< */
};

struct sh_redir {
    enum sh_redir_kind kind;
    int fd;        /* explicit fd, or -1 */
    bool named_fd; /* {var}> form */
    struct sh_word target;
    /* RK_HEREDOC */
    bool strip_tabs;
    bool literal;     /* quoted delimiter: the body is not expanded */
    const char *body; /* raw body bytes (without the delimiter line) */
    size_t body_len;
    struct sh_word *body_word; /* unquoted delimiter: the body's expansions */
};

/* ---- nodes --------------------------------------------------------------- */

enum sh_kind {
    SN_SIMPLE,
    SN_PIPE,     /* a | b (pipe_err: |&) */
    SN_AND,      /* a && b */
    SN_OR,       /* a || b */
    SN_SEQ,      /* a ; b, a newline b */
    SN_BG,       /* a & */
    SN_NOT,      /* ! a */
    SN_SUBSHELL, /* ( a ) */
    SN_GROUP,    /* { a; } */
    SN_IF,
    SN_WHILE,
    SN_UNTIL,
    SN_FOR, /* for/select */
    SN_CASE,
    SN_ARITH, /* (( … )) and for (( … )) headers */
    SN_COND,  /* [[ … ]] */
    SN_FUNC,  /* a function definition */
    SN_COPROC,
};

struct sh_case_arm {
    struct sh_word *pats;
    size_t npats;
    struct sh_node *body; /* may be NULL */
};

struct sh_node {
    enum sh_kind kind;
    size_t start, end; /* source span */
    const char *src;   /* the buffer start/end refer to */
    /* SN_SIMPLE: words (leading NAME=value assignments first) */
    struct sh_word *words;
    size_t nwords, nassign;
    /* any command: redirections */
    struct sh_redir **redirs;
    size_t nredirs;
    /* binary forms, SN_NOT/SN_BG/SN_SUBSHELL/SN_GROUP/loops (a = cond, b = body) */
    struct sh_node *a, *b;
    bool pipe_err;
    /* SN_IF: conds[i] then bodies[i]; els */
    struct sh_node **conds, **bodies;
    size_t nclauses;
    struct sh_node *els;
    /* SN_FOR: var, list (NULL with no `in`: "$@"), arith header */
    const char *var;
    struct sh_word *list;
    size_t nlist;
    bool has_in;
    bool arith_for;
    /* SN_CASE */
    struct sh_word subject;
    struct sh_case_arm *arms;
    size_t narms;
    /* SN_ARITH: raw text */
    const char *text;
    size_t tlen;
    /* SN_COND: the words between [[ and ]] */
    struct sh_word *cwords;
    size_t ncwords;
    /* SN_FUNC */
    const char *fname;
};

/* Parses src[0..n). NULL + *err (static text) and *err_off on failure. The
 * tree and every string in it live in a. */
struct sh_node *sh_parse(struct sh_arena *a, const char *src, size_t n, const char **err,
                         size_t *err_off);

/* True when name is a valid shell identifier of length n. */
bool sh_is_name(const char *s, size_t n);

#endif
