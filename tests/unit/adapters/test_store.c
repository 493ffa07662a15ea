/* The undo history and the rolling backups hold resolved secrets (docs/adapters.md):
 * their files are exactly 0600 and their directories 0700 under any umask,
 * a loosened one is tightened again when it is next used, and a history
 * entry keeps each file's own mode so a restore can put it back; a forged
 * mode field is ignored, never trusted. */
#include "testutil.h"

#include <dirent.h>

#include "adapters/engine.h"
#include "base/fs.h"
#include "bundle/home.h"

static mode_t mode_of(const char *p)
{
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    return st.st_mode & 07777;
}

static struct adp_hist_entry *entry(const char *path, const char *before, unsigned mode)
{
    struct adp_hist_entry *e = calloc(1, sizeof *e);
    struct adp_hist_file f = {0};
    f.path = strdup(path);
    f.existed = before != NULL;
    sb_init(&f.before, 0);
    if (before)
        sb_adds(&f.before, before);
    f.label = strdup("Codex CLI · servers");
    f.mode = mode;
    vec_push(&e->files, f);
    e->scope = strdup("global");
    e->operation = strdup("apply");
    e->summary = strdup("wrote 1 target");
    return e;
}

static void test_history_private_and_mode(void **st)
{
    (void)st;
    mode_t old = umask(0);
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    char *cfg = tu_write(dir, "home/.codex/config.toml", "TOKEN = \"s3cret\"\n");
    struct adp_hist_entry *e = entry(cfg, "TOKEN = \"s3cret\"\n", 0640);
    assert_int_equal(adp_history_record(e, &err), 0);
    assert_int_equal(mode_of(e->file), 0600);
    strbuf hd = SB_INIT;
    assert_int_equal(home_path(HOME_HISTORY_DIR, &hd, &err), 0);
    assert_int_equal(mode_of(hd.buf), 0700);

    /* loosened: the next record tightens the dir; marking rewrites 0600 */
    assert_int_equal(chmod(hd.buf, 0755), 0);
    assert_int_equal(chmod(e->file, 0644), 0);
    assert_int_equal(adp_history_mark_undone(e, &err), 0);
    assert_int_equal(mode_of(e->file), 0600);
    struct adp_hist_entry *e2 = entry(cfg, NULL, 0);
    assert_int_equal(adp_history_record(e2, &err), 0);
    assert_int_equal(mode_of(hd.buf), 0700);

    /* listing re-tightens on open and reads the mode back */
    assert_int_equal(chmod(hd.buf, 0755), 0);
    assert_int_equal(chmod(e->file, 0644), 0);
    adp_hist_list hl = VEC_INIT;
    assert_int_equal(adp_history_list(&hl, &err), 0);
    assert_int_equal(mode_of(hd.buf), 0700);
    assert_int_equal(mode_of(e->file), 0600);
    assert_int_equal(hl.n, 2);
    assert_int_equal(hl.v[1]->files.v[0].mode, 0640);
    assert_true(hl.v[1]->undone);
    assert_int_equal(hl.v[0]->files.v[0].mode, 0); /* did not exist: no mode */
    adp_hist_list_free(&hl);

    /* a forged mode is ignored: no set-id bits, no non-octal */
    const char *forged[] = {"4755", "0x1ff", "777", "07777", "9999"};
    for (size_t i = 0; i < sizeof forged / sizeof *forged; i++) {
        char *text = NULL;
        assert_true(asprintf(&text,
                             "{\"id\":\"00000000000000%02zx\",\"files\":[{\"path\":\"%s\","
                             "\"before\":\"x\",\"mode\":\"%s\"}]}",
                             i, cfg, forged[i]) > 0);
        char *name = NULL;
        assert_true(asprintf(&name, "history/00000000000000%02zx.json", i) > 0);
        free(tu_write(getenv("AGENTSTACK_HOME"), name, text));
        free(name);
        free(text);
    }
    assert_int_equal(adp_history_list(&hl, &err), 0);
    assert_int_equal(hl.n, 2 + sizeof forged / sizeof *forged);
    for (size_t i = 2; i < hl.n; i++) {
        unsigned m = hl.v[i]->files.v[0].mode;
        assert_true(m == 0 || (m & ~0777u) == 0);
        assert_true(m != 04755);
    }
    /* "4755" is four octal digits: read as 4755 & 0777 = 0755, never set-uid */
    adp_hist_list_free(&hl);

    adp_hist_entry_free(e);
    adp_hist_entry_free(e2);
    sb_release(&hd);
    free(cfg);
    tu_rmtree(dir);
    umask(old);
}

static void test_backup_dir_private(void **st)
{
    (void)st;
    mode_t old = umask(0);
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    strbuf b = SB_INIT, bd = SB_INIT;
    assert_int_equal(adp_backup_path("/home/u/.codex/config.toml", &b, &err), 0);
    assert_int_equal(home_path(HOME_BACKUPS_DIR, &bd, &err), 0);
    assert_int_equal(mode_of(bd.buf), 0700);
    assert_int_equal(chmod(bd.buf, 0777), 0);
    assert_int_equal(adp_backup_path("/home/u/.codex/config.toml", &b, &err), 0);
    assert_int_equal(mode_of(bd.buf), 0700);
    /* a symlinked backups/ is refused rather than written through */
    char *shared = NULL;
    assert_true(asprintf(&shared, "%s/shared", dir) > 0);
    assert_int_equal(mkdir(shared, 0777), 0);
    assert_int_equal(rmdir(bd.buf), 0);
    assert_int_equal(symlink(shared, bd.buf), 0);
    assert_int_equal(adp_backup_path("/home/u/.codex/config.toml", &b, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    assert_int_equal(mode_of(shared), 0777);
    free(shared);
    sb_release(&b);
    sb_release(&bd);
    tu_rmtree(dir);
    umask(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_history_private_and_mode),
        cmocka_unit_test(test_backup_dir_private),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
