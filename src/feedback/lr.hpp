// Learning-rate bookkeeping shared by worker and server error feedback.
#pragma once

#include <cmath>

namespace gw {

// A step's learning rate must be finite and positive: it divides the
// previous one in the residual rescale r = lr_{t-1} / lr_t.
inline bool valid_lr(float lr) { return std::isfinite(lr) && lr > 0.0f; }

// r_t = lr_{t-1} / lr_t, or 0 when the residual is not kept.
inline float residual_rescale(bool error_feedback, float lr_prev, float lr) {
    return error_feedback ? lr_prev / lr : 0.0f;
}

}  // namespace gw
