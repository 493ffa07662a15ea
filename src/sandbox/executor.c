/*
 * The tools_execute program's confinement (see executor.h).
 *
 * Why: one place builds the executor's jail, so the relay-only network, the
 * service uid, the limits and Node's permission flags cannot drift apart
 * between the real run and the runtime probe.
 * Guarantees: executor.h. A jail that cannot be built or started runs
 * nothing (no host fallback).
 */
#include "sandbox/executor.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void sbx_executor_default_limits(long long timeout_ms, struct sbx_executor_limits *out)
{
    out->memory_bytes = 128ull << 20;
    out->processes = 32;
    out->file_bytes = 4ull << 20;
    /* CPU time is a backstop behind the wall-clock timeout (the caller's). */
    out->cpu_seconds = (unsigned long long)(timeout_ms / 1000) + 2;
    out->cpus = 1;
}

int sbx_executor_cgroup(const char *name, const struct sbx_executor_limits *l,
                        struct sbx_cgroup **out, struct as_err *err)
{
    /* The same numbers as the rlimits, for the whole tree: the memory is
     * what the kernel charges to it (page cache and tmpfs too), and the
     * process count includes threads and the jail's init. */
    const struct sbx_cgroup_limits cl = {
        .memory_bytes = l->memory_bytes, .pids = l->processes, .cpus = l->cpus};
    return sbx_cgroup_create_here(name, &cl, out, err);
}

static const char *const exec_env[] = {"PATH=/usr/bin:/bin", NULL};

static int start_jail(const char *node, const char *const *argv, const struct sbx_jail_bind *binds,
                      size_t nbinds, enum sbx_jail_net net, const struct sbx_executor_limits *l,
                      const struct sbx_cgroup *cg, struct sbx_jail_proc *out, struct as_err *err)
{
    const struct sbx_rlimit rl[] = {
        {RLIMIT_DATA, l->memory_bytes}, {RLIMIT_NPROC, l->processes}, {RLIMIT_FSIZE, l->file_bytes},
        {RLIMIT_CPU, l->cpu_seconds},   {RLIMIT_NOFILE, 256},         {RLIMIT_CORE, 0},
    };
    struct sbx_jail_request rq = {
        .program = node,
        .argv = argv,
        .envp = exec_env,
        .net = net,
        .binds = binds,
        .nbinds = nbinds,
        .rlimits = rl,
        .nrlimits = sizeof rl / sizeof rl[0],
        .service_uid = 1,
        .cgroup = cg,
    };
    struct sbx_jail *j = NULL;
    if (sbx_jail_build(&rq, &j, err) < 0)
        return -1;
    int rc = sbx_jail_start(j, out, err);
    sbx_jail_free(j);
    return rc;
}

int sbx_executor_spawn(const struct sbx_executor_request *rq, const char *const *argv,
                       struct sbx_jail_proc *out, struct as_err *err)
{
    if (!rq->node || rq->node[0] != '/' || !rq->app_dir || !rq->result_file || !argv || !argv[0])
        return as_err_set(err, "the executor needs the runtime, the staged app and its result "
                               "file");
    const struct sbx_jail_bind binds[] = {
        {rq->app_dir, SBX_EXEC_APP, 0},
        {rq->result_file, SBX_EXEC_RESULT, 1},
    };
    int rc =
        start_jail(rq->node, argv, binds, 2, SBX_JAIL_NET_RELAY, &rq->limits, rq->cgroup, out, err);
    if (rc == 0 && out->listen_fd < 0) {
        sbx_executor_kill(out);
        sbx_jail_proc_close(out);
        return as_err_set(err, "the executor's relay listener was not handed over");
    }
    return rc;
}

int sbx_executor_start(const struct sbx_executor_request *rq, struct sbx_jail_proc *out,
                       struct as_err *err)
{
    /* Node's own permission model on top of the jail (docs/tools-execute.md). */
    const char *const argv[] = {rq->node,
                                "--permission",
                                "--allow-fs-read=" SBX_EXEC_APP,
                                "--allow-fs-write=" SBX_EXEC_RESULT,
                                "--experimental-strip-types",
                                "--disable-warning=ExperimentalWarning",
                                SBX_EXEC_APP "/bootstrap.mjs",
                                NULL};
    return sbx_executor_spawn(rq, argv, out, err);
}

void sbx_executor_kill(struct sbx_jail_proc *p)
{
    if (p->pid <= 0)
        return;
    kill(p->pid, SIGKILL);
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    p->pid = -1;
}

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int sbx_executor_version_ok(int major, int minor)
{
    return major >= 24 || (major == 23 && minor >= 5) || (major == 22 && minor >= 15);
}

/* "v22.23.5\n" → 22, 23; -1 when it is not a version line. */
static int parse_version(const char *s, int *major, int *minor)
{
    if (s[0] != 'v')
        return -1;
    char *end;
    long a = strtol(s + 1, &end, 10);
    if (end == s + 1 || *end != '.')
        return -1;
    long b = strtol(end + 1, &end, 10);
    if (a < 0 || b < 0 || a > 10000 || b > 10000)
        return -1;
    *major = (int)a;
    *minor = (int)b;
    return 0;
}

int sbx_executor_probe(const char *node, char *buf, size_t n, int *ok, struct as_err *err)
{
    *ok = 0;
    buf[0] = '\0';
    struct sbx_executor_limits l;
    sbx_executor_default_limits(5000, &l);
    const char *const argv[] = {node, "--version", NULL};
    struct sbx_jail_proc p;
    if (start_jail(node, argv, NULL, 0, SBX_JAIL_NET_NONE, &l, NULL, &p, err) < 0)
        return -1;
    close(p.in_fd);
    p.in_fd = -1;
    size_t got = 0;
    long long deadline = now_ms() + 5000;
    while (got + 1 < n) {
        long long left = deadline - now_ms();
        struct pollfd pf = {.fd = p.out_fd, .events = POLLIN};
        if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
            break;
        ssize_t r = read(p.out_fd, buf + got, n - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    buf[got] = '\0';
    sbx_executor_kill(&p);
    sbx_jail_proc_close(&p);
    buf[strcspn(buf, "\r\n")] = '\0';
    int major, minor;
    if (parse_version(buf, &major, &minor) < 0) {
        snprintf(buf, n, "no version");
        return as_err_set(err, "%s --version did not print a version", node);
    }
    *ok = sbx_executor_version_ok(major, minor);
    return 0;
}
