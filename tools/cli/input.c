/* A FRAME argument's bytes: a file path or "-" for stdin; binary, or hex text
 * as in tests/vectors (lines starting with '#' are comments, then hex digits
 * and whitespace). A binary frame starts with "GWFR", which is not hex, so
 * the two cannot be confused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static int hex_value(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* If data[0..size) is hex text with at least one digit and an even count,
 * rewrite it in place as the bytes it spells and return their count; else
 * return (size_t)-1 and leave it as it was. */
static size_t hex_decode(unsigned char *data, size_t size)
{
    size_t i = 0, digits = 0, out = 0;
    int line_start = 1, hi = -1;
    while (i < size) { /* first pass: is it hex text at all? */
        unsigned char c = data[i];
        if (line_start && c == '#') {
            while (i < size && data[i] != '\n') ++i;
            continue;
        }
        line_start = c == '\n';
        if (hex_value(c) >= 0) ++digits;
        else if (!is_space(c)) return (size_t)-1;
        ++i;
    }
    if (digits == 0 || digits % 2) return (size_t)-1;
    line_start = 1;
    for (i = 0; i < size; ++i) { /* second pass: write the bytes (out < i always) */
        unsigned char c = data[i];
        if (line_start && c == '#') {
            while (i < size && data[i] != '\n') ++i;
            continue; /* the loop's ++i steps over the '\n'; line_start stays 1 */
        }
        line_start = c == '\n';
        if (hex_value(c) < 0) continue;
        if (hi < 0) {
            hi = hex_value(c);
        } else {
            data[out++] = (unsigned char)(hi << 4 | hex_value(c));
            hi = -1;
        }
    }
    return out;
}

int cli_read_input(const char *path, cli_input *in)
{
    FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
    size_t cap = 4096, size = 0, n;
    unsigned char *data;
    memset(in, 0, sizeof *in);
    if (!f) {
        fprintf(stderr, "gradwire: %s: %s\n", path, strerror(errno));
        return -1;
    }
    data = (unsigned char *)malloc(cap);
    while (data) {
        if (size == cap) {
            unsigned char *bigger = cap > ((size_t)-1) / 2 ? NULL : (unsigned char *)realloc(data, cap * 2);
            if (!bigger) {
                free(data);
                data = NULL;
                break;
            }
            data = bigger;
            cap *= 2;
        }
        n = fread(data + size, 1, cap - size, f);
        size += n;
        if (n == 0) break;
    }
    if (!data || ferror(f)) {
        fprintf(stderr, "gradwire: %s: %s\n", path, data ? "read error" : "out of memory");
        free(data);
        if (f != stdin) fclose(f);
        return -1;
    }
    if (f != stdin) fclose(f);
    in->data = data;
    in->size = size;
    n = hex_decode(data, size);
    if (n != (size_t)-1) {
        in->size = n;
        in->hex = 1;
    }
    return 0;
}

void cli_input_free(cli_input *in)
{
    free(in->data);
    in->data = NULL;
    in->size = 0;
}
