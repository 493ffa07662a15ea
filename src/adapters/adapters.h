/*
 * adapters — the coding CLIs agentstack renders for, as data.
 *
 * Why: thirteen CLIs each keep MCP servers, skills, instructions, hooks and
 * settings in their own files and shapes. Keeping those facts in one YAML
 * descriptor per CLI (docs/adapters.md) means a maintainer reads and extends one
 * table instead of thirteen code paths, and a user can add a CLI with a
 * drop-in file ($AGENTSTACK_HOME/adapters/<id>.yaml).
 *
 * Guarantees:
 *  - One parser (libyaml) for the built-ins (embedded at build time from
 *    adapters/<id>.yaml) and the drop-ins. A descriptor is either loaded whole
 *    or refused with path:line:col; unknown keys are errors with a "did you
 *    mean"; the parser never crashes or recurses without bound, whatever the
 *    bytes.
 *  - A drop-in overrides the built-in with the same id; a broken drop-in is
 *    skipped with a warning (the registry keeps the rest).
 *  - Every string a descriptor holds is plain UTF-8 without NUL; paths are
 *    either absolute after expansion (~, {config}) or project-relative
 *    without ".." (checked at load), so a descriptor cannot point a
 *    project-scope write outside the project.
 */
#ifndef AS_ADAPTERS_ADAPTERS_H
#define AS_ADAPTERS_ADAPTERS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/vec.h"
#include "guard/guard.h"

/* File formats a descriptor can name. No target is YAML. */
enum adp_format {
    ADP_FMT_NONE = 0,
    ADP_FMT_JSON,  /* strict JSON */
    ADP_FMT_JSONC, /* JSON with comments and trailing commas (VS Code, OpenCode, Gemini) */
    ADP_FMT_TOML,
};
const char *adp_format_name(enum adp_format f);

/* How servers map into the CLI's file. A NULL field name means
 * the CLI has no such key: url NULL = http unrepresentable; cwd NULL = the
 * sh -c "wrap"; args NULL with command_array = one [cmd, args...] array. */
struct adp_mcp {
    char *location; /* section key: mcpServers, mcp_servers, mcp, servers */
    char *f_url, *f_headers, *f_command, *f_args, *f_cwd, *f_env;
    char *f_tools; /* the per-server tool allowlist key: written ["*"] (every tool), or NULL */
    char *transport_key; /* NULL: no transport tag */
    char *transport_http;
    char *transport_stdio;
    bool headers_as_subtable;   /* TOML: [<loc>.<name>.<headers>] */
    bool command_array;         /* opencode */
    bool cwd_absolute;          /* a relative cwd is written joined to the project root: the CLI
                                 * resolves it against its own process directory (Cline) */
    char *secret_mode;          /* "literal" (all 13) or "passthrough" */
    char *name_charset;         /* NULL (free-form) or "ascii-word-dash" */
    char *instructions_channel; /* "confirmed", "unconfirmed" or "none" */
};

struct adp_setting_field {
    char *key;
    char *type;     /* string, enum, bool, number, object */
    strvec options; /* enum */
    char *label;
    char *group;
    char *help;
    char *default_value; /* as written (scalar), or NULL */
};

struct adp_desc {
    char *id;
    char *display;
    char *source; /* "built-in" or the drop-in's path */

    char *detect_bin;
    char *detect_config;

    char *config_path; /* user-scope MCP file (unexpanded: "~/...", "{config}/...") */
    /* config.path_env: "NAME" (the variable holds the file) or "NAME=rel" (a
     * directory, rel joined); the first set to an absolute path replaced
     * config_path when the descriptor loaded. */
    strvec config_path_env;
    enum adp_format config_format;
    char *project_config; /* project-relative MCP file, or NULL */
    enum adp_format project_format;

    bool has_mcp; /* speaks MCP (has an mcp block) */
    struct adp_mcp mcp;

    char *skills_dir, *skills_project_dir, *skills_strategy;
    char *instr_global, *instr_project;

    enum adp_format hooks_format;
    char *hooks_global, *hooks_project, *hooks_key, *hooks_shape;

    enum adp_format settings_format;
    char *settings_global, *settings_project, *settings_model_key, *settings_effort_key;
    VEC(struct adp_setting_field) settings_fields;

    char *ext_dir, *ext_project_dir;

    strvec headless_args;
    strvec mcp_injection_args;

    /* guard: where the CLI's pre-tool hook lives (docs/adapters.md); without
     * it the host guard cannot protect the CLI. */
    bool has_guard;
    char *guard_file;    /* "~/..." */
    char *guard_key;     /* claude/flat shapes: the object holding the events */
    strvec guard_events; /* at most GUARD_WIRE_EVENTS */
    enum guard_proto guard_proto;
    enum guard_wire_shape guard_shape;
    strvec guard_also_read_by; /* other CLIs (ids) that read the same hook file */
};

/* Parses one descriptor. path is used in errors ("path:line:col: ...").
 * Returns NULL + err on any problem (YAML syntax, unknown key, wrong type,
 * missing id/display, bad id, unsafe path). */
struct adp_desc *adp_desc_parse(const char *path, const char *text, size_t len, struct as_err *err);
void adp_desc_free(struct adp_desc *d);

/* ---- the registry --------------------------------------------------------- */

/* Embedded built-ins: generated at build time from adapters/<id>.yaml by
 * tools/gen_builtin_yaml.py (docs/adapters.md, "Adding a CLI"). */
struct adp_builtin_src {
    const char *file; /* "claude-code.yaml" */
    const char *text;
    size_t len;
};
extern const struct adp_builtin_src adp_builtin_yaml[];
extern const size_t adp_builtin_count;

struct adp_registry {
    VEC(struct adp_desc *) v; /* built-in order (spec table order), then new drop-ins by id */
    strvec warnings;          /* skipped drop-ins, one line each */
};

/* Loads the built-ins and, when with_dropins, every $AGENTSTACK_HOME/adapters/
 * *.yaml (sorted by name). A broken built-in is an error (a build bug); a
 * broken drop-in is a warning. */
int adp_registry_load(struct adp_registry *r, bool with_dropins, struct as_err *err);
void adp_registry_free(struct adp_registry *r);
const struct adp_desc *adp_registry_find(const struct adp_registry *r, const char *id);
/* "unknown CLI 'codx' — did you mean 'codex'? …" with the known ids. */
int adp_unknown_id_err(const struct adp_registry *r, const char *id, struct as_err *err);
/* 0 when every id of ids (NULL = none) names an adapter; else the first that
 * does not, as adp_unknown_id_err says it. The check of every --target list
 * (adopt, unrender, connect). */
int adp_registry_check_ids(const struct adp_registry *r, const strvec *ids, struct as_err *err);

/* ---- paths and detection -------------------------------------------------- */

/* Expands "~" ($HOME) and "{config}" ($XDG_CONFIG_HOME, else ~/.config) at
 * the start of a descriptor path. Relative paths are joined to project_root
 * (which must then be non-NULL). -1 + err when $HOME is unset. */
int adp_expand_path(const char *p, const char *project_root, strbuf *out, struct as_err *err);

/* 1 if bin is an executable file in some $PATH directory. */
bool adp_bin_on_path(const char *bin);
/* Detected = detect.bin on PATH, or detect.config / config.path exists;
 * with project_root, an existing project config also counts. */
bool adp_detected(const struct adp_desc *d, const char *project_root);

#endif
