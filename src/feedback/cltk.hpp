// ScaleCom's CLT-k with low-pass filtered memory (docs/algorithms.md s.4),
// per tensor, on worker `rank` of M:
//
//   begin    a = m + lr * g
//   select   (the leader j = t mod M, or an override) I = chunk-wise top-k
//            of its a, sent as an index frame (the index codec)
//   extract  s = a[I]: k raw floats, in index order on every worker, that the
//            transport sums with an ordinary all-reduce
//   apply    x[I] -= sum / M;  m = (1 - beta) m + beta (a - scatter(s, I))
//
// Phases (Phase, feedback/machine.hpp): idle -begin-> begun -select (the
// leader only)-> selected -extract-> extracted -apply-> idle; a worker that
// does not lead the round (or any worker in a dense round) extracts from
// begun. A call out of order returns GW_ERR_SEQUENCE before any other check
// and changes nothing; reset_round abandons a round (a transport failure). The
// first `warmup` rounds are dense (no leader, no index frame: s = a whole).
// beta = 1 is plain error feedback (m = a - scatter(s, I), bit for bit).
// Checkpoints are taken between rounds (GW_ERR_SEQUENCE mid-round: the round
// holds a and I, which the next begin recomputes anyway); loading ends any
// round in progress.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "codecs/codec.hpp"
#include "feedback/machine.hpp"
#include "feedback/state_blob.hpp"
#include "util/buffer.hpp"
#include "util/scratch.hpp"

namespace gw {

constexpr uint32_t kCltkCyclic = 0xFFFFFFFFu;  // no override: leader = t mod M

struct CltkConfig {
    uint64_t n = 0;
    uint32_t workers = 1;
    uint32_t rank = 0;
    float beta = 1.0f;
    uint64_t warmup = 0;
    uint32_t tensor = 0;
    CodecParams index;  // the index codec: k / density and chunk size
};

class Cltk {
  public:
    static constexpr blob::Kind kBlobKind = blob::kCltk;
    // The calls a round is made of, for sequence().
    enum class Call : uint8_t { kBegin, kSelect, kExtract, kApply, kSetLeader, kSave };

    gw_status init(const Backend& backend, const CltkConfig& c);

    // The kernels and allocator it was created with.

    const Context& context() const { return cx_; }

    size_t index_frame_bound() const { return frame_bound_; }
    // Length of the largest value buffer (k, or n with dense warm-up rounds).
    uint64_t values_bound() const;
    // The leader of the current round; kCltkCyclic during a dense warm-up round.
    uint32_t leader() const;
    gw_status set_leader(uint32_t leader);  // a rank, or kCltkCyclic
    // GW_OK if `c` may come now, else GW_ERR_SEQUENCE: every call checks it
    // first, and the C layer before it checks the call's arguments.
    gw_status sequence(Call c) const;

    gw_status begin(const void* grad, gw_dtype dtype, float lr);
    gw_status select(void* frame, size_t capacity, size_t* written);
    // frame may be null (size 0) only in a dense round.
    gw_status extract(const void* frame, size_t size, float* values, uint64_t capacity,
                      uint64_t* count);
    // x may be null: only the memory is updated (the caller applies the sum).
    gw_status apply(const float* summed, uint64_t count, float* x);
    void reset_round() { phase_.to(kIdle); }

    uint64_t steps() const { return s_.step; }
    const CltkConfig& config() const { return cfg_; }
    void memory(float* out) const;
    // The indices of the last extracted round (all n in a dense round).
    uint64_t index_count() const { return count_; }
    void indices(uint32_t* out) const;
    bool between_rounds() const { return sequence(Call::kSave) == GW_OK; }

    // Checkpoints (feedback/state_blob.hpp).
    struct Scalars {
        uint64_t step = 0;
        uint32_t leader = kCltkCyclic;  // the override
    };
    Scalars scalars() const { return s_; }
    bool scalars_valid(const Scalars& s) const {
        return s.leader == kCltkCyclic || s.leader < cfg_.workers;
    }
    void set_scalars(const Scalars& s) {
        s_ = s;
        phase_.to(kIdle);
    }
    template <class V> void fields(V& v, Scalars& s);

  private:
    enum State : uint8_t { kIdle, kBegun, kSelected, kExtracted };  // not saved
    bool dense_round() const { return s_.step < cfg_.warmup; }
    bool leads() const { return leader() == cfg_.rank; }  // never in a dense round

    CltkConfig cfg_;
    size_t frame_bound_ = 0;
    uint64_t kmax_ = 0;
    Context cx_;             // first: the buffers below are freed through its allocator
    FloatBuf m_, a_;         // memory; this round's accumulator
    Buf<uint32_t> idx_;      // this round's indices (kmax_)
    uint64_t count_ = 0;     // entries this round (n when dense)
    bool dense_ = false;     // the extracted round was dense
    Phase<State> phase_{kIdle};
    Scalars s_;
};

// ScaleCom's per-layer rate guidance from a layer's FLOPs per gradient
// element (at the paper's per-worker batch): 400x up to 128, 50x below 196,
// 25x from 196 up; 0 for a ratio that is not finite and positive.
uint32_t scalecom_rate(double flops_per_gradient);

}  // namespace gw
