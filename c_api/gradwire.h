/*
 * gradwire: gradient compressors and error-feedback state machines
 * for communication-efficient distributed training.  Public C99 ABI.
 *
 * Rules every function follows (see docs/c-api.md):
 *  - returns a gw_status; GW_OK is 0, errors are negative and never renumbered;
 *  - the caller owns every output buffer; `*_bound` functions size them;
 *  - on any error, outputs and handle state are left exactly as they were;
 *  - stateless calls are reentrant; a handle is used by one thread at a time;
 *    different handles may be used concurrently;
 *  - free functions accept NULL.
 */
#ifndef GRADWIRE_H
#define GRADWIRE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One source of truth for the version: meson.build reads these three lines. */
#define GW_VERSION_MAJOR 0
#define GW_VERSION_MINOR 1
#define GW_VERSION_PATCH 0
#define GW_VERSION_NUMBER (GW_VERSION_MAJOR * 10000 + GW_VERSION_MINOR * 100 + GW_VERSION_PATCH)

/* Wire format version written into every frame (independent of the library version). */
#define GW_FRAME_FORMAT_VERSION 1

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
/* Status codes: fixed values, append only.                                   */
/* ------------------------------------------------------------------------ */
typedef enum gw_status {
    GW_OK                     = 0,
    GW_ERR_NULL_POINTER       = -1,  /* a required pointer argument was NULL */
    GW_ERR_INVALID_ARGUMENT   = -2,  /* an argument is out of its documented range */
    GW_ERR_BUFFER_TOO_SMALL   = -3,  /* output capacity below the `_bound` / element count */
    GW_ERR_OUT_OF_MEMORY      = -4,
    GW_ERR_UNSUPPORTED        = -5,  /* e.g. a SIMD target this CPU or build lacks */
    GW_ERR_OPTIONS_VERSION    = -6,  /* an options/info struct has an unknown version */
    GW_ERR_NONFINITE          = -7,  /* NaN or Inf in an input vector (nothing was written) */
    GW_ERR_SEQUENCE           = -8,  /* call out of order (e.g. server step before all pushes) */
    GW_ERR_COUNT_MISMATCH     = -9,  /* frame element count differs from the tensor length */
    GW_ERR_CODEC_MISMATCH     = -10, /* frame codec/params differ from what the handle expects */
    GW_ERR_FRAME_TRUNCATED    = -20, /* fewer bytes than the header or its lengths require */
    GW_ERR_FRAME_MAGIC        = -21,
    GW_ERR_FRAME_VERSION      = -22, /* unknown frame format version */
    GW_ERR_FRAME_CODEC        = -23, /* unknown codec id */
    GW_ERR_FRAME_FLAGS        = -24, /* a reserved flag bit is set */
    GW_ERR_FRAME_CHECKSUM     = -25, /* CRC32C mismatch */
    GW_ERR_FRAME_LENGTH       = -26, /* payload length inconsistent with count and params */
    GW_ERR_FRAME_PARAMS       = -27, /* codec parameters malformed */
    GW_ERR_FRAME_PAYLOAD      = -28, /* payload content invalid (e.g. non-finite scale) */
    GW_ERR_FRAME_TRAILING     = -29, /* bytes after the frame's checksum */
    GW_ERR_STATE_MAGIC        = -40, /* checkpoint blob: not a gradwire state blob */
    GW_ERR_STATE_VERSION      = -41,
    GW_ERR_STATE_CHECKSUM     = -42,
    GW_ERR_STATE_MISMATCH     = -43, /* blob is for another kind/size/configuration of handle */
    GW_ERR_STATE_CORRUPT      = -44, /* blob structure or contents invalid */
    GW_ERR_INTERNAL           = -99
} gw_status;

/* Static message for a status code; never NULL ("unknown status" for others). */
GW_API const char *gw_status_str(gw_status status);

/* Runtime version: GW_VERSION_NUMBER of the library actually loaded. */
GW_API unsigned int gw_version_number(void);
GW_API const char *gw_version_string(void);

/* ------------------------------------------------------------------------ */
/* SIMD targets                                                               */
/* ------------------------------------------------------------------------ */
typedef enum gw_simd_target {
    GW_SIMD_AUTO    = 0, /* best the CPU supports (default) */
    GW_SIMD_SCALAR  = 1,
    GW_SIMD_SSE2    = 2,
    GW_SIMD_SSE4_2  = 3,
    GW_SIMD_AVX2    = 4,
    GW_SIMD_AVX512  = 5  /* AVX-512 F/CD/DQ/BW */
} gw_simd_target;

/* Force a target for the whole process (tests, benchmarks). The environment
 * variable GW_SIMD=scalar|sse2|sse4.2|avx2|avx512 does the same at load.
 * Every target produces bit-identical outputs. */
GW_API gw_status gw_simd_set_target(gw_simd_target target);
GW_API gw_simd_target gw_simd_active_target(void);
/* 1 if `target` is compiled in and supported by this CPU, else 0. */
GW_API int gw_simd_target_supported(gw_simd_target target);
GW_API const char *gw_simd_target_name(gw_simd_target target);

/* ------------------------------------------------------------------------ */
/* Codecs                                                                     */
/* ------------------------------------------------------------------------ */
/* Codec ids are wire values: 1..127 built in, 128..255 reserved. */
typedef enum gw_codec_id {
    GW_CODEC_IDENTITY    = 1, /* float32 as is */
    GW_CODEC_FP16        = 2, /* IEEE half, round to nearest even, saturating */
    GW_CODEC_BF16        = 3, /* bfloat16, round to nearest even, saturating */
    GW_CODEC_SIGN        = 4, /* 1 bit per element, decodes to +-1 (signSGD) */
    GW_CODEC_SCALED_SIGN = 5  /* blockwise ||v_b||_1/d_b * sign(v_b) */
} gw_codec_id;

#define GW_CODEC_OPTIONS_VERSION 1
typedef struct gw_codec_options {
    unsigned int version;   /* GW_CODEC_OPTIONS_VERSION */
    gw_codec_id codec;
    uint32_t block_size;    /* SCALED_SIGN: elements per block, 0 = one block per tensor */
} gw_codec_options;
#define GW_CODEC_OPTIONS_INIT { GW_CODEC_OPTIONS_VERSION, GW_CODEC_SCALED_SIGN, 0 }
GW_API gw_status gw_codec_options_init(gw_codec_options *opts, unsigned int version);

/* Largest frame `gw_encode` can write for n elements. */
GW_API gw_status gw_encode_bound(const gw_codec_options *opts, uint64_t n, size_t *bound);

/* Compress x[0..n) into one frame. Non-finite input -> GW_ERR_NONFINITE. */
GW_API gw_status gw_encode(const gw_codec_options *opts, const float *x, uint64_t n,
                           void *frame, size_t capacity, size_t *written);

/* Decode a frame into out[0..count). `capacity` is out's length in elements;
 * a frame with more elements gets GW_ERR_BUFFER_TOO_SMALL. `count` may be NULL. */
GW_API gw_status gw_decode(const void *frame, size_t size, float *out, uint64_t capacity,
                           uint64_t *count);

/* acc[i] += alpha * decoded[i]; the frame must hold exactly n elements. */
GW_API gw_status gw_decode_accumulate(const void *frame, size_t size, float alpha,
                                      float *acc, uint64_t n);

/* Contraction diagnostic of the blockwise scaled sign (ALGORITHMS.md s.1):
 * phi = min_b ||v_b||_1^2 / (d_b ||v_b||_2^2); all-zero blocks count as 1. */
GW_API gw_status gw_scaled_sign_phi(const float *x, uint64_t n, uint32_t block_size,
                                    double *phi);

/* ------------------------------------------------------------------------ */
/* Frames                                                                     */
/* ------------------------------------------------------------------------ */
#define GW_FRAME_INFO_VERSION 1
typedef struct gw_frame_info {
    unsigned int version;      /* set by the caller: GW_FRAME_INFO_VERSION */
    unsigned int format_version;
    gw_codec_id codec;
    uint32_t block_size;       /* SCALED_SIGN parameter, else 0 */
    uint64_t count;            /* elements */
    uint64_t payload_size;     /* bytes */
    uint64_t frame_size;       /* bytes of the whole frame, checksum included */
} gw_frame_info;
GW_API gw_status gw_frame_info_init(gw_frame_info *info, unsigned int version);

/* Validate header, lengths, params and checksum of the frame starting at
 * `frame` without decoding the payload. `size` may exceed the frame (a stream
 * of frames): info->frame_size tells where the next one starts. */
GW_API gw_status gw_frame_inspect(const void *frame, size_t size, gw_frame_info *info);

/* ------------------------------------------------------------------------ */
/* Worker error feedback (dist-EF-SGD / dist-EF-blockSGDM / signum worker)    */
/* ------------------------------------------------------------------------ */
typedef enum gw_momentum {
    GW_MOMENTUM_NONE     = 0, /* p = g + r e                                */
    GW_MOMENTUM_NESTEROV = 1, /* m = mu m + g; p = mu m + g + r e  (Alg. 4) */
    GW_MOMENTUM_SIGNUM   = 2  /* m = mu m + (1-mu) g; p = m + r e            */
} gw_momentum;

#define GW_WORKER_OPTIONS_VERSION 1
typedef struct gw_worker_options {
    unsigned int version;      /* GW_WORKER_OPTIONS_VERSION */
    uint64_t n;                /* tensor (or slice) length, >= 1 */
    gw_codec_options codec;
    gw_momentum momentum;
    float mu;                  /* momentum / signum beta, in [0, 1) */
    int error_feedback;        /* 1: keep the residual e (default); 0: drop it */
} gw_worker_options;
GW_API gw_status gw_worker_options_init(gw_worker_options *opts, unsigned int version);

typedef struct gw_worker gw_worker;
GW_API gw_status gw_worker_create(gw_worker **worker, const gw_worker_options *opts);
GW_API void gw_worker_free(gw_worker *worker);
/* Size of the frame gw_worker_step writes. */
GW_API gw_status gw_worker_frame_bound(const gw_worker *worker, size_t *bound);
/* One step: combine grad[0..n) with momentum and residual (rescaled by
 * lr_prev/lr), compress, keep the residual. lr must be finite and > 0. */
GW_API gw_status gw_worker_step(gw_worker *worker, const float *grad, float lr,
                                void *frame, size_t capacity, size_t *written);
/* Copies of the state vectors (length n) for diagnostics. */
GW_API gw_status gw_worker_residual(const gw_worker *worker, float *out, uint64_t n);
GW_API gw_status gw_worker_momentum(const gw_worker *worker, float *out, uint64_t n);
GW_API gw_status gw_worker_save_bound(const gw_worker *worker, size_t *bound);
GW_API gw_status gw_worker_save(const gw_worker *worker, void *blob, size_t capacity,
                                size_t *written);
/* Restore into a handle created with the same options. */
GW_API gw_status gw_worker_load(gw_worker *worker, const void *blob, size_t size);

/* ------------------------------------------------------------------------ */
/* Server error feedback (two-way compression; optional slice ownership)      */
/* ------------------------------------------------------------------------ */
#define GW_SERVER_OPTIONS_VERSION 1
typedef struct gw_server_options {
    unsigned int version;      /* GW_SERVER_OPTIONS_VERSION */
    uint64_t total;            /* length of the whole tensor */
    uint64_t offset;           /* this server owns [offset, offset+length) */
    uint64_t length;           /* >= 1; offset + length <= total */
    uint32_t num_workers;      /* M >= 1 frames averaged per step */
    gw_codec_options codec;    /* what the server broadcasts */
    int error_feedback;        /* 1: keep e_s (default); 0: none (majority vote) */
} gw_server_options;
GW_API gw_status gw_server_options_init(gw_server_options *opts, unsigned int version);

/* Contiguous partition of `total` elements into `parts` slices: slice `index`
 * is [*offset, *offset + *length). The first total % parts slices get one more. */
GW_API gw_status gw_shard_range(uint64_t total, uint32_t parts, uint32_t index,
                                uint64_t *offset, uint64_t *length);

typedef struct gw_server gw_server;
GW_API gw_status gw_server_create(gw_server **server, const gw_server_options *opts);
GW_API void gw_server_free(gw_server *server);
GW_API gw_status gw_server_frame_bound(const gw_server *server, size_t *bound);
/* Add one worker frame (length `length`, any codec) with weight 1/M.
 * A rejected frame leaves the round untouched. At most M pushes per round. */
GW_API gw_status gw_server_push(gw_server *server, const void *frame, size_t size);
/* After exactly M pushes: q = mean + r e_s, broadcast C(q), e_s = q - C(q). */
GW_API gw_status gw_server_step(gw_server *server, float lr, void *frame, size_t capacity,
                                size_t *written);
/* Drop the pushes of the current round (e.g. after a transport failure). */
GW_API gw_status gw_server_reset_round(gw_server *server);
GW_API gw_status gw_server_residual(const gw_server *server, float *out, uint64_t n);
GW_API gw_status gw_server_save_bound(const gw_server *server, size_t *bound);
GW_API gw_status gw_server_save(const gw_server *server, void *blob, size_t capacity,
                                size_t *written);
GW_API gw_status gw_server_load(gw_server *server, const void *blob, size_t size);

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

/* CRC32C (Castagnoli) as used by frames and state blobs. */
GW_API gw_status gw_crc32c(const void *data, size_t size, uint32_t *crc);

#ifdef __cplusplus
}
#endif
#endif /* GRADWIRE_H */
