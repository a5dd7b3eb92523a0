// Exact top-k by magnitude with sparse frames (docs/algorithms.md s.8; with
// the worker/server error feedback over one tensor it is the SLGS baseline).
//
// Selection: the k elements with the largest |x_i|, ties to the lower index
// (kernel family `select`: a radix selection, never a sort). k is the
// parameter `k`, or ceil(n * density_ppm / 1e6) when k is 0; min(k, n).
// Values are stored as value_dtype (f32, or f16/bf16 rounded to nearest even
// and saturated: error feedback keeps the excess). An entry whose stored
// value is zero carries nothing and is dropped, so a frame holds nnz <= k
// entries, all nonzero: the canonical form (decode + re-encode gives the
// same bytes).
//
// Raw payload (before the frame's optional zstd stage), n < 2^32:
//   u32 nnz | nnz values (4 or 2 bytes each) | gaps as 4 byte planes
// where gap_i = idx_i - idx_{i-1} - 1 (idx_{-1} = -1) and plane j holds byte
// j of every gap. Indices are strictly increasing by construction (duplicates
// and disorder cannot be written); a gap running past n is GW_ERR_FRAME_INDEX.
// Byte planes of small gaps are mostly zero bytes, which zstd squeezes.
#include <cstring>

#include "codecs/codec.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {
namespace {

enum Slot { kK = 0, kDensity = 1, kValueDtype = 2, kZstd = 3 };
constexpr int64_t kMaxN = UINT32_MAX;
constexpr ParamDef kParams[] = {
    {GW_PARAM_K, "k", 8, 0, kMaxN, 0},
    {GW_PARAM_DENSITY_PPM, "density_ppm", 4, 0, 1000000, 10000},
    {GW_PARAM_VALUE_DTYPE, "value_dtype", 1, GW_DTYPE_F32, GW_DTYPE_BF16, GW_DTYPE_F32},
    {GW_PARAM_ZSTD, "zstd", 1, 0, 1, 1},
};

uint64_t k_of(const CodecParams& p, uint64_t n) {
    const uint64_t k = static_cast<uint64_t>(p.v[kK]);
    if (k > 0) return k < n ? k : n;
    // n <= 2^32 and ppm <= 1e6: the product fits in 64 bits.
    return (n * static_cast<uint64_t>(p.v[kDensity]) + 999999) / 1000000;
}
size_t value_size(const CodecParams& p) { return p.v[kValueDtype] == GW_DTYPE_F32 ? 4 : 2; }

bool max_payload(const CodecParams& p, uint64_t n, uint64_t* bytes) {
    if (n > static_cast<uint64_t>(kMaxN)) return false;
    *bytes = 4 + k_of(p, n) * (value_size(p) + 4);
    return true;
}

// Stored value bits -> float, in chunks through the conversion kernels.
void values_to_f32(const CodecParams& p, const uint8_t* in, uint64_t count, float* out) {
    const kern::Table& t = kern::active();
    switch (p.v[kValueDtype]) {
        case GW_DTYPE_F16: t.f16_to_f32(in, out, count); break;
        case GW_DTYPE_BF16: t.bf16_to_f32(in, out, count); break;
        default: std::memcpy(out, in, count * 4);
    }
}

bool value_ok(const CodecParams& p, const uint8_t* v) {  // finite and nonzero
    if (p.v[kValueDtype] == GW_DTYPE_F32) {
        const uint32_t w = load_le<uint32_t>(v);
        return (w & 0x7FFFFFFFu) != 0 && (w & 0x7F800000u) != 0x7F800000u;
    }
    const uint16_t h = load_le<uint16_t>(v);
    const uint16_t exp = p.v[kValueDtype] == GW_DTYPE_F16 ? 0x7C00 : 0x7F80;
    return (h & 0x7FFF) != 0 && (h & exp) != exp;
}

inline uint32_t gap_at(const uint8_t* planes, uint64_t nnz, uint64_t i) {
    return uint32_t(planes[i]) | uint32_t(planes[nnz + i]) << 8 |
           uint32_t(planes[2 * nnz + i]) << 16 | uint32_t(planes[3 * nnz + i]) << 24;
}

// Walks the entries of a checked payload in chunks: f(first, count, idx, vals).
template <class F>
void for_each_chunk(const CodecParams& p, const uint8_t* payload, F&& f) {
    constexpr uint64_t kChunk = 256;
    const uint64_t nnz = load_le<uint32_t>(payload);
    const size_t vs = value_size(p);
    const uint8_t* values = payload + 4;
    const uint8_t* planes = values + nnz * vs;
    uint32_t idx[kChunk];
    float vals[kChunk];
    uint64_t next = 0;  // idx_{i-1} + 1
    for (uint64_t first = 0; first < nnz; first += kChunk) {
        const uint64_t c = nnz - first < kChunk ? nnz - first : kChunk;
        for (uint64_t j = 0; j < c; ++j) {
            next += gap_at(planes, nnz, first + j);
            idx[j] = static_cast<uint32_t>(next);
            ++next;
        }
        values_to_f32(p, values + first * vs, c, vals);
        f(c, idx, vals);
    }
}

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& t = kern::active();
    if (!t.all_finite(x, n)) return GW_ERR_NONFINITE;
    const uint64_t k = k_of(p, n);
    // Scratch: the selection's work area, k indices, k gathered values.
    uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(kern::kTopkScratchBytes + k * 8));
    if (!mem) return GW_ERR_OUT_OF_MEMORY;
    uint32_t* idx = reinterpret_cast<uint32_t*>(mem + kern::kTopkScratchBytes);
    float* val = reinterpret_cast<float*>(idx + k);
    t.topk_select(x, n, k, idx, mem);
    for (uint64_t i = 0; i < k; ++i) val[i] = x[idx[i]];

    // Values in the wire type, then drop the entries stored as zero.
    const size_t vs = value_size(p);
    uint8_t* values = payload + 4;
    if (p.v[kValueDtype] == GW_DTYPE_F16)
        t.f32_to_f16(val, values, k);
    else if (p.v[kValueDtype] == GW_DTYPE_BF16)
        t.f32_to_bf16(val, values, k);
    else if (k)
        std::memcpy(values, val, k * 4);
    uint64_t nnz = 0;
    for (uint64_t i = 0; i < k; ++i) {
        if (!value_ok(p, values + i * vs)) continue;  // zero (finite input: never Inf)
        if (nnz != i) {
            std::memmove(values + nnz * vs, values + i * vs, vs);
            idx[nnz] = idx[i];
            val[nnz] = val[i];
        }
        ++nnz;
    }
    store_le<uint32_t>(payload, static_cast<uint32_t>(nnz));
    uint8_t* planes = values + nnz * vs;
    uint64_t next = 0;
    for (uint64_t i = 0; i < nnz; ++i) {
        const uint32_t gap = static_cast<uint32_t>(idx[i] - next);
        for (int b = 0; b < 4; ++b) planes[b * nnz + i] = static_cast<uint8_t>(gap >> (8 * b));
        next = uint64_t(idx[i]) + 1;
    }
    *len = 4 + nnz * (vs + 4);

    if (residual) {
        if (residual != x && n) std::memmove(residual, x, n * sizeof(float));
        // residual = x - decoded at the kept entries (val holds x there, so
        // residual may alias x); elsewhere it is x.
        float dec[256];
        for (uint64_t first = 0; first < nnz; first += 256) {
            const uint64_t c = nnz - first < 256 ? nnz - first : 256;
            values_to_f32(p, values + first * vs, c, dec);
            for (uint64_t j = 0; j < c; ++j) residual[idx[first + j]] = val[first + j] - dec[j];
        }
    }
    return GW_OK;
}

gw_status check(const CodecParams& p, const uint8_t* payload, uint64_t len, uint64_t n) {
    if (len < 4) return GW_ERR_FRAME_LENGTH;
    const uint64_t nnz = load_le<uint32_t>(payload);
    const size_t vs = value_size(p);
    if (nnz > k_of(p, n) || len != 4 + nnz * (vs + 4)) return GW_ERR_FRAME_LENGTH;
    const uint8_t* values = payload + 4;
    for (uint64_t i = 0; i < nnz; ++i)
        if (!value_ok(p, values + i * vs)) return GW_ERR_FRAME_PAYLOAD;
    const uint8_t* planes = values + nnz * vs;
    uint64_t next = 0;
    for (uint64_t i = 0; i < nnz; ++i) {
        next += gap_at(planes, nnz, i);
        if (next >= n) return GW_ERR_FRAME_INDEX;
        ++next;
    }
    return GW_OK;
}

void decode(const CodecParams& p, const uint8_t* payload, uint64_t, uint64_t n, float* out) {
    std::memset(out, 0, n * sizeof(float));
    for_each_chunk(p, payload, [&](uint64_t c, const uint32_t* idx, const float* v) {
        for (uint64_t j = 0; j < c; ++j) out[idx[j]] = v[j];
    });
}

void accumulate(const CodecParams& p, const uint8_t* payload, uint64_t, uint64_t, float alpha,
                float* acc) {
    // Same arithmetic as the dense kernels: t = alpha * v; acc = acc + t.
    for_each_chunk(p, payload, [&](uint64_t c, const uint32_t* idx, const float* v) {
        for (uint64_t j = 0; j < c; ++j) {
            const float t = alpha * v[j];
            acc[idx[j]] = acc[idx[j]] + t;
        }
    });
}

}  // namespace

extern const Codec kTopkCodec = {GW_CODEC_TOPK, "topk", kParams, 4, nullptr, max_payload,
                                 encode, check, decode, accumulate};

}  // namespace gw
