/*
 * lock — the one cross-process writer lock under $AGENTSTACK_HOME:
 * flock on <dir>/.lock, waiting up to a timeout,
 * never a mkdir mutex and never stale-lock breaking. Also flock helpers for
 * appending to shared logs.
 */
#ifndef AS_BASE_LOCK_H
#define AS_BASE_LOCK_H

#include "base/err.h"

/* How long a writer waits for another agentstack command. */
#define LOCK_WAIT_MS 10000

struct as_lock {
    int fd;
};

/* Takes an exclusive flock on <dir>/.lock (created 0600), waiting up to
 * timeout_ms. On timeout: -1 with a message naming the lock file and saying
 * another agentstack command holds it. */
int lock_acquire(struct as_lock *l, const char *dir, int timeout_ms, struct as_err *err);
void lock_release(struct as_lock *l);
/* flock(fd, LOCK_EX) with the same timeout semantics. */
int lock_fd(int fd, int timeout_ms, struct as_err *err);
/* flock(fd, LOCK_SH), the same way: readers that need one consistent state. */
int lock_fd_shared(int fd, int timeout_ms, struct as_err *err);

#endif
