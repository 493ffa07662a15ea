/*
 * help_topics — the concepts `agentstack help <topic>` explains: trust,
 * policy, lanes (`help topics` lists them).
 *
 * Why: a command's --help says how to call it; a person new to agentstack
 * first needs what a grant means, what the policy layers are and how a
 * project reaches each coding CLI. Each text is short and says only what
 * docs/trust.md, docs/policy.md and docs/adapters.md say, and names the
 * page that says more.
 *
 * Guarantees: the texts are the program's own (no untrusted input); a
 * topic name is one lower-case word; topics are not commands, so the
 * command inventory (`help --all --json`) is unchanged by them.
 */
#ifndef AS_CLI_HELP_TOPICS_H
#define AS_CLI_HELP_TOPICS_H

#include <stddef.h>

struct help_topic {
    const char *name;
    const char *summary; /* one line, for `help topics` */
    const char *text;    /* the whole text, ending in a newline */
};

/* The topics, ended by {NULL}. */
extern const struct help_topic help_topics[];

/* The topic named name, or NULL. */
const struct help_topic *help_topic_find(const char *name);

#endif
