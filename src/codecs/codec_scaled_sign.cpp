// Blockwise scaled sign (docs/algorithms.md s.1; Zheng et al. 2019, s.3.2):
//   scale_b = ||v_b||_1 / d_b,   C(v) = [scale_1 sign(v_1), ..., scale_B sign(v_B)]
// Parameter: block_size (u32 on the wire; 0 = the whole tensor is one block;
// the row length of an [out][in] weight matrix gives one block per row).
// Payload (codecs/sign_bits.hpp, ScaledSignLayout): B float32 scales, then per
// block ceil(d_b/8) bytes of sign bits. A block whose scale is 0 decodes to
// zeros and has all sign bits clear: the encoder writes it so (also when a
// tiny L1 mean rounds to 0) and the decoder demands it.
#include <cmath>
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/sign_bits.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {
namespace {

enum Slot { kBlock = 0 };
constexpr ParamDef kParams[] = {{GW_PARAM_BLOCK_SIZE, "block_size", 4, 0, UINT32_MAX, 0}};

using Layout = ScaledSignLayout;
Layout layout(const CodecParams& p, uint64_t n) { return Layout(uint64_t(p.v[kBlock]), n); }

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    return layout(p, n).size(bytes);
}

// Blocks up to this many elements (256 KiB, within L2) are encoded in one
// read of x, each block's scale, bits and residual while it is in cache.
constexpr uint64_t kOnePassBlock = 65536;

// The bits of every block run on from the first block's (one kernel call):
// full blocks of whole bytes, or a single block.
bool bits_run_on(const Layout& l) { return l.block % 8 == 0 || l.blocks == 1; }

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    const Layout l = layout(p, n);
    if (l.block <= kOnePassBlock && bits_run_on(l)) {
        if (!kt.scaled_sign_blocks(x, l.block, n, payload + l.bits_offset(0),
                                   payload + l.scale_offset(0), residual))
            return GW_ERR_NONFINITE;
        l.size(len);
        return GW_OK;
    }
    // Larger blocks, two passes. Pass 1: every scale, checking finiteness
    // before any residual is touched. The L1 norm is summed in double, so
    // only NaN/Inf can make it non-finite.
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const uint64_t d = l.len(b);
        const double l1 = kt.sum_abs(x + b * l.block, d);
        if (!std::isfinite(l1)) return GW_ERR_NONFINITE;
        const float s = static_cast<float>(l1 / static_cast<double>(d));
        store_le<float>(payload + l.scale_offset(b), s);
    }
    // Pass 2: sign bits, fused with the residual update when asked.
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const uint64_t d = l.len(b);
        const float s = load_le<float>(payload + l.scale_offset(b));
        const float* xb = x + b * l.block;
        uint8_t* bb = payload + l.bits_offset(b);
        if (residual)
            kt.sign_pack_residual(xb, d, s, bb, residual + b * l.block);
        else
            kt.sign_pack(xb, d, bb);
        // A zero scale decodes to zeros whatever the bits: write them clear,
        // the one canonical form (the residual above is x - 0 = x either way).
        if (s == 0.0f) std::memset(bb, 0, ceil_div(d, 8));
    }
    l.size(len);
    return GW_OK;
}

gw_status check(const kern::Table&, const CodecParams& p, const uint8_t* payload, uint64_t len,
                uint64_t n) {
    uint64_t expected = 0;
    if (!max_payload(p, n, &expected) || len != expected) return GW_ERR_FRAME_LENGTH;
    const Layout l = layout(p, n);
    // A scale is an L1 mean: finite and not negative (no sign bit, even on
    // zero), so as a word below 0x7F800000. One branch-free pass over the
    // scales (it vectorizes: with 64-element blocks a branch per block was a
    // fifth of a decode); the bits are looked at only where they can be wrong.
    uint32_t bad = 0, zero = 0;
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const uint32_t w = load_le<uint32_t>(payload + l.scale_offset(b));
        bad |= uint32_t(w >= 0x7F800000u);
        zero |= uint32_t(w == 0);
    }
    if (bad) return GW_ERR_FRAME_PAYLOAD;
    // Padding exists only in blocks of a length that is not a multiple of 8.
    const uint64_t first = l.block % 8 == 0 ? (l.blocks ? l.blocks - 1 : 0) : 0;
    for (uint64_t b = zero ? 0 : first; b < l.blocks; ++b) {
        const uint8_t* bb = payload + l.bits_offset(b);
        const uint64_t d = l.len(b);
        if (!sign_padding_clear(bb, d)) return GW_ERR_FRAME_PAYLOAD;
        if (load_le<uint32_t>(payload + l.scale_offset(b)) == 0) {
            for (uint64_t i = 0; i < ceil_div(d, 8); ++i)
                if (bb[i] != 0) return GW_ERR_FRAME_PAYLOAD;
        }
    }
    return GW_OK;
}

void decode(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t,
            uint64_t n, float* out) {
    const Layout l = layout(p, n);
    if (bits_run_on(l)) {  // one kernel call
        kt.sign_unpack_blocks(payload + l.bits_offset(0), payload + l.scale_offset(0), l.block, n,
                              out);
        return;
    }
    for (uint64_t b = 0; b < l.blocks; ++b)
        kt.sign_unpack(payload + l.bits_offset(b), l.len(b),
                       load_le<float>(payload + l.scale_offset(b)), out + b * l.block);
}

void accumulate(const kern::Table& kt, const CodecParams& p, const uint8_t* payload, uint64_t,
                uint64_t n, float alpha, float* acc) {
    const Layout l = layout(p, n);
    if (l.block % 8 == 0) {  // the bits run on across blocks: one kernel call
        const uint8_t* bits = payload + l.bits_offset(0);
        const uint8_t* scales = payload + l.scale_offset(0);
        kt.sign_accumulate_blocks(&bits, &scales, alpha, 1, l.block, n, acc);
        return;
    }
    for (uint64_t b = 0; b < l.blocks; ++b) {
        // alpha*(+-s) == +-(alpha*s)
        const float v = alpha * load_le<float>(payload + l.scale_offset(b));
        kt.sign_accumulate(payload + l.bits_offset(b), l.len(b), v, acc + b * l.block);
    }
}

// Elements [lo, hi) block by block. A block's bits start on a byte, so a range
// starting inside a block whose length is not a multiple of 8 may start
// mid-byte: those first elements take the kernel's arithmetic one at a time.
void accumulate_range(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                      uint64_t n, uint64_t lo, uint64_t hi, float alpha, float* acc) {
    const Layout l = layout(p, n);
    for (uint64_t b = lo / l.block; b < l.blocks && b * l.block < hi; ++b) {
        const uint64_t first = b * l.block, end = first + l.len(b);
        uint64_t i = lo > first ? lo : first;
        const uint64_t stop = hi < end ? hi : end;
        const float v = alpha * load_le<float>(payload + l.scale_offset(b));
        const uint8_t* bb = payload + l.bits_offset(b);
        for (; i < stop && (i - first) % 8 != 0; ++i) {
            const uint64_t j = i - first;
            const float q = (bb[j / 8] >> (j % 8)) & 1 ? -v : v;
            acc[i - lo] = acc[i - lo] + q;
        }
        if (i < stop) kt.sign_accumulate(bb + (i - first) / 8, stop - i, v, acc + (i - lo));
    }
}

// One block holds the whole range and the range starts on a byte of its bits.
bool sign_range(const CodecParams& p, const uint8_t* payload, uint64_t n, uint64_t lo,
                uint64_t hi, const uint8_t** bits, float* s) {
    const Layout l = layout(p, n);
    const uint64_t b = lo / l.block, first = b * l.block;
    if (hi > first + l.len(b) || (lo - first) % 8 != 0) return false;
    *bits = payload + l.bits_offset(b) + (lo - first) / 8;
    *s = load_le<float>(payload + l.scale_offset(b));
    return true;
}

// Blocks of a multiple of 8 elements from a block's start on, more than one.
bool sign_blocks(const CodecParams& p, const uint8_t* payload, uint64_t n, uint64_t lo,
                 uint64_t hi, const uint8_t** bits, const uint8_t** scales, uint64_t* block) {
    const Layout l = layout(p, n);
    if (l.block % 8 != 0 || lo % l.block != 0 || hi - lo <= l.block) return false;
    *bits = payload + l.bits_offset(0) + lo / 8;
    *scales = payload + l.scale_offset(lo / l.block);
    *block = l.block;
    return true;
}

}  // namespace

extern constexpr Codec codec_scaled_sign =
    CodecDef(GW_CODEC_SCALED_SIGN, "scaled_sign", kParams)
        .entries(max_payload, encode, check, decode, accumulate)
        .ranges(accumulate_range, sign_range, sign_blocks)
        .caps(kCapFusedScaledSign);

gw_status scaled_sign_phi(const kern::Table& kt, const float* x, uint64_t n, uint32_t block_size,
                          double* phi) {
    const Layout l(block_size, n);
    double best = 1.0;
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const float* xb = x + b * l.block;
        const uint64_t d = l.len(b);
        const double l1 = kt.sum_abs(xb, d), l2 = kt.sum_sq(xb, d);
        if (!std::isfinite(l1) || !std::isfinite(l2)) return GW_ERR_NONFINITE;
        if (l2 > 0.0) best = std::fmin(best, l1 * l1 / (static_cast<double>(d) * l2));
    }
    *phi = best;
    return GW_OK;
}

}  // namespace gw
