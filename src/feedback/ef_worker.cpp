#include "feedback/ef_worker.hpp"

#include <cmath>
#include <cstring>
#include <new>

#include "feedback/lr.hpp"
#include "feedback/state_blob.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

using gw::kern::EfCoef;

namespace {

// Coefficients of kern::ef_combine for each momentum kind (see ef_worker.hpp).
EfCoef coefficients(const gw_worker::Config& c, float r) {
    switch (c.momentum) {
        case GW_MOMENTUM_NESTEROV: return EfCoef{c.mu, 1.0f, c.mu, 1.0f, r};
        case GW_MOMENTUM_SIGNUM: return EfCoef{c.mu, 1.0f - c.mu, 1.0f, 0.0f, r};
        default: return EfCoef{0.0f, 0.0f, 0.0f, 1.0f, r};
    }
}

bool has_momentum(const gw_worker::Config& c) { return c.momentum != GW_MOMENTUM_NONE; }

}  // namespace

gw_status gw_worker::create(const gw_worker_options& o, gw_worker** out) {
    Config c;
    gw_status st = gw::codec_params_from_options(&o.codec, &c.codec);
    if (st != GW_OK) return st;
    if (o.n == 0) return GW_ERR_INVALID_ARGUMENT;
    const int momentum = gw::enum_value(o.momentum);
    if (momentum != GW_MOMENTUM_NONE && momentum != GW_MOMENTUM_NESTEROV &&
        momentum != GW_MOMENTUM_SIGNUM)
        return GW_ERR_INVALID_ARGUMENT;
    if (!(o.mu >= 0.0f && o.mu < 1.0f)) return GW_ERR_INVALID_ARGUMENT;  // also rejects NaN
    if (o.error_feedback != 0 && o.error_feedback != 1) return GW_ERR_INVALID_ARGUMENT;
    c.n = o.n;
    c.momentum = static_cast<gw_momentum>(momentum);
    c.mu = o.mu;
    c.error_feedback = o.error_feedback == 1;

    size_t bound = 0;
    if (!gw::frame::frame_size(*gw::codec_for(c.codec.id), c.codec, c.n, &bound))
        return GW_ERR_INVALID_ARGUMENT;

    gw_worker* w = new (std::nothrow) gw_worker();
    if (!w) return GW_ERR_OUT_OF_MEMORY;
    w->cfg_ = c;
    w->frame_bound_ = bound;
    w->p_ = gw::alloc_floats(c.n);
    if (has_momentum(c)) w->m_ = gw::alloc_floats(c.n);
    if (c.error_feedback) w->e_ = gw::alloc_floats(c.n);
    if (!w->p_ || (has_momentum(c) && !w->m_) || (c.error_feedback && !w->e_)) {
        delete w;
        return GW_ERR_OUT_OF_MEMORY;
    }
    *out = w;
    return GW_OK;
}

gw_status gw_worker::step(const float* grad, float lr, void* frame, size_t capacity,
                          size_t* written) {
    if (!gw::valid_lr(lr)) return GW_ERR_INVALID_ARGUMENT;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const gw::kern::Table& t = gw::kern::active();
    const float r = gw::residual_rescale(cfg_.error_feedback, lr_prev_, lr);
    const EfCoef k = coefficients(cfg_, r);
    // Missing buffers are stood in for by grad with zero weight (mu=kg=0 or r=0).
    const float* m = m_ ? m_.get() : grad;
    const float* e = e_ ? e_.get() : grad;
    t.ef_combine(grad, m, e, k, p_.get(), cfg_.n);
    // The codec checks p for NaN/Inf before writing the residual, so a bad
    // gradient leaves m, e and lr_prev as they were.
    const gw_status st =
        gw::frame::encode(cfg_.codec, p_.get(), cfg_.n, frame, capacity, written, e_.get());
    if (st != GW_OK) return st;
    if (m_) t.momentum_update(m_.get(), grad, k.mu, k.kg, cfg_.n);
    lr_prev_ = lr;
    ++step_;
    return GW_OK;
}

void gw_worker::residual(float* out) const {
    if (e_)
        std::memcpy(out, e_.get(), cfg_.n * sizeof(float));
    else
        std::memset(out, 0, cfg_.n * sizeof(float));
}

void gw_worker::momentum(float* out) const {
    if (m_)
        std::memcpy(out, m_.get(), cfg_.n * sizeof(float));
    else
        std::memset(out, 0, cfg_.n * sizeof(float));
}

// Body: n u64 | codec u8 | block_size u32 | momentum u8 | mu f32 | ef u8 |
//       step u64 | lr_prev f32 | m[n] (if momentum) | e[n] (if error feedback)
size_t gw_worker::save_bound() const {
    const size_t fixed = gw::blob::kHeaderSize + 8 + 1 + 4 + 1 + 4 + 1 + 8 + 4 + gw::blob::kTrailerSize;
    return fixed + (has_momentum(cfg_) + cfg_.error_feedback) * cfg_.n * sizeof(float);
}

size_t gw_worker::save(void* blob) const {
    gw::blob::Writer w(static_cast<uint8_t*>(blob), gw::blob::kWorker);
    w.u64(cfg_.n);
    w.u8(static_cast<uint8_t>(cfg_.codec.id));
    w.u32(cfg_.codec.block_size);
    w.u8(static_cast<uint8_t>(cfg_.momentum));
    w.f32(cfg_.mu);
    w.u8(cfg_.error_feedback);
    w.u64(step_);
    w.f32(lr_prev_);
    if (m_) w.floats(m_.get(), cfg_.n);
    if (e_) w.floats(e_.get(), cfg_.n);
    return w.finish();
}

gw_status gw_worker::load(const void* blob, size_t size) {
    gw::blob::Reader r(blob, size, gw::blob::kWorker);
    const uint64_t n = r.u64();
    const uint8_t codec = r.u8();
    const uint32_t block = r.u32();
    const uint8_t momentum = r.u8();
    const float mu = r.f32();
    const uint8_t ef = r.u8();
    const uint64_t step = r.u64();
    const float lr_prev = r.f32();
    if (r.status() != GW_OK) return r.status();
    // Restoring into a differently configured handle would silently change training.
    if (n != cfg_.n || codec != cfg_.codec.id || block != cfg_.codec.block_size ||
        momentum != cfg_.momentum || std::memcmp(&mu, &cfg_.mu, sizeof mu) != 0 ||
        ef != cfg_.error_feedback)
        return GW_ERR_STATE_MISMATCH;
    const uint8_t* m = m_ ? r.floats(n) : nullptr;
    const uint8_t* e = e_ ? r.floats(n) : nullptr;
    const gw_status st = r.finish();
    if (st != GW_OK) return st;
    if (!(std::isfinite(lr_prev) && lr_prev >= 0.0f) || (m && !gw::floats_finite_le(m, n)) ||
        (e && !gw::floats_finite_le(e, n)))
        return GW_ERR_STATE_CORRUPT;
    if (m) std::memcpy(m_.get(), m, n * sizeof(float));
    if (e) std::memcpy(e_.get(), e, n * sizeof(float));
    lr_prev_ = lr_prev;
    step_ = step;
    return GW_OK;
}
