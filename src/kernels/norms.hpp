// Family "norms": sum_abs, sum_sq (double sums in the fixed 16-lane order of
// kernels.hpp), all_finite and all_kept. Scalar code, vector body, table entries.
#pragma once

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Norms;  // vector body below; Norms<ScalarArch> is the scalar code

template <>
struct Norms<ScalarArch> {
    // Lane order of kernels.hpp: element i -> lane i % 16, then fold.
    // Written as four fixed steps (l is left as it was) so that the compiler
    // keeps them in registers: the loop form went through memory, a third of
    // a 64-element block's time in ef_sign_blocks.
    static double fold16(const double* l) {
        double a[8], b[4];
        for (size_t j = 0; j < 8; ++j) a[j] = l[j] + l[j + 8];
        for (size_t j = 0; j < 4; ++j) b[j] = a[j] + a[j + 4];
        return (b[0] + b[2]) + (b[1] + b[3]);
    }
    // i0 must be a multiple of 16 (lane i0 % 16 == 0).
    static void sum_abs_range(const float* x, size_t i0, size_t n, double* lanes) {
        for (size_t i = i0; i < n; ++i)
            lanes[i & 15] += double(float_of(bits_of(x[i]) & 0x7FFFFFFFu));  // |x|
    }
    static void sum_sq_range(const float* x, size_t i0, size_t n, double* lanes) {
        for (size_t i = i0; i < n; ++i) {
            const double d = double(x[i]);
            lanes[i & 15] += d * d;
        }
    }
    static void sum_abs_lanes(const float* x, size_t n, double* lanes) {
        sum_abs_range(x, 0, n, lanes);
    }
    static double sum_abs(const float* x, size_t n) {
        double lanes[16] = {};
        sum_abs_range(x, 0, n, lanes);
        return fold16(lanes);
    }
    static double sum_sq(const float* x, size_t n) {
        double lanes[16] = {};
        sum_sq_range(x, 0, n, lanes);
        return fold16(lanes);
    }

    // (bits & expmask) + expunit sets the top bit iff the exponent is all ones.
    static bool all_finite_range(const float* x, size_t i0, size_t n) {
        uint32_t bad = 0;
        for (size_t i = i0; i < n; ++i) bad |= ((bits_of(x[i]) & 0x7F800000u) + 0x00800000u);
        return (bad & 0x80000000u) == 0;
    }
    static bool all_finite(const float* x, size_t n) {
        constexpr size_t kChunk = 4096;
        for (size_t i = 0; i < n; i += kChunk)
            if (!all_finite_range(x, i, (n - i > kChunk) ? i + kChunk : n)) return false;
        return true;
    }

    // On |x|'s bits a, "finite, nonzero, |x| >= min_mag" is one range:
    // lo <= a <= 0x7F7FFFFF with lo = max(bits of min_mag, 1).
    static uint32_t kept_lo(float min_mag) {
        const uint32_t m = bits_of(min_mag) & 0x7FFFFFFFu;
        return m > 1 ? m : 1;
    }
    static bool all_kept_range(const unsigned char* p, size_t i0, size_t n, uint32_t lo) {
        uint32_t bad = 0;
        for (size_t i = i0; i < n; ++i) {
            const uint32_t a = bits_of(load_f32(p + 4 * i)) & 0x7FFFFFFFu;
            bad |= uint32_t(a < lo) | uint32_t(a > 0x7F7FFFFFu);
        }
        return bad == 0;
    }
    static bool all_kept(const void* in, size_t n, float min_mag) {
        return all_kept_range(cbytes(in), 0, n, kept_lo(min_mag));
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct Norms : VecBase<Arch> {
    using B = VecBase<Arch>;
    using S = Norms<ScalarArch>;
    using typename B::D;
    using typename B::F;
    using typename B::I;
    using typename B::O;
    using B::loadf;
    using B::W;

    // 16 double lanes held in 16 / D::size accumulators, continuing `lanes`.
    template <bool Square>
    static void sum_lanes(const float* x, size_t n, double* lanes) {
        const size_t i = B::template add_lanes16<Square>(n, lanes, [&](size_t j) {
            const F v = loadf(x + j);
            if constexpr (Square) return v;
            else return F(xsimd::abs(v));
        }, x);
        if constexpr (Square)
            S::sum_sq_range(x, i, n, lanes);
        else
            S::sum_abs_range(x, i, n, lanes);
    }
    template <bool Square>
    static double sum_impl(const float* x, size_t n) {
        alignas(64) double lanes[16] = {};
        sum_lanes<Square>(x, n, lanes);
        return S::fold16(lanes);
    }
    static void sum_abs_lanes(const float* x, size_t n, double* lanes) {
        sum_lanes<false>(x, n, lanes);
    }
    static double sum_abs(const float* x, size_t n) { return sum_impl<false>(x, n); }
    static double sum_sq(const float* x, size_t n) { return sum_impl<true>(x, n); }

    static bool all_finite(const float* x, size_t n) {
        const I expm(0x7F800000), unit(0x00800000), zero(0);
        size_t i = 0;
        while (n - i >= 4 * W) {
            const size_t stop = (n - i > 4096) ? i + 4096 : n;
            I bad(0);
            for (; i + 4 * W <= stop; i += 4 * W) {
                B::prefetch_ahead(x, i, 4 * W);
                unroll<4>([&](auto kk) {
                    const I b = xsimd::bitwise_cast<I>(loadf(x + i + decltype(kk)::value * W));
                    bad = bad | ((b & expm) + unit);
                });
            }
            if (xsimd::any(bad < zero)) return false;
        }
        return S::all_finite_range(x, i, n);
    }
    // A sparse payload's values, checked before a decode: a - lo, unsigned,
    // is at most 0x7F7FFFFF - lo exactly in the kept range (one compare, with
    // the sign flipped to compare unsigned in signed lanes).
    static bool all_kept(const void* in, size_t n, float min_mag) {
        const unsigned char* p = cbytes(in);
        const uint32_t lo = S::kept_lo(min_mag);
        const I vlo = I(int32_t(lo)), absm(0x7FFFFFFF), flip(INT32_MIN);
        const I lim(int32_t((0x7F7FFFFFu - lo) ^ 0x80000000u));
        auto bad = I(0) != I(0);
        size_t i = 0;
        for (; i + 2 * W <= n; i += 2 * W) {
            unroll<2>([&](auto kk) {
                const F v = F::load_unaligned(
                    reinterpret_cast<const float*>(p + 4 * (i + decltype(kk)::value * W)));
                const I a = xsimd::bitwise_cast<I>(v) & absm;
                bad = bad || (((a - vlo) ^ flip) > lim);
            });
        }
        return !xsimd::any(bad) && S::all_kept_range(p, i, n, lo);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void norms_entries(Table& t) {
    using K = Norms<Arch>;
    t.sum_abs = &K::sum_abs;
    t.sum_abs_lanes = &K::sum_abs_lanes;
    t.sum_sq = &K::sum_sq;
    t.all_finite = &K::all_finite;
    t.all_kept = &K::all_kept;
}

}  // namespace
}  // namespace gw::kern
