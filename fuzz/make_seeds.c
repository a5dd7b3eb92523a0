/* Writes the hand-made seeds of the fuzz corpora (run by hand after a format
 * change; the fuzzer's own finds are merged next to them):
 *   make_seeds frame DIR   format 2 frames of every codec in gw_codec_list():
 *                          every parameter at its minimum, maximum and a small
 *                          value, several lengths, nonzero tags, f16/bf16
 *                          input, worker and server frames, and frames with
 *                          the zstd flag for codecs that take GW_PARAM_ZSTD;
 *   make_seeds bundle DIR  fusion bundles: empty, one layer, several layers with
 *                          gaps between their ids, zstd-staged frames;
 *   make_seeds state DIR   checkpoints of every handle configuration fuzz_state
 *                          loads into (state_configs.h), fresh, mid-round and
 *                          after steps (CLT-k: between rounds, where its
 *                          checkpoints are taken), and a few programs for
 *                          fuzz_state's program mode (state_programs.h): per
 *                          state machine, its selector byte then bytes from a
 *                          fixed generator (no hand-made values).
 * File names are stable, so rerunning overwrites instead of adding. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "gradwire.h"
#include "state_configs.h"

#define MAX_N 4096

static unsigned char frame[1 << 16];
static unsigned char blob[1 << 12];
static float xs[MAX_N];
static int failed;

static void write_file(const char *dir, const char *name, const void *data, size_t size) {
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) failed = 1;
    if (f && fclose(f) != 0) failed = 1;
}

/* Deterministic inputs: mixed signs and magnitudes, zeros, -0, one large. */
static void fill(float *x, size_t n, unsigned salt) {
    size_t i;
    for (i = 0; i < n; ++i) x[i] = (float)((int)((i * 37 + salt) % 19) - 9) * 0.375f;
    if (n > 3) x[3] = -0.0f;
    if (n > 5) x[5] = 70000.0f;
}

/* Sparse input (few nonzeros, small gaps): what the zstd stage squeezes. */
static void fill_sparse(float *x, size_t n) {
    size_t i;
    for (i = 0; i < n; ++i) x[i] = i % 7 == 0 ? (float)(i % 13) + 0.5f : 0.0f;
}

/* Encode x[0..n) (as f32, or converted to dtype first) and write the frame. */
static void frame_seed(const char *dir, const gw_codec_spec *spec, const char *variant,
                       const float *x, size_t n, gw_dtype dtype, uint64_t tag, int want_zstd) {
    static unsigned short half[MAX_N];
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    gw_frame_info info = GW_FRAME_INFO_INIT;
    gw_codec_id codec;
    const void *in = x;
    size_t written = 0, i;
    char name[256];
    FUZZ_CHECK(n <= MAX_N);
    if (dtype != GW_DTYPE_F32) {
        /* Truncate to the upper 16 bits (bf16) or pick exact halves (f16). */
        for (i = 0; i < n; ++i) {
            unsigned int bits;
            memcpy(&bits, &x[i], 4);
            half[i] = dtype == GW_DTYPE_BF16 ? (unsigned short)(bits >> 16)
                                             : (unsigned short)(0x3C00u + (i % 64) * 0x101u);
        }
        in = half;
    }
    ctx.tag = tag;
    ctx.seed = 5;
    ctx.step = GW_TAG_STEP(tag);
    ctx.tensor = GW_TAG_TENSOR(tag);
    FUZZ_CHECK(gw_encode(spec, &ctx, in, dtype, n, frame, sizeof frame, &written) == GW_OK);
    FUZZ_CHECK(gw_frame_inspect(frame, written, &info) == GW_OK);
    if (want_zstd && !(info.flags & GW_FRAME_FLAG_ZSTD)) {
        fprintf(stderr, "note: %s did not take the zstd stage\n", variant);
        return;
    }
    gw_codec_spec_codec(spec, &codec);
    snprintf(name, sizeof name, "v2_%s_%s_n%u%s.bin", gw_codec_name(codec), variant, (unsigned)n,
             dtype == GW_DTYPE_F16 ? "_f16in" : dtype == GW_DTYPE_BF16 ? "_bf16in" : "");
    write_file(dir, name, frame, written);
}

/* One frame of `codec` for `n` elements tagged for (tensor, step), in `frame`. */
static size_t push_frame(gw_codec_id codec, size_t n, uint32_t tensor, uint64_t step) {
    gw_codec_spec *spec = NULL;
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    size_t written = 0;
    fill(xs, n, (unsigned)step);
    ctx.tag = GW_TAG(tensor, step);
    FUZZ_CHECK(gw_codec_spec_create(&spec, codec) == GW_OK);
    FUZZ_CHECK(gw_encode(spec, &ctx, xs, GW_DTYPE_F32, n, frame, sizeof frame, &written) == GW_OK);
    gw_codec_spec_free(spec);
    return written;
}

static void handle_frames(const char *dir) {
    gw_worker *w;
    gw_server *s;
    uint32_t tensor;
    gw_codec_id push_codec;
    size_t written = 0, i;
    uint64_t p;
    char name[64];
    for (i = 0; fuzz_worker_config(i, &w); ++i) {
        FUZZ_CHECK(w != NULL);
        fill(xs, FUZZ_STATE_N, 0);
        FUZZ_CHECK(gw_worker_step(w, xs, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f, frame, sizeof frame, &written) == GW_OK);
        FUZZ_CHECK(gw_worker_step(w, xs, GW_DTYPE_F32, FUZZ_STATE_N, 0.05f, frame, sizeof frame, &written) == GW_OK);
        snprintf(name, sizeof name, "v2_worker%u_step1.bin", (unsigned)i);
        write_file(dir, name, frame, written);
        gw_worker_free(w);
    }
    for (i = 0; fuzz_server_config(i, &s, &tensor, &push_codec); ++i) {
        FUZZ_CHECK(s != NULL);
        for (p = 0; p < 8; ++p) {
            const size_t size = push_frame(push_codec, p % 2 ? 0 : FUZZ_STATE_N, tensor, 0);
            gw_server_push(s, frame, size); /* the slice takes one of the two lengths */
        }
        FUZZ_CHECK(gw_server_step(s, 0.1f, frame, sizeof frame, &written) == GW_OK);
        snprintf(name, sizeof name, "v2_server%u_broadcast.bin", (unsigned)i);
        write_file(dir, name, frame, written);
        gw_server_free(s);
    }
}

static void frame_seeds(const char *dir) {
    static const size_t lengths[] = {0, 1, 9, 33};
    gw_codec_id ids[FUZZ_STATE_MAX_CODECS];
    const size_t ncodecs = fuzz_codec_ids(ids);
    size_t c, j, k;
    for (c = 0; c < ncodecs; ++c) {
        gw_param params[16];
        size_t np = 0;
        gw_codec_spec *spec = NULL;
        const uint64_t tag = GW_TAG(3 + c, 17 + c);
        FUZZ_CHECK(gw_codec_params(ids[c], params, 16, &np) == GW_OK && np <= 16);
        FUZZ_CHECK(gw_codec_spec_create(&spec, ids[c]) == GW_OK);
        for (k = 0; k < sizeof lengths / sizeof lengths[0]; ++k) {
            fill(xs, lengths[k], (unsigned)k);
            frame_seed(dir, spec, "default", xs, lengths[k], GW_DTYPE_F32, tag, 0);
        }
        fill(xs, 9, 1);
        frame_seed(dir, spec, "default", xs, 9, GW_DTYPE_F16, tag, 0);
        frame_seed(dir, spec, "default", xs, 9, GW_DTYPE_BF16, tag, 0);
        /* One parameter at a time at its minimum, a small value and its maximum. */
        for (j = 0; j < np; ++j) {
            int64_t min, max, def, vals[3];
            const char *which[3] = {"min", "small", "max"};
            int v;
            FUZZ_CHECK(gw_codec_param_bounds(ids[c], params[j], &min, &max, &def) == GW_OK);
            vals[0] = min, vals[1] = min + 3 <= max ? min + 3 : max, vals[2] = max;
            for (v = 0; v < 3; ++v) {
                gw_codec_spec *p = NULL;
                char variant[96];
                FUZZ_CHECK(gw_codec_spec_clone(&p, spec) == GW_OK);
                if (gw_codec_spec_set(p, params[j], vals[v]) == GW_OK) {
                    snprintf(variant, sizeof variant, "%s_%s", gw_param_name(params[j]), which[v]);
                    fill(xs, 33, 2);
                    frame_seed(dir, p, variant, xs, 33, GW_DTYPE_F32, tag, 0);
                }
                gw_codec_spec_free(p);
            }
        }
        /* The zstd stage, for codecs that have one. */
        for (j = 0; j < np; ++j)
            if (params[j] == GW_PARAM_ZSTD) {
                gw_codec_spec *p = NULL;
                FUZZ_CHECK(gw_codec_spec_clone(&p, spec) == GW_OK);
                FUZZ_CHECK(gw_codec_spec_set(p, GW_PARAM_ZSTD, 1) == GW_OK);
                fill_sparse(xs, MAX_N);
                frame_seed(dir, p, "zstd", xs, MAX_N, GW_DTYPE_F32, tag, 1);
                frame_seed(dir, p, "zstd", xs, 1024, GW_DTYPE_F32, tag, 1);
                gw_codec_spec_free(p);
            }
        gw_codec_spec_free(spec);
    }
    /* Frames written by handles: each worker's second step, each server's broadcast. */
    handle_frames(dir);
}

/* CLT-k handles fresh, after a dense or led round, and with a leader override. */
static void cltk_seeds(const char *dir) {
    gw_cltk *h;
    size_t i, size = 0, written = 0, count = 0;
    char name[64];
    for (i = 0; fuzz_cltk_config(i, &h); ++i) {
        int t;
        FUZZ_CHECK(h != NULL);
        FUZZ_CHECK(gw_cltk_save(h, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "cltk%u_fresh.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        FUZZ_CHECK(gw_cltk_set_leader(h, (uint32_t)i) == GW_OK);  /* every round its own */
        for (t = 0; t < 3; ++t) {
            uint32_t leader = 0;
            fill(xs, FUZZ_STATE_N, (unsigned)t + 2);
            FUZZ_CHECK(gw_cltk_begin(h, xs, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f) == GW_OK);
            FUZZ_CHECK(gw_cltk_leader(h, &leader) == GW_OK);
            if (leader == GW_CLTK_NO_LEADER) {
                FUZZ_CHECK(gw_cltk_extract(h, NULL, 0, xs, MAX_N, &count) == GW_OK);
            } else {
                FUZZ_CHECK(gw_cltk_select(h, frame, sizeof frame, &written) == GW_OK);
                FUZZ_CHECK(gw_cltk_extract(h, frame, written, xs, MAX_N, &count) == GW_OK);
            }
            FUZZ_CHECK(gw_cltk_apply(h, xs, count, NULL, 0) == GW_OK);
            FUZZ_CHECK(gw_cltk_save(h, blob, sizeof blob, &size) == GW_OK);
            snprintf(name, sizeof name, "cltk%u_step%d.bin", (unsigned)i, t + 1);
            write_file(dir, name, blob, size);
        }
        gw_cltk_free(h);
    }
}

/* LAGS layers fresh and after steps with a changed k. */
static void lags_seeds(const char *dir) {
    gw_lags_layer *h;
    size_t i, size = 0, written = 0;
    char name[64];
    for (i = 0; fuzz_lags_config(i, &h); ++i) {
        FUZZ_CHECK(h != NULL);
        FUZZ_CHECK(gw_lags_layer_save(h, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "lags%u_fresh.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        fill(xs, FUZZ_STATE_N, 3);
        FUZZ_CHECK(gw_lags_layer_step(h, xs, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f, frame, sizeof frame, &written) == GW_OK);
        FUZZ_CHECK(gw_lags_layer_set_k(h, 3) == GW_OK);
        FUZZ_CHECK(gw_lags_layer_step(h, xs, GW_DTYPE_F32, FUZZ_STATE_N, 0.05f, frame, sizeof frame, &written) == GW_OK);
        FUZZ_CHECK(gw_lags_layer_save(h, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "lags%u_step2.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        gw_lags_layer_free(h);
    }
}

/* AsyLPG masters and workers: fresh, mid-epoch, and waiting between epochs. */
static void asylpg_seeds(const char *dir) {
    gw_asylpg_master *m;
    gw_asylpg_worker *w;
    size_t i, t, size = 0, written = 0;
    unsigned bits = 0;
    char name[64];
    for (i = 0; fuzz_asylpg_master_config(i, &m); ++i) {
        FUZZ_CHECK(m != NULL);
        FUZZ_CHECK(fuzz_asylpg_worker_config(2, &w) == 1 && w != NULL); /* identity gradients */
        FUZZ_CHECK(gw_asylpg_master_save(m, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "asylpg_master%u_fresh.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        FUZZ_CHECK(gw_asylpg_master_snapshot(m, xs, FUZZ_STATE_N) == GW_OK);
        FUZZ_CHECK(gw_asylpg_worker_set_snapshot(w, xs, FUZZ_STATE_N) == GW_OK);
        fill(xs, FUZZ_STATE_N, 4);
        FUZZ_CHECK(gw_asylpg_master_begin_epoch(m, xs, FUZZ_STATE_N) == GW_OK);
        for (t = 0; t < 3; ++t) {
            int running = 0;
            FUZZ_CHECK(gw_asylpg_master_progress(m, NULL, NULL, NULL, &running) == GW_OK);
            if (!running) FUZZ_CHECK(gw_asylpg_master_begin_epoch(m, xs, FUZZ_STATE_N) == GW_OK);
            FUZZ_CHECK(gw_asylpg_master_model(m, frame, sizeof frame, &written, &bits) == GW_OK);
            FUZZ_CHECK(gw_asylpg_worker_receive(w, frame, written) == GW_OK);
            FUZZ_CHECK(gw_asylpg_worker_step(w, xs, xs + 1, GW_DTYPE_F32, FUZZ_STATE_N, frame,
                                             sizeof frame, &written) == GW_OK);
            FUZZ_CHECK(gw_asylpg_master_push(m, frame, written) == GW_OK);
            FUZZ_CHECK(gw_asylpg_master_save(m, blob, sizeof blob, &size) == GW_OK);
            snprintf(name, sizeof name, "asylpg_master%u_step%u.bin", (unsigned)i, (unsigned)t + 1);
            write_file(dir, name, blob, size);
        }
        gw_asylpg_worker_free(w);
        gw_asylpg_master_free(m);
    }
    for (i = 0; fuzz_asylpg_worker_config(i, &w); ++i) {
        FUZZ_CHECK(w != NULL);
        FUZZ_CHECK(gw_asylpg_worker_save(w, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "asylpg_worker%u_fresh.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        fill(xs, FUZZ_STATE_N, 6);
        FUZZ_CHECK(gw_asylpg_worker_set_snapshot(w, xs, FUZZ_STATE_N) == GW_OK);
        FUZZ_CHECK(gw_asylpg_worker_save(w, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "asylpg_worker%u_snapshot.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        gw_asylpg_worker_free(w);
    }
}

/* Program-mode inputs: selector byte k (state_programs.h: worker, server, CLT-k,
 * LAGS layer, AsyLPG master, AsyLPG worker, fusion buffer), then generator
 * bytes. */
static void program_seeds(const char *dir) {
    unsigned k, i, j;
    for (k = 0; k < 7; ++k)
        for (i = 0; i < 4; ++i) {
            unsigned char p[160];
            unsigned long long x = 0x9E3779B97F4A7C15ull * (k * 4 + i + 1);
            char name[64];
            p[0] = (unsigned char)k;
            for (j = 1; j < sizeof p; ++j) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                p[j] = (unsigned char)(x >> 56);
            }
            snprintf(name, sizeof name, "prog_%u_%u.bin", k, i);
            write_file(dir, name, p, sizeof p);
        }
}

static void state_seeds(const char *dir) {
    gw_worker *w;
    gw_server *s;
    uint32_t tensor;
    gw_codec_id push_codec;
    size_t i, size = 0, written = 0;
    char name[64];
    for (i = 0; fuzz_worker_config(i, &w); ++i) {
        FUZZ_CHECK(w != NULL);
        FUZZ_CHECK(gw_worker_save(w, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "worker%u_fresh.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        fill(xs, FUZZ_STATE_N, 1);
        FUZZ_CHECK(gw_worker_step(w, xs, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f, frame, sizeof frame, &written) == GW_OK);
        FUZZ_CHECK(gw_worker_step(w, xs, GW_DTYPE_F32, FUZZ_STATE_N, 0.05f, frame, sizeof frame, &written) == GW_OK);
        FUZZ_CHECK(gw_worker_save(w, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "worker%u_step2.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        gw_worker_free(w);
    }
    for (i = 0; fuzz_server_config(i, &s, &tensor, &push_codec); ++i) {
        uint64_t length = 0;
        uint64_t step, p;
        size_t bound = 0;
        FUZZ_CHECK(s != NULL);
        /* The slice length: the one that a push accepts. */
        length = gw_server_push(s, frame, push_frame(push_codec, 0, tensor, 0)) == GW_OK ? 0 : FUZZ_STATE_N;
        gw_server_reset_round(s);
        FUZZ_CHECK(gw_server_frame_bound(s, &bound) == GW_OK && bound <= sizeof frame);
        FUZZ_CHECK(gw_server_save(s, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "server%u_fresh.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        for (step = 0; step < 2; ++step) {
            for (p = 0;; ++p) {
                const size_t fsize = push_frame(push_codec, (size_t)length, tensor, step);
                if (gw_server_push(s, frame, fsize) != GW_OK) break;
                FUZZ_CHECK(gw_server_save(s, blob, sizeof blob, &size) == GW_OK);
                snprintf(name, sizeof name, "server%u_step%u_push%u.bin", (unsigned)i, (unsigned)step, (unsigned)p);
                write_file(dir, name, blob, size);
            }
            FUZZ_CHECK(gw_server_step(s, step ? 0.05f : 0.1f, frame, sizeof frame, &written) == GW_OK);
        }
        FUZZ_CHECK(gw_server_save(s, blob, sizeof blob, &size) == GW_OK);
        snprintf(name, sizeof name, "server%u_step2.bin", (unsigned)i);
        write_file(dir, name, blob, size);
        gw_server_free(s);
    }
    cltk_seeds(dir);
    lags_seeds(dir);
    asylpg_seeds(dir);
    program_seeds(dir);
}

/* Bundles of a fusion buffer with `layers` slots, frames added for the listed ones. */
static void bundle_seed(const char *dir, const char *name, uint32_t layers, const uint32_t *add,
                        size_t nadd) {
    static unsigned char out[1 << 17];
    gw_fusion_options o = GW_FUSION_OPTIONS_INIT;
    gw_codec_spec *spec = NULL;
    gw_fusion *f = NULL;
    size_t i, written = 0;
    int flush = 0;
    o.layers = layers;
    o.capacity = sizeof out;
    FUZZ_CHECK(gw_fusion_create(&f, &o) == GW_OK);
    FUZZ_CHECK(gw_codec_spec_create(&spec, GW_CODEC_TOPK) == GW_OK);
    gw_codec_spec_set(spec, GW_PARAM_K, 5);
    for (i = 0; i < nadd; ++i) {
        gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
        const size_t n = i % 2 ? 33 : 1024;
        if (n == 1024) fill_sparse(xs, n); else fill(xs, n, (unsigned)i);
        ctx.tag = GW_TAG(add[i], 1);
        FUZZ_CHECK(gw_encode(spec, &ctx, xs, GW_DTYPE_F32, n, frame, sizeof frame, &written) == GW_OK);
        FUZZ_CHECK(gw_fusion_add(f, add[i], frame, written, &flush) == GW_OK);
    }
    FUZZ_CHECK(gw_fusion_flush(f, out, sizeof out, &written) == GW_OK);
    write_file(dir, name, out, written);
    gw_codec_spec_free(spec);
    gw_fusion_free(f);
}

static void bundle_seeds(const char *dir) {
    static const uint32_t one[] = {0}, three[] = {4, 1, 9}, many[] = {0, 1, 2, 3, 4, 5, 6, 7};
    bundle_seed(dir, "bundle_empty.bin", 1, NULL, 0);
    bundle_seed(dir, "bundle_one.bin", 1, one, 1);
    bundle_seed(dir, "bundle_three_gaps.bin", 10, three, 3);
    bundle_seed(dir, "bundle_eight.bin", 8, many, 8);
}

int main(int argc, char **argv) {
    if (argc != 3 || (strcmp(argv[1], "frame") != 0 && strcmp(argv[1], "state") != 0 &&
                      strcmp(argv[1], "bundle") != 0)) {
        fprintf(stderr, "usage: %s frame|state|bundle DIR\n", argv[0]);
        return 2;
    }
    if (strcmp(argv[1], "frame") == 0)
        frame_seeds(argv[2]);
    else if (strcmp(argv[1], "bundle") == 0)
        bundle_seeds(argv[2]);
    else
        state_seeds(argv[2]);
    return failed;
}
