/* The keychain backend against a REAL Secret Service: the test re-executes
 * itself inside `dbus-run-session` with gnome-keyring-daemon unlocked under
 * a temporary HOME (so no real keyring is touched), then stores, reads,
 * lists and removes items and checks each with `secret-tool`. Without the
 * packages (gnome-keyring, libsecret-tools, dbus) or without libsecret in
 * this build it says so loudly and skips (a failure under CI=true). The
 * no-session-bus refusal is checked in a child process with the bus
 * variables removed. */
#include "testutil.h"

#include <sys/wait.h>

#include "base/proc.h"
#include "secrets/backends.h"

static int inner;
static const char *why_outside; /* why the real-keychain test cannot run */

static int have(const char *bin)
{
    strbuf p = SB_INIT;
    int ok = proc_which(bin, NULL, &p) == 0;
    sb_release(&p);
    return ok;
}

/* secret-tool lookup service agentstack account NAME → out; exit status. */
static int secret_tool_lookup(const char *name, strbuf *out)
{
    const char *argv[] = {"secret-tool", "lookup", "service", "agentstack", "account", name, NULL};
    struct as_err err = AS_ERR_INIT;
    return proc_run_capture(argv, NULL, NULL, NULL, 0, out, NULL, &err);
}

static void test_store_lookup_list_delete(void **state)
{
    (void)state;
    if (!inner)
        tu_skip(why_outside);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(sec_keychain_probe(&err), 0);
    const char *val = "ghp_0123456789abcdefABCDEF0123456789abcd";
    assert_int_equal(sec_keychain_store("GH_PAT", val, strlen(val), &err), 0);
    /* secret-tool sees exactly what we stored */
    strbuf got = SB_INIT;
    assert_int_equal(secret_tool_lookup("GH_PAT", &got), 0);
    assert_string_equal(got.buf, val);
    sb_release(&got);
    /* our lookup, and the chain's keychain layer */
    strbuf v = SB_INIT;
    assert_int_equal(sec_keychain_lookup("GH_PAT", &v, &err), SEC_FOUND);
    assert_string_equal(v.buf, val);
    sb_reset(&v);
    assert_int_equal(sec_keychain_lookup("NOPE", &v, &err), SEC_MISSING);
    struct sec_chain_opts o = {0};
    unsetenv("GH_PAT");
    struct sec_chain *c = sec_chain_full(&o);
    struct sec_result r;
    assert_int_equal(sec_resolve(c, "GH_PAT", &v, &r), SEC_FOUND);
    assert_string_equal(r.source, "keychain");
    assert_string_equal(v.buf, val);
    sec_chain_free(c);
    /* replace, and a multi-line value (the keychain accepts CR/LF) */
    const char *ml = "line1\r\nline2";
    assert_int_equal(sec_keychain_store("GH_PAT", ml, strlen(ml), &err), 0);
    sb_reset(&v);
    assert_int_equal(sec_keychain_lookup("GH_PAT", &v, &err), SEC_FOUND);
    assert_string_equal(v.buf, ml);
    /* NUL is refused before anything reaches the service */
    assert_int_equal(sec_keychain_store("BAD", "a\0b", 3, &err), -1);
    assert_non_null(strstr(err.msg, "NUL"));
    sb_reset(&v);
    assert_int_equal(sec_keychain_lookup("BAD", &v, &err), SEC_MISSING);
    /* list: names only, ours only */
    assert_int_equal(sec_keychain_store("A_TOKEN", "xyz123", 6, &err), 0);
    const char *argv[] = {"secret-tool",  "store",   "--label=other", "service",
                          "someone-else", "account", "OTHER",         NULL};
    strbuf o2 = SB_INIT;
    assert_int_equal(proc_run_capture(argv, NULL, NULL, "v", 1, &o2, NULL, &err), 0);
    sb_release(&o2);
    strvec names = STRVEC_INIT;
    assert_int_equal(sec_keychain_names(&names, &err), 0);
    assert_int_equal(names.n, 2);
    assert_string_equal(names.v[0], "A_TOKEN");
    assert_string_equal(names.v[1], "GH_PAT");
    strvec_clear(&names);
    /* delete */
    bool existed = false;
    assert_int_equal(sec_keychain_delete("GH_PAT", &existed, &err), 0);
    assert_true(existed);
    assert_int_equal(sec_keychain_delete("GH_PAT", &existed, &err), 0);
    assert_false(existed);
    strbuf gone = SB_INIT;
    assert_int_not_equal(secret_tool_lookup("GH_PAT", &gone), 0);
    sb_release(&gone);
    sb_release_secure(&v);
}

/* Runs in a fresh process (the probe answer is cached per process). */
static int no_bus_check(void)
{
    {
        struct as_err err = AS_ERR_INIT;
        int ok = sec_keychain_probe(&err) == -1 &&
                 (strstr(err.msg, "no D-Bus session bus") ||
                  strstr(err.msg, "no keychain support in this build"));
        as_err_clear(&err);
        ok = ok && sec_keychain_store("T", "value1", 6, &err) == -1 &&
             strstr(err.msg, "value1") == NULL;
        strbuf v = SB_INIT;
        as_err_clear(&err);
        ok = ok && sec_keychain_lookup("T", &v, &err) == SEC_FAILED &&
             strstr(err.msg, "keychain read failed") != NULL;
        /* the chain reports failed, never missing, and later layers still answer */
        setenv("T2", "from-env", 1);
        struct sec_chain_opts o = {0};
        struct sec_chain *c = sec_chain_full(&o);
        struct sec_result r;
        ok = ok && sec_resolve(c, "T", &v, &r) == SEC_FAILED;
        ok = ok && sec_resolve(c, "T2", &v, &r) == SEC_FOUND;
        sec_chain_free(c);
        sb_release_secure(&v);
        return ok ? 0 : 1;
    }
}

static void test_no_session_bus_refuses(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        unsetenv("DBUS_SESSION_BUS_ADDRESS");
        setenv("XDG_RUNTIME_DIR", "/nonexistent-runtime-dir", 1);
        setenv("AS_KEYCHAIN_NOBUS", "1", 1);
        char self[4096];
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0)
            _exit(2);
        self[n] = '\0';
        execl(self, self, (char *)NULL);
        _exit(3);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
}

int main(int argc, char **argv)
{
    (void)argc;
    if (getenv("AS_KEYCHAIN_NOBUS"))
        return no_bus_check();
    inner = getenv("AS_KEYCHAIN_INNER") != NULL;
    if (!inner) {
        if (!sec_keychain_compiled()) {
            why_outside = "this build has no libsecret (install libsecret-1-dev, reconfigure)";
        } else if (!have("dbus-run-session") || !have("gnome-keyring-daemon") ||
                   !have("secret-tool")) {
            why_outside = "install gnome-keyring libsecret-tools dbus to run the real-keychain "
                          "tests";
        } else {
            /* A private HOME: the daemon keeps its keyring files there. */
            char *tmp = tu_tmpdir();
            setenv("AS_KEYCHAIN_INNER", "1", 1);
            setenv("AS_KEYCHAIN_TMP", tmp, 1);
            char self[4096];
            ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
            assert_true(n > 0);
            self[n] = '\0';
            /* tests/keyring_session.sh unlocks the keyring and waits until
             * it owns the Secret Service name before running us. */
            const char *src = getenv("AS_SRC");
            char script[4200];
            snprintf(script, sizeof script, "%s/tests/keyring_session.sh", src ? src : ".");
            execlp("dbus-run-session", "dbus-run-session", "--", "sh", script, self, (char *)NULL);
            fprintf(stderr, "cannot run dbus-run-session\n");
            return 1;
        }
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_store_lookup_list_delete),
        cmocka_unit_test(test_no_session_bus_refuses),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    const char *tmp = getenv("AS_KEYCHAIN_TMP");
    if (inner && tmp)
        tu_rmtree(strdup(tmp));
    (void)argv;
    return rc;
}
