/* libFuzzer target: the host guard's hook-payload parser and classifier,
 * and the shell reader + command rules (spec 03 §11.12). The input is tried
 * both as a hook payload and as a command line; neither may crash, leak or
 * run unbounded. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/strbuf.h"
#include "guard/guard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct guard_ctx ctx;
static int ready;

static void init(void)
{
    mkdir("/tmp/as-fuzz-guard", 0700);
    mkdir("/tmp/as-fuzz-guard/ws", 0700);
    mkdir("/tmp/as-fuzz-guard/ws/.git", 0700);
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
