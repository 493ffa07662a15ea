/*
 * complete — what a shell should offer at the cursor, answered from the
 * command table (commands.c) and each command's option table, the same ones
 * the parser and --help read (docs/building.md, "Shell completions").
 *
 * Why: three shells' scripts would otherwise each keep a copy of every
 * command, subcommand and flag, and drift. Here the scripts are thin glue
 * (cmd_completions.c): they hand the words before the cursor to
 * `agentstack completions --complete -- WORD...` and offer what it prints.
 *
 * Guarantees:
 *  - candidates are exactly the visible commands, subcommands and options
 *    of the (sub)command being typed (hidden spellings and hidden options
 *    are never offered), plus the values an option or argument takes:
 *    choices from its table, adapter ids from the registry, toolset,
 *    server and skill names from the manifest the line would use;
 *  - a name read from a manifest or a drop-in is offered only when it is
 *    plain ([A-Za-z0-9._+@/-], at most 128 bytes, not starting with '-'):
 *    a name holding a shell expansion, a quote, a space or a terminal
 *    escape is dropped, so completing never runs or prints what a project
 *    wrote (tests/e2e/test_completions.py, hostile names);
 *  - reading the manifest only parses it: nothing runs, nothing is written,
 *    and any error means no dynamic candidates (never a message).
 */
#ifndef AS_CLI_COMPLETE_H
#define AS_CLI_COMPLETE_H

#include <stdio.h>

/* words[0] is the program, words[n-1] the word being completed (possibly
 * empty). Prints one candidate a line, "word" or "word\tdescription", or a
 * single line ":files" / ":dirs" when the shell should complete paths.
 * Returns 0. */
int complete_words(int n, char **words, FILE *out);

#endif
