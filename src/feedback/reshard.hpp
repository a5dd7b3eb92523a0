// Re-sharding checkpoints from M workers to M' (docs/algorithms.md s.9,
// docs/wire-format.md "Re-sharding"). Works on blobs alone: every field of a
// state blob names itself, so no handle is needed.
//
//   worker residual e, momentum m, LAGS residual eps, CLT-k memory m:
//       every new worker holds the mean over the M old ones (in rank order,
//       summed in double): (1/M') sum_j v'_j = (1/M) sum_i v_i, the mass the
//       averaged update owes, to float rounding.
//   server slice residual e_s (already in the averaged domain): cut and
//       joined at the new slice bounds, bit for bit.
//   step, lr_prev, k_l, codec, seed: carried (must agree across the parts).
//   CLT-k: M and rank rewritten; a leader override >= M' falls back to cyclic.
//   AsyLPG master: carried as is (it does not depend on M); AsyLPG worker:
//       rank r < M keeps its own blob, a new rank starts from a fresh handle.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gradwire_types.h"
#include "kernels/kernels.hpp"

namespace gw::reshard {

struct Part {
    const void* blob;
    size_t size;
    uint32_t rank;    // the old worker the blob is from
    uint64_t offset;  // where a worker blob's vectors start in the tensor
};

struct Target {
    uint32_t workers_in, workers_out, rank_out;
    uint64_t offset, length;  // the new blob's range of the tensor
};

// Builds the blob of target.rank_out. *written is its size (0: a new
// AsyLPG worker, nothing to carry); GW_ERR_BUFFER_TOO_SMALL leaves the
// needed size in *written. Arguments are checked by the caller.
gw_status build(const kern::Table& kt, const Part* parts, size_t count, const Target& t, void* out,
                size_t capacity, size_t* written);

}  // namespace gw::reshard
