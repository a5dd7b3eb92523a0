/*
 * gradwire: the public vocabulary shared by the C ABI (gradwire.h) and the
 * C++ core: status codes, ids and enums. Values are wire or ABI constants:
 * never renumbered, append only. No structs live here, so the core never
 * depends on the layout of a public option struct.
 */
#ifndef GRADWIRE_TYPES_H
#define GRADWIRE_TYPES_H

/* Status codes: GW_OK is 0, errors are negative. gw_status_str() gives a
 * message, gw_status_name() the symbol name. */
typedef enum gw_status {
    GW_OK                     = 0,
    GW_ERR_NULL_POINTER       = -1,  /* a required pointer argument was NULL */
    GW_ERR_INVALID_ARGUMENT   = -2,  /* an argument is out of its documented range */
    GW_ERR_BUFFER_TOO_SMALL   = -3,  /* output capacity below the `_bound` / element count */
    GW_ERR_OUT_OF_MEMORY      = -4,  /* an allocation of a valid size failed */
    GW_ERR_UNSUPPORTED        = -5,  /* e.g. a SIMD target this CPU or build lacks */
    GW_ERR_OPTIONS_VERSION    = -6,  /* an options/info struct has an unknown version */
    GW_ERR_NONFINITE          = -7,  /* NaN or Inf in an input vector (nothing was changed) */
    GW_ERR_SEQUENCE           = -8,  /* call out of order (e.g. server step before all pushes) */
    GW_ERR_COUNT_MISMATCH     = -9,  /* element count differs from the tensor length */
    GW_ERR_CODEC_MISMATCH     = -10, /* frame codec/params differ from what the handle expects */
    GW_ERR_OVERLAP            = -11, /* input and output buffers overlap where not allowed */
    GW_ERR_TAG_MISMATCH       = -12, /* frame tag is not the tensor/round the handle expects */
    GW_ERR_OVERFLOW           = -13, /* finite inputs, but the result overflows float32 */
    GW_ERR_STALE              = -14, /* a gradient computed on parameters older than the delay bound */
    GW_ERR_FRAME_TRUNCATED    = -20, /* fewer bytes than the header or its lengths require */
    GW_ERR_FRAME_MAGIC        = -21,
    GW_ERR_FRAME_VERSION      = -22, /* unknown frame format version */
    GW_ERR_FRAME_CODEC        = -23, /* unknown codec id */
    GW_ERR_FRAME_FLAGS        = -24, /* a reserved flag bit is set, or a flag the codec forbids */
    GW_ERR_FRAME_CHECKSUM     = -25, /* CRC32C mismatch (header or frame) */
    GW_ERR_FRAME_LENGTH       = -26, /* payload length inconsistent with count and params */
    GW_ERR_FRAME_PARAMS       = -27, /* codec parameters malformed */
    GW_ERR_FRAME_PAYLOAD      = -28, /* payload content invalid (e.g. non-finite scale) */
    GW_ERR_FRAME_TRAILING     = -29, /* bytes after the frame's checksum */
    GW_ERR_FRAME_INDEX        = -30, /* sparse index out of range */
    GW_ERR_FRAME_ZSTD         = -31, /* zstd stage malformed, oversized or not canonical */
    GW_ERR_STATE_MAGIC        = -40, /* checkpoint blob: not a gradwire state blob */
    GW_ERR_STATE_VERSION      = -41,
    GW_ERR_STATE_CHECKSUM     = -42,
    GW_ERR_STATE_MISMATCH     = -43, /* blob is for another kind/size/configuration of handle */
    GW_ERR_STATE_CORRUPT      = -44, /* blob structure or contents invalid */
    GW_ERR_STATE_MISSING      = -45, /* re-sharding: a worker's state or a slice is not among the parts */
    GW_ERR_STATE_DUPLICATE    = -46, /* re-sharding: a worker's state or a slice is given twice */
    GW_ERR_INTERNAL           = -99
} gw_status;

/* Element types of tensors handed to encode and step calls. */
typedef enum gw_dtype {
    GW_DTYPE_F32  = 1, /* IEEE binary32 */
    GW_DTYPE_F16  = 2, /* IEEE binary16 */
    GW_DTYPE_BF16 = 3  /* bfloat16 */
} gw_dtype;

/* Codec ids are wire values: 1..127 built in, 128..255 reserved. */
typedef enum gw_codec_id {
    GW_CODEC_IDENTITY    = 1, /* float32 as is */
    GW_CODEC_FP16        = 2, /* IEEE half, round to nearest even, saturating */
    GW_CODEC_BF16        = 3, /* bfloat16, round to nearest even, saturating */
    GW_CODEC_SIGN        = 4, /* 1 bit per element, decodes to +-1 (signSGD) */
    GW_CODEC_SCALED_SIGN = 5, /* blockwise ||v_b||_1/d_b * sign(v_b) */
    GW_CODEC_TOPK        = 6, /* exact top-k by magnitude, sparse values + gap-coded indices */
    GW_CODEC_CHUNK_TOPK  = 7, /* top k*c/n of every c-element chunk (ScaleCom's leader selection) */
    GW_CODEC_SAMPLED_TOPK = 8, /* threshold from a sample, exact re-selection if too many (DGC) */
    GW_CODEC_THRESHOLD   = 9, /* every |x_i| >= threshold */
    GW_CODEC_RANDOMK     = 10, /* k positions drawn from (seed, step, tensor): values only */
    GW_CODEC_INDEX       = 11, /* indices only (a selection message, e.g. CLT-k's leader) */
    GW_CODEC_QUANT       = 12, /* stochastic b-bit quantizer Q_(delta,b) of AsyLPG, per block */
    GW_CODEC_QSGD        = 13, /* QSGD: s levels of ||v_b||_2 / s per bucket, unbiased */
    GW_CODEC_TERNGRAD    = 14, /* TernGrad: {-1, 0, 1} * ||v_b||_inf, unbiased */
    GW_CODEC_SPARSE_QUANT = 15  /* unbiased random sparsification + Q_(delta,b) (Sparse-AsyLPG) */
} gw_codec_id;

/* What a codec's frames promise, as bits (gw_codec_flags()): callers test
 * these instead of listing codec ids. */
typedef enum gw_codec_flag {
    /* Frames depend on the encode context's (seed, step, tensor), not on the
     * input alone. */
    GW_CODEC_FLAG_STOCHASTIC          = 1,
    /* Values are rounded at random to a grid scaled by the values: encoding
     * what a frame decodes to may give another frame, and finite input near
     * FLT_MAX may be refused with GW_ERR_OVERFLOW. */
    GW_CODEC_FLAG_STOCHASTIC_ROUNDING = 2,
    /* The payload starts with the draw it was encoded with (u64 seed, u32
     * step mod 2^32, u32 tensor; docs/wire-format.md): a receiver needs no
     * context, and encoding the decoded values with that draw gives the
     * frame back. */
    GW_CODEC_FLAG_DRAW_IN_PAYLOAD     = 4
} gw_codec_flag;

/* Codec parameters, set with gw_codec_spec_set(); gw_codec_param_bounds()
 * tells which codec takes which, with its range and default. */
typedef enum gw_param {
    GW_PARAM_BLOCK_SIZE  = 1, /* SCALED_SIGN: elements per block, 0 = one block per tensor */
    GW_PARAM_K           = 2, /* TOPK: entries kept, 0 = use GW_PARAM_DENSITY_PPM */
    GW_PARAM_DENSITY_PPM = 3, /* TOPK: k = ceil(n * ppm / 1e6) when GW_PARAM_K is 0 */
    GW_PARAM_VALUE_DTYPE = 4, /* TOPK: gw_dtype of the values on the wire */
    GW_PARAM_ZSTD        = 5, /* TOPK: 1 = zstd stage when it makes the frame smaller (and pays
                                  on the spec's link, gw_codec_spec_set_link), 0 = never */
    GW_PARAM_CHUNK_SIZE  = 6, /* CHUNK_TOPK, INDEX: elements per chunk */
    GW_PARAM_THRESHOLD   = 7, /* THRESHOLD: float32 bit pattern of the threshold (>= 0) */
    GW_PARAM_SAMPLE_PPM  = 8, /* SAMPLED_TOPK: share of elements sampled, parts per million */
    GW_PARAM_BITS        = 9, /* QUANT, SPARSE_QUANT: bits per code, 1..8 or 16 */
    GW_PARAM_LEVELS      = 10, /* QSGD: levels s (codes -s..s) */
    GW_PARAM_BUDGET      = 11, /* SPARSE_QUANT: float32 bits of the budget phi, 0 = ||a||_1/||a||_inf */
    GW_PARAM_REVISION    = 12  /* CHUNK_TOPK, INDEX: revision of the codec's rule; 1 = the
                                  first (ceil per chunk, more than k), 2 = exactly k (default);
                                  RANDOMK: 1 = selection sampling, 2 = stratified (default) */
} gw_param;

typedef enum gw_simd_target {
    GW_SIMD_AUTO    = 0, /* best the CPU supports (default) */
    GW_SIMD_SCALAR  = 1,
    GW_SIMD_SSE2    = 2,
    GW_SIMD_SSE4_2  = 3,
    GW_SIMD_AVX2    = 4,
    GW_SIMD_AVX512  = 5, /* AVX-512 F/CD/DQ/BW/VL */
    GW_SIMD_NEON    = 6  /* AArch64 Advanced SIMD (aarch64 builds only) */
} gw_simd_target;

typedef enum gw_momentum {
    GW_MOMENTUM_NONE     = 0, /* p = g + r e                                */
    GW_MOMENTUM_NESTEROV = 1, /* m = mu m + g; p = mu m + g + r e  (Alg. 4) */
    GW_MOMENTUM_SIGNUM   = 2  /* m = mu m + (1-mu) g; p = m + r e            */
} gw_momentum;

/* The AsyLPG master's update rule (gw_asylpg_master_options.variant). */
typedef enum gw_asylpg_variant {
    GW_ASYLPG_PLAIN = 0, /* AsyLPG and Sparse-AsyLPG (the worker's codec decides) */
    GW_ASYLPG_ACC   = 1  /* Acc-AsyLPG: theta_s = 2/(s+2), lr_s = lr/theta_s */
} gw_asylpg_variant;

#endif /* GRADWIRE_TYPES_H */
