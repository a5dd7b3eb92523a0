// The kernel table of one target, assembled from the family headers. Included
// only by src/kernels/arch_*.cpp, each compiled with its own -m flags (see
// common.hpp for why everything here is in an anonymous namespace and xsimd
// is wrapped per arch file). A new family is one header holding its scalar
// code, its vector body and its *_entries function, plus one line here.
#pragma once

#include "kernels/accumulate.hpp"
#include "kernels/common.hpp"
#include "kernels/copy_crc.hpp"
#include "kernels/crc.hpp"
#include "kernels/ef.hpp"
#include "kernels/ef_sign.hpp"
#include "kernels/half.hpp"
#include "kernels/norms.hpp"
#include "kernels/quantize.hpp"
#include "kernels/scatter.hpp"
#include "kernels/select.hpp"
#include "kernels/sign.hpp"
#include "kernels/sparsify.hpp"
#include "kernels/threshold.hpp"

namespace gw::kern {
namespace {

// Arch: ScalarArch, or an xsimd arch when GW_KERN_XSIMD is defined.
template <class Arch>
constexpr Table make_table(gw_simd_target target) {
    Table t{};
    t.target = target;
    norms_entries<Arch>(t);
    ef_entries<Arch>(t);
    ef_sign_entries<Arch>(t);
    sign_entries<Arch>(t);
    accumulate_entries<Arch>(t);
    half_entries<Arch>(t);
    crc_entries<Arch>(t);
    copy_crc_entries<Arch>(t);
    select_entries<Arch>(t);
    threshold_entries<Arch>(t);
    quantize_entries<Arch>(t);
    sparsify_entries<Arch>(t);
    scatter_entries<Arch>(t);
    return t;
}

}  // namespace
}  // namespace gw::kern
