/* SKILL.md frontmatter, display sanitizing and skill-tree shape checks. */
#include "bundle/skill_md.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/term.h"
#include "base/utf8.h"
#include "base/xalloc.h"

bool skill_name_valid(const char *name)
{
    if (!name)
        return false;
    size_t n = strlen(name);
    if (n < 1 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (i == 0 ? !alnum : !(alnum || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return true;
}

void skill_md_free(struct skill_md *s)
{
    free(s->name);
    free(s->description);
    s->name = s->description = NULL;
    s->has_frontmatter = false;
}

/* ---- sanitizing ---------------------------------------------------------- */

static bool cp_is_space(uint32_t cp)
{
    return cp == ' ' || cp == '\t' || cp == '\n' || cp == '\r' || cp == '\v' || cp == '\f' ||
           cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000 || cp == 0x85;
}

/* Characters that change how text reads without being seen: controls and
 * the one hidden set (base/term.h). */
static bool cp_is_hidden(uint32_t cp)
{
    return cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp <= 0x9F) || term_hidden_label(cp);
}

void skill_md_sanitize(const char *text, size_t len, strbuf *out)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t start = out->len;
    bool pending_space = false;
    size_t i = 0;
    while (i < len) {
        if (s[i] == 0x1B) {
            i += term_escape_len(s + i, len - i);
            continue;
        }
        unsigned cp;
        size_t n = utf8_decode(s + i, len - i, &cp);
        if (n == 0) {
            i++; /* invalid byte: dropped */
            continue;
        }
        if (cp == 0x9B) { /* 8-bit CSI */
            i += n;
            while (i < len && !(s[i] >= 0x40 && s[i] <= 0x7E))
                i++;
            if (i < len)
                i++;
            continue;
        }
        if (cp_is_space(cp)) {
            pending_space = out->len > start;
        } else if (!cp_is_hidden(cp)) {
            if (pending_space)
                sb_addc(out, ' ');
            pending_space = false;
            sb_add(out, s + i, n);
        }
        i += n;
    }
}

/* ---- frontmatter ---------------------------------------------------------- */

struct line {
    const char *s;
    size_t n;
};

static bool next_line(const char *text, size_t len, size_t *pos, struct line *l)
{
    if (*pos >= len)
        return false;
    const char *s = text + *pos;
    const char *nl = memchr(s, '\n', len - *pos);
    size_t n = nl ? (size_t)(nl - s) : len - *pos;
    *pos += n + (nl ? 1 : 0);
    if (n && s[n - 1] == '\r')
        n--;
    l->s = s;
    l->n = n;
    return true;
}

static void trim(const char **s, size_t *n)
{
    while (*n && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

static bool is_blank(struct line l)
{
    trim(&l.s, &l.n);
    return l.n == 0;
}

/* "|", ">", with optional chomping/indent indicators, or empty. */
static bool is_block_indicator(const char *s, size_t n)
{
    if (n == 0)
        return true;
    if (s[0] != '|' && s[0] != '>')
        return false;
    for (size_t i = 1; i < n; i++)
        if (!(s[i] == '+' || s[i] == '-' || (s[i] >= '0' && s[i] <= '9')))
            return false;
    return true;
}

/* Reads key's value starting at line l (already known to be "key:" unindented);
 * advances *pos past any block lines it consumed. */
static char *read_value(const char *text, size_t len, size_t *pos, struct line l, size_t keylen)
{
    const char *v = l.s + keylen + 1;
    size_t vn = l.n - keylen - 1;
    trim(&v, &vn);
    /* A trailing comment on a block indicator ("| # text") is YAML; keep it simple. */
    strbuf raw = SB_INIT;
    if (is_block_indicator(v, vn)) {
        size_t save = *pos;
        struct line b;
        while (next_line(text, len, pos, &b)) {
            if (is_blank(b)) {
                save = *pos;
                continue;
            }
            if (b.s[0] != ' ' && b.s[0] != '\t') {
                break;
            }
            const char *t = b.s;
            size_t tn = b.n;
            trim(&t, &tn);
            if (raw.len)
                sb_addc(&raw, ' ');
            sb_add(&raw, t, tn);
            save = *pos;
        }
        *pos = save;
    } else {
        if (vn >= 2 && (v[0] == '"' || v[0] == '\'') && v[vn - 1] == v[0]) {
            v++;
            vn -= 2;
        }
        sb_add(&raw, v, vn);
    }
    strbuf clean = SB_INIT;
    skill_md_sanitize(raw.buf, raw.len, &clean);
    sb_release(&raw);
    return sb_detach(&clean, NULL);
}

void skill_md_parse(const char *text, size_t len, struct skill_md *out)
{
    memset(out, 0, sizeof *out);
    if (len > SKILL_MD_MAX_BYTES)
        len = SKILL_MD_MAX_BYTES;
    size_t pos = 0;
    if (len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0)
        pos = 3;
    struct line l;
    bool opened = false;
    while (next_line(text, len, &pos, &l)) {
        if (is_blank(l))
            continue;
        const char *t = l.s;
        size_t tn = l.n;
        trim(&t, &tn);
        opened = tn == 3 && memcmp(t, "---", 3) == 0;
        break;
    }
    if (!opened)
        return;
    out->has_frontmatter = true;
    while (next_line(text, len, &pos, &l)) {
        if (l.n >= 3 && memcmp(l.s, "---", 3) == 0)
            break;
        if (l.n >= 12 && memcmp(l.s, "description:", 12) == 0) {
            free(out->description);
            out->description = read_value(text, len, &pos, l, 11);
        } else if (l.n >= 5 && memcmp(l.s, "name:", 5) == 0) {
            free(out->name);
            out->name = read_value(text, len, &pos, l, 4);
        }
    }
}

int skill_md_read(const char *dir, struct skill_md *out, struct as_err *err)
{
    memset(out, 0, sizeof *out);
    char *path = xasprintf("%s/SKILL.md", dir);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP)
            as_err_set(err, "%s: skill content contains a symlink", path);
        else if (e == ENOENT)
            as_err_set(err, "%s: the skill has no SKILL.md", dir);
        else
            as_err_set(err, "%s: cannot open: %s", path, strerror(e));
        free(path);
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        as_err_set(err, "%s: not a regular file", path);
        close(fd);
        free(path);
        return -1;
    }
    char *buf = xmalloc(SKILL_MD_MAX_BYTES);
    size_t got = 0;
    while (got < SKILL_MD_MAX_BYTES) {
        ssize_t r = read(fd, buf + got, SKILL_MD_MAX_BYTES - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            as_err_set(err, "%s: read failed: %s", path, strerror(errno));
            close(fd);
            free(buf);
            free(path);
            return -1;
        }
        if (r == 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    skill_md_parse(buf, got, out);
    free(buf);
    free(path);
    return 0;
}

/* ---- tree shape ----------------------------------------------------------- */

static int check_dir_fd(int dfd, const char *path, int depth, struct as_err *err)
{
    if (depth > SKILL_MAX_DEPTH) {
        close(dfd);
        return as_err_set(err, "%s: skill tree is deeper than %d levels", path, SKILL_MAX_DEPTH);
    }
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return as_err_errno(err, "%s: cannot read directory", path);
    }
    int rc = 0;
    struct dirent *de;
    while (rc == 0 && (errno = 0, de = readdir(d))) {
        const char *nm = de->d_name;
        if (!strcmp(nm, ".") || !strcmp(nm, "..") || !strcmp(nm, ".git"))
            continue;
        char *child = xasprintf("%s/%s", path, nm);
        struct stat st;
        if (fstatat(dirfd(d), nm, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            rc = as_err_errno(err, "%s: cannot stat", child);
        } else if (S_ISLNK(st.st_mode)) {
            rc = as_err_set(err, "%s: skill content contains a symlink", child);
        } else if (S_ISDIR(st.st_mode)) {
            int cfd = openat(dirfd(d), nm, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (cfd < 0)
                rc = as_err_errno(err, "%s: cannot open directory", child);
            else
                rc = check_dir_fd(cfd, child, depth + 1, err);
        } else if (!S_ISREG(st.st_mode)) {
            rc = as_err_set(err,
                            "%s: skill content contains a special file (FIFO, socket or "
                            "device); only regular files and directories are allowed",
                            child);
        }
        free(child);
    }
    if (rc == 0 && errno != 0)
        rc = as_err_errno(err, "%s: cannot read directory", path);
    closedir(d);
    return rc;
}

int skill_dir_check(const char *dir, struct as_err *err)
{
    struct stat st;
    if (lstat(dir, &st) < 0)
        return as_err_errno(err, "%s: skill directory", dir);
    if (S_ISLNK(st.st_mode))
        return as_err_set(err, "%s: skill content contains a symlink (the skill root)", dir);
    if (!S_ISDIR(st.st_mode))
        return as_err_set(err, "%s: a skill must be a directory", dir);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return as_err_errno(err, "%s: cannot open directory", dir);
    struct stat md;
    if (fstatat(fd, "SKILL.md", &md, AT_SYMLINK_NOFOLLOW) < 0) {
        close(fd);
        return as_err_set(err, "%s: the skill has no SKILL.md at its root", dir);
    }
    return check_dir_fd(fd, dir, 1, err);
}
