#include "codecs/sparse_payload.hpp"

#include <cstring>

#include "kernels/kernels.hpp"

namespace gw::sparse {
namespace {

// Stored value bits -> float, through the conversion kernels (the loops here
// use this copy: with internal linkage it compiles into them as before).
void to_f32(const kern::Table& kt, int64_t vdt, const uint8_t* in, uint64_t count, float* out) {
    switch (vdt) {
        case GW_DTYPE_F16:
            kt.f16_to_f32(in, out, count);
            break;
        case GW_DTYPE_BF16:
            kt.bf16_to_f32(in, out, count);
            break;
        default:
            // An element loop, which the compiler vectorizes: for these chunks of
            // at most 1 KB it made memcpy a `rep movsq`, an eighth of a 1M top-k
            // frame's decode_accumulate.
            for (uint64_t j = 0; j < count; ++j) out[j] = load_le<float>(in + 4 * j);
    }
}

// The first of values[from..count) that no encoder keeps (zero, not finite,
// or of magnitude below min_mag), or count, a chunk at a time (kt.all_kept;
// f16 and bf16 widen exactly through the conversion kernels, so zero, Inf and
// NaN stay what they were), then element by element in the chunk that fails.
uint64_t first_unfit(const kern::Table& kt, int64_t vdt, const uint8_t* values, uint64_t from,
                     uint64_t count, float min_mag) {
    const size_t vs = value_size(vdt);
    float f[kWalkChunk];
    uint8_t le[4 * kWalkChunk];  // the kernel reads little-endian float32
    for (uint64_t i = from; i < count; i += kWalkChunk) {
        const uint64_t c = count - i < kWalkChunk ? count - i : kWalkChunk;
        const uint8_t* w = values + i * vs;
        if (vdt != GW_DTYPE_F32) {
            to_f32(kt, vdt, w, c, f);
            if constexpr (kHostLittleEndian) {
                w = reinterpret_cast<const uint8_t*>(f);
            } else {
                f32_to_le(le, f, c);
                w = le;
            }
        }
        if (kt.all_kept(w, c, min_mag)) continue;
        for (uint64_t j = 0; j < c; ++j)
            if (!kt.all_kept(w + 4 * j, 1, min_mag)) return i + j;
    }
    return count;
}

}  // namespace

void values_to_f32(const kern::Table& kt, int64_t vdt, const uint8_t* in, uint64_t count,
                   float* out) {
    to_f32(kt, vdt, in, count, out);
}

gw_status begin(const EncodeCtx& ctx, const float* x, uint64_t n, size_t work, uint64_t cap,
                Values values, Selection* s) {
    if (!ctx.k->all_finite(x, n)) return GW_ERR_NONFINITE;
    ScratchLayout at;
    const size_t at_work = work ? at.add(work) : 0;
    const size_t at_idx = at.add(cap * 4);
    const size_t at_val = values == Values::kYes ? at.add(cap * 4) : 0;
    uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(at.bytes()));
    if (!mem) return GW_ERR_OUT_OF_MEMORY;
    s->work = work ? mem + at_work : nullptr;
    s->idx = reinterpret_cast<uint32_t*>(mem + at_idx);
    s->val = values == Values::kYes ? reinterpret_cast<float*>(mem + at_val) : nullptr;
    return GW_OK;
}

void write_gaps(const uint32_t* idx, uint64_t nnz, uint8_t* planes) {
    uint64_t next = 0;
    for (uint64_t i = 0; i < nnz; ++i) {
        const uint32_t gap = static_cast<uint32_t>(idx[i] - next);
        for (int b = 0; b < 4; ++b) planes[b * nnz + i] = static_cast<uint8_t>(gap >> (8 * b));
        next = uint64_t(idx[i]) + 1;
    }
}

gw_status check_gaps(const kern::Table& kt, const uint8_t* planes, uint64_t nnz, uint64_t n) {
    // Indices increase by construction (idx_i = idx_{i-1} + 1 + gap_i), so
    // only the last can reach n: nnz - 1 + the sum of the gaps (< 2^64), which
    // is the sum over the planes of their byte sums times 256^plane.
    uint64_t sum = 0;
    for (int b = 3; b >= 0; --b) sum = (sum << 8) + kt.gap_byte_sum(planes + b * nnz, nnz);
    return nnz == 0 || sum + (nnz - 1) < n ? GW_OK : GW_ERR_FRAME_INDEX;
}

void write(const kern::Table& kt, int64_t vdt, const float* x, uint64_t n, uint32_t* idx,
           float* val, uint64_t k, uint8_t* payload, uint64_t* len, float* residual,
           float min_mag) {
    for (uint64_t i = 0; i < k; ++i) val[i] = x[idx[i]];
    // Values in the wire type, then drop the entries stored as zero.
    const size_t vs = value_size(vdt);
    uint8_t* values = payload + 4;
    if (vdt == GW_DTYPE_F16)
        kt.f32_to_f16(val, values, k);
    else if (vdt == GW_DTYPE_BF16)
        kt.f32_to_bf16(val, values, k);
    else
        f32_to_le(values, val, k);
    // Zero (finite input: never Inf), or rounded below the threshold: each
    // such entry is dropped, the run of kept ones after it moves down.
    uint64_t nnz = first_unfit(kt, vdt, values, 0, k, min_mag);
    for (uint64_t i = nnz; i < k;) {
        const uint64_t from = i + 1, to = first_unfit(kt, vdt, values, from, k, min_mag);
        std::memmove(values + nnz * vs, values + from * vs, (to - from) * vs);
        std::memmove(idx + nnz, idx + from, (to - from) * sizeof(uint32_t));
        std::memmove(val + nnz, val + from, (to - from) * sizeof(float));
        nnz += to - from;
        i = to;
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
            to_f32(kt, vdt, values + first * vs, c, dec);
            for (uint64_t j = 0; j < c; ++j) residual[idx[first + j]] = val[first + j] - dec[j];
        }
    }
}

gw_status check(const kern::Table& kt, int64_t vdt, uint64_t max_nnz, const uint8_t* payload,
                uint64_t len, uint64_t n, float min_mag) {
    if (len < 4) return GW_ERR_FRAME_LENGTH;
    const uint64_t nnz = load_le<uint32_t>(payload);
    if (nnz > max_nnz || len != payload_size(nnz, vdt)) return GW_ERR_FRAME_LENGTH;
    const size_t vs = value_size(vdt);
    const uint8_t* values = payload + 4;
    if (first_unfit(kt, vdt, values, 0, nnz, min_mag) != nnz) return GW_ERR_FRAME_PAYLOAD;
    return check_gaps(kt, values + nnz * vs, nnz, n);
}

void decode(const kern::Table& kt, int64_t vdt, const uint8_t* payload, uint64_t n, float* out) {
    const uint64_t nnz = load_le<uint32_t>(payload);
    kt.gap_expand(payload + 4 + value_size(vdt) * nnz, nnz, payload + 4, static_cast<gw_dtype>(vdt),
                  out, n);
}

void accumulate(const kern::Table& kt, int64_t vdt, const uint8_t* payload, float alpha,
                float* acc) {
    // Same arithmetic as the dense kernels: t = alpha * v; acc = acc + t. One
    // kernel walks the whole frame, so its prefetch crosses every chunk edge.
    const uint64_t nnz = load_le<uint32_t>(payload);
    kt.gap_scatter_add(payload + 4 + value_size(vdt) * nnz, nnz, payload + 4,
                       static_cast<gw_dtype>(vdt), alpha, acc);
}

}  // namespace gw::sparse
