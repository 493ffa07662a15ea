/* Every fixture under tests/fixtures/manifests: good ones load and validate,
 * bad ones are refused with the expected text (and line), never a crash. */
#include "testutil.h"

#include <dirent.h>

#include "bundle/manifest.h"

static const char *const adapters[] = {
    "claude-code", "claude-desktop", "codex",    "copilot-cli", "cursor", "gemini",     "opencode",
    "pi",          "vscode",         "windsurf", "kiro",        "junie",  "antigravity"};

static char *fixture_dir(const char *sub)
{
    const char *src = getenv("AS_SRC");
    char *p = NULL;
    assert_true(asprintf(&p, "%s/tests/fixtures/manifests/%s", src ? src : ".", sub) > 0);
    return p;
}

static int names_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list(const char *dir, char ***out)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    char **v = NULL;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t l = strlen(de->d_name);
        if (l < 6 || strcmp(de->d_name + l - 5, ".toml") != 0)
            continue;
        v = realloc(v, (n + 1) * sizeof *v);
        v[n++] = strdup(de->d_name);
    }
    closedir(d);
    qsort(v, n, sizeof *v, names_cmp);
    *out = v;
    return n;
}

/* Loads + validates; returns the model (NULL on a load error) and fills the
 * first error text in buf. */
static struct manifest *load(const char *path, bool machine, char *buf, size_t n, unsigned *line,
                             size_t *nerr)
{
    size_t len;
    char *text = tu_read(path, &len);
    assert_non_null(text);
    struct manifest_source src = {.kind = machine ? MANIFEST_MACHINE : MANIFEST_PROJECT,
                                  .path = path,
                                  .data = text,
                                  .len = len};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    free(text);
    buf[0] = '\0';
    *line = 0;
    *nerr = 0;
    if (!m) {
        snprintf(buf, n, "%s\n%s", err.msg, err.hint);
        *line = err.line;
        *nerr = 1;
        return NULL;
    }
    struct manifest_env env = {.adapter_ids = adapters,
                               .n_adapter_ids = sizeof adapters / sizeof adapters[0]};
    mf_diags d = VEC_INIT;
    *nerr = manifest_validate(m, &env, &d);
    if (d.n) {
        snprintf(buf, n, "%s\n%s", d.v[0].msg, d.v[0].fix ? d.v[0].fix : "");
        *line = d.v[0].pos.line;
    }
    mf_diags_free(&d);
    return m;
}

static void test_good(void **state)
{
    (void)state;
    char *dir = fixture_dir("good");
    char **names;
    size_t n = list(dir, &names);
    assert_true(n >= 4);
    for (size_t i = 0; i < n; i++) {
        char *path = NULL;
        assert_true(asprintf(&path, "%s/%s", dir, names[i]) > 0);
        char buf[4096];
        unsigned line;
        size_t nerr;
        bool machine = strncmp(names[i], "machine-", 8) == 0;
        struct manifest *m = load(path, machine, buf, sizeof buf, &line, &nerr);
        if (!m || nerr)
            fail_msg("%s: %s", names[i], buf);
        manifest_free(m);
        free(path);
        free(names[i]);
    }
    free(names);
    free(dir);
}

static void test_bad(void **state)
{
    (void)state;
    char *dir = fixture_dir("bad");
    char **names;
    size_t n = list(dir, &names);
    assert_true(n >= 40);
    for (size_t i = 0; i < n; i++) {
        char *path = NULL;
        assert_true(asprintf(&path, "%s/%s", dir, names[i]) > 0);
        char *text = tu_read(path, NULL);
        assert_true(strncmp(text, "# expect: ", 10) == 0);
        char *nl = strchr(text, '\n');
        *nl = '\0';
        const char *expect = text + 10;
        unsigned want_line = 0;
        if (strncmp(nl + 1, "# line: ", 8) == 0)
            want_line = (unsigned)atoi(nl + 9);
        char buf[4096];
        unsigned line;
        size_t nerr;
        bool machine = strncmp(names[i], "machine-", 8) == 0;
        struct manifest *m = load(path, machine, buf, sizeof buf, &line, &nerr);
        if (nerr == 0)
            fail_msg("%s: accepted, expected '%s'", names[i], expect);
        if (!strstr(buf, expect))
            fail_msg("%s: got '%s', expected '%s'", names[i], buf, expect);
        if (want_line && line != want_line)
            fail_msg("%s: line %u, expected %u", names[i], line, want_line);
        manifest_free(m);
        free(text);
        free(path);
        free(names[i]);
    }
    free(names);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_good),
        cmocka_unit_test(test_bad),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
