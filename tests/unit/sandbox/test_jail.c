/* The confinement primitive, attacked from inside: a process in a jail
 * tries to read the real home, write a read-only workspace, reach a host
 * loopback port, read a descriptor it should not have inherited, and read
 * the live bytes under a snapshot; and the plan refuses what it cannot
 * confine. Each check fails if its layer is removed. */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#include "base/strbuf.h"
#include "sandbox/jail.h"
#include "sandbox/ns.h"

/* Runs sh -c script in a jail; returns its exit status, stdout in out. */
static int jail_sh(const char *ws, int writable, const char *script,
                   const struct sbx_jail_snapshot *snaps, size_t nsnaps, strbuf *out)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    const char *envp[] = {"PATH=/usr/bin:/bin", "HOME=/nonexistent/host-home",
                          "XDG_CONFIG_HOME=/host/.config", "KEEP=kept", NULL};
    struct sbx_jail_request rq = {
        .workspace = ws,
        .writable = writable,
        .program = "/bin/sh",
        .argv = argv,
        .envp = envp,
        .snapshots = snaps,
        .nsnapshots = nsnaps,
        .net = SBX_JAIL_NET_NONE,
    };
    struct sbx_jail *j = NULL;
    struct as_err err = AS_ERR_INIT;
    if (sbx_jail_build(&rq, &j, &err) < 0)
        fail_msg("build: %s", err.msg);
    struct sbx_jail_proc p;
    if (sbx_jail_start(j, &p, &err) < 0)
        fail_msg("start: %s", err.msg);
    sbx_jail_free(j);
    close(p.in_fd);
    p.in_fd = -1;
    char buf[4096];
    ssize_t n;
    while ((n = read(p.out_fd, buf, sizeof buf)) > 0)
        sb_add(out, buf, (size_t)n);
    int st = 0;
    assert_int_equal(waitpid(p.pid, &st, 0), p.pid);
    sbx_jail_proc_close(&p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int userns_ok(void)
{
    struct as_err err = AS_ERR_INIT;
    return sbx_ns_probe(&err) == 0;
}

static void test_jail_view(void **st)
{
    (void)st;
    if (!userns_ok())
        skip();
    char *dir = tu_tmpdir(); /* HOME and AGENTSTACK_HOME point inside it */
    char *f = tu_write(dir, "home-secret", "HOSTSECRET\n");
    free(f);
    f = tu_write(dir, "proj/code.txt", "project bytes\n");
    free(f);
    f = tu_write(dir, "proj/.env", "TOKEN=shh\n");
    free(f);
    char ws[2048], script[8192];
    snprintf(ws, sizeof ws, "%s/proj", dir);
    /* An fd the caller holds: never inherited. */
    int leak = open(ws, O_RDONLY | O_DIRECTORY); /* not close-on-exec on purpose */
    assert_true(leak >= 0);
    assert_int_equal(dup2(leak, 77), 77);
    close(leak);
    leak = 77;
    snprintf(script, sizeof script,
             "cat %s/code.txt; "
             "cat %s/home-secret 2>/dev/null && echo READHOME; "
             "cat %s/.env; echo END-ENV; "
             "echo pwned > %s/pwned 2>/dev/null && echo WROTE; "
             "echo tmp > %s/marker && echo TMPWRITE; "
             "ls /proc/self/fd | tr '\\n' ' '; echo; "
             "echo HOME=$HOME XDG=${XDG_CONFIG_HOME-unset} KEEP=$KEEP; "
             "id -u",
             ws, dir, ws, ws, dir);
    strbuf out = SB_INIT;
    int code = jail_sh(ws, 0, script, NULL, 0, &out);
    assert_int_equal(code, 0);
    assert_non_null(strstr(out.buf, "project bytes"));
    assert_null(strstr(out.buf, "READHOME"));     /* the real home is not in the view */
    assert_null(strstr(out.buf, "TOKEN=shh"));    /* .env is shadowed */
    assert_null(strstr(out.buf, "WROTE"));        /* read-only workspace */
    assert_non_null(strstr(out.buf, "TMPWRITE")); /* its own /tmp ... */
    char marker[2100];
    snprintf(marker, sizeof marker, "%s/marker", dir);
    assert_int_not_equal(access(marker, F_OK), 0); /* ... which is not the host's */
    snprintf(marker, sizeof marker, "%s/pwned", ws);
    assert_int_not_equal(access(marker, F_OK), 0);
    assert_non_null(strstr(out.buf, "HOME=/root XDG=unset KEEP=kept"));
    char fds[64];
    snprintf(fds, sizeof fds, " %d ", leak);
    /* 0 1 2 and the fd ls opened; never the caller's directory fd. */
    char *line = strstr(out.buf, "\n0 1 2 ");
    assert_non_null(line);
    char *eol = strchr(line + 1, '\n');
    assert_non_null(eol);
    *eol = '\0';
    assert_null(strstr(line, fds));
    *eol = '\n';
    char uid[32];
    snprintf(uid, sizeof uid, "\n%u\n", (unsigned)(geteuid() ? geteuid() : 1000));
    assert_non_null(strstr(out.buf, uid));
    close(leak);

    /* Writable: the write lands in the workspace, .git/hooks stays read-only. */
    f = tu_write(dir, "proj/.git/hooks/pre-commit", "#!/bin/sh\n");
    free(f);
    snprintf(script, sizeof script,
             "echo ok > %s/written && echo WROTE; "
             "echo evil > %s/.git/hooks/pre-commit 2>/dev/null && echo HOOKED; true",
             ws, ws);
    sb_reset(&out);
    assert_int_equal(jail_sh(ws, 1, script, NULL, 0, &out), 0);
    assert_non_null(strstr(out.buf, "WROTE"));
    assert_null(strstr(out.buf, "HOOKED"));
    sb_release(&out);
    tu_rmtree(dir);
}

static void test_jail_snapshot(void **st)
{
    (void)st;
    if (!userns_ok())
        skip();
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "proj/server.sh", "echo LIVE-BYTES\n");
    free(f);
    f = tu_write(dir, "snap/server.sh", "echo VERIFIED-BYTES\n");
    free(f);
    char ws[1024], src[2048], dst[2048], script[8192];
    snprintf(ws, sizeof ws, "%s/proj", dir);
    snprintf(src, sizeof src, "%s/snap/server.sh", dir);
    snprintf(dst, sizeof dst, "%s/server.sh", ws);
    struct sbx_jail_snapshot s = {src, dst};
    snprintf(script, sizeof script, ". %s; echo x > %s 2>/dev/null && echo REPLACED; true", dst,
             dst);
    strbuf out = SB_INIT;
    assert_int_equal(jail_sh(ws, 1, script, &s, 1, &out), 0);
    assert_non_null(strstr(out.buf, "VERIFIED-BYTES"));
    assert_null(strstr(out.buf, "LIVE-BYTES"));
    assert_null(strstr(out.buf, "REPLACED")); /* the snapshot is read-only */
    sb_release(&out);
    tu_rmtree(dir);
}

static void test_jail_no_route(void **st)
{
    (void)st;
    if (!userns_ok())
        skip();
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "proj/x", "x\n");
    free(f);
    char ws[2048], script[4096];
    snprintf(ws, sizeof ws, "%s/proj", dir);
    int l = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(l, 4), 0);
    assert_int_equal(getsockname(l, (struct sockaddr *)&a, &al), 0);
    /* bash-less: python3 is the portable TCP client here. */
    if (access("/usr/bin/python3", X_OK) != 0)
        skip();
    snprintf(script, sizeof script,
             "/usr/bin/python3 -c 'import socket\n"
             "try:\n socket.create_connection((\"127.0.0.1\", %d), 2); print(\"CONNECTED\")\n"
             "except OSError as e: print(\"REFUSED\", e)'",
             ntohs(a.sin_port));
    strbuf out = SB_INIT;
    assert_int_equal(jail_sh(ws, 0, script, NULL, 0, &out), 0);
    assert_non_null(strstr(out.buf, "REFUSED"));
    assert_null(strstr(out.buf, "CONNECTED"));
    struct pollfd pf = {l, POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 0), 0); /* nothing reached the host listener */
    close(l);
    sb_release(&out);
    tu_rmtree(dir);
}

static int start_sh(const char *ws, const char *script, struct sbx_jail_proc *p)
{
    const char *argv[] = {"/bin/sh", "-c", script, NULL};
    const char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    struct sbx_jail_request rq = {.workspace = ws,
                                  .program = "/bin/sh",
                                  .argv = argv,
                                  .envp = envp,
                                  .net = SBX_JAIL_NET_NONE};
    struct sbx_jail *j = NULL;
    struct as_err err = AS_ERR_INIT;
    if (sbx_jail_build(&rq, &j, &err) < 0 || sbx_jail_start(j, p, &err) < 0)
        fail_msg("%s", err.msg);
    sbx_jail_free(j);
    return 0;
}

/* A jail started after another must not hold the first one's pipes: the
 * first server sees EOF on its stdin as soon as its own writer closes it
 * (the gateway's orderly shutdown), not only once every later jail ends. */
static void test_jail_holds_no_other_pipes(void **st)
{
    (void)st;
    if (!userns_ok())
        skip();
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "proj/x", "x\n");
    free(f);
    char ws[2048];
    snprintf(ws, sizeof ws, "%s/proj", dir);
    struct sbx_jail_proc a, b;
    start_sh(ws, "cat >/dev/null; echo A-EOF", &a);
    start_sh(ws, "cat >/dev/null", &b);
    close(a.in_fd);
    a.in_fd = -1;
    /* A deadlock guard, not a timing claim: without the fix this never ends. */
    struct pollfd pf = {a.out_fd, POLLIN, 0};
    assert_int_equal(poll(&pf, 1, 60000), 1);
    char buf[64] = "";
    ssize_t n = read(a.out_fd, buf, sizeof buf - 1);
    assert_true(n > 0);
    assert_non_null(strstr(buf, "A-EOF"));
    waitpid(a.pid, NULL, 0);
    close(b.in_fd);
    b.in_fd = -1;
    waitpid(b.pid, NULL, 0);
    sbx_jail_proc_close(&a);
    sbx_jail_proc_close(&b);
    tu_rmtree(dir);
}

static void test_jail_refusals(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    const char *argv[] = {"/bin/sh", NULL};
    struct sbx_jail *j = NULL;
    struct as_err err = AS_ERR_INIT;
    /* The home itself as the workspace. */
    struct sbx_jail_request rq = {
        .workspace = dir, .program = "/bin/sh", .argv = argv, .net = SBX_JAIL_NET_NONE};
    assert_int_equal(sbx_jail_build(&rq, &j, &err), -1);
    assert_non_null(strstr(err.msg, "home directory"));
    /* A relative program, a missing token, a cwd outside the view. */
    err = (struct as_err)AS_ERR_INIT;
    char *f = tu_write(dir, "proj/x", "x\n");
    free(f);
    char ws[2048];
    snprintf(ws, sizeof ws, "%s/proj", dir);
    rq.workspace = ws;
    rq.program = "sh";
    assert_int_equal(sbx_jail_build(&rq, &j, &err), -1);
    rq.program = "/bin/sh";
    rq.net = SBX_JAIL_NET_PROXY;
    err = (struct as_err)AS_ERR_INIT;
    assert_int_equal(sbx_jail_build(&rq, &j, &err), -1);
    assert_non_null(strstr(err.msg, "token"));
    rq.net = SBX_JAIL_NET_NONE;
    rq.cwd = dir;
    err = (struct as_err)AS_ERR_INIT;
    assert_int_equal(sbx_jail_build(&rq, &j, &err), -1);
    assert_non_null(strstr(err.msg, "outside"));
    /* A snapshot over something outside the workspace. */
    rq.cwd = NULL;
    char outside[2100];
    snprintf(outside, sizeof outside, "%s/elsewhere", dir);
    struct sbx_jail_snapshot s = {ws, outside};
    rq.snapshots = &s;
    rq.nsnapshots = 1;
    err = (struct as_err)AS_ERR_INIT;
    assert_int_equal(sbx_jail_build(&rq, &j, &err), -1);
    assert_non_null(strstr(err.msg, "not inside the workspace"));
    tu_rmtree(dir);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_jail_view),     cmocka_unit_test(test_jail_snapshot),
        cmocka_unit_test(test_jail_no_route), cmocka_unit_test(test_jail_holds_no_other_pipes),
        cmocka_unit_test(test_jail_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
