// The sparse payload every selecting codec writes (top-k, chunk-wise top-k,
// sampled top-k, threshold) and the gap-coded index planes they and the
// index-only codec share (docs/wire-format.md, "Sparse payloads").
//
//   u32 nnz | nnz values (f32, or f16/bf16: 2 bytes) | gaps as 4 byte planes
//
// gap_i = idx_i - idx_{i-1} - 1 (idx_{-1} = -1); plane j holds byte j of
// every gap, so the planes of small gaps are mostly zero bytes, which the
// frame's zstd stage squeezes. Indices are strictly increasing by
// construction; values are finite and nonzero (an entry stored as zero
// carries nothing and is dropped), so decode + re-encode gives the same bytes.
//
// What a selecting codec shares besides the payload: its parameters (kParam*),
// its encoder's preamble (begin: finiteness check, then the work area and the
// index and value arrays in one scratch block) and its Codec entries
// (Entries: max_payload, check, decode, accumulate from its entry bound).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "gradwire_types.h"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw::sparse {

// The parameters the selecting codecs share (each declares its own list,
// in its own order, from these).
constexpr int64_t kMaxN = UINT32_MAX;  // n < 2^32: indices are u32
constexpr ParamDef kParamK = {GW_PARAM_K, "k", 8, 0, kMaxN, 0};
constexpr ParamDef kParamDensity = {GW_PARAM_DENSITY_PPM, "density_ppm", 4, 0, 1000000, 10000};
constexpr ParamDef kParamValueDtype = {GW_PARAM_VALUE_DTYPE, "value_dtype", 1, GW_DTYPE_F32,
                                       GW_DTYPE_BF16, GW_DTYPE_F32};
constexpr ParamDef kParamZstd = {GW_PARAM_ZSTD, "zstd", 1, 0, 1, 1};

// Entries a k / density_ppm pair asks for on n elements: k if nonzero (at
// most n), else ceil(n * ppm / 1e6).
inline uint64_t k_of(int64_t k, int64_t ppm, uint64_t n) {
    if (k > 0) return static_cast<uint64_t>(k) < n ? static_cast<uint64_t>(k) : n;
    // n <= 2^32 and ppm <= 1e6: the product fits in 64 bits.
    return (n * static_cast<uint64_t>(ppm) + 999999) / 1000000;
}

// Bytes of one value of wire dtype `vdt` (a gw_dtype value).
inline size_t value_size(int64_t vdt) { return vdt == GW_DTYPE_F32 ? 4 : 2; }
inline uint64_t payload_size(uint64_t nnz, int64_t vdt) { return 4 + nnz * (value_size(vdt) + 4); }

// Stored values of wire dtype `vdt` as float32 (exact), through the
// conversion kernels.
void values_to_f32(const kern::Table& kt, int64_t vdt, const uint8_t* in, uint64_t count,
                   float* out);

// The working memory of a selecting encoder, carved from one Scratch by one
// ScratchLayout: the selection kernel's work area (none if 0 bytes), then
// `cap` indices and, if asked for, `cap` values.
struct Selection {
    uint8_t* work = nullptr;  // 64-byte aligned
    uint32_t* idx = nullptr;
    float* val = nullptr;  // null unless asked for
};
enum class Values { kNo, kYes };

// The preamble every selecting encoder shares: GW_ERR_NONFINITE if x holds
// NaN/Inf (before anything is written), GW_ERR_OUT_OF_MEMORY if the scratch
// cannot grow, else GW_OK and *s points into ctx.scratch.
gw_status begin(const EncodeCtx& ctx, const float* x, uint64_t n, size_t work, uint64_t cap,
                Values values, Selection* s);

// Gap planes of strictly increasing idx[0..nnz).
void write_gaps(const uint32_t* idx, uint64_t nnz, uint8_t* planes);
// GW_OK, or GW_ERR_FRAME_INDEX if an index reaches n.
gw_status check_gaps(const kern::Table& kt, const uint8_t* planes, uint64_t nnz, uint64_t n);

// Walks checked gap planes in chunks: f(first, count, idx) with idx[0..count)
// (the gap_indices kernel: the planes decoded chunk by chunk, where the
// consumer reads them from L1).
constexpr uint64_t kWalkChunk = 256;
template <class F>
void for_each_index(const kern::Table& kt, const uint8_t* planes, uint64_t nnz, F&& f) {
    uint32_t idx[kWalkChunk];
    uint64_t next = 0;  // idx_{i-1} + 1
    for (uint64_t first = 0; first < nnz; first += kWalkChunk) {
        const uint64_t c = nnz - first < kWalkChunk ? nnz - first : kWalkChunk;
        next = kt.gap_indices(planes + first, nnz, c, next, idx);
        f(first, c, idx);
    }
}

// Write the entries idx[0..k) (strictly increasing, < n) of x into payload
// (room for payload_size(k, vdt)); *len = bytes written. Entries whose
// stored value is zero, or smaller in magnitude than min_mag, are dropped;
// idx and val (k floats of scratch) are compacted in place to the kept
// entries. If residual is non-null it becomes x - decoded (it may alias x).
void write(const kern::Table& kt, int64_t vdt, const float* x, uint64_t n, uint32_t* idx,
           float* val, uint64_t k, uint8_t* payload, uint64_t* len, float* residual,
           float min_mag = 0.0f);

// Validate an untrusted payload holding at most max_nnz entries of [0, n),
// every stored magnitude at least min_mag.
gw_status check(const kern::Table& kt, int64_t vdt, uint64_t max_nnz, const uint8_t* payload,
                uint64_t len, uint64_t n, float min_mag = 0.0f);

// On a checked payload: out = decoded (zeros elsewhere); acc += alpha * decoded.
void decode(const kern::Table& kt, int64_t vdt, const uint8_t* payload, uint64_t n, float* out);
void accumulate(const kern::Table& kt, int64_t vdt, const uint8_t* payload, float alpha,
                float* acc);

// The Codec entries of a codec whose payload is this one, holding at most
// M(p, n) entries, with its value dtype at parameter slot S.
using MaxEntries = uint64_t (*)(const CodecParams& p, uint64_t n);
template <MaxEntries M, size_t S>
struct Entries {
    static bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
        if (n > static_cast<uint64_t>(kMaxN)) return false;
        *bytes = payload_size(M(p, n), p.v[S]);
        return true;
    }
    static gw_status check(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                           uint64_t len, uint64_t n) {
        return sparse::check(kt, p.v[S], M(p, n), payload, len, n);
    }
    static void decode(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                       uint64_t, uint64_t n, float* out) {
        sparse::decode(kt, p.v[S], payload, n, out);
    }
    static void accumulate(const kern::Table& kt, const CodecParams& p, const uint8_t* payload,
                           uint64_t, uint64_t, float alpha, float* acc) {
        sparse::accumulate(kt, p.v[S], payload, alpha, acc);
    }
};

}  // namespace gw::sparse
