#include "feedback/ef_server.hpp"

#include <cmath>
#include <cstring>
#include <new>

#include "feedback/lr.hpp"
#include "feedback/state_blob.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

gw_status gw_server::create(const gw_server_options& o, gw_server** out) {
    Config c;
    gw_status st = gw::codec_params_from_options(&o.codec, &c.codec);
    if (st != GW_OK) return st;
    if (o.length == 0 || o.offset > o.total || o.length > o.total - o.offset)
        return GW_ERR_INVALID_ARGUMENT;
    if (o.num_workers == 0) return GW_ERR_INVALID_ARGUMENT;
    if (o.error_feedback != 0 && o.error_feedback != 1) return GW_ERR_INVALID_ARGUMENT;
    c.total = o.total;
    c.offset = o.offset;
    c.length = o.length;
    c.workers = o.num_workers;
    c.error_feedback = o.error_feedback == 1;

    size_t bound = 0;
    if (!gw::frame::frame_size(*gw::codec_for(c.codec.id), c.codec, c.length, &bound))
        return GW_ERR_INVALID_ARGUMENT;
    gw_server* s = new (std::nothrow) gw_server();
    if (!s) return GW_ERR_OUT_OF_MEMORY;
    s->cfg_ = c;
    s->frame_bound_ = bound;
    s->acc_ = gw::alloc_floats(c.length);
    s->q_ = gw::alloc_floats(c.length);
    if (c.error_feedback) s->e_ = gw::alloc_floats(c.length);
    if (!s->acc_ || !s->q_ || (c.error_feedback && !s->e_)) {
        delete s;
        return GW_ERR_OUT_OF_MEMORY;
    }
    *out = s;
    return GW_OK;
}

gw_status gw_server::push(const void* frame, size_t size) {
    if (pushes_ >= cfg_.workers) return GW_ERR_SEQUENCE;
    gw::frame::View v;
    const gw_status st = gw::frame::open(frame, size, true, &v);
    if (st != GW_OK) return st;
    if (v.count != cfg_.length) return GW_ERR_COUNT_MISMATCH;
    // The round's sum starts at +0 and adds (1/M) * D_i in push order.
    if (pushes_ == 0) std::memset(acc_.get(), 0, cfg_.length * sizeof(float));
    v.codec->accumulate(v.params, v.payload, v.count, 1.0f / static_cast<float>(cfg_.workers),
                        acc_.get());
    ++pushes_;
    return GW_OK;
}

gw_status gw_server::step(float lr, void* frame, size_t capacity, size_t* written) {
    if (pushes_ != cfg_.workers) return GW_ERR_SEQUENCE;
    if (!gw::valid_lr(lr)) return GW_ERR_INVALID_ARGUMENT;
    if (capacity < frame_bound_) return GW_ERR_BUFFER_TOO_SMALL;
    const gw::kern::Table& t = gw::kern::active();
    const float r = gw::residual_rescale(cfg_.error_feedback, lr_prev_, lr);
    // q = acc + r*e_s, via the worker's combine kernel with zero momentum terms.
    const float* acc = acc_.get();
    t.ef_combine(acc, acc, e_ ? e_.get() : acc, gw::kern::EfCoef{0.0f, 0.0f, 0.0f, 1.0f, r},
                 q_.get(), cfg_.length);
    const gw_status st =
        gw::frame::encode(cfg_.codec, q_.get(), cfg_.length, frame, capacity, written, e_.get());
    if (st != GW_OK) return st;
    pushes_ = 0;
    lr_prev_ = lr;
    ++step_;
    return GW_OK;
}

void gw_server::residual(float* out) const {
    if (e_)
        std::memcpy(out, e_.get(), cfg_.length * sizeof(float));
    else
        std::memset(out, 0, cfg_.length * sizeof(float));
}

// Body: total u64 | offset u64 | length u64 | workers u32 | codec u8 |
//       block_size u32 | ef u8 | step u64 | lr_prev f32 | pushes u32 |
//       e_s[length] (if error feedback) | acc[length] (if pushes > 0)
size_t gw_server::save_bound() const {
    const size_t fixed =
        gw::blob::kHeaderSize + 8 * 3 + 4 + 1 + 4 + 1 + 8 + 4 + 4 + gw::blob::kTrailerSize;
    return fixed + (cfg_.error_feedback + 1) * cfg_.length * sizeof(float);
}

size_t gw_server::save(void* blob) const {
    gw::blob::Writer w(static_cast<uint8_t*>(blob), gw::blob::kServer);
    w.u64(cfg_.total);
    w.u64(cfg_.offset);
    w.u64(cfg_.length);
    w.u32(cfg_.workers);
    w.u8(static_cast<uint8_t>(cfg_.codec.id));
    w.u32(cfg_.codec.block_size);
    w.u8(cfg_.error_feedback);
    w.u64(step_);
    w.f32(lr_prev_);
    w.u32(pushes_);
    if (e_) w.floats(e_.get(), cfg_.length);
    if (pushes_ > 0) w.floats(acc_.get(), cfg_.length);
    return w.finish();
}

gw_status gw_server::load(const void* blob, size_t size) {
    gw::blob::Reader r(blob, size, gw::blob::kServer);
    const uint64_t total = r.u64(), offset = r.u64(), length = r.u64();
    const uint32_t workers = r.u32();
    const uint8_t codec = r.u8();
    const uint32_t block = r.u32();
    const uint8_t ef = r.u8();
    const uint64_t step = r.u64();
    const float lr_prev = r.f32();
    const uint32_t pushes = r.u32();
    if (r.status() != GW_OK) return r.status();
    if (total != cfg_.total || offset != cfg_.offset || length != cfg_.length ||
        workers != cfg_.workers || codec != cfg_.codec.id || block != cfg_.codec.block_size ||
        ef != cfg_.error_feedback)
        return GW_ERR_STATE_MISMATCH;
    if (pushes > workers) return GW_ERR_STATE_CORRUPT;
    const uint8_t* e = e_ ? r.floats(length) : nullptr;
    const uint8_t* acc = pushes > 0 ? r.floats(length) : nullptr;
    const gw_status st = r.finish();
    if (st != GW_OK) return st;
    if (!(std::isfinite(lr_prev) && lr_prev >= 0.0f) || (e && !gw::floats_finite_le(e, length)) ||
        (acc && !gw::floats_finite_le(acc, length)))
        return GW_ERR_STATE_CORRUPT;
    if (e) std::memcpy(e_.get(), e, length * sizeof(float));
    if (acc) std::memcpy(acc_.get(), acc, length * sizeof(float));
    pushes_ = pushes;
    lr_prev_ = lr_prev;
    step_ = step;
    return GW_OK;
}
