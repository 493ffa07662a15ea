/*
 * The sweep of stale code-mode endpoint directories: a gateway
 * deletes $AGENTSTACK_HOME/gateway/<pid>/endpoint.json when it exits, but a
 * SIGKILLed one cannot, and its token would sit there for the next process
 * that reuses the pid to be confused by. Each gateway sweeps its siblings at
 * start; a live pid that started after its endpoint was written (a reused
 * pid) counts as dead. Everything is done relative to directory fds opened
 * with O_NOFOLLOW, so a symlink planted at either level is never followed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "gateway/control_ext.h"

/* A decimal pid of at most 9 digits, no sign, no leading zero. */
static long parse_pid(const char *s)
{
    if (!*s || *s == '0' || strlen(s) > 9)
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static bool pid_dead(long pid)
{
    return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* When process pid started, in seconds since the epoch (/proc/<pid>/stat
 * field 22 in clock ticks after boot + btime); -1 when unknown. */
static long long pid_started(long pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
    if (!p)
        return -1;
    unsigned long long ticks = 0;
    int field = 2;
    char *save = NULL;
    for (char *tok = strtok_r(p + 1, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        if (++field == 22) {
            ticks = strtoull(tok, NULL, 10);
            break;
        }
    }
    if (field != 22)
        return -1;
    f = fopen("/proc/stat", "re");
    if (!f)
        return -1;
    long long btime = -1;
    char line[256];
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "btime ", 6) == 0)
            btime = atoll(line + 6);
    fclose(f);
    long hz = sysconf(_SC_CLK_TCK);
    if (btime < 0 || hz <= 0)
        return -1;
    return btime + (long long)(ticks / (unsigned long long)hz);
}

/* A live pid that started after the directory's endpoint was last written
 * is a reused pid: the gateway that wrote it is gone. Two seconds of slack
 * for tick rounding; unknown start time = keep. */
static bool pid_reused(int dirfd, const char *name, long pid, const struct stat *dir)
{
    long long started = pid_started(pid);
    if (started < 0)
        return false;
    long long written = (long long)dir->st_mtime;
    struct stat st;
    int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        if (fstatat(fd, "endpoint.json", &st, AT_SYMLINK_NOFOLLOW) == 0 &&
            (long long)st.st_mtime > written)
            written = (long long)st.st_mtime;
        close(fd);
    }
    return started > written + 2;
}

/* Empties one endpoint directory (files and symlinks only: both are
 * unlinked, never followed) and removes it. */
static int remove_dir(int parent, const char *name)
{
    int fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return -1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
            unlinkat(fd, e->d_name, 0);
    }
    closedir(d);
    return unlinkat(parent, name, AT_REMOVEDIR);
}

int gw_cm_sweep(const char *home)
{
    if (!home || !*home)
        return 0;
    strbuf p = SB_INIT;
    sb_addf(&p, "%s/gateway", home);
    int fd = open(p.buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    sb_release(&p);
    if (fd < 0)
        return 0;
    struct stat top;
    if (fstat(fd, &top) != 0 || top.st_uid != geteuid()) {
        close(fd);
        return 0;
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    int removed = 0;
    long self = (long)getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        long pid = parse_pid(e->d_name);
        if (pid <= 0 || pid == self)
            continue;
        struct stat st;
        if (fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode) ||
            st.st_uid != geteuid())
            continue;
        if ((pid_dead(pid) || pid_reused(fd, e->d_name, pid, &st)) &&
            remove_dir(fd, e->d_name) == 0)
            removed++;
    }
    closedir(d);
    return removed;
}
