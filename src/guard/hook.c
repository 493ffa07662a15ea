/* guard hook — `agentstack guard check`: read the payload, walk the failure
 * order, judge, answer in the CLI's dialect, record
 * each deny. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/json.h"
#include "base/xalloc.h"
#include "guard/guard_int.h"

void guard_hook_out_release(struct guard_hook_out *o)
{
    sb_release(&o->out);
    sb_release(&o->err);
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int guard_read_input(int fd, size_t max, int timeout_ms, strbuf *out, bool *too_big,
                     const char **cause)
{
    *too_big = false;
    if (isatty(fd)) {
        *cause = "stdin is a terminal, not a hook payload";
        return -1;
    }
    long long deadline = now_ms() + timeout_ms;
    char buf[65536];
    for (;;) {
        long long left = deadline - now_ms();
        if (left <= 0) {
            *cause = "timed out waiting for the hook payload";
            return -1;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, (int)(left > 1000 ? 1000 : left));
        if (r < 0) {
            if (errno == EINTR)
                continue;
            *cause = "cannot read stdin";
            return -1;
        }
        if (r == 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN)
                continue;
            *cause = "cannot read stdin";
            return -1;
        }
        if (n == 0)
            return 0;
        if (out->len + (size_t)n > max) {
            *too_big = true;
            *cause = "the hook payload is larger than 4 MiB";
            return -1;
        }
        sb_add(out, buf, (size_t)n);
        deadline = now_ms() + timeout_ms; /* progress resets the clock */
    }
}

void guard_reply(enum guard_proto p, bool deny, const char *reason, struct guard_hook_out *o)
{
    json_t *j = NULL;
    o->exit_code = 0;
    switch (p) {
    case GUARD_P_CLAUDE:
    case GUARD_P_CODEX:
    case GUARD_P_SNIFF:
        if (deny)
            j = json_pack("{s:{s:s,s:s,s:s}}", "hookSpecificOutput", "hookEventName", "PreToolUse",
                          "permissionDecision", "deny", "permissionDecisionReason", reason);
        break;
    case GUARD_P_GEMINI:
        if (deny)
            j = json_pack("{s:s,s:s,s:s}", "decision", "deny", "reason", reason, "systemMessage",
                          reason);
        break;
    case GUARD_P_CURSOR:
        j = deny ? json_pack("{s:s,s:s,s:s}", "permission", "deny", "user_message", reason,
                             "agent_message", reason)
                 : json_pack("{s:s}", "permission", "allow");
        break;
    case GUARD_P_COPILOT:
        j = deny ? json_pack("{s:s,s:s}", "permissionDecision", "deny", "permissionDecisionReason",
                             reason)
                 : json_pack("{s:s}", "permissionDecision", "allow");
        break;
    case GUARD_P_ANTIGRAVITY:
        if (deny)
            j = json_pack("{s:s,s:s}", "decision", "block", "reason", reason);
        break;
    case GUARD_P_WINDSURF:
        if (deny) {
            sb_addf(&o->err, "%s\n", reason);
            o->exit_code = 2;
        }
        break;
    }
    if (j) {
        json_dump_compact(j, &o->out);
        sb_addc(&o->out, '\n');
        json_decref(j);
    }
}

/* The one-time teaching line for the first rule denial on this machine. */
static bool first_denial(const char *ash)
{
    char *p = xasprintf("%s/guard-introduced", ash);
    int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    free(p);
    if (fd < 0)
        return false;
    close(fd);
    return true;
}

static void system_deny(const struct guard_hook_in *in, enum guard_proto p, const char *ash,
                        const char *tag, const char *headline, const char *cause,
                        struct guard_hook_out *o)
{
    strbuf reason = SB_INIT, c = SB_INIT, detail = SB_INIT, tool = SB_INIT;
    gi_clean(&c, cause ? cause : "unknown", 400);
    sb_addf(&reason, "%s%s — failing closed (%s)", GUARD_REASON_PREFIX, headline, c.buf);
    (void)in;
    o->denied = true;
    guard_reply(p, true, reason.buf, o);
    sb_addf(&detail, "%s — failing closed (%s)", headline, c.buf);
    sb_addf(&tool, "system: %s", tag);
    struct as_err err = AS_ERR_INIT;
    if (ash && guard_audit_deny(ash, NULL, tool.buf, detail.buf, GUARD_SYS_DETAIL_MAX, &err) == 0)
        o->audited = true;
    else
        sb_addf(&o->err, "agentstack guard: could not record the refusal: %s\n", err.msg);
    sb_release(&reason);
    sb_release(&c);
    sb_release(&detail);
    sb_release(&tool);
}

/* $AGENTSTACK_HOME for evidence, without creating anything. */
static char *ash_dir(void)
{
    const char *ah = getenv("AGENTSTACK_HOME");
    const char *h = getenv("HOME");
    strbuf lx = SB_INIT;
    char cwd[4096];
    if (!getcwd(cwd, sizeof cwd))
        snprintf(cwd, sizeof cwd, "/");
    if (ah && ah[0])
        guard_lexical(cwd, h, ah, &lx);
    else if (h && h[0] == '/')
        sb_addf(&lx, "%s/.agentstack", h);
    else
        return NULL;
    return sb_detach(&lx, NULL);
}

void guard_hook(const struct guard_hook_in *in, struct guard_hook_out *o)
{
    memset(o, 0, sizeof *o);
    sb_init(&o->out, 0);
    sb_init(&o->err, 0);
    enum guard_proto p = GUARD_P_SNIFF;
    if (in->protocol && guard_proto_parse(in->protocol, &p) < 0)
        p = GUARD_P_SNIFF;
    char *ash = ash_dir();
    struct guard_config cfg;
    guard_config_load(&cfg, false);
    /* the protocol is needed for every reply: sniff it early when the payload parses */
    struct guard_action act = {0};
    struct as_err perr = AS_ERR_INIT;
    int parsed = in->unreadable ? -1 : guard_payload_classify(in->data, in->len, &p, &act, &perr);
    if (cfg.state == GUARD_OFF) {
        guard_reply(p, false, NULL, o);
        goto done;
    }
    if (cfg.state == GUARD_UNREADABLE) {
        system_deny(in, p, ash, "machine-config-unreadable", "machine config unreadable", cfg.cause,
                    o);
        goto done;
    }
    if (cfg.state == GUARD_BLOCKED) {
        system_deny(in, p, ash, "machine-policy-unavailable", "machine policy unavailable",
                    cfg.cause, o);
        goto done;
    }
    if (in->unreadable || parsed < 0) {
        system_deny(in, p, ash, "hook-payload-unreadable", "hook payload unreadable",
                    in->unreadable ? in->read_cause : perr.msg, o);
        goto done;
    }
    if (act.kind == GUARD_K_NONE) {
        guard_reply(p, false, NULL, o);
        goto done;
    }
    struct guard_ctx x;
    struct as_err err = AS_ERR_INIT;
    if (guard_ctx_build(&x, &cfg, act.cwd ? act.cwd : in->cwd, &err) < 0) {
        guard_ctx_free(&x);
        system_deny(in, p, ash, "machine-policy-unavailable", "machine policy unavailable", err.msg,
                    o);
        goto done;
    }
    if (act.cwd_rel) {
        /* the tool's own working directory (Codex workdir, Gemini directory) */
        strbuf lx = SB_INIT;
        guard_lexical(x.cwd, x.home, act.cwd_rel, &lx);
        free(x.cwd);
        x.cwd = sb_detach(&lx, NULL);
        strbuf real = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        x.cwd_in_home =
            gi_under(x.cwd, x.ash) || (x.ash_real && fs_canonicalize(x.cwd, &real, &e2) == 0 &&
                                       gi_under(real.buf, x.ash_real));
        sb_release(&real);
    }
    struct guard_verdict v;
    guard_verdict_init(&v);
    guard_judge(&x, &act, &v);
    if (!v.deny) {
        guard_reply(p, false, NULL, o);
    } else {
        o->denied = true;
        strbuf reason = SB_INIT;
        sb_addf(&reason, "%s%s", GUARD_REASON_PREFIX, v.reason.buf);
        struct as_err aerr = AS_ERR_INIT;
        if (guard_audit_deny(x.ash, x.workspace, v.subject.buf, v.reason.buf, GUARD_SYS_DETAIL_MAX,
                             &aerr) == 0)
            o->audited = true;
        else
            sb_addf(&o->err, "agentstack guard: could not record the refusal: %s\n", aerr.msg);
        if (v.by_rule && first_denial(x.ash))
            sb_addf(&reason,
                    " · (first refusal on this machine: agentstack's host guard checks each tool "
                    "call against [guard] and [policy.filesystem] in %s; see: agentstack guard "
                    "status)",
                    x.machine_display);
        guard_reply(p, true, reason.buf, o);
        sb_release(&reason);
    }
    guard_verdict_release(&v);
    guard_ctx_free(&x);
done:
    guard_action_free(&act);
    guard_config_free(&cfg);
    free(ash);
}
