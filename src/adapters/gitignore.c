/* gitignore — the managed block that keeps what agentstack wrote out of git
 * (spec 04 §6). Only the lines between the markers are ours. */
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

void adp_gitignore_block(const char *text, size_t len, const strvec *entries, strbuf *out)
{
    strbuf block = SB_INIT;
    sb_adds(&block, ADP_GITIGNORE_START "\n");
    for (size_t i = 0; i < entries->n; i++)
        sb_addf(&block, "%s\n", entries->v[i]);
    sb_adds(&block, ADP_GITIGNORE_END);
    long st = find_line(text, len, 0, ADP_GITIGNORE_START);
    long en = st >= 0 ? find_line(text, len, (size_t)st, ADP_GITIGNORE_END) : -1;
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
}
