// Server side of dist-EF-SGD / dist-EF-blockSGDM (docs/algorithms.md s.2-3):
//   q = (1/M) sum_i D_i + r e_s;   broadcast D = C(q);   e_s = q - D
// A server may own a slice [offset, offset+length) of a tensor, so that M
// servers (one per worker) each reduce 1/M of it: reduce-scatter, then
// all-gather of the broadcast frames. With error feedback off and the sign
// codec it is signSGD's majority vote sign(sum_i sign(g_i)): votes are
// counted exactly (sums of +-1 are integers in float32), ties go to +1.
//
// Phases: collecting (pushes < M) -> ready (pushes == M) -> step -> collecting.
// Overflow is caught where it happens: a push whose sum would overflow float32
// is rejected (GW_ERR_OVERFLOW) and the round keeps its earlier pushes, so
// every reachable state is finite and saves and loads again.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "feedback/fused_sign.hpp"
#include "feedback/machine.hpp"
#include "feedback/state_blob.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/buffer.hpp"

namespace gw {

struct ServerConfig {
    uint64_t total = 0, offset = 0, length = 0;
    uint32_t workers = 1;
    CodecParams codec;  // what the server broadcasts
    bool has_expect = false;
    CodecParams expect;  // what workers must push, if has_expect
    bool error_feedback = true;
    uint32_t tensor = 0;
    bool check_tag = true;
};

class EfServer {
  public:
    static constexpr blob::Kind kBlobKind = blob::kServer;
    enum class Call : uint8_t { kPush, kStep, kRound };
    // GW_OK if `c` may come now, else GW_ERR_SEQUENCE: every call checks it
    // first, and the C layer before it checks the call's arguments.
    gw_status sequence(Call c) const {
        const Phase<State> p(s_.pushes == 0                ? kEmpty
                             : s_.pushes < cfg_.workers ? kCollecting
                                                        : kReady);
        return c == Call::kPush ? p.expect(kEmpty, kCollecting)
               : c == Call::kStep ? p.expect(kReady)
                                  : p.expect(kEmpty);  // a whole round at once
    }
    // The most workers whose votes or sums are exact in float32 (2^24).
    static constexpr uint32_t kMaxWorkers = 1u << 24;

    gw_status init(const Backend& backend, const ServerConfig& c);

    // The kernels and allocator it was created with.

    const Context& context() const { return cx_; }

    size_t frame_bound() const { return frame_bound_; }
    gw_status push(const void* frame, size_t size);
    gw_status step(float lr, void* frame, size_t capacity, size_t* written);
    // A whole round at once (no pushes yet, count == M): the same bits as M
    // pushes then step, tiled. On failure nothing changes; *bad names the
    // first rejected frame (untouched if none is to blame).
    gw_status round(const void* const* frames, const size_t* sizes, size_t count, float lr,
                    void* frame, size_t capacity, size_t* written, size_t* bad);
    void reset_round() { s_.pushes = 0; }
    void residual(float* out) const;
    const ServerConfig& config() const { return cfg_; }
    uint64_t steps() const { return s_.clock.step; }

    struct Scalars {
        Clock clock;
        uint32_t pushes = 0;  // frames in the current round
    };
    Scalars scalars() const { return s_; }
    bool scalars_valid(const Scalars& s) const {
        return s.clock.valid() && s.pushes <= cfg_.workers;
    }
    void set_scalars(const Scalars& s) {  // the last act of a load, which replaced e_s
        s_ = s;
        bound_.known = false;
        pending_ = 0.0f;
    }
    template <class V> void fields(V& v, Scalars& s);

  private:
    // The phase follows from the round's push count (saved as field 34).
    enum State : uint8_t { kEmpty, kCollecting, kReady };
    bool vote() const { return !cfg_.error_feedback && cfg_.codec.codec->id == GW_CODEC_SIGN; }
    gw_status accept(const frame::View& v) const;
    float weight() const;
    // ef_combine's coefficients for q = acc + r e_s (no momentum terms).
    static kern::EfCoef combine_coef(float r) { return kern::EfCoef{0.0f, 0.0f, 0.0f, 1.0f, r}; }
    void settle();  // applies pending_ to e_ (the same residual, stored as such)

    ServerConfig cfg_;
    size_t frame_bound_ = 0;
    Context cx_;            // first: the buffers below are freed through its allocator
    FloatBuf acc_, e_, q_;  // round accumulator, residual e_s, scratch (q or a tile, next acc)
    MagnitudeBound bound_;  // of e_s, for one-pass rounds
    // A one-block round in one pass stores q in e_ and leaves its scale here:
    // e_s is e_ - sign(e_) pending_ (fused_scaled_sign_deferred).
    float pending_ = 0.0f;
    Scalars s_;
};

}  // namespace gw
