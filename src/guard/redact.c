/* guard redact — secret values out of audit rows, and the deny row
 * appender. The values are found by the one literal-secret detector that
 * `lib sync` uses (bundle/literal_secret.c, lsec_redact), so a value lib sync
 * would refuse to publish never reaches calls.jsonl either. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/xalloc.h"
#include "bundle/literal_secret.h"
#include "guard/guard_int.h"

void guard_redact(const char *s, size_t n, strbuf *out)
{
    strbuf r = SB_INIT;
    (void)lsec_redact(s, n, &r);
    /* an audit row is one line: control bytes become spaces */
    for (size_t i = 0; i < r.len; i++) {
        unsigned char c = (unsigned char)r.buf[i];
        sb_addc(out, c < 0x20 || c == 0x7f ? ' ' : (char)c);
    }
    sb_release(&r);
}

int guard_audit_deny(const char *ash, const char *project, const char *tool, const char *detail,
                     size_t detail_max, struct as_err *err)
{
    strbuf path = SB_INIT, d = SB_INIT, dc = SB_INIT, t = SB_INIT;
    sb_addf(&path, "%s/audit/calls.jsonl", ash);
    guard_redact(detail, strlen(detail), &d);
    aud_utf8_cut(d.buf, detail_max, &dc);
    aud_utf8_cut(tool, GUARD_TOOL_MAX, &t);
    json_t *rec = json_object();
    json_object_set_new(rec, "ts", json_integer((json_int_t)time(NULL)));
    const char *run = getenv("AGENTSTACK_RUN_ID");
    if (run && run[0])
        json_object_set_new(rec, "run", json_string(run));
    json_object_set_new(rec, "pid", json_integer(getpid()));
    if (project && project[0])
        json_object_set_new(rec, "project", json_string(project));
    json_object_set_new(rec, "server", json_string(GUARD_SERVER));
    json_object_set_new(rec, "tool", json_string(t.buf));
    json_object_set_new(rec, "args_digest", json_string(""));
    json_object_set_new(rec, "outcome", json_string("denied"));
    json_object_set_new(rec, "detail", json_string(dc.buf));
    json_object_set_new(rec, "ms", json_integer(0));
    struct aud_append_opts o = {.rotate_bytes = AUD_ROTATE_BYTES, .lock_timeout_ms = 2000};
    int rc = aud_append(path.buf, rec, &o, err);
    json_decref(rec);
    sb_release(&path);
    sb_release(&d);
    sb_release(&dc);
    sb_release(&t);
    return rc;
}
