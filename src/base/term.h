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
#include <stddef.h>
#include <stdio.h>

#include "base/strbuf.h"

enum term_code { TERM_RESET, TERM_BOLD, TERM_DIM, TERM_RED, TERM_GREEN, TERM_YELLOW, TERM_CYAN };

/* 1 when colour should be used on fd (1 = stdout, 2 = stderr). */
int term_use_color(int fd);
/* The escape sequence for code, or "" when fd gets no colour. */
const char *term_color(int fd, enum term_code code);
/* 1 when fd is a terminal. */
int term_isatty(int fd);
/* Appends s with C0/C1 controls (except tab), DEL, ESC sequences and
 * bidirectional / zero-width code points replaced by '?' or removed;
 * invalid UTF-8 bytes become U+FFFD. */
void term_sanitize(strbuf *out, const char *s, size_t len);
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
int term_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes s to f sanitized (fputs without a newline, NULL as ""). */
void term_fputs(const char *s, FILE *f);
/* Reads one line from the terminal without echo (for secrets). Returns 0,
 * or -1 when there is no terminal. The caller releases with sb_release_secure. */
int term_read_secret(const char *prompt, strbuf *out);

#endif
