/* The host side of a confined run's gateway routing (see gwface.h). */
#include "sandbox/gwface.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/json.h"
#include "base/sha256.h"
#include "base/xalloc.h"
#include "sandbox/registry.h"

#define FACE_FD_IN_CHILD 3

void sbx_gw_init(struct sbx_gw *g)
{
    memset(g, 0, sizeof *g);
    g->face_fd = g->stdin_fd = -1;
    g->pid = -1;
}

int sbx_gw_stage(const char *path, const char *data, size_t len, struct as_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return as_err_errno(err, "writing %s", path);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    int ok = off == len && fsync(fd) == 0;
    close(fd);
    if (!ok) {
        unlink(path);
        return as_err_set(err, "writing %s: short write", path);
    }
    return 0;
}

/* The directory that holds rel below root, each component opened without
 * following a symlink (the sandbox home is written from inside the sandbox:
 * a link left there must never steer the host). -1 when a component is
 * missing, a link or not a directory; *leaf is rel's last component. */
static int dir_beneath(const char *root, const char *rel, char *buf, size_t n, const char **leaf)
{
    if (snprintf(buf, n, "%s", rel) >= (int)n)
        return -1;
    int fd = open(root, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    char *c = buf;
    while (fd >= 0) {
        char *slash = strchr(c, '/');
        if (!slash) {
            *leaf = c;
            return fd;
        }
        *slash = '\0';
        int next = openat(fd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        close(fd);
        fd = next;
        c = slash + 1;
    }
    return -1;
}

static int listen_loopback(struct sbx_gw *g, struct as_err *err)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return as_err_errno(err, "gateway face socket");
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 128) != 0 ||
        getsockname(s, (struct sockaddr *)&a, &al) != 0) {
        as_err_errno(err, "gateway face on 127.0.0.1");
        close(s);
        return -1;
    }
    g->face_fd = s;
    g->port = ntohs(a.sin_port);
    return 0;
}

int sbx_gw_prepare(const struct sbx_plan *p, struct sbx_rec *rec, struct sbx_gw *g,
                   struct as_err *err)
{
    if (!p->gateway_routed)
        return 0;
    if (p->mode == SBX_MODE_SANDBOX && listen_loopback(g, err) < 0)
        return -1;

    /* The harness's config, rendered with the final URL. */
    strbuf url = SB_INIT, rel = SB_INIT, text = SB_INIT;
    sbx_plan_face_url(p, g->port, &url);
    int rc = p->gateway_config_fn(p->gateway_config_ctx, url.buf, p->face_token, &rel, &text, err);
    if (rc == 0 && strcmp(rel.buf, p->gateway_config_rel) != 0)
        rc = as_err_set(err, "the adapter's MCP config path changed while starting the run");
    if (rc == 0) {
        g->config_host = xasprintf("%s/gateway-mcp-config", rec->dir);
        rc = sbx_gw_stage(g->config_host, text.buf, text.len, err);
        if (rc < 0) {
            free(g->config_host);
            g->config_host = NULL;
        }
    }
    explicit_bzero(text.buf, text.len);
    sb_release(&text);
    sb_release(&rel);
    sb_release(&url);
    if (rc < 0)
        return -1;
    /* No regular file there (nothing, or a link sandbox-init replaces): the
     * bind creates one, which is removed after the run. */
    char buf[4096];
    const char *leaf = NULL;
    int dir = dir_beneath(p->sandbox_home, p->gateway_config_rel, buf, sizeof buf, &leaf);
    struct stat st;
    if (dir < 0 || fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) != 0 || S_ISLNK(st.st_mode)) {
        g->home = xstrdup(p->sandbox_home);
        g->mountpoint = xstrdup(p->gateway_config_rel);
    }
    if (dir >= 0)
        close(dir);

    /* The frozen authority, then its digest in the run's chain. */
    strbuf b = SB_INIT;
    json_canonical(p->grant, &b);
    sb_addc(&b, '\n');
    if (sbx_gw_stage(p->grant_path, b.buf, b.len, err) < 0) {
        sb_release(&b);
        return -1;
    }
    char hex[SHA256_HEX_LEN + 1];
    sha256_hex(b.buf, b.len, hex);
    sb_release(&b);
    snprintf(g->digest, sizeof g->digest, "sha256:%s", hex);
    json_t *f = json_object();
    json_object_set_new(f, "grant_digest", json_string(g->digest));
    /* The run's own process: the grant is valid only while it lives. */
    json_object_set_new(f, "pid", json_integer(getpid()));
    json_object_set_new(f, "pid_start", json_integer((json_int_t)sbx_proc_start(getpid())));
    if (sbx_rec_append(rec, "grant_frozen", f, err) < 0) {
        as_err_prefix(err, "refusing to run unobserved");
        return -1;
    }
    return 0;
}

struct sbx_mount sbx_gw_mount(const struct sbx_plan *p, const struct sbx_gw *g)
{
    struct sbx_mount m = {.kind = SBX_MNT_RO_BIND,
                          .src = g->config_host,
                          .dst = p->gateway_config_inside,
                          .nofollow = 1};
    return m;
}

static void __attribute__((noreturn))
child(const struct sbx_plan *p, struct sbx_gw *g, int in_fd, int face_fd, const sigset_t *mask)
{
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    /* Its own process group: a Ctrl-C at the terminal is the harness's to
     * handle (an interactive CLI keeps running), not a reason to stop the
     * gateway under it. The run stops it when the harness is gone. */
    setpgid(0, 0);
    sigprocmask(SIG_SETMASK, mask, NULL);
    int null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    char *log = xasprintf("%s/runs/%s/gateway.log", p->home, p->run_id);
    int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
    /* Move the face above the slots it is about to be copied over. */
    int f = fcntl(face_fd, F_DUPFD_CLOEXEC, 10);
    if (null < 0 || f < 0 || dup2(in_fd, 0) < 0 || dup2(null, 1) < 0 ||
        dup2(lfd >= 0 ? lfd : null, 2) < 0 || dup2(f, FACE_FD_IN_CHILD) < 0)
        _exit(127);
    char fdnum[16];
    snprintf(fdnum, sizeof fdnum, "%d", FACE_FD_IN_CHILD);
    setenv("AGENTSTACK_GATEWAY_FACE_FD", fdnum, 1);
    setenv("AGENTSTACK_GATEWAY_FACE_TOKEN", p->face_token, 1);
    setenv("AGENTSTACK_RUN_ID", p->run_id, 1);
    (void)g;
    execv(p->inject_argv.v[0], p->inject_argv.v);
    fprintf(stderr, "agentstack: cannot start the gateway %s: %s\n", p->inject_argv.v[0],
            strerror(errno));
    _exit(127);
}

int sbx_gw_start(const struct sbx_plan *p, struct sbx_gw *g, int face_fd, const sigset_t *mask,
                 struct as_err *err)
{
    if (face_fd == g->face_fd)
        g->face_fd = -1;
    int pp[2];
    if (pipe2(pp, O_CLOEXEC) < 0) {
        close(face_fd);
        return as_err_errno(err, "starting the gateway");
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(pp[0]);
        close(pp[1]);
        close(face_fd);
        return as_err_errno(err, "starting the gateway");
    }
    if (pid == 0)
        child(p, g, pp[0], face_fd, mask);
    close(pp[0]);
    close(face_fd); /* the gateway holds the only copy */
    g->pid = pid;
    g->stdin_fd = pp[1];
    return 0;
}

void sbx_gw_finish(struct sbx_gw *g)
{
    if (g->stdin_fd >= 0)
        close(g->stdin_fd);
    g->stdin_fd = -1;
    if (g->pid > 0) {
        /* EOF on stdin: the gateway drains (≤ 5 s) and exits. */
        struct timespec nap = {0, 20 * 1000 * 1000};
        int status;
        for (int i = 0; i < 500; i++) {
            pid_t r = waitpid(g->pid, &status, WNOHANG);
            if (r == g->pid || (r < 0 && errno != EINTR)) {
                g->pid = -1;
                break;
            }
            nanosleep(&nap, NULL);
        }
        if (g->pid > 0) {
            kill(g->pid, SIGKILL);
            while (waitpid(g->pid, &status, 0) < 0 && errno == EINTR)
                ;
            g->pid = -1;
        }
    }
    if (g->face_fd >= 0)
        close(g->face_fd);
    g->face_fd = -1;
    if (g->config_host) {
        unlink(g->config_host); /* the token dies with the run */
        free(g->config_host);
        g->config_host = NULL;
    }
    if (g->mountpoint) {
        char buf[4096];
        const char *leaf = NULL;
        int dir = dir_beneath(g->home, g->mountpoint, buf, sizeof buf, &leaf);
        struct stat st;
        if (dir >= 0 && fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
            st.st_size == 0)
            unlinkat(dir, leaf, 0);
        if (dir >= 0)
            close(dir);
        free(g->mountpoint);
        free(g->home);
        g->mountpoint = g->home = NULL;
    }
}
