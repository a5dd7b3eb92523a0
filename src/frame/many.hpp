// Many frames of one tensor summed into one accumulator (an all-gather
// receiver, a server's round): every frame is opened and checked before the
// accumulator is touched, then, when every frame's codec can add a range of
// its elements (Codec::accumulate_range) and none is zstd-staged, the sum
// runs tile by tile so the accumulator's tile stays in cache while all the
// frames add their part: one pass over the accumulator instead of one per
// frame. Per element the additions happen in frame order either way, so the
// result has the same bits as adding the whole frames one after another.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>

#include "frame/frame.hpp"
#include "util/scratch.hpp"

namespace gw::frame {

// Accumulator elements per tile: 64 KB, in L2 with room for the frames' parts.
constexpr uint64_t kSumTile = 16384;

// The frames of one call, opened.
struct Many {
    const void* const* frames = nullptr;
    const size_t* sizes = nullptr;
    size_t count = 0;
    View* views = nullptr;  // count entries (in Context::frames)
    bool tiled = false;     // every frame can be added by ranges
};

// Open and check frames[0..count), each of exactly n elements; accept(view)
// adds the caller's checks (codec, tag) and returns GW_OK or a status. On
// failure *bad is the first rejected frame's index. Nothing is written but
// cx.frames and cx.stage.
template <class Accept>
gw_status open_many(const void* const* frames, const size_t* sizes, size_t count, uint64_t n,
                    Context& cx, Accept accept, Many* out, size_t* bad) {
    if (count > SIZE_MAX / sizeof(View)) return GW_ERR_INVALID_ARGUMENT;
    View* views = static_cast<View*>(cx.frames.get(count * sizeof(View)));
    if (!views && count) return GW_ERR_OUT_OF_MEMORY;
    bool tiled = true;
    for (size_t j = 0; j < count; ++j) {
        View v;
        gw_status st = open(cx, frames[j], sizes[j], true, &v);
        if (st == GW_OK && v.count != n) st = GW_ERR_COUNT_MISMATCH;
        if (st == GW_OK) st = accept(v);
        if (st != GW_OK) {
            *bad = j;
            return st;
        }
        tiled = tiled && v.params.codec->accumulate_range && !(v.flags & kFlagZstd);
        new (&views[j]) View(v);
    }
    *out = Many{frames, sizes, count, views, tiled};
    return GW_OK;
}

// tile[0..len) += alpha * decoded_j[off, off+len) for every frame in order
// (m.tiled; off a multiple of 8).
void add_tile(const kern::Table& kt, const Many& m, uint64_t n, uint64_t off, uint64_t len,
              float alpha, float* tile);

// An upper bound on |0 + alpha decoded_1[i] + ... + alpha decoded_M[i]| for
// every i, the rounding of the additions included, when every frame decodes
// to +-s blocks (Codec::sign_range): from the frames' scales alone, without
// decoding. +inf for frames of other kinds.
double max_abs_sum(const Many& m, uint64_t n, float alpha);

// acc[0..n) += alpha * decoded_j for every frame in order: tile by tile when
// m.tiled, else frame by frame (re-opening zstd-staged frames, whose payload
// lived in the shared stage).
void add_all(Context& cx, const Many& m, uint64_t n, float alpha, float* acc);

}  // namespace gw::frame
