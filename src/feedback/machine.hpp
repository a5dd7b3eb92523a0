// The skeleton every error-feedback state machine is built on: the step clock
// (step counter, previous learning rate, the residual rescale r = lr_{t-1} /
// lr_t), the checkpoint fields they contribute, and the rule that a failing
// call changes nothing. Checkpoints themselves come from the machine's one
// field list (feedback/state_blob.hpp); multi-message protocols add a phase
// to their scalars and answer out-of-order calls with GW_ERR_SEQUENCE.
#pragma once

#include <cmath>
#include <cstdint>

#include "codecs/codec.hpp"
#include "gradwire_types.h"

namespace gw {

// Field ids in checkpoint blobs: configuration 1..31, scalars 32..63,
// vectors 64 and up. Ids are per machine kind and never reused.
enum : uint16_t { kFieldClockStep = 32, kFieldClockLr = 33 };

struct Clock {
    uint64_t step = 0;     // steps completed
    float lr_prev = 0.0f;  // lr_{t-1}, 0 before the first step

    // Validate this step's lr and compute r (0 when no residual is kept).
    // GW_ERR_OVERFLOW when lr_prev / lr is not representable.
    gw_status rescale(float lr, bool error_feedback, float* r) const {
        if (!(std::isfinite(lr) && lr > 0.0f)) return GW_ERR_INVALID_ARGUMENT;
        if (!error_feedback) {
            *r = 0.0f;
            return GW_OK;
        }
        const float q = lr_prev / lr;
        if (!std::isfinite(q)) return GW_ERR_OVERFLOW;
        *r = q;
        return GW_OK;
    }
    void advance(float lr) {
        lr_prev = lr;
        ++step;
    }
    template <class V> void fields(V& v) {
        v.scalar(kFieldClockStep, step);
        v.scalar(kFieldClockLr, lr_prev);
    }
    bool valid() const { return std::isfinite(lr_prev) && lr_prev >= 0.0f; }
};

// A codec in a checkpoint: its id (u8) then its parameters' wire form, as
// two consecutive configuration fields.
template <class V>
void codec_fields(V& v, uint16_t id_field, uint16_t params_field, const CodecParams& c) {
    uint8_t params[kMaxParams * 8];
    write_params(c, params);
    v.config(id_field, static_cast<uint8_t>(c.codec->id));
    v.config_bytes(params_field, params, params_wire_size(*c.codec));
}

}  // namespace gw
