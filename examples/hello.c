/* hello.c: one worker and one server round of dist-EF-blockSGDM.
 *
 * A worker compresses its gradient with the blockwise scaled sign and keeps
 * what the codec dropped as its residual (error feedback); the server
 * averages the pushed frames (here: one), compresses the result once more and
 * broadcasts it; the worker applies the broadcast to its parameters. */
#include <stdio.h>
#include <stdlib.h>

#include "gradwire.h"

#define N 8
#define TENSOR 7 /* any id; worker and server must agree, frames carry it */

int main(void)
{
    const float grad[N] = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 0.0f, 1.5f, -0.125f};
    const float lr = 0.1f;
    float x[N] = {0}, e[N];
    gw_codec_spec *spec = NULL;
    gw_worker_options wo = GW_WORKER_OPTIONS_INIT;
    gw_server_options so = GW_SERVER_OPTIONS_INIT;
    gw_frame_info info = GW_FRAME_INFO_INIT;
    gw_worker *w = NULL;
    gw_server *s = NULL;
    unsigned char *push = NULL, *bcast = NULL;
    size_t push_cap = 0, bcast_cap = 0, push_size = 0, bcast_size = 0;
    gw_status st;
    int i;

    /* The codec: ||v_b||_1/d_b * sign(v_b) over blocks of 4 elements. */
    if ((st = gw_codec_spec_create(&spec, GW_CODEC_SCALED_SIGN)) ||
        (st = gw_codec_spec_set(spec, GW_PARAM_BLOCK_SIZE, 4)))
        goto fail;

    wo.n = N;                          /* Nesterov momentum 0.9 and error feedback */
    wo.tensor = TENSOR;                /* are the defaults of GW_WORKER_OPTIONS_INIT */
    so.total = so.length = N;          /* this server owns the whole tensor */
    so.num_workers = 1;
    so.tensor = TENSOR;                /* it checks every push's tag */
    if ((st = gw_worker_create(&w, &wo, spec)) ||
        (st = gw_server_create(&s, &so, spec, spec)) || /* broadcast, expected push codec */
        (st = gw_worker_frame_bound(w, &push_cap)) ||
        (st = gw_server_frame_bound(s, &bcast_cap)))
        goto fail;
    push = malloc(push_cap);
    bcast = malloc(bcast_cap);
    if (!push || !bcast) {
        st = GW_ERR_OUT_OF_MEMORY;
        goto fail;
    }

    /* One round: worker step, push, server step, apply the broadcast. */
    if ((st = gw_worker_step(w, grad, GW_DTYPE_F32, N, lr, push, push_cap, &push_size)) ||
        (st = gw_server_push(s, push, push_size)) ||
        (st = gw_server_step(s, lr, bcast, bcast_cap, &bcast_size)) ||
        (st = gw_decode_accumulate(bcast, bcast_size, -lr, x, N)) || /* x -= lr * C(q) */
        (st = gw_frame_inspect(bcast, bcast_size, &info)) ||
        (st = gw_worker_residual(w, e, N)))
        goto fail;

    printf("pushed %zu bytes, broadcast %zu bytes (%s frame, %llu elements, %llu payload "
           "bytes, tag step %llu); float32 would be %zu bytes of payload\n",
           push_size, bcast_size, gw_codec_name(info.codec), (unsigned long long)info.count,
           (unsigned long long)info.payload_size, (unsigned long long)(info.tag & 0xffffffffu),
           sizeof grad);
    for (i = 0; i < N; i++)
        printf("  grad %+.3f  x[%d] = %+.4f  worker residual %+.4f\n", grad[i], i, x[i], e[i]);

    /* Errors name themselves: a push for another tensor is rejected. */
    so.tensor = TENSOR + 1;
    gw_server_free(s);
    s = NULL;
    if ((st = gw_server_create(&s, &so, spec, spec)))
        goto fail;
    st = gw_server_push(s, push, push_size);
    printf("push to the server of tensor %d: %s (%s)\n", TENSOR + 1, gw_status_name(st),
           gw_status_str(st));

    free(push);
    free(bcast);
    gw_server_free(s);
    gw_worker_free(w);
    gw_codec_spec_free(spec);
    return st == GW_ERR_TAG_MISMATCH ? 0 : 1;
fail:
    fprintf(stderr, "hello: %s: %s\n", gw_status_name(st), gw_status_str(st));
    free(push);
    free(bcast);
    gw_server_free(s);
    gw_worker_free(w);
    gw_codec_spec_free(spec);
    return 1;
}
