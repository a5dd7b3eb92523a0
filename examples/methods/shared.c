/* Pieces the worker-to-worker methods share. */
#include "methods.h"

gw_status method_no_serve(void *state, sim *s, int slot)
{
    (void)state;
    (void)s;
    (void)slot;
    return GW_OK;
}

void method_nesterov(float *u, const float *g, float mu, float *p, size_t n)
{
    size_t j;
    for (j = 0; j < n; j++) {
        u[j] = mu * u[j] + g[j];
        p[j] = mu * u[j] + g[j];
    }
}
