// Scalar kernels: plain C++, no -m flags (the portable fallback, and the
// reference order every vector target reproduces bit for bit).
#include "kernels/tables.hpp"
#include "kernels/make_table.hpp"

namespace gw::kern {

extern const Table table_scalar = make_table<ScalarArch>(GW_SIMD_SCALAR);

}  // namespace gw::kern
