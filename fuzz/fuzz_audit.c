/*
 * libFuzzer target for the evidence verifier: a hostile calls.jsonl, its
 * rotated .1 and its anchor (split at the first two 0xFF bytes), written to
 * a private temporary home and verified. Never crashes, leaks or hangs, and:
 *  - the verdict is 0 (intact) or 1 (a break, with a reason), never an
 *    error: every byte sequence is evidence to judge, not a read failure;
 *  - appending to a log that verified intact keeps it intact.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"

#define CHECK(c, what)                                                                             \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_audit: property failed: %s\n", what);                            \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char home[64], dir[96], log_path[160], old_path[168], head_path[168];
static unsigned long long iteration;

static void put(const char *path, const uint8_t *p, size_t n, int present)
{
    unlink(path);
    if (!present)
        return;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        abort();
    if (n && write(fd, p, n) != (ssize_t)n)
        abort();
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    if (!home[0]) {
        snprintf(home, sizeof home, "/tmp/fuzz_audit.XXXXXX");
        if (!mkdtemp(home))
            abort();
        snprintf(dir, sizeof dir, "%s/audit", home);
        mkdir(dir, 0700);
    }
    /* A new name each time: the writer's open-log cache is keyed by path,
     * and a recreated file may get the inode (and size) of the last one. */
    iteration++;
    snprintf(log_path, sizeof log_path, "%s/c%llu.jsonl", dir, iteration);
    snprintf(old_path, sizeof old_path, "%s.1", log_path);
    snprintf(head_path, sizeof head_path, "%s.head", log_path);
    const uint8_t *a = memchr(data, 0xFF, size);
    const uint8_t *b = a ? memchr(a + 1, 0xFF, size - (size_t)(a + 1 - data)) : NULL;
    size_t l1 = a ? (size_t)(a - data) : size;
    put(log_path, data, l1, 1);
    put(old_path, a ? a + 1 : NULL, a ? (size_t)((b ? b : data + size) - a - 1) : 0, a != NULL);
    put(head_path, b ? b + 1 : NULL, b ? size - (size_t)(b + 1 - data) : 0, b != NULL);

    struct aud_break br;
    struct as_err err = AS_ERR_INIT;
    memset(&br, 0, sizeof br);
    int v = aud_verify(log_path, &br, NULL, &err);
    CHECK(v == 0 || (v == 1 && br.reason[0]), "a verdict, never a read error");
    if (v == 0) {
        json_t *r = json_pack("{s:i}", "n", (int)size);
        int ok = aud_append(log_path, r, NULL, &err);
        json_decref(r);
        if (ok == 0) {
            memset(&br, 0, sizeof br);
            CHECK(aud_verify(log_path, &br, NULL, &err) == 0,
                  "an append keeps an intact log intact");
        }
    }
    unlink(log_path);
    unlink(old_path);
    unlink(head_path);
    return 0;
}
