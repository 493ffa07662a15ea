/*
 * The one manifest edit path (mfedit.h): lock, read, edit, validate,
 * preview or write atomically.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fs.h"
#include "base/lock.h"
#include "base/term.h"
#include "base/xalloc.h"
#include "bundle/discover.h"
#include "cli/cli.h"
#include "cli/mfedit.h"
#include "trust/trust.h"

const char *cli_toolsets_key(const struct manifest *m)
{
    return m->toolsets_legacy ? "profiles" : "toolsets";
}

/* The lines of text (pointers into it, no copies). */
struct lines {
    const char **at;
    size_t *len;
    size_t n;
};

static void split_lines(const char *t, size_t tlen, struct lines *l)
{
    size_t cap = 1;
    for (size_t i = 0; i < tlen; i++)
        cap += t[i] == '\n';
    l->at = xcalloc(cap, sizeof *l->at);
    l->len = xcalloc(cap, sizeof *l->len);
    l->n = 0;
    const char *p = t, *end = t + tlen;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        l->at[l->n] = p;
        l->len[l->n++] = n;
        p += n + (nl ? 1 : 0);
    }
}

static bool same(const struct lines *a, size_t i, const struct lines *b, size_t j)
{
    return a->len[i] == b->len[j] && memcmp(a->at[i], b->at[j], a->len[i]) == 0;
}

static void mark(const char *m, const char *p, size_t n)
{
    strbuf l = SB_INIT;
    term_sanitize(&l, p, n);
    printf("  %s%s\n", m, l.buf);
    sb_release(&l);
}

/* The changed lines as "- old" / "+ new", in order (a longest common
 * subsequence of lines; past 4M cells, the common head and tail only). */
static void print_change(const char *old, size_t olen, const char *new_, size_t nlen)
{
    struct lines a, b;
    split_lines(old, olen, &a);
    split_lines(new_, nlen, &b);
    size_t pre = 0;
    while (pre < a.n && pre < b.n && same(&a, pre, &b, pre))
        pre++;
    size_t ea = a.n, eb = b.n;
    while (ea > pre && eb > pre && same(&a, ea - 1, &b, eb - 1))
        ea--, eb--;
    size_t na = ea - pre, nb = eb - pre;
    if (na && nb && na * nb <= (4u << 20)) {
        unsigned *dp = xcalloc((na + 1) * (nb + 1), sizeof *dp);
#define DP(i, j) dp[(i) * (nb + 1) + (j)]
        for (size_t i = na; i-- > 0;)
            for (size_t j = nb; j-- > 0;)
                DP(i, j) = same(&a, pre + i, &b, pre + j)
                               ? DP(i + 1, j + 1) + 1
                               : (DP(i + 1, j) > DP(i, j + 1) ? DP(i + 1, j) : DP(i, j + 1));
        size_t i = 0, j = 0;
        while (i < na || j < nb) {
            if (i < na && j < nb && same(&a, pre + i, &b, pre + j)) {
                i++, j++;
            } else if (j < nb && (i == na || DP(i, j + 1) >= DP(i + 1, j))) {
                mark("+ ", b.at[pre + j], b.len[pre + j]);
                j++;
            } else {
                mark("- ", a.at[pre + i], a.len[pre + i]);
                i++;
            }
        }
#undef DP
        free(dp);
    } else {
        for (size_t i = pre; i < ea; i++)
            mark("- ", a.at[i], a.len[i]);
        for (size_t j = pre; j < eb; j++)
            mark("+ ", b.at[j], b.len[j]);
    }
    free(a.at);
    free(a.len);
    free(b.at);
    free(b.len);
}

/* Do the two texts differ in the root table `except` only? */
static bool only_differs_in(const char *path, const char *a, size_t alen, const char *b,
                            size_t blen, const char *except)
{
    struct as_err err = AS_ERR_INIT;
    toml_value *x = toml_parse(path, a, alen, &err);
    toml_value *y = x ? toml_parse(path, b, blen, &err) : NULL;
    bool same = false;
    if (x && y) {
        toml_table_remove(x, except);
        toml_table_remove(y, except);
        same = toml_equal(x, y);
    }
    toml_free(x);
    toml_free(y);
    return same;
}

/* After a preference-shaped write: the trusted digest follows the bytes. */
static void carry_trust(const struct bundle_paths *p, const struct trust_status *before)
{
    struct manifest_snapshot snap;
    manifest_snapshot_init(&snap);
    struct trust_status now;
    memset(&now, 0, sizeof now);
    struct as_err err = AS_ERR_INIT;
    if (manifest_snapshot_read(p, &snap, &err) == 0 &&
        trust_check_snapshot(p, &snap, &now, &err) == 0 &&
        trust_repin(before->key.buf, before->digest, now.digest, true, &err) == 1)
        printf("trust carried: only a delivery preference changed, so the review still "
               "holds\n");
    else if (err.msg[0])
        term_fprintf(stderr,
                     "warning: trust was not carried (%s); review it again: "
                     "agentstack trust\n",
                     err.msg);
    trust_status_release(&now);
    manifest_snapshot_release(&snap);
}

/* One edit of the manifest, from the bytes read (under the caller's lock):
 * fn's change on the format-preserving editor, then the edited text loaded
 * as a manifest, so nothing that fails to load is ever written. */
struct mfedit_run {
    struct manifest_snapshot snap;
    struct manifest *m, *after;
    toml_edit *ed;
    const char *text;
    size_t len;
    bool unchanged;
};

static int edit_checked(const struct bundle_paths *p, cli_mfedit_fn fn, const void *arg,
                        strbuf *summary, struct mfedit_run *r, struct as_err *err)
{
    if (manifest_snapshot_read(p, &r->snap, err) < 0 ||
        !(r->m = manifest_load_snapshot(p, &r->snap, err)))
        return -1;
    r->ed = toml_edit_open(p->manifest, r->snap.manifest.buf, r->snap.manifest.len, err);
    if (!r->ed || fn(r->ed, r->m, arg, summary, err) < 0)
        return -1;
    r->text = toml_edit_text(r->ed, &r->len);
    r->unchanged =
        r->len == r->snap.manifest.len && memcmp(r->text, r->snap.manifest.buf, r->len) == 0;
    if (r->unchanged)
        return 0;
    struct manifest_source src = {.kind = MANIFEST_PROJECT,
                                  .path = p->manifest,
                                  .data = r->text,
                                  .len = r->len,
                                  .overlay_path = r->snap.has_overlay ? p->overlay : NULL,
                                  .overlay_data = r->snap.has_overlay ? r->snap.overlay.buf : NULL,
                                  .overlay_len = r->snap.has_overlay ? r->snap.overlay.len : 0,
                                  .manifest_dir = p->manifest_dir,
                                  .project_root = p->project_root};
    r->after = manifest_load_bytes(&src, err);
    if (!r->after) {
        as_err_hint(err, "nothing was written");
        return -1;
    }
    return 0;
}

static int write_edited(const struct bundle_paths *p, const struct mfedit_run *r,
                        struct as_err *err)
{
    struct fs_write_opts wo = {0644, FS_SYMLINK_FOLLOW, p->project_root, NULL};
    return fs_write_atomic(p->manifest, r->text, r->len, &wo, err);
}

static void run_release(struct mfedit_run *r)
{
    if (r->after)
        manifest_free(r->after);
    if (r->m)
        manifest_free(r->m);
    if (r->ed)
        toml_edit_free(r->ed);
    manifest_snapshot_release(&r->snap);
}

int cli_manifest_edit_now(const struct bundle_paths *p, cli_mfedit_fn fn, const void *arg,
                          struct as_err *err)
{
    struct as_lock lk = {-1};
    if (trust_lock(&lk, err) < 0)
        return -1;
    struct mfedit_run r = {0};
    manifest_snapshot_init(&r.snap);
    strbuf summary = SB_INIT;
    int rc = edit_checked(p, fn, arg, &summary, &r, err);
    if (rc == 0 && !r.unchanged)
        rc = write_edited(p, &r, err) < 0 ? -1 : 1;
    run_release(&r);
    lock_release(&lk);
    sb_release(&summary);
    return rc;
}

int cli_manifest_edit(const struct cli_ctx *ctx, bool write, cli_mfedit_fn fn, const void *arg,
                      const char *carry)
{
    struct bundle_paths p;
    if (cli_project(ctx, &p) < 0)
        return EXIT_FAIL;
    struct as_err err = AS_ERR_INIT;
    struct as_lock lk = {-1};
    bool locked = false;
    struct mfedit_run r = {0};
    manifest_snapshot_init(&r.snap);
    strbuf summary = SB_INIT;
    int rc = EXIT_FAIL;
    if (write) {
        if (trust_lock(&lk, &err) < 0)
            goto out;
        locked = true;
    }
    if (edit_checked(&p, fn, arg, &summary, &r, &err) < 0)
        goto out;
    if (r.unchanged) {
        printf("%s — nothing to change in %s\n", summary.buf, p.manifest);
        rc = EXIT_OK;
        goto out;
    }
    printf("%s (%s):\n", summary.buf, p.manifest);
    print_change(r.snap.manifest.buf, r.snap.manifest.len, r.text, r.len);
    if (!write) {
        printf("Dry run. Nothing written — re-run with --write.\n");
        rc = EXIT_OK;
        goto out;
    }
    struct trust_status ts;
    memset(&ts, 0, sizeof ts);
    struct as_err terr = AS_ERR_INIT;
    bool was_trusted =
        trust_check_snapshot(&p, &r.snap, &ts, &terr) == 0 && ts.state == TRUST_TRUSTED;
    bool carried =
        was_trusted && carry &&
        only_differs_in(p.manifest, r.snap.manifest.buf, r.snap.manifest.len, r.text, r.len, carry);
    if (write_edited(&p, &r, &err) < 0) {
        trust_status_release(&ts);
        goto out;
    }
    term_printf("✓ wrote %s\n", p.manifest);
    if (carried)
        carry_trust(&p, &ts);
    trust_status_release(&ts);
    if (carried)
        printf("Next: agentstack apply --write — delivery follows the new preference.\n");
    else if (was_trusted)
        printf("Next: agentstack lock --write, then agentstack trust — the manifest changed, so "
               "this project needs a new review before anything from it is delivered.\n");
    else
        printf("Next: agentstack lock --write, then agentstack trust.\n");
    rc = EXIT_OK;
out:
    if (rc != EXIT_OK)
        cli_error(&err);
    run_release(&r);
    if (locked)
        lock_release(&lk);
    sb_release(&summary);
    bundle_paths_free(&p);
    return rc;
}
