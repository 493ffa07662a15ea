/* libFuzzer target: the host guard's hook-payload parser and classifier,
 * and the shell reader, expansion, evaluation and command rules. The input
 * is tried both as a hook payload and as a command line; neither may
 * crash, leak or run unbounded. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/strbuf.h"
#include "guard/guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct guard_ctx ctx;
static int ready;

static void put(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        abort();
    fputs(text, f);
    fclose(f);
}

static void init(void)
{
    /* a machine home with the default deny list, a project deny glob, an
     * allow rule, a workspace with a denied file and a link: every judging
     * path (globs, links, deny spellings, allow rules) is reachable */
    mkdir("/tmp/as-fuzz-guard", 0700);
    mkdir("/tmp/as-fuzz-guard/.agentstack", 0700);
    mkdir("/tmp/as-fuzz-guard/ws", 0700);
    mkdir("/tmp/as-fuzz-guard/ws/.git", 0700);
    mkdir("/tmp/as-fuzz-guard/ws/.agentstack", 0700);
    mkdir("/tmp/as-fuzz-guard/ws/src", 0700);
    put("/tmp/as-fuzz-guard/.agentstack/agentstack.toml",
        "version = 1\n[guard]\nenabled = true\nallow_roots = []\nallow = [\"make -f *\"]\n"
        "deny = [\".env\", \".env.*.local\", \"id_rsa\", \"*.pem\", \".netrc\"]\n");
    put("/tmp/as-fuzz-guard/ws/.agentstack/agentstack.toml",
        "version = 1\n[policy.filesystem]\ndeny = [\"secrets/**\"]\n");
    put("/tmp/as-fuzz-guard/ws/.env", "X=1\n");
    put("/tmp/as-fuzz-guard/ws/src/a.c", "int a;\n");
    if (symlink(".env", "/tmp/as-fuzz-guard/ws/link") != 0 && errno != EEXIST)
        abort();
    setenv("HOME", "/tmp/as-fuzz-guard", 1);
    setenv("AGENTSTACK_HOME", "/tmp/as-fuzz-guard/.agentstack", 1);
    struct guard_config cfg;
    guard_config_load(&cfg, true);
    struct as_err err = AS_ERR_INIT;
    if (cfg.state != GUARD_ON || guard_ctx_build(&ctx, &cfg, "/tmp/as-fuzz-guard/ws", &err) < 0)
        abort();
    guard_config_free(&cfg);
    ready = 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        init();
    if (size > GUARD_MAX_PAYLOAD)
        return 0;
    enum guard_proto p = GUARD_P_SNIFF;
    struct guard_action a;
    struct as_err err = AS_ERR_INIT;
    struct guard_verdict v;
    if (guard_payload_classify((const char *)data, size, &p, &a, &err) == 0) {
        guard_verdict_init(&v);
        guard_judge(&ctx, &a, &v);
        guard_verdict_release(&v);
    }
    guard_action_free(&a);
    char *cmd = strndup((const char *)data, size);
    if (cmd) {
        guard_verdict_init(&v);
        guard_judge_shell(&ctx, cmd, &v);
        guard_verdict_release(&v);
        strbuf r = SB_INIT;
        guard_redact(cmd, strlen(cmd), &r);
        sb_release(&r);
        free(cmd);
    }
    return 0;
}
