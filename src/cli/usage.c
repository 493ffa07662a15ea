/*
 * Help and the inventory, generated from the command tables
 * (parse_options.h): `agentstack <cmd> --help` and `agentstack help --all
 * --json`. Nothing here is written by hand per command, so what help shows
 * is what the parser accepts.
 */
#include <ctype.h>
#include <string.h>

#include "base/strbuf.h"
#include "base/term.h"
#include "cli/parse_options.h"

/* Help's left column: options start at 2, their help at HELP_COL; text
 * wraps before WIDTH. */
#define HELP_COL 28
#define WIDTH 80

/* Writes text word-wrapped: the first line continues at column col, the
 * next ones start at indent. A '\n' in text breaks the line there. */
static void wrap(FILE *out, const char *text, int col, int indent)
{
    const char *p = text;
    bool line_start = true;
    while (*p) {
        if (*p == '\n') {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            line_start = true;
            p++;
            continue;
        }
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t n = strcspn(p, " \n");
        if (!line_start && col + 1 + (int)n >= WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent;
            line_start = true;
        }
        if (!line_start) {
            fputc(' ', out);
            col++;
        }
        fwrite(p, 1, n, out);
        col += (int)n;
        line_start = false;
        p += n;
    }
}

static const char *own_name(const struct cli_spec *s)
{
    const char *sp = strrchr(s->name, ' ');
    return sp ? sp + 1 : s->name;
}

static void value_text(const struct cli_option *o, strbuf *out)
{
    if (o->type == CLI_OPT_BOOL || o->type == CLI_OPT_SET)
        return;
    strbuf v = SB_INIT;
    if (o->argh) {
        sb_adds(&v, o->argh);
    } else if (o->type == CLI_OPT_ENUM) {
        for (const struct cli_choice *c = o->choices; c->name; c++)
            sb_addf(&v, "%s%s", c == o->choices ? "" : "|", c->name);
    } else {
        sb_adds(&v, "VALUE");
    }
    if (o->flags & CLI_OPT_OPTARG)
        sb_addf(out, " [%s]", v.buf);
    else
        sb_addf(out, " %s%s", v.buf, (o->flags & CLI_OPT_GREEDY) ? "..." : "");
    sb_release(&v);
}

static void option_line(const struct cli_option *o, FILE *out)
{
    strbuf left = SB_INIT;
    if (o->short_name && o->long_name)
        sb_addf(&left, "  -%c, --%s", o->short_name, o->long_name);
    else if (o->short_name)
        sb_addf(&left, "  -%c", o->short_name);
    else
        sb_addf(&left, "      --%s", o->long_name);
    value_text(o, &left);
    fputs(left.buf, out);
    if (left.len + 2 > HELP_COL)
        fprintf(out, "\n%*s", HELP_COL, "");
    else
        fprintf(out, "%*s", (int)(HELP_COL - left.len), "");
    strbuf help = SB_INIT;
    sb_adds(&help, o->help ? o->help : "");
    if (o->type == CLI_OPT_LIST && !(o->flags & CLI_OPT_GREEDY))
        sb_adds(&help, " (repeatable)");
    if (o->alias)
        sb_addf(&help, " (also --%s)", o->alias);
    wrap(out, help.buf, HELP_COL, HELP_COL);
    fputc('\n', out);
    sb_release(&help);
    sb_release(&left);
}

void cli_print_options(const char *title, const struct cli_option *a, const struct cli_option *b,
                       FILE *out)
{
    const struct cli_option *tables[] = {a, b};
    bool any = false;
    for (size_t t = 0; t < 2; t++)
        for (const struct cli_option *o = tables[t]; o && o->type != CLI_OPT_END; o++)
            any = any || !(o->flags & CLI_OPT_HIDDEN);
    if (!any)
        return;
    fprintf(out, "\n%s:\n", title);
    for (size_t t = 0; t < 2; t++)
        for (const struct cli_option *o = tables[t]; o && o->type != CLI_OPT_END; o++)
            if (!(o->flags & CLI_OPT_HIDDEN))
                option_line(o, out);
}

static void synopsis(const struct cli_spec *spec, FILE *out, bool *first)
{
    for (const char *const *l = spec->synopsis; l && *l; l++) {
        fprintf(out, "%s agentstack %s\n", *first ? "usage:" : "   or:", *l);
        *first = false;
    }
    if (!spec->synopsis)
        for (const struct cli_spec *const *s = spec->subs; s && *s; s++)
            if (!((*s)->flags & CLI_HIDDEN))
                synopsis(*s, out, first);
}

void cli_print_help(const struct cli_spec *spec, FILE *out)
{
    bool first = true;
    synopsis(spec, out, &first);
    if (first)
        fprintf(out, "usage: agentstack %s\n", spec->name);
    if (spec->summary && spec->summary[0]) {
        size_t n = strlen(spec->summary);
        fprintf(out, "\n%c%s%s\n", toupper((unsigned char)spec->summary[0]), spec->summary + 1,
                spec->summary[n - 1] == '.' ? "" : ".");
    }
    if (spec->alias_of)
        fprintf(out, "Another spelling of: agentstack %s\n", spec->alias_of);
    for (const char *const *a = spec->aliases; a && *a; a++)
        fprintf(out, "%s agentstack %s", a == spec->aliases ? "Also spelled:" : ",", *a);
    if (spec->aliases && spec->aliases[0])
        fputc('\n', out);
    if (spec->description) {
        fputc('\n', out);
        wrap(out, spec->description, 0, 0);
        fputc('\n', out);
    }
    if (spec->subs) {
        int width = 0;
        for (const struct cli_spec *const *s = spec->subs; *s; s++)
            if ((int)strlen(own_name(*s)) > width)
                width = (int)strlen(own_name(*s));
        fprintf(out, "\nsubcommands:\n");
        for (const struct cli_spec *const *s = spec->subs; *s; s++)
            if (!((*s)->flags & CLI_HIDDEN)) {
                fprintf(out, "  %-*s  ", width, own_name(*s));
                wrap(out, (*s)->summary, width + 4, width + 4);
                fputc('\n', out);
            }
        fprintf(out, "run 'agentstack %s <subcommand> --help' for its options.\n", spec->name);
    }
    cli_print_options("options", spec->common, spec->options, out);
    cli_print_options("global options (anywhere on the line)", cli_global_options, NULL, out);
    fprintf(out, "  -h, --help                show this help\n");
    if (spec->examples && spec->examples[0]) {
        fprintf(out, "\nexamples:\n");
        for (const char *const *e = spec->examples; *e; e++)
            fprintf(out, "  %s\n", *e);
    }
    if (spec->see_also && spec->see_also[0]) {
        fprintf(out, "\nsee also:");
        const char *p = spec->see_also;
        bool more = false;
        while (*p) {
            size_t n = strcspn(p, " ");
            if (n)
                fprintf(out, "%s agentstack %.*s", more ? "," : "", (int)n, p);
            more = more || n;
            p += n;
            p += strspn(p, " ");
        }
        fputc('\n', out);
    }
}

/* ---- the inventory ---------------------------------------------------------------------- */

static const char *type_name(const struct cli_option *o)
{
    switch (o->type) {
    case CLI_OPT_STRING:
        return "string";
    case CLI_OPT_LIST:
        return "list";
    case CLI_OPT_INT:
        return "int";
    case CLI_OPT_ENUM:
        return "choice";
    default:
        return "flag";
    }
}

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *lines(const char *const *v)
{
    json_t *a = json_array();
    for (; v && *v; v++)
        json_array_append_new(a, json_string(*v));
    return a;
}

static void options_json(json_t *a, const struct cli_option *opts)
{
    for (const struct cli_option *o = opts; o && o->type != CLI_OPT_END; o++) {
        json_t *j = json_object();
        strbuf s = SB_INIT;
        if (o->long_name) {
            sb_addf(&s, "--%s", o->long_name);
            json_object_set_new(j, "long", json_string(s.buf));
        } else {
            json_object_set_new(j, "long", json_null());
        }
        sb_reset(&s);
        if (o->short_name) {
            sb_addf(&s, "-%c", o->short_name);
            json_object_set_new(j, "short", json_string(s.buf));
        } else {
            json_object_set_new(j, "short", json_null());
        }
        json_t *al = json_array();
        if (o->alias) {
            sb_reset(&s);
            sb_addf(&s, "--%s", o->alias);
            json_array_append_new(al, json_string(s.buf));
        }
        sb_release(&s);
        json_object_set_new(j, "aliases", al);
        json_object_set_new(j, "type", json_string(type_name(o)));
        json_object_set_new(j, "value_name", str_or_null(o->argh));
        if (o->type == CLI_OPT_ENUM) {
            json_t *c = json_array();
            for (const struct cli_choice *ch = o->choices; ch->name; ch++)
                json_array_append_new(c, json_string(ch->name));
            json_object_set_new(j, "choices", c);
        }
        if (o->type == CLI_OPT_INT) {
            json_object_set_new(j, "min", json_integer(o->lo));
            json_object_set_new(j, "max", json_integer(o->hi));
        }
        json_object_set_new(j, "optional_value", json_boolean(o->flags & CLI_OPT_OPTARG));
        json_object_set_new(j, "repeatable", json_boolean(o->type == CLI_OPT_LIST));
        json_object_set_new(j, "hidden", json_boolean(o->flags & CLI_OPT_HIDDEN));
        json_object_set_new(j, "available", json_boolean(!(o->flags & CLI_OPT_UNBUILT)));
        json_object_set_new(j, "help", str_or_null(o->help));
        json_array_append_new(a, j);
    }
}

json_t *cli_options_json(const struct cli_option *a, const struct cli_option *b)
{
    json_t *arr = json_array();
    options_json(arr, a);
    options_json(arr, b);
    return arr;
}

json_t *cli_spec_json(const struct cli_spec *spec)
{
    json_t *j = json_object();
    json_object_set_new(j, "name", json_string(spec->name));
    json_object_set_new(j, "summary", str_or_null(spec->summary));
    json_object_set_new(j, "usage", lines(spec->synopsis));
    json_object_set_new(j, "description", str_or_null(spec->description));
    json_object_set_new(j, "hidden", json_boolean(spec->flags & CLI_HIDDEN));
    json_object_set_new(j, "alias_of", str_or_null(spec->alias_of));
    json_object_set_new(j, "aliases", lines(spec->aliases));
    json_object_set_new(j, "options", cli_options_json(spec->common, spec->options));
    json_t *subs = json_array();
    for (const struct cli_spec *const *s = spec->subs; s && *s; s++)
        json_array_append_new(subs, cli_spec_json(*s));
    json_object_set_new(j, "subcommands", subs);
    json_object_set_new(j, "examples", lines(spec->examples));
    json_t *see = json_array();
    for (const char *p = spec->see_also ? spec->see_also : ""; *p;) {
        size_t n = strcspn(p, " ");
        if (n)
            json_array_append_new(see, json_stringn(p, n));
        p += n;
        p += strspn(p, " ");
    }
    json_object_set_new(j, "see_also", see);
    return j;
}
