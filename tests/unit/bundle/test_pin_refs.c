/* Qualified library references in pin_collect (docs/library.md): "<source>:<name>"
 * and "lib:<source>/<name>" resolve through the library callback as written
 * but pin under the bare name, so the lock row, the rendered dir and the
 * gateway name agree; two references sharing a bare name but not a source
 * fail; without a callback a qualified ref is unresolved, never guessed to
 * be the local copy of the bare name. */
#include "testutil.h"

#include "base/strbuf.h"
#include "base/xalloc.h"
#include "bundle/digest.h"
#include "bundle/lockfile.h"
#include "bundle/manifest.h"

struct fx {
    char *dir, *home, *proj, *team_skill, *local_skill, *team_server;
    char team_pin[SHA256_HEX_LEN + 1], local_pin[SHA256_HEX_LEN + 1];
    char server_pin[SHA256_HEX_LEN + 1];
    char *team_rules;
    strvec asked; /* every name the callback was given */
};

/* A stand-in for lib_pin_lookup: sources "team" and "local" (first). */
static int fake_lib(void *ctx, enum pin_kind kind, const char *name, strbuf *path,
                    struct as_err *err)
{
    struct fx *f = ctx;
    strvec_push(&f->asked, name);
    if (strncmp(name, "ghost:", 6) == 0)
        return as_err_set(err, "no linked library named 'ghost'");
    const char *hit = NULL;
    if (kind == PIN_SKILL &&
        (strcmp(name, "team:review") == 0 || strcmp(name, "lib:team/review") == 0))
        hit = f->team_skill;
    else if (kind == PIN_SKILL && strcmp(name, "review") == 0)
        hit = f->local_skill;
    else if (kind == PIN_SERVER && strcmp(name, "team:kibana") == 0)
        hit = f->team_server;
    else if (kind == PIN_INSTRUCTION && strcmp(name, "rules") == 0)
        hit = f->team_rules;
    else if (kind == PIN_INSTRUCTION && strcmp(name, "broken") == 0)
        return as_err_set(err, "library instruction 'broken' is listed but missing");
    if (!hit)
        return 0;
    sb_reset(path);
    sb_adds(path, hit);
    return 1;
}

static void setup_fx(struct fx *f)
{
    memset(f, 0, sizeof *f);
    f->dir = tu_tmpdir();
    f->home = xasprintf("%s/home/.agentstack", f->dir);
    f->proj = xasprintf("%s/proj", f->dir);
    free(tu_write(f->dir, "team/skills/review/SKILL.md", "team\n"));
    free(tu_write(f->dir, "home/.agentstack/lib/skills/review/SKILL.md", "local\n"));
    free(tu_write(f->dir, "team/servers/kibana.toml", "type = \"stdio\"\ncommand = \"k\"\n"));
    free(tu_write(f->dir, "proj/agentstack.toml", "version = 1\n"));
    f->team_skill = xasprintf("%s/team/skills/review", f->dir);
    f->local_skill = xasprintf("%s/lib/skills/review", f->home);
    f->team_server = xasprintf("%s/team/servers/kibana.toml", f->dir);
    f->team_rules = tu_write(f->dir, "team/instructions/rules/instruction.toml", "x = 1\n");
    free(tu_write(f->dir, "home/.agentstack/lib/instructions/local/instruction.toml", "y\n"));
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(digest_skill_tree(f->team_skill, f->team_pin, &err), 0);
    assert_int_equal(digest_skill_tree(f->local_skill, f->local_pin, &err), 0);
    assert_int_equal(digest_file(f->team_server, f->server_pin, &err), 0);
    assert_string_not_equal(f->team_pin, f->local_pin);
}

static void teardown_fx(struct fx *f)
{
    strvec_clear(&f->asked);
    free(f->home);
    free(f->proj);
    free(f->team_skill);
    free(f->local_skill);
    free(f->team_server);
    free(f->team_rules);
    tu_rmtree(f->dir);
}

static struct manifest *load(struct fx *f, const char *text)
{
    char *path = xasprintf("%s/agentstack.toml", f->proj);
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = path,
                                  .data = text,
                                  .len = strlen(text),
                                  .manifest_dir = f->proj,
                                  .project_root = f->proj};
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = manifest_load_bytes(&src, &err);
    free(path);
    assert_non_null(m);
    return m;
}

static void collect(struct fx *f, const char *text, bool with_lib, pin_items *items)
{
    struct manifest *m = load(f, text);
    struct pin_opts o = {.home = f->home,
                         .library = with_lib ? fake_lib : NULL,
                         .library_ctx = with_lib ? f : NULL,
                         .no_decisions = true};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(pin_collect(m, &o, items, &err), 0);
    manifest_free(m);
}

static const struct pin_item *find(const pin_items *items, enum pin_kind k, const char *name)
{
    for (size_t i = 0; i < items->n; i++)
        if (items->v[i].kind == k && strcmp(items->v[i].name, name) == 0)
            return &items->v[i];
    return NULL;
}

static void test_ref_name(void **state)
{
    (void)state;
    char *src = NULL;
    assert_string_equal(pin_ref_name("team:review", &src), "review");
    assert_string_equal(src, "team");
    free(src);
    assert_string_equal(pin_ref_name("lib:team/review", &src), "review");
    assert_string_equal(src, "team");
    free(src);
    /* not a valid source name, or nothing after the colon: a bare name */
    assert_string_equal(pin_ref_name("Team:review", &src), "Team:review");
    assert_null(src);
    assert_string_equal(pin_ref_name("team:", &src), "team:");
    assert_null(src);
    assert_string_equal(pin_ref_name(":x", NULL), ":x");
    assert_string_equal(pin_ref_name("upstash/context7", NULL), "upstash/context7");
    /* "lib:x" without a slash is the source "lib" */
    assert_string_equal(pin_ref_name("lib:x", &src), "x");
    assert_string_equal(src, "lib");
    free(src);
}

/* The row is keyed by the bare name; the callback sees the ref as written. */
static void test_qualified_pins_bare(void **state)
{
    (void)state;
    struct fx f;
    setup_fx(&f);
    pin_items items = VEC_INIT;
    collect(&f,
            "version = 1\n[toolsets.t]\nservers = [\"team:kibana\"]\n"
            "skills = [\"team:review\"]\n",
            true, &items);
    const struct pin_item *s = find(&items, PIN_SKILL, "review");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_OK);
    assert_true(s->library);
    assert_string_equal(s->ref, "team:review");
    assert_string_equal(s->checksum, f.team_pin); /* team's, not local's */
    const struct pin_item *k = find(&items, PIN_SERVER, "kibana");
    assert_non_null(k);
    assert_int_equal(k->state, PIN_OK);
    assert_string_equal(k->ref, "team:kibana");
    assert_string_equal(k->checksum, f.server_pin);
    assert_true(strvec_find(&f.asked, "team:review") >= 0);
    assert_null(find(&items, PIN_SKILL, "team:review"));

    struct lockfile *l = pin_build_lock(&items, NULL, NULL);
    assert_int_equal(l->skills.n, 1);
    assert_string_equal(l->skills.v[0].name, "review");
    assert_null(l->skills.v[0].path);
    assert_int_equal(l->servers.n, 1);
    assert_string_equal(l->servers.v[0].name, "kibana");
    assert_string_equal(l->servers.v[0].source, "library");
    /* and verification finds that row again */
    assert_int_equal(pin_verify_item(l, s), PIN_MATCHES);
    assert_int_equal(pin_verify_item(l, k), PIN_MATCHES);
    lockfile_free(l);
    pin_items_free(&items);

    /* a bare "review" resolves to the first holder (local): another pin */
    pin_items bare = VEC_INIT;
    collect(&f, "version = 1\n[toolsets.t]\nskills = [\"review\"]\n", true, &bare);
    s = find(&bare, PIN_SKILL, "review");
    assert_non_null(s);
    assert_null(s->ref);
    assert_string_equal(s->checksum, f.local_pin);
    pin_items_free(&bare);
    teardown_fx(&f);
}

/* One bare name, two sources: one row cannot hold both, so it fails. */
static void test_two_sources_one_name_fail(void **state)
{
    (void)state;
    struct fx f;
    setup_fx(&f);
    pin_items items = VEC_INIT;
    collect(&f,
            "version = 1\n[toolsets.a]\nskills = [\"review\"]\n"
            "[toolsets.b]\nskills = [\"team:review\"]\n",
            true, &items);
    const struct pin_item *s = find(&items, PIN_SKILL, "review");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_FAILED);
    assert_non_null(strstr(s->error, "named twice"));
    assert_non_null(strstr(s->error, "'team:review'"));
    size_t n = 0;
    for (size_t i = 0; i < items.n; i++)
        n += items.v[i].kind == PIN_SKILL;
    assert_int_equal(n, 1);
    pin_items_free(&items);

    /* an inline [skills.review] against a qualified ref: the same conflict */
    free(tu_write(f.dir, "proj/s/SKILL.md", "inline\n"));
    pin_items inl = VEC_INIT;
    collect(&f,
            "version = 1\n[skills.review]\npath = \"s\"\n[toolsets.a]\n"
            "skills = [\"team:review\"]\n",
            true, &inl);
    s = find(&inl, PIN_SKILL, "review");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_FAILED);
    assert_non_null(strstr(s->error, "named twice"));
    pin_items_free(&inl);

    /* both spellings of one source are one reference */
    pin_items same = VEC_INIT;
    collect(&f,
            "version = 1\n[toolsets.a]\nskills = [\"lib:team/review\"]\n"
            "[toolsets.b]\nskills = [\"team:review\"]\n",
            true, &same);
    s = find(&same, PIN_SKILL, "review");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_OK);
    assert_string_equal(s->checksum, f.team_pin);
    pin_items_free(&same);

    /* a declared [servers] name with a colon is taken as written */
    pin_items srv = VEC_INIT;
    collect(&f,
            "version = 1\n[servers.\"team:kibana\"]\ntype = \"stdio\"\ncommand = \"x\"\n"
            "[toolsets.a]\nservers = [\"team:kibana\"]\n",
            true, &srv);
    const struct pin_item *k = find(&srv, PIN_SERVER, "team:kibana");
    assert_non_null(k);
    assert_false(k->library);
    assert_null(k->ref);
    assert_int_equal(k->state, PIN_OK);
    pin_items_free(&srv);
    teardown_fx(&f);
}

/* Errors: an unlinked source is unresolved with the library's message; with
 * no callback a qualified ref is never read as the local bare name. */
static void test_unresolved(void **state)
{
    (void)state;
    struct fx f;
    setup_fx(&f);
    pin_items items = VEC_INIT;
    collect(&f, "version = 1\n[toolsets.a]\nskills = [\"ghost:review\", \"team:nope\"]\n", true,
            &items);
    const struct pin_item *s = find(&items, PIN_SKILL, "review");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_UNRESOLVED);
    assert_non_null(strstr(s->error, "no linked library named 'ghost'"));
    s = find(&items, PIN_SKILL, "nope");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_UNRESOLVED);
    assert_non_null(strstr(s->error, "no skill 'nope' in library 'team'"));
    pin_items_free(&items);

    /* <home>/lib/skills/review exists, but "local:review" is not resolved
     * through it when no library callback reads sources.toml */
    pin_items nolib = VEC_INIT;
    collect(&f, "version = 1\n[toolsets.a]\nskills = [\"local:review\"]\n", false, &nolib);
    s = find(&nolib, PIN_SKILL, "review");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_UNRESOLVED);
    assert_non_null(strstr(s->error, "linked sources are not read here"));
    assert_string_equal(s->checksum, "");
    pin_items_free(&nolib);

    /* the bare name still resolves from the implicit local source */
    pin_items local = VEC_INIT;
    collect(&f, "version = 1\n[toolsets.a]\nskills = [\"review\"]\n", false, &local);
    s = find(&local, PIN_SKILL, "review");
    assert_non_null(s);
    assert_int_equal(s->state, PIN_OK);
    assert_string_equal(s->checksum, f.local_pin);
    pin_items_free(&local);
    teardown_fx(&f);
}

/* Library instructions ask the callback too; 0 leaves them to <home>/lib. */
static void test_library_instructions(void **state)
{
    (void)state;
    struct fx f;
    setup_fx(&f);
    pin_items items = VEC_INIT;
    collect(&f,
            "version = 1\n[instructions.rules]\n[instructions.local]\n"
            "[instructions.broken]\n",
            true, &items);
    const struct pin_item *in = find(&items, PIN_INSTRUCTION, "rules");
    assert_non_null(in);
    assert_int_equal(in->state, PIN_OK);
    assert_true(in->library);
    assert_string_equal(in->fs_path, f.team_rules);
    in = find(&items, PIN_INSTRUCTION, "local");
    assert_non_null(in);
    assert_int_equal(in->state, PIN_OK);
    assert_non_null(strstr(in->fs_path, "/lib/instructions/local/instruction.toml"));
    in = find(&items, PIN_INSTRUCTION, "broken");
    assert_non_null(in);
    assert_int_equal(in->state, PIN_UNRESOLVED);
    assert_non_null(strstr(in->error, "listed but missing"));
    pin_items_free(&items);
    teardown_fx(&f);
}

/*
 * 20,000 servers listed by a toolset, with repeats and a clashing spelling:
 * one row per name and the clash still fails. Not timed: pin_collect used to
 * scan every collected item for each reference (~2e8 comparisons here per
 * collect, minutes under ASan); the references are now grouped by sorting.
 */
static void test_many_servers(void **state)
{
    (void)state;
    enum { N = 20000 };
    struct fx f;
    setup_fx(&f);
    strbuf sb = SB_INIT;
    sb_adds(&sb, "version = 1\n");
    for (unsigned i = 0; i < N; i++)
        sb_addf(&sb, "[servers.s%u]\ntype = \"http\"\nurl = \"https://h.test/%u\"\n", i, i);
    sb_adds(&sb, "[toolsets.a]\nservers = [");
    for (unsigned i = 0; i < N; i++)
        sb_addf(&sb, "\"s%u\", ", i);
    sb_adds(&sb, "\"team:kibana\", \"s5\"]\n[toolsets.b]\nservers = [\"s9\", \"team:s7\"]\n");
    pin_items items = VEC_INIT;
    collect(&f, sb.buf, true, &items);
    size_t n = 0;
    for (size_t i = 0; i < items.n; i++)
        n += items.v[i].kind == PIN_SERVER;
    assert_int_equal(n, N + 1);
    const struct pin_item *s7 = find(&items, PIN_SERVER, "s7");
    assert_non_null(s7);
    assert_int_equal(s7->state, PIN_FAILED);
    assert_non_null(strstr(s7->error, "named twice, as 's7' and as 'team:s7'"));
    assert_int_equal(find(&items, PIN_SERVER, "s5")->state, PIN_OK);
    assert_int_equal(find(&items, PIN_SERVER, "kibana")->state, PIN_OK);
    assert_string_equal(items.v[N - 1].name, "s19999");
    assert_string_equal(items.v[N].name, "kibana");
    pin_items_free(&items);
    sb_release(&sb);
    teardown_fx(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ref_name),
        cmocka_unit_test(test_qualified_pins_bare),
        cmocka_unit_test(test_two_sources_one_name_fail),
        cmocka_unit_test(test_many_servers),
        cmocka_unit_test(test_unresolved),
        cmocka_unit_test(test_library_instructions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
