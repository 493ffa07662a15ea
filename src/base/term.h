/*
 * term — terminal helpers.
 *
 * Colour is used only when the stream is a terminal, never when NO_COLOR is
 * set (to anything), and always when CLICOLOR_FORCE=1 (unless NO_COLOR).
 * Text that came from a file or a peer is passed through term_sanitize before
 * it reaches a terminal, so a hostile repository cannot move the cursor,
 * rewrite earlier lines or hide text.
 */
#ifndef AS_BASE_TERM_H
#define AS_BASE_TERM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "base/strbuf.h"

enum term_code { TERM_RESET, TERM_BOLD, TERM_DIM, TERM_RED, TERM_GREEN, TERM_YELLOW, TERM_CYAN };

/* 1 when colour should be used on fd (1 = stdout, 2 = stderr). */
int term_use_color(int fd);
/* The escape sequence for code, or "" when fd gets no colour. */
const char *term_color(int fd, enum term_code code);
/* 1 when fd is a terminal. */
int term_isatty(int fd);
/* THE display rule for text that came from a repository, a file or a peer
 * (commands, args, paths, names, URLs, snippets): appends s with every
 * code point a reader could not see, or that would move or break the
 * line, written as a visible escape instead — C0/C1 controls and DEL
 * (tab, newline and CR as \t \n \r, the others \u001b …), the hidden
 * set of term_hidden_label, variation selectors, and the spaces that are
 * not U+0020 (\u00a0, \u2002 …); astral ones as \U000e0041. Bytes that are
 * not UTF-8 become \xNN. Nothing is dropped, so two strings that differ
 * are never shown alike by a hidden character, and an ESC can never start
 * a sequence. The output is printable ASCII wherever the input was not
 * plain visible text, so sanitizing twice changes nothing. */
void term_sanitize(strbuf *out, const char *s, size_t len);
/* What a hidden code point is ("zero-width space", "bidi control",
 * "unicode tag character", …), or NULL for one people can see. The set:
 * the default-ignorable code points (zero-width characters, bidi marks,
 * embeddings, overrides and isolates, invisible operators, tag characters,
 * fillers, …; variation selectors excepted, which mark up the character
 * before them) plus the line and paragraph separators and the interlinear
 * annotation marks. The content scan, the gateway's text filter and the
 * SKILL.md description cleaner all decide with it. */
const char *term_hidden_label(uint32_t cp);
/* Appends the escape term_sanitize writes for cp. */
void term_escape_cp(strbuf *out, uint32_t cp);
/* The same rule for JSON a person may read (`trust --preview`, `doctor
 * --json`): rewrites every code point term_sanitize would escape, in a
 * serialized JSON text, as its \uXXXX escape (a surrogate pair above
 * U+FFFF). The value a parser reads back is unchanged; a raw zero-width or
 * bidi character just never reaches the screen. Outside strings JSON is
 * ASCII, so only string contents change. */
void term_json_visible(strbuf *json);
/* The length of the terminal escape sequence at s[0] == ESC (n >= 1 bytes
 * left): CSI up to its final byte; OSC, DCS, APC, PM and SOS up to BEL or
 * ST (ESC \); nF up to its final byte; otherwise ESC and one byte. An
 * unterminated sequence runs to the end (n). Used by every sanitizer that
 * strips escapes, so they agree on where a sequence ends. */
size_t term_escape_len(const unsigned char *s, size_t n);
/* printf for text that carries untrusted strings: the format is the
 * program's own and printed as written; every %s argument (names, paths,
 * values read from a repository's files) goes through term_sanitize first,
 * so it cannot add an escape sequence or a line of its own, and a %c that
 * is a control becomes '?'. A precision on %s counts the raw bytes; the
 * width applies to the sanitized text. The colour sequences term_color
 * returns pass unchanged (recognised by address, so no string can pose as
 * one). %n is refused (consumed, nothing written). The sb_ form appends to
 * out; the others return what fprintf returns. */
void term_sbprintf(strbuf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void term_vsbprintf(strbuf *out, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
int term_fprintf(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* -q/--quiet (the CLI's global option): while set, term_fprintf drops what
 * it would print on stderr that is a warning ("warning: …") or progress
 * ("→ …"); errors and everything on stdout still print. */
void term_set_quiet(bool quiet);
bool term_is_quiet(void);
int term_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes s to f sanitized (fputs without a newline, NULL as ""). */
void term_fputs(const char *s, FILE *f);
/* Reads one line from the terminal without echo (for secrets). Returns 0,
 * or -1 when there is no terminal. The caller releases with sb_release_secure. */
int term_read_secret(const char *prompt, strbuf *out);

#endif
