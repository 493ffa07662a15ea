/*
 * relay_bench — the floor any stdio MCP gateway pays: a bare relay that
 * spawns the upstream (argv[1..]) on two pipes and copies bytes both ways,
 * stdin -> child stdin and child stdout -> stdout, with poll(2) + read(2) +
 * write(2) and nothing else: no framing, no parsing, no policy, no audit.
 *
 * Why: bench/interop_bench.sh runs it as a third target beside "direct" and
 * "gateway", so the gap between direct and the relay is the process hop
 * itself (one more process, two more wake-ups per call on a small VM) and
 * the gap between the relay and the gateway is our per-call processing.
 *
 *   relay_bench COMMAND [ARG...]
 *
 * Child stderr is inherited. On stdin EOF the child's stdin is closed and
 * its output is relayed until it closes stdout; exits with the child's
 * status (128+n for a signal).
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: relay_bench COMMAND [ARG...]\n");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) {
        perror("relay_bench: pipe");
        return 1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        perror("relay_bench: fork");
        return 1;
    }
    if (pid == 0) {
        signal(SIGPIPE, SIG_DFL);
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execvp(argv[1], argv + 1);
        perror("relay_bench: exec");
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    int to_child = in[1], from_child = out[0];
    static char buf[65536];
    struct pollfd pf[2] = {{0, POLLIN, 0}, {from_child, POLLIN, 0}};
    for (;;) {
        if (pf[0].fd < 0 && pf[1].fd < 0)
            break;
        int r = poll(pf, 2, -1);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            perror("relay_bench: poll");
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (pf[i].fd < 0 || !(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(pf[i].fd, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            int dst = i == 0 ? to_child : 1;
            if (n <= 0 || write_all(dst, buf, (size_t)n) != 0) {
                if (i == 0) {
                    close(to_child); /* stdin ended: let the child finish */
                    pf[0].fd = -1;
                } else {
                    pf[1].fd = -1; /* the child closed its stdout (or ours is gone) */
                    if (pf[0].fd >= 0) {
                        close(to_child);
                        pf[0].fd = -1;
                    }
                }
            }
        }
    }
    close(from_child);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
