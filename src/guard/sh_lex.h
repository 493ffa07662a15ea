/* sh lex — the reader's tokenizer state, shared by sh_lex.c (words,
 * tokens, heredocs) and sh_parse.c (the grammar). Internal to the guard. */
#ifndef AS_GUARD_SH_LEX_H
#define AS_GUARD_SH_LEX_H

#include "base/strbuf.h"
#include "guard/sh.h"

#define MAX_PENDING 64

enum tk {
    TK_EOF,
    TK_WORD,
    TK_NL,
    TK_SEMI,
    TK_AMP,
    TK_PIPE,
    TK_PIPEAMP,
    TK_AND,
    TK_OR,
    TK_LPAREN,
    TK_RPAREN,
    TK_DSEMI,    /* ;; */
    TK_SEMIAMP,  /* ;& */
    TK_DSEMIAMP, /* ;;& */
    TK_REDIR,
};

struct tok {
    enum tk k;
    size_t start, end;
    struct sh_word w;
    enum sh_redir_kind rk;
    int fd;
    bool named_fd, strip, heredoc, herestr, dup_out, dup_in;
};

struct P {
    struct sh_arena *a;
    const char *s;
    size_t n, i;
    int nest;
    const char *err;
    size_t err_off;
    struct sh_redir *pend[MAX_PENDING];
    char *pend_delim[MAX_PENDING];
    size_t npend;
    bool have;
    struct tok t;
};

struct parts {
    struct sh_part *v;
    size_t n, cap;
    strbuf lit; /* the literal run being built */
    bool lit_q, has_quotes;
};

enum wmode {
    WM_NORMAL,  /* a shell word: ends at a metacharacter */
    WM_DQ,      /* inside "…": ends at '"' */
    WM_HEREDOC, /* a heredoc body: ends at P->n (the caller narrows it) */
    WM_PARAM,   /* the word of ${x…w}: ends at '}' (and '/' with stop_slash) */
    WM_REGEX,   /* the right side of =~ in [[ ]]: ends at a blank */
};

bool shp_fail(struct P *P, size_t at, const char *why);
void shp_flush_lit(struct P *P, struct parts *ps);
void shp_add_lit(struct P *P, struct parts *ps, char c, bool quoted);
struct sh_part *shp_add_part(struct P *P, struct parts *ps, enum sh_part_kind k, bool quoted);
void shp_finish_word(struct P *P, struct parts *ps, struct sh_word *w, size_t start);
bool shp_lex_parts(struct P *P, struct parts *ps, enum wmode m, bool stop_slash);
bool shp_is_meta(char c);
/* $((…)) starting after "$((": the index of the closing "))", or 0. */
size_t shp_arith_end(const char *s, size_t n, size_t i);
/* Reads the bodies of the pending heredocs; P->i is at a line start. */
void shp_read_heredocs(struct P *P);
struct tok *shp_peek(struct P *P);
struct tok shp_take(struct P *P);
/* The text of a word that is one unquoted literal, else NULL. */
const char *shp_plain(const struct sh_word *w);
bool shp_tok_is(struct P *P, const char *kw);
void shp_linebreak(struct P *P);
struct sh_node *shp_node_new(struct P *P, enum sh_kind k, size_t start);
/* $( … ) and <( … ) bodies in the same buffer: parsed to the matching ')'. */
struct sh_node *shp_parse_sub(struct P *P, size_t *end);
/* A separate buffer (a `…` body); errors are reported at offset at. */
struct sh_node *shp_parse_text(struct P *P, const char *src, size_t n, size_t at);

#endif
