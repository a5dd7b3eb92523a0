// Chunk-wise top-k (ScaleCom's selection, docs/algorithms.md s.4): split x
// into chunks of c elements (the last one may be shorter; c = 0 means one
// chunk) and take, in each chunk j of c_j elements, the k_j = min(c_j,
// ceil(k * c_j / n)) largest |x_i| (ties to the lower index), so the work
// per element does not grow with n. Shared by the chunk_topk codec (values
// and indices) and the index codec (indices only).
#pragma once

#include <cstdint>

#include "codecs/sparse_payload.hpp"
#include "gradwire_types.h"

namespace gw::chunks {

// Entries kept from a chunk of c_j elements of an n-element tensor.
inline uint64_t chunk_k(uint64_t k, uint64_t n, uint64_t cj) {
    // k <= n < 2^32 and cj <= n: the product fits in 64 bits.
    const uint64_t kj = (k * cj + n - 1) / n;
    return kj < cj ? kj : cj;
}

// Chunk length actually used: c, or n when c is 0 or larger than n.
inline uint64_t chunk_len(uint64_t c, uint64_t n) { return c == 0 || c > n ? n : c; }

// Sum of k_j over the chunks: the most entries a selection writes.
uint64_t total_k(uint64_t k, uint64_t n, uint64_t c);

// The chunk-selecting codecs declare k, density_ppm, chunk_size first.
enum Slot { kSlotK = 0, kSlotDensity = 1, kSlotChunk = 2 };
constexpr ParamDef kParamChunk = {GW_PARAM_CHUNK_SIZE, "chunk_size", 4, 0, sparse::kMaxN, 65536};
inline uint64_t k_of(const CodecParams& p, uint64_t n) {
    return sparse::k_of(p.v[kSlotK], p.v[kSlotDensity], n);
}
inline uint64_t chunk_of(const CodecParams& p) { return static_cast<uint64_t>(p.v[kSlotChunk]); }
// The most entries a frame of these parameters holds for n elements.
inline uint64_t max_entries(const CodecParams& p, uint64_t n) {
    return total_k(k_of(p, n), n, chunk_of(p));
}

// Indices of the chunk-wise top-k of finite x[0..n), increasing, into idx
// (room for total_k); returns how many. `work`: kern::kTopkScratchBytes,
// 64-byte aligned.
uint64_t select(const float* x, uint64_t n, uint64_t k, uint64_t c, uint32_t* idx, void* work);

// Index planes already checked against n (sparse::check_gaps): GW_OK, or
// GW_ERR_FRAME_INDEX if some chunk holds more than its k_j entries (no
// encoder writes that).
gw_status check_counts(const uint8_t* planes, uint64_t nnz, uint64_t n, uint64_t k, uint64_t c);

}  // namespace gw::chunks
