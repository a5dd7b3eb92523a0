// Plain scalar reference for the "select" kernel family
// (src/kernels/select.hpp): exact top-k by magnitude, by ordering every index
// on (key descending, index ascending) with the standard library, so nothing
// of the radix selection is shared with the kernel.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <vector>

namespace gw::ref {

// bits(x) & 0x7FFFFFFF: orders finite floats by magnitude; -0 and +0 tie.
inline uint32_t topk_key(float v) {
    uint32_t u;
    std::memcpy(&u, &v, 4);
    return u & 0x7FFFFFFFu;
}

// The k indices of the largest keys, ties toward the lower index, in
// increasing order: nth_element on the strict order (key desc, index asc).
inline std::vector<uint32_t> topk_select(const float* x, size_t n, size_t k) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    const auto before = [x](uint32_t a, uint32_t b) {
        const uint32_t ka = topk_key(x[a]), kb = topk_key(x[b]);
        return ka != kb ? ka > kb : a < b;
    };
    if (k != 0 && k < n)
        std::nth_element(order.begin(), order.begin() + std::ptrdiff_t(k), order.end(), before);
    std::vector<char> chosen(n, 0);  // the first k of `order`, listed in index order
    for (size_t j = 0; j < k; ++j) chosen[order[j]] = 1;
    std::vector<uint32_t> out;
    out.reserve(k);
    for (size_t i = 0; i < n; ++i)
        if (chosen[i]) out.push_back(uint32_t(i));
    return out;
}

// The same by a stable sort on the key alone (used to check the one above).
inline std::vector<uint32_t> topk_select_stable_sort(const float* x, size_t n, size_t k) {
    std::vector<uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [x](uint32_t a, uint32_t b) { return topk_key(x[a]) > topk_key(x[b]); });
    order.resize(k);
    std::sort(order.begin(), order.end());
    return order;
}

}  // namespace gw::ref
