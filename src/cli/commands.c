/*
 * The command table. A command appears here only when it works end to end;
 * aliases (the 0.19 spellings) are hidden from `help` but callable.
 */
#include <string.h>

#include "cli/cli.h"

int cmd_lock(int argc, char **argv, struct cli_ctx *ctx);
int cmd_trust(int argc, char **argv, struct cli_ctx *ctx);
int cmd_sign(int argc, char **argv, struct cli_ctx *ctx);
int cmd_verify(int argc, char **argv, struct cli_ctx *ctx);
int cmd_install(int argc, char **argv, struct cli_ctx *ctx);
int cmd_apply(int argc, char **argv, struct cli_ctx *ctx);
int cmd_restore(int argc, char **argv, struct cli_ctx *ctx);
int cmd_use(int argc, char **argv, struct cli_ctx *ctx);
int cmd_session(int argc, char **argv, struct cli_ctx *ctx);
int cmd_connect(int argc, char **argv, struct cli_ctx *ctx);
int cmd_gateway(int argc, char **argv, struct cli_ctx *ctx);
int cmd_undo(int argc, char **argv, struct cli_ctx *ctx);
int cmd_diff(int argc, char **argv, struct cli_ctx *ctx);
int cmd_instructions(int argc, char **argv, struct cli_ctx *ctx);
int cmd_audit(int argc, char **argv, struct cli_ctx *ctx);
int cmd_run(int argc, char **argv, struct cli_ctx *ctx);
int cmd_report(int argc, char **argv, struct cli_ctx *ctx);
int cmd_runs(int argc, char **argv, struct cli_ctx *ctx);
int cmd_kill(int argc, char **argv, struct cli_ctx *ctx);
int cmd_guard(int argc, char **argv, struct cli_ctx *ctx);
int cmd_doctor(int argc, char **argv, struct cli_ctx *ctx);
int cmd_mcp(int argc, char **argv, struct cli_ctx *ctx);
int cmd_demo_server(int argc, char **argv, struct cli_ctx *ctx);
int cmd_policy(int argc, char **argv, struct cli_ctx *ctx);
int cmd_lib(int argc, char **argv, struct cli_ctx *ctx);
int cmd_add(int argc, char **argv, struct cli_ctx *ctx);
int cmd_upgrade(int argc, char **argv, struct cli_ctx *ctx);
int cmd_remove(int argc, char **argv, struct cli_ctx *ctx);
int cmd_search(int argc, char **argv, struct cli_ctx *ctx);
int cmd_up(int argc, char **argv, struct cli_ctx *ctx);
int cmd_secret(int argc, char **argv, struct cli_ctx *ctx);
int cmd_init(int argc, char **argv, struct cli_ctx *ctx);
int cmd_bootstrap(int argc, char **argv, struct cli_ctx *ctx);
int cmd_adopt(int argc, char **argv, struct cli_ctx *ctx);
int cmd_status(int argc, char **argv, struct cli_ctx *ctx);
int cmd_self(int argc, char **argv, struct cli_ctx *ctx);

const struct cli_command cli_commands[] = {
    {"help", cmd_help, "show commands, or one command's usage",
     "usage: agentstack help [<command>]\n", 0},
    {"version", cmd_version, "print the version",
     "usage: agentstack version\n       agentstack --version\n", 0},
    {"lock", cmd_lock, "pin every skill, server, instruction and executable in agentstack.lock",
     "usage: agentstack lock [--write] [--toolset NAME] [--update [NAME]]\n"
     "       agentstack lock --upgrade (PACK | --all) [--with-instructions] [--yes] --write\n"
     "--update moves git sources to the manifest's rev (else the upstream head).\n",
     0},
    {"trust", cmd_trust, "review and approve a project's exact bytes on this machine",
     "usage: agentstack trust [PATH] [--preview | --list | --revoke |\n"
     "                        --yes --consented D [--allow-flagged]]\n",
     0},
    {"sign", cmd_sign, "sign agentstack.lock with this machine's ed25519 key",
     "usage: agentstack sign [--print-key-only]\n", 0},
    {"verify", cmd_verify, "check agentstack.lock.sig against a public key",
     "usage: agentstack verify (--pubkey HEX | --publishers FILE) [--signature HEX]\n", 0},
    {"install", cmd_install, "resolve skills against agentstack.lock (--locked: check only)",
     "usage: agentstack install [--locked] [--allow-flagged]\n", 0},
    {"apply", cmd_apply, "render the manifest's servers into every CLI's own config",
     "usage: agentstack apply [--target ID]... [--toolset NAME] [--scope global|project]\n"
     "                        [--dry-run] [--write] [--allow-unresolved] [--prune-foreign]\n"
     "                        [--no-gitignore] [-v]\n"
     "Previews each target as a diff; --write writes atomically, backs up and records an undo.\n",
     0},
    {"diff", cmd_diff, "compare each CLI's files with the manifest (managed, foreign, hand-edited)",
     "usage: agentstack diff [--target ID]... [--toolset NAME] [--scope global|project] [-v]\n"
     "                       [--json]\n"
     "Writes nothing; exit 0. Reconcile with: agentstack apply --write\n",
     0},
    {"instructions", cmd_instructions, "compile [instructions] into each CLI's instruction file",
     "usage: agentstack instructions [--target ID]... [--toolset NAME] [--scope global|project]\n"
     "                               [--dry-run] [--write] [-v]\n"
     "Previews each file's managed region; --write writes, backs up and records an undo.\n",
     0},
    {"restore", cmd_restore, "undo a recorded write byte for byte",
     "usage: agentstack restore [ID | ADAPTER | --last] [--write] [--list] [--json]\n", 0},
    {"undo", cmd_undo, "the recorded writes as a timeline; go back to before one",
     "usage: agentstack undo [--to N] [--write] [--json]\n"
     "Lists the timeline (1 = oldest); --to N reverts write N and everything newer.\n",
     0},
    {"use", cmd_use, "activate a toolset: its servers and skills in every CLI",
     "usage: agentstack use [TOOLSET] [--target ID]... [--scope global|project] [--write]\n"
     "                      [--allow-unresolved] [--prune-foreign] [--list [--json]]\n",
     0},
    {"session", cmd_session, "activate a toolset until `session end` puts everything back",
     "usage: agentstack session start [TOOLSET] [--target ID]... [--scope global|project]\n"
     "       agentstack session end [--all]\n"
     "       agentstack session list [--json]\n",
     0},
    {"connect", cmd_connect,
     "register the live gateway (agentstack mcp --auto-project) in every CLI",
     "usage: agentstack connect [CLI...] [--all] [--transparent] [--command PATH] [--write]\n"
     "Previews each CLI's config change; --write registers the gateway (idempotent).\n"
     "0.19 spelling: agentstack gateway connect | gateway disconnect\n",
     0},
    {"gateway", cmd_gateway, "0.19 spelling of connect: gateway connect | gateway disconnect",
     "usage: agentstack gateway connect [CLI...] [--all] [--transparent] [--command PATH] "
     "[--write]\n       agentstack gateway disconnect [CLI...] [--all] [--write]\n",
     1},
    {"audit", cmd_audit, "verify the evidence chains; summarize brokered calls",
     "usage: agentstack audit --verify [LOG...]\n"
     "       agentstack audit --calls [--all] [--json]\n",
     0},
    {"run", cmd_run, "run a CLI gated (default), confined (--sandbox, --lockdown) or unprotected",
     "usage: agentstack run <cli-or-command> [--locked | --unprotected | --sandbox | --lockdown]\n"
     "                      [--plan] [--toolset T | --profile T] [--scope project|global]\n"
     "                      [--keep] [--prompt TEXT] [-- ARG...]\n"
     "Default (--locked): trust, lock and policy gates, the toolset frozen into a grant, the\n"
     "CLI's MCP config given the gateway entry for the run and reverted at exit.\n"
     "--plan shows trust state, mode, mounts, the gates and the exact command; nothing is "
     "started.\n"
     "--prompt runs the CLI headless (its adapter's headless args) under the same gates.\n",
     0},
    {"report", cmd_report, "show a run's flight record: posture, egress decisions, exit",
     "usage: agentstack report <run-id> [--json]\n", 0},
    {"runs", cmd_runs, "list recorded runs, newest first (--live: the ones still going)",
     "usage: agentstack runs [--live] [--json]\n", 0},
    {"kill", cmd_kill, "stop a live run: SIGTERM to its tree, 2 s, then SIGKILL",
     "usage: agentstack kill <run-id> [--force]\n", 0},
    {"mcp", cmd_mcp, "serve the live MCP gateway on stdio (brokered, policy-checked, audited)",
     "usage: agentstack mcp [--auto-project] [--transparent] [--manifest-dir DIR]\n", 0},
    {"demo-server", cmd_demo_server, "the demo's stdio MCP server (echo, secret_read, delete_all)",
     "usage: agentstack demo-server\n", 1},
    {"doctor", cmd_doctor, "check this project on this machine; --ci is the pipeline gate",
     "usage: agentstack doctor [--ci] [--deep] [--all] [--json]\n"
     "  --ci    = --all --deep; exit 1 on lock drift, policy violations, unresolved secrets\n"
     "          and hidden Unicode; never prompts, never reads a keychain, writes nothing\n",
     0},
    {"guard", cmd_guard, "host guard: judge agents' tool calls before they run",
     "usage: agentstack guard test <command…>\n"
     "       agentstack guard status\n"
     "       agentstack guard install [--write]\n"
     "       agentstack guard uninstall\n"
     "       agentstack guard check [--protocol claude|codex|gemini|cursor|copilot|antigravity|"
     "windsurf]\n"
     "         (the hook entry the CLIs call; reads the hook JSON on stdin)\n",
     0},
    {"policy", cmd_policy, "machine floor + project policy: status, explain, test, presets",
     "usage: agentstack policy status [--json]\n"
     "       agentstack policy explain <server> [--json]\n"
     "       agentstack policy test tool|egress|secret <server> <subject> [--port N]\n"
     "       agentstack policy test path <path> | workspace\n"
     "       agentstack policy ruleset\n"
     "       agentstack policy preset [<name> [--write]]  (developer compatible locked-down ci)\n",
     0},
    {"lib", cmd_lib, "the central library: sources, list, add, remove, trash, sync over git",
     "usage: agentstack lib sources | list [--json]\n"
     "       agentstack lib link <path> [--name N] [--first] [--note T] [--write]\n"
     "       agentstack lib unlink <name> [--write] | reorder <name>... [--write]\n"
     "       agentstack lib add <skill-dir> [--name N] [--replace] [--allow-flagged] [--write]\n"
     "       agentstack lib add-server <name> (--file F | --from-manifest) [--replace] [--write]\n"
     "       agentstack lib remove|remove-server|remove-hook|remove-extension <name> [--write]\n"
     "       agentstack lib trash [--restore ID [--replace] | --empty [--id ID]] [--write]\n"
     "       agentstack lib new <name> | pack-init [name]\n"
     "       agentstack lib sync [--source N] [--init] [--remote URL] [--status] [--message M]\n"
     "                           [--allow-secrets]\n",
     0},
    {"add", cmd_add, "install a pack from git: servers + skills, secrets stay ${REF}s",
     "usage: agentstack add from git:<owner>/<repo>[@<tag>][#<subdir>] [--toolset N]\n"
     "                           [--with-instructions] [--write]\n"
     "       agentstack add skill <./dir | owner/repo[@skill][#ref] | git URL> [--skill S]\n"
     "                  [--list] [--rev R] [--subpath D] [--name N] [--toolset T]\n"
     "                  [--allow-flagged] [--write]\n"
     "git:owner/repo is https://github.com/owner/repo; any other git URL is written in full.\n",
     0},
    {"upgrade", cmd_upgrade, "upgrade an installed pack: preview, then re-install and re-pin",
     "usage: agentstack upgrade <pack> [--yes] [--with-instructions] [--write]\n", 0},
    {"remove", cmd_remove, "remove a pack (or a server/skill entry) from the project, re-pinned",
     "usage: agentstack remove <pack|server|skill> [--write]\n", 0},
    {"search", cmd_search, "find skills, servers and packs in the library and installed packs",
     "usage: agentstack search [query] [--all] [--json]\n", 0},
    {"up", cmd_up, "set up a second machine: receive the library, install, list what is left",
     "usage: agentstack up [--library <git-url>] [--toolset N] [--targets ID...] [--write]\n"
     "                     [--json]\n",
     0},
    {"secret", cmd_secret, "store, read (masked), list and remove secrets on this machine",
     "usage: agentstack secret set NAME [--stdin] [--store keychain|file | --env-file]\n"
     "       agentstack secret get NAME [--reveal]\n"
     "       agentstack secret list [--json]\n"
     "       agentstack secret rm NAME [--store keychain|file | --env-file]\n"
     "set prompts without echo on a terminal; the OS keychain is the default store.\n",
     0},
    {"init", cmd_init, "import the servers, skills and secrets your CLIs already have",
     "usage: agentstack init [--yes] [--dry-run] [--secrets keychain|env|file|skip]\n"
     "                       [--no-keychain] [--include-tool-managed] [--force] [--global]\n"
     "                       [--connect] [-v]\n"
     "Reads each detected CLI's config (never changes it); inline secrets become ${REF}s.\n",
     0},
    {"bootstrap", cmd_bootstrap,
     "preflight: CLIs installed, secrets and skills missing, what "
     "apply would change",
     "usage: agentstack bootstrap [--json]\n"
     "Read-only; ends with one Next: action.\n",
     0},
    {"adopt", cmd_adopt, "pull hand edits of a CLI's native config back into the manifest",
     "usage: agentstack adopt [--target ID]... [--scope project|global] [--write]\n"
     "                        [--secrets keychain|env|file|skip] [--no-keychain]\n"
     "Previews what it would adopt; --write edits only the affected manifest keys.\n",
     0},
    {"status", cmd_status, "readiness at a glance, and the one next action",
     "usage: agentstack status [--json] [--verbose] [--short]\n"
     "--short is what bare `agentstack` prints.\n",
     0},
    {"self", cmd_self, "put this binary on your PATH (a symlink in ~/.local/bin or --prefix)",
     "usage: agentstack self link [--prefix DIR] [--force]\n"
     "Links into --prefix, $AGENTSTACK_PREFIX, a writable /usr/local/bin, else ~/.local/bin;\n"
     "idempotent; a regular file there is replaced only with --force.\n",
     0},
    {NULL, NULL, NULL, NULL, 0},
};

const struct cli_command *cli_find(const char *name)
{
    for (const struct cli_command *c = cli_commands; c->name; c++)
        if (strcmp(c->name, name) == 0)
            return c;
    return NULL;
}
