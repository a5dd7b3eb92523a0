/*
 * gradwire: gradient compressors and error-feedback state machines
 * for communication-efficient distributed training.  Public C99 ABI.
 *
 * Rules every function follows (see docs/c-api.md):
 *  - returns a gw_status; GW_OK is 0, errors are negative and never renumbered;
 *  - the caller owns every output buffer; `*_bound` functions size them;
 *  - every input vector comes with its length;
 *  - on any error, outputs and handle state are left exactly as they were;
 *  - inputs and outputs never overlap unless a call says so: overlapping
 *    buffers are rejected with GW_ERR_OVERLAP where the call can see both;
 *  - stateless calls are reentrant; a handle is used by one thread at a time;
 *    different handles may be used concurrently;
 *  - option structs carry a version as first field, have an INIT macro and an
 *    init function; every version from 1 to the current one is accepted;
 *  - free functions accept NULL.
 * The algorithms are described in docs/algorithms.md.
 */
#ifndef GRADWIRE_H
#define GRADWIRE_H

#include <stddef.h>
#include <stdint.h>

#include "gradwire_types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One source of truth for the version: meson.build reads these three lines.
 * Before 1.0 every minor version may change the ABI and has its own soname. */
#define GW_VERSION_MAJOR 0
#define GW_VERSION_MINOR 3
#define GW_VERSION_PATCH 0
#define GW_VERSION_NUMBER (GW_VERSION_MAJOR * 10000 + GW_VERSION_MINOR * 100 + GW_VERSION_PATCH)

/* Wire format version written into every frame (independent of the library
 * version). Frames of format 1 still decode. */
#define GW_FRAME_FORMAT_VERSION 2
/* Bytes of the fixed frame header: enough for gw_frame_size(). */
#define GW_FRAME_HEADER_SIZE 40
/* Largest tensor length any call accepts (4 TiB of float32); longer is
 * GW_ERR_INVALID_ARGUMENT, never an attempted allocation. */
#define GW_MAX_ELEMENTS ((uint64_t)1 << 40)

/* A frame tag naming tensor and round, as worker and server handles write it,
 * and the two halves of a tag. */
#define GW_TAG(tensor, step) (((uint64_t)(uint32_t)(tensor) << 32) | (uint64_t)(uint32_t)(step))
#define GW_TAG_TENSOR(tag) ((uint32_t)((uint64_t)(tag) >> 32))
#define GW_TAG_STEP(tag) ((uint32_t)(uint64_t)(tag))

#ifndef GW_API
#  if defined(_WIN32)
#    define GW_API
#  elif defined(__GNUC__) && __GNUC__ >= 4
#    define GW_API __attribute__((visibility("default")))
#  else
#    define GW_API
#  endif
#endif

/* ------------------------------------------------------------------------ */
/* Status and version                                                         */
/* ------------------------------------------------------------------------ */
/* Static message for a status code; never NULL ("unknown status" for others). */
GW_API const char *gw_status_str(gw_status status);
/* Symbol name of a status code ("GW_ERR_SEQUENCE"); "GW_UNKNOWN" for others. */
GW_API const char *gw_status_name(gw_status status);

/* Runtime version: GW_VERSION_NUMBER of the library actually loaded. */
GW_API unsigned int gw_version_number(void);
GW_API const char *gw_version_string(void);

/* ------------------------------------------------------------------------ */
/* SIMD targets                                                               */
/* ------------------------------------------------------------------------ */
/* Force a target for the whole process (tests, benchmarks). The environment
 * variable GW_SIMD=scalar|sse2|sse4.2|avx2|avx512|neon does the same at load
 * (x86 builds have the x86 targets, aarch64 builds NEON; all have scalar).
 * Every target produces bit-identical outputs. */
GW_API gw_status gw_simd_set_target(gw_simd_target target);
GW_API gw_simd_target gw_simd_active_target(void);
/* 1 if `target` is compiled in and supported by this CPU, else 0. */
GW_API int gw_simd_target_supported(gw_simd_target target);
GW_API const char *gw_simd_target_name(gw_simd_target target);

/* ------------------------------------------------------------------------ */
/* Handle backends: kernels and memory per handle                             */
/* ------------------------------------------------------------------------ */
/* Version 2 of every handle's options (worker, server, cltk, lags_layer,
 * fusion, asylpg_master, asylpg_worker) ends with two fields:
 *   gw_simd_target simd;   the handle's kernels; GW_SIMD_AUTO (the INIT
 *                          value): the process's target when it is created.
 *                          Any target gives the same bytes; one the CPU lacks
 *                          is GW_ERR_UNSUPPORTED at create.
 *   const gw_allocator *allocator;  NULL (INIT): malloc and free. Otherwise
 *                          every byte the handle holds (the handle itself, its
 *                          state, scratch, zstd contexts) comes from it, from
 *                          create to free; the handle copies the struct.
 * Handles of different targets and allocators may live side by side.
 * Version 1 options (programs built against 0.3 headers or older) get the
 * process's target and malloc. Stateless calls (gw_encode, gw_decode, ...)
 * always do: the process's target, and per-thread scratch from malloc. */
typedef struct gw_allocator {
    /* `size` bytes aligned to `alignment` (a power of two, at most 64), or NULL. */
    void* (*alloc)(void* user, size_t size, size_t alignment);
    /* Releases what alloc returned (never called with NULL). */
    void (*free)(void* user, void* ptr);
    void* user;
} gw_allocator;

/* ------------------------------------------------------------------------ */
/* Codecs and their parameters                                                */
/* ------------------------------------------------------------------------ */
/* Name of a codec ("scaled_sign"), or NULL for an unknown id. */
GW_API const char *gw_codec_name(gw_codec_id codec);
/* Codec id of a name as gw_codec_name() spells it. */
GW_API gw_status gw_codec_from_name(const char *name, gw_codec_id *codec);
/* The built-in codecs: *count is always set; up to `capacity` ids are written. */
GW_API gw_status gw_codec_list(gw_codec_id *ids, size_t capacity, size_t *count);
/* The parameters a codec takes, in wire order (same contract as gw_codec_list). */
GW_API gw_status gw_codec_params(gw_codec_id codec, gw_param *params, size_t capacity,
                                 size_t *count);
/* Name of a parameter ("block_size"), or NULL for an unknown one. */
GW_API const char *gw_param_name(gw_param param);
/* Range and default of a codec's parameter; GW_ERR_INVALID_ARGUMENT if the
 * codec does not take it. Any pointer may be NULL. */
GW_API gw_status gw_codec_param_bounds(gw_codec_id codec, gw_param param, int64_t *min,
                                       int64_t *max, int64_t *default_value);
/* The GW_CODEC_FLAG_* bits a codec has; GW_ERR_INVALID_ARGUMENT for an
 * unknown codec. */
GW_API gw_status gw_codec_flags(gw_codec_id codec, uint32_t *flags);

/* A codec with its parameters. Created with every parameter at its default. */
typedef struct gw_codec_spec gw_codec_spec;
GW_API gw_status gw_codec_spec_create(gw_codec_spec **spec, gw_codec_id codec);
GW_API gw_status gw_codec_spec_clone(gw_codec_spec **copy, const gw_codec_spec *spec);
GW_API void gw_codec_spec_free(gw_codec_spec *spec);
/* Set one parameter; out of range -> GW_ERR_INVALID_ARGUMENT and no change. */
GW_API gw_status gw_codec_spec_set(gw_codec_spec *spec, gw_param param, int64_t value);
GW_API gw_status gw_codec_spec_get(const gw_codec_spec *spec, gw_param param, int64_t *value);
GW_API gw_status gw_codec_spec_codec(const gw_codec_spec *spec, gw_codec_id *codec);
/* Float-valued parameters (GW_PARAM_THRESHOLD, GW_PARAM_BUDGET): finite and >= 0, else
 * GW_ERR_INVALID_ARGUMENT; stored as the float's bit pattern. */
GW_API gw_status gw_codec_spec_set_f32(gw_codec_spec *spec, gw_param param, float value);
GW_API gw_status gw_codec_spec_get_f32(const gw_codec_spec *spec, gw_param param, float *value);
/* 1 if both name the same codec with the same parameters, else 0. */
GW_API int gw_codec_spec_equal(const gw_codec_spec *a, const gw_codec_spec *b);
/* The speed of the link the frames will cross, in bits per second; 0 (the
 * default) = unknown. Not a parameter: never on the wire, ignored by
 * gw_codec_spec_equal, kept by gw_codec_spec_clone and by every handle created
 * from the spec (not by its checkpoints). Known, it decides the zstd stage
 * (GW_PARAM_ZSTD = 1): used only where the bytes it saves take longer on that
 * link than compressing and decompressing them (below about 2 Gbit/s for a 1%
 * top-k frame of 1M elements; docs/performance.md); unknown, whenever it makes
 * the frame smaller. Either way the frame is valid and decodes the same. */
GW_API gw_status gw_codec_spec_set_link(gw_codec_spec *spec, uint64_t bits_per_second);
GW_API gw_status gw_codec_spec_get_link(const gw_codec_spec *spec, uint64_t *bits_per_second);

/* ------------------------------------------------------------------------ */
/* Stateless encode and decode                                                */
/* ------------------------------------------------------------------------ */
/* Context of one encode: stochastic codecs draw from (seed, step, tensor);
 * `tag` is written into the frame for the receiver to check. */
#define GW_ENCODE_CTX_VERSION 1
typedef struct gw_encode_ctx {
    unsigned int version;   /* GW_ENCODE_CTX_VERSION */
    uint64_t seed;
    uint64_t step;
    uint32_t tensor;
    uint64_t tag;
} gw_encode_ctx;
#define GW_ENCODE_CTX_INIT { GW_ENCODE_CTX_VERSION, 0, 0, 0, 0 }
GW_API gw_status gw_encode_ctx_init(gw_encode_ctx *ctx, unsigned int version);

/* Largest frame gw_encode can write for n elements. */
GW_API gw_status gw_encode_bound(const gw_codec_spec *spec, uint64_t n, size_t *bound);

/* Compress x[0..n) (of type `dtype`) into one frame. `ctx` may be NULL (all
 * zero). Non-finite input -> GW_ERR_NONFINITE. x must not overlap frame. */
GW_API gw_status gw_encode(const gw_codec_spec *spec, const gw_encode_ctx *ctx, const void *x,
                           gw_dtype dtype, uint64_t n, void *frame, size_t capacity,
                           size_t *written);

/* Decode a frame into out[0..count). `capacity` is out's length in elements;
 * a frame with more elements gets GW_ERR_BUFFER_TOO_SMALL. `count` may be
 * NULL. out must not overlap the frame. */
GW_API gw_status gw_decode(const void *frame, size_t size, float *out, uint64_t capacity,
                           uint64_t *count);

/* acc[i] += alpha * decoded[i]; the frame must hold exactly n elements.
 * acc must not overlap the frame. */
GW_API gw_status gw_decode_accumulate(const void *frame, size_t size, float alpha,
                                      float *acc, uint64_t n);

/* acc[i] += alpha * decoded_j[i] for the `count` frames in order, each of
 * exactly n elements: the same bits as gw_decode_accumulate on frames[0],
 * frames[1], ... in turn, but every frame is checked before acc is touched
 * (on an error acc is unchanged and *bad, if not NULL, is the index of the
 * first rejected frame, SIZE_MAX if no frame is to blame) and, when every
 * frame is a sign, scaled-sign, fp16, bf16 or identity frame, the sum runs
 * tile by tile so acc stays in cache: one pass over acc for all the frames. */
GW_API gw_status gw_decode_accumulate_many(const void *const *frames, const size_t *sizes,
                                           size_t count, float alpha, float *acc, uint64_t n,
                                           size_t *bad);

/* Contraction diagnostic of the blockwise scaled sign (docs/algorithms.md):
 * phi = min_b ||v_b||_1^2 / (d_b ||v_b||_2^2); all-zero blocks count as 1. */
GW_API gw_status gw_scaled_sign_phi(const float *x, uint64_t n, uint32_t block_size,
                                    double *phi);

/* ------------------------------------------------------------------------ */
/* Sparse selection helpers and diagnostics                                   */
/* ------------------------------------------------------------------------ */
/* The k positions random-k frames of rule `revision` (GW_PARAM_REVISION: 2,
 * the default, stratified, O(k); 1, selection sampling, O(n)) hold for (seed,
 * step, tensor): increasing, the same on every worker (n < 2^32, k <= n). */
GW_API gw_status gw_randk_positions(unsigned int revision, uint64_t seed, uint32_t step,
                                    uint32_t tensor, uint64_t n, uint64_t k, uint32_t *idx);
/* gw_randk_positions of revision 1 (the first rule, kept for its callers). */
GW_API gw_status gw_randk_indices(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t n,
                                  uint64_t k, uint32_t *idx);
/* Raw values for an all-reduce: out[j] = x[idx[j]]; and acc[idx[j]] +=
 * alpha * values[j] (decode_accumulate's arithmetic). idx strictly increasing
 * and below n, else GW_ERR_INVALID_ARGUMENT; non-finite values are
 * GW_ERR_NONFINITE (acc unchanged). */
GW_API gw_status gw_gather(const float *x, uint64_t n, const uint32_t *idx, size_t k, float *out);
GW_API gw_status gw_scatter_add(const float *values, const uint32_t *idx, size_t k, float alpha,
                                float *acc, uint64_t n);
/* A 16-bit all-reduce with error feedback (the DDP hook's methods fp16 and
 * bf16), one pass: for i < n, in float32, y = e[i] + alpha * x[i] (t = alpha *
 * x[i], then e[i] + t; no FMA), out[i] = y as `dtype` (GW_DTYPE_F16 or
 * GW_DTYPE_BF16, 16-bit values in host byte order, rounded as the fp16 / bf16
 * codecs round: to nearest even, a finite y beyond the format's range
 * saturated at its largest finite value) and e[i] = y - out[i] (exact, but
 * where the cast saturated: rounded). So what goes out plus what is kept is
 * what came in. A y that is NaN or Inf goes out as it is (NaN / Inf) and
 * leaves e[i] as it was; *nonfinite (may be NULL) counts them. alpha must be
 * finite; x, e and out must not overlap. */
GW_API gw_status gw_ef_cast(const float *x, uint64_t n, float alpha, float *e, gw_dtype dtype,
                            void *out, uint64_t *nonfinite);
/* Contraction of any codec on x: ||x - C(x)||^2 / ||x||^2 (0 for x = 0);
 * ctx as for gw_encode (may be NULL). GW_ERR_OVERFLOW if x - C(x) is not
 * finite (the 1-bit quantizer rounding to the far level near FLT_MAX). */
GW_API gw_status gw_codec_contraction(const gw_codec_spec *spec, const gw_encode_ctx *ctx,
                                      const float *x, uint64_t n, double *ratio);
/* Compression ratio of a valid frame: 4 * count / frame bytes. */
GW_API gw_status gw_frame_compression_ratio(const void *frame, size_t size, double *ratio);

/* ------------------------------------------------------------------------ */
/* Frames                                                                     */
/* ------------------------------------------------------------------------ */
/* Total size of the frame whose first `size` (>= GW_FRAME_HEADER_SIZE)
 * bytes are at `header`, from the fixed header alone (its own CRC checked),
 * so a reader on a byte stream knows how many bytes to wait for. Format 1
 * headers are shorter (26 bytes) and carry no header CRC. */
GW_API gw_status gw_frame_size(const void *header, size_t size, size_t *frame_size);

#define GW_FRAME_FLAG_ZSTD 1u   /* the payload went through the zstd stage */

#define GW_FRAME_INFO_VERSION 1
typedef struct gw_frame_info {
    unsigned int version;      /* set by the caller: GW_FRAME_INFO_VERSION */
    unsigned int format_version;
    gw_codec_id codec;
    unsigned int flags;        /* GW_FRAME_FLAG_* */
    uint64_t tag;              /* 0 in format 1 frames */
    uint64_t count;            /* elements */
    uint64_t payload_size;     /* bytes on the wire */
    uint64_t frame_size;       /* bytes of the whole frame, checksums included */
} gw_frame_info;
#define GW_FRAME_INFO_INIT { GW_FRAME_INFO_VERSION, 0, (gw_codec_id)0, 0, 0, 0, 0, 0 }
GW_API gw_status gw_frame_info_init(gw_frame_info *info, unsigned int version);

/* Validate the whole frame starting at `frame` (header, lengths, params,
 * checksum, payload) without writing any output. `size` may exceed the
 * frame (a stream of frames): info->frame_size tells where the next starts. */
GW_API gw_status gw_frame_inspect(const void *frame, size_t size, gw_frame_info *info);
/* A new spec holding the codec and parameters of a valid frame. */
GW_API gw_status gw_frame_spec(const void *frame, size_t size, gw_codec_spec **spec);

/* ------------------------------------------------------------------------ */
/* Worker error feedback (dist-EF-SGD / dist-EF-blockSGDM / signum worker)    */
/* ------------------------------------------------------------------------ */
#define GW_WORKER_OPTIONS_VERSION 2
typedef struct gw_worker_options {
    unsigned int version;      /* GW_WORKER_OPTIONS_VERSION */
    uint64_t n;                /* tensor (or slice) length, 1..GW_MAX_ELEMENTS */
    gw_momentum momentum;
    float mu;                  /* momentum / signum beta in [0, 1); 0 with MOMENTUM_NONE */
    int error_feedback;        /* 1: keep the residual e (default); 0: drop it */
    uint32_t tensor;           /* tensor id: frames are tagged GW_TAG(tensor, step) */
    uint64_t seed;             /* for stochastic codecs */
    gw_simd_target simd;       /* version 2: kernels (see gw_allocator) */
    const gw_allocator* allocator; /* version 2: NULL = malloc */
} gw_worker_options;
#define GW_WORKER_OPTIONS_INIT \
    { GW_WORKER_OPTIONS_VERSION, 0, GW_MOMENTUM_NESTEROV, 0.9f, 1, 0, 0, GW_SIMD_AUTO, NULL }
GW_API gw_status gw_worker_options_init(gw_worker_options *opts, unsigned int version);

typedef struct gw_worker gw_worker;
/* The handle keeps its own copy of `codec`. */
GW_API gw_status gw_worker_create(gw_worker **worker, const gw_worker_options *opts,
                                  const gw_codec_spec *codec);
GW_API void gw_worker_free(gw_worker *worker);
/* Size of the largest frame gw_worker_step writes. */
GW_API gw_status gw_worker_frame_bound(const gw_worker *worker, size_t *bound);
/* One step: combine grad[0..n) (of type `dtype`; n must equal the handle's)
 * with momentum and residual (rescaled by lr_prev/lr), compress, keep the
 * residual. lr must be finite and > 0. grad must not overlap frame. The first
 * F16/BF16 step allocates n floats of conversion space, once. */
GW_API gw_status gw_worker_step(gw_worker *worker, const void *grad, gw_dtype dtype, uint64_t n,
                                float lr, void *frame, size_t capacity, size_t *written);
/* Steps taken so far (the round the next frame is tagged with). */
GW_API gw_status gw_worker_step_count(const gw_worker *worker, uint64_t *steps);
/* Copies of the state vectors (length n) for diagnostics. */
GW_API gw_status gw_worker_residual(const gw_worker *worker, float *out, uint64_t n);
GW_API gw_status gw_worker_momentum(const gw_worker *worker, float *out, uint64_t n);
GW_API gw_status gw_worker_save_bound(const gw_worker *worker, size_t *bound);
GW_API gw_status gw_worker_save(const gw_worker *worker, void *blob, size_t capacity,
                                size_t *written);
/* Restore into a handle created with the same options and codec. */
GW_API gw_status gw_worker_load(gw_worker *worker, const void *blob, size_t size);

/* ------------------------------------------------------------------------ */
/* Server error feedback (two-way compression; optional slice ownership)      */
/* ------------------------------------------------------------------------ */
#define GW_SERVER_OPTIONS_VERSION 2
typedef struct gw_server_options {
    unsigned int version;      /* GW_SERVER_OPTIONS_VERSION */
    uint64_t total;            /* length of the whole tensor */
    uint64_t offset;           /* this server owns [offset, offset+length) */
    uint64_t length;           /* may be 0 (gw_shard_range of a short tensor) */
    uint32_t num_workers;      /* M >= 1 frames averaged per step */
    int error_feedback;        /* 1: keep e_s (default); 0: none (majority vote with SIGN) */
    uint32_t tensor;           /* tensor id: pushes must be tagged GW_TAG(tensor, step) */
    int check_tag;             /* 1 (default): reject frames of another tensor or round */
    gw_simd_target simd;       /* version 2: kernels (see gw_allocator) */
    const gw_allocator* allocator; /* version 2: NULL = malloc */
} gw_server_options;
#define GW_SERVER_OPTIONS_INIT \
    { GW_SERVER_OPTIONS_VERSION, 0, 0, 0, 1, 1, 0, 1, GW_SIMD_AUTO, NULL }
GW_API gw_status gw_server_options_init(gw_server_options *opts, unsigned int version);

/* Contiguous partition of `total` elements into `parts` slices: slice `index`
 * is [*offset, *offset + *length). The first total % parts slices get one
 * more; when parts > total the last ones are empty (length 0). */
GW_API gw_status gw_shard_range(uint64_t total, uint32_t parts, uint32_t index,
                                uint64_t *offset, uint64_t *length);

typedef struct gw_server gw_server;
/* `broadcast`: what the server sends. `expect`: the codec and parameters
 * workers must push (GW_ERR_CODEC_MISMATCH otherwise), or NULL for any. With
 * error feedback off and a SIGN broadcast the server runs signSGD's majority
 * vote: it counts votes exactly and accepts only SIGN frames. */
GW_API gw_status gw_server_create(gw_server **server, const gw_server_options *opts,
                                  const gw_codec_spec *broadcast, const gw_codec_spec *expect);
GW_API void gw_server_free(gw_server *server);
GW_API gw_status gw_server_frame_bound(const gw_server *server, size_t *bound);
/* Add one worker frame (holding `length` elements). A rejected frame leaves
 * the round untouched. At most M pushes per round (GW_ERR_SEQUENCE). */
GW_API gw_status gw_server_push(gw_server *server, const void *frame, size_t size);
/* After exactly M pushes: q = mean + r e_s, broadcast C(q), e_s = q - C(q).
 * The frame is tagged GW_TAG(tensor, step). */
GW_API gw_status gw_server_step(gw_server *server, float lr, void *frame, size_t capacity,
                                size_t *written);
/* A whole round at once, with no push in it yet: the M worker frames
 * (count == M, else GW_ERR_SEQUENCE), then the step. The same bits as
 * gw_server_push of frames[0..M) in order and gw_server_step, but all frames
 * are checked first (on an error nothing changes and *bad, if not NULL, is
 * the first rejected frame's index, SIZE_MAX if no frame is to blame), and
 * with sign, scaled-sign, fp16, bf16 or identity pushes the work is tiled: a
 * scaled-sign broadcast never writes the round's sum to memory. */
GW_API gw_status gw_server_round(gw_server *server, const void *const *frames,
                                 const size_t *sizes, size_t count, float lr, void *frame,
                                 size_t capacity, size_t *written, size_t *bad);
/* Drop the pushes of the current round (e.g. after a transport failure). */
GW_API gw_status gw_server_reset_round(gw_server *server);
GW_API gw_status gw_server_step_count(const gw_server *server, uint64_t *steps);
GW_API gw_status gw_server_residual(const gw_server *server, float *out, uint64_t n);
GW_API gw_status gw_server_save_bound(const gw_server *server, size_t *bound);
GW_API gw_status gw_server_save(const gw_server *server, void *blob, size_t capacity,
                                size_t *written);
GW_API gw_status gw_server_load(gw_server *server, const void *blob, size_t size);

/* ------------------------------------------------------------------------ */
/* ScaleCom: CLT-k with low-pass filtered memory (one handle per tensor)     */
/* ------------------------------------------------------------------------ */
/* One round, on every worker (docs/algorithms.md s.4):
 *   gw_cltk_begin    a = m + lr * g
 *   gw_cltk_leader   who selects this round (step mod M, or the override);
 *   gw_cltk_select   the leader only, once, before its extract: the index
 *                    frame of its chunk-wise top-k, which the transport
 *                    broadcasts
 *   gw_cltk_extract  values = a at the frame's indices: a raw float buffer of
 *                    the same length and order on every worker, for an
 *                    ordinary sum all-reduce
 *   gw_cltk_apply    with the summed buffer: x[I] -= sum / M (x optional) and
 *                    m = (1 - beta) m + beta (a - what was sent)
 * A call out of order returns GW_ERR_SEQUENCE (checked right after NULL
 * pointers, before the other arguments) and changes nothing. The first
 * warmup_steps rounds are dense: no leader (GW_CLTK_NO_LEADER), extract with
 * no frame gives all n values. Checkpoints are taken between rounds. */
#define GW_CLTK_OPTIONS_VERSION 2
typedef struct gw_cltk_options {
    unsigned int version;      /* GW_CLTK_OPTIONS_VERSION */
    uint64_t n;                /* tensor length, 1..2^32-1 */
    uint32_t num_workers;      /* M >= 1 */
    uint32_t rank;             /* this worker, < M */
    float beta;                /* low-pass filter in (0, 1]; 1 = plain error feedback */
    uint64_t warmup_steps;     /* dense rounds before compression starts */
    uint32_t tensor;           /* index frames are tagged GW_TAG(tensor, step) */
    gw_simd_target simd;       /* version 2: kernels (see gw_allocator) */
    const gw_allocator* allocator; /* version 2: NULL = malloc */
} gw_cltk_options;
#define GW_CLTK_OPTIONS_INIT \
    { GW_CLTK_OPTIONS_VERSION, 0, 1, 0, 1.0f, 0, 0, GW_SIMD_AUTO, NULL }
GW_API gw_status gw_cltk_options_init(gw_cltk_options *opts, unsigned int version);

/* gw_cltk_leader during a dense warm-up round; for gw_cltk_set_leader: cyclic. */
#define GW_CLTK_NO_LEADER 0xFFFFFFFFu
#define GW_CLTK_CYCLIC 0xFFFFFFFFu

typedef struct gw_cltk gw_cltk;
/* `index`: a GW_CODEC_INDEX spec (k or density, chunk size); the handle keeps a copy. */
GW_API gw_status gw_cltk_create(gw_cltk **cltk, const gw_cltk_options *opts,
                                const gw_codec_spec *index);
GW_API void gw_cltk_free(gw_cltk *cltk);
/* Largest index frame gw_cltk_select writes. */
GW_API gw_status gw_cltk_index_frame_bound(const gw_cltk *cltk, size_t *bound);
/* Largest value buffer, in floats (k, or n when there are warm-up rounds). */
GW_API gw_status gw_cltk_values_bound(const gw_cltk *cltk, size_t *count);
GW_API gw_status gw_cltk_leader(const gw_cltk *cltk, uint32_t *leader);
/* Fix the leader (a rank < M) from the next round on, or GW_CLTK_CYCLIC.
 * Every worker must make the same call. Between rounds only. */
GW_API gw_status gw_cltk_set_leader(gw_cltk *cltk, uint32_t leader);
GW_API gw_status gw_cltk_begin(gw_cltk *cltk, const void *grad, gw_dtype dtype, uint64_t n,
                               float lr);
GW_API gw_status gw_cltk_select(gw_cltk *cltk, void *frame, size_t capacity, size_t *written);
/* The leader's index frame (tag GW_TAG(tensor, step), the handle's index
 * spec, n elements), or NULL/0 in a dense round. values must not overlap it. */
GW_API gw_status gw_cltk_extract(gw_cltk *cltk, const void *frame, size_t size, float *values,
                                 size_t capacity, size_t *count);
/* `summed`: the element-wise sum over the M workers of their extracted
 * values (count of them). x[0..n) may be NULL (then only the memory moves). */
GW_API gw_status gw_cltk_apply(gw_cltk *cltk, const float *summed, size_t count, float *x,
                               uint64_t n);
/* Abandon the round in progress (e.g. after a transport failure). */
GW_API gw_status gw_cltk_reset_round(gw_cltk *cltk);
GW_API gw_status gw_cltk_step_count(const gw_cltk *cltk, uint64_t *steps);
GW_API gw_status gw_cltk_memory(const gw_cltk *cltk, float *out, uint64_t n);
/* Indices of the last extracted round, increasing (0..n-1 in a dense round). */
GW_API gw_status gw_cltk_indices(const gw_cltk *cltk, uint32_t *idx, size_t capacity,
                                 size_t *count);
GW_API gw_status gw_cltk_save_bound(const gw_cltk *cltk, size_t *bound);
/* GW_ERR_SEQUENCE in the middle of a round. */
GW_API gw_status gw_cltk_save(const gw_cltk *cltk, void *blob, size_t capacity,
                              size_t *written);
/* Restore into a handle created with the same options and index spec; a
 * round in progress is abandoned. */
GW_API gw_status gw_cltk_load(gw_cltk *cltk, const void *blob, size_t size);

/* ScaleCom's per-layer compression guidance from the layer's FLOPs per
 * gradient element at the per-worker batch the paper used (32 for vision and
 * speech): 400 up to 128, 50 below 196, 25 from 196 up. */
GW_API gw_status gw_scalecom_rate(double flops_per_gradient, uint32_t *rate);

/* Indices of an index frame (GW_CODEC_INDEX), increasing. *count is set
 * whenever the frame is valid, so (NULL, 0) asks for the count
 * (GW_ERR_BUFFER_TOO_SMALL when it is not 0). */
GW_API gw_status gw_index_frame_indices(const void *frame, size_t size, uint32_t *idx,
                                        size_t capacity, size_t *count);
/* Overlap of two increasing index sets: |A and B| / max(|A|, |B|), 1 when
 * both are empty (1 - the normalized Hamming distance ScaleCom plots). */
GW_API gw_status gw_index_overlap(const uint32_t *a, size_t na, const uint32_t *b, size_t nb,
                                  double *overlap);

/* ------------------------------------------------------------------------ */
/* Counter-based random numbers (Philox4x32-10)                              */
/* ------------------------------------------------------------------------ */
/* Element i of (seed, step, tensor) is a pure function of those four values:
 * out[j] is the value for element first + j. */
GW_API gw_status gw_rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first,
                            uint32_t *out, size_t n);
/* Uniform floats in [0, 1) with 24 random bits each. */
GW_API gw_status gw_rng_uniform(uint64_t seed, uint32_t step, uint32_t tensor,
                                uint64_t first, float *out, size_t n);

/* ------------------------------------------------------------------------ */
/* LAGS-SGD: layer-wise adaptive sparsification (one handle per layer)       */
/* ------------------------------------------------------------------------ */
/* Per layer, as its gradient becomes ready in backward order
 * (docs/algorithms.md s.7):  acc = eps + lr * g;  frame = TopK(acc, k_l);
 * eps = acc - decoded. The caller all-gathers the frames and applies
 * v -= (1/P) sum_p decoded_p (gw_decode_accumulate, alpha = -1/P). Handles
 * of different layers may be driven from different threads at once. */
#define GW_LAGS_LAYER_OPTIONS_VERSION 2
typedef struct gw_lags_layer_options {
    unsigned int version;      /* GW_LAGS_LAYER_OPTIONS_VERSION */
    uint64_t n;                /* layer length, 1..2^32-1 */
    uint32_t tensor;           /* frames are tagged GW_TAG(tensor, step) */
    uint64_t seed;             /* for stochastic selections */
    gw_simd_target simd;       /* version 2: kernels (see gw_allocator) */
    const gw_allocator* allocator; /* version 2: NULL = malloc */
} gw_lags_layer_options;
#define GW_LAGS_LAYER_OPTIONS_INIT \
    { GW_LAGS_LAYER_OPTIONS_VERSION, 0, 0, 0, GW_SIMD_AUTO, NULL }
GW_API gw_status gw_lags_layer_options_init(gw_lags_layer_options *opts, unsigned int version);

typedef struct gw_lags_layer gw_lags_layer;
/* `codec`: a selecting codec taking GW_PARAM_K (TOPK, CHUNK_TOPK, ...); its
 * k (or density) is the first k_l. The handle keeps a copy. */
GW_API gw_status gw_lags_layer_create(gw_lags_layer **layer, const gw_lags_layer_options *opts,
                                      const gw_codec_spec *codec);
GW_API void gw_lags_layer_free(gw_lags_layer *layer);
/* Largest frame a step writes, for any k_l up to n. */
GW_API gw_status gw_lags_layer_frame_bound(const gw_lags_layer *layer, size_t *bound);
/* k_l in 1..n from the next step on (the adaptive ratio, gw_lags_plan). */
GW_API gw_status gw_lags_layer_set_k(gw_lags_layer *layer, uint64_t k);
GW_API gw_status gw_lags_layer_k(const gw_lags_layer *layer, uint64_t *k);
GW_API gw_status gw_lags_layer_step(gw_lags_layer *layer, const void *grad, gw_dtype dtype,
                                    uint64_t n, float lr, void *frame, size_t capacity,
                                    size_t *written);
/* A layer the plan sends dense: out[0..n) = acc (raw floats for a sum
 * all-reduce; apply v -= sum / P), eps = 0. */
GW_API gw_status gw_lags_layer_step_dense(gw_lags_layer *layer, const void *grad,
                                          gw_dtype dtype, uint64_t n, float lr, float *out);
GW_API gw_status gw_lags_layer_residual(const gw_lags_layer *layer, float *out, uint64_t n);
GW_API gw_status gw_lags_layer_step_count(const gw_lags_layer *layer, uint64_t *steps);
GW_API gw_status gw_lags_layer_save_bound(const gw_lags_layer *layer, size_t *bound);
GW_API gw_status gw_lags_layer_save(const gw_lags_layer *layer, void *blob, size_t capacity,
                                    size_t *written);
GW_API gw_status gw_lags_layer_load(gw_lags_layer *layer, const void *blob, size_t size);

/* The alpha-beta model of the collectives (ring algorithms, P workers):
 *   allgather, m bytes per worker:  (P - 1) (allgather_alpha + m allgather_beta)
 *   allreduce, N bytes:             2 (P - 1) allreduce_alpha + 2 (P - 1) / P N allreduce_beta
 * alpha in seconds, beta in seconds per byte. */
#define GW_LAGS_NETWORK_VERSION 1
typedef struct gw_lags_network {
    unsigned int version;      /* GW_LAGS_NETWORK_VERSION */
    uint32_t num_workers;      /* P >= 1 */
    double allgather_alpha, allgather_beta;
    double allreduce_alpha, allreduce_beta;
    uint32_t value_bytes;      /* bytes per sparse value: 4 (f32) or 2 (f16/bf16); indices 4 */
    double max_ratio;          /* c_u >= 1, the paper's upper bound (1000) */
} gw_lags_network;
#define GW_LAGS_NETWORK_INIT { GW_LAGS_NETWORK_VERSION, 1, 0.0, 0.0, 0.0, 0.0, 4, 1000.0 }
GW_API gw_status gw_lags_network_init(gw_lags_network *net, unsigned int version);

typedef enum gw_lags_verdict {
    GW_LAGS_HIDDEN = 1, /* the least compression whose all-gather hides behind the next layer */
    GW_LAGS_CAPPED = 2, /* nothing up to max_ratio hides it: max_ratio */
    GW_LAGS_DENSE  = 3  /* compressing does not pay: all-reduce it dense (step_dense) */
} gw_lags_verdict;

/* Eq. 19 for `layers` layers in backward order: n[j] elements, the measured
 * backward time t_backward[j] (seconds), the sparsification time
 * t_sparsify[j] (may be NULL: 0). Writes ratio[j], k[j] = ceil(n[j] /
 * ratio[j]) and verdict[j]; *t_plan and *t_dense are the modelled ends of
 * the last collective (from the start of backward) for the plan and for
 * all-dense. Each layer takes the shorter of its eq. 19 all-gather and its
 * dense all-reduce, and goes dense too where that does not delay the end:
 * under the model, *t_plan is never later than *t_dense nor than eq. 19 on
 * every layer. */
GW_API gw_status gw_lags_plan(const gw_lags_network *net, size_t layers, const uint64_t *n,
                              const double *t_backward, const double *t_sparsify, double *ratio,
                              uint64_t *k, gw_lags_verdict *verdict, double *t_plan,
                              double *t_dense);
/* The pipelining bound over SLGS: S_max = 1 + 1 / (t_f / min(t_c, t_b) +
 * max(r, 1/r)), r = t_c / t_b (forward, backward, communication times). */
GW_API gw_status gw_lags_s_max(double t_f, double t_b, double t_c, double *s_max);
/* Assumption 1's delta = ||s - sum_p TopK(x_p, k)||^2 / ((1 - k/n) ||s||^2),
 * s = sum_p x_p over `workers` vectors xs[p][0..n); the denominator is the
 * expectation of ||s - RandK(s, k)||^2. 0 when the numerator is 0, +Inf when
 * only the denominator is (k = n or s = 0). Holds when delta <= 1. */
GW_API gw_status gw_sparsity_delta(const float *const *xs, uint32_t workers, uint64_t n,
                                   uint64_t k, double *delta);

/* Fusion buffer: the frames of small sparsified layers merged into one
 * bundle (docs/wire-format.md, "Bundles"). gw_fusion_add may be called from
 * several threads at once (it locks); the bundle lists frames by layer, so its
 * bytes do not depend on the order in which layers finished. */
#define GW_FUSION_MAX_LAYERS 65536u
#define GW_FUSION_OPTIONS_VERSION 2
typedef struct gw_fusion_options {
    unsigned int version;      /* GW_FUSION_OPTIONS_VERSION */
    size_t capacity;           /* flush once this many frame bytes are pending */
    uint32_t layers;           /* layers per iteration, 1..GW_FUSION_MAX_LAYERS */
    gw_simd_target simd;       /* version 2: kernels (see gw_allocator) */
    const gw_allocator* allocator; /* version 2: NULL = malloc */
} gw_fusion_options;
#define GW_FUSION_OPTIONS_INIT \
    { GW_FUSION_OPTIONS_VERSION, (size_t)1 << 16, 0, GW_SIMD_AUTO, NULL }
GW_API gw_status gw_fusion_options_init(gw_fusion_options *opts, unsigned int version);

typedef struct gw_fusion gw_fusion;
GW_API gw_status gw_fusion_create(gw_fusion **fusion, const gw_fusion_options *opts);
GW_API void gw_fusion_free(gw_fusion *fusion);
/* Copy a valid frame in as layer `layer` (< layers; once per iteration, else
 * GW_ERR_SEQUENCE). *flush = 1 when the bundle should go out now: the
 * pending bytes reached the capacity, or every layer of the iteration is in. */
GW_API gw_status gw_fusion_add(gw_fusion *fusion, uint32_t layer, const void *frame, size_t size,
                               int *flush);
/* Bytes the next gw_fusion_flush writes; frames waiting in the buffer. */
GW_API gw_status gw_fusion_bundle_size(const gw_fusion *fusion, size_t *size);
GW_API gw_status gw_fusion_pending(const gw_fusion *fusion, size_t *frames);
/* Write the pending frames as one bundle (ordered by layer) and empty the
 * buffer; after the iteration's last layer the next iteration begins. The
 * buffer holds no state between iterations, so there is nothing to
 * checkpoint: take checkpoints after the last flush. */
GW_API gw_status gw_fusion_flush(gw_fusion *fusion, void *bundle, size_t capacity,
                                 size_t *written);

typedef struct gw_bundle_entry {
    uint32_t layer;            /* the slot it was added as */
    size_t offset;             /* of the frame within the bundle */
    size_t size;               /* bytes of the frame */
} gw_bundle_entry;
/* Validate an untrusted bundle (its structure, checksum and every frame in it)
 * and list its frames: *count is set whenever the bundle is valid; entries
 * are written if capacity allows (GW_ERR_BUFFER_TOO_SMALL otherwise). */
GW_API gw_status gw_bundle_frames(const void *bundle, size_t size, gw_bundle_entry *entries,
                                  size_t capacity, size_t *count);

/* ------------------------------------------------------------------------ */
/* Double quantization: AsyLPG, Sparse-AsyLPG, Acc-AsyLPG (docs/algorithms.md */
/* s.6), a master and its workers over any transport                         */
/* ------------------------------------------------------------------------ */
/* Per epoch: the master's snapshot x~ goes to every worker in full precision
 * (gw_asylpg_master_snapshot -> gw_asylpg_worker_set_snapshot) and the full
 * gradient at x~ comes back to the master (gw_asylpg_master_begin_epoch);
 * then epoch_length updates, each one: the master's model frame (the
 * quantized x, tagged with its version) goes to a worker
 * (gw_asylpg_worker_receive), the worker computes its gradient at that model
 * and at x~ on the same sample and returns the quantized difference
 * (gw_asylpg_worker_step), the master applies it (gw_asylpg_master_push).
 * Workers may run asynchronously: a gradient frame is accepted if computed
 * on a model at most tau versions old (GW_ERR_STALE otherwise). */
#define GW_ASYLPG_MASTER_OPTIONS_VERSION 2
typedef struct gw_asylpg_master_options {
    unsigned int version;      /* GW_ASYLPG_MASTER_OPTIONS_VERSION */
    uint64_t n;                /* model length */
    gw_asylpg_variant variant;
    float lr;                  /* step size eta > 0 */
    float l1, l2;              /* h(x) = l1 ||x||_1 + l2/2 ||x||^2 (prox step), >= 0 */
    uint64_t epoch_length;     /* m updates per epoch, >= 1 */
    uint32_t tau;              /* delay bound: accepted gradient age in versions */
    float mu;                  /* mu-condition E||Q(x)-x||^2 <= mu ||x - x~||^2 (Acc: theta_s mu) */
    unsigned int bits_min;     /* b_x range of the model quantizer (1..8 or 16); */
    unsigned int bits_max;     /*   both 0: full-precision model messages */
    uint32_t model_block;      /* block_size of the model quantizer, 0 = whole model */
    uint32_t tensor;           /* frames are tagged GW_TAG(tensor, version) */
    uint64_t seed;             /* model quantizer's random stream */
    gw_simd_target simd;       /* version 2: kernels (see gw_allocator) */
    const gw_allocator* allocator; /* version 2: NULL = malloc */
} gw_asylpg_master_options;
#define GW_ASYLPG_MASTER_OPTIONS_INIT                                                             \
    {                                                                                             \
        GW_ASYLPG_MASTER_OPTIONS_VERSION, 0, GW_ASYLPG_PLAIN, 0.1f, 0.0f, 0.0f, 1, 0, 1.0f, 8, 8, \
            0, 0, 0, GW_SIMD_AUTO, NULL                                                           \
    }
GW_API gw_status gw_asylpg_master_options_init(gw_asylpg_master_options *opts, unsigned int version);

typedef struct gw_asylpg_master gw_asylpg_master;
/* x0[0..n): the initial model and first snapshot (n != opts->n:
 * GW_ERR_COUNT_MISMATCH). */
GW_API gw_status gw_asylpg_master_create(gw_asylpg_master **master,
                                         const gw_asylpg_master_options *opts, const float *x0,
                                         uint64_t n);
GW_API void gw_asylpg_master_free(gw_asylpg_master *master);
GW_API gw_status gw_asylpg_master_frame_bound(const gw_asylpg_master *master, size_t *bound);
/* The snapshot x~ of the coming (or current) epoch. */
GW_API gw_status gw_asylpg_master_snapshot(const gw_asylpg_master *master, float *out, uint64_t n);
/* Start an epoch with the full gradient at the snapshot (GW_ERR_SEQUENCE
 * while an epoch is running). */
GW_API gw_status gw_asylpg_master_begin_epoch(gw_asylpg_master *master, const float *full_grad,
                                              uint64_t n);
/* The model message: Q_(delta_x, b_x)(x) with the smallest b_x meeting the
 * mu-condition (quant codec), an empty frame (count 0) when x equals the
 * snapshot, or an identity frame (bits_max 0). *bits: b_x, 0 or 32. */
GW_API gw_status gw_asylpg_master_model(gw_asylpg_master *master, void *frame, size_t capacity,
                                        size_t *written, unsigned int *bits);
/* Apply one worker's gradient frame (any codec, count n, this tensor). The
 * epoch ends after epoch_length accepted frames. */
GW_API gw_status gw_asylpg_master_push(gw_asylpg_master *master, const void *frame, size_t size);
GW_API gw_status gw_asylpg_master_params(const gw_asylpg_master *master, float *out, uint64_t n);
/* Epoch s (from 1), updates done in it, versions (updates) in all, and 1 if
 * an epoch is running (0: waiting for gw_asylpg_master_begin_epoch). */
GW_API gw_status gw_asylpg_master_progress(const gw_asylpg_master *master, uint64_t *epoch,
                                           uint64_t *inner, uint64_t *version, int *running);
GW_API gw_status gw_asylpg_master_save_bound(const gw_asylpg_master *master, size_t *bound);
GW_API gw_status gw_asylpg_master_save(const gw_asylpg_master *master, void *blob,
                                       size_t capacity, size_t *written);
GW_API gw_status gw_asylpg_master_load(gw_asylpg_master *master, const void *blob, size_t size);

#define GW_ASYLPG_WORKER_OPTIONS_VERSION 2
typedef struct gw_asylpg_worker_options {
    unsigned int version;      /* GW_ASYLPG_WORKER_OPTIONS_VERSION */
    uint64_t n;
    uint32_t tensor;           /* the master's tensor id */
    uint64_t seed;             /* this worker's random stream: give each worker its own */
    gw_simd_target simd;       /* version 2: kernels (see gw_allocator) */
    const gw_allocator* allocator; /* version 2: NULL = malloc */
} gw_asylpg_worker_options;
#define GW_ASYLPG_WORKER_OPTIONS_INIT \
    { GW_ASYLPG_WORKER_OPTIONS_VERSION, 0, 0, 0, GW_SIMD_AUTO, NULL }
GW_API gw_status gw_asylpg_worker_options_init(gw_asylpg_worker_options *opts, unsigned int version);

typedef struct gw_asylpg_worker gw_asylpg_worker;
/* `codec`: the gradient message, e.g. QUANT with GW_PARAM_BITS b (AsyLPG),
 * SPARSE_QUANT (Sparse-AsyLPG) or IDENTITY (full precision). */
GW_API gw_status gw_asylpg_worker_create(gw_asylpg_worker **worker,
                                         const gw_asylpg_worker_options *opts,
                                         const gw_codec_spec *codec);
GW_API void gw_asylpg_worker_free(gw_asylpg_worker *worker);
GW_API gw_status gw_asylpg_worker_frame_bound(const gw_asylpg_worker *worker, size_t *bound);
GW_API gw_status gw_asylpg_worker_set_snapshot(gw_asylpg_worker *worker, const float *snapshot,
                                               uint64_t n);
/* Take a model frame from the master (GW_ERR_SEQUENCE before a snapshot). */
GW_API gw_status gw_asylpg_worker_receive(gw_asylpg_worker *worker, const void *frame,
                                          size_t size);
/* The model to compute the next gradient at, and its version. */
GW_API gw_status gw_asylpg_worker_model(const gw_asylpg_worker *worker, float *out, uint64_t n,
                                        uint64_t *version);
/* alpha = grad_model - grad_snapshot (the same sample at the model and at
 * x~), compressed with the worker's codec, tagged with the model's version. */
GW_API gw_status gw_asylpg_worker_step(gw_asylpg_worker *worker, const void *grad_model,
                                       const void *grad_snapshot, gw_dtype dtype, uint64_t n,
                                       void *frame, size_t capacity, size_t *written);
GW_API gw_status gw_asylpg_worker_save_bound(const gw_asylpg_worker *worker, size_t *bound);
GW_API gw_status gw_asylpg_worker_save(const gw_asylpg_worker *worker, void *blob,
                                       size_t capacity, size_t *written);
GW_API gw_status gw_asylpg_worker_load(gw_asylpg_worker *worker, const void *blob, size_t size);

/* ------------------------------------------------------------------------ */
/* Re-sharding checkpoints: the state of M workers becomes that of M'        */
/* (docs/algorithms.md s.9; docs/c-api.md, "Re-sharding")                    */
/* ------------------------------------------------------------------------ */
/* One saved blob and whose it is. */
typedef struct gw_reshard_part {
    const void *blob;
    size_t size;
    uint32_t rank;    /* the old worker (0..M-1) it was saved by; server and AsyLPG
                         master blobs: ignored */
    uint64_t offset;  /* a worker blob of a slice: the slice's first element in the
                         tensor (0 for a whole tensor); server blobs carry their own */
} gw_reshard_part;

#define GW_RESHARD_OPTIONS_VERSION 1
typedef struct gw_reshard_options {
    unsigned int version;   /* GW_RESHARD_OPTIONS_VERSION */
    uint32_t workers_in;    /* M, the workers the parts were saved by */
    uint32_t workers_out;   /* M' */
    uint32_t rank_out;      /* the new worker whose blob is built, below M' */
    uint64_t offset;        /* the tensor range the new blob holds: a worker's slice, */
    uint64_t length;        /*   a server's (gw_shard_range); CLT-k, LAGS: 0 and n */
} gw_reshard_options;
#define GW_RESHARD_OPTIONS_INIT { GW_RESHARD_OPTIONS_VERSION, 1, 1, 0, 0, 0 }
GW_API gw_status gw_reshard_options_init(gw_reshard_options *opts, unsigned int version);

/* Build rank_out's blob, for a handle of M' workers, from saved blobs of one
 * kind (worker, server, CLT-k, LAGS layer, AsyLPG master or worker): worker
 * residuals, momenta, LAGS residuals and CLT-k memories become the mean over
 * the M old workers (rank_out's own at M' = M); server residuals are cut and
 * joined at the new slice; the total error-feedback mass is kept. Worker
 * kinds need, of every old rank, the parts covering [offset, offset+length)
 * (only rank_out's at M' = M); a server, only the slices covering it.
 * *written: the blob's size; with GW_ERR_BUFFER_TOO_SMALL the size needed
 * (capacity 0 and out NULL ask for it); 0 for a new AsyLPG worker (rank_out
 * >= M), which starts from a fresh handle. Every part is checked as a loader
 * checks it (GW_ERR_STATE_*); parts of other configurations (the tensor id
 * included: slices of one tensor share it) are GW_ERR_STATE_MISMATCH, a
 * server mid-round GW_ERR_SEQUENCE. For server blobs rank_out only needs to
 * be below M'. */
GW_API gw_status gw_reshard(const gw_reshard_part *parts, size_t count,
                            const gw_reshard_options *opts, void *out, size_t capacity,
                            size_t *written);

/* CRC32C (Castagnoli) as used by frames and state blobs. */
GW_API gw_status gw_crc32c(const void *data, size_t size, uint32_t *crc);

#ifdef __cplusplus
}
#endif
#endif /* GRADWIRE_H */
