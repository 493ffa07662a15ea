/*
 * json_out — the one way a command prints its --json document
 * (docs/json.md).
 *
 * Why: a script reads every command's JSON the same way: one document on
 * stdout that opens with {"schema_version": 1, "command": "<name>"}, and,
 * when the command fails, still one document — {"ok": false, "exit_code",
 * "errors": [...]} — with the exit code it has without --json. Commands
 * build their body on cli_json_doc() and print it with cli_json_print();
 * main() turns the errors a failing command reported into the error
 * document when it printed none.
 *
 * Guarantees:
 *  - JSON mode is on only for a command whose spec says CLI_JSON_ERRORS and
 *    whose line holds --json before any "--" (main.c decides, before the
 *    command parses, so a usage error is a document too);
 *  - at most one document per run: after cli_json_print, cli_json_finish
 *    prints nothing;
 *  - no colour (a document is built from data, never from terminal text),
 *    no prompt (a command in JSON mode does not ask), and code points a
 *    terminal would hide are written as \uXXXX (term_json_visible);
 *  - error messages are the text the command printed on stderr, which never
 *    holds a secret value, only ${REF} names.
 */
#ifndef AS_CLI_JSON_OUT_H
#define AS_CLI_JSON_OUT_H

#include <stdbool.h>
#include <stdio.h>

#include <jansson.h>

struct cli_ctx;

/* main, first: keep every error reported (cli_error_sink), for the
 * document of a command that prints its own. */
void cli_json_capture_errors(void);
/* main: JSON mode for command (a static name). */
void cli_json_enable(const char *command);
/* Whether JSON mode is on. */
bool cli_json_on(void);
/* {"schema_version": 1, "command": command, "ok": ok}: the envelope a
 * command adds its fields to. */
json_t *cli_json_doc(const char *command, bool ok);
/* Prints doc (stolen) on stdout, pretty, with a final newline. */
void cli_json_print(json_t *doc);
/* Prints doc (stolen) as the outcome of a run that returns rc: when rc is
 * not 0, "ok" becomes false and "exit_code" and "errors" (what the command
 * reported, as in the error document) are added. */
void cli_json_print_result(json_t *doc, int rc);
/* Where a command in JSON mode sends the report it prints for people, so
 * stdout holds the document alone: a memory stream, wiped and freed by
 * cli_json_quiet_close. */
FILE *cli_json_quiet_open(void);
void cli_json_quiet_close(FILE *f);
/* For a command whose report is printed in many places (init, and the
 * connect it may run), and for -q/--quiet: stdout itself is sent to
 * /dev/null until release (main releases it after the command), so only a
 * document reaches it. -1 when it cannot be (init then refuses --json
 * rather than mix text into the document). */
int cli_stdout_hold(void);
void cli_stdout_release(void);
/* main, after the command returned rc: in JSON mode, when rc != 0 and no
 * document was printed, the error document. Returns rc. */
int cli_json_finish(int rc);
/* -q/--quiet for a command that changes things: the report of what it
 * changed is held back (cli_stdout_hold); errors stay on stderr, and a
 * --json document is kept (it is the data asked for). */
void cli_quiet_report(const struct cli_ctx *ctx, bool json);

#endif
