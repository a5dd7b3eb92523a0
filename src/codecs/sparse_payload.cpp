#include "codecs/sparse_payload.hpp"

#include <cstring>

#include "kernels/kernels.hpp"

namespace gw::sparse {
namespace {

// Stored value bits -> float, through the conversion kernels.
void values_to_f32(int64_t vdt, const uint8_t* in, uint64_t count, float* out) {
    const kern::Table& t = kern::active();
    switch (vdt) {
        case GW_DTYPE_F16: t.f16_to_f32(in, out, count); break;
        case GW_DTYPE_BF16: t.bf16_to_f32(in, out, count); break;
        default: std::memcpy(out, in, count * 4);
    }
}

// A stored value as float (the conversion kernels on one element).
float stored(int64_t vdt, const uint8_t* v) {
    float f;
    values_to_f32(vdt, v, 1, &f);
    return f;
}
bool below(int64_t vdt, const uint8_t* v, float min_mag) {
    if (min_mag <= 0.0f) return false;
    const float f = stored(vdt, v);
    return (f < 0.0f ? -f : f) < min_mag;
}

bool value_ok(int64_t vdt, const uint8_t* v) {  // finite and nonzero
    if (vdt == GW_DTYPE_F32) {
        const uint32_t w = load_le<uint32_t>(v);
        return (w & 0x7FFFFFFFu) != 0 && (w & 0x7F800000u) != 0x7F800000u;
    }
    const uint16_t h = load_le<uint16_t>(v);
    const uint16_t exp = vdt == GW_DTYPE_F16 ? 0x7C00 : 0x7F80;
    return (h & 0x7FFF) != 0 && (h & exp) != exp;
}

// Entries of a checked payload in chunks: f(count, idx, values).
template <class F>
void for_each_entry(int64_t vdt, const uint8_t* payload, F&& f) {
    const uint64_t nnz = load_le<uint32_t>(payload);
    const size_t vs = value_size(vdt);
    const uint8_t* values = payload + 4;
    float vals[kWalkChunk];
    for_each_index(values + nnz * vs, nnz, [&](uint64_t first, uint64_t c, const uint32_t* idx) {
        values_to_f32(vdt, values + first * vs, c, vals);
        f(c, idx, vals);
    });
}

}  // namespace

void write_gaps(const uint32_t* idx, uint64_t nnz, uint8_t* planes) {
    uint64_t next = 0;
    for (uint64_t i = 0; i < nnz; ++i) {
        const uint32_t gap = static_cast<uint32_t>(idx[i] - next);
        for (int b = 0; b < 4; ++b) planes[b * nnz + i] = static_cast<uint8_t>(gap >> (8 * b));
        next = uint64_t(idx[i]) + 1;
    }
}

gw_status check_gaps(const uint8_t* planes, uint64_t nnz, uint64_t n) {
    uint64_t next = 0;
    for (uint64_t i = 0; i < nnz; ++i) {
        next += gap_at(planes, nnz, i);
        if (next >= n) return GW_ERR_FRAME_INDEX;
        ++next;
    }
    return GW_OK;
}

void write(int64_t vdt, const float* x, uint64_t n, uint32_t* idx, float* val, uint64_t k,
           uint8_t* payload, uint64_t* len, float* residual, float min_mag) {
    const kern::Table& t = kern::active();
    for (uint64_t i = 0; i < k; ++i) val[i] = x[idx[i]];
    // Values in the wire type, then drop the entries stored as zero.
    const size_t vs = value_size(vdt);
    uint8_t* values = payload + 4;
    if (vdt == GW_DTYPE_F16)
        t.f32_to_f16(val, values, k);
    else if (vdt == GW_DTYPE_BF16)
        t.f32_to_bf16(val, values, k);
    else if (k)
        std::memcpy(values, val, k * 4);
    uint64_t nnz = 0;
    for (uint64_t i = 0; i < k; ++i) {
        // Zero (finite input: never Inf), or rounded below the threshold.
        if (!value_ok(vdt, values + i * vs) || below(vdt, values + i * vs, min_mag)) continue;
        if (nnz != i) {
            std::memmove(values + nnz * vs, values + i * vs, vs);
            idx[nnz] = idx[i];
            val[nnz] = val[i];
        }
        ++nnz;
    }
    store_le<uint32_t>(payload, static_cast<uint32_t>(nnz));
    write_gaps(idx, nnz, values + nnz * vs);
    *len = payload_size(nnz, vdt);

    if (residual) {
        if (residual != x && n) std::memmove(residual, x, n * sizeof(float));
        // residual = x - decoded at the kept entries (val holds x there, so
        // residual may alias x); elsewhere it is x.
        float dec[kWalkChunk];
        for (uint64_t first = 0; first < nnz; first += kWalkChunk) {
            const uint64_t c = nnz - first < kWalkChunk ? nnz - first : kWalkChunk;
            values_to_f32(vdt, values + first * vs, c, dec);
            for (uint64_t j = 0; j < c; ++j) residual[idx[first + j]] = val[first + j] - dec[j];
        }
    }
}

gw_status check(int64_t vdt, uint64_t max_nnz, const uint8_t* payload, uint64_t len, uint64_t n,
                float min_mag) {
    if (len < 4) return GW_ERR_FRAME_LENGTH;
    const uint64_t nnz = load_le<uint32_t>(payload);
    if (nnz > max_nnz || len != payload_size(nnz, vdt)) return GW_ERR_FRAME_LENGTH;
    const size_t vs = value_size(vdt);
    const uint8_t* values = payload + 4;
    for (uint64_t i = 0; i < nnz; ++i)
        if (!value_ok(vdt, values + i * vs) || below(vdt, values + i * vs, min_mag))
            return GW_ERR_FRAME_PAYLOAD;
    return check_gaps(values + nnz * vs, nnz, n);
}

void decode(int64_t vdt, const uint8_t* payload, uint64_t n, float* out) {
    std::memset(out, 0, n * sizeof(float));
    for_each_entry(vdt, payload, [&](uint64_t c, const uint32_t* idx, const float* v) {
        for (uint64_t j = 0; j < c; ++j) out[idx[j]] = v[j];
    });
}

void accumulate(int64_t vdt, const uint8_t* payload, float alpha, float* acc) {
    // Same arithmetic as the dense kernels: t = alpha * v; acc = acc + t.
    // The entries are sparse and sorted: almost every one is a cache miss on
    // acc, so its line is requested kAhead entries early (more misses in flight).
    constexpr uint64_t kAhead = 32;
    for_each_entry(vdt, payload, [&](uint64_t c, const uint32_t* idx, const float* v) {
        for (uint64_t j = 0; j < c && j < kAhead; ++j) __builtin_prefetch(acc + idx[j], 1);
        for (uint64_t j = 0; j < c; ++j) {
            if (j + kAhead < c) __builtin_prefetch(acc + idx[j + kAhead], 1);
            const float t = alpha * v[j];
            acc[idx[j]] = acc[idx[j]] + t;
        }
    });
}

}  // namespace gw::sparse
