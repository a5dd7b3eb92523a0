// Index sets as the sparse protocols use them (docs/c-api.md, "Sparse
// codecs" and "ScaleCom"): strictly increasing uint32 positions into a
// vector, the raw-value path around an all-reduce (gather, scatter-add) and
// the overlap diagnostic between two sets. Pure functions; the C API checks
// its arguments with the predicates before calling the rest.
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

// out[j] = x[idx[j]].
void gather(const float* x, const uint32_t* idx, size_t k, float* out);
// acc[idx[j]] += alpha * values[j], with decode_accumulate's arithmetic
// (the product rounded to float, then added).
void scatter_add(const float* values, const uint32_t* idx, size_t k, float alpha, float* acc);

}  // namespace gw::index
