/* A C99 program against the public header: builds with -std=c99
 * -pedantic-errors and exercises one round of two-way compression. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradwire.h"

#define CHECK(call)                                                                    \
    do {                                                                               \
        gw_status st_ = (call);                                                        \
        if (st_ != GW_OK) {                                                            \
            fprintf(stderr, "%s:%d: %s -> %s\n", __FILE__, __LINE__, #call,            \
                    gw_status_str(st_));                                               \
            return 1;                                                                  \
        }                                                                              \
    } while (0)
#define EXPECT(cond)                                                                   \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);        \
            return 1;                                                                  \
        }                                                                              \
    } while (0)

int main(void) {
    enum { N = 100, M = 2 };
    float grad[N], x[N];
    unsigned char *frames[M], *out;
    size_t sizes[M], bound = 0, out_size = 0, blob_size = 0, bad = 0;
    const void *views[M];
    gw_worker *workers[M];
    gw_server *server = NULL;
    gw_worker_options wo;
    gw_server_options so;
    gw_worker_options wi = GW_WORKER_OPTIONS_INIT;
    gw_codec_spec *spec = NULL;
    int64_t block = -1;
    gw_frame_info info;
    unsigned char *blob;
    int i, k;

    EXPECT(gw_version_number() == GW_VERSION_NUMBER);
    EXPECT(wi.version == GW_WORKER_OPTIONS_VERSION && wi.error_feedback == 1);
    CHECK(gw_codec_spec_create(&spec, GW_CODEC_SCALED_SIGN));
    CHECK(gw_codec_spec_set(spec, GW_PARAM_BLOCK_SIZE, 25));
    CHECK(gw_codec_spec_get(spec, GW_PARAM_BLOCK_SIZE, &block));
    EXPECT(block == 25);
    EXPECT(strcmp(gw_status_name(GW_ERR_SEQUENCE), "GW_ERR_SEQUENCE") == 0);
    EXPECT(gw_worker_options_init(&wo, 12345) == GW_ERR_OPTIONS_VERSION);
    CHECK(gw_worker_options_init(&wo, GW_WORKER_OPTIONS_VERSION));
    CHECK(gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION));
    wo.n = N;
    so.total = so.length = N;
    so.num_workers = M;
    for (k = 0; k < N; ++k) x[k] = 0.0f;

    for (i = 0; i < M; ++i) {
        CHECK(gw_worker_create(&workers[i], &wo, spec));
        CHECK(gw_worker_frame_bound(workers[i], &bound));
        frames[i] = (unsigned char *)malloc(bound);
        EXPECT(frames[i] != NULL);
    }
    CHECK(gw_server_create(&server, &so, spec, spec));
    CHECK(gw_server_frame_bound(server, &bound));
    out = (unsigned char *)malloc(bound);

    for (i = 0; i < M; ++i) {
        for (k = 0; k < N; ++k) grad[k] = (float)((k * 7 + i * 3) % 11) - 5.0f;
        CHECK(gw_worker_step(workers[i], grad, GW_DTYPE_F32, N, 0.1f, frames[i], bound, &sizes[i]));
        CHECK(gw_server_push(server, frames[i], sizes[i]));
    }
    CHECK(gw_server_step(server, 0.1f, out, bound, &out_size));
    CHECK(gw_frame_info_init(&info, GW_FRAME_INFO_VERSION));
    CHECK(gw_frame_inspect(out, out_size, &info));
    EXPECT(info.codec == GW_CODEC_SCALED_SIGN && info.count == N && info.frame_size == out_size);
    EXPECT(info.tag == GW_TAG(0, 0) && info.format_version == GW_FRAME_FORMAT_VERSION);
    CHECK(gw_decode_accumulate(out, out_size, -0.1f, x, N));
    EXPECT(x[0] != 0.0f);

    /* Malformed input gets a status, never a crash. */
    out[0] ^= 0xFF;
    EXPECT(gw_decode_accumulate(out, out_size, 1.0f, x, N) == GW_ERR_FRAME_MAGIC);
    EXPECT(gw_server_step(server, 0.1f, out, bound, &out_size) == GW_ERR_SEQUENCE);
    EXPECT(strcmp(gw_status_str(GW_ERR_FRAME_CHECKSUM), "frame checksum mismatch") == 0);

    /* Many frames at once: the workers' frames summed; a round of last step's frames. */
    for (i = 0; i < M; ++i) views[i] = frames[i];
    CHECK(gw_decode_accumulate_many(views, sizes, M, 0.5f, x, N, &bad));
    EXPECT(gw_server_round(server, views, sizes, M, 0.1f, out, bound, &out_size, &bad) ==
           GW_ERR_TAG_MISMATCH);
    EXPECT(bad == 0);

    /* Checkpoint round trip. */
    CHECK(gw_worker_save_bound(workers[0], &blob_size));
    blob = (unsigned char *)malloc(blob_size);
    CHECK(gw_worker_save(workers[0], blob, blob_size, &blob_size));
    CHECK(gw_worker_load(workers[1], blob, blob_size));
    free(blob);

    printf("c99 api ok: frame %lu bytes for %d floats, simd %s\n", (unsigned long)out_size, N,
           gw_simd_target_name(gw_simd_active_target()));
    for (i = 0; i < M; ++i) {
        gw_worker_free(workers[i]);
        free(frames[i]);
    }
    gw_server_free(server);
    gw_codec_spec_free(spec);
    gw_codec_spec_free(NULL);
    gw_server_free(NULL);
    gw_worker_free(NULL);
    free(out);
    return 0;
}
