#define _POSIX_C_SOURCE 200809L

#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

const char *util_prog = "example";

void die(const char *msg)
{
    fprintf(stderr, "%s: %s\n", util_prog, msg);
    exit(1);
}

void check(gw_status st, const char *what)
{
    if (st != GW_OK) {
        fprintf(stderr, "%s: %s failed: %s (%s)\n", util_prog, what, gw_status_str(st),
                gw_status_name(st));
        exit(1);
    }
}

void *xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        die("out of memory");
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p)
        die("out of memory");
    return p;
}

double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

float uniform_pm(uint64_t *state, float a)
{
    float u = (float)(splitmix64(state) >> 40) * (1.0f / 16777216.0f);
    return (2.0f * u - 1.0f) * a;
}

void shuffle(int *perm, int n, uint64_t seed, int epoch)
{
    uint64_t st = seed * 0x9E3779B97F4A7C15ull + (uint64_t)epoch + 1;
    int i;
    for (i = 0; i < n; i++)
        perm[i] = i;
    for (i = n - 1; i > 0; i--) {
        const int j = (int)(((splitmix64(&st) >> 32) * (uint64_t)(i + 1)) >> 32);
        const int tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
}

void format_bytes(double bytes, char *buf, size_t cap)
{
    if (bytes >= 1024.0 * 1024.0)
        snprintf(buf, cap, "%.2f MiB", bytes / (1024.0 * 1024.0));
    else if (bytes >= 1024.0)
        snprintf(buf, cap, "%.1f KiB", bytes / 1024.0);
    else
        snprintf(buf, cap, "%.0f B", bytes);
}
