/*
 * The live re-gate of pinned server code: an inotify watch on every
 * directory that holds a pinned file or lies inside a pinned code tree, so
 * a change made while a server runs (a `git pull`, an agent's edit) refuses
 * that server's next call and stops it, instead of letting it load the new
 * bytes later (bundle/codepin.h says what is pinned).
 *
 * Why not only at spawn: a running server can import a module the first
 * time a tool needs it. The spawn-time check (surface.c, jailed.c) covers a
 * new process; this covers the one already running.
 *
 * Guarantees:
 *  - Before a call reaches a server, the watch is drained without blocking
 *    (a change made before the request was sent is seen), and when anything
 *    under any pinned path changed since that server's pins were last
 *    verified, they are verified again from fresh bytes.
 *  - A drifted server's call is refused naming the file, and its running
 *    process is stopped at once (no grace); the next start re-verifies
 *    (and refuses while the drift stays).
 *  - Fail closed: where a watch cannot be added (inotify unavailable, too
 *    many directories), that server's pins are verified before every call.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/sha256.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "gateway/gw_int.h"

#define CODE_WATCH_MASK                                                                            \
    (IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_CREATE | IN_DELETE | IN_MOVED_FROM |              \
     IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF)
#define CODE_WATCH_MAX 4096

static void on_code_event(struct mcp_loop *loop, int fd, unsigned events, void *ctx)
{
    (void)loop;
    (void)fd;
    (void)events;
    gw_code_drain(ctx);
}

static int code_fd(struct gw *gw)
{
    if (gw->code_fd >= 0 || gw->code_fd == -2)
        return gw->code_fd;
    gw->code_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (gw->code_fd < 0) {
        gw->code_fd = -2; /* never again: every call re-verifies */
        return -2;
    }
    struct as_err err = AS_ERR_INIT;
    mcp_loop_add(gw->loop, gw->code_fd, MCP_EV_IN, on_code_event, gw, &err);
    return gw->code_fd;
}

static int watch_dir(struct gw *gw, const char *dir)
{
    int fd = code_fd(gw);
    if (fd < 0 || gw->code_watches >= CODE_WATCH_MAX)
        return -1;
    int wd = inotify_add_watch(fd, dir, CODE_WATCH_MASK | IN_ONLYDIR | IN_DONT_FOLLOW);
    if (wd < 0)
        return -1;
    /* Watch descriptors are handed out in increasing order and one path
     * keeps its own: the largest seen is the number of distinct watches. */
    if ((size_t)wd > gw->code_watches)
        gw->code_watches = (size_t)wd;
    return 0;
}

/* Every directory of a code tree (the digest's own skips kept). */
static int watch_tree(struct gw *gw, const char *dir, int depth)
{
    if (depth > DIGEST_MAX_DEPTH || watch_dir(gw, dir) < 0)
        return -1;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || digest_code_skipped(n))
            continue;
        char *p = xasprintf("%s/%s", dir, n);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            rc = watch_tree(gw, p, depth + 1);
        free(p);
    }
    closedir(d);
    return rc;
}

void gw_code_watch(struct gw_up *up)
{
    struct gw *gw = up->gw;
    up->code_seen = gw->code_gen;
    for (size_t i = 0; i < up->pins.n && !up->code_unwatched; i++) {
        const struct gw_exec_pin *pin = &up->pins.v[i];
        int rc;
        if (pin->tree) {
            rc = watch_tree(gw, pin->path, 0);
        } else {
            char *dir = xstrdup(pin->path);
            char *slash = strrchr(dir, '/');
            if (slash && slash != dir)
                *slash = '\0';
            rc = watch_dir(gw, dir);
            free(dir);
        }
        if (rc < 0)
            up->code_unwatched = true;
    }
}

void gw_code_drain(struct gw *gw)
{
    if (gw->code_fd < 0)
        return;
    char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        ssize_t n = read(gw->code_fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        gw->code_gen++; /* any change under a pinned path */
    }
}

int gw_pins_verify(struct gw_up *up, strbuf *why)
{
    for (size_t i = 0; i < up->pins.n; i++) {
        const struct gw_exec_pin *pin = &up->pins.v[i];
        char hex[SHA256_HEX_LEN + 1];
        struct as_err err = AS_ERR_INIT;
        int rc =
            pin->tree ? digest_code_tree(pin->path, hex, &err) : digest_file(pin->path, hex, &err);
        if (rc < 0 || strcmp(hex, pin->checksum) != 0) {
            gw_pin_drift(up->gw, pin, why);
            return -1;
        }
    }
    return 0;
}

struct stopping {
    struct gw *gw;
    struct mcp_client *c;
};

static void drift_closed(void *ctx, const struct mcp_reply *r)
{
    (void)r;
    struct stopping *s = ctx;
    struct gw *gw = s->gw;
    mcp_client_free(s->c);
    free(s);
    if (gw->closing)
        gw->closing--;
    gw_maybe_finish(gw);
}

int gw_code_recheck(struct gw_up *up, strbuf *why)
{
    struct gw *gw = up->gw;
    if (!up->pins.n)
        return 0;
    gw_code_drain(gw);
    if (!up->code_unwatched && up->code_seen == gw->code_gen)
        return 0;
    uint64_t gen = gw->code_gen;
    if (gw_pins_verify(up, why) < 0) {
        /* It may already have read the new bytes, or read them next: stop
         * it now; the next start makes a new client (and verifies again). */
        struct mcp_client *c = up->client;
        enum mcp_client_state st = c ? mcp_client_state(c) : MCP_ST_IDLE;
        if (c && st != MCP_ST_IDLE && st != MCP_ST_CLOSING && st != MCP_ST_CLOSED) {
            up->client = NULL;
            gw->closing++;
            struct stopping *sp = xcalloc(1, sizeof *sp);
            sp->gw = gw;
            sp->c = c;
            mcp_client_shutdown(c, 0, drift_closed, sp);
        }
        return -1;
    }
    up->code_seen = gen;
    return 0;
}
