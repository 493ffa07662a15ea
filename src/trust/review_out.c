/* trust review output — the card text (docs/trust.md) and the --preview JSON. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/term.h"
#include "base/url.h"
#include "base/xalloc.h"
#include "bundle/ref.h"
#include "trust/trust.h"

static void san(strbuf *out, const char *s)
{
    term_sanitize(out, s ? s : "", s ? strlen(s) : 0);
}

/* "a, b, c, and K more" */
static void name_list(strbuf *out, const strvec *names)
{
    size_t shown = names->n < 3 ? names->n : 3;
    for (size_t i = 0; i < shown; i++) {
        if (i)
            sb_adds(out, ", ");
        san(out, names->v[i]);
    }
    if (names->n > shown)
        sb_addf(out, ", and %zu more", names->n - shown);
}

/* host[:port] of a URL; the URL itself when its authority holds a ${REF};
 * and, when it cannot be read one way only (base/url.h), the URL with the
 * reason the gateway will not serve it, so the reviewer sees both. */
static char *url_host(const char *url)
{
    struct url_authority a;
    const char *why;
    if (!ref_url_host_known(url))
        return xstrdup(url);
    if (url_authority(url, &a, &why) < 0)
        return xasprintf("%s (not served: %s)", url, why);
    size_t from = a.host_off - (a.bracketed ? 1 : 0);
    return xstrndup(url + from, a.authority_end - from);
}

static void push_unique(strvec *v, const char *s)
{
    if (strvec_find(v, s) < 0)
        strvec_push(v, s);
}

static size_t not_pinned(const struct trust_review *r)
{
    size_t n = 0;
    for (size_t i = 0; i < r->pins.results.n; i++) {
        const struct trust_pin_result *x = &r->pins.results.v[i];
        if (x->status == PIN_MATCHES || x->item->kind == PIN_SETTING)
            continue;
        if (x->item->kind == PIN_SERVER && !x->item->library)
            continue;
        n++;
    }
    return n;
}

static void card(const struct trust_review *r, strbuf *out)
{
    strvec cmds = STRVEC_INIT, hosts = STRVEC_INIT;
    size_t files = 0;
    for (size_t i = 0; i < r->items.n; i++) {
        const struct trust_item *it = &r->items.v[i];
        if (strcmp(it->kind, "server") == 0 && it->runs)
            strvec_push(&cmds, it->name);
        else if (strcmp(it->kind, "hook") == 0)
            strvec_push(&cmds, it->name);
        if (strcmp(it->kind, "server") == 0 && it->contacts) {
            char *h = url_host(it->contacts);
            push_unique(&hosts, h);
            free(h);
        }
        if (strcmp(it->kind, "skill") == 0 || strcmp(it->kind, "instruction") == 0)
            files++;
    }
    for (size_t i = 0; i < r->m->extensions.n; i++)
        strvec_push(&cmds, r->m->extensions.v[i].name);

    sb_adds(out, "This project will:\n");
    bool any = false;
    if (cmds.n) {
        sb_addf(out, "  run %zu command(s) on your machine — ", cmds.n);
        name_list(out, &cmds);
        sb_addc(out, '\n');
        any = true;
    }
    if (hosts.n) {
        sb_addf(out, "  contact %zu host(s) — ", hosts.n);
        name_list(out, &hosts);
        sb_addc(out, '\n');
        any = true;
    }
    if (r->secrets.n) {
        sb_addf(out, "  be able to read %zu secret(s) — ", r->secrets.n);
        name_list(out, &r->secrets);
        sb_addc(out, '\n');
        any = true;
    }
    if (files) {
        sb_addf(out, "  add %zu file(s) to every agent's context\n", files);
        any = true;
    }
    if (!any)
        sb_adds(out, "  nothing — this project declares no capabilities yet\n");
    size_t np = not_pinned(r);
    bool outside = false; /* a stdio server runs something from outside the project */
    for (size_t i = 0; i < r->items.n && !outside; i++)
        outside = r->items.v[i].code_unpinned.n > 0;
    if (np)
        sb_addf(out, "  %zu item(s) are not pinned\n", np);
    else if (outside)
        sb_adds(out, "  all project content shown is pinned; what its servers run from outside "
                     "the project is not (named under each server)\n");
    else
        sb_adds(out, "  all shown content is pinned\n");
    strvec_clear(&cmds);
    strvec_clear(&hosts);
}

static void section(const struct trust_review *r, strbuf *out, const char *kind, const char *title)
{
    bool header = false;
    for (size_t i = 0; i < r->items.n; i++) {
        const struct trust_item *it = &r->items.v[i];
        if (strcmp(it->kind, kind) != 0)
            continue;
        if (!header) {
            sb_addf(out, "\n%s\n", title);
            header = true;
        }
        sb_adds(out, it->marker[0] ? it->marker : "  ");
        if (strcmp(kind, "server") == 0) {
            if (it->runs) {
                sb_adds(out, "▶ ");
                san(out, it->name);
                sb_adds(out, ": runs `");
                san(out, it->runs);
                sb_adds(out, "`");
            } else if (it->contacts) {
                sb_adds(out, "→ ");
                san(out, it->name);
                sb_adds(out, ": contacts ");
                san(out, it->contacts);
            } else {
                sb_adds(out, "? ");
                san(out, it->name);
                sb_adds(out, ": definition withheld (not verified against the lock)");
            }
            if (it->tag) {
                sb_adds(out, "  ");
                sb_adds(out, it->tag);
            }
            for (size_t j = 0; j < it->may_read.n; j++) {
                sb_adds(out, j ? ", " : "  reads ");
                san(out, it->may_read.v[j]);
            }
            for (size_t j = 0; j < it->code_pinned.n; j++) {
                sb_adds(out, j ? ", " : "\n      pinned code: ");
                san(out, it->code_pinned.v[j]);
            }
            for (size_t j = 0; j < it->code_unpinned.n; j++) {
                sb_adds(out, j ? "; " : "\n      not pinned: ");
                san(out, it->code_unpinned.v[j]);
            }
            if (it->isolation) {
                sb_adds(out, "\n      runs: ");
                san(out, it->isolation);
            }
        } else if (strcmp(kind, "secrets") == 0) {
            sb_adds(out, "· ");
            san(out, it->identity);
        } else if (strcmp(kind, "hook") == 0) {
            sb_adds(out, "· ");
            san(out, it->name);
            sb_adds(out, ": ");
            san(out, it->identity);
        } else if (strcmp(kind, "settings") == 0) {
            sb_adds(out, "· ");
            san(out, it->name);
            sb_adds(out, ": ");
            san(out, it->identity);
        } else if (strcmp(kind, "policy") == 0) {
            sb_adds(out, "· ");
            san(out, it->identity);
        } else {
            sb_adds(out, "· ");
            san(out, it->name);
            if (strcmp(kind, "executable") == 0 && strcmp(it->identity, "root") == 0)
                sb_adds(out, " (integrity root)");
            if (strcmp(kind, "executable") == 0 && strcmp(it->identity, "tree") == 0)
                sb_adds(out, "/ (code tree)");
            if (strcmp(kind, "extension") == 0) {
                sb_adds(out, " for ");
                san(out, it->identity);
            }
            if (strcmp(kind, "workflow") == 0) {
                sb_adds(out, " (roles: ");
                san(out, it->identity[0] ? it->identity : "none");
                sb_adds(out, ")");
            }
            if (it->tag) {
                sb_adds(out, "   ");
                san(out, it->tag);
            }
        }
        sb_addc(out, '\n');
        if (it->diff)
            trust_diff_render(it->diff, "      ", out);
    }
}

void trust_review_scan(const struct trust_review *r, strbuf *out)
{
    if (r->scan_error) {
        sb_adds(out, "\nContent scan — could not run: ");
        san(out, r->scan_error);
        sb_addc(out, '\n');
        return;
    }
    if (!r->scan.v.n)
        return;
    sb_addf(out, "\nContent scan — %zu high, %zu warning%s\n", r->scan.high, r->scan.warn,
            r->scan.warn == 1 ? "" : "s");
    for (size_t i = 0; i < r->scan.v.n; i++) {
        const struct scan_finding *f = &r->scan.v.v[i];
        strbuf line = SB_INIT;
        scan_finding_format(f, &line);
        sb_adds(out, f->sev == SCAN_HIGH ? "  ✗ " : "  ⚠ ");
        if (f->item) {
            san(out, f->item);
            sb_adds(out, ": ");
        }
        san(out, line.buf);
        sb_addc(out, '\n');
        if (f->fix) {
            sb_adds(out, "      ↳ ");
            san(out, f->fix);
            sb_addc(out, '\n');
        }
        sb_release(&line);
    }
}

void trust_review_render(const struct trust_review *r, strbuf *out)
{
    sb_adds(out, "Reviewing ");
    san(out, r->paths->base);
    if (r->status.state == TRUST_TRUSTED && r->content_drift)
        sb_adds(out, " — trusted, but pinned content drifted from agentstack.lock\n");
    else if (r->status.state == TRUST_TRUSTED)
        sb_adds(out, " — trusted, unchanged since you approved it\n");
    else if (r->status.state == TRUST_CHANGED)
        sb_adds(out, " — changed since you trusted it; review again\n");
    else
        sb_adds(out, " — not trusted on this machine yet\n");
    if (r->prior_recorded)
        sb_adds(out, "  (+ new since last consent, ~ changed, - gone)\n");
    sb_addc(out, '\n');
    card(r, out);
    section(r, out, "server", "Servers");
    section(r, out, "secrets", "Secrets");
    section(r, out, "executable", "Local executables");
    section(r, out, "skill", "Skills");
    section(r, out, "instruction", "Instructions");
    section(r, out, "extension", "Extensions");
    section(r, out, "workflow", "Workflows");
    section(r, out, "hook", "Hooks");
    section(r, out, "settings", "Settings");
    section(r, out, "policy", "Requested policy");
    if (r->machine_ceiling) {
        sb_adds(out, "\nMachine policy ceiling: ");
        san(out, r->machine_ceiling);
        sb_addc(out, '\n');
    }
    if (r->removed.n) {
        sb_adds(out, "\nGone since last consent\n");
        for (size_t i = 0; i < r->removed.n; i++) {
            sb_addf(out, "- %s ", r->removed.v[i].kind);
            san(out, r->removed.v[i].name);
            sb_addc(out, '\n');
        }
    }
    bool adv = false;
    for (size_t i = 0; i < r->pins.results.n; i++) {
        const struct trust_pin_result *x = &r->pins.results.v[i];
        if (!x->advisory)
            continue;
        if (!adv)
            sb_adds(out, "\nAdvisories (not blocking)\n");
        adv = true;
        sb_adds(out, "  ! ");
        san(out, x->message);
        sb_addc(out, '\n');
    }
    trust_review_scan(r, out);
}

void trust_review_blockers(const struct trust_review *r, strbuf *out)
{
    sb_adds(out, "cannot trust ");
    san(out, r->paths->base);
    sb_addf(out, ": its loadable surface isn't fully pinned — %zu blocker(s):\n", r->blockers.n);
    for (size_t i = 0; i < r->blockers.n; i++) {
        sb_adds(out, "  - ");
        san(out, r->blockers.v[i].reason);
        sb_addc(out, '\n');
    }
    sb_adds(out, "pin with `agentstack lock --write`, then `agentstack trust .`");
}

/* ---- preview JSON ------------------------------------------------------- */

static json_t *str_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

static json_t *blocker_json(const struct trust_blocker *b)
{
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(b->kind));
    json_object_set_new(o, "name", json_string(b->name));
    json_object_set_new(o, "reason", json_string(b->reason));
    json_object_set_new(o, "fix", str_or_null(b->fix));
    return o;
}

static json_t *item_json(const struct trust_item *it)
{
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string(it->kind));
    json_object_set_new(o, "name", json_string(it->name));
    json_object_set_new(o, "change", json_string(it->change ? it->change : "added"));
    json_object_set_new(o, "identity", json_string(it->identity));
    json_object_set_new(o, "runs", str_or_null(it->runs));
    json_object_set_new(o, "contacts", str_or_null(it->contacts));
    json_t *mr = json_array();
    for (size_t i = 0; i < it->may_read.n; i++)
        json_array_append_new(mr, json_string(it->may_read.v[i]));
    json_object_set_new(o, "may_read", mr);
    if (it->runs) {
        json_t *pc = json_array(), *np = json_array();
        for (size_t i = 0; i < it->code_pinned.n; i++)
            json_array_append_new(pc, json_string(it->code_pinned.v[i]));
        for (size_t i = 0; i < it->code_unpinned.n; i++)
            json_array_append_new(np, json_string(it->code_unpinned.v[i]));
        json_object_set_new(o, "pinned_code", pc);
        json_object_set_new(o, "not_pinned", np);
        json_object_set_new(o, "isolation", str_or_null(it->isolation));
    }
    json_object_set_new(o, "pin", str_or_null(it->pin));
    json_object_set_new(o, "prior_pin", str_or_null(it->prior_pin));
    json_object_set_new(o, "recognized_other_projects", json_array());
    if (it->diff)
        json_object_set_new(o, "diff", json_incref(it->diff));
    else if (strcmp(it->kind, "skill") == 0 || strcmp(it->kind, "instruction") == 0)
        json_object_set_new(o, "diff", trust_diff_new());
    else
        json_object_set_new(o, "diff", json_null());
    json_object_set_new(o, "drifted", json_boolean(it->drifted));
    json_object_set_new(
        o, "fix", it->drifted ? json_string("agentstack lock --write") : str_or_null(it->fix));
    return o;
}

/* The pin results of servers, sorted by (name, position): a hostile
 * manifest may declare tens of thousands of servers, and scanning every
 * result for each one made the preview quadratic. */
struct server_results {
    const struct trust_pin_result **v;
    size_t n;
};

static int result_cmp(const void *a, const void *b)
{
    const struct trust_pin_result *x = *(const struct trust_pin_result *const *)a;
    const struct trust_pin_result *y = *(const struct trust_pin_result *const *)b;
    int c = strcmp(x->item->name, y->item->name);
    return c ? c : x < y ? -1 : x > y; /* results are one array: position order */
}

static void server_results_init(struct server_results *sr, const struct trust_review *r)
{
    sr->v = xcalloc(r->pins.results.n + 1, sizeof *sr->v);
    sr->n = 0;
    for (size_t i = 0; i < r->pins.results.n; i++)
        if (r->pins.results.v[i].item->kind == PIN_SERVER)
            sr->v[sr->n++] = &r->pins.results.v[i];
    if (sr->n > 1)
        qsort(sr->v, sr->n, sizeof *sr->v, result_cmp);
}

static const char *server_kind(const struct server_results *sr, const struct trust_item *it)
{
    size_t lo = 0, hi = sr->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(sr->v[mid]->item->name, it->name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (; lo < sr->n && strcmp(sr->v[lo]->item->name, it->name) == 0; lo++) {
        const struct trust_pin_result *x = sr->v[lo];
        if (x->status == PIN_RESOLVE_FAILED)
            return "unresolvable";
        if (x->item->library && x->status != PIN_MATCHES)
            return "unverified";
    }
    return it->runs ? "stdio" : it->contacts ? "http" : "unverified";
}

json_t *trust_review_surface(const struct trust_review *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->items.n; i++) {
        const struct trust_item *it = &r->items.v[i];
        json_t *o = json_object();
        json_object_set_new(o, "kind", json_string(it->kind));
        json_object_set_new(o, "name", json_string(it->name));
        json_object_set_new(o, "identity", json_string(it->identity));
        if (it->pin)
            json_object_set_new(o, "pin", json_string(it->pin));
        json_array_append_new(a, o);
    }
    return a;
}

static size_t count_kind(const struct trust_review *r, const char *kind)
{
    size_t n = 0;
    for (size_t i = 0; i < r->items.n; i++)
        n += strcmp(r->items.v[i].kind, kind) == 0;
    return n;
}

json_t *trust_review_preview(const struct trust_review *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "path", json_string(r->status.key.buf));
    /* Pinned-body drift reads "drifted" even when the three files still match. */
    enum trust_state state = r->content_drift ? TRUST_CHANGED : r->status.state;
    json_object_set_new(o, "state", json_string(trust_state_name(state)));
    json_object_set_new(o, "re_trust", json_boolean(r->re_trust));
    json_object_set_new(o, "surface_digest", json_string(r->status.digest));

    json_t *servers = json_array();
    struct server_results sr;
    server_results_init(&sr, r);
    for (size_t i = 0; i < r->items.n; i++) {
        const struct trust_item *it = &r->items.v[i];
        if (strcmp(it->kind, "server") != 0)
            continue;
        json_t *s = json_object();
        const char *k = server_kind(&sr, it);
        json_object_set_new(s, "name", json_string(it->name));
        json_object_set_new(s, "kind", json_string(k));
        bool shown = strcmp(k, "stdio") == 0 || strcmp(k, "http") == 0;
        json_object_set_new(s, "target",
                            shown ? json_string(it->runs ? it->runs : it->contacts) : json_null());
        json_array_append_new(servers, s);
    }
    free(sr.v);
    json_object_set_new(o, "servers", servers);

    json_t *groups[3] = {json_array(), json_array(), json_array()};
    json_t *all = json_array();
    for (size_t i = 0; i < r->blockers.n; i++) {
        const struct trust_blocker *b = &r->blockers.v[i];
        json_t *j = blocker_json(b);
        if (b->group == 0)
            json_object_del(j, "kind"); /* server_blockers: {name, reason, fix} */
        json_array_append_new(groups[b->group], j);
        json_array_append_new(all, blocker_json(b));
    }
    json_object_set_new(o, "server_blockers", groups[0]);
    json_object_set_new(o, "content_drift", groups[1]);
    json_object_set_new(o, "surface_unpinned", groups[2]);
    json_object_set_new(o, "blockers", all);
    bool grantable = r->blockers.n == 0;
    json_object_set_new(o, "grantable", json_boolean(grantable));
    json_object_set_new(o, "lock_first", json_boolean(r->lock_first));
    bool lockfix = !grantable || r->lock_first;
    json_object_set_new(o, "fix", lockfix ? json_string("agentstack lock --write") : json_null());
    json_t *next = json_null();
    if (!grantable || r->lock_first) {
        next = json_object();
        json_object_set_new(next, "command", json_string("agentstack lock --write"));
        json_object_set_new(next, "why",
                            json_string("pin the project's content before trusting it"));
    } else if (r->status.state != TRUST_TRUSTED) {
        next = json_object();
        char *cmd = xasprintf("agentstack trust . --yes --consented %s", r->status.digest);
        json_object_set_new(next, "command", json_string(cmd));
        free(cmd);
        json_object_set_new(next, "why", json_string("record consent for exactly these bytes"));
    }
    json_object_set_new(o, "next_step", next);

    json_t *secrets = json_array();
    for (size_t i = 0; i < r->secrets.n; i++)
        json_array_append_new(secrets, json_string(r->secrets.v[i]));
    json_object_set_new(o, "secrets", secrets);

    json_t *skills = json_array(), *instr = json_array(), *hooks = json_array(),
           *settings = json_array();
    for (size_t i = 0; i < r->items.n; i++) {
        const struct trust_item *it = &r->items.v[i];
        if (strcmp(it->kind, "skill") == 0 || strcmp(it->kind, "instruction") == 0) {
            json_t *s = json_object();
            json_object_set_new(s, "name", json_string(it->name));
            if (strcmp(it->kind, "skill") == 0)
                json_object_set_new(s, "identity", json_string(it->identity));
            json_object_set_new(s, "pin", str_or_null(it->pin));
            json_object_set_new(s, "status", json_string(it->tag ? it->tag : ""));
            json_array_append_new(strcmp(it->kind, "skill") == 0 ? skills : instr, s);
        }
    }
    for (size_t i = 0; i < r->m->hooks.n; i++) {
        const struct mf_hook *h = &r->m->hooks.v[i];
        json_t *s = json_object();
        json_object_set_new(s, "name", json_string(h->name));
        json_object_set_new(s, "event", json_string(h->event));
        json_object_set_new(s, "matcher", str_or_null(h->matcher));
        strbuf line = SB_INIT;
        sb_adds(&line, h->command);
        for (size_t j = 0; j < h->args.n; j++)
            sb_addf(&line, " %s", h->args.v[j]);
        json_object_set_new(s, "runs", json_string(line.buf));
        sb_release(&line);
        json_t *t = json_array();
        for (size_t j = 0; j < h->targets.n; j++)
            json_array_append_new(t, json_string(h->targets.v[j]));
        json_object_set_new(s, "targets", t);
        json_object_set_new(s, "executable", json_string(h->command));
        json_array_append_new(hooks, s);
    }
    for (size_t i = 0; i < r->m->settings.n; i++) {
        const struct mf_settings *st = &r->m->settings.v[i];
        json_t *s = json_object(), *sets = json_array();
        json_object_set_new(s, "adapter", json_string(st->adapter));
        for (size_t j = 0; st->table && j < toml_len(st->table); j++)
            json_array_append_new(sets, json_string(toml_entry(st->table, j)->key));
        json_object_set_new(s, "sets", sets);
        json_array_append_new(settings, s);
    }
    json_object_set_new(o, "skills", skills);
    json_t *wf = json_array();
    for (size_t i = 0; i < r->m->workflows.n; i++) {
        json_t *w = json_object(), *roles = json_array();
        json_object_set_new(w, "name", json_string(r->m->workflows.v[i].name));
        for (size_t j = 0; j < r->m->workflows.v[i].roles.n; j++)
            json_array_append_new(roles, json_string(r->m->workflows.v[i].roles.v[j]));
        json_object_set_new(w, "roles", roles);
        json_array_append_new(wf, w);
    }
    json_object_set_new(o, "workflows", wf);
    json_t *ext = json_array();
    for (size_t i = 0; i < r->m->extensions.n; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "name", json_string(r->m->extensions.v[i].name));
        json_object_set_new(e, "target", str_or_null(r->m->extensions.v[i].target));
        json_array_append_new(ext, e);
    }
    json_object_set_new(o, "extensions", ext);
    json_object_set_new(o, "instructions", instr);
    json_object_set_new(o, "hooks", hooks);
    json_object_set_new(o, "settings", settings);
    json_t *pol = json_array();
    for (size_t i = 0; r->m->policy && i < toml_len(r->m->policy); i++) {
        char *n = xasprintf("[policy.%s]", toml_entry(r->m->policy, i)->key);
        json_array_append_new(pol, json_string(n));
        free(n);
    }
    json_object_set_new(o, "policy_requested", pol);
    json_object_set_new(o, "machine_policy_ceiling", str_or_null(r->machine_ceiling));
    json_t *counts = json_object();
    json_object_set_new(counts, "skills", json_integer((json_int_t)count_kind(r, "skill")));
    json_object_set_new(counts, "workflows", json_integer((json_int_t)r->m->workflows.n));
    json_object_set_new(counts, "extensions", json_integer((json_int_t)r->m->extensions.n));
    json_object_set_new(counts, "instructions",
                        json_integer((json_int_t)count_kind(r, "instruction")));
    json_object_set_new(counts, "hooks", json_integer((json_int_t)r->m->hooks.n));
    json_object_set_new(counts, "settings", json_integer((json_int_t)r->m->settings.n));
    json_object_set_new(o, "counts", counts);

    json_t *review = json_object(), *items = json_array(), *removed = json_array();
    for (size_t i = 0; i < r->items.n; i++)
        json_array_append_new(items, item_json(&r->items.v[i]));
    for (size_t i = 0; i < r->removed.n; i++)
        json_array_append_new(removed, item_json(&r->removed.v[i]));
    json_object_set_new(review, "re_review", json_boolean(r->re_trust));
    json_object_set_new(review, "prior_recorded", json_boolean(r->prior_recorded));
    json_object_set_new(review, "items", items);
    json_object_set_new(review, "removed", removed);
    json_object_set_new(review, "groups", json_array());
    json_object_set_new(review, "question",
                        json_string(grantable ? "Trust this project with exactly these bytes?"
                                              : "Pin the project first: agentstack lock "
                                                "--write"));
    json_object_set_new(o, "review", review);
    json_object_set_new(o, "schema_version", json_integer(1));
    json_t *features = json_array();
    const char *f[] = {"trust-preview",         "trust-consent",      "trust-server-blockers-v1",
                       "trust-review-card-v1",  "trust-card-diff-v1", "trust-card-groups-v1",
                       "trust-content-scan-v1", "trust-decisions-v1"};
    for (size_t i = 0; i < sizeof f / sizeof *f; i++)
        json_array_append_new(features, json_string(f[i]));
    json_object_set_new(o, "features", features);
    json_object_set_new(o, "superseded", json_array());
    /* [ext] after the documented keys: the content scan the grant checks. */
    json_t *scan = json_object();
    json_object_set_new(scan, "high", json_integer((json_int_t)r->scan.high));
    json_object_set_new(scan, "warn", json_integer((json_int_t)r->scan.warn));
    json_object_set_new(scan, "blocking", json_boolean(scan_report_blocking(&r->scan)));
    json_object_set_new(scan, "error", str_or_null(r->scan_error));
    json_object_set_new(scan, "findings", scan_report_json(&r->scan));
    json_object_set_new(o, "scan", scan);
    return o;
}
