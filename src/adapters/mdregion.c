/* mdregion — the managed region of instruction files (docs/adapters.md).
 *
 * Only whole marker lines count, so a marker quoted inside a sentence or a
 * code span never opens a region. */
#include <string.h>

#include "adapters/merge.h"

/* Offset of the first line equal to marker at or after from, or -1. */
static long find_line(const char *s, size_t n, size_t from, const char *marker)
{
    size_t ml = strlen(marker);
    size_t i = from;
    while (i < n) {
        if ((i == 0 || s[i - 1] == '\n') && n - i >= ml && memcmp(s + i, marker, ml) == 0) {
            size_t e = i + ml;
            if (e < n && s[e] == '\r')
                e++;
            if (e == n || s[e] == '\n')
                return (long)i;
        }
        const char *nl = memchr(s + i, '\n', n - i);
        if (!nl)
            break;
        i = (size_t)(nl - s) + 1;
    }
    return -1;
}

size_t adp_md_marker_line(const char *s, size_t n, const char **which)
{
    long st = find_line(s, n, 0, ADP_MD_START);
    long en = find_line(s, n, 0, ADP_MD_END);
    if (st < 0 && en < 0)
        return 0;
    long at = st < 0 || (en >= 0 && en < st) ? en : st;
    if (which)
        *which = at == en ? ADP_MD_END : ADP_MD_START;
    size_t line = 1;
    for (long i = 0; i < at; i++)
        line += s[i] == '\n';
    return line;
}

static size_t trim_newlines(const char *s, size_t n)
{
    while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return n;
}

void adp_md_region(const char *text, size_t len, const char *content, strbuf *out)
{
    size_t cl = trim_newlines(content, strlen(content));
    long st = find_line(text, len, 0, ADP_MD_START);
    long en = st >= 0 ? find_line(text, len, (size_t)st, ADP_MD_END) : -1;
    if (st >= 0 && en >= 0) {
        size_t end = (size_t)en + strlen(ADP_MD_END);
        size_t pre = (size_t)st;
        if (cl == 0)
            pre = trim_newlines(text, pre);
        sb_add(out, text, pre);
        if (cl) {
            sb_adds(out, ADP_MD_START "\n");
            sb_add(out, content, cl);
            sb_adds(out, "\n" ADP_MD_END);
        }
        sb_add(out, text + end, len - end);
        size_t keep = trim_newlines(out->buf, out->len);
        sb_setlen(out, keep);
        if (keep)
            sb_addc(out, '\n');
        return;
    }
    if (cl == 0) {
        sb_add(out, text, len);
        return;
    }
    size_t keep = trim_newlines(text, len);
    if (keep) {
        sb_add(out, text, keep);
        sb_adds(out, "\n\n");
    }
    sb_adds(out, ADP_MD_START "\n");
    sb_add(out, content, cl);
    sb_adds(out, "\n" ADP_MD_END "\n");
}
