/*
 * A deliberately broken fuzz target, for the self-tests of the fuzz tooling
 * only (tools/fuzz_selftest.sh for `make fuzz`, the ctest fuzz/replay_selftest
 * for the seed replay in `make check`). It is never linked into agentstack.
 *
 * Why: a fuzz run that hides a crash reports green forever. These tests feed
 * this target inputs that crash, leak and hang it, and pass only if the
 * tooling fails on each, and succeeds on a harmless one.
 *
 * The three bad inputs (crash/, leak/ and hang/ beside this file) are
 * recognised by a 64-bit FNV-1a hash, not by comparing bytes, so libFuzzer's
 * comparison tracing cannot find them while fuzzing the harmless seed: a run
 * fails only when the known input is fed to it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SELFTEST_CRASH 0x566c9f05e9afc697ULL
#define SELFTEST_LEAK 0x05bae3271afca85bULL
#define SELFTEST_HANG 0x5f97235e5baa4d9cULL

static uint64_t fnv1a(const uint8_t *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Stored through a volatile global, so the compiler keeps the allocation,
 * then forgotten: the only pointer is gone when the function returns. */
void *volatile fuzz_selftest_sink;

__attribute__((noinline)) static void leak_a_block(void)
{
    char *p = malloc(4096);
    if (p)
        memset(p, 'x', 4096);
    fuzz_selftest_sink = p;
    fuzz_selftest_sink = NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t h = fnv1a(data, size);
    if (h == SELFTEST_CRASH) {
        fprintf(stderr, "fuzz_selftest: deliberate crash\n");
        abort();
    }
    if (h == SELFTEST_LEAK)
        leak_a_block();
    if (h == SELFTEST_HANG) {
        volatile int spin = 1;
        while (spin) {
        }
    }
    return 0;
}
