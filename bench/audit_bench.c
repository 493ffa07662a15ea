/*
 * audit_bench — how long one call-audit append takes (src/audit/aud_chain.c),
 * alone and while another process appends to the same calls.jsonl, so
 * `make bench` shows what lock contention between two busy gateways costs
 * a call (issue 5: the append runs on the gateway's event loop).
 *
 *   audit_bench HOME N
 *       Appends N call rows to HOME/audit/calls.jsonl from this process
 *       alone, then N from each of two processes at once (one child), each
 *       append followed by a 100 us pause (a call's other work); prints one
 *       row per case: p50 and p99 per append, the maximum, and how many
 *       appends took over 1 ms. Verifies the chain afterwards: the rows are
 *       worth nothing if contention broke it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/err.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Appends n rows; writes the sorted latencies (seconds) into lat. */
static int append_rows(const char *home, int n, double *lat)
{
    struct aud_call c = {0};
    c.project = "/bench/project";
    c.server = "demo";
    c.tool = "echo";
    c.args_digest = "0123456789ab";
    c.outcome = "ok";
    for (int i = 0; i < n; i++) {
        struct as_err err = AS_ERR_INIT;
        double t = now_s();
        if (aud_call_append(home, &c, &err) < 0) {
            fprintf(stderr, "audit_bench: %s\n", err.msg);
            return -1;
        }
        lat[i] = now_s() - t;
        struct timespec pause = {0, 100000};
        nanosleep(&pause, NULL);
    }
    qsort(lat, (size_t)n, sizeof *lat, cmp_double);
    return 0;
}

static void row(const char *name, const double *lat, int n)
{
    int slow = 0;
    for (int i = 0; i < n; i++)
        slow += lat[i] > 1e-3;
    char ours[64];
    snprintf(ours, sizeof ours, "p50 %.1fus p99 %.1fus", lat[n / 2] * 1e6, lat[n * 99 / 100] * 1e6);
    printf("%-34s %24s  max %.2fms, %d over 1 ms\n", name, ours, lat[n - 1] * 1e3, slow);
}

int main(int argc, char **argv)
{
    if (argc != 3 || atoi(argv[2]) < 100) {
        fprintf(stderr, "usage: audit_bench HOME N (N >= 100)\n");
        return 2;
    }
    const char *home = argv[1];
    int n = atoi(argv[2]);
    double *lat = calloc((size_t)n, sizeof *lat);
    if (!lat || append_rows(home, n, lat) < 0)
        return 1;
    row("audit append, one writer", lat, n);
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 1;
    if (pid == 0)
        _exit(append_rows(home, n, lat) < 0 ? 1 : 0);
    int rc = append_rows(home, n, lat);
    int st = 0;
    waitpid(pid, &st, 0);
    if (rc < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    row("audit append, two writers at once", lat, n);
    struct aud_break b;
    size_t files = 0;
    struct as_err err = AS_ERR_INIT;
    int v = aud_verify_home(home, &b, &files, &err);
    if (v != 0) {
        fprintf(stderr, "audit_bench: the chain does not verify after the run (%s:%u %s)\n", b.file,
                b.line, v < 0 ? err.msg : b.reason);
        return 1;
    }
    printf("  (%d rows per writer, 100 us apart; chain verified: %zu file(s))\n", n, files);
    free(lat);
    return 0;
}
