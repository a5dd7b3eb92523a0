// The blockwise scaled-sign encode fused with whatever produces its input,
// tile by tile (docs/performance.md), for the state machines that feed it a
// vector they would otherwise write to memory first: the worker's
// p = combine(g, m, e) and the server's q = mean of frames + r e_s.
//
// Pass 1 produces each tile of p into a tile buffer and sums |p| per block
// (a whole-tensor block in 16 lanes across tiles, kern::Table::sum_abs's
// fold), so every scale is known and any NaN/Inf seen before anything is
// written. Pass 2 produces each tile again and writes the sign bits and the
// residual. The same kernels on the same values in the same order as
// producing p in full and calling the codec's encode: the same bits.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "codecs/codec.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"
#include "util/scratch.hpp"

namespace gw {

// Elements per tile (64 KB per float array): a tile of every array involved
// stays in L2 between the two uses.
constexpr uint64_t kFusedTile = 16384;

// Block size of the fused path for `codec` on n elements, or 0 when it does
// not apply (another codec, or blocks that do not tile: not a multiple of 16
// dividing the tile, nor one block per tensor). One block per tensor: n.
inline uint64_t fused_sign_block(const CodecParams& codec, uint64_t n) {
    if (codec.codec->id != GW_CODEC_SCALED_SIGN) return 0;
    const uint64_t b = static_cast<uint64_t>(param_or(codec, GW_PARAM_BLOCK_SIZE, 1));
    if (b == 0 || b >= n) return n;
    return (b % 16 == 0 && kFusedTile % b == 0) ? b : 0;
}

// Encode p (never materialized) into the payload at frame::payload_of(codec,
// frame); *len = payload bytes. produce(off, len, p) writes p[off, off+len)
// to p (a buffer of kFusedTile floats); commit(off, len) runs after a tile's
// bits in pass 2 (the worker's momentum update). e (n floats, or null for no
// residual) gets p - C(p). GW_ERR_NONFINITE, with nothing written, if p holds
// NaN/Inf; GW_ERR_OUT_OF_MEMORY if the scales do not fit in scratch.
template <class Produce, class Commit>
gw_status fused_scaled_sign(const CodecParams& codec, uint64_t n, Produce produce,
                            Commit commit, float* p, float* e, Scratch& scratch, void* frame,
                            uint64_t* len) {
    const kern::Table& t = kern::active();
    const uint64_t block = fused_sign_block(codec, n);
    const uint64_t blocks = (n + block - 1) / block;
    float* scales = static_cast<float*>(scratch.get(blocks * sizeof(float)));
    if (!scales) return GW_ERR_OUT_OF_MEMORY;
    double lanes[16] = {};
    for (uint64_t off = 0; off < n; off += kFusedTile) {
        const uint64_t tl = n - off < kFusedTile ? n - off : kFusedTile;
        produce(off, tl, p);
        if (block == n) {
            t.sum_abs_lanes(p, tl, lanes);
            continue;
        }
        for (uint64_t b = 0; b < tl; b += block) {
            const uint64_t d = tl - b < block ? tl - b : block;
            const double l1 = t.sum_abs(p + b, d);
            if (!std::isfinite(l1)) return GW_ERR_NONFINITE;
            scales[(off + b) / block] = static_cast<float>(l1 / static_cast<double>(d));
        }
    }
    if (block == n) {
        for (size_t s = 8; s >= 1; s /= 2)  // sum_abs's fold: lane[j] += lane[j + s]
            for (size_t j = 0; j < s; ++j) lanes[j] += lanes[j + s];
        if (!std::isfinite(lanes[0])) return GW_ERR_NONFINITE;
        scales[0] = static_cast<float>(lanes[0] / static_cast<double>(n));
    }
    uint8_t* payload = frame::payload_of(codec, frame);
    for (uint64_t b = 0; b < blocks; ++b) store_le<float>(payload + 4 * b, scales[b]);
    uint8_t* bits = payload + 4 * blocks;  // blocks are multiples of 8: one bit field
    for (uint64_t off = 0; off < n; off += kFusedTile) {
        const uint64_t tl = n - off < kFusedTile ? n - off : kFusedTile;
        produce(off, tl, p);
        for (uint64_t b = 0; b < tl; b += block) {
            const uint64_t d = tl - b < block ? tl - b : block;
            const float s = scales[(off + b) / block];
            uint8_t* bb = bits + (off + b) / 8;
            if (e)
                t.sign_pack_residual(p + b, d, s, bb, e + off + b);
            else
                t.sign_pack(p + b, d, bb);
            if (s == 0.0f) std::memset(bb, 0, (d + 7) / 8);  // the canonical zero block
        }
        commit(off, tl);
    }
    *len = 4 * blocks + (n + 7) / 8;
    return GW_OK;
}

}  // namespace gw
