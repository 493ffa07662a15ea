/*
 * strbuf — a growable byte buffer that is always NUL-terminated.
 *
 * Modelled on git's strbuf. buf is never NULL after sb_init or SB_INIT is
 * used with any sb_* call; len excludes the terminating NUL; bytes may
 * include NUL. sb_release frees and resets to the initial state.
 */
#ifndef AS_BASE_STRBUF_H
#define AS_BASE_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

typedef struct strbuf {
    char *buf;
    size_t len;
    size_t alloc;
} strbuf;

extern char sb_empty[1];
#define SB_INIT                                                                                    \
    {                                                                                              \
        sb_empty, 0, 0                                                                             \
    }

void sb_init(strbuf *sb, size_t hint);
void sb_release(strbuf *sb);
/* Overwrites the bytes with zeros before freeing (for secrets). */
void sb_release_secure(strbuf *sb);
void sb_grow(strbuf *sb, size_t extra);
void sb_setlen(strbuf *sb, size_t len);
static inline void sb_reset(strbuf *sb)
{
    sb_setlen(sb, 0);
}
void sb_add(strbuf *sb, const void *data, size_t n);
void sb_adds(strbuf *sb, const char *s);
void sb_addc(strbuf *sb, char c);
void sb_addf(strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vaddf(strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Appends n copies of c. */
void sb_addchars(strbuf *sb, char c, size_t n);
/* Returns the buffer (caller frees) and resets sb. Never NULL. */
char *sb_detach(strbuf *sb, size_t *len);
/* Removes trailing ASCII whitespace. */
void sb_rtrim(strbuf *sb);

/* Appends s as one POSIX shell word in single quotes, each ' written '\''. */
void sb_add_shquoted(strbuf *sb, const char *s);
/* Appends s as one shell word: as it is when it is not empty and holds only
 * ASCII letters, digits and -_./=:,+@%, else as sb_add_shquoted. The one
 * rule for every command line shown to a user or written into a file. */
void sb_add_shword(strbuf *sb, const char *s);

#endif
