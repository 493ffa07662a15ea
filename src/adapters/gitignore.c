/* gitignore — the managed block that keeps what agentstack wrote out of git
 * (docs/adapters.md). Only the lines between the markers are ours, and only when
 * the markers pair up: a start with no end (a hand edit, a cut-off write)
 * would make "between the markers" reach lines the user wrote, so such a
 * file is refused with the line and the fix, never rewritten. */
#include <string.h>

#include "adapters/engine.h"

/* Offset of the line equal to marker (CR tolerated) at or after from, or -1. */
static long find_line(const char *s, size_t n, size_t from, const char *m)
{
    size_t ml = strlen(m);
    for (size_t i = from; i < n;) {
        if ((i == 0 || s[i - 1] == '\n') && n - i >= ml && memcmp(s + i, m, ml) == 0 &&
            (i + ml == n || s[i + ml] == '\n' || s[i + ml] == '\r'))
            return (long)i;
        const char *nl = memchr(s + i, '\n', n - i);
        if (!nl)
            break;
        i = (size_t)(nl - s) + 1;
    }
    return -1;
}

bool adp_gitignore_has_block(const char *text, size_t len)
{
    return find_line(text, len, 0, ADP_GITIGNORE_START) >= 0;
}

/* 1-based line number of offset off. */
static unsigned line_of(const char *s, size_t off)
{
    unsigned n = 1;
    for (size_t i = 0; i < off; i++)
        n += s[i] == '\n';
    return n;
}

/* Where our block is, or why the markers cannot be trusted to say so. A
 * block is exactly one start marker followed by one end marker; anything
 * else (a start with no end after it, an end with no start before it, a
 * second start or end) leaves lines between markers that agentstack may
 * not have written, so nothing is edited. */
static int find_block(const char *text, size_t len, long *st, long *en, struct as_err *err)
{
    *st = find_line(text, len, 0, ADP_GITIGNORE_START);
    *en = find_line(text, len, 0, ADP_GITIGNORE_END);
    long st2 = *st >= 0 ? find_line(text, len, (size_t)*st + 1, ADP_GITIGNORE_START) : -1;
    long en2 = *en >= 0 ? find_line(text, len, (size_t)*en + 1, ADP_GITIGNORE_END) : -1;
    if (*st < 0 && *en < 0)
        return 0;
    if (*st >= 0 && *en < 0) {
        as_err_set(err,
                   ".gitignore:%u: the agentstack block opened here has no end marker — refusing "
                   "to edit .gitignore (a line agentstack did not write is never removed)",
                   line_of(text, (size_t)*st));
        as_err_hint(err,
                    "add the line `" ADP_GITIGNORE_END "` after the block's last entry, or "
                    "delete line %u, then apply again",
                    line_of(text, (size_t)*st));
        return -1;
    }
    if (*st < 0 || *en < *st) {
        as_err_set(err,
                   ".gitignore:%u: an agentstack end marker with no start marker before it — "
                   "refusing to edit .gitignore",
                   line_of(text, (size_t)*en));
        as_err_hint(err,
                    "delete line %u (or put the start marker `" ADP_GITIGNORE_START
                    "` where the block begins), then apply again",
                    line_of(text, (size_t)*en));
        return -1;
    }
    if (st2 >= 0 || en2 >= 0) {
        long at = st2 >= 0 && (en2 < 0 || st2 < en2) ? st2 : en2;
        as_err_set(err,
                   ".gitignore:%u: a second agentstack block marker — refusing to edit "
                   ".gitignore (one managed block only)",
                   line_of(text, (size_t)at));
        as_err_hint(err, "keep one `" ADP_GITIGNORE_START "` … `" ADP_GITIGNORE_END
                         "` block and delete the other markers, then apply again");
        return -1;
    }
    return 0;
}

int adp_gitignore_block(const char *text, size_t len, const strvec *entries, strbuf *out,
                        struct as_err *err)
{
    long st, en;
    if (find_block(text, len, &st, &en, err) < 0)
        return -1;
    strbuf block = SB_INIT;
    sb_adds(&block, ADP_GITIGNORE_START "\n");
    for (size_t i = 0; i < entries->n; i++)
        sb_addf(&block, "%s\n", entries->v[i]);
    sb_adds(&block, ADP_GITIGNORE_END);
    if (st >= 0 && en >= 0) {
        size_t end = (size_t)en + strlen(ADP_GITIGNORE_END);
        sb_add(out, text, (size_t)st);
        sb_add(out, block.buf, block.len);
        sb_add(out, text + end, len - end);
        if (end == len)
            sb_addc(out, '\n');
    } else if (len == 0) {
        sb_add(out, block.buf, block.len);
        sb_addc(out, '\n');
    } else {
        sb_add(out, text, len);
        if (text[len - 1] != '\n')
            sb_addc(out, '\n');
        sb_addc(out, '\n');
        sb_add(out, block.buf, block.len);
        sb_addc(out, '\n');
    }
    sb_release(&block);
    return 0;
}

int adp_gitignore_unblock(const char *text, size_t len, strbuf *out, struct as_err *err)
{
    long st, en;
    if (find_block(text, len, &st, &en, err) < 0)
        return -1;
    if (st < 0) {
        sb_add(out, text, len);
        return 0;
    }
    size_t from = (size_t)st, to = (size_t)en + strlen(ADP_GITIGNORE_END);
    while (to < len && (text[to] == '\r' || text[to] == '\n')) {
        bool nl = text[to] == '\n';
        to++;
        if (nl)
            break;
    }
    /* The blank line apply put before the block goes with it. */
    if (from >= 2 && text[from - 1] == '\n' && text[from - 2] == '\n')
        from--;
    sb_add(out, text, from);
    sb_add(out, text + to, len - to);
    return 0;
}
