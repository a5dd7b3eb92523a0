/* pool.h: a tiny thread pool. pool_run(p, fn, ctx, n) runs fn(ctx, 0..n-1)
 * and returns when all are done; the calling thread helps. Tasks must write
 * disjoint outputs, then results do not depend on scheduling. */
#ifndef EXAMPLES_POOL_H
#define EXAMPLES_POOL_H

#include <pthread.h>

typedef void (*task_fn)(void *ctx, int index);

typedef struct pool {
    pthread_mutex_t mu;
    pthread_cond_t wake, done;
    task_fn fn;
    void *ctx;
    int ntasks, next, remaining, quit;
    unsigned long gen;
    int nhelpers; /* threads besides the caller */
    pthread_t *helpers;
} pool;

/* nthreads counts the calling thread; fewer helpers start if creation fails. */
void pool_init(pool *p, int nthreads);
void pool_run(pool *p, task_fn fn, void *ctx, int n);
void pool_destroy(pool *p);
/* Online CPUs, at least 1. */
int pool_cpus(void);

#endif
