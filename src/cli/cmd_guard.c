/*
 * agentstack guard check|test|status|install|uninstall — the host guard
 * (docs/guard.md). `check` is the hook entry the CLIs call (hidden); `test`
 * judges one command like the hook would; `install --write` seeds the
 * machine file's [guard] table, writes the wrapper under
 * $AGENTSTACK_HOME/guard/ and wires every detected CLI's pre-tool hook;
 * `uninstall` removes only our entries (marker agentstack-guard).
 *
 * Hook files are JSON (or JSONC) edited through the adapters' span-preserving
 * merge (adp_json_merge): every byte outside the hooks key stays as it was.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "adapters/adapters.h"
#include "adapters/merge.h"
#include "base/fs.h"
#include "base/json.h"
#include "base/lock.h"
#include "base/strbuf.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/home.h"
#include "bundle/manifest.h"
#include "cli/cli.h"
#include "guard/guard.h"

int cmd_guard(int argc, char **argv, struct cli_ctx *ctx);

struct guard_args {
    const char *protocol;
    bool write;
    const char *from;
};

static int do_check(int argc, char **argv, struct cli_ctx *ctx);
static int do_test(int argc, char **argv, struct cli_ctx *ctx);
static int do_status(int argc, char **argv, struct cli_ctx *ctx);
static int do_install(int argc, char **argv, struct cli_ctx *ctx);
static int do_uninstall(int argc, char **argv, struct cli_ctx *ctx);

#define CLI_ARGS struct guard_args
static const struct cli_option check_options[] = {
    {OPT_STRING("protocol", 0, protocol, "CLI",
                "the hook dialect: claude, codex, gemini, cursor, copilot, antigravity or "
                "windsurf")},
    {OPT_END},
};
static const struct cli_option install_options[] = {
    {OPT_BOOL("write", 0, write,
              "seed [guard], write the wrapper, wire the hooks (default: "
              "preview)")},
    {OPT_END},
};
static const struct cli_option test_options[] = {
    {OPT_STRING("from", 0, from, "FILE",
                "judge each line of FILE (- for stdin) as one command: one ALLOW or DENY line "
                "each")},
    {OPT_END},
};
static const struct cli_option uninstall_options[] = {
    {OPT_BOOL("write", 0, write, "accepted: uninstall acts directly"), .flags = CLI_OPT_HIDDEN},
    {OPT_END},
};
#undef CLI_ARGS

static const struct cli_spec guard_check_spec = {
    .name = "guard check",
    .fn = do_check,
    .summary = "the hook entry the CLIs call: judge the hook JSON on stdin",
    .synopsis = CLI_LINES("guard check [--protocol claude|codex|gemini|cursor|copilot|"
                          "antigravity|windsurf]"),
    .options = check_options,
    .flags = CLI_HIDDEN,
};
static const struct cli_spec guard_test_spec = {
    .name = "guard test",
    .fn = do_test,
    .summary = "judge one command line (or a file of them) as the hook would",
    .synopsis = CLI_LINES("guard test <command…>", "guard test --from FILE"),
    .description = "Every word after `test` is the command judged, options included. With "
                   "--from, each non-empty line of FILE is one command; the exit status is 1 "
                   "when any is denied.",
    .options = test_options,
    .examples = CLI_LINES("agentstack guard test rm -rf /", "agentstack guard test cat .env",
                          "agentstack guard test --from commands.txt"),
    .flags = CLI_STOP_AT_POSITIONAL,
};
static const struct cli_spec guard_status_spec = {
    .name = "guard status",
    .fn = do_status,
    .summary = "the guard's configuration and which CLIs it protects",
    .synopsis = CLI_LINES("guard status"),
};
static const struct cli_spec guard_install_spec = {
    .name = "guard install",
    .fn = do_install,
    .summary = "wire the guard into every detected CLI's pre-tool hook",
    .synopsis = CLI_LINES("guard install [--write]"),
    .options = install_options,
};
static const struct cli_spec guard_uninstall_spec = {
    .name = "guard uninstall",
    .fn = do_uninstall,
    .summary = "remove only our hook entries (marker agentstack-guard)",
    .synopsis = CLI_LINES("guard uninstall"),
    .options = uninstall_options,
};

const struct cli_spec cmd_guard_spec = {
    .name = "guard",
    .fn = cmd_guard,
    .summary = "host guard: judge agents' tool calls before they run",
    .subs =
        (const struct cli_spec *const[]){&guard_test_spec, &guard_status_spec, &guard_install_spec,
                                         &guard_uninstall_spec, &guard_check_spec, NULL},
    .description = "Hook files are edited span-preserving: every byte outside the hooks key "
                   "stays as it was.",
    .see_also = "policy run",
};

static const char *const default_deny[] = {
    ".env",   ".env.local", ".env.*.local", ".env.production", ".env.development",
    "id_rsa", "id_ed25519", "id_ecdsa",     "*.pem",           ".netrc",
    NULL};

/* ---- check --------------------------------------------------------------- */

static int do_check(int argc, char **argv, struct cli_ctx *ctx)
{
    struct guard_args a = {0};
    int prc = cli_parse(&guard_check_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&guard_check_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    const char *proto = a.protocol;
    enum guard_proto p;
    if (proto && guard_proto_parse(proto, &p) < 0)
        return cli_usage_error("guard check",
                               "unknown protocol '%s' (claude, codex, gemini, cursor, copilot, "
                               "antigravity, windsurf)",
                               proto);
    int timeout = 30000;
    const char *t = getenv("AGENTSTACK_GUARD_STDIN_TIMEOUT_MS");
    if (t && atoi(t) > 0)
        timeout = atoi(t);
    strbuf in = SB_INIT;
    bool too_big = false;
    const char *cause = NULL;
    struct guard_hook_in hin = {0};
    if (guard_read_input(0, GUARD_MAX_PAYLOAD, timeout, &in, &too_big, &cause) < 0) {
        hin.unreadable = true;
        hin.read_cause = cause;
    }
    hin.data = in.buf;
    hin.len = in.len;
    hin.protocol = proto;
    struct guard_hook_out out;
    guard_hook(&hin, &out);
    fwrite(out.out.buf, 1, out.out.len, stdout);
    fwrite(out.err.buf, 1, out.err.len, stderr);
    fflush(stdout);
    int rc = out.exit_code;
    guard_hook_out_release(&out);
    sb_release(&in);
    return rc;
}

/* ---- test ---------------------------------------------------------------- */

/* Judges one command; prints ALLOW/DENY and the reason. 1 when denied. */
static int judge_one(const struct guard_config *cfg, struct guard_ctx *x, bool ctx_ok,
                     const char *ctx_err, const char *cmd)
{
    strbuf shown = SB_INIT;
    term_sanitize(&shown, cmd, strlen(cmd));
    int denied = 1;
    if (cfg->state == GUARD_UNREADABLE || cfg->state == GUARD_BLOCKED) {
        printf("DENY  %s\n  %s%s — failing closed (%s)\n", shown.buf, GUARD_REASON_PREFIX,
               cfg->state == GUARD_UNREADABLE ? "machine config unreadable"
                                              : "machine policy unavailable",
               cfg->cause);
        if (cfg->hint)
            printf("  fix: %s\n", cfg->hint);
    } else if (!ctx_ok) {
        printf("DENY  %s\n  %s%s\n", shown.buf, GUARD_REASON_PREFIX, ctx_err);
    } else {
        struct guard_verdict v;
        guard_verdict_init(&v);
        guard_judge_shell(x, cmd, &v);
        if (v.deny) {
            printf("DENY  %s\n  %s%s\n", shown.buf, GUARD_REASON_PREFIX, v.reason.buf);
        } else {
            printf("ALLOW %s\n", shown.buf);
            denied = 0;
        }
        guard_verdict_release(&v);
    }
    sb_release(&shown);
    return denied;
}

static int do_test(int argc, char **argv, struct cli_ctx *ctx)
{
    struct guard_args a = {0};
    int prc = cli_parse(&guard_test_spec, &argc, argv, ctx, &a);
    if (prc != CLI_CONTINUE)
        return prc;
    if (a.from && argc > 1)
        return cli_usage_error("guard test", "give either a command or --from FILE");
    if (!a.from && argc < 2)
        return cli_usage_error("guard test", "guard test needs a command, e.g. agentstack guard "
                                             "test rm -rf /");
    strbuf cmds = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    if (a.from) {
        int rr;
        if (!strcmp(a.from, "-")) {
            bool big = false;
            const char *cause = NULL;
            rr = guard_read_input(0, GUARD_MAX_PAYLOAD, 600000, &cmds, &big, &cause);
            if (rr < 0)
                as_err_set(&err, "stdin: %s", big ? "more than 4 MiB" : cause);
        } else {
            rr = fs_read_file(a.from, GUARD_MAX_PAYLOAD, 0, &cmds, &err);
        }
        if (rr < 0) {
            cli_error(&err);
            sb_release(&cmds);
            return EXIT_FAIL;
        }
    } else {
        for (int i = 1; i < argc; i++)
            sb_addf(&cmds, "%s%s", i > 1 ? " " : "", argv[i]);
    }
    struct guard_config cfg;
    guard_config_load(&cfg, true);
    struct guard_ctx x;
    bool ctx_ok = cfg.state != GUARD_UNREADABLE && cfg.state != GUARD_BLOCKED &&
                  guard_ctx_build(&x, &cfg, NULL, &err) == 0;
    if (cfg.state == GUARD_UNREADABLE || cfg.state == GUARD_BLOCKED)
        memset(&x, 0, sizeof x);
    int denied = 0;
    if (!a.from) {
        denied = judge_one(&cfg, &x, ctx_ok, err.msg, cmds.buf);
    } else {
        for (char *line = cmds.buf; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            if (line[0])
                denied |= judge_one(&cfg, &x, ctx_ok, err.msg, line);
            line = nl ? nl + 1 : NULL;
        }
    }
    guard_ctx_free(&x);
    guard_config_free(&cfg);
    sb_release(&cmds);
    return denied ? EXIT_FAIL : EXIT_OK;
}

/* ---- wiring helpers ------------------------------------------------------ */

static int expand_tilde(const char *p, strbuf *out, struct as_err *err)
{
    const char *home = getenv("HOME");
    if (!home || !home[0])
        return as_err_set(err, "HOME is not set");
    sb_reset(out);
    if (p[0] == '~')
        sb_addf(out, "%s%s", home, p + 1);
    else
        sb_adds(out, p);
    return 0;
}

/* The guard's wires: one per adapter descriptor with a guard block, in the
 * registry's order (docs/adapters.md, "guard"); a wire whose file is already
 * there is not added twice. The registry must outlive them. */
struct wires {
    VEC(struct guard_wire) v;
    strvec names; /* each wire's name: the displays of the CLIs reading its file */
};

static void wires_load(const struct adp_registry *r, struct wires *ws)
{
    for (size_t i = 0; i < r->v.n; i++) {
        const struct adp_desc *d = r->v.v[i];
        bool seen = false;
        for (size_t k = 0; k < ws->v.n; k++)
            seen |= d->has_guard && !strcmp(ws->v.v[k].file, d->guard_file);
        if (!d->has_guard || seen)
            continue;
        strbuf name = SB_INIT;
        sb_adds(&name, d->display);
        for (size_t k = 0; k < d->guard_also_read_by.n; k++) {
            const struct adp_desc *o = adp_registry_find(r, d->guard_also_read_by.v[k]);
            sb_addf(&name, " / %s", o ? o->display : d->guard_also_read_by.v[k]);
        }
        strvec_push_take(&ws->names, sb_detach(&name, NULL));
        struct guard_wire w = {.name = ws->names.v[ws->names.n - 1],
                               .adapter = d->id,
                               .file = d->guard_file,
                               .key = d->guard_key,
                               .proto = d->guard_proto,
                               .shape = d->guard_shape};
        for (size_t k = 0; k < d->guard_events.n && k < GUARD_WIRE_EVENTS; k++)
            w.events[k] = d->guard_events.v[k];
        vec_push(&ws->v, w);
    }
}

static void wires_free(struct wires *ws)
{
    vec_free(&ws->v);
    strvec_clear(&ws->names);
}

/* The CLIs the guard cannot protect: no guard block, and no other CLI's
 * block says it reads that file. */
static void unprotected_list(const struct adp_registry *r, strbuf *out)
{
    for (size_t i = 0; i < r->v.n; i++) {
        const struct adp_desc *d = r->v.v[i];
        bool covered = d->has_guard;
        for (size_t k = 0; k < r->v.n && !covered; k++)
            covered =
                r->v.v[k]->has_guard && strvec_find(&r->v.v[k]->guard_also_read_by, d->id) >= 0;
        if (!covered)
            sb_addf(out, "%s%s", out->len ? ", " : "", d->id);
    }
}

/* A CLI is there when its adapter (or one that reads the same file) is
 * detected, or when the hook file of an edited shape exists. */
static bool wire_detected(const struct adp_registry *r, const struct guard_wire *w)
{
    const struct adp_desc *d = adp_registry_find(r, w->adapter);
    if (d && adp_detected(d, NULL))
        return true;
    for (size_t k = 0; d && k < d->guard_also_read_by.n; k++) {
        const struct adp_desc *o = adp_registry_find(r, d->guard_also_read_by.v[k]);
        if (o && adp_detected(o, NULL))
            return true;
    }
    strbuf p = SB_INIT;
    struct as_err e = AS_ERR_INIT;
    bool there = expand_tilde(w->file, &p, &e) == 0 && fs_exists(p.buf) &&
                 (w->shape == GUARD_W_CLAUDE || w->shape == GUARD_W_FLAT);
    sb_release(&p);
    return there;
}

/* Reads a CLI's hook file (absent → empty). */
static int read_text(const char *path, strbuf *out, bool *exists, struct as_err *err)
{
    *exists = fs_exists(path);
    if (!*exists)
        return 0;
    return fs_read_file(path, ADP_INPUT_MAX, 0, out, err);
}

/* 1 installed, 0 not, -1 unreadable. */
static int wire_state(const struct guard_wire *w, struct as_err *err)
{
    strbuf path = SB_INIT, text = SB_INIT;
    int rc = 0;
    bool exists;
    if (expand_tilde(w->file, &path, err) < 0 || read_text(path.buf, &text, &exists, err) < 0) {
        rc = -1;
    } else if (exists && (w->shape == GUARD_W_COPILOT || w->shape == GUARD_W_PLUGIN)) {
        rc = strstr(text.buf, GUARD_MARKER) != NULL;
    } else if (exists) {
        json_t *cur = NULL;
        if (adp_json_read(path.buf, text.buf, text.len, true, w->key, &cur, err) < 0)
            rc = -1;
        else
            rc = guard_wire_installed(w, cur);
        json_decref(cur);
    }
    sb_release(&path);
    sb_release(&text);
    return rc;
}

/* Adds (install) or removes our entries in one CLI's file. *changed when written. */
static int wire_apply(const struct guard_wire *w, const char *ash, bool install, bool *changed,
                      strbuf *where, struct as_err *err)
{
    strbuf path = SB_INIT, text = SB_INIT, out = SB_INIT, dir = SB_INIT;
    bool exists;
    int rc = -1;
    *changed = false;
    if (expand_tilde(w->file, &path, err) < 0 || read_text(path.buf, &text, &exists, err) < 0)
        goto out;
    sb_adds(where, path.buf);
    struct fs_write_opts o = {.mode = 0600, .symlinks = FS_SYMLINK_FOLLOW};
    if (w->shape == GUARD_W_COPILOT || w->shape == GUARD_W_PLUGIN) {
        if (!install) {
            if (exists && strstr(text.buf, GUARD_MARKER)) {
                if (unlink(path.buf) != 0) {
                    as_err_errno(err, "cannot remove %s", path.buf);
                    goto out;
                }
                *changed = true;
            }
            rc = 0;
            goto out;
        }
        guard_owned_file(w, ash, &out);
        if (exists && text.len == out.len && !memcmp(text.buf, out.buf, out.len)) {
            rc = 0;
            goto out;
        }
        sb_adds(&dir, path.buf);
        *strrchr(dir.buf, '/') = '\0';
        if (fs_mkdirs(dir.buf, 0755, err) < 0 ||
            fs_write_atomic(path.buf, out.buf, out.len, &o, err) < 0)
            goto out;
        *changed = true;
        rc = 0;
        goto out;
    }
    if (!exists && !install) {
        rc = 0;
        goto out;
    }
    json_t *cur = NULL;
    if (adp_json_read(path.buf, text.buf, text.len, true, w->key, &cur, err) < 0)
        goto out;
    json_t *next = guard_wire_edit(w, cur, ash, install);
    bool same = (cur == NULL && next == NULL) || (cur && next && json_equal(cur, next));
    json_t *ver = NULL;
    bool need_version = false;
    if (install && w->shape == GUARD_W_FLAT) {
        if (adp_json_read(path.buf, text.buf, text.len, true, "version", &ver, err) < 0) {
            json_decref(cur);
            json_decref(next);
            goto out;
        }
        need_version = ver == NULL;
        json_decref(ver);
    }
    if (same && !need_version) {
        json_decref(cur);
        json_decref(next);
        rc = 0;
        goto out;
    }
    struct adp_json_entry ups[2];
    size_t nup = 0;
    json_t *one = json_integer(1);
    if (need_version)
        ups[nup++] = (struct adp_json_entry){"version", one};
    if (next)
        ups[nup++] = (struct adp_json_entry){w->key, next};
    const char *rm[1] = {w->key};
    struct adp_json_edit ed = {.jsonc = true,
                               .location = NULL,
                               .upserts = ups,
                               .n_upserts = nup,
                               .removes = next ? NULL : rm,
                               .n_removes = next ? 0 : 1};
    int mr = adp_json_merge(path.buf, text.buf, text.len, &ed, &out, err);
    json_decref(one);
    json_decref(cur);
    json_decref(next);
    if (mr < 0)
        goto out;
    sb_adds(&dir, path.buf);
    *strrchr(dir.buf, '/') = '\0';
    if (fs_mkdirs(dir.buf, 0700, err) < 0 ||
        fs_write_atomic(path.buf, out.buf, out.len, &o, err) < 0)
        goto out;
    *changed = true;
    rc = 0;
out:
    sb_release(&path);
    sb_release(&text);
    sb_release(&out);
    sb_release(&dir);
    return rc;
}

/* Sets [guard] keys in the machine file (created when absent). */
static int machine_edit(bool install, bool *seeded_deny, struct as_err *err)
{
    strbuf path = SB_INIT, text = SB_INIT;
    int rc = -1;
    toml_edit *ed = NULL;
    toml_value *v = NULL;
    if (pol_machine_path(&path, err) < 0)
        goto out;
    bool exists = fs_exists(path.buf);
    if (exists && fs_read_file(path.buf, MANIFEST_MAX_BYTES, 0, &text, err) < 0)
        goto out;
    if (!exists) {
        if (!install) {
            rc = 0;
            goto out;
        }
        sb_adds(&text, "version = 1\n");
    }
    struct manifest_source src = {
        .kind = MANIFEST_MACHINE, .path = path.buf, .data = text.buf, .len = text.len};
    struct manifest *m = manifest_load_bytes(&src, err);
    if (!m) {
        as_err_hint(err, "fix %s first (agentstack guard status names the problem)", path.buf);
        goto out;
    }
    bool has_deny = m->guard.has_deny,
         has_roots = toml_get_path(m->root, "guard", "allow_roots", NULL) != NULL;
    manifest_free(m);
    ed = toml_edit_open(path.buf, text.buf, text.len, err);
    if (!ed)
        goto out;
    const char *p_en[] = {"guard", "enabled"};
    v = toml_new_bool(install);
    if (toml_edit_set(ed, p_en, 2, v, err) < 0)
        goto out;
    toml_free(v);
    v = NULL;
    if (install && !has_roots) {
        const char *p_r[] = {"guard", "allow_roots"};
        v = toml_new(TOML_ARRAY);
        if (toml_edit_set(ed, p_r, 2, v, err) < 0)
            goto out;
        toml_free(v);
        v = NULL;
    }
    if (install && !has_deny) {
        const char *p_d[] = {"guard", "deny"};
        v = toml_new(TOML_ARRAY);
        for (size_t i = 0; default_deny[i]; i++)
            toml_array_push(v, toml_new_string(default_deny[i]));
        if (toml_edit_set(ed, p_d, 2, v, err) < 0)
            goto out;
        toml_free(v);
        v = NULL;
        *seeded_deny = true;
    }
    size_t len;
    const char *nt = toml_edit_text(ed, &len);
    if (len == text.len && !memcmp(nt, text.buf, len)) {
        rc = 0;
        goto out;
    }
    strbuf dir = SB_INIT;
    sb_adds(&dir, path.buf);
    *strrchr(dir.buf, '/') = '\0';
    struct fs_write_opts o = {.mode = 0600, .symlinks = FS_SYMLINK_FOLLOW};
    rc = fs_mkdirs(dir.buf, 0700, err) == 0 && fs_write_atomic(path.buf, nt, len, &o, err) == 0
             ? 0
             : -1;
    sb_release(&dir);
out:
    toml_free(v);
    toml_edit_free(ed);
    sb_release(&path);
    sb_release(&text);
    return rc;
}

static int ash_path(strbuf *out, struct as_err *err)
{
    return home_dir(out, err);
}

/* ---- install / uninstall -------------------------------------------------- */

static int do_install(int argc, char **argv, struct cli_ctx *ctx)
{
    struct guard_args a = {0};
    int prc = cli_parse(&guard_install_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&guard_install_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    bool write = a.write;
    struct as_err err = AS_ERR_INIT;
    strbuf ash = SB_INIT, machine = SB_INIT;
    struct adp_registry reg = {0};
    struct wires ws = {0};
    int rc = EXIT_FAIL;
    if (ash_path(&ash, &err) < 0 || pol_machine_path(&machine, &err) < 0 ||
        adp_registry_load(&reg, true, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    wires_load(&reg, &ws);
    if (!write) {
        printf("Host guard install plan\n");
        printf("  · %s: [guard] enabled = true (allow_roots = [] and the default deny list "
               "when absent)\n",
               machine.buf);
        printf("  · wrapper %s/guard/%s\n", ash.buf, GUARD_MARKER);
        for (size_t i = 0; i < ws.v.n; i++) {
            const struct guard_wire *w = &ws.v.v[i];
            if (wire_detected(&reg, w))
                printf("  + %s → %s\n", w->name, w->file);
            else
                printf("  · %s not detected — skipped\n", w->name);
        }
        printf("Nothing written. Re-run with --write to install the guard.\n");
        rc = EXIT_OK;
        goto out;
    }
    struct as_lock lk = {-1};
    if (home_ensure(HOME_GUARD_DIR, &ash, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    ash_path(&ash, &err);
    if (lock_acquire(&lk, ash.buf, LOCK_WAIT_MS, &err) < 0) {
        cli_error(&err);
        goto out;
    }
    bool seeded = false;
    if (machine_edit(true, &seeded, &err) < 0) {
        lock_release(&lk);
        cli_error(&err);
        goto out;
    }
    printf("✓ %s: [guard] enabled = true%s\n", machine.buf,
           seeded ? " (seeded the default deny list)" : "");
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        lock_release(&lk);
        as_err_errno(&err, "cannot find this agentstack binary");
        cli_error(&err);
        goto out;
    }
    exe[n] = '\0';
    strbuf wrapper = SB_INIT, script = SB_INIT;
    sb_addf(&wrapper, "%s/guard/%s", ash.buf, GUARD_MARKER);
    guard_wrapper_script(exe, &script);
    struct fs_write_opts wo = {.mode = 0755, .symlinks = FS_SYMLINK_REFUSE};
    int wr = fs_write_atomic(wrapper.buf, script.buf, script.len, &wo, &err);
    if (wr == 0)
        chmod(wrapper.buf, 0755);
    sb_release(&script);
    if (wr < 0) {
        sb_release(&wrapper);
        lock_release(&lk);
        cli_error(&err);
        goto out;
    }
    printf("✓ wrapper %s\n", wrapper.buf);
    sb_release(&wrapper);
    size_t failed = 0;
    for (size_t i = 0; i < ws.v.n; i++) {
        const struct guard_wire *w = &ws.v.v[i];
        if (!wire_detected(&reg, w)) {
            printf("· %s not detected — skipped\n", w->name);
            continue;
        }
        bool changed;
        strbuf where = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        if (wire_apply(w, ash.buf, true, &changed, &where, &e2) < 0) {
            char buf[4096];
            printf("✗ %s: %s\n", w->name, as_err_str(&e2, buf, sizeof buf));
            failed++;
        } else {
            printf("✓ %s hook %s %s\n", w->name, changed ? "installed in" : "already in",
                   where.buf);
        }
        sb_release(&where);
    }
    lock_release(&lk);
    printf("The guard is cooperative: it protects the CLIs that honour their hook. Check it: "
           "agentstack guard status\n");
    rc = failed ? EXIT_FAIL : EXIT_OK;
out:
    wires_free(&ws);
    adp_registry_free(&reg);
    sb_release(&ash);
    sb_release(&machine);
    return rc;
}

static int do_uninstall(int argc, char **argv, struct cli_ctx *ctx)
{
    struct guard_args a = {0};
    int prc = cli_parse(&guard_uninstall_spec, &argc, argv, ctx, &a);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&guard_uninstall_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    struct as_err err = AS_ERR_INIT;
    strbuf ash = SB_INIT;
    int rc = EXIT_OK;
    /* Every file a hook may be in: the descriptors as they are now, and the
     * built-ins too, so a drop-in that overrides a CLI without a guard block
     * does not leave our entry behind. */
    struct adp_registry reg = {0}, builtin = {0};
    struct wires ws = {0};
    if (ash_path(&ash, &err) < 0 || adp_registry_load(&reg, true, &err) < 0 ||
        adp_registry_load(&builtin, false, &err) < 0) {
        cli_error(&err);
        adp_registry_free(&reg);
        sb_release(&ash);
        return EXIT_FAIL;
    }
    wires_load(&reg, &ws);
    wires_load(&builtin, &ws);
    struct as_lock lk = {-1};
    bool locked = fs_is_dir(ash.buf) && lock_acquire(&lk, ash.buf, LOCK_WAIT_MS, &err) == 0;
    if (fs_is_dir(ash.buf) && !locked) {
        cli_error(&err);
        rc = EXIT_FAIL;
        goto out;
    }
    for (size_t i = 0; i < ws.v.n; i++) {
        const struct guard_wire *w = &ws.v.v[i];
        bool changed;
        strbuf where = SB_INIT;
        struct as_err e2 = AS_ERR_INIT;
        if (wire_apply(w, ash.buf, false, &changed, &where, &e2) < 0) {
            char buf[4096];
            printf("✗ %s: %s\n", w->name, as_err_str(&e2, buf, sizeof buf));
            rc = EXIT_FAIL;
        } else if (changed) {
            printf("✓ removed the %s hook from %s\n", w->name, where.buf);
        }
        sb_release(&where);
    }
    strbuf wrapper = SB_INIT;
    sb_addf(&wrapper, "%s/guard/%s", ash.buf, GUARD_MARKER);
    if (unlink(wrapper.buf) == 0)
        printf("✓ removed %s\n", wrapper.buf);
    sb_release(&wrapper);
    bool seeded = false;
    if (machine_edit(false, &seeded, &err) < 0) {
        cli_error(&err);
        rc = EXIT_FAIL;
    } else {
        printf("✓ [guard] enabled = false\n");
    }
    if (locked)
        lock_release(&lk);
out:
    wires_free(&ws);
    adp_registry_free(&builtin);
    adp_registry_free(&reg);
    sb_release(&ash);
    return rc;
}

/* ---- status --------------------------------------------------------------- */

static void join_list(const strvec *v, strbuf *out)
{
    for (size_t i = 0; i < v->n; i++)
        sb_addf(out, "%s%s", i ? ", " : "", v->v[i]);
}

static int do_status(int argc, char **argv, struct cli_ctx *ctx)
{
    int prc = cli_parse(&guard_status_spec, &argc, argv, ctx, NULL);
    if (prc == CLI_CONTINUE)
        prc = cli_no_arguments(&guard_status_spec, argc, argv);
    if (prc != CLI_CONTINUE)
        return prc;
    struct guard_config cfg, lists;
    guard_config_load(&cfg, false);
    guard_config_load(&lists, true);
    const char *file = cfg.path ? cfg.path : "~/.agentstack/agentstack.toml";
    int rc = EXIT_OK;
    switch (cfg.state) {
    case GUARD_ON:
        printf("guard: enabled\n");
        break;
    case GUARD_OFF:
        printf("guard: disabled (no [guard] enabled = true in %s) ↳ agentstack guard install "
               "--write\n",
               file);
        break;
    case GUARD_UNREADABLE:
    case GUARD_BLOCKED:
        printf("guard: BLOCKED — machine config unreadable (%s) — every hook call is refused\n",
               cfg.cause);
        if (cfg.hint)
            printf("  ↳ %s\n", cfg.hint);
        rc = EXIT_FAIL;
        break;
    }
    enum pol_machine_state pst = POL_UNCONFIGURED;
    struct as_err err = AS_ERR_INIT;
    struct pol_layer *ml = cfg.path ? pol_machine_load(cfg.path, &pst, &err) : NULL;
    printf("machine policy: %s\n", pst == POL_CURRENT        ? "current"
                                   : pst == POL_UNCONFIGURED ? "unconfigured"
                                                             : "BLOCKED");
    if (ml)
        pol_layer_free(ml);
    strbuf s = SB_INIT;
    join_list(&lists.guard_deny, &s);
    printf("deny globs (%zu) %s\n", lists.guard_deny.n, lists.guard_deny.n ? s.buf : "—");
    sb_reset(&s);
    join_list(&lists.allow_roots, &s);
    printf("allow_roots %s\n",
           lists.allow_roots.n ? s.buf : "(none) — writes stay in the workspace and temp dirs");
    sb_release(&s);
    struct adp_registry reg = {0};
    struct wires ws = {0};
    if (adp_registry_load(&reg, true, &err) == 0) {
        wires_load(&reg, &ws);
        for (size_t i = 0; i < ws.v.n; i++) {
            const struct guard_wire *w = &ws.v.v[i];
            struct as_err e2 = AS_ERR_INIT;
            int st = wire_state(w, &e2);
            if (st == 1)
                printf("  ✓ %s hook installed\n", w->name);
            else if (st < 0)
                printf("  ✗ %s hook file unreadable: %s\n", w->name, e2.msg);
            else if (wire_detected(&reg, w))
                printf("  ✗ %s detected, hook missing ↳ agentstack guard install --write\n",
                       w->name);
            else
                printf("  · %s not detected\n", w->name);
        }
        strbuf none = SB_INIT;
        unprotected_list(&reg, &none);
        if (none.len)
            printf("NOT protected: %s (no pre-tool hook wired)\n", none.buf);
        sb_release(&none);
    }
    wires_free(&ws);
    adp_registry_free(&reg);
    guard_config_free(&cfg);
    guard_config_free(&lists);
    return rc;
}

int cmd_guard(int argc, char **argv, struct cli_ctx *ctx)
{
    return cli_dispatch(&cmd_guard_spec, argc, argv, ctx);
}
