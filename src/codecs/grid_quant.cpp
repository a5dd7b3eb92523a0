#include "codecs/grid_quant.hpp"

#include <cmath>
#include <cstring>

#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw::gq {
namespace {

// Elements per pass: one chunk of random words and codes on the stack, every
// chunk's codes starting on a byte boundary (kernels.hpp).
constexpr uint64_t kChunk = kern::kRngChunk;
// Revision 2 takes a byte per element: four times the elements per chunk
// for the same stream words.
constexpr uint64_t kChunk8 = 4 * kern::kRngChunk;

// The bytes of elements [e, e + c) under revision 2 (byte e%4 of word e/4,
// the word's little-endian bytes): `words` holds c/4 + 2 words.
const uint8_t* stream_bytes(const kern::Table& kt, const EncodeCtx& ctx, uint64_t e, uint64_t c,
                            uint32_t* words) {
    const uint64_t w0 = e >> 2, nw = ((e + c - 1) >> 2) - w0 + 1;
    kt.rng_u32(ctx.seed, static_cast<uint32_t>(ctx.step), ctx.tensor, w0, words, nw);
    if constexpr (!kHostLittleEndian)
        for (uint64_t j = 0; j < nw; ++j) words[j] = __builtin_bswap32(words[j]);
    return reinterpret_cast<const uint8_t*>(words) + (e & 3);
}

unsigned bits_for(uint64_t values) {
    unsigned w = 1;
    while ((uint64_t(1) << w) < values) ++w;
    return w;
}

uint64_t blocks_of(uint64_t block_size, uint64_t n, uint64_t* block) {
    *block = block_size == 0 ? n : block_size;
    return n == 0 ? 0 : ceil_div(n, *block);
}

uint64_t code_bytes(const Grid& g, uint64_t d) { return ceil_div(d * g.width, 8); }

// Walks the blocks: f(b, first element, elements, delta bytes, code bytes).
template <class F>
void for_each_block(const Grid& g, uint64_t block_size, uint64_t n, uint8_t* payload, F&& f) {
    uint64_t block = 0;
    const uint64_t blocks = blocks_of(block_size, n, &block);
    uint8_t* codes = payload + 4 * blocks;
    for (uint64_t b = 0; b < blocks; ++b) {
        const uint64_t first = b * block;
        const uint64_t d = b + 1 < blocks ? block : n - first;
        f(b, first, d, payload + 4 * b, codes);
        codes += code_bytes(g, d);
    }
}

}  // namespace

Grid symmetric(int32_t levels) {
    Grid g;
    g.lo = -levels;
    g.hi = levels;
    g.width = bits_for(2 * uint64_t(levels) + 1);
    return g;
}

Grid for_bits(unsigned b) {
    if (b > 1) {
        Grid g = symmetric((int32_t(1) << (b - 1)) - 1);
        g.width = b;
        return g;
    }
    Grid g;
    g.lo = 0;
    g.hi = 1;
    g.pair = true;
    g.width = 1;
    return g;
}

float step_for(float m, int32_t levels) {
    float d = m / static_cast<float>(levels);
    // Exact in double (24-bit mantissa times < 2^16): bump until the grid reaches m.
    while (static_cast<double>(d) * levels < static_cast<double>(m))
        d = std::nextafter(d, INFINITY);
    return d;
}

gw_status max_rule(const kern::Table& kt, const CodecParams&, const Grid& g, const float* x,
                   uint64_t n, float* delta) {
    const uint32_t key = kt.max_abs_key(x, n);
    if (key >= 0x7F800000u) return GW_ERR_NONFINITE;
    float m;
    std::memcpy(&m, &key, 4);
    *delta = g.pair ? m : step_for(m, g.hi);
    return GW_OK;
}

bool ends_finite(const Grid& g, float delta) {
    const float c = g.pair ? 1.0f : static_cast<float>(g.hi);
    return std::isfinite(c * delta);
}

bool payload_size(const Grid& g, uint64_t block_size, uint64_t n, uint64_t* bytes) {
    uint64_t block = 0;
    const uint64_t blocks = blocks_of(block_size, n, &block);
    if (n > UINT64_MAX / 16 || blocks > UINT64_MAX / 8) return false;
    // Full blocks' codes round up once each: at most n*width/8 + blocks bytes.
    const uint64_t full = blocks == 0 ? 0 : blocks - 1;
    *bytes = 4 * blocks + full * code_bytes(g, block) + code_bytes(g, n - full * block);
    return true;
}

gw_status encode(const CodecParams& p, const Grid& g, ScaleRule rule, uint64_t block_size,
                 const EncodeCtx& ctx, const float* x, uint64_t n, uint8_t* payload,
                 uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    // Pass 1: every step, so a NaN in a late block is seen before any residual moves.
    gw_status st = GW_OK;
    for_each_block(g, block_size, n, payload, [&](uint64_t, uint64_t first, uint64_t d,
                                                 uint8_t* dp, uint8_t*) {
        if (st != GW_OK) return;
        float delta = 0.0f;
        st = rule(kt, p, g, x + first, d, &delta);
        if (st == GW_OK && !ends_finite(g, delta)) st = GW_ERR_OVERFLOW;
        store_le<float>(dp, delta);
    });
    if (st != GW_OK) return st;
    // Pass 2: stochastic rounding and packing, chunk by chunk. On the pair
    // grid x - (-+delta) can overflow (|x| + delta > FLT_MAX, e.g. x = 1.5e38
    // rounded to -3e38): each chunk's residual is checked while in cache,
    // and GW_ERR_OVERFLOW leaves the residual partly written (codec.hpp).
    const bool check_residual = residual && g.pair;
    bool residual_finite = true;
    for_each_block(g, block_size, n, payload, [&](uint64_t, uint64_t first, uint64_t d,
                                                 uint8_t* dp, uint8_t* cp) {
        if (!residual_finite) return;
        const float delta = load_le<float>(dp);
        if (delta == 0.0f) {  // the one canonical zero block
            std::memset(cp, 0, code_bytes(g, d));
            if (residual && residual != x) std::memcpy(residual + first, x + first, d * 4);
            return;
        }
        uint32_t words[kChunk8 / 4 + 2], codes[kChunk8];
        const uint64_t chunk = g.rule == 2 ? kChunk8 : kChunk;
        for (uint64_t i = 0; i < d; i += chunk) {
            const uint64_t c = d - i < chunk ? d - i : chunk, e = first + i;
            float* r = residual ? residual + e : nullptr;
            if (g.rule == 2) {
                const kern::StreamAt at{ctx.seed, static_cast<uint32_t>(ctx.step), ctx.tensor, e};
                kt.stoch_round8(x + e, c, delta, g.lo, g.hi, g.pair,
                                stream_bytes(kt, ctx, e, c, words), at, codes, r);
            } else {
                kt.rng_u32(ctx.seed, static_cast<uint32_t>(ctx.step), ctx.tensor, e, words, c);
                kt.stoch_round(x + e, c, delta, g.lo, g.hi, g.pair, words, codes, r);
            }
            if (check_residual && !kt.all_finite(residual + first + i, c)) {
                residual_finite = false;
                return;
            }
            kt.pack_codes(codes, c, g.width, cp + i / 8 * g.width);
        }
    });
    if (!residual_finite) return GW_ERR_OVERFLOW;
    payload_size(g, block_size, n, len);
    return GW_OK;
}

namespace {
// Fields of W bits (W = 2, 4, 8) in `bytes` whole bytes, each at most top:
// one branch-free loop the compiler vectorizes.
template <unsigned W>
bool fields_within(const uint8_t* in, uint64_t bytes, uint32_t top) {
    constexpr unsigned mask = (1u << W) - 1;
    unsigned bad = 0;
    for (uint64_t i = 0; i < bytes; ++i)
        for (unsigned k = 0; k < 8 / W; ++k) bad |= unsigned(((in[i] >> (k * W)) & mask) > top);
    return bad == 0;
}

// True if each of the c codes at `in` (padding bits known to be 0) is at
// most top. Byte-sized fields are tested where they lie, padding included
// (0 passes any top); other widths are unpacked a chunk at a time.
bool codes_within(const kern::Table& kt, const uint8_t* in, uint64_t c, unsigned width,
                  uint32_t top) {
    const uint64_t bytes = ceil_div(c * width, 8);
    if (width < 32 && top >= (uint32_t(1) << width) - 1) return true;  // every field fits
    if (top == 0) return fields_within<8>(in, bytes, 0);                // all zero, any width
    if (width == 2) return fields_within<2>(in, bytes, top);
    if (width == 4) return fields_within<4>(in, bytes, top);
    if (width == 8) return fields_within<8>(in, bytes, top);
    uint32_t codes[kChunk];
    for (uint64_t i = 0; i < c; i += kChunk) {
        const uint64_t n = c - i < kChunk ? c - i : kChunk;
        kt.unpack_codes(in + i / 8 * width, n, width, codes);
        uint32_t hi = 0;  // largest code: one branch per chunk
        for (uint64_t j = 0; j < n; ++j) hi = codes[j] > hi ? codes[j] : hi;
        if (hi > top) return false;
    }
    return true;
}
}  // namespace

gw_status check(const kern::Table& kt, const Grid& g, uint64_t block_size, const uint8_t* payload,
                uint64_t len, uint64_t n) {
    uint64_t expected = 0;
    if (!payload_size(g, block_size, n, &expected) || len != expected) return GW_ERR_FRAME_LENGTH;
    const uint32_t top = static_cast<uint32_t>(g.hi - g.lo);
    gw_status st = GW_OK;
    for_each_block(g, block_size, n, const_cast<uint8_t*>(payload),
                   [&](uint64_t, uint64_t, uint64_t d, uint8_t* dp, uint8_t* cp) {
                       if (st != GW_OK) return;
                       const uint32_t w = load_le<uint32_t>(dp);
                       if ((w & 0x80000000u) != 0 || (w & 0x7F800000u) == 0x7F800000u ||
                           !ends_finite(g, load_le<float>(dp))) {
                           st = GW_ERR_FRAME_PAYLOAD;
                           return;
                       }
                       if (!padding_clear(cp, d, g.width)) {
                           st = GW_ERR_FRAME_PAYLOAD;
                           return;
                       }
                       if (!codes_within(kt, cp, d, g.width, w == 0 ? 0 : top))
                           st = GW_ERR_FRAME_PAYLOAD;
                   });
    return st;
}

namespace {
template <class F>
void walk_codes(const kern::Table& kt, const Grid& g, uint64_t block_size, const uint8_t* payload,
                uint64_t n, F&& f) {
    for_each_block(g, block_size, n, const_cast<uint8_t*>(payload),
                   [&](uint64_t, uint64_t first, uint64_t d, uint8_t* dp, uint8_t* cp) {
                       const float delta = load_le<float>(dp);
                       uint32_t codes[kChunk];
                       for (uint64_t i = 0; i < d; i += kChunk) {
                           const uint64_t c = d - i < kChunk ? d - i : kChunk;
                           kt.unpack_codes(cp + i / 8 * g.width, c, g.width, codes);
                           f(first + i, c, delta, codes);
                       }
                   });
}
}  // namespace

void decode(const kern::Table& kt, const Grid& g, uint64_t block_size, const uint8_t* payload,
            uint64_t n, float* out) {
    walk_codes(kt, g, block_size, payload, n,
               [&](uint64_t first, uint64_t c, float delta, const uint32_t* codes) {
                   kt.dequant(codes, c, delta, g.lo, g.pair, out + first);
               });
}

void accumulate(const kern::Table& kt, const Grid& g, uint64_t block_size, const uint8_t* payload,
                uint64_t n, float alpha, float* acc) {
    walk_codes(kt, g, block_size, payload, n,
               [&](uint64_t first, uint64_t c, float delta, const uint32_t* codes) {
                   kt.dequant_accumulate(codes, c, delta, g.lo, g.pair, alpha, acc + first);
               });
}

bool padding_clear(const uint8_t* in, size_t c, unsigned width) {
    const uint64_t bits = uint64_t(c) * width;
    const unsigned used = static_cast<unsigned>(bits & 7);
    return used == 0 || (in[bits >> 3] >> used) == 0;
}

double expected_sq_error(const Grid& g, const float* x, uint64_t n, float delta) {
    if (delta == 0.0f) {
        double s = 0.0;
        for (uint64_t i = 0; i < n; ++i) s += double(x[i]) * double(x[i]);
        return s;
    }
    // The encoder's own distribution: from t = x/delta it goes to c = floor(t)
    // + 1 with probability P(u < r) = ceil(r * 2^24) / 2^24 (u on the 2^-24
    // grid), clamped; the expectation of (v(c) - x)^2 over those two outcomes.
    const float lo = float(g.lo), hi = float(g.hi);
    auto value = [&](float c) {
        c = c < lo ? lo : (c > hi ? hi : c);
        return double((g.pair ? c * 2.0f - 1.0f : c) * delta);
    };
    double s = 0.0;
    for (uint64_t i = 0; i < n; ++i) {
        float t = x[i] / delta;
        if (g.pair) t = (t + 1.0f) * 0.5f;
        const float f = std::floor(t);
        const double r = double(t - f);
        const double pu = std::ceil(r * 0x1.0p24) * 0x1.0p-24;
        const double xd = double(x[i]);
        const double dn = value(f) - xd, up = value(f + 1.0f) - xd;
        s += (1.0 - pu) * dn * dn + pu * up * up;
    }
    return s;
}

}  // namespace gw::gq
