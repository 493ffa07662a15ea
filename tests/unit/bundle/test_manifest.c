/* The manifest model: decode, overlay merge, machine layer, hostile input
 * (docs/manifest.md). */
#include "testutil.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "bundle/discover.h"
#include "bundle/manifest.h"

static struct manifest *load2(const char *text, const char *overlay, struct as_err *err)
{
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT,
        .path = "/p/.agentstack/agentstack.toml",
        .data = text,
        .len = strlen(text),
        .overlay_path = overlay ? "/p/.agentstack/agentstack.local.toml" : NULL,
        .overlay_data = overlay,
        .overlay_len = overlay ? strlen(overlay) : 0,
    };
    return manifest_load_bytes(&src, err);
}

static struct manifest *load(const char *text, struct as_err *err)
{
    return load2(text, NULL, err);
}

static const char *full =
    "version = 1\n"
    "default_toolset = \"backend\"\n"
    "[servers.github]\n"
    "type = \"http\"\n"
    "url = \"https://api.example.test/mcp\"\n"
    "headers = { Authorization = \"Bearer ${GH}\", X-B = \"2\" }\n"
    "[servers.notes]\n"
    "type = \"stdio\"\n"
    "command = \"uvx\"\n"
    "args = [\"notes-mcp\", \"--ro\"]\n"
    "cwd = \"tools\"\n"
    "integrity_roots = [\"tools\"]\n"
    "targets = []\n"
    "owner = \"codex\"\n"
    "env = { B = \"2\", A = \"1\" }\n"
    "[servers.notes.extra.codex]\n"
    "startup_timeout_sec = 20\n"
    "[skills.notes]\npath = \"./skills/notes\"\n"
    "[skills.both]\npath = \"./p\"\ngit = \"https://g/r\"\nrev = \"v1\"\nsubpath = \"s\"\n"
    "[instructions.house]\npath = \"house.md\"\n"
    "[[instructions.house.variant]]\ncli = \"codex\"\npath = \"h.codex.md\"\n"
    "[[instructions.house.variant]]\nmodel = \"m1\"\npath = \"h.m1.md\"\n"
    "[[instructions.house.variant]]\ncli = \"codex\"\nmodel = \"m1\"\npath = \"h.both.md\"\n"
    "[[instructions.house.variant]]\ncli = \"codex\"\npath = \"h.codex2.md\"\n"
    "[instructions.lib]\ntargets = [\"codex\"]\n"
    "[toolsets.backend]\nservers = [\"github\", \"notes\"]\nskills = [\"*\"]\n"
    "packages = []\nharness = \"codex\"\nmodel = \"gpt\"\neffort = \"high\"\n"
    "[toolsets.other]\nservers = [\"github\"]\n"
    "[settings.claude-code]\nmodel = \"sonnet\"\nperm = { allow = [\"Bash(ls)\"] }\n"
    "[hooks.h]\nevent = \"PreToolUse\"\ncommand = \"./c.sh\"\nmatcher = \"Bash\"\n"
    "args = [\"-x\"]\ntimeout = 5\n"
    "[targets]\ndefault = [\"codex\"]\n"
    "[policy.tools]\n\"*\" = [\"!delete_*\"]\n"
    "[extensions.ext]\ntarget = \"pi\"\npath = \"ext\"\ndescription = \"d\"\n"
    "[workflows.wf]\nroles = [\"a\", \"b\"]\nmax_agents = 3\nmax_wall_seconds = 60\n"
    "[workflows.wf.scheduling.a]\nk = 1\n"
    "[packs.acme]\nversion = \"v1\"\nservers = [\"acme\"]\n"
    "[package_overrides.acme]\nremove = [\"x\"]\nreplace = { a = \"b\" }\n"
    "[meta]\nname = \"demo\"\ngitignore = false\n"
    "[delivery]\nrender_locally = true\n"
    "[delivery.harness.codex]\nrender_locally = false\n";

static void test_full_decode(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = load(full, &err);
    if (!m)
        fail_msg("%s", err.msg);
    assert_int_equal(m->version, 1);
    assert_string_equal(m->manifest_dir, "/p/.agentstack");
    assert_string_equal(m->project_root, "/p");
    assert_int_equal(m->servers.n, 2);
    const struct mf_server *g = &m->servers.v[0], *n = &m->servers.v[1];
    assert_string_equal(g->name, "github");
    assert_int_equal(g->type, MF_SERVER_HTTP);
    assert_string_equal(g->url, "https://api.example.test/mcp");
    assert_int_equal(g->headers.n, 2);
    assert_string_equal(g->headers.v[0].key, "Authorization");
    assert_string_equal(g->headers.v[1].key, "X-B");
    assert_false(g->targets_set);
    assert_int_equal(g->targets.n, 1);
    assert_string_equal(g->targets.v[0], "*");
    assert_int_equal(g->pos.line, 3);
    assert_string_equal(n->name, "notes");
    assert_int_equal(n->type, MF_SERVER_STDIO);
    assert_string_equal(n->command, "uvx");
    assert_int_equal(n->args.n, 2);
    assert_string_equal(n->args.v[1], "--ro");
    assert_string_equal(n->cwd, "tools");
    assert_string_equal(n->integrity_roots.v[0], "tools");
    assert_true(n->targets_set);
    assert_int_equal(n->targets.n, 0);
    assert_false(manifest_targets_include(&n->targets, "codex"));
    assert_true(manifest_targets_include(&g->targets, "codex"));
    assert_string_equal(n->owner, "codex");
    /* file order kept */
    assert_string_equal(n->env.v[0].key, "B");
    assert_string_equal(n->env.v[1].value, "1");
    assert_non_null(n->extra);
    assert_non_null(toml_get_path(n->extra, "codex", "startup_timeout_sec", NULL));
    assert_ptr_equal(manifest_server(m, "notes"), n);
    assert_null(manifest_server(m, "nope"));

    assert_int_equal(m->skills.n, 2);
    assert_int_equal(m->skills.v[0].source, MF_SOURCE_PATH);
    assert_int_equal(m->skills.v[1].source, MF_SOURCE_GIT); /* git wins */
    assert_string_equal(m->skills.v[1].subpath, "s");

    const struct mf_instruction *in = manifest_instruction(m, "house");
    assert_non_null(in);
    assert_string_equal(in->path, "house.md");
    assert_int_equal(in->variants.n, 4);
    assert_string_equal(in->anchor_dir, "/p/.agentstack");
    assert_false(in->inherited);
    /* cli+model > cli > model > base; ties → first */
    assert_string_equal(manifest_select_variant(in, "codex", "m1")->path, "h.both.md");
    assert_string_equal(manifest_select_variant(in, "codex", "m2")->path, "h.codex.md");
    assert_string_equal(manifest_select_variant(in, "claude-code", "m1")->path, "h.m1.md");
    assert_null(manifest_select_variant(in, "claude-code", "other"));
    assert_null(manifest_select_variant(in, NULL, NULL));
    const struct mf_instruction *lib = manifest_instruction(m, "lib");
    assert_null(lib->path);
    assert_true(lib->targets_set);

    assert_int_equal(m->toolsets.n, 2);
    assert_false(m->toolsets_legacy);
    const struct mf_toolset *t = manifest_toolset(m, "backend");
    assert_string_equal(t->skills.v[0], "*");
    assert_string_equal(t->harness, "codex");
    assert_string_equal(t->effort, "high");
    assert_ptr_equal(manifest_effective_toolset(m), t);
    assert_string_equal(m->default_toolset, "backend");
    assert_int_equal(m->default_toolset_pos.line, 2);

    const struct mf_settings *s = manifest_settings(m, "claude-code");
    assert_non_null(s);
    assert_int_equal(toml_len(s->table), 2);
    assert_int_equal(m->hooks.n, 1);
    assert_true(m->hooks.v[0].has_timeout);
    assert_int_equal(m->hooks.v[0].timeout, 5);
    assert_string_equal(m->hooks.v[0].targets.v[0], "*");
    assert_true(m->has_targets);
    assert_string_equal(m->targets_default.v[0], "codex");
    assert_non_null(m->policy);
    assert_non_null(toml_get_path(m->policy, "tools", "*", NULL));
    assert_int_equal(m->extensions.v[0].source, MF_SOURCE_PATH);
    assert_int_equal(m->workflows.v[0].source, MF_SOURCE_LIBRARY);
    assert_int_equal(m->workflows.v[0].max_agents, 3);
    assert_non_null(m->workflows.v[0].scheduling);
    assert_non_null(m->packs);
    assert_non_null(m->package_overrides);
    assert_string_equal(m->meta_name, "demo");
    assert_false(m->meta_gitignore);
    assert_true(manifest_render_locally(m, "claude-code"));
    assert_false(manifest_render_locally(m, "codex"));
    assert_int_equal(m->warnings.n, 0);
    manifest_free(m);
}

static void test_defaults_and_effective_toolset(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = load("version = 1\n", &err);
    assert_non_null(m);
    assert_true(m->meta_gitignore);
    assert_false(m->has_targets);
    assert_null(m->policy);
    assert_null(manifest_effective_toolset(m));
    assert_false(manifest_render_locally(m, "codex"));
    manifest_free(m);

    m = load("version = 1\n[toolsets.only]\nservers = []\n", &err);
    assert_string_equal(manifest_effective_toolset(m)->name, "only");
    manifest_free(m);
    m = load("version = 1\n[toolsets.a]\n[toolsets.b]\n", &err);
    assert_null(manifest_effective_toolset(m));
    manifest_free(m);
    /* legacy spelling is read */
    m = load("version = 1\n[profiles.backend]\nservers = [\"x\"]\n", &err);
    assert_non_null(m);
    assert_true(m->toolsets_legacy);
    assert_string_equal(manifest_toolset(m, "backend")->servers.v[0], "x");
    manifest_free(m);
}

/* scenario 5 */
static void test_versions(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    assert_null(load("version = 2\n", &err));
    assert_non_null(strstr(err.msg, "upgrade agentstack"));
    assert_non_null(strstr(err.msg, "(up to 1)"));
    assert_null(load("version = 0\n", &err));
    assert_non_null(strstr(err.msg, "invalid manifest version 0"));
    assert_null(load("version = -3\n", &err));
    assert_null(load("[servers.a]\ntype = \"http\"\nurl = \"u\"\n", &err));
    assert_string_equal(err.path, "/p/.agentstack/agentstack.toml");
    assert_non_null(strstr(err.msg, "`version`"));
    assert_non_null(strstr(err.hint, "version = 1"));
    assert_non_null(strstr(err.hint, "\n  then re-check:   agentstack doctor"));
    /* version in the overlay counts */
    struct manifest *m = load2("[meta]\nname = \"x\"\n", "version = 1\n", &err);
    assert_non_null(m);
    manifest_free(m);
}

/* Typos are errors, root included */
static void test_strictness(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    assert_null(load("version = 1\n[servers.s]\ncommand = \"x\"\n", &err));
    assert_non_null(strstr(err.hint, "type = \"stdio\""));
    assert_non_null(strstr(err.hint, "type = \"http\""));
    assert_non_null(strstr(err.hint, "then re-check:"));

    assert_null(load("version = 1\n[delivery]\nrendr_locally = true\n", &err));
    assert_non_null(strstr(err.msg, "did you mean `render_locally`?"));
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 1);

    assert_null(load("version = 1\ndefault_tolset = \"a\"\n", &err));
    assert_non_null(strstr(err.msg, "did you mean `default_toolset`?"));
    assert_int_equal(err.line, 2);

    assert_null(load("version = 1\n[toolsets.a]\n[profiles.b]\n", &err));
    assert_non_null(strstr(err.msg, "both [toolsets] and [profiles]"));

    /* quoted names show quoted in messages */
    assert_null(load("version = 1\n[servers.\"my server\"]\ntype = \"stdio\"\nbad = 1\n", &err));
    assert_non_null(strstr(err.msg, "[servers.\"my server\"]"));

    /* a typo deep in policy cannot silently drop it */
    assert_null(
        load("version = 1\n[policy.filesystem]\nwrite = [\"./**\"]\ndeny_ = [\".env\"]\n", &err));
    assert_non_null(strstr(err.msg, "unknown key `deny_` in [policy.filesystem]"));
    assert_null(load("version = 1\n[policy]\negres = {}\n", &err));
    assert_non_null(strstr(err.msg, "did you mean `egress`?"));
    assert_null(load("version = 1\n[policy.workflows]\nmax_agents = 0\n", &err));

    /* wrong types name what was found */
    assert_null(load("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = 3\n", &err));
    assert_non_null(strstr(err.msg, "`command` must be a string (found integer)"));
    assert_int_equal(err.line, 4);
    assert_null(load("version = 1\nservers = []\n", &err));
    assert_non_null(strstr(err.msg, "[servers] must be a table (found array)"));
    assert_null(load("version = 1\n[settings]\nclaude-code = 1\n", &err));
    assert_null(load("version = 1\n[servers.s.extra]\ncodex = 1\n", &err));
}

/* machine-only tables: warn and ignore in a project; valid in the machine file */
static void test_machine_only_tables(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    const char *text = "version = 1\n[guard]\nenabled = true\nwhatever = 1\n"
                       "[experimental]\ntools_execute = true\n";
    struct manifest *m = load(text, &err);
    assert_non_null(m);
    assert_int_equal(m->warnings.n, 2);
    assert_non_null(strstr(m->warnings.v[0].msg, "[guard] counts only in the machine manifest"));
    assert_int_equal(m->warnings.v[0].pos.line, 2);
    assert_false(m->guard.present);
    assert_false(m->experimental.tools_execute);
    manifest_free(m);

    struct manifest_source src = {
        .kind = MANIFEST_MACHINE, .path = "/h/agentstack.toml", .data = text, .len = strlen(text)};
    assert_null(manifest_load_bytes(&src, &err));
    assert_non_null(strstr(err.msg, "unknown key `whatever` in [guard]"));

    const char *mt = "version = 1\n[gateway]\nenv_passthrough = [\"AWS_PROFILE\"]\n"
                     "[guard]\nenabled = true\nallow_roots = []\ndeny = [\".env\"]\n"
                     "[experimental]\ntools_execute = true\n"
                     "[experimental.tools_execute_limits]\ntimeout_ms = 30000\nmax_calls = 40\n"
                     "max_output_bytes = 131072\n\nallowTools = [\"github__get_issue\"]\n";
    src.data = mt;
    src.len = strlen(mt);
    m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    assert_int_equal(m->gateway.max_result_bytes, 1048576);
    assert_string_equal(m->gateway.env_passthrough.v[0], "AWS_PROFILE");
    assert_true(m->guard.present);
    assert_true(m->guard.enabled);
    assert_true(m->guard.has_deny);
    assert_true(m->experimental.tools_execute);
    assert_int_equal(m->experimental.timeout_ms, 30000);
    assert_int_equal(m->experimental.max_calls, 40);
    assert_true(m->experimental.has_allow_tools);
    assert_string_equal(m->experimental.allow_tools.v[0], "github__get_issue");
    assert_string_equal(m->manifest_dir, "/h");
    manifest_free(m);
}

/* [experimental]: unknown keys warn with the nearest known one and the file
 * still loads; the runtime path is read; the project note names the feature. */
static void test_experimental_keys(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    const char *mt = "version = 1\n[experimental]\ntools_execute = true\n"
                     "tools_execute_runtim = \"/opt/node\"\n"
                     "tools_execute_runtime = \"/usr/local/bin/node\"\n"
                     "[experimental.tools_execute_limits]\ntimeout_msec = 5\nmax_calls = 3\n";
    struct manifest_source src = {
        .kind = MANIFEST_MACHINE, .path = "/h/agentstack.toml", .data = mt, .len = strlen(mt)};
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    assert_int_equal(m->warnings.n, 2);
    assert_non_null(strstr(m->warnings.v[0].msg, "unknown key `tools_execute_runtim`"));
    assert_non_null(strstr(m->warnings.v[0].msg, "did you mean `tools_execute_runtime`?"));
    assert_non_null(strstr(m->warnings.v[1].msg, "did you mean `timeout_ms`?"));
    assert_true(m->experimental.tools_execute);
    assert_string_equal(m->experimental.runtime, "/usr/local/bin/node");
    assert_int_equal(m->experimental.timeout_ms, 0);
    assert_int_equal(m->experimental.max_calls, 3);
    manifest_free(m);

    const char *pt = "version = 1\n[experimental]\ntools_execute = true\n";
    m = load(pt, &err);
    assert_non_null(m);
    assert_int_equal(m->warnings.n, 1);
    assert_non_null(strstr(m->warnings.v[0].msg, "a repository never enables tools_execute"));
    assert_false(m->experimental.tools_execute);
    manifest_free(m);
}

/* scenario 8: overlay arrays replace, tables merge, new keys append; origin kept */
static void test_overlay_merge(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    const char *base = "version = 1\n"
                       "[servers.a]\ntype = \"stdio\"\ncommand = \"a\"\nargs = [\"1\", \"2\"]\n"
                       "env = { A = \"1\" }\n"
                       "[servers.b]\ntype = \"http\"\nurl = \"https://b/\"\n"
                       "[[instructions.i.variant]]\ncli = \"codex\"\npath = \"v1\"\n";
    const char *ovl = "[servers.a]\nargs = [\"3\"]\nenv = { B = \"2\" }\n"
                      "[servers.c]\ntype = \"stdio\"\ncommand = \"c\"\n"
                      "[[instructions.i.variant]]\nmodel = \"m\"\npath = \"v2\"\n"
                      "[meta]\nname = \"local\"\n";
    struct manifest *m = load2(base, ovl, &err);
    if (!m)
        fail_msg("%s", err.msg);
    const char *ovp = "/p/.agentstack/agentstack.local.toml";
    assert_string_equal(m->overlay_path, ovp);
    assert_int_equal(m->servers.n, 3);
    assert_string_equal(m->servers.v[0].name, "a");
    assert_string_equal(m->servers.v[1].name, "b");
    assert_string_equal(m->servers.v[2].name, "c");
    const struct mf_server *a = &m->servers.v[0];
    assert_int_equal(a->args.n, 1);
    assert_string_equal(a->args.v[0], "3");
    assert_string_equal(a->command, "a");
    assert_int_equal(a->env.n, 2);
    assert_string_equal(a->env.v[0].key, "A");
    assert_string_equal(a->env.v[1].key, "B");
    /* positions: merged table keeps the base file; overlay-set values name the overlay */
    assert_string_equal(a->pos.file, "/p/.agentstack/agentstack.toml");
    assert_string_equal(a->env.v[0].pos.file, "/p/.agentstack/agentstack.toml");
    assert_string_equal(a->env.v[1].pos.file, ovp);
    assert_string_equal(m->servers.v[2].pos.file, ovp);
    assert_int_equal(m->servers.v[2].pos.line, 4);
    /* an array of tables is replaced, not appended */
    const struct mf_instruction *in = manifest_instruction(m, "i");
    assert_int_equal(in->variants.n, 1);
    assert_string_equal(in->variants.v[0].path, "v2");
    assert_string_equal(in->variants.v[0].pos.file, ovp);
    assert_string_equal(m->meta_name, "local");
    manifest_free(m);

    /* an error inside the overlay names the overlay file and its line */
    m = load2(base, "[servers.a]\ncomand = \"x\"\n", &err);
    assert_null(m);
    assert_string_equal(err.path, ovp);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.msg, "did you mean `command`?"));
    /* an error in the base keeps the base file and line even with an overlay */
    m = load2("version = 1\n[servers.z]\ntype = \"stdio\"\nbogus = 1\n", "[meta]\nname = \"n\"\n",
              &err);
    assert_null(m);
    assert_string_equal(err.path, "/p/.agentstack/agentstack.toml");
    assert_int_equal(err.line, 4);
    /* an overlay replacing a value with one of the wrong type */
    m = load2(base, "[servers.a]\nargs = \"x\"\n", &err);
    assert_null(m);
    assert_string_equal(err.path, ovp);
    assert_int_equal(err.line, 2);
    /* a scalar replaced by a table and back */
    m = load2("version = 1\ndefault_toolset = \"a\"\n", "[default_toolset]\nx = 1\n", &err);
    assert_null(m);
    assert_string_equal(err.path, ovp);
    /* overlay syntax errors name the overlay */
    m = load2(base, "[servers.a\n", &err);
    assert_null(m);
    assert_string_equal(err.path, ovp);
    /* an empty overlay changes nothing */
    m = load2(base, "", &err);
    assert_non_null(m);
    assert_int_equal(m->servers.v[0].args.n, 2);
    manifest_free(m);
}

static void test_machine_load_and_inherit(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    int absent = 0;
    assert_null(manifest_load_machine(&absent, &err));
    assert_int_equal(absent, 1);

    char *mp = tu_write(dir, "home/.agentstack/agentstack.toml",
                        "version = 1\n[instructions.personal]\npath = \"p.md\"\n"
                        "[instructions.house]\npath = \"machine-house.md\"\n"
                        "[policy.tools]\n\"*\" = [\"!delete_*\"]\n");
    struct manifest *mach = manifest_load_machine(&absent, &err);
    if (!mach)
        fail_msg("%s", err.msg);
    assert_int_equal(absent, 0);
    assert_int_equal(mach->kind, MANIFEST_MACHINE);
    assert_non_null(mach->policy);

    struct manifest *m = load("version = 1\n[instructions.house]\npath = \"house.md\"\n", &err);
    manifest_inherit_instructions(m, mach);
    assert_int_equal(m->instructions.n, 2);
    assert_string_equal(m->instructions.v[0].name, "personal"); /* inherited first */
    assert_true(m->instructions.v[0].inherited);
    assert_string_equal(m->instructions.v[0].anchor_dir, mach->manifest_dir);
    assert_string_equal(m->instructions.v[0].pos.file, mp);
    assert_string_equal(m->instructions.v[1].name, "house"); /* project name wins */
    assert_false(m->instructions.v[1].inherited);
    assert_string_equal(m->instructions.v[1].path, "house.md");
    manifest_inherit_instructions(m, NULL);
    manifest_free(mach);
    manifest_free(m); /* the inherited copies outlive the machine model */

    /* broken: fails closed with the location and a fix naming the file */
    FILE *f = fopen(mp, "w");
    fputs("version = 1\n[policy.tool]\n", f);
    fclose(f);
    assert_null(manifest_load_machine(&absent, &err));
    assert_int_equal(absent, 0);
    assert_string_equal(err.path, mp);
    assert_int_equal(err.line, 2);
    assert_non_null(strstr(err.hint, mp));
    assert_non_null(strstr(err.msg, "did you mean `tools`?"));
    f = fopen(mp, "w");
    fputs("version = 1\n[policy\n", f);
    fclose(f);
    assert_null(manifest_load_machine(&absent, &err));
    assert_string_equal(err.path, mp);
    free(mp);
    tu_rmtree(dir);
}

static void write_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, data, len), (ssize_t)len);
    close(fd);
}

static void test_files_and_snapshot(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *man = tu_write(dir, "P/.agentstack/agentstack.toml",
                         "version = 1\n[servers.a]\ntype = \"stdio\"\ncommand = \"a\"\n");
    char *P = NULL;
    assert_true(asprintf(&P, "%s/P", dir) > 0);
    struct bundle_paths p;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(discover_at(P, &p, &err), 0);
    struct manifest_snapshot s;
    manifest_snapshot_init(&s);
    assert_int_equal(manifest_snapshot_read(&p, &s, &err), 0);
    assert_true(s.has_manifest);
    assert_false(s.has_overlay);
    assert_false(s.has_lock);
    struct manifest *m = manifest_load_snapshot(&p, &s, &err);
    assert_non_null(m);
    assert_null(m->overlay_path);
    manifest_free(m);

    /* an empty overlay and an empty lock exist (absent ≠ empty) */
    write_file(p.overlay, "", 0);
    write_file(p.lock, "", 0);
    assert_int_equal(manifest_snapshot_read(&p, &s, &err), 0);
    assert_true(s.has_overlay);
    assert_true(s.has_lock);
    assert_int_equal(s.overlay.len, 0);
    m = manifest_load(&p, &err);
    assert_non_null(m);
    assert_non_null(m->overlay_path);
    manifest_free(m);

    /* 9 MB manifest: refused with the limit */
    size_t big = 9u << 20;
    char *data = malloc(big);
    memset(data, '#', big);
    memcpy(data, "version = 1\n", 12);
    data[big - 1] = '\n';
    write_file(man, data, big);
    assert_null(manifest_load(&p, &err));
    assert_non_null(strstr(err.msg, "exceeds the 8388608-byte limit"));
    /* an oversized overlay too */
    write_file(man, "version = 1\n", 12);
    write_file(p.overlay, data, big);
    assert_null(manifest_load(&p, &err));
    assert_non_null(strstr(err.msg, "exceeds the 8388608-byte limit"));
    unlink(p.overlay);
    /* and via bytes */
    struct manifest_source src = {.kind = MANIFEST_PROJECT, .path = man, .data = data, .len = big};
    assert_null(manifest_load_bytes(&src, &err));
    assert_non_null(strstr(err.msg, "exceeds the 8388608-byte limit"));
    free(data);

    /* a FIFO as manifest: error, no hang */
    unlink(man);
    assert_int_equal(mkfifo(man, 0644), 0);
    assert_null(manifest_load(&p, &err));
    assert_non_null(strstr(err.msg, "not a regular file"));
    unlink(man);

    /* missing manifest: the exact prefix */
    manifest_snapshot_release(&s);
    manifest_snapshot_init(&s);
    assert_int_equal(manifest_snapshot_read(&p, &s, &err), 0);
    assert_null(manifest_load_snapshot(&p, &s, &err));
    assert_true(strncmp(err.msg, "no agentstack manifest in ", 26) == 0);

    manifest_snapshot_release(&s);
    bundle_paths_free(&p);
    free(man);
    free(P);
    tu_rmtree(dir);
}

static void test_hostile_bytes(void **state)
{
    (void)state;
    struct as_err err = AS_ERR_INIT;
    /* raw NUL, invalid UTF-8, NUL escapes in keys and values */
    const char nul[] = "version = 1\n[meta]\nname = \"a\0b\"\n";
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT, .path = "/p/agentstack.toml", .data = nul, .len = sizeof nul - 1};
    assert_null(manifest_load_bytes(&src, &err));
    assert_null(load("version = 1\n[meta]\nname = \"\xff\xfe\"\n", &err));
    assert_null(load("version = 1\n[meta]\nname = \"a\\u0000b\"\n", &err));
    assert_non_null(strstr(err.msg, "NUL"));
    assert_null(load("version = 1\n[settings.codex]\nk = [[\"x\\u0000\"]]\n", &err));
    assert_null(load("version = 1\n\"a\\u0000b\" = 1\n", &err));

    /* deep nesting: refused cleanly */
    strbuf sb = SB_INIT;
    sb_adds(&sb, "version = 1\n[settings.codex]\nk = ");
    for (int i = 0; i < 5000; i++)
        sb_addc(&sb, '[');
    for (int i = 0; i < 5000; i++)
        sb_addc(&sb, ']');
    sb_addc(&sb, '\n');
    assert_null(load(sb.buf, &err));
    sb_reset(&sb);
    sb_adds(&sb, "version = 1\n[settings.codex]\nk = ");
    for (int i = 0; i < 100; i++)
        sb_adds(&sb, "{a=");
    sb_adds(&sb, "1");
    for (int i = 0; i < 100; i++)
        sb_addc(&sb, '}');
    sb_addc(&sb, '\n');
    struct manifest *m = load(sb.buf, &err); /* within the parser's depth: accepted raw */
    if (m)
        manifest_free(m);
    sb_release(&sb);

    /* every truncation and a byte substitution at every offset of a full manifest:
     * each load is a model or an error, never a crash or a leak */
    size_t n = strlen(full);
    char *buf = malloc(n + 1);
    for (size_t cut = 0; cut <= n; cut++) {
        memcpy(buf, full, cut);
        buf[cut] = '\0';
        m = load(buf, &err);
        manifest_free(m);
    }
    const char subs[] = {'\0', '"', '[', '=', '\n', '\xc3', '.', 'x'};
    for (size_t i = 0; i < n; i++) {
        memcpy(buf, full, n + 1);
        buf[i] = subs[i % sizeof subs];
        struct manifest_source s2 = {
            .kind = MANIFEST_PROJECT, .path = "/p/agentstack.toml", .data = buf, .len = n};
        m = manifest_load_bytes(&s2, &err);
        manifest_free(m);
    }
    free(buf);
}

static const char *const adapters[] = {"claude-code", "codex", "pi", "cursor"};

static bool lib_has(void *ctx, enum mf_item_kind kind, const char *name)
{
    (void)ctx;
    return (kind == MF_ITEM_SKILL && !strcmp(name, "sql-review")) ||
           (kind == MF_ITEM_SERVER && !strcmp(name, "kibana")) ||
           (kind == MF_ITEM_INSTRUCTION && !strcmp(name, "house"));
}

static size_t validate(const char *text, bool paths, const char *root, mf_diags *d)
{
    struct as_err err = AS_ERR_INIT;
    struct manifest_source src = {.kind = MANIFEST_PROJECT, .data = text, .len = strlen(text)};
    char *path = NULL;
    assert_true(asprintf(&path, "%s/agentstack.toml", root ? root : "/p") > 0);
    src.path = path;
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    struct manifest_env env = {
        .adapter_ids = adapters, .n_adapter_ids = 4, .library_has = lib_has, .check_paths = paths};
    size_t e = manifest_validate(m, &env, d);
    /* diagnostics must not point into the freed model: copy checks below use msg only */
    for (size_t i = 0; i < d->n; i++)
        d->v[i].pos.file = NULL;
    manifest_free(m);
    free(path);
    return e;
}

static bool has_diag(const mf_diags *d, const char *text)
{
    for (size_t i = 0; i < d->n; i++)
        if (strstr(d->v[i].msg, text))
            return true;
    return false;
}

/* An unknown id in [targets] default is reported where it was written, and
 * the fix names the ids that would do (no command lists them). */
static void test_targets_default_position_and_known_ids(void **state)
{
    (void)state;
    mf_diags d = VEC_INIT;
    assert_int_equal(validate("version = 1\n\n[targets]\ndefault = [\"claude-code\", \"codx\"]\n",
                              false, NULL, &d),
                     1);
    assert_int_equal(d.n, 1);
    assert_non_null(strstr(d.v[0].msg, "unknown adapter id 'codx' in [targets] default"));
    assert_int_equal(d.v[0].pos.line, 4);
    assert_int_equal(d.v[0].pos.col, 1);
    assert_non_null(d.v[0].fix);
    assert_non_null(strstr(d.v[0].fix, "did you mean 'codex'?"));
    assert_non_null(strstr(d.v[0].fix, "known adapter ids: claude-code, codex, pi, cursor"));
    mf_diags_free(&d);
}

static int loads;

static bool load_ids(void *ctx, const char *const **ids, size_t *n)
{
    loads++;
    if (ctx)
        return false; /* a registry that cannot load */
    *ids = adapters;
    *n = 4;
    return true;
}

static size_t validate_lazy(const char *text, void *ctx, mf_diags *d)
{
    struct as_err err = AS_ERR_INIT;
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT, .data = text, .len = strlen(text), .path = "/p/agentstack.toml"};
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    struct manifest_env env = {.load_adapter_ids = load_ids, .adapter_ctx = ctx};
    size_t e = manifest_validate(m, &env, d);
    for (size_t i = 0; i < d->n; i++)
        d->v[i].pos.file = NULL;
    manifest_free(m);
    return e;
}

/* The adapter registry is asked for only when the manifest names an id, and
 * once; when it cannot load, ids go unchecked rather than refused. */
static void test_adapter_ids_loaded_lazily(void **state)
{
    (void)state;
    mf_diags d = VEC_INIT;
    loads = 0;
    assert_int_equal(
        validate_lazy("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = \"c\"\n", NULL, &d),
        0);
    assert_int_equal(loads, 0);
    assert_int_equal(
        validate_lazy("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = \"c\"\n"
                      "targets = [\"codex\", \"nope\"]\n[targets]\ndefault = [\"zz\"]\n",
                      NULL, &d),
        2);
    assert_int_equal(loads, 1);
    assert_true(has_diag(&d, "unknown adapter id 'nope'"));
    assert_true(has_diag(&d, "unknown adapter id 'zz'"));
    mf_diags_free(&d);
    loads = 0;
    assert_int_equal(
        validate_lazy("version = 1\n[targets]\ndefault = [\"zz\", \"yy\"]\n", (void *)1, &d), 0);
    assert_int_equal(loads, 1);
    mf_diags_free(&d);
}

static void test_validate_semantics(void **state)
{
    (void)state;
    mf_diags d = VEC_INIT;
    /* the documented manifest: library-resolved server and skill */
    assert_int_equal(validate("version = 1\n[servers.github]\ntype = \"http\"\nurl = \"u\"\n"
                              "[profiles.backend]\nservers = [\"github\", \"kibana\"]\n"
                              "skills = [\"sql-review\"]\n[targets]\n"
                              "default = [\"claude-code\", \"codex\"]\n",
                              false, NULL, &d),
                     0);
    mf_diags_free(&d);

    size_t e = validate("version = 1\ndefault_toolset = \"bakend\"\n"
                        "[servers.h]\ntype = \"http\"\n"
                        "[servers.s]\ntype = \"stdio\"\ntargets = [\"claud-code\"]\n"
                        "owner = \"nope\"\n[servers.s.extra.zed]\nk = 1\n"
                        "[skills.PDF]\npath = \"x\"\n"
                        "[toolsets.backend]\nservers = [\"ghost\"]\nskills = [\"nope\", \"../x\"]\n"
                        "packages = [\"pkg\"]\n"
                        "[instructions.i]\ntargets = [\"zz\"]\n"
                        "[[instructions.i.variant]]\npath = \"v\"\n"
                        "[instructions.house]\n"
                        "[extensions.\"a/b\"]\ntarget = \"*\"\n"
                        "[workflows.w]\nroles = [\"r\", \"r\"]\n",
                        false, NULL, &d);
    assert_true(has_diag(&d, "default_toolset 'bakend' names no declared toolset"));
    assert_true(has_diag(&d, "server 'h' is type=http but has no `url`"));
    assert_true(has_diag(&d, "server 's' is type=stdio but has no `command`"));
    assert_true(has_diag(&d, "unknown adapter id 'claud-code'"));
    assert_true(has_diag(&d, "unknown adapter id 'nope'"));
    assert_true(has_diag(&d, "unknown adapter id 'zed'"));
    assert_true(has_diag(&d, "unknown adapter id 'zz'"));
    assert_true(has_diag(&d, "refusing to materialize skill 'PDF'"));
    assert_true(has_diag(&d, "refusing to materialize skill '../x'"));
    assert_true(has_diag(&d, "toolset 'backend' references unknown server 'ghost'"));
    assert_true(has_diag(&d, "toolset 'backend' references unknown skill 'nope'"));
    assert_true(has_diag(&d, "toolset 'backend' references unknown package 'pkg'"));
    assert_true(has_diag(&d, "has no selector"));
    assert_true(has_diag(&d, "instruction 'i' has no `path`"));
    assert_false(has_diag(&d, "instruction 'house'")); /* in the library */
    assert_true(has_diag(&d, "must be one plain path component"));
    assert_true(has_diag(&d, "targets \"*\""));
    assert_true(has_diag(&d, "lists role 'r' twice"));
    assert_int_equal(e, d.n);
    /* the did-you-mean for default_toolset */
    for (size_t i = 0; i < d.n; i++)
        if (strstr(d.v[i].msg, "bakend"))
            assert_non_null(strstr(d.v[i].fix, "did you mean 'backend'?"));
    mf_diags_free(&d);

    /* with no adapter list, adapter ids are not checked */
    struct as_err err = AS_ERR_INIT;
    struct manifest *m = load("version = 1\n[settings.whatever]\nk = 1\n", &err);
    assert_int_equal(manifest_validate(m, NULL, &d), 0);
    mf_diags_free(&d);
    manifest_free(m);
}

static void test_contained_paths(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    char *real = realpath(dir, NULL);
    free(tu_write(real, "P/tools/run.sh", "echo\n"));
    free(tu_write(real, "outside/x", "x\n"));
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    char *P = NULL, *lnk = NULL, *tgt = NULL;
    assert_true(asprintf(&P, "%s/P", real) > 0);

    assert_int_equal(fs_contain(P, NULL, "./tools//run.sh", MF_CONTAINED, &out, &err), 0);
    char *want = NULL;
    assert_true(asprintf(&want, "%s/tools/run.sh", P) > 0);
    assert_string_equal(out.buf, want);
    free(want);
    assert_int_equal(fs_contain(P, NULL, "tools", MF_CONTAINED, &out, &err), 0);
    assert_true(fs_contain(P, NULL, "../outside/x", MF_CONTAINED, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "traversal"));
    assert_true(fs_contain(P, NULL, "tools/../../outside/x", MF_CONTAINED, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "traversal"));
    assert_true(fs_contain(P, NULL, "/etc/passwd", MF_CONTAINED, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "traversal"));
    assert_true(fs_contain(P, NULL, ".", MF_CONTAINED, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "itself"));
    assert_true(fs_contain(P, NULL, "./", MF_CONTAINED, &out, &err) < 0);
    assert_true(fs_contain(P, NULL, "", MF_CONTAINED, &out, &err) < 0);
    assert_true(fs_contain(P, NULL, "missing/file", MF_CONTAINED, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "does not exist"));
    assert_true(fs_contain(P, NULL, "tools/run.sh/x", MF_CONTAINED, &out, &err) < 0);

    /* a symlink at any component */
    assert_true(asprintf(&lnk, "%s/link", P) > 0);
    assert_true(asprintf(&tgt, "%s/outside", real) > 0);
    assert_int_equal(symlink(tgt, lnk), 0);
    assert_true(fs_contain(P, NULL, "link/x", MF_CONTAINED, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "symlink"));
    free(lnk);
    assert_true(asprintf(&lnk, "%s/tools/link.sh", P) > 0);
    assert_int_equal(symlink("run.sh", lnk), 0);
    assert_true(fs_contain(P, NULL, "./tools/link.sh", MF_CONTAINED, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "symlink"));

    /* validate applies it to integrity roots, relative cwd, extension sources */
    mf_diags d = VEC_INIT;
    size_t e = validate("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = \"x\"\n"
                        "integrity_roots = [\"../outside\", \"tools\", \"link\"]\n"
                        "cwd = \"tools/link.sh\"\n"
                        "[servers.t]\ntype = \"stdio\"\ncommand = \"x\"\ncwd = \"${HOME}/x\"\n"
                        "[servers.u]\ntype = \"stdio\"\ncommand = \"x\"\ncwd = \"/abs\"\n"
                        "[extensions.e]\ntarget = \"pi\"\npath = \"../outside\"\n",
                        true, P, &d);
    assert_int_equal(e, 5);
    /* a repository's server runs inside the project: an absolute cwd is refused */
    assert_true(has_diag(&d, "server 'u': cwd '/abs' is absolute"));
    assert_true(has_diag(&d, "integrity root: '../outside' contains '..': traversal"));
    assert_true(has_diag(&d, "integrity root: 'link' goes through a symlink"));
    assert_true(has_diag(&d, "server cwd: 'tools/link.sh' goes through a symlink"));
    assert_true(has_diag(&d, "extension source"));
    mf_diags_free(&d);
    /* without check_paths nothing touches the disk */
    e = validate("version = 1\n[servers.s]\ntype = \"stdio\"\ncommand = \"x\"\n"
                 "integrity_roots = [\"../outside\"]\n",
                 false, P, &d);
    assert_int_equal(e, 0);
    mf_diags_free(&d);

    sb_release(&out);
    free(lnk);
    free(tgt);
    free(P);
    free(real);
    tu_rmtree(dir);
}

static void test_diag_helpers(void **state)
{
    (void)state;
    struct mf_diag d = {MF_ERROR, "problem", "the fix", {"/p/a.toml", 3, 4}};
    strbuf sb = SB_INIT;
    mf_diag_format(&d, &sb);
    assert_string_equal(sb.buf, "/p/a.toml:3:4: problem\n  the fix");
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(mf_diag_to_err(&d, &err), -1);
    char buf[512];
    assert_string_equal(as_err_str(&err, buf, sizeof buf), "/p/a.toml:3:4: problem");
    assert_string_equal(err.hint, "the fix\n  then re-check:   agentstack doctor");
    struct mf_diag nofile = {MF_ERROR, "p2", NULL, {NULL, 0, 0}};
    assert_int_equal(mf_diag_to_err(&nofile, &err), -1);
    assert_string_equal(as_err_str(&err, buf, sizeof buf), "p2");
    sb_release(&sb);
}

static const struct mf_diag *diag_with(const mf_diags *d, const char *text)
{
    for (size_t i = 0; i < d->n; i++)
        if (strstr(d->v[i].msg, text))
            return &d->v[i];
    return NULL;
}

/* Header names must be RFC 9110 tokens and values free of controls (but
 * HTAB): libcurl and the CLIs' configs pass CR/LF on, which would smuggle
 * header lines. Each error sits at the header's own position; the value is
 * never echoed and a hostile name is shown escaped. */
static void test_header_injection(void **state)
{
    (void)state;
    mf_diags d = VEC_INIT;
    const char *text = "version = 1\n"
                       "[servers.web]\n"
                       "type = \"http\"\n"
                       "url = \"https://h.test/mcp\"\n"
                       "headers = { \"X-A\" = \"v\\r\\nInjected: 1\", \"X-B\\r\\nEvil\" = \"z\","
                       " X-Ok = \"a\\tb ${TOK} \\u00e9\", \"Bad Name\" = \"1\", X-C = \"\\u007f\","
                       " \"\" = \"e\", X-D = \"q\\u001bw\" }\n"
                       "[servers.s]\ntype = \"stdio\"\ncommand = \"c\"\n"
                       "headers = { X-E = \"a\\nb\" }\n";
    assert_int_equal(validate(text, false, NULL, &d), 7);
    const struct mf_diag *x = diag_with(&d, "the value of header 'X-A' contains a carriage "
                                            "return (CR) (byte 2)");
    assert_non_null(x);
    assert_int_equal(x->pos.line, 5);
    assert_int_equal(x->pos.col, 13);
    assert_null(strstr(x->msg, "Injected"));
    assert_null(strstr(x->fix, "Injected"));
    x = diag_with(&d, "header name 'X-B\\r\\nEvil' is not an HTTP token (RFC 9110)");
    assert_non_null(x);
    assert_int_equal(x->pos.line, 5);
    assert_int_equal(x->pos.col, 41);
    assert_non_null(diag_with(&d, "header name 'Bad Name' is not an HTTP token"));
    assert_non_null(diag_with(&d, "header name '' is not an HTTP token"));
    assert_non_null(diag_with(&d, "the value of header 'X-C' contains a control character"));
    assert_non_null(diag_with(&d, "the value of header 'X-D' contains a control character"));
    x = diag_with(&d, "server 's': the value of header 'X-E' contains a line feed (LF)");
    assert_non_null(x);
    assert_int_equal(x->pos.line, 9);
    assert_null(diag_with(&d, "'X-Ok'"));
    mf_diags_free(&d);

    assert_true(manifest_header_name_ok("Authorization"));
    assert_true(manifest_header_name_ok("x!#$%&'*+-.^_`|~9"));
    assert_false(manifest_header_name_ok("a:b"));
    assert_false(manifest_header_name_ok("a\xc3\xa9"));
    assert_null(manifest_header_value_bad("Bearer \t x \xc3\xa9"));
    const char *v = "ok\rno";
    assert_ptr_equal(manifest_header_value_bad(v), v + 2);
}

/*
 * A hostile manifest of 20,000 servers and a toolset naming them all (plus
 * clashing spellings) validates, and each reference resolves. Not timed:
 * the old same-name check compared every pair of references, each pair
 * looking a server up linearly — ~n^3/6 = 1.3e12 string comparisons here,
 * hours under ASan, far past ctest's default 1500 s timeout (with only the
 * lookups indexed it still took ~2 min); sorting makes it ~n log n.
 * The diagnostics keep the pairwise check's order and text.
 */
static void test_many_servers_validate(void **state)
{
    (void)state;
    enum { N = 20000 };
    strbuf sb = SB_INIT;
    sb_adds(&sb, "version = 1\n");
    for (unsigned i = 0; i < N; i++)
        sb_addf(&sb, "[servers.s%u]\ntype = \"stdio\"\ncommand = \"echo\"\n", i);
    sb_adds(&sb, "[toolsets.big]\nservers = [");
    for (unsigned i = 0; i < N; i++)
        sb_addf(&sb, "\"s%u\", ", i);
    /* kibana (library) twice as written: one server; team:s7 and a:kibana
     * clash with the first spelling of their names; s7 again is not a clash */
    sb_adds(&sb, "\"kibana\", \"team:s7\", \"kibana\", \"a:kibana\", \"s7\"]\n");
    sb_adds(
        &sb,
        "[toolsets.t2]\nservers = [\"s3\", \"s1\"]\nskills = [\"x:r\", \"*\", \"r\", \"y:r\"]\n");
    sb_adds(&sb, "[skills.r]\npath = \"./r\"\n");
    mf_diags d = VEC_INIT;
    struct as_err err = AS_ERR_INIT;
    struct manifest_source src = {
        .kind = MANIFEST_PROJECT, .path = "/p/agentstack.toml", .data = sb.buf, .len = sb.len};
    struct manifest *m = manifest_load_bytes(&src, &err);
    if (!m)
        fail_msg("%s", err.msg);
    for (unsigned i = 0; i < N; i += 997) {
        char name[32];
        snprintf(name, sizeof name, "s%u", i);
        const struct mf_server *s = manifest_server(m, name);
        assert_non_null(s);
        assert_string_equal(s->name, name);
    }
    assert_null(manifest_server(m, "s20000"));
    assert_null(manifest_server(m, ""));
    assert_non_null(manifest_toolset(m, "t2"));
    assert_non_null(manifest_skill(m, "r"));
    struct manifest_env env = {.library_has = lib_has};
    size_t e = manifest_validate(m, &env, &d);
    const char *want[] = {
        "toolset 'big' references server 'team:s7', which the central library does not resolve",
        "toolset 'big' references server 'a:kibana', which the central library does not resolve",
        "toolset 'big' names server 's7' twice ('s7' and 'team:s7'): a CLI holds one 's7'",
        ("toolset 'big' names server 'kibana' twice ('kibana' and 'a:kibana'): a CLI holds one "
         "'kibana'"),
        "toolset 'big' names server 's7' twice ('team:s7' and 's7'): a CLI holds one 's7'",
        "toolset 't2' references skill 'x:r', which the central library does not resolve",
        "toolset 't2' references skill 'y:r', which the central library does not resolve",
        "toolset 't2' names skill 'r' twice ('x:r' and 'r'): a CLI holds one 'r'",
        "toolset 't2' names skill 'r' twice ('x:r' and 'y:r'): a CLI holds one 'r'",
    };
    size_t nw = sizeof want / sizeof want[0];
    for (size_t i = 0; i < d.n && i < nw; i++)
        assert_string_equal(d.v[i].msg, want[i]);
    assert_int_equal(d.n, nw);
    assert_int_equal(e, nw);
    assert_int_equal(d.v[2].pos.line, 3u * N + 2);
    mf_diags_free(&d);
    manifest_free(m);
    sb_release(&sb);
}

/* The one toolset-name rule `toolset`, `session` and the gateway's lease
 * share: 1 to 64 of [A-Za-z0-9_.-]. */
static void test_toolset_name_rule(void **state)
{
    (void)state;
    assert_true(manifest_toolset_name_ok("review.v2_x-1"));
    char max[65];
    memset(max, 'a', 64);
    max[64] = '\0';
    assert_true(manifest_toolset_name_ok(max));
    assert_false(manifest_toolset_name_ok(""));
    assert_false(manifest_toolset_name_ok("a/b"));
    assert_false(manifest_toolset_name_ok("a b"));
    assert_false(manifest_toolset_name_ok("caf\xc3\xa9"));
    char over[66];
    memset(over, 'a', 65);
    over[65] = '\0';
    assert_false(manifest_toolset_name_ok(over));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_decode),
        cmocka_unit_test(test_toolset_name_rule),
        cmocka_unit_test(test_defaults_and_effective_toolset),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_strictness),
        cmocka_unit_test(test_machine_only_tables),
        cmocka_unit_test(test_experimental_keys),
        cmocka_unit_test(test_overlay_merge),
        cmocka_unit_test(test_machine_load_and_inherit),
        cmocka_unit_test(test_files_and_snapshot),
        cmocka_unit_test(test_hostile_bytes),
        cmocka_unit_test(test_validate_semantics),
        cmocka_unit_test(test_targets_default_position_and_known_ids),
        cmocka_unit_test(test_adapter_ids_loaded_lazily),
        cmocka_unit_test(test_contained_paths),
        cmocka_unit_test(test_diag_helpers),
        cmocka_unit_test(test_many_servers_validate),
        cmocka_unit_test(test_header_injection),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
