// The interface every compressor implements (codec interface v2).
//
// A codec declares its parameters (ParamDef: id, name, wire width, range,
// default);
// the registry parses, validates and serializes them from that declaration, so
// frames, checkpoints and specs carry them without knowing what they mean.
// A codec states the largest payload it can write for (params, n), encodes
// into exactly that much room and reports what it wrote, and validates an
// untrusted payload of any length. Adding a codec is one codec file and one
// line in codecs.cpp (plus its id and parameters in gradwire_types.h).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gradwire_types.h"
#include "util/scratch.hpp"

namespace gw {

constexpr size_t kMaxParams = 8;

struct ParamDef {
    gw_param id;
    const char* name;    // gw_param_name(); the same for every codec taking the id
    uint8_t wire_bytes;  // 1, 2, 4 or 8: little-endian unsigned on the wire
    int64_t min, max, def;
    // >= 0: the value a wire form without this parameter means. Such a
    // parameter comes last (after any other such one) and is added to a codec
    // that already had frames: the writer omits it when it holds this value,
    // so frames of the old kind stay byte-identical, and a reader refuses it
    // written out with this value (one canonical form). -1: always written.
    int64_t absent = -1;
};

// A codec's rule revision (GW_PARAM_REVISION): which version of its
// selection or rounding rule writes and checks the frame. Revision 1 is the
// codec's first rule and is absent from the wire; a codec whose frames must
// change appends this parameter last with its newest revision as default.
constexpr ParamDef revision_param(int64_t newest) {
    return {GW_PARAM_REVISION, "revision", 1, 1, newest, newest, 1};
}

struct Codec;

// A codec with its parameter values (in the codec's ParamDef order).
struct CodecParams {
    const Codec* codec = nullptr;
    int64_t v[kMaxParams] = {};
};

// What an encode may depend on besides the input: stochastic codecs draw from
// (seed, step, tensor); scratch is working memory owned by the caller.
struct EncodeCtx {
    uint64_t seed = 0;
    uint64_t step = 0;
    uint32_t tensor = 0;
    Scratch* scratch = nullptr;
};

struct Codec {
    gw_codec_id id;
    const char* name;
    const ParamDef* params;
    size_t num_params;
    // Checks across parameters (each is already within its range); may be null.
    gw_status (*validate)(const CodecParams& p);
    // Largest payload for n elements (exact for dense codecs); false if it
    // would not fit in 64 bits.
    bool (*max_payload)(const CodecParams& p, uint64_t n, uint64_t* bytes);
    // Encode x[0..n) into payload (room for max_payload bytes), set *len to
    // the bytes written. If residual is non-null also write residual[i] =
    // x[i] - decoded[i] (residual may equal x). Returns GW_ERR_NONFINITE
    // before writing anything if x holds NaN/Inf. Returns GW_ERR_OVERFLOW if
    // a residual element would not be finite (a decoded value of the other
    // sign, e.g. the 1-bit quantizer's): found in the pass that writes it, so
    // the residual may be partly written; state machines pass a scratch
    // residual and keep it only on success.
    gw_status (*encode)(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                        uint8_t* payload, uint64_t* len, float* residual);
    // Validate an untrusted payload of `len` bytes for n elements: GW_OK,
    // GW_ERR_FRAME_LENGTH, GW_ERR_FRAME_PAYLOAD or GW_ERR_FRAME_INDEX.
    gw_status (*check)(const CodecParams& p, const uint8_t* payload, uint64_t len, uint64_t n);
    // On a checked payload: out = decoded; acc += alpha * decoded.
    void (*decode)(const CodecParams& p, const uint8_t* payload, uint64_t len, uint64_t n,
                   float* out);
    void (*accumulate)(const CodecParams& p, const uint8_t* payload, uint64_t len, uint64_t n,
                       float alpha, float* acc);
    // Optional (null: whole frames only). On a checked payload, elements
    // [lo, hi) only: acc[i - lo] += alpha * decoded[i], the same arithmetic per
    // element as accumulate, so a frame added tile by tile gives the same bits.
    // lo is a multiple of 8; hi is a multiple of 8 or n. Lets many frames be
    // summed tile by tile while the accumulator stays in cache.
    void (*accumulate_range)(const CodecParams& p, const uint8_t* payload, uint64_t n,
                             uint64_t lo, uint64_t hi, float alpha, float* acc);
    // Optional (null: never). True if elements [lo, hi) of a checked payload
    // decode to +-s, s >= 0, from the bits starting at bit 0 of *bits (bit set:
    // -s); sets *bits and *s. Lets the frames of a round be summed by one
    // kern::sign_accumulate_n pass. lo, hi as for accumulate_range.
    bool (*sign_range)(const CodecParams& p, const uint8_t* payload, uint64_t n, uint64_t lo,
                       uint64_t hi, const uint8_t** bits, float* s);
};

// Registry: nullptr for an unknown id; the list of built-in codecs.
const Codec* codec_for(unsigned id);
size_t codec_count();
const Codec* codec_at(size_t i);
// Parameters are plain ints inside: C callers may pass any value, and loading
// an out-of-range value as the enum type would be undefined.
const char* param_name(int param);

// Parameters at their defaults.
CodecParams default_params(const Codec& c);
// Index of a parameter in the codec's list, or -1.
int param_slot(const Codec& c, int param);
// Set one parameter (range checked, then the codec's cross checks).
gw_status set_param(CodecParams* p, int param, int64_t value);
bool params_equal(const CodecParams& a, const CodecParams& b);
// Value of a parameter the codec takes, or `fallback` if it does not.
int64_t param_or(const CodecParams& p, int param, int64_t fallback);

// Wire form of the parameters: the declared widths in order, without the
// trailing ones that hold their `absent` value.
size_t params_wire_size(const CodecParams& p);
// Whether `size` bytes is the wire size of some parameter values of c (all
// of them, or all but trailing ones that may be absent).
bool params_wire_size_valid(const Codec& c, size_t size);
void write_params(const CodecParams& p, uint8_t* out);
// Parse `size` untrusted bytes: GW_OK or GW_ERR_FRAME_PARAMS.
gw_status read_params(const Codec& c, const uint8_t* in, size_t size, CodecParams* out);

// x as float32: itself for GW_DTYPE_F32, else f16/bf16 widened into scratch
// (nullptr if that allocation fails).
const float* widen_to_f32(const void* x, gw_dtype dtype, uint64_t n, Scratch& scratch);

// Residual for codecs without a fused path: residual = x - decoded.
void generic_residual(const CodecParams& p, const float* x, uint64_t n, const uint8_t* payload,
                      uint64_t len, float* residual);

// Indices of a checked index-codec payload (its count first) into out.
void index_payload_indices(const uint8_t* payload, uint32_t* out);

// Diagnostic of the blockwise scaled sign: min_b ||v_b||_1^2 / (d_b ||v_b||_2^2).
gw_status scaled_sign_phi(const float* x, uint64_t n, uint32_t block_size, double* phi);

}  // namespace gw
