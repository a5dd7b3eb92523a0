// The interface every compressor implements (codec interface v2).
//
// A codec declares its parameters (ParamDef: id, name, wire width, range,
// default); the registry parses, validates and serializes them from that
// declaration, so frames, checkpoints and specs carry them without knowing
// what they mean. A codec states the largest payload it can write for
// (params, n), encodes into exactly that much room and reports what it wrote,
// and validates an untrusted payload of any length. Its descriptor (CodecDef
// below) also carries its capabilities (CodecCap), which callers test instead
// of listing codec ids.
//
// Adding a codec takes exactly:
//  1. src/codecs/codec_<file>.cpp: its parameters, entry points and, last,
//     its descriptor `extern constexpr Codec codec_<name> = CodecDef(...)...;`
//     (the shared sparse payload, sign bits and grid quantizer are in
//     sparse_payload.hpp, sign_bits.hpp and grid_quant.hpp);
//  2. one line GW_CODEC_ENTRY(<name>, <file>) in src/codecs/registry.def:
//     codecs.cpp builds its table (gw_codec_list() order) from that file and
//     meson.build compiles codec_<file>.cpp from it, so neither is edited;
//  3. ABI vocabulary, kept apart on purpose: its id in gw_codec_id in
//     c_api/gradwire_types.h (one line, never renumbered), plus one line in
//     gw_param for each parameter id no codec had before;
//  4. its golden vectors: a kV2Cases line in tests/test_vectors.cpp, then
//     Vectors.DISABLED_WriteV2 writes tests/vectors/v2_<case>.*.hex;
//  5. its documentation: its row in docs/c-api.md's codec table and its
//     payload in docs/wire-format.md.
// No other file lists the codecs: the frame reader, the C API, the fuzzers
// and their seed writer, and the Python and Java layers take them from the
// registry; the fused error-feedback path, the fuzzers and the vector tests
// ask for capabilities (Codec::caps, gw_codec_flags()). Tests of the codec's
// own semantics (tests/test_<family>.cpp) are welcome, not required by any
// list.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gradwire_types.h"
#include "kernels/kernels.hpp"
#include "kernels/context.hpp"

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

// A codec with its parameter values (in the codec's ParamDef order), and
// what the encoder knows of the link its frames cross (bits per second, 0 =
// unknown): not a parameter, never on the wire, not compared by params_equal;
// it only decides whether the zstd stage pays (frame.cpp).
struct CodecParams {
    const Codec* codec = nullptr;
    int64_t v[kMaxParams] = {};
    uint64_t link_bps = 0;
};

// What an encode may depend on besides the input: stochastic codecs draw from
// (seed, step, tensor); the kernels and the scratch (working memory) are the
// caller's context's. Every other entry point that computes takes the
// kernel table as its first argument.
// The CRC32C of a payload, when a codec computed it while writing or
// checking the payload (tile by tile, in cache), so the frame layer need not
// read the payload again.
struct PayloadCrc {
    bool known = false;
    uint32_t value = 0;
};
// Payloads from this size on are worth a CRC taken in the codec's pass and
// joined with the header's (crc32c_combine); smaller ones are in cache anyway.
constexpr uint64_t kFusedCrcMin = 32768;

struct EncodeCtx {
    uint64_t seed = 0;
    uint64_t step = 0;
    uint32_t tensor = 0;
    const kern::Table* k = nullptr;
    Scratch* scratch = nullptr;
    // Optional: a codec may store its payload's CRC here (frame::encode asks).
    PayloadCrc* crc = nullptr;
    // Refuse NaN/Inf anywhere in x, even where the codec reads nothing for
    // the frame (random-k's unsent values): a state machine keeps what x
    // holds beyond the frame (momentum, a residual). gw_encode, whose frame
    // is all that x becomes, clears it, so random-k reads only its k values.
    bool check_unread = true;
};
inline EncodeCtx encode_ctx(Context& cx, uint64_t seed, uint64_t step, uint32_t tensor) {
    return EncodeCtx{seed, step, tensor, &cx.k(), &cx.codec};
}

// What a codec promises beyond its entry points (Codec::caps), so callers
// test a capability instead of listing codec ids. The public bits are the
// GW_CODEC_FLAG_* values gw_codec_flags() reports; the others are internal.
enum CodecCap : uint32_t {
    // Frames depend on the encode's draw (seed, step, tensor), not on x alone.
    kCapStochastic = GW_CODEC_FLAG_STOCHASTIC,
    // Values are rounded at random to a grid scaled by the values: encoding
    // what a frame decodes to may give another frame, and finite input near
    // FLT_MAX may be refused with GW_ERR_OVERFLOW.
    kCapStochasticRounding = GW_CODEC_FLAG_STOCHASTIC_ROUNDING,
    // The payload starts with the draw it was encoded with (u64 seed, u32
    // step, u32 tensor): receivers regenerate from it what the encoder drew.
    kCapDrawInPayload = GW_CODEC_FLAG_DRAW_IN_PAYLOAD,
    kCapPublic = kCapStochastic | kCapStochasticRounding | kCapDrawInPayload,
    // Internal: the payload is ScaledSignLayout (sign_bits.hpp) with blocks of
    // parameter GW_PARAM_BLOCK_SIZE, which worker and server handles may write
    // fused with their error-feedback combine (feedback/fused_sign.hpp).
    kCapFusedScaledSign = 1u << 16,
};

struct Codec {
    gw_codec_id id = gw_codec_id(0);
    const char* name = nullptr;
    const ParamDef* params = nullptr;
    size_t num_params = 0;
    uint32_t caps = 0;  // CodecCap bits
    // Checks across parameters (each is already within its range); may be null.
    gw_status (*validate)(const CodecParams& p) = nullptr;
    // Largest payload for n elements (exact for dense codecs); false if it
    // would not fit in 64 bits.
    bool (*max_payload)(const CodecParams& p, uint64_t n, uint64_t* bytes) = nullptr;
    // Encode x[0..n) into payload (room for max_payload bytes), set *len to
    // the bytes written. If residual is non-null also write residual[i] =
    // x[i] - decoded[i] (residual may equal x). Returns GW_ERR_NONFINITE if
    // x holds NaN/Inf, GW_ERR_OVERFLOW if a residual element would not be
    // finite (a decoded value of the other sign, e.g. the 1-bit quantizer's).
    // Either may be found in the pass that writes (scaled sign's small
    // blocks are checked as they are encoded), so on error the payload and
    // the residual hold unspecified values: the frame buffer is output-only,
    // and state machines pass a scratch residual and keep it only on success.
    gw_status (*encode)(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                        uint8_t* payload, uint64_t* len, float* residual) = nullptr;
    // Validate an untrusted payload of `len` bytes for n elements: GW_OK,
    // GW_ERR_FRAME_LENGTH, GW_ERR_FRAME_PAYLOAD or GW_ERR_FRAME_INDEX.
    gw_status (*check)(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                       uint64_t len, uint64_t n) = nullptr;
    // Optional (null: check, then the frame layer's CRC pass): check and
    // the payload's CRC32C in one pass, called for payloads of at least
    // check_crc_min bytes. The CRC covers all `len` bytes whatever the
    // check finds, so a corrupted frame is reported as such.
    gw_status (*check_crc)(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                           uint64_t len, uint64_t n, uint32_t* crc) = nullptr;
    uint64_t check_crc_min = kFusedCrcMin;
    // Optional (null: check_crc, then decode), for gw_decode, in place of
    // check_crc for payloads of at least decode_crc_min bytes: check_crc and
    // out = decoded in one read of the payload. out (room for n floats) holds
    // unspecified bytes unless the status is GW_OK and the CRC matches; the
    // caller's output is scratch until then.
    gw_status (*decode_crc)(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                            uint64_t len, uint64_t n, float* out, uint32_t* crc) = nullptr;
    uint64_t decode_crc_min = kFusedCrcMin;
    // On a checked payload: out = decoded; acc += alpha * decoded.
    void (*decode)(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                   uint64_t len, uint64_t n, float* out) = nullptr;
    void (*accumulate)(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                       uint64_t len, uint64_t n, float alpha, float* acc) = nullptr;
    // Optional (null: whole frames only). On a checked payload, elements
    // [lo, hi) only: acc[i - lo] += alpha * decoded[i], the same arithmetic per
    // element as accumulate, so a frame added tile by tile gives the same bits.
    // lo is a multiple of 8; hi is a multiple of 8 or n. Lets many frames be
    // summed tile by tile while the accumulator stays in cache.
    void (*accumulate_range)(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                             uint64_t n, uint64_t lo, uint64_t hi, float alpha,
                             float* acc) = nullptr;
    // Optional (null: never). True if elements [lo, hi) of a checked payload
    // decode to +-s, s >= 0, from the bits starting at bit 0 of *bits (bit set:
    // -s); sets *bits and *s. Lets the frames of a round be summed by one
    // kern::sign_accumulate_n pass. lo, hi as for accumulate_range.
    bool (*sign_range)(const CodecParams& p, const uint8_t* payload, uint64_t n, uint64_t lo,
                       uint64_t hi, const uint8_t** bits, float* s) = nullptr;
    // Optional (null: never). True if elements [lo, hi) of a checked payload
    // decode block by block, *block elements each (a multiple of 8, fewer
    // than hi - lo) from lo on, block b to +-s_b, s_b the little-endian float
    // at *scales + 4 b, from bits that run on across blocks from bit 0 of
    // *bits. Lets the frames of a round with small blocks be summed by one
    // kern::sign_accumulate_blocks pass. lo, hi as for accumulate_range.
    bool (*sign_blocks)(const CodecParams& p, const uint8_t* payload, uint64_t n, uint64_t lo,
                        uint64_t hi, const uint8_t** bits, const uint8_t** scales,
                        uint64_t* block) = nullptr;
};

// Called only where a descriptor lacks a required entry point: never defined
// and not constexpr, so such a descriptor does not compile.
void codec_descriptor_lacks_an_entry_point();

// A codec's descriptor, built by name; its parameter count is the length of
// its ParamDef array. Each codec file ends with one, named codec_<name> after
// its registry.def line (constexpr: an incomplete one does not compile):
//
//   extern constexpr Codec codec_sampled_topk =
//       CodecDef(GW_CODEC_SAMPLED_TOPK, "sampled_topk", kParams)  // (id, name): no parameters
//           .entries(max_payload, encode, check, decode, accumulate)
//           .validate(validate)                    // optional
//           .ranges(accumulate_range, sign_range[, sign_blocks])  // optional, any may be null
//           .check_crc(check_crc[, min_bytes])     // optional
//           .decode_crc(decode_crc[, min_bytes])   // optional, with check_crc
//           .caps(kCapStochastic);                 // optional
//
// The entries have distinct types, so they cannot be passed in the wrong order.
class CodecDef {
  public:
    constexpr CodecDef(gw_codec_id id, const char* name) {
        c_.id = id;
        c_.name = name;
    }
    template <size_t N>
    constexpr CodecDef(gw_codec_id id, const char* name, const ParamDef (&params)[N])
        : CodecDef(id, name) {
        static_assert(N <= kMaxParams, "more parameters than CodecParams holds");
        c_.params = params;
        c_.num_params = N;
    }
    constexpr CodecDef entries(decltype(Codec::max_payload) max_payload,
                               decltype(Codec::encode) encode, decltype(Codec::check) check,
                               decltype(Codec::decode) decode,
                               decltype(Codec::accumulate) accumulate) const {
        CodecDef d = *this;
        d.c_.max_payload = max_payload;
        d.c_.encode = encode;
        d.c_.check = check;
        d.c_.decode = decode;
        d.c_.accumulate = accumulate;
        return d;
    }
    constexpr CodecDef validate(decltype(Codec::validate) validate) const {
        CodecDef d = *this;
        d.c_.validate = validate;
        return d;
    }
    constexpr CodecDef ranges(decltype(Codec::accumulate_range) accumulate_range,
                              decltype(Codec::sign_range) sign_range,
                              decltype(Codec::sign_blocks) sign_blocks = nullptr) const {
        CodecDef d = *this;
        d.c_.accumulate_range = accumulate_range;
        d.c_.sign_range = sign_range;
        d.c_.sign_blocks = sign_blocks;
        return d;
    }
    constexpr CodecDef check_crc(decltype(Codec::check_crc) check_crc,
                                 uint64_t min_bytes = kFusedCrcMin) const {
        CodecDef d = *this;
        d.c_.check_crc = check_crc;
        d.c_.check_crc_min = min_bytes;
        return d;
    }
    constexpr CodecDef decode_crc(decltype(Codec::decode_crc) decode_crc,
                                  uint64_t min_bytes = kFusedCrcMin) const {
        CodecDef d = *this;
        d.c_.decode_crc = decode_crc;
        d.c_.decode_crc_min = min_bytes;
        return d;
    }
    constexpr CodecDef caps(uint32_t caps) const {
        CodecDef d = *this;
        d.c_.caps = caps;
        return d;
    }
    constexpr operator Codec() const {  // NOLINT: the point of the builder
        if (!c_.max_payload || !c_.encode || !c_.check || !c_.decode || !c_.accumulate ||
            (c_.decode_crc && !c_.check_crc))
            codec_descriptor_lacks_an_entry_point();
        return c_;
    }

  private:
    Codec c_;
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
// (nullptr if that allocation fails). x is in host byte order.
const float* widen_to_f32(const kern::Table& kt, const void* x, gw_dtype dtype, uint64_t n,
                          Scratch& scratch);

// acc[i] = acc[i] + a * x[i] over host floats. The axpy kernel reads a
// little-endian float32 payload, which host floats are on little-endian
// hosts only; elsewhere this is the same arithmetic in a plain loop.
void axpy_host(const kern::Table& kt, float a, const float* x, float* acc, uint64_t n);

// Residual for codecs without a fused path: residual = x - decoded.
void generic_residual(const kern::Table& kt, const CodecParams& p, const float* x, uint64_t n,
                      const uint8_t* payload, uint64_t len, float* residual);

// Indices of a checked index-codec payload (its count first) into out.
void index_payload_indices(const kern::Table& kt, const uint8_t* payload, uint32_t* out);

// Diagnostic of the blockwise scaled sign: min_b ||v_b||_1^2 / (d_b ||v_b||_2^2).
gw_status scaled_sign_phi(const kern::Table& kt, const float* x, uint64_t n, uint32_t block_size,
                          double* phi);

}  // namespace gw
