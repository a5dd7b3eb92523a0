// Blockwise scaled sign (docs/algorithms.md s.1; Zheng et al. 2019, s.3.2):
//   scale_b = ||v_b||_1 / d_b,   C(v) = [scale_1 sign(v_1), ..., scale_B sign(v_B)]
// Parameter: block_size (u32 on the wire; 0 = the whole tensor is one block;
// the row length of an [out][in] weight matrix gives one block per row).
// Payload: B float32 scales, then per block ceil(d_b/8) bytes of sign bits, so
// every block starts on a byte boundary whatever the block size. A block whose
// scale is 0 decodes to zeros and has all sign bits clear: the encoder writes
// it so (also when a tiny L1 mean rounds to 0) and the decoder demands it.
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

struct Layout {
    uint64_t blocks = 0;       // B
    uint64_t block = 0;        // elements per full block
    uint64_t block_bytes = 0;  // sign bytes per full block
};

Layout layout(uint64_t block_size, uint64_t n) {
    Layout l;
    l.block = block_size == 0 ? n : block_size;
    l.blocks = n == 0 ? 0 : ceil_div(n, l.block);
    l.block_bytes = ceil_div(l.block, 8);
    return l;
}
Layout layout(const CodecParams& p, uint64_t n) { return layout(uint64_t(p.v[kBlock]), n); }

// Elements in block b.
inline uint64_t block_len(const Layout& l, uint64_t n, uint64_t b) {
    return b + 1 < l.blocks ? l.block : n - b * l.block;
}

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    const Layout l = layout(p, n);
    if (l.blocks > UINT64_MAX / 4) return false;
    const uint64_t full = n == 0 ? 0 : l.blocks - 1;
    const uint64_t tail = n - full * l.block;
    // full blocks * block_bytes never exceeds ceil(n/8) + blocks, so no overflow below.
    const uint64_t bits = full * l.block_bytes + ceil_div(tail, 8);
    if (bits > UINT64_MAX - l.blocks * 4) return false;
    *bytes = l.blocks * 4 + bits;
    return true;
}

gw_status encode(const CodecParams& p, const EncodeCtx&, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& t = kern::active();
    const Layout l = layout(p, n);
    // Pass 1: every scale, checking finiteness before any residual is touched.
    // The L1 norm is summed in double, so only NaN/Inf can make it non-finite.
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const uint64_t d = block_len(l, n, b);
        const double l1 = t.sum_abs(x + b * l.block, d);
        if (!std::isfinite(l1)) return GW_ERR_NONFINITE;
        store_le<float>(payload + 4 * b, static_cast<float>(l1 / static_cast<double>(d)));
    }
    // Pass 2: sign bits, fused with the residual update when asked.
    uint8_t* bits = payload + 4 * l.blocks;
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const uint64_t d = block_len(l, n, b);
        const float s = load_le<float>(payload + 4 * b);
        const float* xb = x + b * l.block;
        uint8_t* bb = bits + b * l.block_bytes;
        if (residual)
            t.sign_pack_residual(xb, d, s, bb, residual + b * l.block);
        else
            t.sign_pack(xb, d, bb);
        // A zero scale decodes to zeros whatever the bits: write them clear,
        // the one canonical form (the residual above is x - 0 = x either way).
        if (s == 0.0f) std::memset(bb, 0, ceil_div(d, 8));
    }
    max_payload(p, n, len);
    return GW_OK;
}

gw_status check(const CodecParams& p, const uint8_t* payload, uint64_t len, uint64_t n) {
    uint64_t expected = 0;
    if (!max_payload(p, n, &expected) || len != expected) return GW_ERR_FRAME_LENGTH;
    const Layout l = layout(p, n);
    const uint8_t* bits = payload + 4 * l.blocks;
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const uint32_t w = load_le<uint32_t>(payload + 4 * b);
        // A scale is an L1 mean: finite and not negative (no sign bit, even on zero).
        if ((w & 0x80000000u) != 0 || (w & 0x7F800000u) == 0x7F800000u)
            return GW_ERR_FRAME_PAYLOAD;
        const uint8_t* bb = bits + b * l.block_bytes;
        const uint64_t d = block_len(l, n, b);
        if (!sign_padding_clear(bb, d)) return GW_ERR_FRAME_PAYLOAD;
        if (w == 0) {
            for (uint64_t i = 0; i < ceil_div(d, 8); ++i)
                if (bb[i] != 0) return GW_ERR_FRAME_PAYLOAD;
        }
    }
    return GW_OK;
}

void decode(const CodecParams& p, const uint8_t* payload, uint64_t, uint64_t n, float* out) {
    const kern::Table& t = kern::active();
    const Layout l = layout(p, n);
    const uint8_t* bits = payload + 4 * l.blocks;
    for (uint64_t b = 0; b < l.blocks; ++b)
        t.sign_unpack(bits + b * l.block_bytes, block_len(l, n, b),
                      load_le<float>(payload + 4 * b), out + b * l.block);
}

void accumulate(const CodecParams& p, const uint8_t* payload, uint64_t, uint64_t n, float alpha,
                float* acc) {
    const kern::Table& t = kern::active();
    const Layout l = layout(p, n);
    const uint8_t* bits = payload + 4 * l.blocks;
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const float v = alpha * load_le<float>(payload + 4 * b);  // alpha*(+-s) == +-(alpha*s)
        t.sign_accumulate(bits + b * l.block_bytes, block_len(l, n, b), v, acc + b * l.block);
    }
}

// Elements [lo, hi) block by block. A block's bits start on a byte, so a range
// starting inside a block whose length is not a multiple of 8 may start
// mid-byte: those first elements take the kernel's arithmetic one at a time.
void accumulate_range(const CodecParams& p, const uint8_t* payload, uint64_t n, uint64_t lo,
                      uint64_t hi, float alpha, float* acc) {
    const kern::Table& t = kern::active();
    const Layout l = layout(p, n);
    const uint8_t* bits = payload + 4 * l.blocks;
    for (uint64_t b = lo / l.block; b < l.blocks && b * l.block < hi; ++b) {
        const uint64_t first = b * l.block, end = first + block_len(l, n, b);
        uint64_t i = lo > first ? lo : first;
        const uint64_t stop = hi < end ? hi : end;
        const float v = alpha * load_le<float>(payload + 4 * b);
        const uint8_t* bb = bits + b * l.block_bytes;
        for (; i < stop && (i - first) % 8 != 0; ++i) {
            const uint64_t j = i - first;
            const float q = (bb[j / 8] >> (j % 8)) & 1 ? -v : v;
            acc[i - lo] = acc[i - lo] + q;
        }
        if (i < stop) t.sign_accumulate(bb + (i - first) / 8, stop - i, v, acc + (i - lo));
    }
}

// One block holds the whole range and the range starts on a byte of its bits.
bool sign_range(const CodecParams& p, const uint8_t* payload, uint64_t n, uint64_t lo,
                uint64_t hi, const uint8_t** bits, float* s) {
    const Layout l = layout(p, n);
    const uint64_t b = lo / l.block, first = b * l.block;
    if (hi > first + block_len(l, n, b) || (lo - first) % 8 != 0) return false;
    *bits = payload + 4 * l.blocks + b * l.block_bytes + (lo - first) / 8;
    *s = load_le<float>(payload + 4 * b);
    return true;
}

}  // namespace

extern const Codec kScaledSignCodec = {GW_CODEC_SCALED_SIGN, "scaled_sign", kParams,   1,
                                       nullptr,    max_payload, encode,    check,
                                       decode,     accumulate,  accumulate_range, sign_range};

gw_status scaled_sign_phi(const float* x, uint64_t n, uint32_t block_size, double* phi) {
    const kern::Table& t = kern::active();
    const Layout l = layout(block_size, n);
    double best = 1.0;
    for (uint64_t b = 0; b < l.blocks; ++b) {
        const float* xb = x + b * l.block;
        const uint64_t d = block_len(l, n, b);
        const double l1 = t.sum_abs(xb, d), l2 = t.sum_sq(xb, d);
        if (!std::isfinite(l1) || !std::isfinite(l2)) return GW_ERR_NONFINITE;
        if (l2 > 0.0) best = std::fmin(best, l1 * l1 / (static_cast<double>(d) * l2));
    }
    *phi = best;
    return GW_OK;
}

}  // namespace gw
