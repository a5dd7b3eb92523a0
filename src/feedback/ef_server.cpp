#include "feedback/ef_server.hpp"

#include <cstring>
#include <utility>

#include "frame/frame.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {
enum : uint16_t {
    kFieldTotal = 1, kFieldOffset = 2, kFieldLength = 3, kFieldWorkers = 4, kFieldCodec = 5,
    kFieldParams = 6, kFieldEf = 7, kFieldTensor = 8, kFieldPushes = 34, kFieldE = 64,
    kFieldAcc = 65,
};
}  // namespace

gw_status EfServer::init(const ServerConfig& c) {
    cfg_ = c;
    if (!frame::frame_bound(c.codec, c.length, &frame_bound_)) return GW_ERR_INVALID_ARGUMENT;
    if (c.length == 0) return GW_OK;  // an empty slice: frames of no elements
    acc_ = alloc_floats(c.length);
    q_ = alloc_floats(c.length);
    if (c.error_feedback) e_ = alloc_floats(c.length);
    if (!acc_ || !q_ || (c.error_feedback && !e_)) return GW_ERR_OUT_OF_MEMORY;
    return GW_OK;
}

gw_status EfServer::push(const void* frame, size_t size) {
    if (s_.pushes >= cfg_.workers) return GW_ERR_SEQUENCE;
    frame::View v;
    const gw_status st = frame::open(frame, size, true, ws_.stage, &v);
    if (st != GW_OK) return st;
    if (v.count != cfg_.length) return GW_ERR_COUNT_MISMATCH;
    if (vote() && v.params.codec->id != GW_CODEC_SIGN) return GW_ERR_CODEC_MISMATCH;
    if (cfg_.has_expect && !params_equal(v.params, cfg_.expect)) return GW_ERR_CODEC_MISMATCH;
    if (cfg_.check_tag && v.tag != frame_tag(cfg_.tensor, s_.clock.step))
        return GW_ERR_TAG_MISMATCH;
    const uint64_t n = cfg_.length;
    if (n == 0) {
        ++s_.pushes;
        return GW_OK;
    }
    // The new sum goes to q_ and replaces acc_ only if it is finite, so a
    // rejected push leaves the round as it was. Votes add 1 per +-1 (exact);
    // otherwise each frame has weight 1/M.
    float* next = q_.get();
    if (s_.pushes == 0)
        std::memset(next, 0, n * sizeof(float));
    else
        std::memcpy(next, acc_.get(), n * sizeof(float));
    const float w = vote() ? 1.0f : 1.0f / static_cast<float>(cfg_.workers);
    v.params.codec->accumulate(v.params, v.payload, v.payload_len, n, w, next);
    if (!vote() && !kern::active().all_finite(next, n)) return GW_ERR_OVERFLOW;
    std::swap(acc_, q_);
    ++s_.pushes;
    return GW_OK;
}

gw_status EfServer::step(float lr, void* frame, size_t capacity, size_t* written) {
    if (s_.pushes != cfg_.workers) return GW_ERR_SEQUENCE;
    float r = 0.0f;
    gw_status st = s_.clock.rescale(lr, cfg_.error_feedback, &r);
    if (st != GW_OK) return st;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const kern::Table& t = kern::active();
    // q = acc + r*e_s, via the worker's combine kernel with zero momentum terms.
    const float* acc = acc_.get();
    if (cfg_.length)
        t.ef_combine(acc, acc, e_ ? e_.get() : acc, kern::EfCoef{0.0f, 0.0f, 0.0f, 1.0f, r},
                     q_.get(), cfg_.length);
    const EncodeCtx ctx{0, s_.clock.step, cfg_.tensor, &ws_.codec};
    st = frame::encode(cfg_.codec, ctx, frame_tag(cfg_.tensor, s_.clock.step), q_.get(),
                       cfg_.length, frame, capacity, written, e_.get(), ws_.stage);
    // acc and e_s are finite, so a non-finite q can only be an overflow.
    if (st == GW_ERR_NONFINITE) return GW_ERR_OVERFLOW;
    if (st != GW_OK) return st;
    s_.pushes = 0;
    s_.clock.advance(lr);
    return GW_OK;
}

void EfServer::residual(float* out) const {
    if (e_)
        std::memcpy(out, e_.get(), cfg_.length * sizeof(float));
    else if (cfg_.length)
        std::memset(out, 0, cfg_.length * sizeof(float));
}

template <class V> void EfServer::fields(V& v, Scalars& s) {
    v.config(kFieldTotal, cfg_.total);
    v.config(kFieldOffset, cfg_.offset);
    v.config(kFieldLength, cfg_.length);
    v.config(kFieldWorkers, cfg_.workers);
    codec_fields(v, kFieldCodec, kFieldParams, cfg_.codec);
    v.config(kFieldEf, static_cast<uint8_t>(cfg_.error_feedback));
    v.config(kFieldTensor, cfg_.tensor);
    s.clock.fields(v);
    v.scalar(kFieldPushes, s.pushes);
    if (e_) v.floats(kFieldE, e_.get(), cfg_.length);
    // The round's partial sum is state too: a checkpoint may be taken mid-round.
    if (s.pushes > 0) v.floats(kFieldAcc, acc_.get(), cfg_.length);
}

template void EfServer::fields(blob::Sizer&, Scalars&);
template void EfServer::fields(blob::Writer&, Scalars&);
template void EfServer::fields(blob::Reader&, Scalars&);

}  // namespace gw
