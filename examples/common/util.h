/* util.h: the demos' small helpers: fatal errors, checked allocation, a
 * clock and a seeded generator. Any failure here ends the program. */
#ifndef EXAMPLES_UTIL_H
#define EXAMPLES_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "gradwire.h"

/* Program name used in messages (set once by main). */
extern const char *util_prog;

/* Print "prog: msg" and exit(1). */
void die(const char *msg);
/* Exit(1) with the library's message if st is an error. */
void check(gw_status st, const char *what);
void *xmalloc(size_t size);
void *xcalloc(size_t count, size_t size);
double now_seconds(void);

/* splitmix64: the demos' own generator, so every method sees the same
 * initial weights and the same data order. */
uint64_t splitmix64(uint64_t *state);
/* Uniform in [-a, a). */
float uniform_pm(uint64_t *state, float a);
/* perm = a permutation of 0..n-1, a function of (seed, epoch) only. */
void shuffle(int *perm, int n, uint64_t seed, int epoch);

/* "6.21 MiB", "203.5 KiB", "40 B". */
void format_bytes(double bytes, char *buf, size_t cap);

#endif
