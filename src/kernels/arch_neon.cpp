// NEON kernels (AArch64 Advanced SIMD): this file instantiates the kernel
// families (make_table.hpp) for xsimd::neon64. NEON is part of the AArch64
// base architecture, so no extra flags are needed (see meson.build); it is
// compiled only when the host CPU family is aarch64. Anywhere else (another
// compiler mode, a big-endian AArch64 build) the table is empty and dispatch
// reports the target as unsupported.
#include "kernels/tables.hpp"

#if defined(__aarch64__) && defined(__ARM_NEON) && defined(__ARM_FP) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define GW_KERN_XSIMD gw_kern_xsimd_neon64
#include "kernels/make_table.hpp"

namespace gw::kern {
extern const Table table_neon = make_table<xsimd::neon64>(GW_SIMD_NEON);
}  // namespace gw::kern

#else

namespace gw::kern {
extern const Table table_neon = empty_table(GW_SIMD_NEON);
}  // namespace gw::kern

#endif
