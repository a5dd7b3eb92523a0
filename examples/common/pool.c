#define _POSIX_C_SOURCE 200809L

#include "pool.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

static void pool_drain(pool *p) /* called and returns with p->mu held */
{
    while (p->next < p->ntasks) {
        const int i = p->next++;
        task_fn fn = p->fn;
        void *ctx = p->ctx;
        pthread_mutex_unlock(&p->mu);
        fn(ctx, i);
        pthread_mutex_lock(&p->mu);
        if (--p->remaining == 0)
            pthread_cond_broadcast(&p->done);
    }
}

static void *pool_thread(void *arg)
{
    pool *p = arg;
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->quit && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->quit)
            break;
        seen = p->gen;
        pool_drain(p);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

void pool_init(pool *p, int nthreads)
{
    int i;
    memset(p, 0, sizeof *p);
    if (pthread_mutex_init(&p->mu, NULL) || pthread_cond_init(&p->wake, NULL) ||
        pthread_cond_init(&p->done, NULL))
        die("cannot initialize pthread objects");
    p->helpers = xcalloc((size_t)(nthreads > 1 ? nthreads - 1 : 1), sizeof(pthread_t));
    for (i = 0; i < nthreads - 1; i++) {
        if (pthread_create(&p->helpers[i], NULL, pool_thread, p) != 0)
            break; /* fewer helpers is fine */
        p->nhelpers++;
    }
}

void pool_run(pool *p, task_fn fn, void *ctx, int n)
{
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->ctx = ctx;
    p->ntasks = n;
    p->next = 0;
    p->remaining = n;
    p->gen++;
    if (p->nhelpers > 0)
        pthread_cond_broadcast(&p->wake);
    pool_drain(p);
    while (p->remaining > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

void pool_destroy(pool *p)
{
    int i;
    pthread_mutex_lock(&p->mu);
    p->quit = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (i = 0; i < p->nhelpers; i++)
        pthread_join(p->helpers[i], NULL);
    free(p->helpers);
    pthread_cond_destroy(&p->wake);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->mu);
}

int pool_cpus(void)
{
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : (int)n;
}
