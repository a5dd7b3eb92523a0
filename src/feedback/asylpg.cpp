#include "feedback/asylpg.hpp"

#include <cmath>
#include <cstring>
#include <initializer_list>

#include "codecs/grid_quant.hpp"
#include "feedback/machine.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {

enum : uint16_t {
    kFieldN = 1, kFieldVariant = 2, kFieldLr = 3, kFieldL1 = 4, kFieldL2 = 5, kFieldMu = 6,
    kFieldM = 7, kFieldTau = 8, kFieldBitsMin = 9, kFieldBitsMax = 10, kFieldBlock = 11,
    kFieldTensor = 12, kFieldSeed = 13, kFieldCodec = 14, kFieldParams = 15,
    kFieldEpoch = 32, kFieldInner = 33, kFieldVersion = 34, kFieldPhase = 35, kFieldSteps = 36,
    kFieldState = 37,
    kFieldX = 64, kFieldSnap = 65, kFieldFull = 66, kFieldY = 67, kFieldSum = 68, kFieldModel = 69,
};

CodecParams quant_params(unsigned bits, uint32_t block) {
    CodecParams p = default_params(*codec_for(GW_CODEC_QUANT));
    set_param(&p, GW_PARAM_BITS, bits);
    set_param(&p, GW_PARAM_BLOCK_SIZE, block);
    // Revision 1's rounding: AsyLPG's checkpoints and frames predate revision 2.
    set_param(&p, GW_PARAM_REVISION, 1);
    return p;
}

CodecParams identity() { return default_params(*codec_for(GW_CODEC_IDENTITY)); }

bool valid_bits(unsigned b) { return (b >= 1 && b <= 8) || b == 16; }

// prox_{c h} of one coordinate (header: the exact order of operations).
struct Prox {
    float cl1, den;
    Prox(float c, float l1, float l2) : cl1(c * l1), den(1.0f + c * l2) {}
    float operator()(float v) const {
        const float a = std::fabs(v) - cl1;
        return a <= 0.0f ? 0.0f : std::copysign(a / den, v);
    }
};

}  // namespace

// ---------------------------------------------------------------------------
// Master

unsigned AsylpgMaster::choose_bits(const kern::Table& kt, const float* x, uint64_t n,
                                   uint32_t block, unsigned lo, unsigned hi, double bound) {
    for (unsigned b = lo; b < hi; ++b) {
        if (!valid_bits(b)) continue;
        const gq::Grid g = gq::for_bits(b);
        const uint64_t bs = block == 0 ? n : block;
        double err = 0.0;
        for (uint64_t first = 0; first < n; first += bs) {
            const uint64_t d = n - first < bs ? n - first : bs;
            float delta = 0.0f;
            if (gq::max_rule(kt, CodecParams{}, g, x + first, d, &delta) != GW_OK) return hi;
            err += gq::expected_sq_error(g, x + first, d, delta);
        }
        if (err <= bound) return b;
    }
    return hi;
}

gw_status AsylpgMaster::init(const Backend& backend, const AsylpgMasterConfig& c) {
    cx_.bind(backend);
    const float* x0 = c.x0;
    if (c.n == 0 || c.epoch_length == 0) return GW_ERR_INVALID_ARGUMENT;
    if (!(std::isfinite(c.lr) && c.lr > 0.0f) || !(std::isfinite(c.l1) && c.l1 >= 0.0f) ||
        !(std::isfinite(c.l2) && c.l2 >= 0.0f) || !(std::isfinite(c.mu) && c.mu >= 0.0f) ||
        c.variant > kAsylpgAcc)
        return GW_ERR_INVALID_ARGUMENT;
    const bool full = c.bits_min == 0 && c.bits_max == 0;
    if (!full && (!valid_bits(c.bits_min) || !valid_bits(c.bits_max) || c.bits_min > c.bits_max))
        return GW_ERR_INVALID_ARGUMENT;
    if (!cx_.k().all_finite(x0, c.n)) return GW_ERR_NONFINITE;
    cfg_ = c;
    cfg_.x0 = nullptr;
    size_t qb = 0, ib = 0;
    if (!frame::frame_bound(quant_params(16, c.model_block), c.n, &qb) ||
        !frame::frame_bound(identity(), c.n, &ib))
        return GW_ERR_INVALID_ARGUMENT;
    frame_bound_ = qb > ib ? qb : ib;
    for (FloatBuf* b : {&x_, &snap_, &full_, &y_, &sum_, &u_, &nx_, &ny_}) {
        *b = alloc_floats(cx_.alloc(), c.n);
        if (!*b) return GW_ERR_OUT_OF_MEMORY;
    }
    const size_t bytes = c.n * sizeof(float);
    std::memcpy(x_.get(), x0, bytes);
    std::memcpy(snap_.get(), x0, bytes);
    std::memcpy(y_.get(), x0, bytes);
    return GW_OK;
}

gw_status AsylpgMaster::begin_epoch(const float* full_grad) {
    if (const gw_status st = sequence(Call::kBeginEpoch); st != GW_OK) return st;
    const uint64_t n = cfg_.n;
    if (!cx_.k().all_finite(full_grad, n)) return GW_ERR_NONFINITE;
    if (cfg_.variant == kAsylpgAcc) {
        // x_0 = theta y + (1 - theta) x~ as x~ + theta (y - x~), the inner
        // updates' form: exactly x~ when y == x~ (the "unchanged" model
        // message); theta y + (1 - theta) x~ in float lands an ulp off.
        const float th = theta();
        const float *y = y_.get(), *sn = snap_.get();
        for (uint64_t i = 0; i < n; ++i) {
            const float d = y[i] - sn[i];
            const float td = th * d;
            nx_[i] = sn[i] + td;
        }
        // y - x~ overflows only for opposite signs beyond FLT_MAX / 2.
        if (!cx_.k().all_finite(nx_.get(), n)) return GW_ERR_OVERFLOW;
        std::memcpy(x_.get(), nx_.get(), n * sizeof(float));
    } else {
        std::memcpy(x_.get(), snap_.get(), n * sizeof(float));
    }
    std::memcpy(full_.get(), full_grad, n * sizeof(float));
    std::memset(sum_.get(), 0, n * sizeof(float));
    s_.phase.to(kInEpoch);
    s_.inner = 0;
    return GW_OK;
}

gw_status AsylpgMaster::model(void* frame, size_t capacity, size_t* written, unsigned* bits) {
    if (const gw_status st = sequence(Call::kModel); st != GW_OK) return st;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const uint64_t n = cfg_.n, tag = frame::make_tag(cfg_.tensor, s_.version);
    const EncodeCtx ctx = encode_ctx(cx_, cfg_.seed, s_.version, cfg_.tensor);
    const float *x = x_.get(), *sn = snap_.get();
    if (std::memcmp(x, sn, n * sizeof(float)) == 0) {
        // Unchanged: the workers hold x~ already; an empty frame says so.
        *bits = 0;
        return frame::encode(cx_, identity(), ctx, tag, x, 0, frame, capacity, written, nullptr);
    }
    if (cfg_.bits_max == 0) {
        *bits = 32;
        return frame::encode(cx_, identity(), ctx, tag, x, n, frame, capacity, written, nullptr);
    }
    double dist = 0.0;  // ||x - x~||^2
    for (uint64_t i = 0; i < n; ++i) {
        const double d = double(x[i]) - double(sn[i]);
        dist += d * d;
    }
    const double mu = cfg_.variant == kAsylpgAcc ? double(theta()) * cfg_.mu : cfg_.mu;
    const unsigned b =
        choose_bits(cx_.k(), x, n, cfg_.model_block, cfg_.bits_min, cfg_.bits_max, mu * dist);
    *bits = b;
    return frame::encode(cx_, quant_params(b, cfg_.model_block), ctx, tag, x, n, frame, capacity,
                         written, nullptr);
}

gw_status AsylpgMaster::push(const void* data, size_t size) {
    if (const gw_status st = sequence(Call::kPush); st != GW_OK) return st;
    // Counters a loader accepts must not wrap (the epoch to 0, which it refuses).
    if (s_.version == UINT64_MAX || (s_.inner + 1 == cfg_.epoch_length && s_.epoch == UINT64_MAX))
        return GW_ERR_OVERFLOW;
    frame::View v;
    gw_status st = frame::open(cx_, data, size, true, &v);
    if (st != GW_OK) return st;
    if (v.count != cfg_.n) return GW_ERR_COUNT_MISMATCH;
    if (frame::tag_tensor(v.tag) != cfg_.tensor) return GW_ERR_TAG_MISMATCH;
    const uint32_t age = static_cast<uint32_t>(s_.version) - static_cast<uint32_t>(v.tag);
    if (age > 0x80000000u) return GW_ERR_TAG_MISMATCH;  // a version not yet sent
    if (age > cfg_.tau) return GW_ERR_STALE;
    const uint64_t n = cfg_.n;
    float* u = u_.get();
    v.params.codec->decode(cx_.k(), v.params, v.payload, v.payload_len, n, u);
    const float* g = full_.get();
    for (uint64_t i = 0; i < n; ++i) u[i] = u[i] + g[i];
    // The new x (and y) go to nx_, ny_ and replace the state only if finite.
    float *nx = nx_.get(), *ny = ny_.get();
    const float* x = x_.get();
    if (cfg_.variant == kAsylpgAcc) {
        const float th = theta(), lr = cfg_.lr / th;
        const Prox prox(lr, cfg_.l1, cfg_.l2);
        const float *y = y_.get(), *sn = snap_.get();
        for (uint64_t i = 0; i < n; ++i) {
            const float t = lr * u[i];
            ny[i] = prox(y[i] - t);
            const float d = ny[i] - sn[i];
            const float td = th * d;
            nx[i] = sn[i] + td;
        }
        if (!cx_.k().all_finite(ny, n)) return GW_ERR_OVERFLOW;
    } else {
        const Prox prox(cfg_.lr, cfg_.l1, cfg_.l2);
        for (uint64_t i = 0; i < n; ++i) {
            const float t = cfg_.lr * u[i];
            nx[i] = prox(x[i] - t);
        }
    }
    if (!cx_.k().all_finite(nx, n)) return GW_ERR_OVERFLOW;
    // The epoch's running sum (Acc's next snapshot is its mean).
    float* sum = sum_.get();
    if (cfg_.variant == kAsylpgAcc) {
        for (uint64_t i = 0; i < n; ++i) u[i] = sum[i] + nx[i];
        if (!cx_.k().all_finite(u, n)) return GW_ERR_OVERFLOW;
        std::memcpy(sum, u, n * sizeof(float));
        std::swap(y_, ny_);
    }
    std::swap(x_, nx_);
    ++s_.version;
    if (++s_.inner == cfg_.epoch_length) {
        const float m = static_cast<float>(cfg_.epoch_length);
        if (cfg_.variant == kAsylpgAcc)
            for (uint64_t i = 0; i < n; ++i) snap_[i] = sum[i] / m;
        else
            std::memcpy(snap_.get(), x_.get(), n * sizeof(float));
        ++s_.epoch;
        s_.inner = 0;
        s_.phase.to(kAwaitFullGrad);
    }
    return GW_OK;
}

void AsylpgMaster::params(float* out) const { std::memcpy(out, x_.get(), cfg_.n * sizeof(float)); }
void AsylpgMaster::snapshot(float* out) const {
    std::memcpy(out, snap_.get(), cfg_.n * sizeof(float));
}

template <class V> void AsylpgMaster::fields(V& v, Scalars& s) {
    v.config(kFieldN, cfg_.n);
    v.config(kFieldVariant, cfg_.variant);
    v.config(kFieldLr, cfg_.lr);
    v.config(kFieldL1, cfg_.l1);
    v.config(kFieldL2, cfg_.l2);
    v.config(kFieldMu, cfg_.mu);
    v.config(kFieldM, cfg_.epoch_length);
    v.config(kFieldTau, cfg_.tau);
    v.config(kFieldBitsMin, cfg_.bits_min);
    v.config(kFieldBitsMax, cfg_.bits_max);
    v.config(kFieldBlock, cfg_.model_block);
    v.config(kFieldTensor, cfg_.tensor);
    v.config(kFieldSeed, cfg_.seed);
    v.scalar(kFieldEpoch, s.epoch);
    v.scalar(kFieldInner, s.inner);
    v.scalar(kFieldVersion, s.version);
    v.scalar(kFieldPhase, s.phase.raw());
    v.floats(kFieldX, x_.get(), cfg_.n);
    v.floats(kFieldSnap, snap_.get(), cfg_.n);
    v.floats(kFieldFull, full_.get(), cfg_.n);
    v.floats(kFieldY, y_.get(), cfg_.n);
    v.floats(kFieldSum, sum_.get(), cfg_.n);
}

template void AsylpgMaster::fields(blob::Sizer&, Scalars&);
template void AsylpgMaster::fields(blob::Writer&, Scalars&);
template void AsylpgMaster::fields(blob::Reader&, Scalars&);

// ---------------------------------------------------------------------------
// Worker

gw_status AsylpgWorker::init(const Backend& backend, const AsylpgWorkerConfig& c) {
    cx_.bind(backend);
    if (c.n == 0) return GW_ERR_INVALID_ARGUMENT;
    cfg_ = c;
    if (!frame::frame_bound(c.codec, c.n, &frame_bound_)) return GW_ERR_INVALID_ARGUMENT;
    for (FloatBuf* b : {&snap_, &model_, &alpha_}) {
        *b = alloc_floats(cx_.alloc(), c.n);
        if (!*b) return GW_ERR_OUT_OF_MEMORY;
    }
    return GW_OK;
}

gw_status AsylpgWorker::set_snapshot(const float* snapshot) {
    if (!cx_.k().all_finite(snapshot, cfg_.n)) return GW_ERR_NONFINITE;
    std::memcpy(snap_.get(), snapshot, cfg_.n * sizeof(float));
    s_.state.to(kHasSnapshot);  // a new snapshot: the model must come again
    return GW_OK;
}

gw_status AsylpgWorker::receive(const void* data, size_t size) {
    if (const gw_status st = sequence(Call::kReceive); st != GW_OK) return st;
    frame::View v;
    const gw_status st = frame::open(cx_, data, size, true, &v);
    if (st != GW_OK) return st;
    if (v.count != 0 && v.count != cfg_.n) return GW_ERR_COUNT_MISMATCH;
    if (frame::tag_tensor(v.tag) != cfg_.tensor) return GW_ERR_TAG_MISMATCH;
    if (v.count == 0)
        std::memcpy(model_.get(), snap_.get(), cfg_.n * sizeof(float));
    else
        v.params.codec->decode(cx_.k(), v.params, v.payload, v.payload_len, cfg_.n, model_.get());
    s_.version = static_cast<uint32_t>(v.tag);
    s_.state.to(kHasModel);
    return GW_OK;
}

gw_status AsylpgWorker::model(float* out, uint64_t n, uint64_t* version) const {
    if (const gw_status st = sequence(Call::kModel); st != GW_OK) return st;
    if (n != cfg_.n) return GW_ERR_COUNT_MISMATCH;
    std::memcpy(out, model_.get(), cfg_.n * sizeof(float));
    if (version) *version = s_.version;
    return GW_OK;
}

gw_status AsylpgWorker::step(const void* grad_model, const void* grad_snapshot, gw_dtype dtype,
                             void* frame, size_t capacity, size_t* written) {
    if (const gw_status st = sequence(Call::kStep); st != GW_OK) return st;
    if (s_.steps == UINT64_MAX) return GW_ERR_OVERFLOW;  // the step count would wrap
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const uint64_t n = cfg_.n;
    // alpha = g(Q(x)) - g(x~) in one pass. A half-precision snapshot gradient
    // is widened into alpha_ first (the model gradient's widening reuses the
    // conversion buffer). A NaN/Inf in either input reaches alpha, and the
    // codec refuses a non-finite alpha before writing anything (every encoder
    // does), so no pass checks the inputs unless it does.
    const float* gs = widen_to_f32(cx_.k(), grad_snapshot, dtype, n, cx_.convert);
    if (!gs) return GW_ERR_OUT_OF_MEMORY;
    float* a = alpha_.get();
    if (dtype != GW_DTYPE_F32) {
        std::memcpy(a, gs, n * sizeof(float));
        gs = a;
    }
    const float* gm = widen_to_f32(cx_.k(), grad_model, dtype, n, cx_.convert);
    if (!gm) return GW_ERR_OUT_OF_MEMORY;
    for (uint64_t i = 0; i < n; ++i) a[i] = gm[i] - gs[i];
    const EncodeCtx ctx = encode_ctx(cx_, cfg_.seed, s_.steps, cfg_.tensor);
    const gw_status st =
        frame::encode(cx_, cfg_.codec, ctx, frame::make_tag(cfg_.tensor, s_.version), a, n, frame,
                      capacity, written, nullptr);
    if (st == GW_ERR_NONFINITE) return inputs_finite(grad_model, grad_snapshot, dtype)
                                           ? GW_ERR_OVERFLOW  // finite inputs, alpha overflowed
                                           : GW_ERR_NONFINITE;
    if (st != GW_OK) return st;
    ++s_.steps;
    return GW_OK;
}

// Only after a refused step: whether both gradients are finite (each widened
// again in turn, since alpha_ may hold the snapshot gradient no more).
bool AsylpgWorker::inputs_finite(const void* grad_model, const void* grad_snapshot,
                                 gw_dtype dtype) {
    for (const void* g : {grad_model, grad_snapshot}) {
        const float* x = widen_to_f32(cx_.k(), g, dtype, cfg_.n, cx_.convert);
        if (!x || !cx_.k().all_finite(x, cfg_.n)) return false;
    }
    return true;
}

template <class V> void AsylpgWorker::fields(V& v, Scalars& s) {
    v.config(kFieldN, cfg_.n);
    v.config(kFieldTensor, cfg_.tensor);
    v.config(kFieldSeed, cfg_.seed);
    codec_fields(v, kFieldCodec, kFieldParams, cfg_.codec);
    v.scalar(kFieldSteps, s.steps);
    v.scalar(kFieldVersion, s.version);
    v.scalar(kFieldState, s.state.raw());
    v.floats(kFieldSnap, snap_.get(), cfg_.n);
    v.floats(kFieldModel, model_.get(), cfg_.n);
}

template void AsylpgWorker::fields(blob::Sizer&, Scalars&);
template void AsylpgWorker::fields(blob::Writer&, Scalars&);
template void AsylpgWorker::fields(blob::Reader&, Scalars&);

}  // namespace gw
