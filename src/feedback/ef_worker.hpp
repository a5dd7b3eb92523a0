// Worker side of dist-EF-SGD / dist-EF-blockSGDM (docs/algorithms.md s.2-3)
// and the signum baseline's worker momentum, as one state machine:
//   NONE:      p = g + r e
//   NESTEROV:  m = mu m + g;        p = mu m + g + r e      (Algorithm 4)
//   SIGNUM:    m = mu m + (1-mu) g; p = m + r e
//   D = C(p) is sent; e = p - D is kept (if error feedback is on);
//   r = lr_{t-1} / lr_t with lr_{-1} = 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "feedback/fused_sign.hpp"
#include "feedback/machine.hpp"
#include "feedback/state_blob.hpp"
#include "kernels/kernels.hpp"
#include "util/buffer.hpp"

namespace gw {

struct WorkerConfig {
    uint64_t n = 0;
    CodecParams codec;
    gw_momentum momentum = GW_MOMENTUM_NESTEROV;
    float mu = 0.0f;
    bool error_feedback = true;
    uint32_t tensor = 0;
    uint64_t seed = 0;
};

class EfWorker {
  public:
    static constexpr blob::Kind kBlobKind = blob::kWorker;

    // Allocates every buffer; the config was validated by the caller.
    gw_status init(const Backend& backend, const WorkerConfig& c);
    // The kernels and allocator it was created with.
    const Context& context() const { return cx_; }

    size_t frame_bound() const { return frame_bound_; }
    // grad is float32, or f16/bf16 bits when dtype says so (converted first).
    gw_status step(const void* grad, gw_dtype dtype, float lr, void* frame, size_t capacity,
                   size_t* written);
    void residual(float* out) const;
    void momentum(float* out) const;
    const WorkerConfig& config() const { return cfg_; }
    uint64_t steps() const { return clock_.step; }

    // Checkpoints (feedback/state_blob.hpp).
    using Scalars = Clock;
    Scalars scalars() const { return clock_; }
    bool scalars_valid(const Scalars& s) const { return s.valid(); }
    void set_scalars(const Scalars& s) {  // the last act of a load, which replaced m and e
        clock_ = s;
        bound_.known = false;
        pending_ = 0.0f;
    }
    template <class V> void fields(V& v, Scalars& s);

  private:
    gw_status step_codec(const float* g, const float* m, const float* e, const kern::EfCoef& k,
                         void* frame, size_t capacity, size_t* written);
    gw_status step_scaled_sign(const float* g, const float* m, const float* e,
                               const kern::EfCoef& k, void* frame, size_t* written);
    void settle();  // applies pending_ to e_ (the same residual, stored as such)

    WorkerConfig cfg_;
    size_t frame_bound_ = 0;
    Context cx_;          // first: the buffers below are freed through its allocator
    FloatBuf m_, e_, p_;  // momentum, residual, p (not for the fused scaled sign)
    MagnitudeBound bound_;  // of m_ and e_, for one-pass steps
    // One block per tensor in one pass stores p in e_ and leaves its scale
    // here: the residual is e_ - sign(e_) pending_ (fused_scaled_sign_deferred).
    float pending_ = 0.0f;
    Clock clock_;
};

}  // namespace gw
