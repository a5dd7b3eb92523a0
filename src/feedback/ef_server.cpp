#include "feedback/ef_server.hpp"

#include <cstring>
#include <type_traits>
#include <utility>

#include "feedback/fused_sign.hpp"
#include "frame/frame.hpp"
#include "frame/many.hpp"
#include "kernels/kernels.hpp"

namespace gw {
namespace {
enum : uint16_t {
    kFieldTotal = 1, kFieldOffset = 2, kFieldLength = 3, kFieldWorkers = 4, kFieldCodec = 5,
    kFieldParams = 6, kFieldEf = 7, kFieldTensor = 8, kFieldPushes = 34, kFieldE = 64,
    kFieldAcc = 65,
};
}  // namespace

gw_status EfServer::init(const Backend& backend, const ServerConfig& c) {
    cx_.bind(backend);
    cfg_ = c;
    if (!frame::frame_bound(c.codec, c.length, &frame_bound_)) return GW_ERR_INVALID_ARGUMENT;
    if (c.length == 0) return GW_OK;  // an empty slice: frames of no elements
    acc_ = alloc_floats(cx_.alloc(), c.length);
    q_ = alloc_floats(cx_.alloc(), c.length);
    if (c.error_feedback) e_ = alloc_floats(cx_.alloc(), c.length);
    if (!acc_ || !q_ || (c.error_feedback && !e_)) return GW_ERR_OUT_OF_MEMORY;
    return GW_OK;
}

// What every worker frame must be (codec, tag); its length is checked by the caller.
gw_status EfServer::accept(const frame::View& v) const {
    if (vote() && v.params.codec->id != GW_CODEC_SIGN) return GW_ERR_CODEC_MISMATCH;
    if (cfg_.has_expect && !params_equal(v.params, cfg_.expect)) return GW_ERR_CODEC_MISMATCH;
    if (cfg_.check_tag && v.tag != frame::make_tag(cfg_.tensor, s_.clock.step))
        return GW_ERR_TAG_MISMATCH;
    return GW_OK;
}

float EfServer::weight() const {
    // Votes add 1 per +-1 (exact); otherwise each frame has weight 1/M.
    return vote() ? 1.0f : 1.0f / static_cast<float>(cfg_.workers);
}

gw_status EfServer::push(const void* frame, size_t size) {
    if (const gw_status st = sequence(Call::kPush); st != GW_OK) return st;
    frame::View v;
    gw_status st = frame::open(cx_, frame, size, true, &v);
    if (st != GW_OK) return st;
    if (v.count != cfg_.length) return GW_ERR_COUNT_MISMATCH;
    if ((st = accept(v)) != GW_OK) return st;
    const uint64_t n = cfg_.length;
    if (n == 0) {
        ++s_.pushes;
        return GW_OK;
    }
    // The new sum goes to q_ and replaces acc_ only if it is finite, so a
    // rejected push leaves the round as it was. A frame that adds by ranges
    // does it tile by tile, the tile checked while in cache.
    const kern::Table& t = cx_.k();
    float* next = q_.get();
    const float* acc = acc_.get();
    const float w = weight();
    const bool ranges = v.params.codec->accumulate_range && !(v.flags & frame::kFlagZstd);
    const uint64_t tile = ranges ? frame::kSumTile : n;
    for (uint64_t off = 0; off < n; off += tile) {
        const uint64_t tl = n - off < tile ? n - off : tile;
        if (s_.pushes == 0)
            std::memset(next + off, 0, tl * sizeof(float));
        else
            std::memcpy(next + off, acc + off, tl * sizeof(float));
        if (ranges)
            v.params.codec->accumulate_range(cx_.k(), v.params, v.payload, n, off, off + tl, w,
                                             next + off);
        else
            v.params.codec->accumulate(cx_.k(), v.params, v.payload, v.payload_len, n, w, next);
        if (!vote() && !t.all_finite(next + off, tl)) return GW_ERR_OVERFLOW;
    }
    std::swap(acc_, q_);
    ++s_.pushes;
    return GW_OK;
}

// All M frames at once: the same bits as M pushes and a step, with one pass
// over the accumulator (none at all with a fused scaled-sign broadcast).
gw_status EfServer::round(const void* const* frames, const size_t* sizes, size_t count,
                          float lr, void* frame, size_t capacity, size_t* written,
                          size_t* bad) {
    if (const gw_status st = sequence(Call::kRound); st != GW_OK) return st;
    if (count != cfg_.workers) return GW_ERR_SEQUENCE;  // a round is M frames
    float r = 0.0f;
    gw_status st = s_.clock.rescale(lr, cfg_.error_feedback, &r);
    if (st != GW_OK) return st;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    frame::Many m;
    st = frame::open_many(
        frames, sizes, count, cfg_.length, cx_, [this](const frame::View& v) { return accept(v); },
        &m, bad);
    if (st != GW_OK) return st;
    const uint64_t n = cfg_.length;
    const float w = weight();
    const uint64_t fused_block = fused_sign_block(cfg_.codec, n);
    if (m.tiled && fused_block != 0) {
        static_assert(kFusedTile <= frame::kSumTile, "a fused tile is one add_tile");
        float* tile = static_cast<float*>(cx_.tile.get(kFusedTile * sizeof(float)));
        if (!tile) return GW_ERR_OUT_OF_MEMORY;
        float* e = e_.get();
        const kern::EfCoef k = combine_coef(r);
        // One pass (each tile of the sum built once) when the frames' scales
        // and the bound on e_s prove q finite: fixed blocks tile by tile, one
        // block per tensor with its residual deferred (pending_, as the
        // worker's).
        const bool fixed = fused_block < n;
        MagnitudeBound::Step b{};
        const bool one_pass =
            bound_.prove(cx_.k(), k, frame::max_abs_sum(m, n, w), nullptr, e, n, &b);
        uint64_t len = 0;
        // q = (0 + w D_1 + ... + w D_M) + r e_s per tile, as push and step compute it.
        auto sum_tile = [&](uint64_t off, uint64_t tl) {
            std::memset(tile, 0, tl * sizeof(float));
            frame::add_tile(cx_.k(), m, n, off, tl, w, tile);
        };
        if (one_pass && !fixed && e) {
            st = fused_scaled_sign_deferred(
                cfg_.codec, n, k,
                [&](uint64_t off, uint64_t tl) {
                    sum_tile(off, tl);
                    return CombineInputs{tile, tile, e + off};
                },
                e, nullptr, &pending_, cx_, frame, &len);
        } else {
            settle();
            st = fused_scaled_sign(
                cfg_.codec, n, k,
                [&](uint64_t off, uint64_t tl) {
                    sum_tile(off, tl);
                    return CombineInputs{tile, tile, e ? e + off : tile};
                },
                e, nullptr, one_pass && fixed, cx_, frame, &len);
        }
        // acc and e_s are finite, so a non-finite q can only be an overflow.
        if (st == GW_ERR_NONFINITE) return GW_ERR_OVERFLOW;
        if (st != GW_OK) return st;
        bound_.advance(b, false, e != nullptr);
        *written = frame::seal(cx_.k(), cfg_.codec, frame::make_tag(cfg_.tensor, s_.clock.step), n,
                               len, 0, frame);
        s_.clock.advance(lr);
        return GW_OK;
    }
    if (n) {
        std::memset(acc_.get(), 0, n * sizeof(float));
        frame::add_all(cx_, m, n, w, acc_.get());
        if (!vote() && !cx_.k().all_finite(acc_.get(), n)) return GW_ERR_OVERFLOW;
    }
    s_.pushes = cfg_.workers;
    st = step(lr, frame, capacity, written);
    if (st != GW_OK) s_.pushes = 0;  // the round did not happen
    return st;
}

gw_status EfServer::step(float lr, void* frame, size_t capacity, size_t* written) {
    if (const gw_status st = sequence(Call::kStep); st != GW_OK) return st;
    float r = 0.0f;
    gw_status st = s_.clock.rescale(lr, cfg_.error_feedback, &r);
    if (st != GW_OK) return st;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const kern::Table& t = cx_.k();
    const uint64_t n = cfg_.length;
    // q = acc + r*e_s, via the worker's combine kernel with zero momentum terms.
    const float* acc = acc_.get();
    const float* e = e_ ? e_.get() : acc;
    if (fused_sign_block(cfg_.codec, n) != 0) {
        settle();
        uint64_t len = 0;
        st = fused_scaled_sign(
            cfg_.codec, n, combine_coef(r),
            [&](uint64_t off, uint64_t) {
                return CombineInputs{acc + off, acc + off, e + off};
            },
            e_.get(), nullptr, false, cx_, frame, &len);
        if (st == GW_OK)
            *written = frame::seal(cx_.k(), cfg_.codec, frame::make_tag(cfg_.tensor, s_.clock.step),
                                   n, len, 0, frame);
    } else {
        if (n) t.ef_combine(acc, acc, e, combine_coef(r), q_.get(), n);
        // The residual goes over q (in place) and becomes e_s only on
        // success: a residual that overflows is found as it is written.
        const EncodeCtx ctx = encode_ctx(cx_, 0, s_.clock.step, cfg_.tensor);
        st = frame::encode(cx_, cfg_.codec, ctx, frame::make_tag(cfg_.tensor, s_.clock.step),
                           q_.get(), n, frame, capacity, written, e_ ? q_.get() : nullptr);
        if (st == GW_OK && e_) std::swap(e_, q_);
    }
    // acc and e_s are finite, so a non-finite q can only be an overflow.
    if (st == GW_ERR_NONFINITE) return GW_ERR_OVERFLOW;
    if (st != GW_OK) return st;
    bound_.known = false;  // e_s changed untracked: round() measures it first
    s_.pushes = 0;
    s_.clock.advance(lr);
    return GW_OK;
}

void EfServer::settle() {
    settle_residual(cx_.k(), e_.get(), pending_, cfg_.length, e_.get());
    pending_ = 0.0f;
}

void EfServer::residual(float* out) const {
    if (e_)
        settle_residual(cx_.k(), e_.get(), pending_, cfg_.length, out);
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
    if constexpr (std::is_same_v<V, blob::Writer>) settle();  // saves the residual itself
    if (e_) v.floats(kFieldE, e_.get(), cfg_.length);
    // The round's partial sum is state too: a checkpoint may be taken mid-round.
    if (s.pushes > 0) v.floats(kFieldAcc, acc_.get(), cfg_.length);
}

template void EfServer::fields(blob::Sizer&, Scalars&);
template void EfServer::fields(blob::Writer&, Scalars&);
template void EfServer::fields(blob::Reader&, Scalars&);

}  // namespace gw
