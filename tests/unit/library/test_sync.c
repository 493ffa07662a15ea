/* Unit tests: lib sync — the secret gates, git plumbing against local bare
 * repositories (never the network), and the git runner's deadline. */
#include "../testutil.h"

#include "base/fs.h"
#include "library/git.h"
#include "library/library.h"
#include "library/sync.h"

static char *home_of(const char *root)
{
    char *h = NULL;
    assert_true(asprintf(&h, "%s/home/.agentstack", root) > 0);
    mkdir(h, 0700);
    return h;
}

static void git_in(const char *dir, const char *a, const char *b, const char *c, const char *d)
{
    const char *args[] = {a, b, c, d, NULL};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_git_ok(dir, args, NULL, &err), 0);
}

/* The files a bare remote holds on main, newline-joined. */
static char *remote_files(const char *bare)
{
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    char *gd = NULL;
    assert_true(asprintf(&gd, "--git-dir=%s", bare) > 0);
    const char *args[] = {gd, "ls-tree", "-r", "--name-only", "main", NULL};
    int st = lib_git(NULL, args, &out, NULL, &err);
    free(gd);
    if (st != 0) {
        sb_release(&out);
        return strdup("");
    }
    return sb_detach(&out, NULL);
}

static void test_scan_tree(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    free(tu_write(root, "servers/kibana.toml",
                  "type = \"http\"\nurl = \"https://k\"\n[headers]\n"
                  "Authorization = \"Bearer sk-1\"\n"));
    free(tu_write(root, "servers/ok.toml",
                  "type = \"http\"\nurl = \"https://k\"\n[headers]\n"
                  "Authorization = \"Bearer ${OK_TOKEN}\"\n"));
    free(tu_write(root, "servers/broken.toml", "type = \"http\n"));
    free(tu_write(root, "skills/x/SKILL.md", "use ghp_aB3dE5fG7hI9jK1lM3nO5pQ7rS9tU1vW3xY5\n"));
    free(tu_write(root, ".trash/server-old-1/kibana.toml", "token = \"abc\"\n"));
    lib_secret_hits h = VEC_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_secret_scan_tree(root, &h, &err), 0);
    bool kib = false, broken = false, skill = false, ok = false, trash = false;
    for (size_t i = 0; i < h.n; i++) {
        kib |= strcmp(h.v[i].file, "servers/kibana.toml") == 0 &&
               strcmp(h.v[i].key, "Authorization") == 0;
        broken |= strcmp(h.v[i].file, "servers/broken.toml") == 0 && h.v[i].unparsable;
        skill |= strcmp(h.v[i].file, "skills/x/SKILL.md") == 0;
        ok |= strcmp(h.v[i].file, "servers/ok.toml") == 0;
        trash |= strncmp(h.v[i].file, ".trash", 6) == 0;
    }
    assert_true(kib);
    assert_true(broken);
    assert_true(skill);
    assert_false(ok);
    assert_false(trash);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    lib_secret_report(f, root, &h, false);
    fclose(f);
    assert_non_null(strstr(buf, "refusing to sync — 'Authorization' looks like a literal secret"));
    assert_non_null(strstr(buf, "refusing to sync — a server definition holds a literal secret"));
    assert_non_null(strstr(buf, "servers/kibana.toml: 'Authorization' has a literal value that "
                                "looks like a secret — use ${REF} instead"));
    assert_non_null(strstr(buf, "cannot be parsed as a server definition"));
    assert_non_null(strstr(buf, "--allow-secrets"));
    assert_non_null(strstr(buf, "Bearer ${KIBANA_TOKEN}"));
    assert_null(strstr(buf, "sk-1")); /* never the value */
    free(buf);
    lib_secret_hits_free(&h);
    tu_rmtree(root);
}

struct fixture {
    char *root, *home, *lib, *bare;
};

static void setup(struct fixture *fx)
{
    fx->root = tu_tmpdir();
    fx->home = home_of(fx->root);
    assert_true(asprintf(&fx->lib, "%s/lib", fx->home) > 0);
    assert_true(asprintf(&fx->bare, "%s/remote.git", fx->root) > 0);
    git_in(NULL, "init", "-q", "--bare", fx->bare);
    mkdir(fx->lib, 0755);
    free(tu_write(fx->lib, "skills/review/SKILL.md", "---\ndescription: r\n---\n"));
    free(tu_write(fx->lib, "servers/kibana.toml",
                  "type = \"http\"\nurl = \"https://k\"\n[headers]\n"
                  "Authorization = \"Bearer ${KIBANA_TOKEN}\"\n"));
    free(tu_write(fx->lib, ".trash/skill-old-1/entry.toml", "kind = \"skill\"\n"));
}

static void teardown(struct fixture *fx)
{
    free(fx->home);
    free(fx->lib);
    free(fx->bare);
    tu_rmtree(fx->root);
}

static int sync_run(struct fixture *fx, struct lib_sync_opts *o, char **diag)
{
    struct as_err err = AS_ERR_INIT;
    struct library *lib = lib_open(fx->home, &err);
    assert_non_null(lib);
    size_t len;
    char *outb = NULL;
    FILE *out = open_memstream(&outb, &len);
    FILE *d = open_memstream(diag, &len);
    o->out = out;
    o->diag = d;
    int r = lib_sync(lib, o, &err);
    fclose(out);
    fclose(d);
    free(outb);
    if (r < 0) {
        free(*diag);
        *diag = strdup(err.msg);
    }
    lib_free(lib);
    return r;
}

static void test_sync_roundtrip(void **state)
{
    (void)state;
    if (!lib_git_available())
        tu_skip("git is not installed");
    struct fixture fx;
    setup(&fx);
    char *diag = NULL;
    /* a plain folder is not synced until it opts in */
    struct lib_sync_opts o = {0};
    assert_int_equal(sync_run(&fx, &o, &diag), -1);
    assert_non_null(strstr(diag, "not a git repository"));
    free(diag);

    struct lib_sync_opts init = {.init = true, .remote = fx.bare};
    assert_int_equal(sync_run(&fx, &init, &diag), 0);
    free(diag);
    char *none = remote_files(fx.bare);
    assert_string_equal(none, ""); /* init does not push */
    free(none);
    struct lib_sync_opts s = {0};
    assert_int_equal(sync_run(&fx, &s, &diag), 0);
    free(diag);
    char *files = remote_files(fx.bare);
    assert_non_null(strstr(files, "skills/review/SKILL.md"));
    assert_non_null(strstr(files, "servers/kibana.toml"));
    assert_non_null(strstr(files, ".gitignore"));
    assert_null(strstr(files, ".trash"));
    free(files);

    /* the library's own git config and hooks run nothing */
    char *marker = NULL, *cmd = NULL, *hook = NULL;
    assert_true(asprintf(&marker, "%s/pwned", fx.root) > 0);
    assert_true(asprintf(&cmd, "touch %s; git-receive-pack", marker) > 0);
    git_in(fx.lib, "config", "remote.origin.receivepack", cmd, NULL);
    assert_true(asprintf(&hook, "%s/.git/hooks/pre-commit", fx.lib) > 0);
    char *hook_text = NULL;
    assert_true(asprintf(&hook_text, "#!/bin/sh\ntouch %s\n", marker) > 0);
    FILE *hf = fopen(hook, "w");
    assert_non_null(hf);
    fputs(hook_text, hf);
    fclose(hf);
    chmod(hook, 0755);
    free(tu_write(fx.lib, "skills/review/more.md", "more\n"));
    assert_int_equal(sync_run(&fx, &s, &diag), 0);
    free(diag);
    assert_false(fs_exists(marker));
    files = remote_files(fx.bare);
    assert_non_null(strstr(files, "skills/review/more.md"));
    free(files);
    free(hook_text);
    free(hook);
    free(cmd);
    free(marker);

    /* a literal secret refuses the sync and nothing new is pushed */
    free(
        tu_write(fx.lib, "servers/leak.toml", "type = \"http\"\nurl = \"https://h/?api_key=x\"\n"));
    assert_int_equal(sync_run(&fx, &s, &diag), 1);
    assert_non_null(strstr(diag, "refusing to sync — 'api_key' looks like a literal secret"));
    free(diag);
    files = remote_files(fx.bare);
    assert_null(strstr(files, "leak.toml"));
    free(files);
    /* and nothing was committed locally either */
    strbuf st = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    const char *status[] = {"status", "--porcelain", NULL};
    assert_int_equal(lib_git(fx.lib, status, &st, NULL, &err), 0);
    assert_non_null(strstr(st.buf, "leak.toml"));
    sb_release(&st);
    /* --allow-secrets overrides */
    struct lib_sync_opts allow = {.allow_secrets = true};
    assert_int_equal(sync_run(&fx, &allow, &diag), 0);
    free(diag);
    files = remote_files(fx.bare);
    assert_non_null(strstr(files, "servers/leak.toml"));
    free(files);
    teardown(&fx);
}

static void test_history_gate(void **state)
{
    (void)state;
    if (!lib_git_available())
        tu_skip("git is not installed");
    struct fixture fx;
    setup(&fx);
    char *diag = NULL;
    struct lib_sync_opts init = {.init = true, .remote = fx.bare};
    assert_int_equal(sync_run(&fx, &init, &diag), 0);
    free(diag);
    /* a secret committed by hand, then deleted: the tree is clean, history is not */
    free(tu_write(fx.lib, "servers/old.toml",
                  "type = \"stdio\"\ncommand = \"x\"\n[env]\n"
                  "GITHUB_TOKEN = \"abc123\"\n"));
    git_in(fx.lib, "add", "-A", NULL, NULL);
    git_in(fx.lib, "commit", "-qm", "oops", NULL);
    git_in(fx.lib, "rm", "-q", "servers/old.toml", NULL);
    git_in(fx.lib, "commit", "-qm", "fix", NULL);
    struct lib_sync_opts s = {0};
    assert_int_equal(sync_run(&fx, &s, &diag), 1);
    assert_non_null(strstr(diag, "a secret in an earlier commit is still in the outgoing history"));
    assert_non_null(strstr(diag, "commit "));
    assert_non_null(strstr(diag, "servers/old.toml: 'GITHUB_TOKEN'"));
    free(diag);
    char *files = remote_files(fx.bare);
    assert_string_equal(files, "");
    free(files);
    teardown(&fx);
}

static void test_git_failures_are_errors(void **state)
{
    (void)state;
    if (!lib_git_available())
        tu_skip("git is not installed");
    struct fixture fx;
    setup(&fx);
    char *diag = NULL;
    char *nowhere = NULL;
    assert_true(asprintf(&nowhere, "%s/no-such-remote.git", fx.root) > 0);
    struct lib_sync_opts init = {.init = true, .remote = nowhere};
    assert_int_equal(sync_run(&fx, &init, &diag), 0); /* non-empty folder: git init + origin */
    free(diag);
    struct lib_sync_opts s = {0};
    assert_int_equal(sync_run(&fx, &s, &diag), -1);
    assert_non_null(strstr(diag, "library pull failed"));
    assert_non_null(strstr(diag, nowhere));
    free(diag);
    /* remote helpers are refused before anything runs */
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(lib_git_url_check("ext::sh -c touch% /tmp/pwned", false, &err), -1);
    assert_int_equal(lib_git_url_check("-uhack", false, &err), -1);
    assert_int_equal(lib_git_url_check("http://h/x.git", true, &err), -1);
    assert_int_equal(lib_git_url_check("http://h/x.git", false, &err), 0);
    /* up's receive-only pull: a dirty tree refuses */
    free(tu_write(fx.lib, "skills/review/extra.md", "x\n"));
    int pulled = 0;
    assert_int_equal(lib_pull_ff(fx.lib, &pulled, &err), -1);
    assert_non_null(strstr(err.msg, "nothing was pulled"));
    free(nowhere);
    teardown(&fx);
}

/* A git that never answers is stopped at the deadline: an error, not a hang. */
static void test_git_deadline(void **state)
{
    (void)state;
    char *root = tu_tmpdir();
    char *fake = tu_write(root, "bin/git", "#!/bin/sh\nexec /bin/sleep 30\n");
    chmod(fake, 0755);
    char *bin = NULL;
    assert_true(asprintf(&bin, "%s/bin", root) > 0);
    char *old = getenv("PATH") ? strdup(getenv("PATH")) : NULL;
    setenv("PATH", bin, 1);
    setenv("AGENTSTACK_GIT_TIMEOUT_MS", "300", 1);
    struct as_err err = AS_ERR_INIT;
    const char *args[] = {"ls-remote", "https://example.invalid/x.git", NULL};
    assert_int_equal(lib_git(NULL, args, NULL, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "timed out"));
    unsetenv("AGENTSTACK_GIT_TIMEOUT_MS");
    if (old)
        setenv("PATH", old, 1);
    free(old);
    free(bin);
    free(fake);
    tu_rmtree(root);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scan_tree),    cmocka_unit_test(test_sync_roundtrip),
        cmocka_unit_test(test_history_gate), cmocka_unit_test(test_git_failures_are_errors),
        cmocka_unit_test(test_git_deadline),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
