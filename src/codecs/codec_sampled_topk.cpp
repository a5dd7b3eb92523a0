// Sampled top-k, Deep Gradient Compression's double sampling (docs/algorithms.md
// s.7-8): estimate the k-th largest magnitude from a sample, select every
// element above it in one pass (the `threshold` kernel family), and if more
// than k passed, re-select the exact top k among them (the `select` family).
//
//   s   = max(ceil(n * sample_ppm / 1e6), min(n, 1024)), at most n; with s = n
//         the sample is x itself (then this is exact top-k)
//   the sample: s positions drawn with replacement from Philox(seed, step,
//         tensor), position = (word * n) >> 32
//   thr = the ceil(k * s / n)-th largest |sample value|
//   I   = {i : |x_i| >= thr}; if |I| > k: the exact top k of I (ties to the
//         lower index); if |I| < k and x has at most k nonzero entries: all of
//         them (a sparse input is sent whole, so a decoded frame re-encodes to
//         itself)
//
// Non-finite input is refused without a pass of its own: the sample is
// checked, and below a finite threshold every non-finite value is in I.
// k, value_dtype and zstd as in topk; the payload is the shared sparse
// payload with nnz <= k (which is all a decoder can check).
#include <cstring>

#include "codecs/codec.hpp"
#include "codecs/sparse_payload.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

enum Slot { kK = 0, kDensity = 1, kSample = 2, kValueDtype = 3, kZstd = 4 };
constexpr uint64_t kMinSample = 1024;
constexpr ParamDef kParams[] = {
    sparse::kParamK,
    sparse::kParamDensity,
    {GW_PARAM_SAMPLE_PPM, "sample_ppm", 4, 0, 1000000, 10000},
    sparse::kParamValueDtype,
    sparse::kParamZstd,
};

uint64_t k_of(const CodecParams& p, uint64_t n) { return sparse::k_of(p.v[kK], p.v[kDensity], n); }
using E = sparse::Entries<k_of, kValueDtype>;

uint64_t sample_size(const CodecParams& p, uint64_t n) {
    uint64_t s = (n * static_cast<uint64_t>(p.v[kSample]) + 999999) / 1000000;
    const uint64_t floor = n < kMinSample ? n : kMinSample;
    return s < floor ? floor : s;
}

// The estimated threshold: the k_s-th largest magnitude of the sample; false
// if the sample holds a non-finite value.
bool sampled_threshold(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                       uint64_t k, float* sample, uint32_t* sidx, void* work, float* thr) {
    const kern::Table& kt = *ctx.k;
    const uint64_t s = sample_size(p, n);
    const float* from = x;
    if (s < n) {
        constexpr uint64_t kChunk = kern::kRngChunk;
        uint32_t words[kChunk];
        for (uint64_t first = 0; first < s; first += kChunk) {
            const uint64_t c = s - first < kChunk ? s - first : kChunk;
            kt.rng_u32(ctx.seed, static_cast<uint32_t>(ctx.step), ctx.tensor, first, words, c);
            for (uint64_t j = 0; j < c; ++j) sample[first + j] = x[(uint64_t(words[j]) * n) >> 32];
        }
        from = sample;
    }
    if (!kt.all_finite(from, s)) return false;
    uint64_t ks = (k * s + n - 1) / n;
    if (ks > s) ks = s;
    kt.topk_select(from, s, ks, sidx, work, kern::kTopkScratchBytes);
    uint32_t key = 0x7FFFFFFFu;  // the smallest selected magnitude
    for (uint64_t j = 0; j < ks; ++j) {
        uint32_t b;
        std::memcpy(&b, &from[sidx[j]], 4);
        b &= 0x7FFFFFFFu;
        key = b < key ? b : key;
    }
    std::memcpy(thr, &key, 4);
    return true;
}

// Whether x holds more than k nonzero entries, counted over a prefix that
// doubles: a dense gradient answers within its first blocks, not a whole pass.
bool more_nonzero_than(const kern::Table& kt, const float* x, uint64_t n, uint64_t k) {
    uint64_t seen = 0;
    for (uint64_t at = 0, len = 4096; at < n; at += len, len *= 2) {
        if (len > n - at) len = n - at;
        seen += kt.threshold_select(x + at, len, 0x1p-149f, nullptr, 0);
        if (seen > k) return true;
    }
    return false;
}

gw_status encode(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                 uint8_t* payload, uint64_t* len, float* residual) {
    const kern::Table& kt = *ctx.k;
    const uint64_t k = k_of(p, n), s = sample_size(p, n);
    if (k == 0 && !kt.all_finite(x, n)) return GW_ERR_NONFINITE;
    // Scratch: selection work area | sample (s) | its indices (s) | I (n) | values (n) | top k of I (k).
    ScratchLayout at;
    at.add(kern::kTopkScratchBytes);
    const size_t at_sample = at.add(4 * s), at_sidx = at.add(4 * s), at_idx = at.add(4 * n),
                 at_val = at.add(4 * n), at_sel = at.add(4 * k);
    uint8_t* mem = static_cast<uint8_t*>(ctx.scratch->get(at.bytes()));
    if (!mem) return GW_ERR_OUT_OF_MEMORY;
    float* sample = reinterpret_cast<float*>(mem + at_sample);
    uint32_t* sidx = reinterpret_cast<uint32_t*>(mem + at_sidx);
    uint32_t* idx = reinterpret_cast<uint32_t*>(mem + at_idx);
    float* val = reinterpret_cast<float*>(mem + at_val);
    uint32_t* sel = reinterpret_cast<uint32_t*>(mem + at_sel);
    uint64_t count = 0;
    if (k > 0) {
        // Non-finite values need no pass of their own: their magnitude keys
        // are above every finite threshold, so all of them pass it.
        float thr = 0.0f;
        if (!sampled_threshold(p, ctx, x, n, k, sample, sidx, mem, &thr)) return GW_ERR_NONFINITE;
        count = kt.threshold_select(x, n, thr, idx, n);
        for (uint64_t j = 0; j < count; ++j) val[j] = x[idx[j]];
        if (!kt.all_finite(val, count)) return GW_ERR_NONFINITE;
        if (count > k) {  // too many passed: exact top k among them
            kt.topk_select(val, count, k, sel, mem, kern::kTopkScratchBytes);
            for (uint64_t j = 0; j < k; ++j) idx[j] = idx[sel[j]];  // sel is increasing
            count = k;
        } else if (count < k) {  // a sparse input goes whole
            if (!more_nonzero_than(kt, x, n, k))
                count = kt.threshold_select(x, n, 0x1p-149f, idx, n);
        }
    }
    sparse::write(*ctx.k, p.v[kValueDtype], x, n, idx, val, count, payload, len, residual);
    return GW_OK;
}

}  // namespace

extern constexpr Codec codec_sampled_topk =
    CodecDef(GW_CODEC_SAMPLED_TOPK, "sampled_topk", kParams)
        .entries(E::max_payload, encode, E::check, E::decode, E::accumulate)
        .caps(kCapStochastic);

}  // namespace gw
