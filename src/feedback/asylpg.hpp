// Double quantization: the AsyLPG family's master and worker state machines
// (docs/algorithms.md s.6; Yu et al. 2019, Algorithms 1-3), over any transport.
//
// Master, per epoch s (1, 2, ...): the caller gathers the full gradient at the
// snapshot x~ and hands it to begin_epoch; then m inner updates, each from
// one worker frame zeta (the quantized alpha = grad_a(Q(x)) - grad_a(x~)):
//
//   u = zeta + full_grad
//   AsyLPG, Sparse-AsyLPG:  x = prox_{lr h}(x - lr u)                  (x_0 = x~)
//   Acc-AsyLPG:             y = prox_{lr_s h}(y - lr_s u); x = x~ + theta_s (y - x~)
//                           theta_s = 2/(s+2), lr_s = lr/theta_s, x_0 = x~ + theta_s (y - x~)
//   end of epoch:           x~ = x (AsyLPG) or the mean of the epoch's x (Acc)
//
// with h(x) = l1 ||x||_1 + l2/2 ||x||^2, prox_{c h}(v) = sign(v) max(|v| - c l1, 0) / (1 + c l2).
// Every update is a version; the model message for workers is Q_(delta_x, b_x)(x)
// with the smallest b_x in [bits_min, bits_max] meeting the mu-condition
// E||Q(x) - x||^2 <= mu' ||x - x~||^2 (mu' = mu, or theta_s mu for Acc),
// computed exactly before sampling (bits_max if none does); an empty frame
// (count 0) when x == x~; an identity frame when bits_max is 0 (full precision).
// Frames are tagged with the version. A gradient frame's tag is the version
// it was computed on: accepted if at most tau versions old (GW_ERR_STALE
// otherwise). Float arithmetic, in this order (no FMA):
//   u_i = zeta_i + g_i;  t = lr*u_i;  v = x_i - t;  x_i = prox(v)
//   prox(v): a = |v| - c*l1; a <= 0 ? 0 : copysign(a / (1 + c*l2), v)   (c*l1, 1 + c*l2 once)
//   Acc: y_i = prox(y_i - lr_s*u_i);  x_i = x~_i + theta*(y_i - x~_i)
//
// Worker: holds the snapshot (sent once per epoch in full precision) and the
// last model it received; step() returns the quantized gradient difference,
// tagged with the model's version. No residual: the AsyLPG quantizers are
// unbiased, nothing is carried between steps.
#pragma once

#include <cstddef>
#include <cstdint>

#include "codecs/codec.hpp"
#include "feedback/machine.hpp"
#include "feedback/state_blob.hpp"
#include "util/buffer.hpp"

namespace gw {

enum AsylpgVariant : uint8_t { kAsylpgPlain = 0, kAsylpgAcc = 1 };

// Phases (Phase, feedback/machine.hpp); the values are the integers saved in
// checkpoints (master field 35, worker field 37).
enum AsylpgMasterPhase : uint8_t { kAwaitFullGrad = 0, kInEpoch = 1 };
enum AsylpgWorkerPhase : uint8_t { kNoSnapshot = 0, kHasSnapshot = 1, kHasModel = 2 };

struct AsylpgMasterConfig {
    uint64_t n = 0;
    uint8_t variant = kAsylpgPlain;
    float lr = 0.0f, l1 = 0.0f, l2 = 0.0f, mu = 1.0f;
    uint64_t epoch_length = 0;  // m
    uint32_t tau = 0;
    uint8_t bits_min = 8, bits_max = 8;  // 0, 0: full-precision model messages
    uint32_t model_block = 0;            // block_size of the model quantizer
    uint32_t tensor = 0;
    uint64_t seed = 0;
    const float* x0 = nullptr;  // the initial model (also the first snapshot); read by init
};

class AsylpgMaster {
  public:
    static constexpr blob::Kind kBlobKind = blob::kAsylpgMaster;
    enum class Call : uint8_t { kBeginEpoch, kModel, kPush };
    // GW_OK if `c` may come now, else GW_ERR_SEQUENCE: every call checks it
    // first, and the C layer before it checks the call's arguments.
    gw_status sequence(Call c) const {
        return s_.phase.expect(c == Call::kBeginEpoch ? kAwaitFullGrad : kInEpoch);
    }

    gw_status init(const Backend& backend, const AsylpgMasterConfig& c);

    // The kernels and allocator it was created with.

    const Context& context() const { return cx_; }
    size_t frame_bound() const { return frame_bound_; }
    gw_status begin_epoch(const float* full_grad);
    gw_status model(void* frame, size_t capacity, size_t* written, unsigned* bits);
    gw_status push(const void* frame, size_t size);
    void params(float* out) const;
    void snapshot(float* out) const;
    const AsylpgMasterConfig& config() const { return cfg_; }

    // Smallest b in [lo, hi] with E||Q_b(x) - x||^2 <= bound (hi if none).
    static unsigned choose_bits(const kern::Table& kt, const float* x, uint64_t n, uint32_t block,
                                unsigned lo, unsigned hi, double bound);

    struct Scalars {
        uint64_t epoch = 1;    // s
        uint64_t inner = 0;    // updates done in this epoch
        uint64_t version = 0;  // updates done in all
        Phase<AsylpgMasterPhase> phase{kAwaitFullGrad};
    };
    Scalars scalars() const { return s_; }
    bool scalars_valid(const Scalars& s) const {
        return s.epoch >= 1 && s.phase.at_most(kInEpoch) && s.inner < cfg_.epoch_length &&
               (s.phase.is(kInEpoch) || s.inner == 0);
    }
    void set_scalars(const Scalars& s) { s_ = s; }
    template <class V> void fields(V& v, Scalars& s);
    float theta() const { return 2.0f / (static_cast<float>(s_.epoch) + 2.0f); }

  private:
    AsylpgMasterConfig cfg_;
    size_t frame_bound_ = 0;
    Context cx_;  // first: the buffers below are freed through its allocator
    FloatBuf x_, snap_, full_, y_, sum_, u_, nx_, ny_;
    Scalars s_;
};

struct AsylpgWorkerConfig {
    uint64_t n = 0;
    uint32_t tensor = 0;
    uint64_t seed = 0;
    CodecParams codec;  // the gradient message: quant, sparse_quant, identity, ...
};

class AsylpgWorker {
  public:
    static constexpr blob::Kind kBlobKind = blob::kAsylpgWorker;
    enum class Call : uint8_t { kReceive, kModel, kStep };
    // GW_OK if `c` may come now, else GW_ERR_SEQUENCE (as the master's).
    gw_status sequence(Call c) const {
        return c == Call::kReceive ? s_.state.expect(kHasSnapshot, kHasModel)
                                   : s_.state.expect(kHasModel);
    }

    gw_status init(const Backend& backend, const AsylpgWorkerConfig& c);

    // The kernels and allocator it was created with.

    const Context& context() const { return cx_; }
    size_t frame_bound() const { return frame_bound_; }
    gw_status set_snapshot(const float* snapshot);
    gw_status receive(const void* frame, size_t size);
    // The model received and its version (version may be null).
    gw_status model(float* out, uint64_t n, uint64_t* version) const;
    uint64_t version() const { return s_.version; }
    gw_status step(const void* grad_model, const void* grad_snapshot, gw_dtype dtype, void* frame,
                   size_t capacity, size_t* written);
    const AsylpgWorkerConfig& config() const { return cfg_; }

    struct Scalars {
        uint64_t steps = 0;
        uint64_t version = 0;
        Phase<AsylpgWorkerPhase> state{kNoSnapshot};
    };
    Scalars scalars() const { return s_; }
    bool scalars_valid(const Scalars& s) const { return s.state.at_most(kHasModel); }
    void set_scalars(const Scalars& s) { s_ = s; }
    template <class V> void fields(V& v, Scalars& s);

  private:
    bool inputs_finite(const void* grad_model, const void* grad_snapshot, gw_dtype dtype);

    AsylpgWorkerConfig cfg_;
    size_t frame_bound_ = 0;
    Context cx_;  // first: the buffers below are freed through its allocator
    FloatBuf snap_, model_, alpha_;
    Scalars s_;
};

}  // namespace gw
