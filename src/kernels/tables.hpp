// Internal: the per-target kernel tables defined by src/kernels/arch_*.cpp.
// Each arch file always defines its table; when the compiler could not build
// that target (its -m flags were missing) the table holds only `target` and
// null function pointers, and dispatch treats it as not compiled in.
#pragma once

#include "kernels/kernels.hpp"

namespace gw::kern {

extern const Table table_scalar;
extern const Table table_sse2;
extern const Table table_sse4_2;
extern const Table table_avx2;
extern const Table table_avx512;

// A table with no kernels, for a target this build could not compile.
constexpr Table empty_table(gw_simd_target target) {
    Table t{};
    t.target = target;
    return t;
}

// True if the table's kernels were compiled in (says nothing about the CPU).
constexpr bool compiled_in(const Table& t) { return t.sum_abs != nullptr; }

}  // namespace gw::kern
