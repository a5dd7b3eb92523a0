// AVX2 kernels: this file alone is compiled with -mavx2 (see meson.build);
// it only instantiates the kernel families (make_table.hpp) for xsimd::avx2.
// Without those flags (another compiler or CPU family) the table is empty
// and dispatch reports the target as unsupported.
#include "kernels/tables.hpp"

#if defined(__AVX2__) && defined(__x86_64__)
#define GW_KERN_XSIMD gw_kern_xsimd_avx2
#include "kernels/make_table.hpp"

namespace gw::kern {
extern const Table table_avx2 = make_table<xsimd::avx2>(GW_SIMD_AVX2);
}  // namespace gw::kern

#else

namespace gw::kern {
extern const Table table_avx2 = empty_table(GW_SIMD_AVX2);
}  // namespace gw::kern

#endif
