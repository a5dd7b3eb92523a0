#include "feedback/ef_worker.hpp"

#include <cmath>
#include <cstring>

#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {
namespace {

using kern::EfCoef;

// Coefficients of kern::ef_combine for each momentum kind (see ef_worker.hpp).
EfCoef coefficients(const WorkerConfig& c, float r) {
    switch (c.momentum) {
        case GW_MOMENTUM_NESTEROV: return EfCoef{c.mu, 1.0f, c.mu, 1.0f, r};
        case GW_MOMENTUM_SIGNUM: return EfCoef{c.mu, 1.0f - c.mu, 1.0f, 0.0f, r};
        default: return EfCoef{0.0f, 0.0f, 0.0f, 1.0f, r};
    }
}

bool has_momentum(const WorkerConfig& c) { return c.momentum != GW_MOMENTUM_NONE; }

// The fused step works on tiles of this many elements (64 KB per array), so
// p never goes to memory: g, m and e are read twice (once for the scales,
// once to commit), m, e and the bits written once.
constexpr uint64_t kTile = 16384;

// kern::Table::sum_abs's fold (kernels.hpp): lane[j] += lane[j + s], s = 8, 4, 2, 1.
double fold16(double* l) {
    for (size_t s = 8; s >= 1; s /= 2)
        for (size_t j = 0; j < s; ++j) l[j] += l[j + s];
    return l[0];
}

// Block size of the fused scaled-sign path, or 0 when it does not apply
// (another codec, or blocks that do not tile: not a multiple of 16 dividing
// the tile, nor one block per tensor). Whole tensor: returns n.
uint64_t fused_block(const WorkerConfig& c) {
    if (c.codec.codec->id != GW_CODEC_SCALED_SIGN) return 0;
    const uint64_t b = static_cast<uint64_t>(param_or(c.codec, GW_PARAM_BLOCK_SIZE, 1));
    if (b == 0 || b >= c.n) return c.n;
    return (b % 16 == 0 && kTile % b == 0) ? b : 0;
}

enum : uint16_t {
    kFieldN = 1, kFieldCodec = 2, kFieldParams = 3, kFieldMomentum = 4, kFieldMu = 5,
    kFieldEf = 6, kFieldTensor = 7, kFieldSeed = 8, kFieldM = 64, kFieldE = 65,
};

}  // namespace

gw_status EfWorker::init(const WorkerConfig& c) {
    cfg_ = c;
    if (!frame::frame_bound(c.codec, c.n, &frame_bound_)) return GW_ERR_INVALID_ARGUMENT;
    // The fused scaled-sign step needs p for one tile only; other codecs for all of it.
    p_ = alloc_floats(fused_block(c) != 0 && c.n > kTile ? kTile : c.n);
    if (has_momentum(c)) m_ = alloc_floats(c.n);
    if (c.error_feedback) e_ = alloc_floats(c.n);
    if (!p_ || (has_momentum(c) && !m_) || (c.error_feedback && !e_)) return GW_ERR_OUT_OF_MEMORY;
    return GW_OK;
}

gw_status EfWorker::step(const void* grad, gw_dtype dtype, float lr, void* frame,
                         size_t capacity, size_t* written) {
    float r = 0.0f;
    gw_status st = clock_.rescale(lr, cfg_.error_feedback, &r);
    if (st != GW_OK) return st;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const float* g = widen_to_f32(grad, dtype, cfg_.n, ws_.convert);
    if (!g) return GW_ERR_OUT_OF_MEMORY;
    const kern::Table& t = kern::active();
    const EfCoef k = coefficients(cfg_, r);
    // Missing buffers are stood in for by g with zero weight (mu=kg=0 or r=0).
    const float* m = m_ ? m_.get() : g;
    const float* e = e_ ? e_.get() : g;
    if (fused_block(cfg_) != 0)
        st = step_scaled_sign(g, m, e, k, frame, written);
    else
        st = step_codec(g, m, e, k, frame, capacity, written);
    if (st == GW_ERR_NONFINITE && t.all_finite(g, cfg_.n)) return GW_ERR_OVERFLOW;
    if (st != GW_OK) return st;
    clock_.advance(lr);
    return GW_OK;
}

// Any codec: p in full, the codec's encode (its residual into e), then m.
gw_status EfWorker::step_codec(const float* g, const float* m, const float* e,
                               const kern::EfCoef& k, void* frame, size_t capacity,
                               size_t* written) {
    const kern::Table& t = kern::active();
    t.ef_combine(g, m, e, k, p_.get(), cfg_.n);
    // The codec checks p for NaN/Inf before writing the residual, so a bad
    // gradient leaves m, e and the clock as they were.
    const EncodeCtx ctx{cfg_.seed, clock_.step, cfg_.tensor, &ws_.codec};
    const gw_status st = frame::encode(cfg_.codec, ctx, frame_tag(cfg_.tensor, clock_.step),
                                       p_.get(), cfg_.n, frame, capacity, written, e_.get(),
                                       ws_.stage);
    if (st != GW_OK) return st;
    if (m_) t.momentum_update(m_.get(), g, k.mu, k.kg, cfg_.n);
    return GW_OK;
}

// The scaled-sign codec fused with the combine and the momentum update, tile
// by tile (docs/performance.md). The same kernels on the same values in the
// same order as step_codec, so the frame, e and m are the same bits. Pass 1
// computes every block's scale (and sees any NaN/Inf) before pass 2 writes.
gw_status EfWorker::step_scaled_sign(const float* g, const float* m, const float* e,
                                     const kern::EfCoef& k, void* frame, size_t* written) {
    const kern::Table& t = kern::active();
    const uint64_t n = cfg_.n, block = fused_block(cfg_);
    const uint64_t blocks = (n + block - 1) / block;
    float* scales = static_cast<float*>(ws_.codec.get(blocks * sizeof(float)));
    if (!scales) return GW_ERR_OUT_OF_MEMORY;
    float* p = p_.get();  // tile-sized use of the p buffer
    // Pass 1: scales. A whole-tensor block sums |p| in 16 lanes across tiles.
    double lanes[16] = {};
    for (uint64_t off = 0; off < n; off += kTile) {
        const uint64_t len = n - off < kTile ? n - off : kTile;
        t.ef_combine(g + off, m + off, e + off, k, p, len);
        if (block == n) {
            t.sum_abs_lanes(p, len, lanes);
            continue;
        }
        for (uint64_t b = 0; b < len; b += block) {
            const uint64_t d = len - b < block ? len - b : block;
            const double l1 = t.sum_abs(p + b, d);
            if (!std::isfinite(l1)) return GW_ERR_NONFINITE;
            scales[(off + b) / block] = static_cast<float>(l1 / static_cast<double>(d));
        }
    }
    if (block == n) {
        const double l1 = fold16(lanes);
        if (!std::isfinite(l1)) return GW_ERR_NONFINITE;
        scales[0] = static_cast<float>(l1 / static_cast<double>(n));
    }
    // Pass 2: sign bits and residual per block, then the momentum.
    uint8_t* payload = frame::payload_of(cfg_.codec, frame);
    for (uint64_t b = 0; b < blocks; ++b) store_le<float>(payload + 4 * b, scales[b]);
    uint8_t* bits = payload + 4 * blocks;  // blocks are multiples of 8: one bit field
    for (uint64_t off = 0; off < n; off += kTile) {
        const uint64_t len = n - off < kTile ? n - off : kTile;
        t.ef_combine(g + off, m + off, e + off, k, p, len);
        for (uint64_t b = 0; b < len; b += block) {
            const uint64_t d = len - b < block ? len - b : block;
            const float s = scales[(off + b) / block];
            uint8_t* bb = bits + (off + b) / 8;
            if (e_)
                t.sign_pack_residual(p + b, d, s, bb, e_.get() + off + b);
            else
                t.sign_pack(p + b, d, bb);
            if (s == 0.0f) std::memset(bb, 0, (d + 7) / 8);  // the canonical zero block
        }
        if (m_) t.momentum_update(m_.get() + off, g + off, k.mu, k.kg, len);
    }
    const uint64_t len = 4 * blocks + (n + 7) / 8;
    *written = frame::seal(cfg_.codec, frame_tag(cfg_.tensor, clock_.step), n, len, 0, frame);
    return GW_OK;
}

void EfWorker::residual(float* out) const {
    if (e_)
        std::memcpy(out, e_.get(), cfg_.n * sizeof(float));
    else
        std::memset(out, 0, cfg_.n * sizeof(float));
}

void EfWorker::momentum(float* out) const {
    if (m_)
        std::memcpy(out, m_.get(), cfg_.n * sizeof(float));
    else
        std::memset(out, 0, cfg_.n * sizeof(float));
}

template <class V> void EfWorker::fields(V& v, Scalars& s) {
    v.config(kFieldN, cfg_.n);
    codec_fields(v, kFieldCodec, kFieldParams, cfg_.codec);
    v.config(kFieldMomentum, static_cast<uint8_t>(cfg_.momentum));
    v.config(kFieldMu, cfg_.mu);
    v.config(kFieldEf, static_cast<uint8_t>(cfg_.error_feedback));
    v.config(kFieldTensor, cfg_.tensor);
    v.config(kFieldSeed, cfg_.seed);
    s.fields(v);
    if (m_) v.floats(kFieldM, m_.get(), cfg_.n);
    if (e_) v.floats(kFieldE, e_.get(), cfg_.n);
}

template void EfWorker::fields(blob::Sizer&, Scalars&);
template void EfWorker::fields(blob::Writer&, Scalars&);
template void EfWorker::fields(blob::Reader&, Scalars&);

}  // namespace gw
