// SSE2 kernels: this file alone is compiled with -msse2 (see meson.build);
// it only instantiates the kernel families (make_table.hpp) for xsimd::sse2.
// Without those flags (another compiler or CPU family) the table is empty
// and dispatch reports the target as unsupported.
#include "kernels/tables.hpp"

#if defined(__SSE2__) && (defined(__x86_64__) || defined(__i386__))
#define GW_KERN_XSIMD gw_kern_xsimd_sse2
#include "kernels/make_table.hpp"

namespace gw::kern {
extern const Table table_sse2 = make_table<xsimd::sse2>(GW_SIMD_SSE2);
}  // namespace gw::kern

#else

namespace gw::kern {
extern const Table table_sse2 = empty_table(GW_SIMD_SSE2);
}  // namespace gw::kern

#endif
