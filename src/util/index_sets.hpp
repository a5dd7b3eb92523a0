// Index sets as the sparse protocols use them (docs/c-api.md, "Sparse
// codecs" and "ScaleCom"): strictly increasing uint32 positions into a
// vector, and the overlap diagnostic between two sets. The C API checks its
// arguments with the predicates; the gather and scatter-add around an
// all-reduce are kernels (src/kernels/scatter.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

namespace gw::index {

// idx[0..k) strictly increasing.
bool increasing(const uint32_t* idx, size_t k);
// idx[0..k) strictly increasing and below n.
bool valid(const uint32_t* idx, size_t k, uint64_t n);

// |A and B| / max(|A|, |B|) of two increasing sets, 1 when both are empty
// (a merge of the two lists).
double overlap(const uint32_t* a, size_t na, const uint32_t* b, size_t nb);

}  // namespace gw::index
