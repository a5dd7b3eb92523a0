#include "feedback/lags_layer.hpp"

#include <cmath>
#include <cstring>
#include <utility>

#include "frame/frame.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {
enum : uint16_t {
    kFieldN = 1, kFieldTensor = 2, kFieldSeed = 3, kFieldCodec = 4, kFieldParams = 5,
    kFieldK = 34, kFieldEps = 64,
};
}  // namespace

gw_status LagsLayer::init(const Backend& backend, const LagsLayerConfig& c) {
    cx_.bind(backend);
    cfg_ = c;
    k_slot_ = param_slot(*c.codec.codec, GW_PARAM_K);
    if (k_slot_ < 0 || c.n > static_cast<uint64_t>(c.codec.codec->params[k_slot_].max))
        return GW_ERR_INVALID_ARGUMENT;
    // The first k_l: the spec's (k, or its density), at least 1.
    CodecParams dense = c.codec;
    dense.v[k_slot_] = static_cast<int64_t>(c.n);
    if (!frame::frame_bound(dense, c.n, &frame_bound_)) return GW_ERR_INVALID_ARGUMENT;
    const int64_t k = c.codec.v[k_slot_];
    const int ppm = param_slot(*c.codec.codec, GW_PARAM_DENSITY_PPM);
    uint64_t k0 = k > 0 ? static_cast<uint64_t>(k)
                        : (ppm >= 0 ? (c.n * static_cast<uint64_t>(c.codec.v[ppm]) + 999999) / 1000000
                                    : c.n);
    s_.k = k0 < 1 ? 1 : (k0 > c.n ? c.n : k0);
    eps_ = alloc_floats(cx_.alloc(), c.n);
    acc_ = alloc_floats(cx_.alloc(), c.n);
    if (!eps_ || !acc_) return GW_ERR_OUT_OF_MEMORY;
    return GW_OK;
}

gw_status LagsLayer::set_k(uint64_t k) {
    if (k < 1 || k > cfg_.n) return GW_ERR_INVALID_ARGUMENT;
    s_.k = k;
    return GW_OK;
}

gw_status LagsLayer::accumulate(const void* grad, gw_dtype dtype, float lr) {
    if (!(std::isfinite(lr) && lr > 0.0f)) return GW_ERR_INVALID_ARGUMENT;
    if (s_.clock.at_limit()) return GW_ERR_OVERFLOW;  // the step count would wrap
    const float* g = widen_to_f32(cx_.k(), grad, dtype, cfg_.n, cx_.convert);
    if (!g) return GW_ERR_OUT_OF_MEMORY;
    const kern::Table& t = cx_.k();
    // acc = eps + lr * g (t = lr*g; acc = eps + t), in the handle's own buffer.
    std::memcpy(acc_.get(), eps_.get(), cfg_.n * sizeof(float));
    axpy_host(cx_.k(), lr, g, acc_.get(), cfg_.n);
    // eps is finite and lr finite and > 0, so a finite acc means a finite g:
    // g is read again only to tell a NaN / Inf in it from an overflow.
    if (t.all_finite(acc_.get(), cfg_.n)) return GW_OK;
    return t.all_finite(g, cfg_.n) ? GW_ERR_OVERFLOW : GW_ERR_NONFINITE;
}

gw_status LagsLayer::step(const void* grad, gw_dtype dtype, float lr, void* frame,
                          size_t capacity, size_t* written) {
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    gw_status st = accumulate(grad, dtype, lr);
    if (st != GW_OK) return st;
    CodecParams p = cfg_.codec;
    p.v[k_slot_] = static_cast<int64_t>(s_.k);
    const EncodeCtx ctx = encode_ctx(cx_, cfg_.seed, s_.clock.step, cfg_.tensor);
    // eps = acc - decoded, written only once the frame is.
    st = frame::encode(cx_, p, ctx, frame::make_tag(cfg_.tensor, s_.clock.step), acc_.get(), cfg_.n,
                       frame, capacity, written, acc_.get());
    if (st != GW_OK) return st;
    std::swap(eps_, acc_);  // acc - decoded is the new eps; the old one is scratch now
    s_.clock.advance(lr);
    return GW_OK;
}

gw_status LagsLayer::step_dense(const void* grad, gw_dtype dtype, float lr, float* out) {
    const gw_status st = accumulate(grad, dtype, lr);
    if (st != GW_OK) return st;
    std::memcpy(out, acc_.get(), cfg_.n * sizeof(float));
    std::memset(eps_.get(), 0, cfg_.n * sizeof(float));
    s_.clock.advance(lr);
    return GW_OK;
}

void LagsLayer::residual(float* out) const { std::memcpy(out, eps_.get(), cfg_.n * sizeof(float)); }

template <class V> void LagsLayer::fields(V& v, Scalars& s) {
    v.config(kFieldN, cfg_.n);
    v.config(kFieldTensor, cfg_.tensor);
    v.config(kFieldSeed, cfg_.seed);
    codec_fields(v, kFieldCodec, kFieldParams, cfg_.codec);
    s.clock.fields(v);
    v.scalar(kFieldK, s.k);
    v.floats(kFieldEps, eps_.get(), cfg_.n);
}

template void LagsLayer::fields(blob::Sizer&, Scalars&);
template void LagsLayer::fields(blob::Writer&, Scalars&);
template void LagsLayer::fields(blob::Reader&, Scalars&);

}  // namespace gw
