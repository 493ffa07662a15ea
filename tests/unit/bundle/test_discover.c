/* Project discovery (docs/manifest.md, docs/trust.md). */
#include "testutil.h"

#include <sys/stat.h>

#include "bundle/discover.h"

static char *cat(const char *a, const char *b)
{
    char *s = NULL;
    assert_true(asprintf(&s, "%s/%s", a, b) > 0);
    return s;
}

static void mkdir_p(const char *base, const char *rel)
{
    char *p = cat(base, rel);
    for (char *s = p + strlen(base) + 1; (s = strchr(s, '/')); s++) {
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    mkdir(p, 0755);
    free(p);
}

/* scenario 1: from P/a/b the nested manifest of P is used; nested beats legacy */
static void test_walk_up_nested_wins(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *real = realpath(dir, NULL);
    free(tu_write(real, "P/.agentstack/agentstack.toml", "version = 1\n"));
    free(tu_write(real, "P/agentstack.toml", "version = 1\n"));
    mkdir_p(real, "P/a/b");
    char *start = cat(real, "P/a/b");
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_walk(start, &p, &err), 1);
    char *base = cat(real, "P");
    char *mdir = cat(real, "P/.agentstack");
    char *man = cat(real, "P/.agentstack/agentstack.toml");
    char *ovl = cat(real, "P/.agentstack/agentstack.local.toml");
    char *lock = cat(real, "P/.agentstack/agentstack.lock");
    assert_string_equal(p.base, base);
    assert_string_equal(p.manifest_dir, mdir);
    assert_string_equal(p.project_root, base);
    assert_string_equal(p.manifest, man);
    assert_string_equal(p.overlay, ovl);
    assert_string_equal(p.lock, lock);
    assert_true(p.found);
    assert_true(p.nested);
    bundle_paths_free(&p);

    /* legacy only */
    char *nested = cat(real, "P/.agentstack/agentstack.toml");
    unlink(nested);
    assert_int_equal(discover_walk(start, &p, &err), 1);
    assert_string_equal(p.manifest_dir, base);
    assert_string_equal(p.project_root, base);
    assert_false(p.nested);
    bundle_paths_free(&p);

    /* a nearer base wins */
    free(tu_write(real, "P/a/agentstack.toml", "version = 1\n"));
    assert_int_equal(discover_walk(start, &p, &err), 1);
    char *near = cat(real, "P/a");
    assert_string_equal(p.base, near);
    bundle_paths_free(&p);

    free(near);
    free(nested);
    free(base);
    free(mdir);
    free(man);
    free(ovl);
    free(lock);
    free(start);
    free(real);
    tu_rmtree(dir);
}

/* scenario 2: the machine home is never a project; $HOME and its ancestors stop the walk */
static void test_home_is_never_a_project(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    const char *home = getenv("HOME");
    free(tu_write(home, ".agentstack/agentstack.toml", "version = 1\n"));
    mkdir_p(home, "x/y");
    char *start = cat(home, "x/y");
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_walk(start, &p, &err), 0);
    assert_null(p.base);

    /* even a legacy manifest directly in $HOME is not a project */
    free(tu_write(home, "agentstack.toml", "version = 1\n"));
    assert_int_equal(discover_walk(start, &p, &err), 0);
    /* nor one above $HOME */
    free(tu_write(dir, "agentstack.toml", "version = 1\n"));
    assert_int_equal(discover_walk(start, &p, &err), 0);

    /* from the machine home itself: none */
    const char *ah = getenv("AGENTSTACK_HOME");
    assert_int_equal(discover_walk(ah, &p, &err), 0);
    assert_true(discover_is_machine_home(ah));
    assert_true(discover_is_home_or_ancestor(home));
    assert_true(discover_is_home_or_ancestor("/"));
    assert_true(discover_is_home_or_ancestor(dir));
    assert_false(discover_is_home_or_ancestor(start));

    /* ordinary commands from $HOME use the cwd and find nothing */
    assert_int_equal(discover_project(NULL, home, &p, &err), 0);
    assert_false(p.found);
    assert_int_equal(discover_require(&p, &err), -1);
    assert_non_null(strstr(err.msg, "no agentstack manifest in "));
    bundle_paths_free(&p);

    /* trust at $HOME or at the machine home: the machine-layer refusal */
    assert_int_equal(discover_trust_target(home, NULL, &p, &err), -1);
    assert_non_null(strstr(err.msg, "machine layer is never gated"));
    assert_int_equal(discover_trust_target(ah, NULL, &p, &err), -1);
    assert_non_null(strstr(err.msg, "machine layer is never gated"));
    /* a project inside $HOME is found, with the machine home set to a sibling */
    free(tu_write(home, "proj/.agentstack/agentstack.toml", "version = 1\n"));
    char *proj = cat(home, "proj");
    assert_int_equal(discover_trust_target(proj, NULL, &p, &err), 0);
    assert_true(p.found);
    bundle_paths_free(&p);
    free(proj);
    free(start);
    tu_rmtree(dir);
}

/* scenario 3: --manifest-dir is verbatim; positional outranks it; nothing above → at or above */
static void test_manifest_dir_and_trust_target(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *real = realpath(dir, NULL);
    free(tu_write(real, "P/.agentstack/agentstack.toml", "version = 1\n"));
    free(tu_write(real, "Q/agentstack.toml", "version = 1\n"));
    mkdir_p(real, "empty/sub");
    char *P = cat(real, "P"), *Q = cat(real, "Q"), *Pm = cat(real, "P/.agentstack");
    char *E = cat(real, "empty/sub");
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;

    assert_int_equal(discover_project(P, "/", &p, &err), 0);
    assert_true(p.found);
    assert_string_equal(p.base, P);
    bundle_paths_free(&p);
    /* DIR may be the .agentstack dir itself */
    assert_int_equal(discover_project(Pm, NULL, &p, &err), 0);
    assert_true(p.found);
    assert_string_equal(p.base, P);
    assert_string_equal(p.manifest_dir, Pm);
    assert_string_equal(p.project_root, P);
    bundle_paths_free(&p);
    /* verbatim: no walk from a subdirectory */
    assert_int_equal(discover_project(E, NULL, &p, &err), 0);
    assert_false(p.found);
    bundle_paths_free(&p);
    assert_int_equal(discover_project("/definitely/not/here", NULL, &p, &err), -1);
    assert_non_null(strstr(err.msg, "no such directory"));

    /* trust: positional outranks --manifest-dir */
    assert_int_equal(discover_trust_target(Q, P, &p, &err), 0);
    assert_string_equal(p.base, Q);
    bundle_paths_free(&p);
    assert_int_equal(discover_trust_target(NULL, P, &p, &err), 0);
    assert_string_equal(p.base, P);
    bundle_paths_free(&p);
    assert_int_equal(discover_trust_target(E, NULL, &p, &err), -1);
    char *want = NULL;
    assert_true(asprintf(&want, "no agentstack manifest at or above %s", E) > 0);
    assert_string_equal(err.msg, want);
    free(want);
    assert_int_equal(discover_trust_target("/no/such/dir", NULL, &p, &err), -1);
    assert_string_equal(err.msg, "no such directory: /no/such/dir");

    free(P);
    free(Q);
    free(Pm);
    free(E);
    free(real);
    tu_rmtree(dir);
}

/* scenario 4: the no-manifest error names both layouts, init and --manifest-dir, no OS text */
static void test_no_manifest_message(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_at(dir, &p, &err), 0);
    assert_false(p.found);
    assert_int_equal(discover_require(&p, &err), -1);
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", err.msg); /* the message alone names everything */
    char *want = NULL;
    assert_true(asprintf(&want, "no agentstack manifest in %s", p.base) > 0);
    assert_true(strncmp(err.msg, want, strlen(want)) == 0);
    assert_non_null(strstr(buf, ".agentstack/agentstack.toml"));
    assert_non_null(strstr(buf, "root agentstack.toml"));
    assert_non_null(strstr(buf, "agentstack init"));
    assert_non_null(strstr(buf, "--manifest-dir"));
    assert_null(strstr(buf, "os error"));
    assert_null(strstr(buf, "No such file"));
    /* new manifests go to .agentstack/ */
    assert_true(p.nested);
    assert_non_null(strstr(p.manifest, "/.agentstack/agentstack.toml"));
    free(want);
    bundle_paths_free(&p);
    tu_rmtree(dir);
}

static void test_project_key(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *real = realpath(dir, NULL);
    mkdir_p(real, "proj/.agentstack");
    char *proj = cat(real, "proj");
    char *link = cat(real, "link");
    assert_int_equal(symlink(proj, link), 0);
    strbuf k = SB_INIT;
    char *in = cat(real, "proj/.agentstack");
    assert_int_equal(discover_project_key(in, &k), 0);
    assert_string_equal(k.buf, proj);
    assert_int_equal(discover_project_key(link, &k), 0);
    assert_string_equal(k.buf, proj);
    free(in);
    in = cat(real, "proj/./sub/..");
    assert_int_equal(discover_project_key(in, &k), 0);
    assert_string_equal(k.buf, proj);
    /* a vanished base keeps its raw absolute path */
    free(in);
    in = cat(real, "gone");
    assert_int_equal(discover_project_key(in, &k), 0);
    assert_string_equal(k.buf, in);
    free(in);
    sb_release(&k);
    free(proj);
    free(link);
    free(real);
    tu_rmtree(dir);
}

static void test_abspath(void **state)
{
    (void)state;
    strbuf o = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_abspath("/a//b/./c/../d/", &o, &err), 0);
    assert_string_equal(o.buf, "/a/b/d");
    assert_int_equal(discover_abspath("/..", &o, &err), 0);
    assert_string_equal(o.buf, "/");
    assert_int_equal(discover_abspath("", &o, &err), -1);
    sb_release(&o);
}

/* symlinked manifest dir components and non-regular manifests are refused */
static void test_layout_checks(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *real = realpath(dir, NULL);
    free(tu_write(real, "outside/agentstack.toml", "version = 1\n"));
    mkdir_p(real, "P");
    char *P = cat(real, "P");
    char *adir = cat(real, "P/.agentstack");
    char *outside = cat(real, "outside");
    assert_int_equal(symlink(outside, adir), 0);
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_at(P, &p, &err), 0);
    assert_true(p.found);
    assert_int_equal(discover_check_layout(&p, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    bundle_paths_free(&p);
    unlink(adir);

    /* a symlinked .agentstack inside the project is fine */
    free(tu_write(real, "P/real-as/agentstack.toml", "version = 1\n"));
    assert_int_equal(symlink("real-as", adir), 0);
    assert_int_equal(discover_at(P, &p, &err), 0);
    assert_int_equal(discover_check_layout(&p, &err), 0);
    bundle_paths_free(&p);
    unlink(adir);

    /* a manifest file symlinked out of the project */
    mkdir(adir, 0755);
    char *man = cat(adir, "agentstack.toml");
    char *target = cat(outside, "agentstack.toml");
    assert_int_equal(symlink(target, man), 0);
    assert_int_equal(discover_at(P, &p, &err), 0);
    assert_int_equal(discover_check_layout(&p, &err), -1);
    assert_non_null(strstr(err.msg, "symlink resolves outside the project"));
    bundle_paths_free(&p);
    unlink(man);

    /* a FIFO as the manifest or lock */
    assert_int_equal(mkfifo(man, 0644), 0);
    assert_int_equal(discover_at(P, &p, &err), 0);
    assert_int_equal(discover_check_layout(&p, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));
    bundle_paths_free(&p);

    free(man);
    free(target);
    free(P);
    free(adir);
    free(outside);
    free(real);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_walk_up_nested_wins),
        cmocka_unit_test(test_home_is_never_a_project),
        cmocka_unit_test(test_manifest_dir_and_trust_target),
        cmocka_unit_test(test_no_manifest_message),
        cmocka_unit_test(test_project_key),
        cmocka_unit_test(test_abspath),
        cmocka_unit_test(test_layout_checks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
