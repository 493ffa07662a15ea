/* fs: capped reads, the atomic writer's guarantees (mode, owner, symlinks,
 * containment, read-only refusal, nothing left behind on failure), safe
 * joins, the walk order, and removal without following links. */
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include "base/fs.h"

static char *pj(const char *a, const char *b)
{
    char *p = NULL;
    assert_true(asprintf(&p, "%s/%s", a, b) > 0);
    return p;
}

/* Number of entries in dir whose name contains "agentstack-tmp". */
static int count_temps(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (strstr(de->d_name, "agentstack-tmp"))
            n++;
    closedir(d);
    return n;
}

static mode_t mode_of(const char *p)
{
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    return st.st_mode & 07777;
}

static void assert_content(const char *p, const char *want)
{
    char *got = tu_read(p, NULL);
    assert_non_null(got);
    assert_string_equal(got, want);
    free(got);
}

/* ---- fs_read_file ---------------------------------------------------- */

static void test_read_file(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "f", "hello");
    struct as_err err = AS_ERR_INIT;
    strbuf sb = SB_INIT;
    sb_adds(&sb, ">");
    assert_int_equal(fs_read_file(f, 100, 1, &sb, &err), 0);
    assert_string_equal(sb.buf, ">hello"); /* appends */

    /* the cap: exactly max is fine, one more byte is refused, out untouched */
    sb_reset(&sb);
    assert_int_equal(fs_read_file(f, 5, 1, &sb, &err), 0);
    assert_string_equal(sb.buf, "hello");
    sb_reset(&sb);
    assert_int_equal(fs_read_file(f, 4, 1, &sb, &err), -1);
    assert_non_null(strstr(err.msg, "exceeds the 4-byte limit"));
    assert_non_null(strstr(err.msg, f));
    assert_int_equal(sb.len, 0);

    /* empty file */
    char *e = tu_write(dir, "empty", "");
    assert_int_equal(fs_read_file(e, 0, 1, &sb, &err), 0);
    assert_int_equal(sb.len, 0);

    /* a FIFO with no writer is refused at once (would block a plain open) */
    char *fifo = pj(dir, "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(fs_read_file(fifo, 100, 0, &sb, &err), -1);
    assert_non_null(strstr(err.msg, "is not a regular file"));

    /* a directory */
    assert_int_equal(fs_read_file(dir, 100, 0, &sb, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));

    /* symlink: refused with nofollow, read without */
    char *l = pj(dir, "link");
    assert_int_equal(symlink(f, l), 0);
    assert_int_equal(fs_read_file(l, 100, 1, &sb, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    assert_int_equal(fs_read_file(l, 100, 0, &sb, &err), 0);
    assert_string_equal(sb.buf, "hello");

    /* missing */
    char *m = pj(dir, "missing");
    assert_int_equal(fs_read_file(m, 100, 0, &sb, &err), -1);
    assert_non_null(strstr(err.msg, "No such file"));

    sb_release(&sb);
    free(f);
    free(e);
    free(fifo);
    free(l);
    free(m);
    tu_rmtree(dir);
}

/* ---- fs_write_atomic ------------------------------------------------- */

static void test_write_new_and_mode(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *p = pj(dir, "new.txt");
    struct as_err err = AS_ERR_INIT;
    struct fs_write_opts o = {0600, FS_SYMLINK_FOLLOW, NULL, NULL};
    assert_int_equal(fs_write_atomic(p, "one", 3, &o, &err), 0);
    assert_content(p, "one");
    assert_int_equal(mode_of(p), 0600);
    /* NULL opts: 0644 */
    char *q = pj(dir, "q");
    assert_int_equal(fs_write_atomic(q, "x", 1, NULL, &err), 0);
    assert_int_equal(mode_of(q), 0644);

    /* an existing file keeps its mode, whatever opts->mode says */
    assert_int_equal(chmod(p, 0640), 0);
    o.mode = 0777;
    assert_int_equal(fs_write_atomic(p, "two", 3, &o, &err), 0);
    assert_content(p, "two");
    assert_int_equal(mode_of(p), 0640);
    assert_int_equal(chmod(p, 0755), 0);
    assert_int_equal(fs_write_atomic(p, "", 0, NULL, &err), 0);
    assert_content(p, "");
    assert_int_equal(mode_of(p), 0755);
    assert_int_equal(count_temps(dir), 0);

    /* missing parent directory: a clear error naming the file */
    char *deep = pj(dir, "no/such/f");
    assert_int_equal(fs_write_atomic(deep, "x", 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, deep));
    free(deep);
    free(p);
    free(q);
    tu_rmtree(dir);
}

static void test_write_through_symlink(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *real = tu_write(dir, "dotfiles/real.json", "old");
    assert_int_equal(chmod(real, 0600), 0);
    char *l1 = pj(dir, "link1");
    char *l2 = pj(dir, "link2");
    assert_int_equal(symlink("dotfiles/real.json", l1), 0); /* relative */
    assert_int_equal(symlink(l1, l2), 0);                   /* chain */
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(fs_write_atomic(l2, "new", 3, NULL, &err), 0);
    struct stat lst;
    assert_int_equal(lstat(l1, &lst), 0);
    assert_true(S_ISLNK(lst.st_mode));
    assert_int_equal(lstat(l2, &lst), 0);
    assert_true(S_ISLNK(lst.st_mode));
    assert_content(real, "new");
    assert_int_equal(mode_of(real), 0600);
    char *dd = pj(dir, "dotfiles");
    assert_int_equal(count_temps(dd), 0);
    assert_int_equal(count_temps(dir), 0);

    /* a dangling link: its target is created, the link kept */
    char *dl = pj(dir, "dangling");
    char *dt = pj(dir, "dotfiles/created");
    assert_int_equal(symlink(dt, dl), 0);
    assert_int_equal(fs_write_atomic(dl, "c", 1, NULL, &err), 0);
    assert_content(dt, "c");
    assert_int_equal(lstat(dl, &lst), 0);
    assert_true(S_ISLNK(lst.st_mode));

    /* FS_SYMLINK_REFUSE: error, target untouched */
    struct fs_write_opts o = {0644, FS_SYMLINK_REFUSE, NULL, NULL};
    assert_int_equal(fs_write_atomic(l1, "refused", 7, &o, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    assert_content(real, "new");

    /* a link loop is an error, not a hang */
    char *la = pj(dir, "la"), *lb = pj(dir, "lb");
    assert_int_equal(symlink(lb, la), 0);
    assert_int_equal(symlink(la, lb), 0);
    assert_int_equal(fs_write_atomic(la, "x", 1, NULL, &err), -1);
    free(la);
    free(lb);
    free(dl);
    free(dt);
    free(dd);
    free(real);
    free(l1);
    free(l2);
    tu_rmtree(dir);
}

static void test_write_contain_root(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *proj = pj(dir, "proj");
    char *outside = tu_write(dir, "outside/secret", "keep");
    char *inside = tu_write(dir, "proj/inner/real", "in");
    char *odir = pj(dir, "outside");
    struct as_err err = AS_ERR_INIT;
    struct fs_write_opts o = {0644, FS_SYMLINK_FOLLOW, proj, NULL};

    /* the file is a symlink leading out of the project: refused */
    char *l = pj(proj, "cfg");
    assert_int_equal(symlink(outside, l), 0);
    assert_int_equal(fs_write_atomic(l, "pwned", 5, &o, &err), -1);
    assert_non_null(strstr(err.msg, "outside"));
    assert_non_null(strstr(err.msg, l));
    assert_content(outside, "keep");
    assert_int_equal(count_temps(odir), 0);

    /* a parent directory is a symlink leading out: refused */
    char *pl = pj(proj, "linkdir");
    assert_int_equal(symlink(odir, pl), 0);
    char *via = pj(proj, "linkdir/secret");
    assert_int_equal(fs_write_atomic(via, "pwned", 5, &o, &err), -1);
    assert_non_null(strstr(err.msg, "outside"));
    assert_content(outside, "keep");
    char *via_new = pj(proj, "linkdir/newfile");
    assert_int_equal(fs_write_atomic(via_new, "pwned", 5, &o, &err), -1);
    assert_false(fs_exists(via_new));

    /* a symlink that stays inside is followed */
    char *il = pj(proj, "in-link");
    assert_int_equal(symlink("inner/real", il), 0);
    assert_int_equal(fs_write_atomic(il, "ok", 2, &o, &err), 0);
    assert_content(inside, "ok");
    /* and a plain file inside is written */
    char *plain = pj(proj, "plain");
    assert_int_equal(fs_write_atomic(plain, "p", 1, &o, &err), 0);
    assert_content(plain, "p");
    /* the same outside link without contain_root is written through (user scope) */
    o.contain_root = NULL;
    assert_int_equal(fs_write_atomic(l, "user", 4, &o, &err), 0);
    assert_content(outside, "user");
    free(proj);
    free(outside);
    free(inside);
    free(odir);
    free(l);
    free(pl);
    free(via);
    free(via_new);
    free(il);
    free(plain);
    tu_rmtree(dir);
}

static void test_write_read_only_refused(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *p = tu_write(dir, "ro.json", "original");
    assert_int_equal(chmod(p, 0444), 0);
    struct as_err err = AS_ERR_INIT;
    /* refused by the mode bits, even when running as root */
    assert_int_equal(fs_write_atomic(p, "new", 3, NULL, &err), -1);
    assert_non_null(strstr(err.msg, p));
    assert_non_null(strstr(err.msg, "read-only"));
    assert_non_null(strstr(err.hint, "chmod"));
    assert_content(p, "original");
    assert_int_equal(mode_of(p), 0444);
    assert_int_equal(count_temps(dir), 0);
    /* through a symlink too */
    char *l = pj(dir, "l");
    assert_int_equal(symlink(p, l), 0);
    assert_int_equal(fs_write_atomic(l, "new", 3, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "read-only"));
    assert_content(p, "original");
    free(l);
    free(p);
    tu_rmtree(dir);
}

/* A write that fails midway (file size limit: works even as root) leaves
 * the old bytes and no temp file. Runs in a child so the limit stays there. */
static void test_write_failure_leaves_old_bytes(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *p = tu_write(dir, "f", "old bytes");
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
            _exit(3);
        size_t n = 64 * 1024;
        char *big = malloc(n);
        memset(big, 'x', n);
        struct as_err err = AS_ERR_INIT;
        int rc = fs_write_atomic(p, big, n, NULL, &err);
        free(big);
        _exit(rc == -1 && strstr(err.msg, p) ? 0 : 4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_content(p, "old bytes");
    assert_int_equal(count_temps(dir), 0);
    free(p);
    tu_rmtree(dir);
}

/* Runs body(dir) as an unprivileged user in a child (root bypasses the
 * directory permissions these tests are about); returns its exit status. */
static int as_nobody(const char *dir, int (*body)(const char *dir))
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(99);
        _exit(body(dir));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static int ro_dir_body(const char *dir)
{
    char sub[2048], p[2048];
    snprintf(sub, sizeof sub, "%s/sub", dir);
    snprintf(p, sizeof p, "%s/sub/f", dir);
    if (mkdir(sub, 0755) != 0)
        return 1;
    FILE *f = fopen(p, "w");
    if (!f)
        return 2;
    fputs("old", f);
    fclose(f);
    if (chmod(sub, 0555) != 0)
        return 3;
    struct as_err err = AS_ERR_INIT;
    if (fs_write_atomic(p, "new", 3, NULL, &err) != -1 || !strstr(err.msg, p)) {
        fprintf(stderr, "ro dir: %s\n", err.msg);
        return 4;
    }
    char *c = tu_read(p, NULL);
    int same = c && strcmp(c, "old") == 0;
    free(c);
    if (!same)
        return 5;
    if (count_temps(sub) != 0)
        return 6;
    chmod(sub, 0755);
    return 0;
}

static void test_write_read_only_dir(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(as_nobody(dir, ro_dir_body), 0);
    tu_rmtree(dir);
}

static void test_write_owner(void **st)
{
    (void)st;
    if (geteuid() != 0)
        tu_skip("needs root: creates files owned by someone else");
    char *dir = tu_tmpdir();
    assert_int_equal(chmod(dir, 0777), 0);
    char *p = tu_write(dir, "owned", "old");
    assert_int_equal(chown(p, 1234, 1234), 0);
    assert_int_equal(chmod(p, 0666), 0);
    struct as_err err = AS_ERR_INIT;
    /* root: the owner is kept */
    assert_int_equal(fs_write_atomic(p, "new", 3, NULL, &err), 0);
    struct stat sst;
    assert_int_equal(stat(p, &sst), 0);
    assert_int_equal(sst.st_uid, 1234);
    assert_int_equal(sst.st_gid, 1234);
    assert_int_equal(sst.st_mode & 07777, 0666);
    /* another user who may write the file but cannot chown it: the write is
     * refused rather than handing the file to the writer */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(3);
        struct as_err e2 = AS_ERR_INIT;
        int rc = fs_write_atomic(p, "stolen", 6, NULL, &e2);
        _exit(rc == -1 && strstr(e2.msg, "owner") ? 0 : 4);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_content(p, "new");
    assert_int_equal(stat(p, &sst), 0);
    assert_int_equal(sst.st_uid, 1234);
    assert_int_equal(count_temps(dir), 0);
    free(p);
    tu_rmtree(dir);
}

static void test_write_backup(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *p = tu_write(dir, "cfg", "v1");
    char *bdir = pj(dir, "backups");
    assert_int_equal(mkdir(bdir, 0700), 0);
    char *b = pj(bdir, "cfg.bak");
    struct as_err err = AS_ERR_INIT;
    struct fs_write_opts o = {0644, FS_SYMLINK_FOLLOW, NULL, b};
    assert_int_equal(fs_write_atomic(p, "v2", 2, &o, &err), 0);
    assert_content(p, "v2");
    assert_content(b, "v1");
    assert_int_equal(mode_of(b), 0600);
    assert_int_equal(fs_write_atomic(p, "v3", 2, &o, &err), 0);
    assert_content(b, "v2");
    assert_int_equal(count_temps(bdir), 0);
    /* a new target has nothing to back up */
    char *n = pj(dir, "fresh");
    char *nb = pj(bdir, "fresh.bak");
    o.backup_path = nb;
    assert_int_equal(fs_write_atomic(n, "f", 1, &o, &err), 0);
    assert_false(fs_exists(nb));
    /* a failing backup refuses the write: the target keeps its bytes */
    char *bad = pj(dir, "no-such-dir/cfg.bak");
    o.backup_path = bad;
    assert_int_equal(fs_write_atomic(p, "v4", 2, &o, &err), -1);
    assert_non_null(strstr(err.msg, "backup"));
    assert_content(p, "v3");
    assert_int_equal(count_temps(dir), 0);
    free(bad);
    free(n);
    free(nb);
    free(b);
    free(bdir);
    free(p);
    tu_rmtree(dir);
}

static void test_write_not_regular(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *d = pj(dir, "adir");
    assert_int_equal(mkdir(d, 0755), 0);
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(fs_write_atomic(d, "x", 1, NULL, &err), -1);
    assert_true(fs_is_dir(d));
    char *fifo = pj(dir, "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(fs_write_atomic(fifo, "x", 1, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));
    assert_int_equal(count_temps(dir), 0);
    free(d);
    free(fifo);
    tu_rmtree(dir);
}

static void test_copy_file(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    size_t n = 150 * 1024 + 3;
    char *big = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    big[n] = '\0';
    char *src = tu_write(dir, "src", big);
    char *dst = pj(dir, "dst");
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(fs_copy_file(src, dst, 0600, &err), 0);
    size_t got;
    char *c = tu_read(dst, &got);
    assert_int_equal(got, n);
    assert_memory_equal(c, big, n);
    assert_int_equal(mode_of(dst), 0600);
    char *missing = pj(dir, "missing");
    assert_int_equal(fs_copy_file(missing, dst, 0600, &err), -1);
    assert_int_equal(fs_copy_file(dir, dst, 0600, &err), -1);
    assert_non_null(strstr(err.msg, "not a regular file"));
    free(missing);
    free(c);
    free(big);
    free(src);
    free(dst);
    tu_rmtree(dir);
}

/* ---- private copies (backups, history: they hold resolved secrets) ----- */

static mode_t lmode_of(const char *p)
{
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    return st.st_mode & 07777;
}

static void test_backup_always_0600(void **st)
{
    (void)st;
    mode_t old = umask(0);
    char *dir = tu_tmpdir();
    char *p = tu_write(dir, "cfg", "TOKEN=v1");
    assert_int_equal(chmod(p, 0644), 0);
    char *bdir = pj(dir, "backups");
    assert_int_equal(mkdir(bdir, 0700), 0);
    char *b = pj(bdir, "cfg.bak");
    struct as_err err = AS_ERR_INIT;
    struct fs_write_opts o = {0644, FS_SYMLINK_FOLLOW, NULL, b};
    /* a 0644 config: its copy is still 0600, and the config keeps 0644 */
    assert_int_equal(fs_write_atomic(p, "TOKEN=v2", 8, &o, &err), 0);
    assert_int_equal(mode_of(b), 0600);
    assert_int_equal(mode_of(p), 0644);
    /* an older, looser backup does not keep its mode when it is replaced */
    assert_int_equal(chmod(b, 0666), 0);
    assert_int_equal(fs_write_atomic(p, "TOKEN=v3", 8, &o, &err), 0);
    assert_content(b, "TOKEN=v2");
    assert_int_equal(mode_of(b), 0600);
    /* a symlink planted at the backup path is refused: the copy would land
     * wherever it points; the target keeps its bytes */
    char *elsewhere = tu_write(dir, "elsewhere", "x");
    assert_int_equal(unlink(b), 0);
    assert_int_equal(symlink(elsewhere, b), 0);
    assert_int_equal(fs_write_atomic(p, "TOKEN=v4", 8, &o, &err), -1);
    assert_non_null(strstr(err.msg, "backup"));
    assert_content(p, "TOKEN=v3");
    assert_content(elsewhere, "x");
    assert_int_equal(count_temps(dir), 0);
    assert_int_equal(count_temps(bdir), 0);
    free(elsewhere);
    free(b);
    free(bdir);
    free(p);
    tu_rmtree(dir);
    umask(old);
}

static void test_write_exact(void **st)
{
    (void)st;
    mode_t old = umask(0);
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    /* new files: exactly the asked mode under umask 0 */
    char *n = pj(dir, "new");
    struct fs_write_opts o = {0600, FS_SYMLINK_REFUSE, NULL, NULL};
    assert_int_equal(fs_write_exact(n, "s", 1, &o, &err), 0);
    assert_int_equal(mode_of(n), 0600);
    char *a = pj(dir, "atomic");
    assert_int_equal(fs_write_atomic(a, "s", 1, &o, &err), 0);
    assert_int_equal(mode_of(a), 0600);
    /* existing: fs_write_atomic keeps the mode, fs_write_exact replaces it */
    assert_int_equal(chmod(n, 0644), 0);
    assert_int_equal(chmod(a, 0644), 0);
    assert_int_equal(fs_write_atomic(a, "t", 1, &o, &err), 0);
    assert_int_equal(mode_of(a), 0644);
    assert_int_equal(fs_write_exact(n, "t", 1, &o, &err), 0);
    assert_int_equal(mode_of(n), 0600);
    assert_content(n, "t");
    /* and back to a recorded 0640 (restore) */
    struct fs_write_opts r = {0640, FS_SYMLINK_FOLLOW, NULL, NULL};
    assert_int_equal(fs_write_exact(n, "u", 1, &r, &err), 0);
    assert_int_equal(mode_of(n), 0640);
    /* a refused symlink stays refused */
    char *l = pj(dir, "link");
    assert_int_equal(symlink(a, l), 0);
    assert_int_equal(fs_write_exact(l, "v", 1, &o, &err), -1);
    assert_content(a, "t");
    assert_int_equal(count_temps(dir), 0);
    free(l);
    free(a);
    free(n);
    tu_rmtree(dir);
    umask(old);
}

static void test_private_dir(void **st)
{
    (void)st;
    mode_t old = umask(0);
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    char *d = pj(dir, "ah/backups");
    char *ah = pj(dir, "ah");
    assert_int_equal(fs_private_dir(d, &err), 0);
    assert_int_equal(mode_of(ah), 0700);
    assert_int_equal(mode_of(d), 0700);
    /* re-tightened when loosened */
    assert_int_equal(chmod(d, 0755), 0);
    assert_int_equal(fs_private_dir(d, &err), 0);
    assert_int_equal(mode_of(d), 0700);
    assert_int_equal(chmod(d, 02777), 0);
    assert_int_equal(fs_private_dir(d, &err), 0);
    assert_int_equal(mode_of(d), 0700);
    /* a stricter owner-only mode is left alone */
    assert_int_equal(chmod(d, 0500), 0);
    assert_int_equal(fs_private_dir(d, &err), 0);
    assert_int_equal(mode_of(d), 0500);
    assert_int_equal(chmod(d, 0700), 0);
    /* a symlink there is refused, and what it points at is not chmod'ed */
    char *shared = pj(dir, "shared");
    assert_int_equal(mkdir(shared, 0777), 0);
    char *l = pj(dir, "ah/history");
    assert_int_equal(symlink(shared, l), 0);
    assert_int_equal(fs_private_dir(l, &err), -1);
    assert_non_null(strstr(err.msg, "symlink"));
    assert_int_equal(mode_of(shared), 0777);
    assert_int_equal(lmode_of(l) & 0777, 0777); /* the link itself */
    /* a file there is refused */
    char *f = tu_write(dir, "ah/file", "x");
    assert_int_equal(fs_private_dir(f, &err), -1);
    free(f);
    free(l);
    free(shared);
    free(ah);
    free(d);
    tu_rmtree(dir);
    umask(old);
}

static void test_tighten_file(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    struct as_err err = AS_ERR_INIT;
    char *f = tu_write(dir, "state.json", "{}");
    assert_int_equal(chmod(f, 0644), 0);
    assert_int_equal(fs_tighten_file(f, 0600, &err), 0);
    assert_int_equal(mode_of(f), 0600);
    assert_int_equal(chmod(f, 0400), 0); /* nothing outside 0600: left alone */
    assert_int_equal(fs_tighten_file(f, 0600, &err), 0);
    assert_int_equal(mode_of(f), 0400);
    /* never through a symlink */
    char *t = tu_write(dir, "target", "x");
    assert_int_equal(chmod(t, 0644), 0);
    char *l = pj(dir, "link");
    assert_int_equal(symlink(t, l), 0);
    assert_int_equal(fs_tighten_file(l, 0600, &err), 0);
    assert_int_equal(mode_of(t), 0644);
    char *missing = pj(dir, "missing");
    assert_int_equal(fs_tighten_file(missing, 0600, &err), 0);
    free(missing);
    free(l);
    free(t);
    free(f);
    tu_rmtree(dir);
}

/* ---- joins and paths ------------------------------------------------- */

#define NOFOLLOW_JOIN (FS_CONTAIN_NOFOLLOW | FS_CONTAIN_NO_DOTDOT)

static void test_contain_nofollow(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "a/b/file", "x");
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    char *want = pj(dir, "a/b/file");
    assert_int_equal(fs_contain(dir, NULL, "a/b/file", NOFOLLOW_JOIN, &out, &err), 0);
    assert_string_equal(out.buf, want);
    assert_int_equal(fs_contain(dir, NULL, "./a//b/./file", NOFOLLOW_JOIN, &out, &err), 0);
    assert_string_equal(out.buf, want);
    free(want);
    /* not existing yet: fine, unless it must */
    assert_int_equal(fs_contain(dir, NULL, "a/new/deeper", NOFOLLOW_JOIN, &out, &err), 0);
    assert_true(fs_contain(dir, NULL, "a/new/deeper", NOFOLLOW_JOIN | FS_CONTAIN_MUST_EXIST, &out,
                           &err) < 0);
    assert_non_null(strstr(err.msg, "does not exist"));

    const char *bad[] = {"/etc/passwd", "..", "../x", "a/../../x", "a/b/..", "a/./../b"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_true(fs_contain(dir, NULL, bad[i], NOFOLLOW_JOIN, &out, &err) < 0);
        assert_non_null(strstr(err.msg, "traversal"));
        assert_int_equal(out.len, 0);
    }
    assert_true(fs_contain(dir, NULL, "", NOFOLLOW_JOIN, &out, &err) < 0);
    assert_true(fs_contain(dir, NULL, "./", NOFOLLOW_JOIN, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "itself"));

    /* a symlinked component, last or not, is refused */
    /* (link targets stay inside the temp dir: the cleanup helper chmods
     * through symlinks) */
    char *l = pj(dir, "a/link");
    assert_int_equal(symlink("b", l), 0);
    assert_true(fs_contain(dir, NULL, "a/link/file", NOFOLLOW_JOIN, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "symlink"));
    assert_true(fs_contain(dir, NULL, "a/link", NOFOLLOW_JOIN, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "symlink"));
    /* a file in the middle */
    assert_true(fs_contain(dir, NULL, "a/b/file/x", NOFOLLOW_JOIN, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "not a directory"));
    sb_release(&out);
    free(l);
    free(f);
    tu_rmtree(dir);
}

/* The repository-path form: anchored at a subdirectory, ".." allowed while
 * it stays inside, symlinks followed only while they stay inside. */
static void test_contain_follow(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *root = pj(dir, "proj");
    char *anchor = pj(dir, "proj/.agentstack");
    char *f = tu_write(dir, "proj/skills/notes/SKILL.md", "x");
    char *g = tu_write(dir, "proj/.agentstack/agentstack.toml", "x");
    char *h = tu_write(dir, "outside/secret", "x");
    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    char *want = pj(dir, "proj/skills/notes");
    assert_int_equal(fs_contain(root, anchor, "../skills/notes", 0, &out, &err), 0);
    assert_string_equal(out.buf, want);
    free(want);
    /* out of the project by "..", or by an absolute path */
    assert_true(fs_contain(root, anchor, "../../outside/secret", 0, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "'../../outside/secret' leads out of"));
    assert_non_null(strstr(err.msg, "traversal"));
    assert_true(fs_contain(root, anchor, h, 0, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "is absolute: traversal"));
    /* an absolute path, when allowed, still has to be inside */
    assert_true(fs_contain(root, NULL, h, FS_CONTAIN_ABSOLUTE, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "traversal"));
    assert_int_equal(fs_contain(root, NULL, f, FS_CONTAIN_ABSOLUTE, &out, &err), 0);
    assert_string_equal(out.buf, f);
    /* a symlink that stays inside is followed; one that leaves is refused */
    char *in = pj(dir, "proj/in"), *esc = pj(dir, "proj/esc"), *dang = pj(dir, "proj/dang");
    assert_int_equal(symlink("skills", in), 0);
    assert_int_equal(fs_contain(root, anchor, "../in/notes", 0, &out, &err), 0);
    char *od = pj(dir, "outside");
    assert_int_equal(symlink(od, esc), 0);
    assert_true(fs_contain(root, anchor, "../esc/secret", 0, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "outside the project"));
    assert_true(fs_contain(root, anchor, "../esc", 0, &out, &err) < 0);
    /* a dangling link could be pointed anywhere later */
    assert_int_equal(symlink("/nonexistent-agentstack/x", dang), 0);
    assert_true(fs_contain(root, anchor, "../dang", 0, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "symlink resolves outside the project"));
    /* ... and never when symlinks are refused */
    assert_true(fs_contain(root, anchor, "../in/notes", FS_CONTAIN_NOFOLLOW, &out, &err) < 0);
    assert_non_null(strstr(err.msg, "symlink"));
    sb_release(&out);
    free(in);
    free(esc);
    free(dang);
    free(od);
    free(f);
    free(g);
    free(h);
    free(root);
    free(anchor);
    tu_rmtree(dir);
}

static void test_paths(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *f = tu_write(dir, "root/sub/f", "x");
    char *root = pj(dir, "root");
    char *sub = pj(dir, "root/sub");
    char *other = pj(dir, "rootother");
    assert_int_equal(mkdir(other, 0755), 0);
    assert_true(fs_path_within(root, root));
    assert_true(fs_path_within(root, f));
    assert_true(fs_path_within(root, sub));
    char *nf = pj(dir, "root/sub/not/yet");
    assert_true(fs_path_within(root, nf));
    assert_false(fs_path_within(root, other)); /* prefix of the name is not inside */
    assert_false(fs_path_within(root, dir));
    assert_false(fs_path_within(root, "/etc"));
    char *esc = pj(dir, "root/sub/../../rootother");
    assert_false(fs_path_within(root, esc));
    char *l = pj(dir, "root/out");
    assert_int_equal(symlink(other, l), 0);
    char *viol = pj(dir, "root/out/x");
    assert_false(fs_path_within(root, viol));
    assert_true(fs_path_within("/", "/etc"));

    strbuf out = SB_INIT;
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(fs_realpath(l, &out, &err), 0);
    char *ro = realpath(other, NULL);
    assert_string_equal(out.buf, ro);
    assert_int_equal(fs_canonicalize(viol, &out, &err), 0);
    char *want = pj(ro, "x");
    assert_string_equal(out.buf, want);
    assert_int_equal(fs_realpath(nf, &out, &err), -1);
    /* ".." after a missing component cannot be resolved honestly */
    char *dd = pj(dir, "root/missing/../x");
    assert_int_equal(fs_canonicalize(dd, &out, &err), -1);
    /* a dangling symlink in the path is reported, not treated as a name */
    char *dl = pj(dir, "root/dangling");
    assert_int_equal(symlink("nonexistent-target-xyz", dl), 0);
    char *dlx = pj(dl, "x");
    assert_int_equal(fs_canonicalize(dlx, &out, &err), -1);
    assert_non_null(strstr(err.msg, "dangling"));
    assert_false(fs_path_within(root, dlx));
    sb_release(&out);
    free(dl);
    free(dlx);
    free(dd);
    free(want);
    free(ro);
    free(viol);
    free(l);
    free(esc);
    free(nf);
    free(f);
    free(root);
    free(sub);
    free(other);
    tu_rmtree(dir);
}

static void test_mkdirs_exists(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *d = pj(dir, "x/y/z/");
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(fs_mkdirs(d, 0700, &err), 0);
    assert_true(fs_is_dir(d));
    assert_int_equal(mode_of(d), 0700);
    assert_int_equal(fs_mkdirs(d, 0700, &err), 0); /* idempotent */
    char *f = tu_write(dir, "file", "x");
    char *under = pj(f, "sub");
    assert_int_equal(fs_mkdirs(under, 0755, &err), -1);
    assert_non_null(strstr(err.msg, f));
    assert_int_equal(fs_mkdirs(f, 0755, &err), -1);
    assert_true(fs_exists(f));
    assert_false(fs_is_dir(f));
    char *dl = pj(dir, "dl");
    assert_int_equal(symlink("nonexistent-xyz", dl), 0);
    assert_true(fs_exists(dl)); /* lstat: a dangling link exists */
    char *dt = pj(dir, "nonexistent-xyz");
    assert_false(fs_exists(dt));
    free(dt);
    free(dl);
    free(under);
    free(f);
    free(d);
    tu_rmtree(dir);
}

/* ---- walk ------------------------------------------------------------ */

struct rec {
    strvec seen;
    const char *skip;
    const char *stop;
};

static int rec_cb(const struct fs_entry *e, void *ctx, struct as_err *err)
{
    struct rec *r = ctx;
    char t = S_ISLNK(e->mode) ? 'l' : S_ISDIR(e->mode) ? 'd' : 'f';
    strvec_pushf(&r->seen, "%c:%s:%d", t, e->rel, e->depth);
    if (r->stop && strcmp(e->rel, r->stop) == 0)
        return as_err_set(err, "stop at %s", e->rel);
    if (r->skip && strcmp(e->rel, r->skip) == 0)
        return 1;
    return 0;
}

static char *joined(const strvec *sv)
{
    strbuf sb = SB_INIT;
    for (size_t i = 0; i < sv->n; i++) {
        if (i)
            sb_addc(&sb, ' ');
        sb_adds(&sb, sv->v[i]);
    }
    return sb_detach(&sb, NULL);
}

static void test_walk_order(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *root = pj(dir, "t");
    assert_int_equal(mkdir(root, 0755), 0);
    free(tu_write(root, "a.b", "1"));
    free(tu_write(root, "a-b", "1"));
    free(tu_write(root, "a/b", "1"));
    free(tu_write(root, "a/c/d", "1"));
    free(tu_write(root, "B", "1"));
    free(tu_write(root, "\xc3\xa9", "1")); /* é: bytes above ASCII sort last */
    char *outside = tu_write(dir, "outside/secret", "1");
    char *l = pj(root, "a/zlink");
    char *od = pj(dir, "outside");
    assert_int_equal(symlink(od, l), 0);

    struct rec r = {STRVEC_INIT, NULL, NULL};
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(fs_walk(root, 10, rec_cb, &r, &err), 0);
    char *s = joined(&r.seen);
    assert_string_equal(s, "f:B:1 d:a:1 f:a/b:2 d:a/c:2 f:a/c/d:3 l:a/zlink:2 f:a-b:1 "
                           "f:a.b:1 f:\xc3\xa9:1");
    free(s);
    strvec_clear(&r.seen);

    /* skip a directory's children */
    r.skip = "a";
    assert_int_equal(fs_walk(root, 10, rec_cb, &r, &err), 0);
    s = joined(&r.seen);
    assert_string_equal(s, "f:B:1 d:a:1 f:a-b:1 f:a.b:1 f:\xc3\xa9:1");
    free(s);
    strvec_clear(&r.seen);

    /* stop with an error */
    r.skip = NULL;
    r.stop = "a/b";
    assert_int_equal(fs_walk(root, 10, rec_cb, &r, &err), -1);
    assert_string_equal(err.msg, "stop at a/b");
    assert_int_equal(r.seen.n, 3);
    strvec_clear(&r.seen);
    r.stop = NULL;

    /* depth cap: a/c/d is at depth 3 */
    assert_int_equal(fs_walk(root, 2, rec_cb, &r, &err), -1);
    assert_non_null(strstr(err.msg, "deeper than 2"));
    strvec_clear(&r.seen);
    assert_int_equal(fs_walk(root, 3, rec_cb, &r, &err), 0);
    strvec_clear(&r.seen);

    /* a file root */
    char *fr = pj(root, "B");
    assert_int_equal(fs_walk(fr, 0, rec_cb, &r, &err), 0);
    s = joined(&r.seen);
    assert_string_equal(s, "f::0");
    free(s);
    strvec_clear(&r.seen);
    /* a symlink root is reported, not followed */
    assert_int_equal(fs_walk(l, 5, rec_cb, &r, &err), 0);
    s = joined(&r.seen);
    assert_string_equal(s, "l::0");
    free(s);
    strvec_clear(&r.seen);
    /* missing root */
    char *m = pj(dir, "missing");
    assert_int_equal(fs_walk(m, 5, rec_cb, &r, &err), -1);
    assert_non_null(strstr(err.msg, "missing"));
    strvec_clear(&r.seen);
    free(m);
    free(fr);
    free(outside);
    free(od);
    free(l);
    free(root);
    tu_rmtree(dir);
}

static int walk_unreadable_body(const char *dir)
{
    char t[4096], locked[4096];
    snprintf(t, sizeof t, "%s/t", dir);
    snprintf(locked, sizeof locked, "%s/t/locked", dir);
    if (mkdir(t, 0755) != 0 || mkdir(locked, 0755) != 0)
        return 1;
    if (chmod(locked, 0) != 0)
        return 2;
    struct rec r = {STRVEC_INIT, NULL, NULL};
    struct as_err err = AS_ERR_INIT;
    int rc = fs_walk(t, 10, rec_cb, &r, &err);
    strvec_clear(&r.seen);
    chmod(locked, 0755);
    if (rc != -1 || !strstr(err.msg, "locked") || !strstr(err.msg, "ermission denied"))
        return 3;
    return 0;
}

static void test_walk_unreadable(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    assert_int_equal(chmod(dir, 0777), 0);
    assert_int_equal(as_nobody(dir, walk_unreadable_body), 0);
    tu_rmtree(dir);
}

static void test_rmtree(void **st)
{
    (void)st;
    char *dir = tu_tmpdir();
    char *keep = tu_write(dir, "outside/keep", "1");
    free(tu_write(dir, "t/a/b/c", "1"));
    free(tu_write(dir, "t/x", "1"));
    char *od = pj(dir, "outside");
    char *l = pj(dir, "t/a/link");
    assert_int_equal(symlink(od, l), 0);
    char *ro = pj(dir, "t/a/b");
    assert_int_equal(chmod(ro, 0500), 0);
    char *t = pj(dir, "t");
    struct as_err err = AS_ERR_INIT;
    assert_int_equal(fs_rmtree(t, &err), 0);
    assert_false(fs_exists(t));
    assert_true(fs_exists(keep));            /* the link was removed, not its target */
    assert_int_equal(fs_rmtree(t, &err), 0); /* already gone: fine */
    /* a symlink root removes the link only */
    char *l2 = pj(dir, "l2");
    assert_int_equal(symlink(od, l2), 0);
    assert_int_equal(fs_rmtree(l2, &err), 0);
    assert_false(fs_exists(l2));
    assert_true(fs_exists(keep));
    free(l2);
    free(ro);
    free(t);
    free(l);
    free(od);
    free(keep);
    tu_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_file),
        cmocka_unit_test(test_write_new_and_mode),
        cmocka_unit_test(test_write_through_symlink),
        cmocka_unit_test(test_write_contain_root),
        cmocka_unit_test(test_write_read_only_refused),
        cmocka_unit_test(test_write_failure_leaves_old_bytes),
        cmocka_unit_test(test_write_read_only_dir),
        cmocka_unit_test(test_write_owner),
        cmocka_unit_test(test_write_backup),
        cmocka_unit_test(test_write_not_regular),
        cmocka_unit_test(test_copy_file),
        cmocka_unit_test(test_backup_always_0600),
        cmocka_unit_test(test_write_exact),
        cmocka_unit_test(test_private_dir),
        cmocka_unit_test(test_tighten_file),
        cmocka_unit_test(test_contain_nofollow),
        cmocka_unit_test(test_contain_follow),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_mkdirs_exists),
        cmocka_unit_test(test_walk_order),
        cmocka_unit_test(test_walk_unreadable),
        cmocka_unit_test(test_rmtree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
