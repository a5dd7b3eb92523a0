/* The gradwire command line: what its files share (tools/cli/).
 *
 *   main.c     subcommand dispatch, --help, --version
 *   input.c    a FRAME argument's bytes: a file or stdin, binary or hex text
 *   inspect.c  gradwire inspect: header fields, checksums, decoded statistics
 *   codecs.c   gradwire codecs: every codec's parameters, ranges and defaults
 *   bench.c    gradwire bench: a quick timing of a few codecs
 *   demo.c     gradwire demo: the README's worker/server toy quadratic
 *   util.c     argument parsing and float formatting helpers
 *
 * bindings/python/gradwire/cli.py implements the same commands over the Python
 * binding with the same output; tests/cli_test.sh compares the two. */
#ifndef GRADWIRE_CLI_H
#define GRADWIRE_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit statuses: 0 success, 1 a frame is bad (inspect), 2 usage or I/O error. */
#define CLI_OK 0
#define CLI_BAD 1
#define CLI_USAGE 2

int cmd_inspect(int argc, char **argv);
int cmd_codecs(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_demo(int argc, char **argv);

/* ---- input.c */
typedef struct cli_input {
    unsigned char *data; /* malloc'd; never NULL after a successful read */
    size_t size;
    int hex;             /* 1: the file was hex text (tests/vectors format) */
} cli_input;
/* Read `path` ("-": stdin). Returns 0, or prints why to stderr and returns -1. */
int cli_read_input(const char *path, cli_input *in);
void cli_input_free(cli_input *in);

/* ---- util.c */
/* 1 if `arg` is "-h" or "--help". */
int cli_is_help(const char *arg);
/* Parse a non-negative integer with an optional K / M / G suffix (powers of
 * 1024) into *value; 0 on success, -1 (with a message naming `what`) else. */
int cli_parse_count(const char *text, const char *what, uint64_t *value);
/* The float whose bit pattern is `bits`. */
float cli_f32_from_bits(uint32_t bits);
/* Seconds from a monotonic clock. */
double cli_now(void);

#endif /* GRADWIRE_CLI_H */
