// Internal: the per-target kernel tables defined by src/kernels/arch_*.cpp.
// Each arch file always defines its table; when the compiler could not build
// that target (its -m flags were missing) the table holds only `target` and
// null function pointers, and dispatch treats it as not compiled in.
#pragma once

#include "kernels/kernels.hpp"

namespace gw::kern {

// The arch files meson.build compiles depend on the host CPU family: the
// scalar one always, the x86 ones on x86, the NEON one on AArch64.
#if defined(__x86_64__) || defined(__i386__)
#define GW_KERN_X86_TABLES 1
#endif
#if defined(__aarch64__)
#define GW_KERN_NEON_TABLE 1
#endif

extern const Table table_scalar;
#if defined(GW_KERN_X86_TABLES)
extern const Table table_sse2;
extern const Table table_sse4_2;
extern const Table table_avx2;
extern const Table table_avx512;
#endif
#if defined(GW_KERN_NEON_TABLE)
extern const Table table_neon;
#endif

// A table with no kernels, for a target this build could not compile.
constexpr Table empty_table(gw_simd_target target) {
    Table t{};
    t.target = target;
    return t;
}

// True if the table's kernels were compiled in (says nothing about the CPU).
constexpr bool compiled_in(const Table& t) { return t.sum_abs != nullptr; }

}  // namespace gw::kern
