/*
 * toml parse throughput: generates a ~10 MB document shaped like real
 * configuration (tables, arrays of tables, strings with escapes, numbers,
 * datetimes, inline tables, a wide table for the key index) and parses it
 * repeatedly. Prints one line: "toml parse  <MB/s> MB/s  (<size> file, best of N)".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "base/strbuf.h"
#include "base/toml.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void generate(strbuf *sb, size_t target)
{
    sb_adds(sb, "# generated benchmark document\ntitle = \"bench\"\n");
    for (int i = 0; sb->len < target / 2; i++) {
        sb_addf(sb, "\n[servers.s%d]\n", i);
        sb_addf(sb, "command = \"/usr/bin/server-%d\"\n", i);
        sb_addf(sb, "args = [\"--port\", \"%d\", '--flag', \"quoted \\\"arg\\\"\"]\n", 8000 + i);
        sb_addf(sb, "env = { HOME = \"/home/u%d\", LEVEL = %d, ON = true }\n", i, i % 7);
        sb_addf(sb, "timeout = %d.%d\nretries = 0x%x\n", i % 100, i % 10, i);
        sb_addf(sb, "started = 2024-0%d-1%dT12:34:56.789Z\n", i % 9 + 1, i % 10);
        sb_adds(sb,
                "description = \"\"\"\nA multi-line description \\u00e9\nwith two lines.\"\"\"\n");
        sb_addf(sb, "\n[[servers.s%d.tools]]\nname = \"tool-%d\"\nallowed = [1, 2, 3]\n", i, i);
    }
    sb_adds(sb, "\n[wide]\n");
    for (int i = 0; sb->len < target; i++)
        sb_addf(sb, "key_%d = %d  # comment %d\n", i, i * 31, i);
}

int main(int argc, char **argv)
{
    size_t target = argc > 1 ? (size_t)atol(argv[1]) : (size_t)10 << 20;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    strbuf doc = SB_INIT;
    generate(&doc, target);
    double best = 0;
    for (int r = 0; r < rounds; r++) {
        struct as_err err = AS_ERR_INIT;
        double t = now();
        toml_value *v = toml_parse("bench.toml", doc.buf, doc.len, &err);
        double d = now() - t;
        if (!v) {
            char buf[4096];
            fprintf(stderr, "toml_bench: %s\n", as_err_str(&err, buf, sizeof buf));
            return 1;
        }
        toml_free(v);
        if (r == 0 || d < best)
            best = d;
    }
    printf("toml parse  %.1f MB/s  (%.1f MB file, best of %d)\n",
           (double)doc.len / (1024.0 * 1024.0) / best, (double)doc.len / (1024.0 * 1024.0), rounds);
    sb_release(&doc);
    return 0;
}
