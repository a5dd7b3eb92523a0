// LAGS-SGD's per-layer state machine (docs/algorithms.md s.7), one handle
// per layer, driven as each layer's gradient becomes ready in backward order:
//
//   acc = eps + lr * g;  frame = TopK(acc, k_l);  eps = acc - decoded
//
// The learning rate is inside the residual (unlike the worker of s.2-3), and
// the caller applies v -= (1/P) sum_p decoded_p (gw_decode_accumulate with
// alpha = -1/P). k_l changes between steps (the adaptive ratio of eq. 19);
// frames are sized for k_l = n. A layer the planner sends dense takes
// step_dense: out = acc (raw floats for an all-reduce), eps = 0. Handles of
// different layers share nothing, so backward threads may drive them at once.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "feedback/machine.hpp"
#include "feedback/state_blob.hpp"
#include "util/buffer.hpp"

namespace gw {

struct LagsLayerConfig {
    uint64_t n = 0;
    uint32_t tensor = 0;
    uint64_t seed = 0;
    CodecParams codec;  // a codec taking GW_PARAM_K; its k is the first k_l
};

class LagsLayer {
  public:
    static constexpr blob::Kind kBlobKind = blob::kLags;

    gw_status init(const Backend& backend, const LagsLayerConfig& c);

    // The kernels and allocator it was created with.

    const Context& context() const { return cx_; }
    size_t frame_bound() const { return frame_bound_; }
    gw_status set_k(uint64_t k);  // 1..n
    uint64_t k() const { return s_.k; }
    gw_status step(const void* grad, gw_dtype dtype, float lr, void* frame, size_t capacity,
                   size_t* written);
    gw_status step_dense(const void* grad, gw_dtype dtype, float lr, float* out);
    void residual(float* out) const;
    uint64_t steps() const { return s_.clock.step; }
    const LagsLayerConfig& config() const { return cfg_; }

    struct Scalars {
        Clock clock;
        uint64_t k = 0;
    };
    Scalars scalars() const { return s_; }
    bool scalars_valid(const Scalars& s) const {
        return s.clock.valid() && s.k >= 1 && s.k <= cfg_.n;
    }
    void set_scalars(const Scalars& s) { s_ = s; }
    template <class V> void fields(V& v, Scalars& s);

  private:
    // acc = eps + lr * g into acc_; GW_OK or the first error.
    gw_status accumulate(const void* grad, gw_dtype dtype, float lr);

    LagsLayerConfig cfg_;
    int k_slot_ = -1;
    size_t frame_bound_ = 0;
    Context cx_;  // first: the buffers below are freed through its allocator
    FloatBuf eps_, acc_;
    Scalars s_;
};

}  // namespace gw
