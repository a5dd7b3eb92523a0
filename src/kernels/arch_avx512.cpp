// AVX-512 (F/CD/DQ/BW/VL) kernels: this file alone is compiled with
// -mavx512f -mavx512cd -mavx512dq -mavx512bw -mavx512vl (see meson.build);
// it only instantiates the kernel families (make_table.hpp) for xsimd::avx512bw.
// Without those flags (another compiler or CPU family) the table is empty
// and dispatch reports the target as unsupported.
#include "kernels/tables.hpp"

#if defined(__AVX512F__) && defined(__AVX512CD__) && defined(__AVX512DQ__) && \
    defined(__AVX512BW__) && defined(__AVX512VL__) && defined(__x86_64__)
#define GW_KERN_XSIMD gw_kern_xsimd_avx512
#include "kernels/make_table.hpp"

namespace gw::kern {
extern const Table table_avx512 = make_table<xsimd::avx512bw>(GW_SIMD_AVX512);
}  // namespace gw::kern

#else

namespace gw::kern {
extern const Table table_avx512 = empty_table(GW_SIMD_AVX512);
}  // namespace gw::kern

#endif
