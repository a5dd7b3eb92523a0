#include "feedback/cltk.hpp"

#include <cmath>
#include <cstring>

#include "frame/frame.hpp"
#include "feedback/machine.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {
enum : uint16_t {
    kFieldN = 1, kFieldWorkers = 2, kFieldRank = 3, kFieldBeta = 4, kFieldWarmup = 5,
    kFieldTensor = 6, kFieldCodec = 7, kFieldParams = 8, kFieldStep = 32, kFieldLeader = 33,
    kFieldM = 64,
};
}  // namespace

gw_status Cltk::init(const Backend& backend, const CltkConfig& c) {
    cx_.bind(backend);
    cfg_ = c;
    if (!frame::frame_bound(c.index, c.n, &frame_bound_)) return GW_ERR_INVALID_ARGUMENT;
    // The index payload holds at most kmax indices: 4 + 4 kmax bytes.
    uint64_t payload = 0;
    c.index.codec->max_payload(c.index, c.n, &payload);
    kmax_ = (payload - 4) / 4;
    m_ = alloc_floats(cx_.alloc(), c.n);
    a_ = alloc_floats(cx_.alloc(), c.n);
    if (kmax_) idx_ = alloc_zeroed<uint32_t>(cx_.alloc(), kmax_);
    if (!m_ || !a_ || (kmax_ && !idx_)) return GW_ERR_OUT_OF_MEMORY;
    return GW_OK;
}

uint64_t Cltk::values_bound() const { return cfg_.warmup && cfg_.n > kmax_ ? cfg_.n : kmax_; }

uint32_t Cltk::leader() const {
    if (dense_round()) return kCltkCyclic;
    return s_.leader != kCltkCyclic ? s_.leader : static_cast<uint32_t>(s_.step % cfg_.workers);
}

gw_status Cltk::sequence(Call c) const {
    switch (c) {
        case Call::kBegin:
        case Call::kSetLeader:  // the round's leader is fixed once it began
        case Call::kSave:       // the round's a and I are not saved
            return phase_.expect(kIdle);
        case Call::kSelect:
            return leads() ? phase_.expect(kBegun) : GW_ERR_SEQUENCE;  // once per round
        case Call::kExtract:
            return phase_.expect(leads() ? kSelected : kBegun);
        case Call::kApply:
            return phase_.expect(kExtracted);
    }
    return GW_ERR_SEQUENCE;
}

gw_status Cltk::set_leader(uint32_t leader) {
    if (const gw_status st = sequence(Call::kSetLeader); st != GW_OK) return st;
    if (leader != kCltkCyclic && leader >= cfg_.workers) return GW_ERR_INVALID_ARGUMENT;
    s_.leader = leader;
    return GW_OK;
}

gw_status Cltk::begin(const void* grad, gw_dtype dtype, float lr) {
    if (const gw_status st = sequence(Call::kBegin); st != GW_OK) return st;
    if (s_.step == UINT64_MAX) return GW_ERR_OVERFLOW;  // the round's apply would wrap the step count
    if (!(std::isfinite(lr) && lr > 0.0f)) return GW_ERR_INVALID_ARGUMENT;
    const float* g = widen_to_f32(cx_.k(), grad, dtype, cfg_.n, cx_.convert);
    if (!g) return GW_ERR_OUT_OF_MEMORY;
    const kern::Table& t = cx_.k();
    // a = m + lr * g (t = lr*g; a = m + t), into the round's own buffer.
    std::memcpy(a_.get(), m_.get(), cfg_.n * sizeof(float));
    axpy_host(cx_.k(), lr, g, a_.get(), cfg_.n);
    // m is finite and lr finite and > 0, so a finite a means a finite g.
    if (!t.all_finite(a_.get(), cfg_.n))
        return t.all_finite(g, cfg_.n) ? GW_ERR_OVERFLOW : GW_ERR_NONFINITE;
    phase_.to(kBegun);
    return GW_OK;
}

gw_status Cltk::select(void* frame, size_t capacity, size_t* written) {
    if (const gw_status st = sequence(Call::kSelect); st != GW_OK) return st;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const EncodeCtx ctx = encode_ctx(cx_, 0, s_.step, cfg_.tensor);
    const gw_status st = frame::encode(cx_, cfg_.index, ctx, frame::make_tag(cfg_.tensor, s_.step),
                                       a_.get(), cfg_.n, frame, capacity, written, nullptr);
    if (st == GW_OK) phase_.to(kSelected);
    return st;
}

gw_status Cltk::extract(const void* frame, size_t size, float* values, uint64_t capacity,
                        uint64_t* count) {
    if (const gw_status st = sequence(Call::kExtract); st != GW_OK) return st;
    const float* a = a_.get();
    if (dense_round()) {
        if (frame || size) return GW_ERR_SEQUENCE;  // no index frame in a warm-up round
        if (capacity < cfg_.n) return GW_ERR_BUFFER_TOO_SMALL;
        std::memcpy(values, a, cfg_.n * sizeof(float));
        count_ = cfg_.n;
        dense_ = true;
    } else {
        if (!frame) return GW_ERR_NULL_POINTER;
        frame::View v;
        const gw_status st = frame::open(cx_, frame, size, true, &v);
        if (st != GW_OK) return st;
        if (!params_equal(v.params, cfg_.index)) return GW_ERR_CODEC_MISMATCH;
        if (v.count != cfg_.n) return GW_ERR_COUNT_MISMATCH;
        if (v.tag != frame::make_tag(cfg_.tensor, s_.step)) return GW_ERR_TAG_MISMATCH;
        const uint64_t k = load_le<uint32_t>(v.payload);
        if (capacity < k) return GW_ERR_BUFFER_TOO_SMALL;
        index_payload_indices(cx_.k(), v.payload, idx_.get());
        cx_.k().gather(a, idx_.get(), k, values);
        count_ = k;
        dense_ = false;
    }
    *count = count_;
    phase_.to(kExtracted);
    return GW_OK;
}

gw_status Cltk::apply(const float* summed, uint64_t count, float* x) {
    if (const gw_status st = sequence(Call::kApply); st != GW_OK) return st;
    if (count != count_) return GW_ERR_COUNT_MISMATCH;
    const kern::Table& t = cx_.k();
    if (!t.all_finite(summed, count)) return GW_ERR_NONFINITE;
    const float workers = static_cast<float>(cfg_.workers);
    const uint32_t* idx = dense_ ? nullptr : idx_.get();  // null: every element
    // x[I] -= sum / M, checked first so an overflow leaves x as it was.
    if (x && !t.scatter_sub_div(x, idx, summed, count, workers)) return GW_ERR_OVERFLOW;
    // m = (1 - beta) m + beta (a - scatter(s, I)): what was sent leaves a.
    float* a = a_.get();
    t.scatter_zero(idx, count, a);
    if (cfg_.beta == 1.0f)
        std::memcpy(m_.get(), a, cfg_.n * sizeof(float));
    else  // t1 = (1 - beta) m; t2 = beta a; m = t1 + t2
        t.momentum_update(m_.get(), a, 1.0f - cfg_.beta, cfg_.beta, cfg_.n);
    ++s_.step;
    phase_.to(kIdle);
    return GW_OK;
}

void Cltk::memory(float* out) const { std::memcpy(out, m_.get(), cfg_.n * sizeof(float)); }

void Cltk::indices(uint32_t* out) const {
    if (dense_) {
        for (uint64_t i = 0; i < count_; ++i) out[i] = static_cast<uint32_t>(i);
    } else if (count_) {
        std::memcpy(out, idx_.get(), count_ * sizeof(uint32_t));
    }
}

template <class V> void Cltk::fields(V& v, Scalars& s) {
    v.config(kFieldN, cfg_.n);
    v.config(kFieldWorkers, cfg_.workers);
    v.config(kFieldRank, cfg_.rank);
    v.config(kFieldBeta, cfg_.beta);
    v.config(kFieldWarmup, cfg_.warmup);
    v.config(kFieldTensor, cfg_.tensor);
    codec_fields(v, kFieldCodec, kFieldParams, cfg_.index);
    v.scalar(kFieldStep, s.step);
    v.scalar(kFieldLeader, s.leader);
    v.floats(kFieldM, m_.get(), cfg_.n);
}

template void Cltk::fields(blob::Sizer&, Scalars&);
template void Cltk::fields(blob::Writer&, Scalars&);
template void Cltk::fields(blob::Reader&, Scalars&);

uint32_t scalecom_rate(double flops_per_gradient) {
    if (!(std::isfinite(flops_per_gradient) && flops_per_gradient > 0.0)) return 0;
    if (flops_per_gradient <= 128.0) return 400;
    return flops_per_gradient < 196.0 ? 50 : 25;
}

}  // namespace gw
