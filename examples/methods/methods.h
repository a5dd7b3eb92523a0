/* methods.h: the ways the demo communicates gradients (one file each in
 * examples/methods/), as `method` entries for the training loop in
 * examples/common/sim.c. */
#ifndef EXAMPLES_METHODS_H
#define EXAMPLES_METHODS_H

#include "common/sim.h"

/* Compression of the sparse methods, c = d / k (the targets). */
#define SPARSE_RATIO_LAGS 1000 /* LAGS-SGD and SLGS */
#define SPARSE_RATIO_CLTK 100  /* ScaleCom CLT-k */
#define CLTK_BETA 1.0f         /* low-pass filter of CLT-k's memory (1: plain error feedback) */

extern const method method_sgdm, method_ef, method_topk; /* ps.c */
extern const method method_slgs;                         /* slgs.c */
extern const method method_cltk;                         /* cltk.c */
extern const method method_lags;                         /* lags.c */

/* A serve phase with nothing to do (worker-to-worker methods). */
gw_status method_no_serve(void *state, sim *s, int slot);

/* Local Nesterov momentum, as gw_worker's GW_MOMENTUM_NESTEROV computes it:
 * u = mu u + g; p = mu u + g. The CLT-k and LAGS state machines take plain
 * gradients, so those methods feed them p (momentum correction, as in Deep
 * Gradient Compression): every method trains with the same momentum. */
void method_nesterov(float *u, const float *g, float mu, float *p, size_t n);

#endif
