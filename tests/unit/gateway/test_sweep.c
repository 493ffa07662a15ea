/* gw_cm_sweep: endpoint dirs of dead gateways go; a live pid's,
 * this process's, non-pid names, symlinks (never followed) and a symlinked
 * gateway/ stay; a live pid that started after its endpoint was written
 * (pid reuse) goes. */
#include "testutil.h"

#include <stdbool.h>
#include <sys/time.h>
#include <sys/wait.h>

#include "base/xalloc.h"
#include "gateway/control_ext.h"

static long dead_pid(void)
{
    pid_t p = fork();
    assert_true(p >= 0);
    if (p == 0)
        _exit(0);
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    return (long)p;
}

static char *ep(const char *home, const char *name)
{
    char *rel = xasprintf("gateway/%s/endpoint.json", name);
    char *p = tu_write(home, rel, "{\"token\":\"x\"}");
    free(rel);
    return p;
}

static bool exists(const char *home, const char *rel)
{
    char *p = xasprintf("%s/%s", home, rel);
    struct stat st;
    bool r = lstat(p, &st) == 0;
    free(p);
    return r;
}

static void test_sweep(void **state)
{
    (void)state;
    char *home = tu_tmpdir();
    assert_int_equal(gw_cm_sweep(home), 0); /* no gateway/ yet */
    char dead[32], self[32], dead2[32];
    snprintf(dead, sizeof dead, "%ld", dead_pid());
    snprintf(dead2, sizeof dead2, "%ld", dead_pid());
    snprintf(self, sizeof self, "%ld", (long)getpid());
    free(ep(home, dead));
    free(ep(home, self));
    free(ep(home, "1")); /* init: alive, started long before this file */
    free(ep(home, "notapid"));
    free(ep(home, "0123"));
    char *outside = tu_write(home, "outside/keep.txt", "precious");
    char *link = xasprintf("%s/gateway/%s", home, dead2);
    char *odir = xasprintf("%s/outside", home);
    assert_int_equal(symlink(odir, link), 0);

    assert_int_equal(gw_cm_sweep(home), 1);
    char *rel = xasprintf("gateway/%s", dead);
    assert_false(exists(home, rel));
    free(rel);
    rel = xasprintf("gateway/%s/endpoint.json", self);
    assert_true(exists(home, rel));
    free(rel);
    assert_true(exists(home, "gateway/1/endpoint.json"));
    assert_true(exists(home, "gateway/notapid/endpoint.json"));
    assert_true(exists(home, "gateway/0123/endpoint.json"));
    assert_true(exists(home, "outside/keep.txt"));
    struct stat st;
    assert_int_equal(lstat(link, &st), 0);
    assert_true(S_ISLNK(st.st_mode));

    /* pid 1's endpoint written before pid 1 started: a reused pid. */
    char *e1 = xasprintf("%s/gateway/1/endpoint.json", home);
    struct timeval old[2] = {{978307200, 0}, {978307200, 0}};
    assert_int_equal(utimes(e1, old), 0);
    char *d1 = xasprintf("%s/gateway/1", home);
    assert_int_equal(utimes(d1, old), 0);
    assert_int_equal(gw_cm_sweep(home), 1);
    assert_false(exists(home, "gateway/1"));
    free(e1);
    free(d1);
    free(outside);
    free(link);
    free(odir);
    tu_rmtree(home);
}

static void test_symlinked_top(void **state)
{
    (void)state;
    char *home = tu_tmpdir();
    char rel[64];
    snprintf(rel, sizeof rel, "elsewhere/%ld/endpoint.json", dead_pid());
    free(tu_write(home, rel, "{}"));
    char *target = xasprintf("%s/elsewhere", home);
    char *link = xasprintf("%s/gateway", home);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(gw_cm_sweep(home), 0);
    assert_true(exists(home, rel));
    free(target);
    free(link);
    tu_rmtree(home);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sweep),
        cmocka_unit_test(test_symlinked_top),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
