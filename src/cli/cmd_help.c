/*
 * agentstack help [<command> [<subcommand>]] [--all] [--json] [--man DIR] — the list of
 * commands that work, one command's help, or the whole inventory. All of it
 * comes from the command tables (commands.c, each cmd_*.c), so what help
 * lists is what runs; docs/commands.md is checked against --all --json.
 *
 * `help <topic>` explains a concept (cli/help_topics.h); `help topics`
 * lists them. A topic that is also a command (trust, policy) follows that
 * command's usage, so `help <command>` still opens with its usage line.
 * An unknown word is a usage error naming the closest command or topic.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/help_topics.h"
#include "cli/manpage.h"

struct help_args {
    bool all, json;
    const char *man;
};

#define CLI_ARGS struct help_args
static const struct cli_option help_options[] = {
    {OPT_BOOL("all", 0, all, "every command and subcommand, hidden spellings too")},
    {OPT_BOOL("json", 0, json,
              "the inventory (commands, subcommands, aliases, options) as one JSON document")},
    {OPT_STRING("man", 0, man, "DIR",
                "write the man pages, agentstack(1) and agentstack-<command>(1), into DIR")},
    {OPT_END},
};
#undef CLI_ARGS

const struct cli_spec cmd_help_spec = {
    .name = "help",
    .fn = cmd_help,
    .summary = "show commands, or one command's usage",
    .synopsis = CLI_LINES("help [<command> [<subcommand>]]", "help <topic>", "help topics",
                          "help --all [--json]", "help --man DIR"),
    .description = "Topics explain a concept: trust, policy, lanes (`help topics` lists "
                   "them); for trust and policy the text follows the command's usage.",
    .options = help_options,
    .examples = CLI_LINES("agentstack help lock", "agentstack help lib sync",
                          "agentstack help lanes", "agentstack help --all --json"),
};

/* The options accepted only before the command. */
struct top_args {
    bool version;
};
#define CLI_ARGS struct top_args
static const struct cli_option top_options[] = {
    {OPT_BOOL("version", 'V', version, "print the version (before any command)")},
    {OPT_END},
};
#undef CLI_ARGS

static int name_width(void)
{
    int width = 0; /* the name column fits the longest listed name */
    for (const struct cli_spec *const *c = cli_commands; *c; c++)
        if (!((*c)->flags & CLI_HIDDEN) && (int)strlen((*c)->name) > width)
            width = (int)strlen((*c)->name);
    return width;
}

static void print_overview(void)
{
    printf("agentstack — one reviewed, portable, governed setup for AI coding agents\n\n"
           "usage: agentstack [--manifest-dir DIR] <command> [<args>]\n\n"
           "commands:\n");
    int width = name_width();
    for (const struct cli_spec *const *c = cli_commands; *c; c++)
        if (!((*c)->flags & CLI_HIDDEN))
            printf("  %-*s  %s\n", width, (*c)->name, (*c)->summary);
    cli_print_options("global options (anywhere on the line)", cli_global_options, NULL, stdout);
    printf("  -h, --help                show help (of the command it follows)\n");
    printf("  -V, --version             print the version (before any command)\n");
    printf("\nrun 'agentstack <command> --help' for a command's usage,\n"
           "'agentstack help --all' for every command and subcommand,\n"
           "'agentstack help topics' for the concepts (trust, policy, lanes).\n");
}

static void print_all(const struct cli_spec *spec, int depth)
{
    printf("%*s%-*s  %s%s%s%s\n", 2 * depth, "", 22 - 2 * depth, spec->name,
           spec->summary ? spec->summary : "", spec->alias_of ? " (another spelling of " : "",
           spec->alias_of ? spec->alias_of : "", spec->alias_of ? ")" : "");
    for (const struct cli_spec *const *s = spec->subs; s && *s; s++)
        print_all(*s, depth + 1);
}

static json_t *inventory(void)
{
    json_t *root = json_object(), *cmds = json_array();
    json_object_set_new(root, "schema_version", json_integer(1));
    json_object_set_new(root, "program", json_string("agentstack"));
    json_object_set_new(root, "global_options", cli_options_json(cli_global_options, NULL));
    json_object_set_new(root, "top_options", cli_options_json(top_options, NULL));
    for (const struct cli_spec *const *c = cli_commands; *c; c++)
        json_array_append_new(cmds, cli_spec_json(*c));
    json_object_set_new(root, "commands", cmds);
    return root;
}

static void print_topics(void)
{
    printf("topics (agentstack help <topic>):\n");
    for (const struct help_topic *t = help_topics; t->name; t++)
        printf("  %-8s  %s\n", t->name, t->summary);
}

/* "unknown command or topic 'x'", with the closest command or topic. */
static int unknown_word(const char *word)
{
    const char *names[160];
    size_t n = 0;
    for (const struct cli_spec *const *c = cli_commands; *c && n < 150; c++)
        if (!((*c)->flags & CLI_HIDDEN))
            names[n++] = (*c)->name;
    for (const struct help_topic *t = help_topics; t->name && n < 159; t++)
        names[n++] = t->name;
    names[n++] = "topics";
    const char *best = cli_did_you_mean(word, names, n);
    if (best)
        return cli_usage_error("help", "unknown command or topic '%s'; did you mean '%s'?", word,
                               best);
    return cli_usage_error("help", "unknown command or topic '%s' (agentstack help topics)", word);
}

static void print_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    printf("%s\n", s);
    free(s);
    json_decref(j);
}

int cmd_help(int argc, char **argv, struct cli_ctx *ctx)
{
    struct help_args a = {0};
    int rc = cli_parse(&cmd_help_spec, &argc, argv, ctx, &a);
    if (rc != CLI_CONTINUE)
        return rc;
    if (a.man) {
        if (argc > 1)
            return cli_usage_error("help", "--man takes no command ('%s')", argv[1]);
        struct as_err err = AS_ERR_INIT;
        int n = man_write_pages(a.man, &err);
        if (n < 0) {
            cli_error(&err);
            return EXIT_FAIL;
        }
        printf("wrote %d man pages to %s\n", n, a.man);
        return EXIT_OK;
    }
    if (argc < 2) {
        if (a.json) {
            print_json(inventory());
        } else if (a.all) {
            for (const struct cli_spec *const *c = cli_commands; *c; c++)
                print_all(*c, 0);
        } else {
            print_overview();
        }
        return EXIT_OK;
    }
    if (argc > 3)
        return cli_usage_error("help", "unexpected argument '%s'", argv[3]);
    const struct cli_spec *c = cli_find(argv[1]);
    const struct help_topic *topic = argc == 2 ? help_topic_find(argv[1]) : NULL;
    if (!c && argc == 2 && strcmp(argv[1], "topics") == 0) {
        if (a.json || a.all)
            return cli_usage_error("help", "--all and --json list commands, not topics");
        print_topics();
        return EXIT_OK;
    }
    if (!c && topic) {
        if (a.json || a.all)
            return cli_usage_error("help", "--all and --json list commands, not topics");
        fputs(topic->text, stdout);
        return EXIT_OK;
    }
    if (!c)
        return unknown_word(argv[1]);
    if (argc > 2) {
        const struct cli_spec *sub = c->subs ? cli_find_sub(c, argv[2]) : NULL;
        if (!sub)
            return cli_usage_error("help", "'%s' has no subcommand '%s'", c->name, argv[2]);
        c = sub;
    }
    if (a.json) {
        print_json(cli_spec_json(c));
    } else {
        cli_print_help(c, stdout);
        if (topic) /* the concept after the command's usage */
            printf("\n%s", topic->text);
    }
    return EXIT_OK;
}
