// Server side of dist-EF-SGD / dist-EF-blockSGDM (ALGORITHMS.md s.2-3):
//   q = (1/M) sum_i D_i + r e_s;   broadcast D = C(q);   e_s = q - D
// A server may own a slice [offset, offset+length) of a tensor, so that M
// servers (one per worker) each reduce 1/M of it: reduce-scatter, then
// all-gather of the broadcast frames. With error feedback off and the sign
// codec it is signSGD's majority vote: sign(sum_i sign(g_i)).
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "gradwire.h"
#include "util/buffer.hpp"

struct gw_server {
    struct Config {
        uint64_t total = 0, offset = 0, length = 0;
        uint32_t workers = 1;
        gw::CodecParams codec;
        bool error_feedback = true;
    };

    static gw_status create(const gw_server_options& opts, gw_server** out);

    size_t frame_bound() const { return frame_bound_; }
    // acc += (1/M) * decode(frame); the frame must hold `length` elements.
    gw_status push(const void* frame, size_t size);
    gw_status step(float lr, void* frame, size_t capacity, size_t* written);
    void reset_round() { pushes_ = 0; }
    void residual(float* out) const;
    size_t save_bound() const;
    size_t save(void* blob) const;
    gw_status load(const void* blob, size_t size);
    const Config& config() const { return cfg_; }

  private:
    Config cfg_;
    size_t frame_bound_ = 0;
    gw::FloatBuf acc_, e_, q_;  // round accumulator, residual e_s, scratch for q
    uint32_t pushes_ = 0;
    float lr_prev_ = 0.0f;
    uint64_t step_ = 0;
};
