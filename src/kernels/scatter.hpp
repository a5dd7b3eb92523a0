// Family "scatter": indexed loads and stores at k positions of an n-element
// vector (sparse exchanges: gw_gather / gw_scatter_add, CLT-k's extract and
// apply). The positions are strictly increasing, so no two writes meet and
// every element is written at most once; null positions mean 0..k-1 (CLT-k's
// dense rounds).
//
// One body for every target: each access is a cache miss of its own, so
// what pays is keeping misses in flight (a prefetch kAhead entries early),
// not vector registers. The family still sits in every target's table, so a
// backend whose memory is elsewhere (docs/kernels.md, "the backend seam")
// replaces it with the rest.
#pragma once

#include <cmath>

#include "kernels/common.hpp"

namespace gw::kern {
namespace {

template <class Arch>
struct Scatter {
    static constexpr size_t kAhead = 32;
    static size_t at(const uint32_t* idx, size_t j) { return idx ? idx[j] : j; }
    template <class T>
    static void ahead(const T* p, const uint32_t* idx, size_t j, size_t k, int rw) {
        if (idx && j + kAhead < k) {
            if (rw)
                __builtin_prefetch(p + idx[j + kAhead], 1);
            else
                __builtin_prefetch(p + idx[j + kAhead], 0);
        }
    }

    static void gather(const float* x, const uint32_t* idx, size_t k, float* out) {
        for (size_t j = 0; j < k; ++j) {
            ahead(x, idx, j, k, 0);
            out[j] = x[at(idx, j)];
        }
    }
    static void scatter_add(const float* v, const uint32_t* idx, size_t k, float alpha,
                            float* acc) {
        for (size_t j = 0; j < k; ++j) {
            ahead(acc, idx, j, k, 1);
            const float t = alpha * v[j];
            acc[at(idx, j)] = acc[at(idx, j)] + t;
        }
    }
    static void scatter_zero(const uint32_t* idx, size_t k, float* a) {
        for (size_t j = 0; j < k; ++j) {
            ahead(a, idx, j, k, 1);
            a[at(idx, j)] = 0.0f;
        }
    }
    static bool scatter_sub_div(float* x, const uint32_t* idx, const float* s, size_t k, float d) {
        for (size_t j = 0; j < k; ++j) {
            ahead(x, idx, j, k, 0);
            const float q = s[j] / d;
            if (!std::isfinite(x[at(idx, j)] - q)) return false;
        }
        for (size_t j = 0; j < k; ++j) {
            ahead(x, idx, j, k, 1);
            const float q = s[j] / d;
            x[at(idx, j)] = x[at(idx, j)] - q;
        }
        return true;
    }
};

template <class Arch>
constexpr void scatter_entries(Table& t) {
    t.gather = &Scatter<Arch>::gather;
    t.scatter_add = &Scatter<Arch>::scatter_add;
    t.scatter_zero = &Scatter<Arch>::scatter_zero;
    t.scatter_sub_div = &Scatter<Arch>::scatter_sub_div;
}

}  // namespace
}  // namespace gw::kern
