#include "frame/many.hpp"

#include <cmath>

#include "util/bytes.hpp"

namespace gw::frame {
namespace {

// Every frame of small fixed blocks of one size (scaled sign, 64 elements:
// the DDP hook's `ef`): kern::sign_accumulate_blocks, kSignAccumulateMax
// frames at a time, so the tile is loaded and stored once per run rather than
// once per frame and block. False, with nothing added, if any frame is not.
bool add_blocks(const kern::Table& kt, const Many& m, uint64_t n, uint64_t off, uint64_t len,
                float alpha, float* tile) {
    const uint8_t* bits[kern::kSignAccumulateMax];
    const uint8_t* scales[kern::kSignAccumulateMax];
    uint64_t block = 0;
    for (int pass = 0; pass < 2; ++pass) {  // check every frame, then add
        size_t run = 0;
        for (size_t j = 0; j < m.count; ++j) {
            const View& f = m.views[j];
            const Codec& c = *f.params.codec;
            uint64_t b = 0;
            if (!c.sign_blocks || !c.sign_blocks(f.params, f.payload, n, off, off + len,
                                                 &bits[run], &scales[run], &b) ||
                (block != 0 && b != block))
                return false;
            block = b;
            if (pass == 1 && ++run == kern::kSignAccumulateMax) {
                kt.sign_accumulate_blocks(bits, scales, alpha, run, block, len, tile);
                run = 0;
            }
        }
        if (pass == 1 && run) kt.sign_accumulate_blocks(bits, scales, alpha, run, block, len, tile);
    }
    return true;
}

// Runs of sign-bit frames (sign, scaled sign within one block) go through
// kern::sign_accumulate_n, up to kSignAccumulateMax at a time: the tile is
// loaded and stored once per run instead of once per frame.
void add_range(const kern::Table& kt, const Many& m, uint64_t n, uint64_t off, uint64_t len,
               float alpha, float* tile) {
    if (add_blocks(kt, m, n, off, len, alpha, tile)) return;
    const uint8_t* bits[kern::kSignAccumulateMax];
    float v[kern::kSignAccumulateMax];
    size_t run = 0;
    auto flush = [&] {
        if (run) kt.sign_accumulate_n(bits, v, run, len, tile);
        run = 0;
    };
    for (size_t j = 0; j < m.count; ++j) {
        const View& f = m.views[j];
        const Codec& c = *f.params.codec;
        float s = 0.0f;
        if (c.sign_range && c.sign_range(f.params, f.payload, n, off, off + len, &bits[run], &s)) {
            v[run++] = alpha * s;  // what accumulate adds: +-(alpha * s)
            if (run == kern::kSignAccumulateMax) flush();
            continue;
        }
        flush();
        c.accumulate_range(kt, f.params, f.payload, n, off, off + len, alpha, tile);
    }
    flush();
}

}  // namespace

// Frames of fixed blocks that divide the tile (scaled sign, 4096 elements)
// are ranges of +-s only block by block: the tile goes in pieces of the
// smallest such block (not below 1024 elements, where the calls would cost
// more than they save), each piece one run. Per element the same additions in
// the same order whatever the pieces.
void add_tile(const kern::Table& kt, const Many& m, uint64_t n, uint64_t off, uint64_t len,
              float alpha, float* tile) {
    uint64_t piece = len;
    for (size_t j = 0; j < m.count; ++j) {
        const uint64_t b =
            static_cast<uint64_t>(param_or(m.views[j].params, GW_PARAM_BLOCK_SIZE, 0));
        if (b >= 1024 && b < piece && kSumTile % b == 0 && off % b == 0) piece = b;
    }
    for (uint64_t a = 0; a < len; a += piece)
        add_range(kt, m, n, off + a, len - a < piece ? len - a : piece, alpha, tile + a);
}

double max_abs_sum(const Many& m, uint64_t n, float alpha) {
    double sum = 0.0;
    for (size_t j = 0; j < m.count; ++j) {
        const View& f = m.views[j];
        const Codec& c = *f.params.codec;
        if (!c.sign_range) return HUGE_VAL;
        uint64_t block = static_cast<uint64_t>(param_or(f.params, GW_PARAM_BLOCK_SIZE, 0));
        if (block == 0 || block > n) block = n;
        float top = 0.0f;
        const uint8_t* first = nullptr;
        const uint8_t* scales = nullptr;
        uint64_t b = 0;
        if (c.sign_blocks && c.sign_blocks(f.params, f.payload, n, 0, n, &first, &scales, &b)) {
            // checked scales: finite, not negative, so a plain max is fmax
            for (uint64_t k = 0; k < (n + b - 1) / b; ++k) {
                const float s = load_le<float>(scales + 4 * k);
                top = s > top ? s : top;
            }
            sum += std::fabs(static_cast<double>(alpha)) * top;
            continue;
        }
        for (uint64_t lo = 0; lo < n; lo += block) {
            const uint8_t* bits = nullptr;
            float s = 0.0f;
            const uint64_t hi = n - lo < block ? n : lo + block;
            if (!c.sign_range(f.params, f.payload, n, lo, hi, &bits, &s)) return HUGE_VAL;
            top = std::fmax(top, std::fabs(s));
        }
        sum += std::fabs(static_cast<double>(alpha)) * top;
    }
    // Each of the M products and sums rounds by at most 2^-24 relative (and
    // subnormal results by an absolute 2^-149).
    return sum * (1.0 + static_cast<double>(m.count + 1) * 0x1p-23) + 0x1p-120;
}

void add_all(Context& cx, const Many& m, uint64_t n, float alpha, float* acc) {
    if (n == 0) return;
    if (m.tiled) {
        for (uint64_t off = 0; off < n; off += kSumTile)
            add_tile(cx.k(), m, n, off, n - off < kSumTile ? n - off : kSumTile, alpha, acc + off);
        return;
    }
    for (size_t j = 0; j < m.count; ++j) {
        View v = m.views[j];
        // Checked already, so opening again succeeds; it refills the stage.
        if (v.flags & kFlagZstd) open(cx, m.frames[j], m.sizes[j], true, &v);
        v.params.codec->accumulate(cx.k(), v.params, v.payload, v.payload_len, n, alpha, acc);
    }
}

}  // namespace gw::frame
