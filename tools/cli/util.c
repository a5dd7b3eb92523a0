/* Small helpers shared by the subcommands. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

int cli_is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

int cli_parse_count(const char *text, const char *what, uint64_t *value)
{
    char *end = NULL;
    unsigned long long v;
    uint64_t mult = 1;
    if (text[0] < '0' || text[0] > '9') goto bad;
    errno = 0;
    v = strtoull(text, &end, 10);
    if (errno != 0) goto bad;
    if (*end == 'K' || *end == 'k') mult = (uint64_t)1 << 10, ++end;
    else if (*end == 'M' || *end == 'm') mult = (uint64_t)1 << 20, ++end;
    else if (*end == 'G' || *end == 'g') mult = (uint64_t)1 << 30, ++end;
    if (*end != '\0' || v > UINT64_MAX / mult) goto bad;
    *value = (uint64_t)v * mult;
    return 0;
bad:
    fprintf(stderr, "gradwire: %s: expected a count such as 1000, 64K or 1M, got '%s'\n", what,
            text);
    return -1;
}

float cli_f32_from_bits(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
