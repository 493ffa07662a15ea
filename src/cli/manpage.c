/*
 * The man pages, written from the command tables (manpage.h). Sections:
 * NAME, SYNOPSIS, DESCRIPTION, OPTIONS, SUBCOMMANDS (each with its own
 * usage, text and options), GLOBAL OPTIONS, EXAMPLES, EXIT STATUS, SEE ALSO.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "as_version.h"
#include "base/strbuf.h"
#include "cli/cli.h"
#include "cli/manpage.h"

/* ---- roff text -------------------------------------------------------------------------- */

/* One UTF-8 sequence at s (n bytes left): its code point and length, or 0. */
static unsigned utf8_decode(const unsigned char *s, size_t n, unsigned *cp)
{
    unsigned len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    if (len == 0 || len > n)
        return 0;
    unsigned v = s[0] & (0x7f >> len);
    for (unsigned i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        v = (v << 6) | (s[i] & 0x3f);
    }
    *cp = v;
    return len;
}

/* The roff name of a common non-ASCII character, which every output device
 * renders (-Tascii too), or NULL: then \[uXXXX]. */
static const char *roff_glyph(unsigned cp)
{
    static const struct {
        unsigned cp;
        const char *roff;
    } glyphs[] = {
        {0x2026, "\\&..."}, {0x2014, "\\(em"}, {0x2013, "\\(en"}, {0x2192, "\\(->"},
        {0x2190, "\\(<-"},  {0x00b7, "\\(pc"}, {0x2018, "\\(oq"}, {0x2019, "\\(cq"},
        {0x201c, "\\(lq"},  {0x201d, "\\(rq"}, {0x00d7, "\\(mu"}, {0x2264, "\\(<="},
        {0x2265, "\\(>="},
    };
    for (size_t i = 0; i < sizeof glyphs / sizeof glyphs[0]; i++)
        if (glyphs[i].cp == cp)
            return glyphs[i].roff;
    return NULL;
}

/* Text as it may stand inside a roff line: every special character escaped. */
static void roff_add(strbuf *out, const char *text, size_t n)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '\\') {
            sb_adds(out, "\\e");
        } else if (c == '-') {
            sb_adds(out, "\\-");
        } else if ((c == '.' || c == '\'') && (out->len == 0 || out->buf[out->len - 1] == '\n')) {
            sb_adds(out, "\\&");
            sb_addc(out, (char)c);
        } else if (c == '\t') {
            sb_addc(out, ' ');
        } else if (c < 0x80) {
            sb_addc(out, (char)c);
        } else {
            unsigned cp = 0, len = utf8_decode(s + i, n - i, &cp);
            if (len) {
                const char *g = roff_glyph(cp);
                if (g)
                    sb_adds(out, g);
                else
                    sb_addf(out, "\\[u%04X]", cp);
                i += len - 1;
            } else {
                sb_adds(out, "?");
            }
        }
    }
}

static void roff(strbuf *out, const char *text)
{
    roff_add(out, text, strlen(text));
}

/* Text after a break: a line of its own. */
static void line(strbuf *out, const char *text)
{
    roff(out, text);
    sb_addc(out, '\n');
}

/* Paragraphs: '\n' in table text is a line break, an empty line a new paragraph. */
static void paragraphs(strbuf *out, const char *text)
{
    bool first = true;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        size_t lead = strspn(p, " ");
        if (n == 0)
            sb_adds(out, ".PP\n");
        else {
            if (!first)
                sb_adds(out, ".br\n");
            if (lead >= n) {
                p += n;
                p += *p == '\n';
                continue;
            }
            if (lead)
                sb_addf(out, "\\h'%zun'", lead);
            roff_add(out, p + lead, n - lead);
            sb_addc(out, '\n');
        }
        first = false;
        p += n;
        p += *p == '\n';
    }
}

/* "The summary." from "the summary" */
static void sentence(strbuf *out, const char *summary)
{
    if (!summary || !*summary)
        return;
    strbuf s = SB_INIT;
    sb_adds(&s, summary);
    if (s.buf[0] >= 'a' && s.buf[0] <= 'z')
        s.buf[0] = (char)(s.buf[0] - 'a' + 'A');
    if (s.buf[s.len - 1] != '.')
        sb_addc(&s, '.');
    line(out, s.buf);
    sb_release(&s);
}

/* ---- pieces ----------------------------------------------------------------------------- */

static void option_entry(strbuf *out, const struct cli_option *o)
{
    sb_adds(out, ".TP\n");
    if (o->short_name)
        sb_addf(out, "\\fB\\-%c\\fR%s", o->short_name, o->long_name ? ", " : "");
    if (o->long_name) {
        sb_adds(out, "\\fB\\-\\-");
        roff(out, o->long_name);
        sb_adds(out, "\\fR");
    }
    if (o->type != CLI_OPT_BOOL && o->type != CLI_OPT_SET) {
        strbuf v = SB_INIT;
        if (o->argh)
            sb_adds(&v, o->argh);
        else if (o->type == CLI_OPT_ENUM)
            for (const struct cli_choice *c = o->choices; c->name; c++)
                sb_addf(&v, "%s%s", c == o->choices ? "" : "|", c->name);
        else
            sb_adds(&v, "VALUE");
        sb_adds(out, (o->flags & CLI_OPT_OPTARG) ? " [\\fI" : " \\fI");
        roff(out, v.buf);
        sb_adds(out, (o->flags & CLI_OPT_OPTARG) ? "\\fR]" : "\\fR");
        if (o->flags & CLI_OPT_GREEDY)
            sb_adds(out, "...");
        sb_release(&v);
    }
    sb_addc(out, '\n');
    strbuf help = SB_INIT;
    sb_adds(&help, o->help ? o->help : "");
    if (o->type == CLI_OPT_LIST && !(o->flags & CLI_OPT_GREEDY))
        sb_adds(&help, " (repeatable)");
    if (o->alias)
        sb_addf(&help, " (also --%s)", o->alias);
    line(out, help.buf);
    sb_release(&help);
}

static bool any_visible(const struct cli_option *a, const struct cli_option *b)
{
    const struct cli_option *t[] = {a, b};
    for (size_t i = 0; i < 2; i++)
        for (const struct cli_option *o = t[i]; o && o->type != CLI_OPT_END; o++)
            if (!(o->flags & CLI_OPT_HIDDEN))
                return true;
    return false;
}

static void options(strbuf *out, const struct cli_option *a, const struct cli_option *b)
{
    const struct cli_option *t[] = {a, b};
    for (size_t i = 0; i < 2; i++)
        for (const struct cli_option *o = t[i]; o && o->type != CLI_OPT_END; o++)
            if (!(o->flags & CLI_OPT_HIDDEN))
                option_entry(out, o);
}

static void usage_lines(strbuf *out, const struct cli_spec *spec)
{
    for (const char *const *l = spec->synopsis; l && *l; l++) {
        sb_adds(out, "\\fBagentstack\\fR ");
        line(out, *l);
    }
    if (!spec->synopsis)
        for (const struct cli_spec *const *s = spec->subs; s && *s; s++)
            if (!((*s)->flags & CLI_HIDDEN))
                usage_lines(out, *s);
}

static void spellings(strbuf *out, const struct cli_spec *spec)
{
    if (spec->alias_of) {
        sb_adds(out, ".PP\nAnother spelling of \\fBagentstack ");
        roff(out, spec->alias_of);
        sb_adds(out, "\\fR.\n");
    }
    for (const char *const *a = spec->aliases; a && *a; a++) {
        sb_adds(out, a == spec->aliases ? ".PP\nAlso spelled: " : ", ");
        sb_adds(out, "\\fBagentstack ");
        roff(out, *a);
        sb_adds(out, "\\fR");
    }
    if (spec->aliases && spec->aliases[0])
        sb_adds(out, "\n");
}

static void examples(strbuf *out, const char *const *ex)
{
    sb_adds(out, ".PP\n.RS 4\n.nf\n");
    for (; *ex; ex++)
        line(out, *ex);
    sb_adds(out, ".fi\n.RE\n");
}

static void subcommand(strbuf *out, const struct cli_spec *s)
{
    sb_adds(out, ".SS ");
    roff(out, s->name);
    sb_adds(out, "\n.nf\n");
    usage_lines(out, s);
    sb_adds(out, ".fi\n.PP\n");
    sentence(out, s->summary);
    spellings(out, s);
    if (s->description) {
        sb_adds(out, ".PP\n");
        paragraphs(out, s->description);
    }
    if (any_visible(s->common, s->options)) {
        sb_adds(out, ".PP\nOptions:\n");
        options(out, s->common, s->options);
    }
    if (s->examples && s->examples[0]) {
        sb_adds(out, ".PP\nExamples:\n");
        examples(out, s->examples);
    }
    for (const struct cli_spec *const *ss = s->subs; ss && *ss; ss++)
        if (!((*ss)->flags & CLI_HIDDEN))
            subcommand(out, *ss);
}

static void global_options(strbuf *out, bool top)
{
    sb_adds(out, ".SH GLOBAL OPTIONS\n");
    options(out, cli_global_options, NULL);
    sb_adds(out, ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\n");
    line(out, top ? "show help (of the command it follows)" : "show this help");
    if (top)
        sb_adds(out, ".TP\n\\fB\\-V\\fR, \\fB\\-\\-version\\fR\n"
                     "print the version (before any command)\n");
}

static void exit_status(strbuf *out)
{
    sb_adds(out, ".SH EXIT STATUS\n.TP\n0\nsuccess\n.TP\n1\nrefused or failed\n.TP\n2\n"
                 "usage error (an unknown option, a missing or malformed value)\n");
}

static bool has_page(const char *name)
{
    const struct cli_spec *c = cli_find(name);
    return c && !(c->flags & CLI_HIDDEN);
}

static void header(strbuf *out, const char *page)
{
    strbuf up = SB_INIT;
    for (const char *p = page; *p; p++)
        sb_addc(&up, (*p >= 'a' && *p <= 'z') ? (char)(*p - 'a' + 'A') : *p);
    sb_adds(out, ".TH ");
    roff(out, up.buf);
    sb_adds(out, " 1 \"\" \"agentstack ");
    roff(out, AS_VERSION);
    sb_adds(out, "\" \"agentstack manual\"\n");
    sb_release(&up);
}

static void command_page(strbuf *out, const struct cli_spec *c)
{
    strbuf page = SB_INIT;
    sb_addf(&page, "agentstack-%s", c->name);
    header(out, page.buf);
    sb_adds(out, ".SH NAME\n");
    roff(out, page.buf);
    sb_adds(out, " \\- ");
    line(out, c->summary);
    sb_adds(out, ".SH SYNOPSIS\n.nf\n");
    usage_lines(out, c);
    sb_adds(out, ".fi\n.SH DESCRIPTION\n");
    sentence(out, c->summary);
    spellings(out, c);
    if (c->description) {
        sb_adds(out, ".PP\n");
        paragraphs(out, c->description);
    }
    if (any_visible(c->common, c->options)) {
        sb_adds(out, ".SH OPTIONS\n");
        options(out, c->common, c->options);
    }
    if (c->subs) {
        sb_adds(out, ".SH SUBCOMMANDS\n");
        for (const struct cli_spec *const *s = c->subs; *s; s++)
            if (!((*s)->flags & CLI_HIDDEN))
                subcommand(out, *s);
    }
    global_options(out, false);
    if (c->examples && c->examples[0]) {
        sb_adds(out, ".SH EXAMPLES\n");
        examples(out, c->examples);
    }
    exit_status(out);
    sb_adds(out, ".SH SEE ALSO\n\\fBagentstack\\fR(1)");
    for (const char *p = c->see_also ? c->see_also : ""; *p;) {
        size_t n = strcspn(p, " ");
        strbuf name = SB_INIT;
        sb_add(&name, p, n);
        if (n && has_page(name.buf)) {
            sb_adds(out, ",\n\\fBagentstack\\-");
            roff(out, name.buf);
            sb_adds(out, "\\fR(1)");
        }
        sb_release(&name);
        p += n;
        p += strspn(p, " ");
    }
    sb_adds(out, "\n");
    sb_release(&page);
}

static void overview_page(strbuf *out)
{
    header(out, "agentstack");
    sb_adds(out, ".SH NAME\nagentstack \\- one reviewed, portable, governed setup for AI coding "
                 "agents\n.SH SYNOPSIS\n.nf\n\\fBagentstack\\fR [\\-\\-manifest\\-dir \\fIDIR\\fR] "
                 "\\fIcommand\\fR [\\fIargs\\fR]\n.fi\n.SH DESCRIPTION\n"
                 "agentstack renders one reviewed manifest (agentstack.toml, pinned by "
                 "agentstack.lock) into every AI coding CLI's own configuration, and governs "
                 "what the agents run, reach and call. Each command has its own page, "
                 "\\fBagentstack\\-\\fIcommand\\fR(1); \\fBagentstack help\\fR lists them and "
                 "\\fBagentstack \\fIcommand\\fB \\-\\-help\\fR shows one.\n.SH COMMANDS\n");
    for (const struct cli_spec *const *c = cli_commands; *c; c++) {
        if ((*c)->flags & CLI_HIDDEN)
            continue;
        sb_adds(out, ".TP\n\\fBagentstack\\-");
        roff(out, (*c)->name);
        sb_adds(out, "\\fR(1)\n");
        line(out, (*c)->summary);
    }
    global_options(out, true);
    exit_status(out);
    sb_adds(out, ".SH SEE ALSO\n");
    bool first = true;
    for (const struct cli_spec *const *c = cli_commands; *c; c++) {
        if ((*c)->flags & CLI_HIDDEN)
            continue;
        sb_adds(out, first ? "" : ",\n");
        sb_adds(out, "\\fBagentstack\\-");
        roff(out, (*c)->name);
        sb_adds(out, "\\fR(1)");
        first = false;
    }
    sb_adds(out, "\n");
}

/* ---- files ------------------------------------------------------------------------------ */

static int write_page(const char *dir, const char *page, const strbuf *text, struct as_err *err)
{
    strbuf path = SB_INIT, tmp = SB_INIT;
    sb_addf(&path, "%s/%s.1", dir, page);
    sb_addf(&tmp, "%s/.%s.1.tmp", dir, page);
    int rc = -1;
    FILE *f = fopen(tmp.buf, "w");
    if (!f) {
        as_err_errno(err, "cannot write %s", tmp.buf);
    } else {
        bool ok = fwrite(text->buf, 1, text->len, f) == text->len;
        ok = (fclose(f) == 0) && ok;
        if (!ok)
            as_err_errno(err, "cannot write %s", tmp.buf);
        else if (rename(tmp.buf, path.buf) < 0)
            as_err_errno(err, "cannot rename %s to %s", tmp.buf, path.buf);
        else
            rc = 0;
        if (rc < 0)
            unlink(tmp.buf);
    }
    sb_release(&path);
    sb_release(&tmp);
    return rc;
}

int man_write_pages(const char *dir, struct as_err *err)
{
    strbuf text = SB_INIT;
    overview_page(&text);
    int n = 0;
    if (write_page(dir, "agentstack", &text, err) < 0)
        goto fail;
    n++;
    for (const struct cli_spec *const *c = cli_commands; *c; c++) {
        if ((*c)->flags & CLI_HIDDEN)
            continue;
        sb_reset(&text);
        command_page(&text, *c);
        strbuf page = SB_INIT;
        sb_addf(&page, "agentstack-%s", (*c)->name);
        int rc = write_page(dir, page.buf, &text, err);
        sb_release(&page);
        if (rc < 0)
            goto fail;
        n++;
    }
    sb_release(&text);
    return n;
fail:
    sb_release(&text);
    return -1;
}
