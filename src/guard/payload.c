/* guard payload — each CLI's hook JSON turned into one action
 * (docs/guard.md): the protocol sniff, key normalization (lowercase, '_' and '-'
 * removed, so tool_input, toolInput and tool-input are one key), path and
 * command extraction, patch envelopes and the writer/reader classification. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/json.h"
#include "base/xalloc.h"
#include "guard/guard_int.h"

static const char *const proto_names[GUARD_P_COUNT] = {
    "claude", "codex", "gemini", "cursor", "copilot", "antigravity", "windsurf"};

const char *guard_proto_name(enum guard_proto p)
{
    return p < GUARD_P_COUNT ? proto_names[p] : "sniff";
}

int guard_proto_parse(const char *name, enum guard_proto *out)
{
    for (int i = 0; i < GUARD_P_COUNT; i++)
        if (!strcmp(name, proto_names[i])) {
            *out = (enum guard_proto)i;
            return 0;
        }
    return -1;
}

/* Normalized key: lowercase, '_' and '-' removed. */
static void norm(const char *k, char *out, size_t cap)
{
    size_t j = 0;
    for (; *k && j + 1 < cap; k++)
        if (*k != '_' && *k != '-')
            out[j++] = (char)tolower((unsigned char)*k);
    out[j] = '\0';
}

/* The value of the first key of obj whose normalized form is want. */
static json_t *nget(const json_t *obj, const char *want)
{
    if (!json_is_object(obj))
        return NULL;
    const char *k;
    json_t *v;
    char nk[64];
    json_object_foreach((json_t *)obj, k, v)
    {
        norm(k, nk, sizeof nk);
        if (!strcmp(nk, want))
            return v;
    }
    return NULL;
}

static const char *nstr(const json_t *obj, const char *want)
{
    return json_string_value(nget(obj, want));
}

enum guard_proto guard_proto_sniff(const json_t *p)
{
    if (json_object_get(p, "toolCall"))
        return GUARD_P_ANTIGRAVITY;
    if (json_object_get(p, "tool_info"))
        return GUARD_P_WINDSURF;
    if (json_object_get(p, "toolArgs"))
        return GUARD_P_COPILOT;
    if (json_is_string(json_object_get(p, "command")) && !json_object_get(p, "tool_name"))
        return GUARD_P_CURSOR;
    if (json_object_get(p, "turn_id"))
        return GUARD_P_CODEX;
    const char *ev = json_string_value(json_object_get(p, "hook_event_name"));
    if (ev && !strcmp(ev, "BeforeTool"))
        return GUARD_P_GEMINI;
    return GUARD_P_CLAUDE;
}

/* ---- names --------------------------------------------------------------- */

static bool name_in(const char *tool, const char *const *list)
{
    if (!tool)
        return false;
    char n[64];
    norm(tool, n, sizeof n);
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(n, list[i]))
            return true;
    return false;
}

static const char *const writers[] = {"write",
                                      "edit",
                                      "multiedit",
                                      "notebookedit",
                                      "applypatch",
                                      "writefile",
                                      "editfile",
                                      "createfile",
                                      "replace",
                                      "replacestringinfile",
                                      "multireplacestringinfile",
                                      "insertedit",
                                      "editnotebook",
                                      "writetofile",
                                      "searchreplace",
                                      "insertcontent",
                                      "deletefile",
                                      "movefile",
                                      "renamefile",
                                      "prewritecode",
                                      "strreplace",
                                      "createdirectory",
                                      "appendfile",
                                      "replacefilecontent",
                                      "multireplacefilecontent",
                                      "writefilecontent",
                                      NULL};

static const char *const readers[] = {
    "read",           "readfile",      "view",        "viewfile",
    "notebookread",   "grep",          "glob",        "ls",
    "listdirectory",  "search",        "searchfiles", "prereadcode",
    "beforereadfile", "readmanyfiles", "findfiles",   "codebasesearch",
    "filesearch",     "readnotebook",  NULL};

/* ---- patch envelopes ----------------------------------------------------- */

static bool is_envelope(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    if (strncmp(s, "*** Begin Patch", 15) != 0)
        return false;
    const char *end = s + strlen(s);
    while (end > s && isspace((unsigned char)end[-1]))
        end--;
    return end - s >= 13 && !strncmp(end - 13, "*** End Patch", 13);
}

int gi_envelope_targets(const char *s, strvec *out)
{
    static const char *const heads[] = {
        "*** Add File: ", "*** Update File: ", "*** Delete File: ", "*** Move to: ", NULL};
    size_t lines = 0;
    for (const char *p = s; *p && lines <= GUARD_MAX_PATCH_LINES; lines++) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        for (size_t k = 0; heads[k]; k++) {
            size_t hl = strlen(heads[k]);
            if (len > hl && !strncmp(p, heads[k], hl)) {
                size_t tl = len - hl;
                while (tl && isspace((unsigned char)p[hl + tl - 1]))
                    tl--;
                if (tl)
                    strvec_push_take(out, xstrndup(p + hl, tl));
            }
        }
        p = nl ? nl + 1 : p + len;
    }
    if (lines > GUARD_MAX_PATCH_LINES) {
        strvec_clear(out);
        return -1;
    }
    return 0;
}

/* The first envelope among in's string values (and array elements). */
static const char *find_envelope(const json_t *in)
{
    if (json_is_string(in))
        return is_envelope(json_string_value(in)) ? json_string_value(in) : NULL;
    const char *k;
    json_t *v;
    if (json_is_object(in)) {
        json_object_foreach((json_t *)in, k, v)
        {
            if (json_is_string(v) && is_envelope(json_string_value(v)))
                return json_string_value(v);
            if (json_is_array(v)) {
                size_t i;
                json_t *e;
                json_array_foreach(
                    v, i, e) if (json_is_string(e) &&
                                 is_envelope(json_string_value(e))) return json_string_value(e);
            }
        }
    }
    return NULL;
}

/* ---- shell text ---------------------------------------------------------- */

/* argv → one shell line, each element quoted when needed. */
static void argv_line(const json_t *arr, strbuf *out)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        const char *s = json_string_value(e);
        if (!s)
            continue;
        if (out->len)
            sb_addc(out, ' ');
        sb_add_shword(out, s);
    }
}

static bool command_of(const json_t *in, strbuf *out)
{
    static const char *const keys[] = {"command", "commandline", "cmd", NULL};
    for (size_t k = 0; keys[k]; k++) {
        json_t *c = nget(in, keys[k]);
        if (json_is_string(c)) {
            sb_adds(out, json_string_value(c));
            return true;
        }
        if (json_is_array(c)) {
            argv_line(c, out);
            return true;
        }
    }
    return false;
}

/* ---- classification ------------------------------------------------------ */

static bool write_shaped(const json_t *in)
{
    static const char *const keys[] = {
        "oldstring", "newstring",  "oldstr",      "newstr",        "oldtext",
        "newtext",   "newsource",  "patch",       "diff",          "edits",
        "fileedits", "insertline", "codecontent", "targetcontent", "replacementcontent",
        "filetext",  NULL};
    for (size_t k = 0; keys[k]; k++)
        if (nget(in, keys[k]))
            return true;
    json_t *m = nget(in, "mode");
    const char *mv = json_string_value(m);
    if (mv) {
        static const char *const verbs[] = {"w",    "wb",      "a",      "ab",        "w+",
                                            "a+",   "write",   "append", "overwrite", "create",
                                            "edit", "replace", NULL};
        for (size_t k = 0; verbs[k]; k++)
            if (!strcasecmp(mv, verbs[k]))
                return true;
    }
    if (json_is_true(nget(in, "append")) || json_is_true(nget(in, "create")) ||
        json_is_true(nget(in, "overwrite")))
        return true;
    bool body = nget(in, "content") || nget(in, "contents") || nget(in, "filetext");
    bool search = nget(in, "pattern") || nget(in, "query") || nget(in, "regex") ||
                  nget(in, "search") || nget(in, "searchterm");
    return body && !search;
}

/* Fields that name one file or directory. */
static const char *const path_keys[] = {"filepath",
                                        "path",
                                        "notebookpath",
                                        "targetfile",
                                        "absolutepath",
                                        "targetpath",
                                        "dirpath",
                                        "file",
                                        "filename",
                                        "destination",
                                        "dst",
                                        "dest",
                                        "newpath",
                                        "destinationpath",
                                        "topath",
                                        "targetdirectory",
                                        "outputpath",
                                        "uri",
                                        "source",
                                        "src",
                                        "oldpath",
                                        "sourcepath",
                                        "frompath",
                                        "inputpath",
                                        NULL};
/* Of those, the ones a move or copy reads (or removes) rather than writes. */
static const char *const source_keys[] = {"source",   "src",       "oldpath", "sourcepath",
                                          "frompath", "inputpath", NULL};
/* Fields that hold a list of files. */
static const char *const list_keys[] = {"paths",       "files",         "filepaths",
                                        "targetfiles", "absolutepaths", NULL};
/* Fields that hold a file glob. */
static const char *const glob_keys[] = {"glob", "include", "includes", "filepattern", NULL};
/* Tools whose "pattern" is a file glob (names, not contents). */
static const char *const glob_tools[] = {"glob",      "globtool",   "findfiles",
                                         "listfiles", "filesearch", NULL};
/* Tools that read the contents of the files their glob selects. */
static const char *const search_tools[] = {
    "grep",    "greptool", "search",        "searchfilecontent", "grepfiles", "searchfiles",
    "ripgrep", "rg",       "readmanyfiles", "codebasesearch",    NULL};
static const char *const cwd_keys[] = {"workdir", "cwd", "directory", "workingdirectory", NULL};

static bool key_in(const char *k, const char *const *list)
{
    char nk[64];
    norm(k, nk, sizeof nk);
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(nk, list[i]))
            return true;
    return false;
}

/* file:///x → /x */
static const char *file_uri(const char *v)
{
    if (!strncmp(v, "file://", 7))
        return v + 7;
    return v;
}

static void push_globs(const json_t *v, strvec *out)
{
    if (json_is_string(v) && json_string_value(v)[0]) {
        strvec_push(out, json_string_value(v));
    } else if (json_is_array(v)) {
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) if (json_is_string(e) && json_string_value(e)[0])
            strvec_push(out, json_string_value(e));
    }
}

static void classify(const char *tool, const char *event, const json_t *in, struct guard_action *a)
{
    strbuf cmd = SB_INIT;
    bool has_cmd = command_of(in, &cmd);
    bool reader = name_in(tool, readers) || name_in(event, readers);
    bool writer = name_in(tool, writers) || name_in(event, writers);
    bool mover = tool && (strstr(tool, "ove") || strstr(tool, "ename"));
    /* every field that names a file */
    strvec targets = STRVEC_INIT, sources = STRVEC_INIT;
    const char *k;
    json_t *v;
    if (json_is_object(in)) {
        json_object_foreach((json_t *)in, k, v)
        {
            if (key_in(k, path_keys) && json_is_string(v) && json_string_value(v)[0]) {
                const char *p = file_uri(json_string_value(v));
                strvec_push(key_in(k, source_keys) ? &sources : &targets, p);
            } else if (key_in(k, list_keys) && json_is_array(v)) {
                size_t i;
                json_t *e;
                json_array_foreach(v, i, e) if (json_is_string(e) && json_string_value(e)[0])
                {
                    const char *p = file_uri(json_string_value(e));
                    /* read_many_files: entries may be globs */
                    if (strpbrk(p, "*?[{"))
                        strvec_push(&a->globs, p);
                    else
                        strvec_push(&targets, p);
                }
            } else if (key_in(k, glob_keys)) {
                push_globs(v, &a->globs);
            } else if (key_in(k, cwd_keys) && json_is_string(v) && has_cmd && !a->cwd_rel) {
                a->cwd_rel = xstrdup(json_string_value(v));
            }
        }
    }
    if (name_in(tool, glob_tools))
        push_globs(nget(in, "pattern"), &a->globs);
    a->glob_content = name_in(tool, search_tools) || !name_in(tool, glob_tools);
    /* a search's path is the base of its globs */
    if (a->globs.n && targets.n && !writer)
        a->glob_base = xstrdup(targets.v[0]);
    const char *env = find_envelope(in);
    if (targets.n || sources.n) {
        /* str_replace_editor style: command is an editor verb */
        static const char *const wverbs[] = {"create", "strreplace", "insert", "undoedit",
                                             "write",  "append",     NULL};
        const char *verb = has_cmd ? cmd.buf : NULL;
        bool writes;
        if (verb && name_in(verb, wverbs)) {
            writes = true;
        } else if (verb && !strcmp(verb, "view")) {
            writes = false;
        } else if (has_cmd && cmd.len) {
            /* a tool naming a path and running a command: judge both */
            a->kind = GUARD_K_SHELL;
            a->command = sb_detach(&cmd, NULL);
            for (size_t i = 0; i < targets.n; i++)
                strvec_push(&a->paths, targets.v[i]);
            for (size_t i = 0; i < sources.n; i++)
                strvec_push(&a->paths, sources.v[i]);
            goto out;
        } else if (reader && !writer) {
            writes = false;
        } else {
            writes = writer || write_shaped(in);
        }
        a->kind = writes ? GUARD_K_WRITE : GUARD_K_READ;
        for (size_t i = 0; i < targets.n; i++)
            strvec_push(&a->paths, targets.v[i]);
        /* a move's source is removed; a copy's source is read */
        for (size_t i = 0; i < sources.n; i++)
            strvec_push(writes && mover ? &a->paths : &a->reads, sources.v[i]);
        if (writes && !targets.n && !mover) {
            a->kind = GUARD_K_WRITE_UNKNOWN;
            for (size_t i = 0; i < sources.n; i++)
                strvec_push(&a->reads, sources.v[i]);
        }
        goto out;
    }
    if (env) {
        if (gi_envelope_targets(env, &a->paths) == 0 && a->paths.n)
            a->kind = GUARD_K_WRITE;
        else
            a->kind = GUARD_K_WRITE_UNKNOWN;
    } else if (writer && !reader) {
        a->kind = GUARD_K_WRITE_UNKNOWN;
    } else if (has_cmd) {
        a->kind = GUARD_K_SHELL;
        a->command = sb_detach(&cmd, NULL);
    } else if (a->globs.n) {
        a->kind = GUARD_K_READ;
    } else {
        a->kind = GUARD_K_NONE;
    }
out:
    strvec_clear(&targets);
    strvec_clear(&sources);
    sb_release(&cmd);
}

int guard_payload_classify(const char *data, size_t len, enum guard_proto *proto,
                           struct guard_action *a, struct as_err *err)
{
    memset(a, 0, sizeof *a);
    json_t *root = json_parse("hook payload", data, len, err);
    if (!root)
        return -1;
    if (!json_is_object(root)) {
        json_decref(root);
        return as_err_set(err, "hook payload is not a JSON object");
    }
    if (*proto == GUARD_P_SNIFF)
        *proto = guard_proto_sniff(root);
    const char *cwd = nstr(root, "cwd");
    const json_t *info = nget(root, "toolinfo");
    if (!cwd && info)
        cwd = nstr(info, "cwd");
    if (!cwd) {
        json_t *roots = nget(root, "workspaceroots");
        cwd = json_string_value(json_array_get(roots, 0));
    }
    if (cwd && cwd[0])
        a->cwd = xstrdup(cwd);
    const char *tool = nstr(root, "toolname");
    const char *event = nstr(root, "hookeventname");
    if (!event)
        event = nstr(root, "agentactionname");
    json_t *in = nget(root, "toolinput");
    json_t *parsed = NULL;
    if (!in) {
        json_t *ta = nget(root, "toolargs");
        if (json_is_string(ta)) {
            struct as_err e2 = AS_ERR_INIT;
            parsed =
                json_parse("toolArgs", json_string_value(ta), strlen(json_string_value(ta)), &e2);
            in = parsed;
        } else {
            in = ta;
        }
    }
    if (!in && info)
        in = (json_t *)info;
    json_t *call = nget(root, "toolcall");
    if (!in && json_is_object(call)) {
        if (!tool)
            tool = nstr(call, "name");
        if (!tool)
            tool = nstr(call, "toolname");
        in = nget(call, "args");
        if (!in)
            in = nget(call, "arguments");
        if (!in)
            in = nget(call, "input");
    }
    if (!tool)
        tool = nstr(root, "tool");
    if (!in)
        in = root; /* cursor: command / file_path at the root */
    if (tool)
        a->tool = xstrdup(tool);
    if (json_is_string(in)) {
        /* an input that is only text: a command or an envelope */
        const char *s = json_string_value(in);
        if (is_envelope(s)) {
            a->kind = gi_envelope_targets(s, &a->paths) == 0 && a->paths.n ? GUARD_K_WRITE
                                                                           : GUARD_K_WRITE_UNKNOWN;
        } else {
            a->kind = GUARD_K_SHELL;
            a->command = xstrdup(s);
        }
    } else {
        classify(tool, event, in, a);
    }
    json_decref(parsed);
    json_decref(root);
    return 0;
}
