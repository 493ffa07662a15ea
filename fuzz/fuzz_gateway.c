/*
 * libFuzzer target: an arbitrary sequence of client frames through the whole
 * gateway request path (gw_serve: framing, initialize/eras, tools/list,
 * tools/call of every control-plane tool, the dispatch point, leases, skills,
 * cancellation, responses to our own requests). Nothing upstream is ever
 * started: the gateway is either project-less or pinned (--manifest-dir) to
 * a temporary project whose manifest declares skills and a toolset but no
 * server. Every file it may touch lives under one temporary directory made
 * once (AGENTSTACK_HOME and the project). Must never crash, hang or leak.
 *
 * Input: byte 0 chooses the set-up (bit 0: the temporary project instead of
 * none; bit 1: --transparent); the rest is stdin, newline-delimited.
 */
#include <fcntl.h>
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "gateway/gateway.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char g_root[64];
static char g_empty[128];
static char g_proj[128];
static int g_null = -1;

static const char manifest[] = "version = 1\n\n"
                               "[skills.review]\npath = \"skills/review\"\n\n"
                               "[toolsets.backend]\nservers = []\nskills = [\"review\"]\n";
static const char skill[] = "---\ndescription: Review checklist\n---\nRead the diff twice.\n";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static void sub(char *out, size_t cap, const char *a, const char *b)
{
    snprintf(out, cap, "%s/%s", a, b);
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st;
    (void)type;
    (void)ftw;
    (void)remove(path); /* best effort: keep walking */
    return 0;
}

static void cleanup(void)
{
    if (g_root[0])
        nftw(g_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    strcpy(g_root, "/tmp/fuzz_gateway.XXXXXX");
    if (!mkdtemp(g_root))
        abort();
    atexit(cleanup);
    char p[256];
    sub(p, sizeof p, g_root, "home");
    mkdir(p, 0700);
    setenv("AGENTSTACK_HOME", p, 1);
    setenv("HOME", g_root, 1);
    unsetenv("AGENTSTACK_MANIFEST_DIR");
    unsetenv("AGENTSTACK_RUN_ID");
    /* Short budgets: nothing upstream exists, so nothing should ever wait. */
    setenv("AGENTSTACK_CALL_TIMEOUT_MS", "50", 1);
    sub(g_empty, sizeof g_empty, g_root, "empty");
    mkdir(g_empty, 0700);
    sub(g_proj, sizeof g_proj, g_root, "proj");
    mkdir(g_proj, 0700);
    sub(p, sizeof p, g_proj, "skills");
    mkdir(p, 0700);
    sub(p, sizeof p, g_proj, "skills/review");
    mkdir(p, 0700);
    /* No walk-up from the fuzzer's own directory may find a real project. */
    if (chdir(g_empty) != 0)
        abort();
    g_null = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (g_null < 0)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > (1u << 20))
        return 0;
    unsigned mode = data[0];
    char p[256];
    if (mode & 1) {
        /* agentstack_lease_freeze and the manifest-edit tools may have
         * changed it: every input starts from the same bytes. */
        sub(p, sizeof p, g_proj, "agentstack.toml");
        write_file(p, manifest);
        sub(p, sizeof p, g_proj, "skills/review/SKILL.md");
        write_file(p, skill);
    }
    int in = memfd_create("fuzz_gateway_in", MFD_CLOEXEC);
    if (in < 0)
        abort();
    size_t off = 1;
    while (off < size) {
        ssize_t n = write(in, data + off, size - off);
        if (n <= 0)
            abort();
        off += (size_t)n;
    }
    lseek(in, 0, SEEK_SET);

    struct gw_opts o = {0};
    o.manifest_dir = (mode & 1) ? g_proj : g_empty;
    o.transparent = (mode & 2) != 0;
    o.in_fd = in;
    o.out_fd = g_null;
    o.version = "fuzz";
    struct as_err err = AS_ERR_INIT;
    (void)gw_serve(&o, &err);
    close(in);
    return 0;
}
