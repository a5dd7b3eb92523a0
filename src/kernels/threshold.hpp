// Family "threshold": threshold_select, the indices of the elements with
// |x_i| >= t, in increasing order (threshold sparsification, and the
// selection pass of sampled top-k). The comparison is on the magnitude key
// bits(x) & 0x7FFFFFFF of select.hpp, which orders finite floats by |x|
// (-0 and +0 tie). The vector targets compare 4 vectors of keys at once and
// skip blocks without a hit (Select<Arch>::scan); hits are handed over in
// index order, so every target writes the same indices.
#pragma once

#include "kernels/common.hpp"
#include "kernels/select.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Threshold;

template <>
struct Threshold<ScalarArch> {
    // Elements [i0, n): appends hits to idx while below cap; returns the count.
    static size_t tail(const float* x, size_t i0, size_t n, uint32_t kt, uint32_t* idx,
                       size_t cap, size_t count) {
        for (size_t i = i0; i < n; ++i)
            if (topk_key(x[i]) >= kt) {
                if (count < cap) idx[count] = uint32_t(i);
                ++count;
            }
        return count;
    }
    static size_t threshold_select(const float* x, size_t n, float t, uint32_t* idx, size_t cap) {
        return tail(x, 0, n, topk_key(t), idx, cap, 0);
    }
};

#if defined(GW_KERN_XSIMD)
template <class Arch>
struct Threshold : VecBase<Arch> {
    using I = typename VecBase<Arch>::I;
    static size_t threshold_select(const float* x, size_t n, float t, uint32_t* idx, size_t cap) {
        const uint32_t kt = topk_key(t);
        // key >= kt as key > kt - 1: keys of finite floats are below 2^31, so
        // signed compares order them, and kt - 1 >= -1.
        const I below(static_cast<int32_t>(kt) - 1);
        size_t count = 0;
        if (cap == 0) {  // counting only: hits are popcounts, not calls
            using O = typename VecBase<Arch>::O;
            constexpr size_t W = VecBase<Arch>::W;
            size_t i = 0;
            for (; i + 4 * W <= n; i += 4 * W) {
                VecBase<Arch>::prefetch_ahead(x, i, 4 * W);
                uint64_t m = 0;
                unroll<4>([&](auto kk) {
                    constexpr size_t K = decltype(kk)::value;
                    m |= uint64_t(O::movemask_i(Select<Arch>::key_of(x + i + K * W) > below))
                         << (K * W);
                });
                count += size_t(__builtin_popcountll(m));
            }
            return Threshold<ScalarArch>::tail(x, i, n, kt, idx, cap, count);
        }
        bool stop = false;
        const size_t i = Select<Arch>::scan(
            x, n, [&](const I& key) { return key > below; },
            [&](size_t j) {
                if (count < cap) idx[count] = uint32_t(j);
                ++count;
                return false;
            },
            stop);
        return Threshold<ScalarArch>::tail(x, i, n, kt, idx, cap, count);
    }
};
#endif  // GW_KERN_XSIMD

template <class Arch>
constexpr void threshold_entries(Table& t) {
    t.threshold_select = &Threshold<Arch>::threshold_select;
}

}  // namespace
}  // namespace gw::kern
