// Family "accumulate": axpy, acc += alpha * x over a float payload at any
// byte alignment. Scalar code, vector body, table entries.
#pragma once

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Accumulate;  // vector body below; Accumulate<ScalarArch> is the scalar code

template <>
struct Accumulate<ScalarArch> {
    static void axpy_range(float alpha, const unsigned char* x, float* acc, size_t i0, size_t n) {
        for (size_t i = i0; i < n; ++i) {
            const float t = alpha * load_f32(x + 4 * i);
            acc[i] = acc[i] + t;
        }
    }
    static void axpy(float alpha, const void* x, float* acc, size_t n) {
        axpy_range(alpha, cbytes(x), acc, 0, n);
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct Accumulate : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = Accumulate<ScalarArch>;
    using typename B::F;
    using B::elementwise;
    using B::loadf;
    using B::loadf_bytes;
    using B::store_head;

    static void axpy(float alpha, const void* x, float* acc, size_t n) {
        const unsigned char* xb = cbytes(x);
        const F va(alpha);
        const size_t h = store_head(acc, n);
        S::axpy_range(alpha, xb, acc, 0, h);
        const size_t i = h + elementwise(n - h, [&](size_t j) {
            const F t = va * loadf_bytes(xb + 4 * (h + j));
            (loadf(acc + h + j) + t).store_unaligned(acc + h + j);
        });
        S::axpy_range(alpha, xb, acc, i, n);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void accumulate_entries(Table& t) {
    t.axpy = &Accumulate<Arch>::axpy;
}

}  // namespace
}  // namespace gw::kern
