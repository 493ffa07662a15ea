/*
 * home — the machine home, $AGENTSTACK_HOME (default ~/.agentstack).
 *
 * Why: every module keeps machine-local state here (trust store, audit
 * chains, content store, gateway state, keys, backups, the library) and the
 * machine manifest carries the policy ceiling. One place computes the paths
 * so no two modules disagree about where a file lives.
 *
 * Guarantees:
 *  - Paths are absolute: a relative $AGENTSTACK_HOME is anchored at the cwd
 *    once, an empty one counts as unset; with neither it nor $HOME set,
 *    home_dir fails (never a guess such as "/").
 *  - home_ensure creates what is missing with mode 0700 (the home itself
 *    included) and never loosens or tightens an existing directory; files
 *    holding state are created 0600 (HOME_FILE_MODE) by their writers.
 *  - The machine manifest is loaded fail-closed: absent is not an
 *    error (*absent = 1), but unreadable, oversized, unparsable or invalid
 *    is, with file:line:col and the fix. There is no last-known-good copy.
 */
#ifndef AS_BUNDLE_HOME_H
#define AS_BUNDLE_HOME_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/err.h"
#include "base/strbuf.h"
#include "base/toml.h"

#define HOME_DIR_MODE ((mode_t)0700)
#define HOME_FILE_MODE ((mode_t)0600)

/* Entries of the home layout (docs/manifest.md, "$AGENTSTACK_HOME").
 * Directories end in _DIR. */
enum home_entry {
    HOME_ROOT_DIR,          /* $AGENTSTACK_HOME itself */
    HOME_AUDIT_DIR,         /* audit/ */
    HOME_STORE_DIR,         /* store/ */
    HOME_STORE_CONTENT_DIR, /* store/content/ */
    HOME_STORE_GIT_DIR,     /* store/git/ */
    HOME_STORE_CO_DIR,      /* store/co/ */
    HOME_STAGE_DIR,         /* stage/ */
    HOME_TRY_DIR,           /* try/ */
    HOME_LOGS_DIR,          /* logs/ */
    HOME_RUNS_DIR,          /* runs/ */
    HOME_GATEWAY_DIR,       /* gateway/ */
    HOME_KEYS_DIR,          /* keys/ */
    HOME_BACKUPS_DIR,       /* backups/ */
    HOME_LIB_DIR,           /* lib/ */
    HOME_STATE_DIR,         /* state/ */
    HOME_HISTORY_DIR,       /* history/ */
    HOME_ADAPTERS_DIR,      /* adapters/ */
    HOME_LEASES_DIR,        /* leases/ */
    HOME_GUARD_DIR,         /* guard/ */
    HOME_SHIMS_DIR,         /* shims/ */
    HOME_GRANT_DIR,         /* grant/ */
    HOME_PROXY_DIR,         /* proxy/ */
    HOME_SANDBOX_HOME_DIR,  /* sandbox-home/ */
    HOME_TRUST_LOCK_DIR,    /* trust.lock.d/ (reference mutex; we use HOME_LOCK_FILE) */
    /* files */
    HOME_MACHINE_MANIFEST, /* agentstack.toml */
    HOME_TRUST_JSON,       /* trust.json */
    HOME_LOCK_FILE,        /* .lock — the one writer lock */
    HOME_AUDIT_KEY,        /* audit/key */
    HOME_TRUST_LOG,        /* audit/trust.jsonl */
    HOME_CALLS_LOG,        /* audit/calls.jsonl */
    HOME_LOADS_LOG,        /* audit/loads.jsonl */
    HOME_SIGN_KEY,         /* keys/ed25519.key */
    HOME_SIGN_PUB,         /* keys/ed25519.pub */
    HOME_SOURCES_TOML,     /* sources.toml */
    HOME_STATE_JSON,       /* state.json */
    HOME_SESSIONS_JSON,    /* sessions.json */
    HOME_RECOGNITION_JSON, /* recognition.json */
    HOME_SECRETS_ENV,      /* secrets.env */
    HOME_PUBLISHERS,       /* publishers (trusted signing keys, one hex a line) */
    HOME_ENTRY_COUNT
};

/* The machine home's absolute path into out (replacing its content). */
int home_dir(strbuf *out, struct as_err *err);
/* The path of an entry (nothing is created). */
int home_path(enum home_entry e, strbuf *out, struct as_err *err);
/* Relative name of an entry inside the home ("audit/key"; "" for the root). */
const char *home_entry_name(enum home_entry e);
/* 1 if e names a directory. */
bool home_entry_is_dir(enum home_entry e);
/* Like home_path, and creates the directory (for a _DIR entry) or the
 * file's parent directory, each missing component 0700. */
int home_ensure(enum home_entry e, strbuf *out, struct as_err *err);
/* home_ensure for a sub-path below an entry directory ("logs", "<sha12>"):
 * out = <entry>/<sub>, created 0700. sub must be relative, '..'-free. */
int home_ensure_sub(enum home_entry dir, const char *sub, strbuf *out, struct as_err *err);

/* Atomically writes a state file entry (parents created 0700; a new file is
 * 0600; a symlink at the target is refused, since state under the machine
 * home is ours alone). Callers hold the writer lock (HOME_LOCK_FILE) when
 * the file is shared between processes. */
int home_write_file(enum home_entry e, const void *data, size_t len, struct as_err *err);

/* Reads and parses $AGENTSTACK_HOME/agentstack.toml as a raw TOML tree
 * (≤ 8 MiB, regular file). Returns NULL with *absent = 1 when there is no
 * file (err untouched); NULL with err set (file:line:col + hint naming the
 * file) when it cannot be used. This only parses: enforcement paths should
 * use manifest_load_machine() (manifest.h), which also validates every key. */
toml_value *home_machine_toml(int *absent, struct as_err *err);

#endif
