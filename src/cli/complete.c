/*
 * The completion engine behind `agentstack completions` (complete.h).
 *
 * One pass over the words before the cursor, as the parser would read them:
 * the command, then its subcommands, skipping options and the values they
 * take, counting arguments. What is left decides the candidates: an option's
 * value, an option name, a command or subcommand name, or the argument at
 * that position, whose kind is read from the (sub)command's usage line
 * ("use [TOOLSET]", "adapters show <id>", "completions bash|zsh|fish").
 */
#include <ctype.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#include "adapters/adapters.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "bundle/discover.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "cli/complete.h"
#include "cli/help_topics.h"

/* What a value or an argument is. */
enum value_kind {
    V_NONE,
    V_CHOICES,     /* an option's table choices, or "a|b|c" in a usage line */
    V_ADAPTERS,    /* adapter ids: built-ins and drop-ins */
    V_TOOLSETS,    /* the manifest's [toolsets] */
    V_SERVERS,     /* the manifest's [servers] */
    V_SKILLS,      /* the manifest's [skills] */
    V_COMMANDS,    /* the visible commands */
    V_SUBCOMMANDS, /* the subcommands of the command named by the previous argument */
    V_FILES,
    V_DIRS,
};

struct walk {
    const struct cli_spec *spec; /* NULL: no command yet */
    const char *manifest_dir;    /* --manifest-dir on the line */
    const char *prev_arg;        /* the last argument seen */
    int pos;                     /* arguments seen since the (sub)command */
    bool stop;                   /* after "--", or a command line being judged */
};

/* ---- the tables ------------------------------------------------------------------------- */

static bool takes_value(const struct cli_option *o)
{
    return o->type == CLI_OPT_STRING || o->type == CLI_OPT_LIST || o->type == CLI_OPT_INT ||
           o->type == CLI_OPT_ENUM;
}

static bool offered(const struct cli_option *o)
{
    return !(o->flags & (CLI_OPT_HIDDEN | CLI_OPT_UNBUILT));
}

static const struct cli_option *in_table(const struct cli_option *t, const char *a, size_t len)
{
    for (const struct cli_option *o = t; o && o->type != CLI_OPT_END; o++) {
        if (a[1] != '-') {
            if (len == 2 && o->short_name == a[1])
                return o;
            continue;
        }
        const char *names[] = {o->long_name, o->alias};
        for (size_t i = 0; i < 2; i++)
            if (names[i] && strlen(names[i]) == len - 2 && memcmp(names[i], a + 2, len - 2) == 0)
                return o;
    }
    return NULL;
}

/* The option word a names (up to '='), in spec's tables or the global one. */
static const struct cli_option *find_option(const struct cli_spec *spec, const char *a)
{
    size_t len = strcspn(a, "=");
    const struct cli_option *o = NULL;
    if (spec && !(o = in_table(spec->common, a, len)))
        o = in_table(spec->options, a, len);
    return o ? o : in_table(cli_global_options, a, len);
}

static enum value_kind option_kind(const struct cli_option *o)
{
    static const struct {
        const char *name;
        enum value_kind kind;
    } by_name[] = {
        {"target", V_ADAPTERS},  {"targets", V_ADAPTERS}, {"harness", V_ADAPTERS},
        {"toolset", V_TOOLSETS}, {"server", V_SERVERS},   {"skill", V_SKILLS},
    };
    if (o->type == CLI_OPT_ENUM)
        return V_CHOICES;
    for (size_t i = 0; i < sizeof by_name / sizeof by_name[0]; i++)
        if (o->long_name && strcmp(o->long_name, by_name[i].name) == 0)
            return by_name[i].kind;
    if (o->argh && (strcmp(o->argh, "DIR") == 0 || strcmp(o->argh, "D") == 0))
        return V_DIRS;
    if (o->argh &&
        (strcmp(o->argh, "FILE") == 0 || strcmp(o->argh, "F") == 0 || strcmp(o->argh, "PATH") == 0))
        return V_FILES;
    return V_NONE;
}

/* A usage-line placeholder ("TOOLSET", "cli-or-command", "file.yaml"). */
static enum value_kind placeholder_kind(const char *p)
{
    static const struct {
        const char *name;
        enum value_kind kind;
    } by_name[] = {
        {"toolset", V_TOOLSETS}, {"cli", V_ADAPTERS},           {"cli-or-command", V_ADAPTERS},
        {"id", V_ADAPTERS},      {"server", V_SERVERS},         {"command", V_COMMANDS},
        {"path", V_FILES},       {"file.yaml", V_FILES},        {"log", V_FILES},
        {"skill-dir", V_DIRS},   {"subcommand", V_SUBCOMMANDS},
    };
    if (strchr(p, '|'))
        return V_CHOICES;
    for (size_t i = 0; i < sizeof by_name / sizeof by_name[0]; i++)
        if (strcasecmp(p, by_name[i].name) == 0)
            return by_name[i].kind;
    return V_NONE;
}

/* The placeholder of argument pos (0-based) in spec's usage lines, into out
 * (the first line that has one; a placeholder ending in "..." repeats). */
static bool positional(const struct cli_spec *spec, int pos, strbuf *out)
{
    size_t skip = 1;
    for (const char *c = spec->name; *c; c++)
        skip += *c == ' ';
    for (const char *const *line = spec->synopsis; line && *line; line++) {
        strvec tok = STRVEC_INIT;
        for (const char *p = *line; *p;) {
            size_t n = strcspn(p, " ");
            if (n)
                strvec_pushf(&tok, "%.*s", (int)n, p);
            p += n;
            p += strspn(p, " ");
        }
        int at = 0;
        const char *repeat = NULL;
        bool found = false;
        for (size_t i = skip; i < tok.n && !found; i++) {
            const char *t = tok.v[i];
            bool dots = strstr(t, "...") != NULL;
            t += strspn(t, "[(");
            size_t len = strcspn(t, "]).");
            if (len == 0 || (len == 1 && t[0] == '|'))
                continue;
            if (t[0] == '-') {
                const struct cli_option *o = find_option(spec, t);
                if (o && takes_value(o) && !strchr(t, '=') && i + 1 < tok.n &&
                    (!(o->flags & CLI_OPT_OPTARG) || tok.v[i + 1][0] == '['))
                    i++;
                continue;
            }
            if (t[0] == '<')
                t++, len = strcspn(t, ">");
            if (at == pos || (at < pos && dots && !repeat)) {
                sb_reset(out);
                sb_add(out, t, len);
                found = at == pos || dots;
            }
            if (dots)
                repeat = t;
            at++;
        }
        strvec_clear(&tok);
        if (found)
            return true;
    }
    return false;
}

/* ---- candidates ------------------------------------------------------------------------- */

struct offer {
    FILE *out;
    const char *prefix; /* written before each value ("--toolset=") */
    const char *cur;    /* what the word must start with (after prefix) */
};

static void emit(const struct offer *of, const char *word, const char *desc)
{
    if (strncmp(word, of->cur, strlen(of->cur)) != 0)
        return;
    fprintf(of->out, "%s%s", of->prefix, word);
    if (desc && *desc)
        fprintf(of->out, "\t%s", desc);
    fputc('\n', of->out);
}

/* A name a project or a drop-in wrote, offered only when plain. */
static void emit_untrusted(const struct offer *of, const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n > 128 || name[0] == '-')
        return;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (!isalnum(c) && !strchr("._+@/-", c))
            return;
    }
    emit(of, name, NULL);
}

static const char *own_name(const struct cli_spec *s)
{
    const char *sp = strrchr(s->name, ' ');
    return sp ? sp + 1 : s->name;
}

static void offer_commands(const struct offer *of)
{
    for (const struct cli_spec *const *c = cli_commands; *c; c++)
        if (!((*c)->flags & CLI_HIDDEN))
            emit(of, (*c)->name, (*c)->summary);
}

static void offer_subcommands(const struct offer *of, const struct cli_spec *spec)
{
    for (const struct cli_spec *const *s = spec ? spec->subs : NULL; s && *s; s++)
        if (!((*s)->flags & CLI_HIDDEN))
            emit(of, own_name(*s), (*s)->summary);
}

static void offer_table(const struct offer *of, const struct cli_option *t)
{
    for (const struct cli_option *o = t; o && o->type != CLI_OPT_END; o++) {
        if (!offered(o))
            continue;
        strbuf w = SB_INIT;
        if (o->long_name)
            sb_addf(&w, "--%s", o->long_name);
        else if (o->short_name)
            sb_addf(&w, "-%c", o->short_name);
        if (w.len)
            emit(of, w.buf, o->help);
        sb_release(&w);
    }
}

static void offer_options(const struct offer *of, const struct cli_spec *spec)
{
    if (spec) {
        offer_table(of, spec->common);
        offer_table(of, spec->options);
    }
    offer_table(of, cli_global_options);
    emit(of, "--help", spec ? "show this help" : "show help");
    if (!spec)
        emit(of, "--version", "print the version");
}

static void offer_adapters(const struct offer *of)
{
    struct adp_registry reg = {0};
    struct as_err err = AS_ERR_INIT;
    if (adp_registry_load(&reg, true, &err) == 0)
        for (size_t i = 0; i < reg.v.n; i++)
            emit_untrusted(of, reg.v.v[i]->id);
    as_err_clear(&err);
    adp_registry_free(&reg);
}

static void offer_manifest(const struct offer *of, const char *manifest_dir, enum value_kind k)
{
    struct bundle_paths p = {0};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = NULL;
    if (discover_project(manifest_dir, NULL, &p, &err) == 0) {
        int absent = 0;
        m = p.found ? manifest_load(&p, &err) : manifest_load_machine(&absent, &err);
    }
    for (size_t i = 0; m && k == V_TOOLSETS && i < m->toolsets.n; i++)
        emit_untrusted(of, m->toolsets.v[i].name);
    for (size_t i = 0; m && k == V_SERVERS && i < m->servers.n; i++)
        emit_untrusted(of, m->servers.v[i].name);
    for (size_t i = 0; m && k == V_SKILLS && i < m->skills.n; i++)
        emit_untrusted(of, m->skills.v[i].name);
    manifest_free(m);
    bundle_paths_free(&p);
    as_err_clear(&err);
}

static void offer_values(const struct offer *of, const struct walk *w, enum value_kind k,
                         const struct cli_option *o, const char *literal)
{
    switch (k) {
    case V_CHOICES:
        if (o) {
            for (const struct cli_choice *c = o->choices; c && c->name; c++)
                emit(of, c->name, NULL);
        } else {
            for (const char *p = literal; *p;) {
                size_t n = strcspn(p, "|");
                strbuf b = SB_INIT;
                sb_add(&b, p, n);
                emit(of, b.buf, NULL);
                sb_release(&b);
                p += n;
                p += *p == '|';
            }
        }
        break;
    case V_ADAPTERS:
        offer_adapters(of);
        break;
    case V_TOOLSETS:
    case V_SERVERS:
    case V_SKILLS:
        offer_manifest(of, w->manifest_dir, k);
        break;
    case V_COMMANDS:
        offer_commands(of);
        /* `help` takes a command or a concept (help_topics.h); a concept
         * named like a command is already offered (help shows both). */
        if (w->spec && strcmp(w->spec->name, "help") == 0) {
            for (const struct help_topic *t = help_topics; t->name; t++)
                if (!cli_find(t->name))
                    emit(of, t->name, t->summary);
            emit(of, "topics", "list the concepts help explains");
        }
        break;
    case V_SUBCOMMANDS:
        offer_subcommands(of, w->prev_arg ? cli_find(w->prev_arg) : NULL);
        break;
    case V_FILES:
        fprintf(of->out, ":files\n");
        break;
    case V_DIRS:
        fprintf(of->out, ":dirs\n");
        break;
    case V_NONE:
        break;
    }
}

/* ---- the walk --------------------------------------------------------------------------- */

int complete_words(int n, char **words, FILE *out)
{
    struct walk w = {0};
    const char *cur = n > 0 ? words[n - 1] : "";
    const struct cli_option *awaiting = NULL; /* the option the current word is the value of */
    for (int i = 1; i < n - 1 && !w.stop; i++) {
        const char *a = words[i];
        if (strcmp(a, "--") == 0) {
            w.stop = true;
            break;
        }
        if (a[0] == '-' && a[1]) {
            const struct cli_option *o = find_option(w.spec, a);
            if (!o || !takes_value(o) || strchr(a, '='))
                continue;
            if (o->flags & CLI_OPT_OPTARG) {
                if (i + 1 < n - 1 && words[i + 1][0] != '-')
                    i++;
                continue;
            }
            if (i + 1 == n - 1) {
                awaiting = o;
                break;
            }
            if (o->long_name && strcmp(o->long_name, "manifest-dir") == 0)
                w.manifest_dir = words[i + 1];
            i++;
            if (o->flags & CLI_OPT_GREEDY) {
                while (i + 1 < n - 1 && words[i + 1][0] != '-')
                    i++;
                if (i + 1 == n - 1 && cur[0] != '-') {
                    awaiting = o;
                    break;
                }
            }
            continue;
        }
        const struct cli_spec *sub = NULL;
        if (!w.spec) {
            if (!(w.spec = cli_find(a)))
                return 0; /* not a command: nothing to offer */
            continue;
        }
        if (w.pos == 0 && w.spec->subs && (sub = cli_find_sub(w.spec, a))) {
            w.spec = sub;
            continue;
        }
        w.prev_arg = a;
        w.pos++;
        if (w.spec->flags & CLI_STOP_AT_POSITIONAL)
            w.stop = true;
    }
    if (w.stop)
        return 0;
    struct offer of = {.out = out, .prefix = "", .cur = cur};
    if (awaiting) {
        offer_values(&of, &w, option_kind(awaiting), awaiting, NULL);
        return 0;
    }
    if (cur[0] == '-') {
        const char *eq = strchr(cur, '=');
        const struct cli_option *o = eq ? find_option(w.spec, cur) : NULL;
        if (o && takes_value(o)) {
            strbuf pre = SB_INIT;
            sb_add(&pre, cur, (size_t)(eq - cur) + 1);
            of.prefix = pre.buf;
            of.cur = eq + 1;
            enum value_kind k = option_kind(o);
            if (k != V_FILES && k != V_DIRS)
                offer_values(&of, &w, k, o, NULL);
            sb_release(&pre);
        } else if (!eq) {
            offer_options(&of, w.spec);
        }
        return 0;
    }
    if (!w.spec) {
        offer_commands(&of);
        return 0;
    }
    if (w.pos == 0 && w.spec->subs) {
        offer_subcommands(&of, w.spec);
        if (!w.spec->synopsis)
            return 0;
    }
    strbuf ph = SB_INIT;
    if (positional(w.spec, w.pos, &ph))
        offer_values(&of, &w, placeholder_kind(ph.buf), NULL, ph.buf);
    sb_release(&ph);
    return 0;
}
