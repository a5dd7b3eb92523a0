// The skeleton every error-feedback state machine is built on: the step clock
// (step counter, previous learning rate, the residual rescale r = lr_{t-1} /
// lr_t), the checkpoint fields they contribute, and the rule that a failing
// call changes nothing. Checkpoints themselves come from the machine's one
// field list (feedback/state_blob.hpp); multi-message protocols keep a
// Phase and answer out-of-order calls with GW_ERR_SEQUENCE.
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
    // GW_ERR_OVERFLOW when lr_prev / lr is not representable, or when the
    // step counter is at its limit (see at_limit).
    gw_status rescale(float lr, bool error_feedback, float* r) const {
        if (!(std::isfinite(lr) && lr > 0.0f)) return GW_ERR_INVALID_ARGUMENT;
        if (at_limit()) return GW_ERR_OVERFLOW;
        if (!error_feedback) {
            *r = 0.0f;
            return GW_OK;
        }
        const float q = lr_prev / lr;
        if (!std::isfinite(q)) return GW_ERR_OVERFLOW;
        *r = q;
        return GW_OK;
    }
    // A loader takes any step count, so the step that would wrap it to 0 is
    // refused instead (GW_ERR_OVERFLOW, nothing changed): every counter a
    // machine holds stays one its loader accepts, and never goes backwards.
    bool at_limit() const { return step == UINT64_MAX; }
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

// The named phase of a multi-message protocol. E is an enum over uint8_t
// whose values are the phase's integer where a checkpoint saves it (never
// renumber those). A call checks its phase first, before anything about
// its arguments (only NULL pointers come earlier), and moves on only when
// it succeeds, so an out-of-order call is GW_ERR_SEQUENCE and changes
// nothing. A phase derived from a counter is made on the spot: Phase<E>(p).
template <class E>
class Phase {
    static_assert(sizeof(E) == 1, "a phase is saved as one byte");

  public:
    constexpr Phase(E p = E{}) : raw_(static_cast<uint8_t>(p)) {}
    E get() const { return static_cast<E>(raw_); }
    bool is(E p) const { return raw_ == static_cast<uint8_t>(p); }
    // GW_OK in any of the phases given, GW_ERR_SEQUENCE otherwise.
    template <class... More>
    gw_status expect(E p, More... more) const {
        return is(p) || (... || is(more)) ? GW_OK : GW_ERR_SEQUENCE;
    }
    void to(E p) { raw_ = static_cast<uint8_t>(p); }
    // The saved integer, for a checkpoint's field list; a loader checks it
    // with at_most() before it commits.
    uint8_t& raw() { return raw_; }
    bool at_most(E last) const { return raw_ <= static_cast<uint8_t>(last); }

  private:
    uint8_t raw_;
};

// A codec in a checkpoint: its id (u8) then its parameters' wire form, as
// two consecutive configuration fields.
template <class V>
void codec_fields(V& v, uint16_t id_field, uint16_t params_field, const CodecParams& c) {
    uint8_t params[kMaxParams * 8];
    write_params(c, params);
    v.config(id_field, static_cast<uint8_t>(c.codec->id));
    v.config_bytes(params_field, params, params_wire_size(c));
}

}  // namespace gw
