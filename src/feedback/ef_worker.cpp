#include "feedback/ef_worker.hpp"

#include <cmath>
#include <cstring>
#include <type_traits>
#include <utility>

#include "feedback/fused_sign.hpp"
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

enum : uint16_t {
    kFieldN = 1, kFieldCodec = 2, kFieldParams = 3, kFieldMomentum = 4, kFieldMu = 5,
    kFieldEf = 6, kFieldTensor = 7, kFieldSeed = 8, kFieldM = 64, kFieldE = 65,
};

}  // namespace

gw_status EfWorker::init(const Backend& backend, const WorkerConfig& c) {
    cx_.bind(backend);
    cfg_ = c;
    if (!frame::frame_bound(c.codec, c.n, &frame_bound_)) return GW_ERR_INVALID_ARGUMENT;
    // The fused scaled-sign step never stores p; other codecs need all of it.
    const bool fused = fused_sign_block(c.codec, c.n) != 0;
    if (!fused) p_ = alloc_floats(cx_.alloc(), c.n);
    if (has_momentum(c)) m_ = alloc_floats(cx_.alloc(), c.n);
    if (c.error_feedback) e_ = alloc_floats(cx_.alloc(), c.n);
    if ((!fused && !p_) || (has_momentum(c) && !m_) || (c.error_feedback && !e_))
        return GW_ERR_OUT_OF_MEMORY;
    return GW_OK;
}

gw_status EfWorker::step(const void* grad, gw_dtype dtype, float lr, void* frame,
                         size_t capacity, size_t* written) {
    float r = 0.0f;
    gw_status st = clock_.rescale(lr, cfg_.error_feedback, &r);
    if (st != GW_OK) return st;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const float* g = widen_to_f32(cx_.k(), grad, dtype, cfg_.n, cx_.convert);
    if (!g) return GW_ERR_OUT_OF_MEMORY;
    const kern::Table& t = cx_.k();
    const EfCoef k = coefficients(cfg_, r);
    // Missing buffers are stood in for by g with zero weight (mu=kg=0 or r=0).
    const float* m = m_ ? m_.get() : g;
    const float* e = e_ ? e_.get() : g;
    if (fused_sign_block(cfg_.codec, cfg_.n) != 0)
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
    const kern::Table& t = cx_.k();
    t.ef_combine(g, m, e, k, p_.get(), cfg_.n);
    // The codec checks p for NaN/Inf before writing the residual, and writes
    // it over p (in place), so a refused step (a NaN, or a residual that
    // overflows, found as it is written) leaves m, e and the clock as they
    // were; on success p's buffer becomes e, with no copy.
    const EncodeCtx ctx = encode_ctx(cx_, cfg_.seed, clock_.step, cfg_.tensor);
    const gw_status st =
        frame::encode(cx_, cfg_.codec, ctx, frame::make_tag(cfg_.tensor, clock_.step), p_.get(),
                      cfg_.n, frame, capacity, written, e_ ? p_.get() : nullptr);
    if (st != GW_OK) return st;
    if (e_) std::swap(e_, p_);
    if (m_) t.momentum_update(m_.get(), g, k.mu, k.kg, cfg_.n);
    return GW_OK;
}

// The scaled-sign codec fused with the combine and the momentum update
// (feedback/fused_sign.hpp): p never goes to memory. The same bits as
// step_codec. When max|g| and the carried bounds on m and e prove that
// nothing overflows (MagnitudeBound), fixed blocks go in one pass, and one
// block per tensor too, its residual deferred (pending_); otherwise two.
gw_status EfWorker::step_scaled_sign(const float* g, const float* m, const float* e,
                                     const kern::EfCoef& k, void* frame, size_t* written) {
    const uint64_t n = cfg_.n;
    const bool fixed = fused_sign_block(cfg_.codec, n) < n;
    const double gmax = MagnitudeBound::measure(cx_.k(), g, n);
    if (std::isinf(gmax)) return GW_ERR_NONFINITE;
    MagnitudeBound::Step b{};
    const bool one_pass = bound_.prove(cx_.k(), k, gmax, m_.get(), e_.get(), n, &b);
    uint64_t len = 0;
    gw_status st;
    auto tile = [&](uint64_t off, uint64_t) { return CombineInputs{g + off, m + off, e + off}; };
    if (one_pass && !fixed) {
        st = fused_scaled_sign_deferred(cfg_.codec, n, k, tile, e_.get(), m_.get(), &pending_, cx_,
                                        frame, &len);
    } else {
        settle();  // the two-pass path reads the residual itself
        st = fused_scaled_sign(cfg_.codec, n, k, tile, e_.get(), m_.get(), one_pass, cx_, frame,
                               &len);
    }
    if (st != GW_OK) return st;
    bound_.advance(b, m_ != nullptr, e_ != nullptr);
    *written = frame::seal(cx_.k(), cfg_.codec, frame::make_tag(cfg_.tensor, clock_.step), n, len,
                           0, frame);
    return GW_OK;
}

void EfWorker::settle() {
    settle_residual(cx_.k(), e_.get(), pending_, cfg_.n, e_.get());
    pending_ = 0.0f;
}

void EfWorker::residual(float* out) const {
    if (e_)
        settle_residual(cx_.k(), e_.get(), pending_, cfg_.n, out);
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
    if constexpr (std::is_same_v<V, blob::Writer>) settle();  // saves the residual itself
    if (m_) v.floats(kFieldM, m_.get(), cfg_.n);
    if (e_) v.floats(kFieldE, e_.get(), cfg_.n);
}

template void EfWorker::fields(blob::Sizer&, Scalars&);
template void EfWorker::fields(blob::Writer&, Scalars&);
template void EfWorker::fields(blob::Reader&, Scalars&);

}  // namespace gw
