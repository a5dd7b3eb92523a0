#include "frame/many.hpp"

namespace gw::frame {

void add_tile(const Many& m, uint64_t n, uint64_t off, uint64_t len, float alpha, float* tile) {
    for (size_t j = 0; j < m.count; ++j) {
        const View& v = m.views[j];
        v.params.codec->accumulate_range(v.params, v.payload, n, off, off + len, alpha, tile);
    }
}

void add_all(const Many& m, uint64_t n, float alpha, float* acc, Scratch& stage) {
    if (n == 0) return;
    if (m.tiled) {
        for (uint64_t off = 0; off < n; off += kSumTile)
            add_tile(m, n, off, n - off < kSumTile ? n - off : kSumTile, alpha, acc + off);
        return;
    }
    for (size_t j = 0; j < m.count; ++j) {
        View v = m.views[j];
        // Checked already, so opening again succeeds; it refills the stage.
        if (v.flags & kFlagZstd) open(m.frames[j], m.sizes[j], true, stage, &v);
        v.params.codec->accumulate(v.params, v.payload, v.payload_len, n, alpha, acc);
    }
}

}  // namespace gw::frame
