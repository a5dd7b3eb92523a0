/* hello.c: compress a gradient with an error-feedback worker and apply it. */
#include <stdio.h>
#include <stdlib.h>
#include "gradwire.h"

#define N 8

int main(void)
{
    const float grad[N] = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 0.0f, 1.5f, -0.125f};
    float x[N] = {0}, e[N];
    gw_worker_options opts;
    gw_frame_info info;
    gw_worker *w = NULL;
    unsigned char *frame = NULL;
    size_t cap = 0, size = 0;
    gw_status st;
    int i, step;

    gw_worker_options_init(&opts, GW_WORKER_OPTIONS_VERSION);
    opts.n = N;
    opts.codec.codec = GW_CODEC_SCALED_SIGN; /* ||v||_1/d * sign(v) */
    opts.codec.block_size = 0;                /* one block for the whole tensor */
    opts.momentum = GW_MOMENTUM_NESTEROV;
    opts.mu = 0.9f;
    opts.error_feedback = 1;
    if ((st = gw_worker_create(&w, &opts)) || (st = gw_worker_frame_bound(w, &cap)))
        goto fail;
    if (!(frame = malloc(cap)))
        return 1;
    for (step = 1; step <= 2; step++) {
        if ((st = gw_worker_step(w, grad, 0.1f, frame, cap, &size)))
            goto fail;
        gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
        if ((st = gw_frame_inspect(frame, size, &info)) ||
            (st = gw_decode_accumulate(frame, size, -0.1f, x, N)) ||  /* x -= lr * C(p) */
            (st = gw_worker_residual(w, e, N)))
            goto fail;
        printf("step %d: %zu-byte frame, %llu elements, %llu payload bytes (float32: %zu)\n",
               step, size, (unsigned long long)info.count,
               (unsigned long long)info.payload_size, sizeof grad);
        for (i = 0; i < N; i++)
            printf("  x[%d] = %+.4f  residual %+.4f\n", i, x[i], e[i]);
    }
    free(frame);
    gw_worker_free(w);
    return 0;
fail:
    fprintf(stderr, "hello: %s\n", gw_status_str(st));
    free(frame);
    gw_worker_free(w);
    return 1;
}
