/* Detecting the gateway bridge in a CLI's user config (connect's entry): a
 * config that names it — plainly, through a JSON \u escape, or across the
 * 64 KiB chunks the pre-scan reads — is found, so its servers are served
 * live; a large config that never names it is not (and is never parsed). */
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>

#include "adapters/adapters.h"
#include "adapters/internal.h"

struct fx {
    char *root, *home;
    struct adp_registry reg;
    const struct adp_desc *claude;
};

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof *f);
    f->root = tu_tmpdir(); /* HOME = <root>/home */
    assert_true(asprintf(&f->home, "%s/home", f->root) > 0);
    unsetenv("XDG_CONFIG_HOME");
    struct as_err e = AS_ERR_INIT;
    if (adp_registry_load(&f->reg, false, &e) != 0)
        fail_msg("registry: %s", e.msg);
    f->claude = adp_registry_find(&f->reg, "claude-code");
    assert_non_null(f->claude);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;
    adp_registry_free(&f->reg);
    tu_rmtree(f->root); /* frees root */
    free(f->home);
    free(f);
    return 0;
}

/* ~/.claude.json: `pad` bytes of other servers, then `entry` (a member of
 * mcpServers, or ""). */
static void config(struct fx *f, size_t pad, const char *entry)
{
    strbuf s = SB_INIT;
    sb_adds(&s, "{\n  \"mcpServers\": {\n");
    for (size_t i = 0; s.len < pad; i++)
        sb_addf(&s, "    \"srv%zu\": {\"type\": \"stdio\", \"command\": \"npx\"},\n", i);
    sb_addf(&s, "%s    \"last\": {\"type\": \"stdio\", \"command\": \"x\"}\n  }\n}\n", entry);
    free(tu_write(f->home, ".claude.json", s.buf));
    sb_release(&s);
}

static void plain_and_absent(void **state)
{
    struct fx *f = *state;
    config(f, 200000, "");
    assert_false(adp_i_bridge_registered(f->claude));
    config(f, 200000,
           "    \"agentstack\": {\"type\": \"stdio\", \"command\": \"/x/agentstack\", "
           "\"args\": [\"mcp\"]},\n");
    assert_true(adp_i_bridge_registered(f->claude));
    /* a command named agentstack whose first argument is mcp, under another name */
    config(f, 100,
           "    \"gw\": {\"type\": \"stdio\", \"command\": \"/usr/bin/agentstack\", "
           "\"args\": [\"mcp\", \"--auto-project\"]},\n");
    assert_true(adp_i_bridge_registered(f->claude));
    /* the name in a value only is not the bridge */
    config(f, 100, "    \"notes\": {\"type\": \"stdio\", \"command\": \"agentstack-notes\"},\n");
    assert_false(adp_i_bridge_registered(f->claude));
}

static void escaped_name(void **state)
{
    struct fx *f = *state;
    /* "agent\u0073tack" is the key "agentstack": the pre-scan must not skip it */
    config(f, 150000, "    \"agent\\u0073tack\": {\"type\": \"stdio\", \"command\": \"x\"},\n");
    assert_true(adp_i_bridge_registered(f->claude));
}

static void across_chunks(void **state)
{
    struct fx *f = *state;
    /* place "agentstack" so that it straddles the first 64 KiB boundary */
    for (size_t shift = 0; shift < 12; shift++) {
        strbuf s = SB_INIT;
        sb_adds(&s, "{\"mcpServers\": {\"pad\": {\"type\": \"stdio\", \"command\": \"");
        size_t want = 65536 - 5 - shift - s.len;
        for (size_t i = 0; i < want; i++)
            sb_addc(&s, 'p');
        sb_adds(&s, "\"}, \"");
        sb_adds(&s, "agentstack\": {\"type\": \"stdio\", \"command\": \"x\"}}}\n");
        free(tu_write(f->home, ".claude.json", s.buf));
        sb_release(&s);
        assert_true(adp_i_bridge_registered(f->claude));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(plain_and_absent, setup, teardown),
        cmocka_unit_test_setup_teardown(escaped_name, setup, teardown),
        cmocka_unit_test_setup_teardown(across_chunks, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
