#include "util/index_sets.hpp"

namespace gw::index {

bool increasing(const uint32_t* idx, size_t k) {
    for (size_t j = 1; j < k; ++j)
        if (idx[j] <= idx[j - 1]) return false;
    return true;
}

bool valid(const uint32_t* idx, size_t k, uint64_t n) {
    return increasing(idx, k) && (k == 0 || idx[k - 1] < n);
}

double overlap(const uint32_t* a, size_t na, const uint32_t* b, size_t nb) {
    if (na == 0 && nb == 0) return 1.0;
    size_t i = 0, j = 0, common = 0;
    while (i < na && j < nb) {
        if (a[i] == b[j]) {
            ++common;
            ++i;
            ++j;
        } else if (a[i] < b[j]) {
            ++i;
        } else {
            ++j;
        }
    }
    return static_cast<double>(common) / static_cast<double>(na > nb ? na : nb);
}

}  // namespace gw::index
