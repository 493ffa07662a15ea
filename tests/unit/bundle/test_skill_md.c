/* SKILL.md frontmatter, sanitizing, skill names and tree shape (docs/manifest.md). */
#include "testutil.h"

#include <sys/stat.h>
#include <sys/types.h>

#include "bundle/skill_md.h"

static char *desc_of(const char *text)
{
    struct skill_md s;
    skill_md_parse(text, strlen(text), &s);
    char *d = s.description ? strdup(s.description) : NULL;
    skill_md_free(&s);
    return d;
}

#define DESC(text, want)                                                                           \
    do {                                                                                           \
        char *d_ = desc_of(text);                                                                  \
        if (want) {                                                                                \
            assert_non_null(d_);                                                                   \
            assert_string_equal(d_, (want));                                                       \
        } else {                                                                                   \
            assert_null(d_);                                                                       \
        }                                                                                          \
        free(d_);                                                                                  \
    } while (0)

static void test_frontmatter(void **state)
{
    (void)state;
    DESC("---\ndescription: demo\n---\nbody\n", "demo");
    DESC("\n\n  \n---\nname: x\ndescription: \"quoted text\"\n---\n", "quoted text");
    DESC("---\ndescription: 'single'\n---\n", "single");
    DESC("---\ndescription: |\n  line one\n  line two\n\n  line three\nname: n\n---\n",
         "line one line two line three");
    DESC("---\ndescription: >-\n    folded\n    text\n---\n", "folded text");
    DESC("---\ndescription: |2+\n  a\n---\n", "a");
    DESC("---\ndescription:\n  empty means block\n---\n", "empty means block");
    /* only the unindented key counts */
    DESC("---\nmeta:\n  description: nested\n---\n", NULL);
    /* no frontmatter: first non-blank text is not --- */
    DESC("# Title\n---\ndescription: x\n---\n", NULL);
    /* the frontmatter ends at the next line starting --- */
    DESC("---\nname: a\n---\ndescription: after\n", NULL);
    DESC("---\r\ndescription: crlf\r\n---\r\n", "crlf");
    DESC("\xEF\xBB\xBF---\ndescription: bom\n---\n", "bom");
    DESC("---\ndescriptionx: no\n---\n", NULL);
    DESC("---\ndescription: unterminated", "unterminated");
    DESC("", NULL);
}

static void test_sanitize(void **state)
{
    (void)state;
    /* escapes, controls, bidi and zero-width characters removed; one line */
    DESC("---\ndescription: \"a\x1b[31mred\x1b[0m b\"\n---\n", "ared b");
    DESC("---\ndescription: x\xe2\x80\xae"
         "evil\xe2\x80\xac y\n---\n",
         "xevil y");
    DESC("---\ndescription: zero\xe2\x80\x8bwidth\xef\xbb\xbf\n---\n", "zerowidth");
    DESC("---\ndescription: tag\xf3\xa0\x80\x81s\n---\n", "tags");
    DESC("---\ndescription: bad\xff\xfe utf8\n---\n", "bad utf8");
    DESC("---\ndescription: osc\x1b]0;title\x07 done\n---\n", "osc done");
    /* an nF sequence (ESC, intermediates, final) goes whole, as in the gateway */
    DESC("---\ndescription: nf\x1b(B done\n---\n", "nf done");
    DESC("---\ndescription: tab\there\x01\x7f!\n---\n", "tab here!");
    strbuf sb = SB_INIT;
    skill_md_sanitize("  a \n\n b\r\n  ", 13, &sb);
    assert_string_equal(sb.buf, "a b");
    sb_reset(&sb);
    skill_md_sanitize("caf\xc3\xa9 \xe2\x80\xa8 ok", 12, &sb);
    assert_string_equal(sb.buf, "caf\xc3\xa9 ok");
    sb_release(&sb);
}

static void test_names(void **state)
{
    (void)state;
    assert_true(skill_name_valid("pdf"));
    assert_true(skill_name_valid("a.b_c-d9"));
    assert_true(skill_name_valid("0"));
    assert_false(skill_name_valid("PDF"));
    assert_false(skill_name_valid("../x"));
    assert_false(skill_name_valid(".hidden"));
    assert_false(skill_name_valid("-x"));
    assert_false(skill_name_valid(""));
    assert_false(skill_name_valid("a/b"));
    char long_name[70];
    memset(long_name, 'a', 64);
    long_name[64] = '\0';
    assert_true(skill_name_valid(long_name));
    long_name[64] = 'a';
    long_name[65] = '\0';
    assert_false(skill_name_valid(long_name));
}

static void test_read_caps_and_refusals(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    struct skill_md s;
    char *p = tu_write(dir, "ok/SKILL.md", "---\ndescription: fine\n---\n");
    free(p);
    char *ok = NULL;
    assert_true(asprintf(&ok, "%s/ok", dir) > 0);
    assert_int_equal(skill_md_read(ok, &s, &err), 0);
    assert_string_equal(s.description, "fine");
    skill_md_free(&s);

    /* larger than 256 KiB: read up to the cap, no error */
    size_t big = SKILL_MD_MAX_BYTES + 4096;
    char *text = malloc(big + 1);
    memset(text, 'x', big);
    memcpy(text, "---\ndescription: big\n---\n", 25);
    text[big] = '\0';
    p = tu_write(dir, "big/SKILL.md", text);
    free(p);
    free(text);
    char *bigd = NULL;
    assert_true(asprintf(&bigd, "%s/big", dir) > 0);
    assert_int_equal(skill_md_read(bigd, &s, &err), 0);
    assert_string_equal(s.description, "big");
    skill_md_free(&s);

    /* a FIFO as SKILL.md: error, not a hang */
    char *fd = NULL, *fifo = NULL;
    assert_true(asprintf(&fd, "%s/fifo", dir) > 0);
    mkdir(fd, 0755);
    assert_true(asprintf(&fifo, "%s/SKILL.md", fd) > 0);
    assert_int_equal(mkfifo(fifo, 0644), 0);
    assert_int_equal(skill_md_read(fd, &s, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));

    /* a symlinked SKILL.md is refused */
    char *ld = NULL, *link = NULL, *target = NULL;
    assert_true(asprintf(&ld, "%s/link", dir) > 0);
    mkdir(ld, 0755);
    assert_true(asprintf(&link, "%s/SKILL.md", ld) > 0);
    assert_true(asprintf(&target, "%s/ok/SKILL.md", dir) > 0);
    assert_int_equal(symlink(target, link), 0);
    assert_int_equal(skill_md_read(ld, &s, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));

    free(ok);
    free(bigd);
    free(fd);
    free(fifo);
    free(ld);
    free(link);
    free(target);
    tu_rmtree(dir);
}

static void test_dir_check(void **state)
{
    (void)state;
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    char *p;
    p = tu_write(dir, "s/SKILL.md", "---\ndescription: d\n---\n");
    free(p);
    p = tu_write(dir, "s/scripts/run.sh", "echo hi\n");
    free(p);
    p = tu_write(dir, "s/.hidden", "content\n");
    free(p);
    p = tu_write(dir, "s/.git/HEAD", "ref\n");
    free(p);
    char *s = NULL, *x = NULL;
    assert_true(asprintf(&s, "%s/s", dir) > 0);
    assert_int_equal(skill_dir_check(s, &err), 0);

    /* a symlink inside .git is ignored; anywhere else it is an error */
    assert_true(asprintf(&x, "%s/s/.git/link", dir) > 0);
    assert_int_equal(symlink("/etc/passwd", x), 0);
    assert_int_equal(skill_dir_check(s, &err), 0);
    free(x);
    assert_true(asprintf(&x, "%s/s/scripts/link", dir) > 0);
    assert_int_equal(symlink("/etc/passwd", x), 0);
    assert_int_equal(skill_dir_check(s, &err), -1);
    assert_non_null(strstr(err.msg, "skill content contains a symlink"));
    unlink(x);
    free(x);

    /* a FIFO fails fast */
    assert_true(asprintf(&x, "%s/s/pipe", dir) > 0);
    assert_int_equal(mkfifo(x, 0644), 0);
    assert_int_equal(skill_dir_check(s, &err), -1);
    assert_non_null(strstr(err.msg, "special file"));
    unlink(x);
    free(x);

    /* a symlinked root */
    assert_true(asprintf(&x, "%s/rootlink", dir) > 0);
    assert_int_equal(symlink(s, x), 0);
    assert_int_equal(skill_dir_check(x, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    free(x);

    /* no SKILL.md */
    assert_true(asprintf(&x, "%s/s/scripts", dir) > 0);
    assert_int_equal(skill_dir_check(x, &err), -1);
    free(x);

    /* depth > 64 */
    strbuf deep = SB_INIT;
    sb_addf(&deep, "%s/deep", dir);
    mkdir(deep.buf, 0755);
    p = tu_write(deep.buf, "SKILL.md", "x");
    free(p);
    for (int i = 0; i < 66; i++) {
        sb_adds(&deep, "/d");
        mkdir(deep.buf, 0755);
    }
    assert_true(asprintf(&x, "%s/deep", dir) > 0);
    assert_int_equal(skill_dir_check(x, &err), -1);
    assert_non_null(strstr(err.msg, "deeper"));
    free(x);
    sb_release(&deep);
    free(s);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frontmatter), cmocka_unit_test(test_sanitize),
        cmocka_unit_test(test_names),       cmocka_unit_test(test_read_caps_and_refusals),
        cmocka_unit_test(test_dir_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
