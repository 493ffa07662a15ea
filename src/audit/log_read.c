/* log_read — the one reader of the audit's rotated row logs (calls.jsonl,
 * loads.jsonl); see audit.h, aud_log_each. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "base/xalloc.h"

static int each_row(const char *path, aud_row_fn fn, void *ctx, size_t *unreadable,
                    struct as_err *err)
{
    /* never through a symlink: what is read is the evidence file */
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? 0 : as_err_errno(err, "cannot read %s", path);
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return as_err_set(err, "cannot read %s: not a regular file", path);
    }
    FILE *f = fdopen(fd, "re");
    if (!f) {
        close(fd);
        return as_err_errno(err, "cannot read %s", path);
    }
    char *buf = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&buf, &cap, f)) > 0) {
        json_error_t je;
        json_t *row = json_loadb(buf, (size_t)n, 0, &je);
        if (json_is_object(row))
            fn(ctx, row);
        else if (unreadable && (n > 1 || buf[0] != '\n'))
            (*unreadable)++;
        if (row)
            json_decref(row);
    }
    int r = ferror(f) ? as_err_errno(err, "cannot read %s", path) : 0;
    free(buf);
    fclose(f);
    return r;
}

int aud_log_each(const char *home, const char *name, aud_row_fn fn, void *ctx, size_t *unreadable,
                 struct as_err *err)
{
    char *path = xasprintf("%s/audit/%s", home, name);
    char *old = xasprintf("%s.1", path);
    int r = each_row(old, fn, ctx, unreadable, err);
    if (r == 0)
        r = each_row(path, fn, ctx, unreadable, err);
    free(path);
    free(old);
    return r;
}
