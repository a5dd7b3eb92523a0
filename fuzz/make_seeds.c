/* Writes the seed corpus of fuzz_state (fuzz/corpus/state): valid worker and
 * server checkpoints for the handle configurations the target creates.
 * Usage: make_seeds DIR  (run from scripts or by hand after format changes). */
#include <stdio.h>
#include <stdlib.h>

#include "gradwire.h"

static int write_file(const char *dir, const char *name, const void *data, size_t size) {
    char path[512];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f) return 1;
    fwrite(data, 1, size, f);
    return fclose(f) != 0;
}

int main(int argc, char **argv) {
    float g[4] = {0.5f, -1.0f, 2.0f, -0.25f};
    unsigned char frame[256], blob[256];
    size_t written = 0, size = 0;
    int momentum, ef, failed = 0;
    char name[64];
    gw_worker_options wo;
    gw_server_options so;
    gw_worker *w;
    gw_server *s;
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    for (momentum = 0; momentum < 3; ++momentum)
        for (ef = 0; ef < 2; ++ef) {
            gw_worker_options_init(&wo, GW_WORKER_OPTIONS_VERSION);
            wo.n = 4;
            wo.momentum = (gw_momentum)momentum;
            wo.error_feedback = ef;
            if (gw_worker_create(&w, &wo) != GW_OK) return 1;
            gw_worker_step(w, g, 0.1f, frame, sizeof frame, &written);
            gw_worker_step(w, g, 0.05f, frame, sizeof frame, &written);
            if (gw_worker_save(w, blob, sizeof blob, &size) != GW_OK) return 1;
            snprintf(name, sizeof name, "worker_m%d_ef%d.bin", momentum, ef);
            failed |= write_file(argv[1], name, blob, size);
            gw_worker_free(w);
        }
    gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION);
    so.total = 8, so.offset = 4, so.length = 4, so.num_workers = 2;
    if (gw_server_create(&s, &so) != GW_OK) return 1;
    {
        gw_codec_options co = GW_CODEC_OPTIONS_INIT;
        gw_encode(&co, g, 4, frame, sizeof frame, &written);
    }
    gw_server_push(s, frame, written);
    gw_server_save(s, blob, sizeof blob, &size); /* mid-round */
    failed |= write_file(argv[1], "server_midround.bin", blob, size);
    gw_server_push(s, frame, written);
    gw_server_step(s, 0.1f, frame, sizeof frame, &written);
    gw_server_save(s, blob, sizeof blob, &size);
    failed |= write_file(argv[1], "server_after_step.bin", blob, size);
    gw_server_free(s);
    return failed;
}
