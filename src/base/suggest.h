/*
 * suggest — "did you mean …?" for every place that names what it expected.
 *
 * One implementation of the bounded edit distance, so every unknown key,
 * command, adapter id or preset is suggested by the same rule: the closest
 * candidate within edit distance 2 (first wins on a tie), or none.
 */
#ifndef AS_BASE_SUGGEST_H
#define AS_BASE_SUGGEST_H

#include <stddef.h>

/* Levenshtein distance between a and b; any value above cap (and any string
 * longer than 255 bytes) is reported as cap + 1. */
size_t suggest_distance(const char *a, const char *b, size_t cap);
/* The closest of n candidates within distance 2, or NULL. n == SUGGEST_NULL_TERMINATED
 * means cands ends with a NULL entry. */
#define SUGGEST_NULL_TERMINATED ((size_t)-1)
const char *suggest_closest(const char *word, const char *const *cands, size_t n);

#endif
