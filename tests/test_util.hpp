// Helpers shared by the test suites: SIMD target iteration, random inputs,
// hex files, frame tampering.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gradwire.h"
#include "hexfile.hpp"

namespace gwtest {

// Every target compiled in and supported by this CPU, scalar first.
inline std::vector<gw_simd_target> supported_targets() {
    std::vector<gw_simd_target> out;
    for (gw_simd_target t : {GW_SIMD_SCALAR, GW_SIMD_SSE2, GW_SIMD_SSE4_2, GW_SIMD_AVX2,
                             GW_SIMD_AVX512})
        if (gw_simd_target_supported(t)) out.push_back(t);
    return out;
}

// Runs body once per supported target with that target forced; restores auto.
template <class F>
void for_each_target(F&& body) {
    for (gw_simd_target t : supported_targets()) {
        SCOPED_TRACE(std::string("simd target ") + gw_simd_target_name(t));
        ASSERT_EQ(gw_simd_set_target(t), GW_OK);
        body(t);
    }
    ASSERT_EQ(gw_simd_set_target(GW_SIMD_AUTO), GW_OK);
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float scale = 1.0f) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(rng);
    return v;
}

inline bool bits_equal(const float* a, const float* b, size_t n) {
    return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;
}
inline bool bits_equal(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && bits_equal(a.data(), b.data(), a.size());
}

// First index where a and b differ bitwise, or -1.
inline long first_diff(const float* a, const float* b, size_t n) {
    for (size_t i = 0; i < n; ++i)
        if (std::memcmp(a + i, b + i, sizeof(float)) != 0) return static_cast<long>(i);
    return -1;
}

inline std::vector<uint8_t> encode(const gw_codec_options& o, const std::vector<float>& x) {
    size_t bound = 0;
    EXPECT_EQ(gw_encode_bound(&o, x.size(), &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    size_t written = 0;
    EXPECT_EQ(gw_encode(&o, x.data(), x.size(), f.data(), f.size(), &written), GW_OK);
    f.resize(written);
    return f;
}

inline gw_codec_options codec(gw_codec_id id, uint32_t block = 0) {
    gw_codec_options o;
    gw_codec_options_init(&o, GW_CODEC_OPTIONS_VERSION);
    o.codec = id;
    o.block_size = block;
    return o;
}

// Rewrite the CRC32C trailer after tampering, so deeper checks are reached.
inline void refresh_crc(std::vector<uint8_t>& f) {
    uint32_t crc = 0;
    gw_crc32c(f.data(), f.size() - 4, &crc);
    std::memcpy(f.data() + f.size() - 4, &crc, 4);
}

inline std::vector<uint8_t> read_hex(const std::string& path, bool* ok = nullptr) {
    return gwhex::read(path, ok);
}

inline std::string to_hex(const std::vector<uint8_t>& bytes, const std::string& comment) {
    std::ostringstream s;
    std::istringstream c(comment);
    std::string line;
    while (std::getline(c, line)) s << "# " << line << "\n";
    static const char* digits = "0123456789abcdef";
    for (size_t i = 0; i < bytes.size(); ++i) {
        s << digits[bytes[i] >> 4] << digits[bytes[i] & 15];
        if (i % 32 == 31 || i + 1 == bytes.size()) s << "\n";
    }
    return s.str();
}

inline std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
    return b;
}
inline std::vector<float> bytes_to_floats(const std::vector<uint8_t>& b) {
    std::vector<float> v(b.size() / 4);
    if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * 4);
    return v;
}

}  // namespace gwtest
