// Sign-bit inputs for kernel tests: one payload per case, and
// kSignAccumulateMax distinct fields derived from it, each at its own byte
// misalignment (what several frames of a round look like).
#pragma once

#include <memory>
#include <vector>

#include "fixture.hpp"
#include "ref_sign.hpp"

namespace gw::ktest {

// Sign bit payloads for a case: packed from the input (zeros -> all clear,
// -0 -> all clear too) or random bytes, with junk in the unused high bits of
// the last byte, which decoding must ignore.
inline std::vector<uint8_t> bits_for(const Case& c) {
    const size_t nb = ref::sign_bytes(c.n);
    std::vector<uint8_t> b;
    if (c.dist == kUniform || c.dist == kRandomBits || c.dist == kCauchy) {
        b = random_bytes(nb, 77 + c.n * 31 + uint64_t(c.dist));
    } else {
        b.assign(nb + 1, 0);
        ref::sign_pack(input(c.dist, c.n, 0).data(), c.n, b.data());
        b.resize(nb);
    }
    if (c.n % 8 != 0) b[nb - 1] = uint8_t(b[nb - 1] | (0xFF << (c.n % 8)));
    return b;
}

// Field j: bits_for(c) rotated by j bytes and xored with 0x5A * j, unused
// high bits cleared; held at byte misalignment (c.bmis + j) % 8.
struct SignFields {
    std::vector<std::vector<uint8_t>> fields;
    std::vector<std::unique_ptr<Exact>> held;
    std::vector<const uint8_t*> ptr;
    explicit SignFields(const Case& c) : fields(kern::kSignAccumulateMax) {
        const std::vector<uint8_t> b = bits_for(c);
        for (size_t j = 0; j < fields.size(); ++j) {
            fields[j] = b;
            for (size_t i = 0; i < b.size(); ++i)
                fields[j][i] = uint8_t(b[(i + j) % b.size()] ^ (0x5A * j));
            if (c.n % 8 != 0) fields[j].back() &= uint8_t(0xFF >> (8 - c.n % 8));
            held.emplace_back(new Exact(fields[j].data(), fields[j].size(), (c.bmis + j) % 8));
            ptr.push_back(held.back()->data());
        }
    }
};

}  // namespace gw::ktest
