// Plain scalar reference for every kernel of src/kernels/kernels.hpp, one
// header per kernel family (tests/kernels/ref_<family>.hpp), written straight
// from the semantics stated there (and docs/algorithms.md section 1 for sign(0) =
// +1). Simple loops, no tricks, and deliberately independent of the kernel
// code in src/kernels: the half/bfloat16 conversions go through double
// arithmetic (frexp/ldexp/nearbyint) instead of bit manipulation, and CRC32C
// is the bit-at-a-time definition, so kernel and reference check each other.
// The kernel tests include the family headers they need; this header is for
// the other suites (ref_algorithms.hpp, the codec and feedback tests).
#pragma once

#include "kernels/ref_accumulate.hpp"
#include "kernels/ref_copy_crc.hpp"
#include "kernels/ref_crc.hpp"
#include "kernels/ref_ef.hpp"
#include "kernels/ref_half.hpp"
#include "kernels/ref_norms.hpp"
#include "kernels/ref_scatter.hpp"
#include "kernels/ref_sign.hpp"
