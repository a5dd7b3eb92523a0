#include "codecs/chunk_select.hpp"

#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw::chunks {

uint64_t select(const kern::Table& kt, const float* x, uint64_t n, const Shares& s, uint32_t* idx,
                void* work) {
    if (n == 0 || s.total() == 0) return 0;
    const uint64_t c = s.chunk();
    uint64_t w = 0;
    for (uint64_t off = 0, j = 0; off < n; off += c, ++j) {
        const uint64_t cj = n - off < c ? n - off : c;
        const uint64_t kj = s(j);
        kt.topk_select(x + off, cj, kj, idx + w, work, kern::kTopkScratchBytes);
        // Chunk-local indices become tensor indices (off + cj <= n < 2^32).
        for (uint64_t i = w; i < w + kj; ++i) idx[i] += static_cast<uint32_t>(off);
        w += kj;
    }
    return w;
}

gw_status check_counts(const kern::Table& kt, const uint8_t* planes, uint64_t nnz, uint64_t n,
                       const Shares& s) {
    if (nnz == 0 || n == 0) return GW_OK;
    const uint64_t c = s.chunk();
    uint64_t chunk = 0, in_chunk = 0;
    bool ok = true;
    sparse::for_each_index(kt, planes, nnz, [&](uint64_t, uint64_t cnt, const uint32_t* idx) {
        for (uint64_t j = 0; j < cnt && ok; ++j) {
            const uint64_t cj_index = idx[j] / c;
            if (cj_index != chunk) {
                chunk = cj_index;
                in_chunk = 0;
            }
            ok = ++in_chunk <= s(chunk);
        }
    });
    return ok ? GW_OK : GW_ERR_FRAME_INDEX;
}

}  // namespace gw::chunks
