// Chunk-wise top-k (ScaleCom's selection, docs/algorithms.md s.4): split x
// into chunks of c elements (the last one may be shorter; c = 0 means one
// chunk) and take, in each chunk j of c_j elements, its k_j largest |x_i|
// (ties to the lower index), so the work per element does not grow with n.
// How many per chunk is the codec's rule revision (GW_PARAM_REVISION):
//   1  k_j = min(c_j, ceil(k c_j / n)): up to k + chunks - 1 entries in all
//      (the first rule; its frames stay decodable and byte-identical);
//   2  exactly k: k_j = floor(k c_j / n), plus one for each of the
//      R = k - sum_j floor(k c_j / n) chunks with the largest fractional
//      shares (k c_j mod n), ties to the lower chunk (the default).
// Shared by the chunk_topk codec (values and indices) and the index codec
// (indices only).
#pragma once

#include <cstdint>

#include "codecs/sparse_payload.hpp"
#include "gradwire_types.h"

namespace gw::chunks {

enum : int64_t { kRuleCeil = 1, kRuleExact = 2 };

// Chunk length actually used: c, or n when c is 0 or larger than n.
inline uint64_t chunk_len(uint64_t c, uint64_t n) { return c == 0 || c > n ? n : c; }

// Entries of every chunk under a rule, in O(1) per chunk: all chunks but the
// last have the same length, hence the same share and fractional part.
class Shares {
  public:
    // k <= n < 2^32 (k c fits in 64 bits).
    Shares(int64_t rule, uint64_t k, uint64_t n, uint64_t c) {
        if (n == 0) return;
        c_ = chunk_len(c, n);
        full_ = n / c_;
        const uint64_t rest = n % c_;
        if (rule == kRuleCeil) {
            base_full_ = ceil_share(k, n, c_);
            base_rest_ = rest ? ceil_share(k, n, rest) : 0;
            return;
        }
        base_full_ = k * c_ / n;
        base_rest_ = k * rest / n;
        const uint64_t left = k - full_ * base_full_ - base_rest_;
        // The fractional parts sum to `left` and each is below 1, so only
        // chunks with a positive part get one more, none beyond c_j. The
        // shorter last chunk comes first only if its part is strictly larger.
        if (rest && k * rest % n > k * c_ % n && left > 0) {
            extra_rest_ = 1;
            extra_full_ = left - 1;
        } else {
            extra_full_ = left < full_ ? left : full_;
            extra_rest_ = left - extra_full_;
        }
    }
    // Entries of chunk j (elements [j c, min((j + 1) c, n))).
    uint64_t operator()(uint64_t j) const {
        return j < full_ ? base_full_ + (j < extra_full_ ? 1 : 0) : base_rest_ + extra_rest_;
    }
    // Sum over the chunks: the most entries a selection writes.
    uint64_t total() const {
        return full_ * base_full_ + extra_full_ + base_rest_ + extra_rest_;
    }
    uint64_t chunk() const { return c_; }

  private:
    static uint64_t ceil_share(uint64_t k, uint64_t n, uint64_t cj) {
        const uint64_t kj = (k * cj + n - 1) / n;
        return kj < cj ? kj : cj;
    }
    uint64_t c_ = 1, full_ = 0;
    uint64_t base_full_ = 0, base_rest_ = 0, extra_full_ = 0, extra_rest_ = 0;
};

// The chunk-selecting codecs declare k, density_ppm, chunk_size first and
// the revision last.
enum Slot { kSlotK = 0, kSlotDensity = 1, kSlotChunk = 2 };
constexpr ParamDef kParamChunk = {GW_PARAM_CHUNK_SIZE, "chunk_size", 4, 0, sparse::kMaxN, 65536};
constexpr ParamDef kParamRevision = revision_param(kRuleExact);
inline uint64_t k_of(const CodecParams& p, uint64_t n) {
    return sparse::k_of(p.v[kSlotK], p.v[kSlotDensity], n);
}
inline Shares shares_of(const CodecParams& p, uint64_t n) {
    return Shares(param_or(p, GW_PARAM_REVISION, kRuleCeil), k_of(p, n), n,
                  static_cast<uint64_t>(p.v[kSlotChunk]));
}
// The most entries a frame of these parameters holds for n elements.
inline uint64_t max_entries(const CodecParams& p, uint64_t n) { return shares_of(p, n).total(); }

// Indices of the chunk-wise top-k of finite x[0..n), increasing, into idx
// (room for s.total()); returns how many. `work`: kern::kTopkScratchBytes,
// 64-byte aligned.
uint64_t select(const kern::Table& kt, const float* x, uint64_t n, const Shares& s, uint32_t* idx,
                void* work);

// Index planes already checked against n (sparse::check_gaps): GW_OK, or
// GW_ERR_FRAME_INDEX if some chunk holds more than its share under the
// frame's rule (no encoder writes that).
gw_status check_counts(const kern::Table& kt, const uint8_t* planes, uint64_t nnz, uint64_t n,
                       const Shares& s);

}  // namespace gw::chunks
