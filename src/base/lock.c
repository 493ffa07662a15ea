/* lock — see lock.h. Polling with LOCK_NB rather than a blocking flock under
 * alarm(): no signal handlers, and the timeout is exact enough for people. */
#include "base/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fs.h"
#include "base/strbuf.h"

/* The wait between attempts starts short and doubles up to 10 ms: the
 * shared logs are held for microseconds per append, so a gateway that finds
 * one taken gets it on the next try instead of stalling its calls for 10 ms;
 * a long holder (another command writing the home) costs a few extra tries. */
#define LOCK_POLL_FIRST_US 50
#define LOCK_POLL_MAX_US 10000

static long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* 0 locked, 1 timed out, -1 other error (errno set). */
static int poll_lock_op(int fd, int op, int timeout_ms)
{
    long long deadline = now_us() + (timeout_ms > 0 ? (long long)timeout_ms * 1000 : 0);
    long long step = LOCK_POLL_FIRST_US;
    for (;;) {
        if (flock(fd, op | LOCK_NB) == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EWOULDBLOCK)
            return -1;
        long long left = deadline - now_us();
        if (left <= 0)
            return 1;
        long long wait = left < step ? left : step;
        struct timespec ts = {(time_t)(wait / 1000000), (long)(wait % 1000000) * 1000L};
        nanosleep(&ts, NULL);
        if (step < LOCK_POLL_MAX_US)
            step = step * 2 > LOCK_POLL_MAX_US ? LOCK_POLL_MAX_US : step * 2;
    }
}

static int poll_lock(int fd, int timeout_ms)
{
    return poll_lock_op(fd, LOCK_EX, timeout_ms);
}

static int lock_fd_op(int fd, int op, int timeout_ms, struct as_err *err)
{
    int r = poll_lock_op(fd, op, timeout_ms);
    if (r == 0)
        return 0;
    if (r < 0)
        return as_err_errno(err, "cannot take the lock");
    as_err_set(err,
               "another agentstack command is writing (waited %d ms for the lock); "
               "try again when it has finished",
               timeout_ms);
    as_err_hint(err, "wait for the other agentstack command to finish, then re-run this one");
    return -1;
}

int lock_fd(int fd, int timeout_ms, struct as_err *err)
{
    return lock_fd_op(fd, LOCK_EX, timeout_ms, err);
}

int lock_fd_shared(int fd, int timeout_ms, struct as_err *err)
{
    return lock_fd_op(fd, LOCK_SH, timeout_ms, err);
}

int lock_acquire(struct as_lock *l, const char *dir, int timeout_ms, struct as_err *err)
{
    l->fd = -1;
    if (fs_mkdirs(dir, 0700, err) != 0)
        return -1;
    strbuf path = SB_INIT;
    sb_addf(&path, "%s/.lock", dir);
    int fd = open(path.buf, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        as_err_errno(err, "cannot open the lock file %s", path.buf);
        sb_release(&path);
        return -1;
    }
    int r = poll_lock(fd, timeout_ms);
    if (r != 0) {
        if (r < 0)
            as_err_errno(err, "cannot lock %s", path.buf);
        else {
            as_err_set(err,
                       "another agentstack write is in progress: another agentstack "
                       "command holds %s (waited %d.%d s); try again when it has finished",
                       path.buf, timeout_ms / 1000, (timeout_ms % 1000) / 100);
            as_err_hint(err, "wait for the other agentstack command to finish, then re-run "
                             "this one");
        }
        close(fd);
        sb_release(&path);
        return -1;
    }
    sb_release(&path);
    l->fd = fd;
    return 0;
}

void lock_release(struct as_lock *l)
{
    if (l->fd >= 0) {
        flock(l->fd, LOCK_UN);
        close(l->fd);
    }
    l->fd = -1;
}
