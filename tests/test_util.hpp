// Helpers shared by the test suites: SIMD target iteration, random inputs,
// hex files, frame tampering.
#pragma once

#include <gtest/gtest.h>

#include <cfloat>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
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
                             GW_SIMD_AVX512, GW_SIMD_NEON})
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

// The inputs every selecting codec is tested on: random, ties (few distinct
// values, all equal), zeros of both signs, denormals, one huge value, and
// sparse ones (fewer nonzero entries than a typical k).
inline std::map<std::string, std::vector<float>> selection_inputs(size_t n) {
    using Vec = std::vector<float>;
    std::map<std::string, Vec> m;
    m["normal"] = random_floats(n, 11);
    m["zeros"] = Vec(n, 0.0f);
    m["negzeros"] = Vec(n, -0.0f);
    m["all_equal"] = Vec(n, -2.5f);
    Vec few(n), huge(n, 1e-3f), tiny(n), mixed(n), sparse(n, 0.0f);
    std::mt19937 rng(5);
    for (size_t i = 0; i < n; ++i) {
        const int r = int(rng() % 5);
        few[i] = r == 0 ? 0.0f : (r < 3 ? 1.0f : -1.0f);  // few distinct values, many ties
        tiny[i] = (i % 2 ? -1.0f : 1.0f) * FLT_TRUE_MIN * float(1 + i % 3);
        mixed[i] = i % 7 == 0 ? -0.0f : (i % 3 ? 3.0f : -3.0f);
        if (i % 13 == 5) sparse[i] = float(int(i % 7) - 3) * 1.5f;
    }
    if (n) huge[n / 2] = 3e38f;
    m["few_distinct"] = few;
    m["one_huge"] = huge;
    m["denormals"] = tiny;
    m["mixed"] = mixed;
    m["sparse"] = sparse;
    return m;
}

// Pointers and sizes of a list of frames, for the many-frame calls.
struct Frames {
    std::vector<const void*> ptr;
    std::vector<size_t> size;
    explicit Frames(const std::vector<std::vector<uint8_t>>& f) {
        for (const auto& x : f) {
            ptr.push_back(x.data());
            size.push_back(x.size());
        }
    }
};

// A server handle (check_tag off by default: most tests push stateless
// frames, tag 0) with its last broadcast frame.
struct Server {
    gw_server* h = nullptr;
    std::vector<uint8_t> frame;
    Server(uint64_t total, uint64_t offset, uint64_t length, uint32_t m, const gw_codec_spec* c,
           int ef, int check_tag = 0, const gw_codec_spec* expect = nullptr) {
        gw_server_options o = GW_SERVER_OPTIONS_INIT;
        o.total = total;
        o.offset = offset;
        o.length = length;
        o.num_workers = m;
        o.error_feedback = ef;
        o.check_tag = check_tag;
        EXPECT_EQ(gw_server_create(&h, &o, c, expect), GW_OK);
        size_t bound = 0;
        gw_server_frame_bound(h, &bound);
        frame.resize(bound);
    }
    ~Server() { gw_server_free(h); }
    Server(const Server&) = delete;
    Server& operator=(const Server&) = delete;
    gw_status step(float lr) {
        size_t written = 0;
        frame.resize(frame.capacity());
        const gw_status st = gw_server_step(h, lr, frame.data(), frame.size(), &written);
        if (st == GW_OK) frame.resize(written);
        return st;
    }
    // Every frame pushed, then the step.
    gw_status push_step(const std::vector<std::vector<uint8_t>>& frames, float lr) {
        for (const auto& f : frames) {
            const gw_status st = gw_server_push(h, f.data(), f.size());
            if (st != GW_OK) return st;
        }
        return step(lr);
    }
    gw_status round(const std::vector<std::vector<uint8_t>>& frames, float lr,
                    size_t* bad = nullptr) {
        Frames f(frames);
        size_t written = 0;
        frame.resize(frame.capacity());
        const gw_status st = gw_server_round(h, f.ptr.data(), f.size.data(), frames.size(), lr,
                                             frame.data(), frame.size(), &written, bad);
        if (st == GW_OK) frame.resize(written);
        return st;
    }
    std::vector<float> residual(uint64_t n) const {
        std::vector<float> e(n);
        EXPECT_EQ(gw_server_residual(h, e.data(), n), GW_OK);
        return e;
    }
    uint64_t steps() const {
        uint64_t s = 0;
        gw_server_step_count(h, &s);
        return s;
    }
};

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

// A codec spec that frees itself: Spec(GW_CODEC_SCALED_SIGN, 64).set(...).
class Spec {
  public:
    explicit Spec(gw_codec_id id, uint32_t block = 0) {
        EXPECT_EQ(gw_codec_spec_create(&s_, id), GW_OK);
        if (block) set(GW_PARAM_BLOCK_SIZE, block);
    }
    Spec(const Spec& o) { EXPECT_EQ(gw_codec_spec_clone(&s_, o.s_), GW_OK); }
    Spec& operator=(const Spec& o) {
        if (this != &o) {
            gw_codec_spec_free(s_);
            EXPECT_EQ(gw_codec_spec_clone(&s_, o.s_), GW_OK);
        }
        return *this;
    }
    ~Spec() { gw_codec_spec_free(s_); }
    Spec& set(gw_param p, int64_t v) {
        EXPECT_EQ(gw_codec_spec_set(s_, p, v), GW_OK);
        return *this;
    }
    gw_codec_spec* get() const { return s_; }
    operator const gw_codec_spec*() const { return s_; }

  private:
    gw_codec_spec* s_ = nullptr;
};

inline Spec codec(gw_codec_id id, uint32_t block = 0) { return Spec(id, block); }

// Exact top-k of k entries with no zstd stage (what the state-machine tests compress with).
inline Spec topk_plain(int64_t k) {
    Spec s(GW_CODEC_TOPK);
    s.set(GW_PARAM_K, k).set(GW_PARAM_ZSTD, 0);
    return s;
}

// A frame of x drawn from (seed, step, tensor), tagged `tag`.
inline std::vector<uint8_t> encode_ctx(const gw_codec_spec* spec, const std::vector<float>& x,
                                       uint64_t seed, uint64_t step, uint32_t tensor,
                                       uint64_t tag = 0) {
    size_t bound = 0;
    EXPECT_EQ(gw_encode_bound(spec, x.size(), &bound), GW_OK);
    std::vector<uint8_t> f(bound);
    size_t written = 0;
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    ctx.seed = seed;
    ctx.step = step;
    ctx.tensor = tensor;
    ctx.tag = tag;
    EXPECT_EQ(gw_encode(spec, &ctx, x.data(), GW_DTYPE_F32, x.size(), f.data(), f.size(), &written),
              GW_OK);
    f.resize(written);
    return f;
}

inline std::vector<uint8_t> encode(const gw_codec_spec* spec, const std::vector<float>& x,
                                   uint64_t tag = 0) {
    return encode_ctx(spec, x, 0, 0, 0, tag);
}

inline std::vector<float> decode(const std::vector<uint8_t>& f, uint64_t n) {
    std::vector<float> out(n);
    uint64_t count = 0;
    EXPECT_EQ(gw_decode(f.data(), f.size(), out.data(), n, &count), GW_OK);
    EXPECT_EQ(count, n);
    return out;
}

// Offset of the payload in a format-2 frame (after the header and params).
inline size_t payload_offset(const std::vector<uint8_t>& f) {
    const size_t plen = size_t(f[32]) | size_t(f[33]) << 8;  // u16, little-endian
    return 40 + plen;
}

// Rewrite the header CRC of a format-2 frame after tampering with the header.
inline void put_le32(uint8_t* p, uint32_t v) {
    for (int b = 0; b < 4; ++b) p[b] = static_cast<uint8_t>(v >> (8 * b));
}
inline uint32_t get_le32(const uint8_t* p) {
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
}
// Any plain value (integer, float, double) as the wire's little-endian bytes,
// on any host: put_le stores sizeof(T) bytes, get_le<T> reads them.
template <class T>
inline void put_le(uint8_t* p, T v) {
    unsigned char h[sizeof(T)], le[sizeof(T)];
    std::memcpy(h, &v, sizeof v);
    for (size_t b = 0; b < sizeof(T); ++b)
        le[b] = h[__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? b : sizeof(T) - 1 - b];
    std::memcpy(p, le, sizeof le);  // (a byte loop here trips GCC 12's -Wstringop-overflow)
}
template <class T>
inline T get_le(const uint8_t* p) {
    unsigned char h[sizeof(T)];
    for (size_t b = 0; b < sizeof(T); ++b)
        h[__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? b : sizeof(T) - 1 - b] = p[b];
    T v;
    std::memcpy(&v, h, sizeof v);
    return v;
}
// The low `width` bytes of a little-endian unsigned integer (width <= 8).
inline uint64_t get_le_width(const uint8_t* p, size_t width) {
    uint64_t v = 0;
    for (size_t b = 0; b < width; ++b) v |= uint64_t(p[b]) << (8 * b);
    return v;
}

inline void refresh_header_crc(std::vector<uint8_t>& f) {
    uint32_t crc = 0;
    gw_crc32c(f.data(), 36, &crc);
    put_le32(f.data() + 36, crc);
}

// A handle's checkpoint through its _bound/_save pair.
template <class H>
std::vector<uint8_t> save_with(const H* h, gw_status (*bound_fn)(const H*, size_t*),
                               gw_status (*save_fn)(const H*, void*, size_t, size_t*)) {
    size_t bound = 0, written = 0;
    EXPECT_EQ(bound_fn(h, &bound), GW_OK);
    std::vector<uint8_t> b(bound);
    EXPECT_EQ(save_fn(h, b.data(), b.size(), &written), GW_OK);
    b.resize(written);
    return b;
}
inline std::vector<uint8_t> save(const gw_worker* w) {
    return save_with(w, gw_worker_save_bound, gw_worker_save);
}
inline std::vector<uint8_t> save(const gw_server* s) {
    return save_with(s, gw_server_save_bound, gw_server_save);
}

// Rewrite the CRC32C trailer after tampering, so deeper checks are reached.
inline void refresh_crc(std::vector<uint8_t>& f) {
    uint32_t crc = 0;
    gw_crc32c(f.data(), f.size() - 4, &crc);
    put_le32(f.data() + f.size() - 4, crc);
}

inline std::vector<uint8_t> read_hex(const std::string& path, bool* ok = nullptr) {
    return gwhex::read(path, ok);
}

inline std::vector<uint8_t> read_hex_string(const std::string& hex) {
    std::vector<uint8_t> out;
    for (size_t i = 0; i + 1 < hex.size(); i += 2)
        out.push_back(static_cast<uint8_t>(std::stoul(hex.substr(i, 2), nullptr, 16)));
    return out;
}

// Floats as the wire's little-endian float32 bytes, and back (any host).
inline std::vector<uint8_t> float_bytes(const std::vector<float>& v) {
    std::vector<uint8_t> b(v.size() * 4);
    for (size_t i = 0; i < v.size(); ++i) {
        uint32_t u;
        std::memcpy(&u, &v[i], 4);
        put_le32(b.data() + 4 * i, u);
    }
    return b;
}
inline std::vector<float> bytes_to_floats(const std::vector<uint8_t>& b) {
    std::vector<float> v(b.size() / 4);
    for (size_t i = 0; i < v.size(); ++i) {
        const uint32_t u = get_le32(b.data() + 4 * i);
        std::memcpy(&v[i], &u, 4);
    }
    return v;
}

}  // namespace gwtest
