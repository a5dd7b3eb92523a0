/* gradwire: the command line (docs/cli.md). Subcommands in their own files;
 * bindings/python/gradwire/cli.py is the same command over the Python binding. */
#include <string.h>

#include <gradwire.h>

#include "cli.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command commands[] = {
    {"inspect", cmd_inspect, "validate and describe frames (files, '-' for stdin, hex text)"},
    {"codecs", cmd_codecs, "every codec with its parameters, ranges and defaults"},
    {"bench", cmd_bench, "a quick timing of a few codecs (the real suite: scripts/bench.sh)"},
    {"demo", cmd_demo, "two-way compressed SGD on a toy quadratic with a few codecs"},
};

static void usage(FILE *out)
{
    size_t i;
    fprintf(out, "usage: gradwire [--version] [--help] COMMAND [ARGS]\n\ncommands:\n");
    for (i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        fprintf(out, "  %-8s  %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\n'gradwire COMMAND --help' describes a command (docs/cli.md).\n");
}

int main(int argc, char **argv)
{
    size_t i;
    if (argc < 2) {
        usage(stderr);
        return CLI_USAGE;
    }
    if (cli_is_help(argv[1])) {
        usage(stdout);
        return CLI_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("gradwire %s (wire format %d)\n", gw_version_string(), GW_FRAME_FORMAT_VERSION);
        return CLI_OK;
    }
    for (i = 0; i < sizeof commands / sizeof commands[0]; ++i)
        if (strcmp(argv[1], commands[i].name) == 0) return commands[i].run(argc - 2, argv + 2);
    fprintf(stderr, "gradwire: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return CLI_USAGE;
}
