/* The host guard's corpus (tests/guard/corpus.txt), every entry through the
 * hook in every dialect: a shell command as each CLI's shell tool sends it
 * (Codex as bash -lc, the way Codex runs commands), a read/write/edit/grep/
 * glob line as each CLI's own tool. guard_hook is the whole hook minus
 * reading stdin (tests/guard/test_corpus.py drives the real binary over
 * the review's attacks). Each wrong verdict is printed with its line and
 * reason; the test fails if there is one. @BIN@ is this test binary: the
 * guard knows "this binary" by inode and bytes, so a link or copy of it
 * must be judged as agentstack. */
#include <jansson.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "base/xalloc.h"
#include "guard/guard.h"

static char *root, *home, *ash, *ws, *tmp, *self;

static const char *const machine =
    "version = 1\n[guard]\nenabled = true\nallow_roots = []\n"
    "deny = [\".env\", \".env.local\", \".env.*.local\", \".env.production\", "
    "\".env.development\", \"id_rsa\", \"id_ed25519\", \"id_ecdsa\", \"*.pem\", \".netrc\"]\n";

static void fixture(void)
{
    static const char *const files[][2] = {
        {"home/.agentstack/trust.json", "{\"trusted\": {}}\n"},
        {"home/.agentstack/keys/ed25519.key", "00\n"},
        {"home/.agentstack/secrets.env", "TOKEN=1\n"},
        {"home/.agentstack/audit/key", "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"},
        {"home/.ssh/id_rsa", "PRIVATE\n"},
        {"home/.ssh/id_ed25519", "PRIVATE\n"},
        {"home/.netrc", "machine x password y\n"},
        {"home/.bashrc", "# rc\n"},
        {"home/proj/.agentstack/agentstack.toml",
         "version = 1\n[policy.filesystem]\ndeny = [\"secrets/**\"]\n"},
        {"home/proj/.env", "SECRET=1\n"},
        {"home/proj/sub/.env.local", "SECRET=2\n"},
        {"home/proj/key.pem", "-----BEGIN KEY-----\n"},
        {"home/proj/secrets/db.txt", "pw\n"},
        {"home/proj/src/a.c", "int a;\n"},
        {"home/proj/src/b.c", "int b;\n"},
        {"home/proj/Makefile", "all:\n\t@true\n"},
        {"home/proj/README.md", "readme\n"},
        {"home/proj/package.json", "{}\n"},
        {"home/proj/a.txt", "a\n"},
        {"home/proj/list.txt", "build\n"},
        {"home/proj/.git/config", "[core]\n"},
        {"home/proj/build/.keep", ""},
        {"tmp/.keep", ""},
    };
    char *h = xasprintf("%s/home", root);
    mkdir(h, 0700);
    free(h);
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        free(tu_write(root, files[i][0], files[i][1]));
    free(tu_write(root, "home/.agentstack/agentstack.toml", machine));
    mkdir(ash, 0700);
    /* links a person made before: the guard follows them */
    char *l = xasprintf("%s/link-env", ws);
    assert_int_equal(symlink(".env", l), 0);
    free(l);
    l = xasprintf("%s/homelink", ws);
    assert_int_equal(symlink(ash, l), 0);
    free(l);
    l = xasprintf("%s/slink", ws);
    assert_int_equal(symlink("secrets", l), 0);
    free(l);
}

static int setup(void **state)
{
    (void)state;
    /* not under /tmp: /tmp is one of the guard's write roots, and the
     * fixture's home must not be */
    char tmpl[] = "/var/tmp/as-corpus-XXXXXX";
    root = mkdtemp(tmpl) ? xstrdup(tmpl) : NULL;
    assert_non_null(root);
    char buf[PATH_MAX];
    assert_non_null(realpath(root, buf));
    free(root);
    root = xstrdup(buf);
    home = xasprintf("%s/home", root);
    ash = xasprintf("%s/home/.agentstack", root);
    ws = xasprintf("%s/home/proj", root);
    tmp = xasprintf("%s/tmp", root);
    setenv("HOME", home, 1);
    setenv("AGENTSTACK_HOME", ash, 1);
    setenv("TMPDIR", tmp, 1);
    unsetenv("CDPATH");
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    self = xstrdup(buf);
    fixture();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    free(home);
    free(ash);
    free(ws);
    free(tmp);
    free(self);
    tu_rmtree(root);
    return 0;
}

/* ---- the corpus ---------------------------------------------------------- */

static void subst(const char *in, strbuf *out)
{
    static const char *const keys[] = {"@HOME@", "@ASH@", "@WS@", "@BIN@", "@TMP@"};
    const char *vals[] = {home, ash, ws, self, tmp};
    for (const char *p = in; *p;) {
        if (p[0] == '\\' && (p[1] == 'n' || p[1] == 't')) {
            sb_addc(out, p[1] == 'n' ? '\n' : '\t');
            p += 2;
            continue;
        }
        bool hit = false;
        for (size_t k = 0; k < 5 && !hit; k++)
            if (!strncmp(p, keys[k], strlen(keys[k]))) {
                sb_adds(out, vals[k]);
                p += strlen(keys[k]);
                hit = true;
            }
        if (!hit)
            sb_addc(out, *p++);
    }
}

static const char *const protos[] = {"claude",  "codex",       "gemini",   "cursor",
                                     "copilot", "antigravity", "windsurf", NULL};

static json_t *shell_payload(const char *p, const char *cmd)
{
    if (!strcmp(p, "claude"))
        return json_pack("{s:s,s:s,s:s,s:{s:s}}", "cwd", ws, "hook_event_name", "PreToolUse",
                         "tool_name", "Bash", "tool_input", "command", cmd);
    if (!strcmp(p, "codex"))
        return json_pack("{s:s,s:s,s:s,s:{s:[s,s,s],s:s}}", "turn_id", "t", "cwd", ws, "tool_name",
                         "shell", "tool_input", "command", "bash", "-lc", cmd, "workdir", ws);
    if (!strcmp(p, "gemini"))
        return json_pack("{s:s,s:s,s:s,s:{s:s}}", "cwd", ws, "hook_event_name", "BeforeTool",
                         "tool_name", "run_shell_command", "tool_input", "command", cmd);
    if (!strcmp(p, "cursor"))
        return json_pack("{s:s,s:s,s:s}", "hook_event_name", "beforeShellExecution", "command", cmd,
                         "cwd", ws);
    if (!strcmp(p, "copilot")) {
        json_t *a = json_pack("{s:s}", "command", cmd);
        char *s = json_dumps(a, JSON_COMPACT);
        json_t *r = json_pack("{s:s,s:s,s:s}", "cwd", ws, "toolName", "bash", "toolArgs", s);
        free(s);
        json_decref(a);
        return r;
    }
    if (!strcmp(p, "antigravity"))
        return json_pack("{s:s,s:{s:s,s:{s:s}}}", "cwd", ws, "toolCall", "name", "run_command",
                         "args", "command", cmd);
    return json_pack("{s:s,s:{s:s,s:s}}", "agent_action_name", "pre_run_command", "tool_info",
                     "command_line", cmd, "cwd", ws);
}

/* The dialect's own tool for kind, or NULL when it has none. */
static json_t *tool_payload(const char *p, const char *kind, const char *arg)
{
    bool rd = !strcmp(kind, "read"), wr = !strcmp(kind, "write"), ed = !strcmp(kind, "edit"),
         gr = !strcmp(kind, "grep"), gl = !strcmp(kind, "glob");
    json_t *in = NULL;
    const char *tool = NULL;
    if (!strcmp(p, "claude")) {
        tool = rd ? "Read" : wr ? "Write" : ed ? "Edit" : gr ? "Grep" : "Glob";
        in = rd   ? json_pack("{s:s}", "file_path", arg)
             : wr ? json_pack("{s:s,s:s}", "file_path", arg, "content", "x")
             : ed ? json_pack("{s:s,s:s,s:s}", "file_path", arg, "old_string", "a", "new_string",
                              "b")
             : gr ? json_pack("{s:s,s:s,s:s}", "pattern", "SECRET", "glob", arg, "output_mode",
                              "content")
                  : json_pack("{s:s}", "pattern", arg);
        return json_pack("{s:s,s:s,s:s,s:o}", "cwd", ws, "hook_event_name", "PreToolUse",
                         "tool_name", tool, "tool_input", in);
    }
    if (!strcmp(p, "codex")) {
        if (wr || ed) {
            strbuf e = SB_INIT;
            sb_addf(&e, "*** Begin Patch\n*** %s File: %s\n+x\n*** End Patch\n",
                    wr ? "Add" : "Update", arg);
            json_t *r = json_pack("{s:s,s:s,s:s,s:{s:s}}", "turn_id", "t", "cwd", ws, "tool_name",
                                  "apply_patch", "tool_input", "input", e.buf);
            sb_release(&e);
            return r;
        }
        if (rd)
            return json_pack("{s:s,s:s,s:s,s:{s:s}}", "turn_id", "t", "cwd", ws, "tool_name",
                             "read_file", "tool_input", "file_path", arg);
        if (gr)
            return json_pack("{s:s,s:s,s:s,s:{s:s,s:s}}", "turn_id", "t", "cwd", ws, "tool_name",
                             "grep_files", "tool_input", "pattern", "SECRET", "include", arg);
        return NULL;
    }
    if (!strcmp(p, "gemini")) {
        tool = rd   ? "read_file"
               : wr ? "write_file"
               : ed ? "replace"
               : gr ? "search_file_content"
                    : "glob";
        in = rd   ? json_pack("{s:s}", "absolute_path", arg)
             : wr ? json_pack("{s:s,s:s}", "file_path", arg, "content", "x")
             : ed ? json_pack("{s:s,s:s,s:s}", "file_path", arg, "old_string", "a", "new_string",
                              "b")
             : gr ? json_pack("{s:s,s:s}", "pattern", "SECRET", "include", arg)
                  : json_pack("{s:s}", "pattern", arg);
        return json_pack("{s:s,s:s,s:s,s:o}", "cwd", ws, "hook_event_name", "BeforeTool",
                         "tool_name", tool, "tool_input", in);
    }
    if (!strcmp(p, "cursor"))
        return rd ? json_pack("{s:s,s:s,s:s,s:s}", "hook_event_name", "beforeReadFile", "file_path",
                              arg, "content", "", "cwd", ws)
                  : NULL;
    if (!strcmp(p, "copilot")) {
        tool = rd ? "view" : wr ? "create" : ed ? "str_replace" : gr ? "grep" : "glob";
        in = rd   ? json_pack("{s:s}", "path", arg)
             : wr ? json_pack("{s:s,s:s}", "path", arg, "file_text", "x")
             : ed ? json_pack("{s:s,s:s,s:s}", "path", arg, "old_str", "a", "new_str", "b")
             : gr ? json_pack("{s:s,s:s}", "pattern", "SECRET", "glob", arg)
                  : json_pack("{s:s}", "pattern", arg);
        char *s = json_dumps(in, JSON_COMPACT);
        json_t *r = json_pack("{s:s,s:s,s:s}", "cwd", ws, "toolName", tool, "toolArgs", s);
        free(s);
        json_decref(in);
        return r;
    }
    if (!strcmp(p, "antigravity")) {
        if (gr || gl)
            return NULL;
        tool = rd ? "view_file" : wr ? "write_to_file" : "replace_file_content";
        in = rd   ? json_pack("{s:s}", "AbsolutePath", arg)
             : wr ? json_pack("{s:s,s:s}", "TargetFile", arg, "CodeContent", "x")
                  : json_pack("{s:s,s:s,s:s}", "TargetFile", arg, "TargetContent", "a",
                              "ReplacementContent", "b");
        return json_pack("{s:s,s:{s:s,s:o}}", "cwd", ws, "toolCall", "name", tool, "args", in);
    }
    /* windsurf */
    if (rd)
        return json_pack("{s:s,s:{s:s,s:s}}", "agent_action_name", "pre_read_code", "tool_info",
                         "file_path", arg, "cwd", ws);
    if (wr || ed)
        return json_pack("{s:s,s:{s:s,s:[],s:s}}", "agent_action_name", "pre_write_code",
                         "tool_info", "file_path", arg, "edits", "cwd", ws);
    return NULL;
}

/* The reason text of a deny answer (any dialect), or "". */
static const char *deny_reason(const char *proto, const struct guard_hook_out *o, char *buf,
                               size_t cap)
{
    if (!strcmp(proto, "windsurf")) {
        snprintf(buf, cap, "%s", o->err.buf ? o->err.buf : "");
        return buf;
    }
    json_t *j = json_loads(o->out.buf ? o->out.buf : "", 0, NULL);
    const char *r = NULL;
    if (j) {
        json_t *h = json_object_get(j, "hookSpecificOutput");
        r = json_string_value(json_object_get(h, "permissionDecisionReason"));
        if (!r)
            r = json_string_value(json_object_get(j, "reason"));
        if (!r)
            r = json_string_value(json_object_get(j, "agent_message"));
        if (!r)
            r = json_string_value(json_object_get(j, "permissionDecisionReason"));
    }
    snprintf(buf, cap, "%s", r ? r : "");
    json_decref(j);
    return buf;
}

/* Every entry of the corpus in one dialect (only). */
static void corpus_in(const char *only)
{
    const char *src = getenv("AS_SRC");
    char *path = xasprintf("%s/tests/guard/corpus.txt", src ? src : ".");
    size_t len;
    char *text = tu_read(path, &len);
    if (!text)
        fail_msg("cannot read %s", path);
    size_t entries = 0, judged = 0, wrong = 0, lineno = 0;
    char reason[2048];
    for (char *line = text; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        lineno++;
        char *tab = strchr(line, '\t');
        if (line[0] && line[0] != '#' && tab) {
            *tab = '\0';
            bool want_deny = !strcmp(line, "DENY");
            if (!want_deny && strcmp(line, "ALLOW") != 0)
                fail_msg("corpus.txt:%zu: bad verdict '%s'", lineno, line);
            const char *rest = tab + 1, *kind = "shell";
            static const char *const kinds[] = {"read", "write", "edit", "grep", "glob", NULL};
            for (size_t k = 0; kinds[k] && !strncmp(rest, "tool:", 5); k++) {
                size_t kl = strlen(kinds[k]);
                if (!strncmp(rest + 5, kinds[k], kl) && rest[5 + kl] == ' ') {
                    kind = kinds[k];
                    rest += 5 + kl + 1;
                }
            }
            if (!strncmp(rest, "tool:", 5))
                fail_msg("corpus.txt:%zu: unknown tool kind", lineno);
            strbuf cmd = SB_INIT;
            subst(rest, &cmd);
            entries++;
            for (size_t p = 0; protos[p]; p++) {
                if (strcmp(protos[p], only) != 0)
                    continue;
                json_t *pl = !strcmp(kind, "shell") ? shell_payload(protos[p], cmd.buf)
                                                    : tool_payload(protos[p], kind, cmd.buf);
                if (!pl)
                    continue;
                char *data = json_dumps(pl, JSON_COMPACT);
                json_decref(pl);
                struct guard_hook_in in = {
                    .data = data, .len = strlen(data), .protocol = protos[p], .cwd = ws};
                struct guard_hook_out o;
                guard_hook(&in, &o);
                judged++;
                deny_reason(protos[p], &o, reason, sizeof reason);
                if (o.denied != want_deny) {
                    wrong++;
                    printf("WRONG corpus.txt:%zu [%s] %s expected, got %s: %s\n      %.400s\n",
                           lineno, protos[p], want_deny ? "DENY" : "ALLOW",
                           o.denied ? "DENY" : "ALLOW", cmd.buf, reason);
                } else if (o.denied &&
                           strncmp(reason, GUARD_REASON_PREFIX, strlen(GUARD_REASON_PREFIX))) {
                    wrong++;
                    printf("WRONG corpus.txt:%zu [%s] reason without the prefix: %s\n", lineno,
                           protos[p], reason);
                }
                guard_hook_out_release(&o);
                free(data);
            }
            sb_release(&cmd);
        }
        line = nl ? nl + 1 : NULL;
    }
    printf("corpus: %zu entries, %zu judgments in %s, %zu wrong\n", entries, judged, only, wrong);
    free(text);
    free(path);
    assert_true(entries >= 240);
    assert_true(judged > 0);
    assert_int_equal(wrong, 0);
}

/* One test per dialect, so ctest runs them side by side (tu_split). */
#define CORPUS_TEST(proto)                                                                         \
    static void test_corpus_##proto(void **state)                                                  \
    {                                                                                              \
        (void)state;                                                                               \
        corpus_in(#proto);                                                                         \
    }
CORPUS_TEST(claude)
CORPUS_TEST(codex)
CORPUS_TEST(gemini)
CORPUS_TEST(cursor)
CORPUS_TEST(copilot)
CORPUS_TEST(antigravity)
CORPUS_TEST(windsurf)

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_corpus_claude),   cmocka_unit_test(test_corpus_codex),
        cmocka_unit_test(test_corpus_gemini),   cmocka_unit_test(test_corpus_cursor),
        cmocka_unit_test(test_corpus_copilot),  cmocka_unit_test(test_corpus_antigravity),
        cmocka_unit_test(test_corpus_windsurf),
    };
    tu_split(argc, argv);
    return cmocka_run_group_tests(tests, setup, teardown);
}
