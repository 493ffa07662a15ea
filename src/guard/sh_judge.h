/* sh judge — the shell judgement shared by sh_eval.c (the walk over the
 * tree, the states a command can run in, simple commands) and the rule
 * tables (sh_rules_fs.c, sh_rules_exec.c). Internal to the guard. */
#ifndef AS_GUARD_SH_JUDGE_H
#define AS_GUARD_SH_JUDGE_H

#include "guard/guard_int.h"
#include "guard/sh.h"
#include "guard/sh_word.h"

#define SH_MAX_STATES 8  /* distinct shell states tracked through one command */
#define SH_MAX_GLOB 1024 /* files one glob may match and still be judged */

/* A variable assigned inside the command (val NULL: unknown). */
struct sh_var {
    const char *name;
    const char *val;
    bool unset;
};

/* One state the shell can be in when a command runs. Everything lives in
 * the judgement's arena; states are copied, never shared. */
struct sh_st {
    const char *cwd; /* lexical absolute */
    const char *oldpwd;
    const char **stack; /* pushd stack below cwd (last = top) */
    size_t nstack;
    struct sh_var *vars;
    size_t nvars;
    const char **pos; /* $0 $1 …, when known (sh -c BODY NAME ARGS) */
    size_t npos;
    bool pos_known;
    bool errexit, ifs_set;
};

struct sh_states {
    struct sh_st *v;
    size_t n;
};

#define SH_SELF_CACHE 16

/* The judgement of one command text. */
struct sh_j {
    const struct guard_ctx *x;
    struct guard_verdict *v;
    struct sh_arena *a;
    int depth;                 /* command texts re-read (sh -c, eval …) */
    const struct sh_node *cur; /* the simple command being judged */
    bool allowed;              /* cur matched a [guard] allow rule */
    bool overflow;             /* too many states */
    struct {
        const char *word, *cwd;
        bool self;
    } self_cache[SH_SELF_CACHE]; /* program words already compared with this binary */
    size_t nself;
};

enum sh_stdin { IN_TTY, IN_PIPE, IN_HEREDOC, IN_HERESTR, IN_FILE, IN_NULL };

/* A simple command, expanded, with its context. */
struct sh_cmd {
    struct sh_xw *w; /* argv after the leading assignments */
    size_t n;
    size_t prog;       /* index of the program after wrappers */
    bool *unres_ok;    /* per word: a data value the rules accept unresolved */
    bool tail_unknown; /* xargs, find -exec, parallel append unknown words */
    bool data_only;    /* the program never opens its operands */
    const char *via;   /* the wrapper that appended unknown words */
    enum sh_stdin in;
    const char *in_text; /* heredoc / here-string / file body when known */
    size_t in_len;
    bool in_known;       /* in_text is exactly what the program reads */
    const char *in_path; /* IN_FILE: the file */
    struct sh_st *st;
    const char *text; /* the simple command's source text */
};

/* ---- verdicts ------------------------------------------------------------ */

/* A built-in rule's refusal (" · the command did not run" and the tail). */
void sh_deny_builtin(struct sh_j *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The guard cannot judge something: denied unless an allow rule matched the
 * command. what says what could not be judged. */
void sh_unreadable(struct sh_j *j, const struct sh_cmd *c, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* An agentstack invocation that changes consent, policy, secrets or the
 * guard: never liftable. */
void sh_deny_authority(struct sh_j *j, const char *what);

/* ---- operands ------------------------------------------------------------ */

enum sh_op {
    OP_NAME,    /* a word a command names (deny globs only) */
    OP_READ,    /* read (deny globs, the machine home's secrets) */
    OP_WRITE,   /* written or created */
    OP_DELETE,  /* removed (rm, find -delete, rmdir, unlink) */
    OP_MOVE,    /* renamed away (mv sources) */
    OP_RECURSE, /* chmod/chown -R: like a delete of protected directories */
};

/* The lexical absolute path of a resolved word in state st. */
const char *sh_abs(struct sh_j *j, const struct sh_st *st, const char *path);
/* Checks one operand; returns 1 when it may proceed (v untouched), 0 when
 * denied. cmdname names the command in messages. */
int sh_operand(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *w, enum sh_op op,
               const char *cmdname);

/* ---- nested judgement ---------------------------------------------------- */

/* Judges a command text that a program will run with sh (sh -c, eval, su
 * -c, watch, git aliases, env -S …) from state st, one level deeper;
 * positional: $0… when known (NULL otherwise). */
void sh_judge_text(struct sh_j *j, const struct sh_st *st, const char *text, size_t len,
                   const char *const *positional, size_t npos);
/* Judges argv words [from, c->n) of c as a command of their own (a wrapper's
 * command); tail_unknown: more words will be appended by via. */
void sh_judge_argv(struct sh_j *j, struct sh_cmd *c, size_t from, bool tail_unknown,
                   const char *via);
/* The writes of a patch read from file (NULL: the command's stdin). */
void sh_rule_patch_input(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *file,
                         const char *cmd);

/* ---- rules --------------------------------------------------------------- */

/* Applies wrappers and the command's rules; sets c->prog and c->data_only.
 * Returns false when the command was refused. */
bool sh_rules(struct sh_j *j, struct sh_cmd *c);
/* The file rules (rm, find, chmod, cp/mv/install/ln, tee, truncate, touch,
 * mkdir, sed, dd, …) for program index p. */
void sh_rules_fs(struct sh_j *j, struct sh_cmd *c, size_t p, const char *base);
/* Whether base is one of the programs sh_rules_fs judges. */
bool sh_rules_fs_known(const char *base);

/* One NAME=value (a command's prefix, env's word, export's argument):
 * AGENTSTACK_* is refused, command-valued names (GIT_SSH_COMMAND, PAGER,
 * EDITOR …) are judged as commands, loader and injection names (LD_PRELOAD,
 * BASH_ENV, GIT_CONFIG_* …) refused as unreadable; shell_var: it is a
 * shell variable from now on. */
void sh_judge_assignment(struct sh_j *j, struct sh_cmd *c, const struct sh_xw *w, bool shell_var);

/* ---- rule files ----------------------------------------------------------- */

/* sh_rules_self.c */
const char *sh_resolve_program(struct sh_j *j, const struct sh_cmd *c, const char *word);
bool sh_is_self(struct sh_j *j, const struct sh_cmd *c, const char *word);
bool sh_common_program(const char *base);
/* A program the rules know by name (shells, interpreters, wrappers, the
 * file rules, git, find, make …): never this binary under that name. */
bool sh_known_program(const char *base);
void sh_rule_agentstack(struct sh_j *j, struct sh_cmd *c, size_t p);
void sh_judge_code(struct sh_j *j, struct sh_cmd *c, const char *prog, const char *code, size_t n);
/* sh_rules_git.c */
void sh_rule_git(struct sh_j *j, struct sh_cmd *c, size_t p, int alias_depth);
/* sh_rules_exec.c */
bool sh_in(const char *s, const char *const *list);
const char *sh_T(const struct sh_cmd *c, size_t i);
bool sh_opt_in(const char *t, const char *const *l, size_t max);
struct sh_xw sh_mkword(struct sh_j *j, const char *text, const char *unres);
/* Joins words [from, n) and judges them as a command line (watch, su -c …). */
void sh_judge_joined(struct sh_j *j, struct sh_cmd *c, size_t from, const char *prog);

/* ---- small helpers ------------------------------------------------------- */

/* Commands whose arguments are data (never opened, never run). */
bool sh_data_cmd(const char *base);
const char *sh_base(const char *p);
bool sh_is_flag(const char *t);
/* The word's text for messages (its source spelling, cut and cleaned). */
const char *sh_show(struct sh_j *j, const struct sh_xw *w);
/* True when w is resolved, not a glob and its text equals s. */
bool sh_eq(const struct sh_xw *w, const char *s);
/* Short option cluster or long option: holds letter c / name lng. */
bool sh_has_opt(const struct sh_cmd *c, size_t from, char ch, const char *lng);
bool sh_has_word(const struct sh_cmd *c, size_t from, const char *s);

#endif
