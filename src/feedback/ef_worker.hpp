// Worker side of dist-EF-SGD / dist-EF-blockSGDM (ALGORITHMS.md s.2-3) and
// the signum baseline's worker momentum, as one state machine:
//   NONE:      p = g + r e
//   NESTEROV:  m = mu m + g;        p = mu m + g + r e      (Algorithm 4)
//   SIGNUM:    m = mu m + (1-mu) g; p = m + r e
//   D = C(p) is sent; e = p - D is kept (if error feedback is on);
//   r = lr_{t-1} / lr_t with lr_{-1} = 0.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "gradwire.h"
#include "util/buffer.hpp"

struct gw_worker {
    struct Config {
        uint64_t n = 0;
        gw::CodecParams codec;
        gw_momentum momentum = GW_MOMENTUM_NESTEROV;
        float mu = 0.0f;
        bool error_feedback = true;
    };

    // Validates options; returns the new handle in *out.
    static gw_status create(const gw_worker_options& opts, gw_worker** out);

    size_t frame_bound() const { return frame_bound_; }
    gw_status step(const float* grad, float lr, void* frame, size_t capacity, size_t* written);
    void residual(float* out) const;
    void momentum(float* out) const;
    size_t save_bound() const;
    size_t save(void* blob) const;  // caller checked capacity >= save_bound()
    gw_status load(const void* blob, size_t size);
    const Config& config() const { return cfg_; }

  private:
    Config cfg_;
    size_t frame_bound_ = 0;
    gw::FloatBuf m_, e_, p_;  // momentum, residual, scratch for p
    float lr_prev_ = 0.0f;
    uint64_t step_ = 0;
};
