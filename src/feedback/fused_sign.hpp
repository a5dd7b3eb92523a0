// The blockwise scaled-sign encode fused with the error-feedback combine that
// produces its input, for the state machines that would otherwise write that
// input to memory first: the worker's p = combine(g, m, e) and the server's
// q = mean of frames + r e_s (the same combine with zero momentum terms).
//
// Pass 1 sums |p| per block (a whole-tensor block in 16 lanes across tiles,
// kern::Table::sum_abs's fold) with ef_sum_abs_lanes, so every scale is known
// and any NaN/Inf seen before anything is written. Pass 2 writes the sign
// bits, the residual and the momentum with ef_sign_step. p is computed in
// registers twice and never stored; the same kernels' arithmetic in the same
// order as producing p in full and calling the codec's encode: the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/sign_bits.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"
#include "util/scratch.hpp"

namespace gw {

// Elements per tile: the server builds each tile of its sum of frames in a
// buffer of this many floats (64 KB), which stays in L2 between the passes.
constexpr uint64_t kFusedTile = 16384;

// Block size of the fused path for `codec` on n elements, or 0 when it does
// not apply (a codec without kCapFusedScaledSign, or blocks that do not tile:
// not a multiple of 16 dividing the tile, nor one block per tensor). One
// block per tensor: n.
inline uint64_t fused_sign_block(const CodecParams& codec, uint64_t n) {
    if (!(codec.codec->caps & kCapFusedScaledSign)) return 0;
    const uint64_t b = static_cast<uint64_t>(param_or(codec, GW_PARAM_BLOCK_SIZE, 1));
    if (b == 0 || b >= n) return n;
    return (b % 16 == 0 && kFusedTile % b == 0) ? b : 0;
}

// ef_combine's inputs for one tile, each pointing at the tile's first element
// (m and e may stand in with zero weight, as in ef_combine's callers).
struct CombineInputs {
    const float* g;
    const float* m;
    const float* e;
};

inline double fold_lanes(double* lanes) {  // sum_abs's fold: lane[j] += lane[j + s]
    for (size_t s = 8; s >= 1; s /= 2)
        for (size_t j = 0; j < s; ++j) lanes[j] += lanes[j + s];
    return lanes[0];
}

// What lets a fixed-block step run in one pass and still change nothing on
// bad input: bounds B_m >= max|m_i| and B_e >= max|e_i| carried from step to
// step, so that max|g| (one read pass of g, which also finds any NaN/Inf)
// bounds every value the step computes. With G = max|g|, in real arithmetic
//   |m1| <= |mu| B_m + |kg| G = M1,   |p| <= |nu| M1 + |kp| G + |r| B_e = P,
// and the residual |p - sign(p) s| <= max(|p|, s) <= P, s being a mean of |p|.
// Each float operation adds at most a factor 1 + 2^-24 (the slack below
// covers the three in a row, and `tiny` subnormal results' absolute error;
// compounded over ~10^8 steps it reaches kLimit, and measuring the state
// again makes the bounds tight). While P stays below kLimit nothing can
// overflow, so the step cannot fail once g is finite. The bounds only choose
// the path; both paths give the same bits, so they are not saved, and a load
// marks them unknown (measured on next use).
struct MagnitudeBound {
    static constexpr double kLimit = 0x1p100;  // far below FLT_MAX / 2
    double m = 0.0, e = 0.0;
    bool known = true;  // m = e = 0 at start

    struct Step {
        double m1, p;
        bool one_pass() const { return p <= kLimit; }
    };
    Step step(const kern::EfCoef& k, double g) const {
        constexpr double slack = 1.0 + 0x1p-21, tiny = 0x1p-120;
        const double m1 = (std::fabs(k.mu) * m + std::fabs(k.kg) * g) * slack + tiny;
        const double p =
            (std::fabs(k.nu) * m1 + std::fabs(k.kp) * g + std::fabs(k.r) * e) * slack + tiny;
        return {m1, p};
    }
    // True if a step with max|g| <= gmax is proven not to overflow; *out
    // bounds what it computes either way. mv and ev (n floats or null) are
    // the state bounded; measured first if the bounds are unknown (after a
    // load) or too loose (two read passes, rare: values truly near kLimit
    // make every step measure and take the two-pass path).
    bool prove(const kern::Table& kt, const kern::EfCoef& k, double gmax, const float* mv,
               const float* ev, uint64_t n, Step* out) {
        if (gmax < kLimit && (!known || !step(k, gmax).one_pass())) {
            m = measure(kt, mv, n);
            e = measure(kt, ev, n);
            known = true;
        }
        // Valid for advance() whichever path the step takes.
        *out = known ? step(k, gmax) : Step{HUGE_VAL, HUGE_VAL};
        return out->one_pass();
    }
    // After a step that wrote momentum (has_m) and residual (has_e).
    void advance(const Step& s, bool has_m, bool has_e) {
        m = has_m ? s.m1 : 0.0;
        e = has_e ? s.p : 0.0;
    }
    // Largest |x_i| (inf if x holds NaN/Inf; 0 for a missing buffer).
    static double measure(const kern::Table& kt, const float* x, uint64_t n) {
        if (!x) return 0.0;
        uint32_t key = kt.max_abs_key(x, n);
        if (key > 0x7F800000u) key = 0x7F800000u;  // NaN: as Inf
        float f;
        std::memcpy(&f, &key, sizeof f);
        return f;
    }
};

// Encode p = ef_combine(g, m, e; k) (never materialized) into the payload at
// frame::payload_of(codec, frame); *len = payload bytes. tile(off, len)
// returns the inputs of elements [off, off+len), called once per tile in
// each pass. e_out (n floats or null: no residual) gets p - C(p) and m_out
// (n floats or null) the updated momentum; they may be the e and m that
// tile() returns. GW_ERR_NONFINITE, with nothing written, if p holds NaN/Inf;
// GW_ERR_OUT_OF_MEMORY if the scales do not fit in cx.codec.
//
// one_pass (fixed blocks only): the caller has proven p finite
// (MagnitudeBound), so each tile's scales and bits are done while the tile
// is in cache and tile() is called once per tile: g, m and e cross the memory
// bus once. Without that proof a late block's NaN would be seen after early
// blocks were written. tile()'s e must then be e_out's tile (or e_out null).
template <class Tile>
gw_status fused_scaled_sign(const CodecParams& codec, uint64_t n, const kern::EfCoef& k, Tile tile,
                            float* e_out, float* m_out, bool one_pass, Context& cx, void* frame,
                            uint64_t* len) {
    const kern::Table& t = cx.k();
    const uint64_t block = fused_sign_block(codec, n);
    const ScaledSignLayout l(block, n);  // the codec's payload
    float* scales = static_cast<float*>(cx.codec.get(l.blocks * sizeof(float)));
    if (!scales) return GW_ERR_OUT_OF_MEMORY;
    uint8_t* payload = frame::payload_of(codec, frame);
    // Fused blocks are multiples of 8 elements (or one block), so the blocks'
    // sign fields make one bit field: element i's byte is i / 8 into it.
    uint8_t* bits = payload + l.bits_offset(0);
    // Scales of the fixed blocks of tile [off, off+tl).
    auto scale_tile = [&](const CombineInputs& in, uint64_t off, uint64_t tl) {
        for (uint64_t b = 0; b < tl; b += block) {
            const uint64_t d = tl - b < block ? tl - b : block;
            double l[16] = {};
            t.ef_sum_abs_lanes(in.g + b, in.m + b, in.e + b, k, d, l);
            const double l1 = fold_lanes(l);
            if (!std::isfinite(l1)) return false;
            scales[(off + b) / block] = static_cast<float>(l1 / static_cast<double>(d));
        }
        return true;
    };
    // Tile [off, off+tl), its scales known: they go into the payload, then
    // the bits, residual and momentum.
    auto sign_tile = [&](const CombineInputs& in, uint64_t off, uint64_t tl) {
        for (uint64_t b = 0; b < tl; b += block) {
            const uint64_t d = tl - b < block ? tl - b : block;
            const uint64_t i = off + b;
            const float s = scales[i / block];
            store_le<float>(payload + l.scale_offset(i / block), s);
            uint8_t* bb = bits + i / 8;
            t.ef_sign_step(in.g + b, in.m + b, in.e + b, k, s, d, bb, e_out ? e_out + i : nullptr,
                           m_out ? m_out + i : nullptr);
            if (s == 0.0f) std::memset(bb, 0, (d + 7) / 8);  // the canonical zero block
        }
    };
    // Tile [off, off+tl) in one pass with a residual: each block's p, bits,
    // momentum and scale, then, the block still in L1, its residual.
    auto defer_tile = [&](const CombineInputs& in, uint64_t off, uint64_t tl) {
        return t.ef_sign_blocks(in.g, in.m, in.e, k, block, tl, bits + off / 8,
                                payload + l.scale_offset(off / block), e_out + off,
                                m_out ? m_out + off : nullptr);
    };
    l.size(len);  // n <= GW_MAX_ELEMENTS: always fits
    if (one_pass && block < n) {
        for (uint64_t off = 0; off < n; off += kFusedTile) {
            const uint64_t tl = n - off < kFusedTile ? n - off : kFusedTile;
            const CombineInputs in = tile(off, tl);
            // false only if the caller's proof failed
            if (e_out ? !defer_tile(in, off, tl) : !scale_tile(in, off, tl))
                return GW_ERR_INTERNAL;
            if (!e_out) sign_tile(in, off, tl);
        }
        return GW_OK;
    }
    double lanes[16] = {};
    for (uint64_t off = 0; off < n; off += kFusedTile) {
        const uint64_t tl = n - off < kFusedTile ? n - off : kFusedTile;
        const CombineInputs in = tile(off, tl);
        if (block == n)
            t.ef_sum_abs_lanes(in.g, in.m, in.e, k, tl, lanes);
        else if (!scale_tile(in, off, tl))
            return GW_ERR_NONFINITE;
    }
    if (block == n) {
        const double l1 = fold_lanes(lanes);
        if (!std::isfinite(l1)) return GW_ERR_NONFINITE;
        scales[0] = static_cast<float>(l1 / static_cast<double>(n));
    }
    for (uint64_t off = 0; off < n; off += kFusedTile) {
        const uint64_t tl = n - off < kFusedTile ? n - off : kFusedTile;
        sign_tile(tile(off, tl), off, tl);
    }
    return GW_OK;
}

// The residual of a deferred step (below) from what it stored: e_i -
// (e_i < 0 ? -s : s), sign_pack_residual's arithmetic, into out (which may
// be e). s = 0 (nothing pending) is e itself.
inline void settle_residual(const kern::Table& t, const float* e, float s, uint64_t n,
                            float* out) {
    if (s == 0.0f) {
        if (out != e) std::memcpy(out, e, n * sizeof(float));
        return;
    }
    uint8_t bits[kFusedTile / 8];  // not needed
    for (uint64_t off = 0; off < n; off += kFusedTile) {
        const uint64_t tl = n - off < kFusedTile ? n - off : kFusedTile;
        t.sign_pack_residual(e + off, tl, s, bits, out + off);
    }
}

// One block per tensor in one pass. Its scale s = mean |p| is known only
// after the last element, but the bits and the momentum do not depend on s;
// only the residual p - sign(p) s does. So p itself is stored in e_out, and
// s is returned in *pending, applied wherever the residual is read next (the
// next step, in the same kernel; settle_residual for residual() and a save).
// The caller has proven p finite (MagnitudeBound): nothing can fail once a
// tile is written. tile() as for fused_scaled_sign, once per tile; its e is
// e_out's tile, holding the previous step's p with scale *pending (0: the
// residual itself). ef_sign_defer settles it, writes the bits, p and m1, and
// sums |p| in sum_abs's lanes: the same values in the same order as
// fused_scaled_sign's two passes, so the same frame, and the same residual
// once settled. Without e_out (no residual) the two kernels of the fused
// path run per tile, |p| summed before m is overwritten.
template <class Tile>
gw_status fused_scaled_sign_deferred(const CodecParams& codec, uint64_t n, const kern::EfCoef& k,
                                     Tile tile, float* e_out, float* m_out, float* pending,
                                     Context& cx, void* frame, uint64_t* len) {
    const kern::Table& t = cx.k();
    const ScaledSignLayout l(n, n);
    uint8_t* payload = frame::payload_of(codec, frame);
    uint8_t* bits = payload + l.bits_offset(0);
    double lanes[16] = {};
    for (uint64_t off = 0; off < n; off += kFusedTile) {
        const uint64_t tl = n - off < kFusedTile ? n - off : kFusedTile;
        const CombineInputs in = tile(off, tl);
        float* mo = m_out ? m_out + off : nullptr;
        if (e_out) {
            t.ef_sign_defer(in.g, in.m, in.e, k, *pending, tl, bits + off / 8, e_out + off, mo,
                            lanes);
        } else {
            t.ef_sum_abs_lanes(in.g, in.m, in.e, k, tl, lanes);
            t.ef_sign_step(in.g, in.m, in.e, k, 0.0f, tl, bits + off / 8, nullptr, mo);
        }
    }
    const double l1 = fold_lanes(lanes);
    if (!std::isfinite(l1)) return GW_ERR_INTERNAL;  // the caller's proof failed
    const float s = static_cast<float>(l1 / static_cast<double>(n));
    store_le<float>(payload + l.scale_offset(0), s);
    if (s == 0.0f) std::memset(bits, 0, (n + 7) / 8);  // the canonical zero block
    *pending = e_out ? s : 0.0f;
    l.size(len);
    return GW_OK;
}

}  // namespace gw
