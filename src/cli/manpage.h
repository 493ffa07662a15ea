/*
 * manpage — agentstack(1) and agentstack-<command>(1), written from the
 * command table (commands.c) and each command's option table, the tables
 * the parser and --help read, so a page cannot document an option the
 * binary lacks or miss one it has (docs/building.md, "Man pages").
 *
 * Guarantees: one page per listed command, plus agentstack(1) naming them
 * all; subcommands are sections of their command's page; hidden commands
 * and hidden options get none; every byte of table text is escaped for
 * roff (a leading '.', backslashes, dashes, non-ASCII as \[uXXXX]), so
 * `groff -man -ww` renders each page without a warning
 * (tests/e2e/test_man_pages.py). Each page is written to a temporary name
 * and renamed, so a page is whole or absent.
 */
#ifndef AS_CLI_MANPAGE_H
#define AS_CLI_MANPAGE_H

#include "base/err.h"

/* Writes every page into dir (an existing directory); the number written,
 * or -1 with err set. */
int man_write_pages(const char *dir, struct as_err *err);

#endif
