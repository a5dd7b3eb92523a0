// Codec registry (a fixed list, no plugins) and the parameter machinery every
// codec shares: defaults, range checks, wire serialization.
#include <cstring>

#include "codecs/codec.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"

namespace gw {

// The registry (a fixed list, no plugins): registry.def, one line per codec.
#define GW_CODEC_ENTRY(name, file) extern const Codec codec_##name;
#include "codecs/registry.def"
#undef GW_CODEC_ENTRY

namespace {
const Codec* const kCodecs[] = {
#define GW_CODEC_ENTRY(name, file) &codec_##name,
#include "codecs/registry.def"
#undef GW_CODEC_ENTRY
};
}  // namespace

const Codec* codec_for(unsigned id) {
    for (const Codec* c : kCodecs)
        if (static_cast<unsigned>(c->id) == id) return c;
    return nullptr;
}
size_t codec_count() { return sizeof kCodecs / sizeof kCodecs[0]; }
const Codec* codec_at(size_t i) { return i < codec_count() ? kCodecs[i] : nullptr; }

const char* param_name(int param) {
    for (const Codec* c : kCodecs) {
        const int slot = param_slot(*c, param);
        if (slot >= 0) return c->params[slot].name;
    }
    return nullptr;
}

CodecParams default_params(const Codec& c) {
    CodecParams p;
    p.codec = &c;
    for (size_t i = 0; i < c.num_params; ++i) p.v[i] = c.params[i].def;
    return p;
}

int param_slot(const Codec& c, int param) {
    for (size_t i = 0; i < c.num_params; ++i)
        if (c.params[i].id == param) return static_cast<int>(i);
    return -1;
}

gw_status set_param(CodecParams* p, int param, int64_t value) {
    const int slot = param_slot(*p->codec, param);
    if (slot < 0) return GW_ERR_INVALID_ARGUMENT;
    const ParamDef& d = p->codec->params[slot];
    if (value < d.min || value > d.max) return GW_ERR_INVALID_ARGUMENT;
    CodecParams q = *p;
    q.v[slot] = value;
    if (p->codec->validate) {
        const gw_status st = p->codec->validate(q);
        if (st != GW_OK) return st;
    }
    *p = q;
    return GW_OK;
}

bool params_equal(const CodecParams& a, const CodecParams& b) {
    if (a.codec != b.codec) return false;
    for (size_t i = 0; i < a.codec->num_params; ++i)
        if (a.v[i] != b.v[i]) return false;
    return true;
}

int64_t param_or(const CodecParams& p, int param, int64_t fallback) {
    const int slot = param_slot(*p.codec, param);
    return slot < 0 ? fallback : p.v[slot];
}

namespace {
// Parameters in the wire form of p: all but the trailing run holding their
// `absent` values.
size_t params_written(const CodecParams& p) {
    size_t m = p.codec->num_params;
    while (m > 0 && p.codec->params[m - 1].absent >= 0 && p.v[m - 1] == p.codec->params[m - 1].absent)
        --m;
    return m;
}
}  // namespace

size_t params_wire_size(const CodecParams& p) {
    size_t n = 0;
    for (size_t i = 0; i < params_written(p); ++i) n += p.codec->params[i].wire_bytes;
    return n;
}

bool params_wire_size_valid(const Codec& c, size_t size) {
    // Sizes of the prefixes that may end the wire form: the whole list, and
    // every shorter one whose omitted parameters may all be absent.
    size_t full = 0;
    for (size_t i = 0; i < c.num_params; ++i) full += c.params[i].wire_bytes;
    for (size_t m = c.num_params;; --m) {
        if (size == full) return true;
        if (m == 0 || c.params[m - 1].absent < 0) return false;
        full -= c.params[m - 1].wire_bytes;
    }
}

void write_params(const CodecParams& p, uint8_t* out) {
    const size_t m = params_written(p);
    for (size_t i = 0; i < m; ++i) {
        const unsigned w = p.codec->params[i].wire_bytes;
        const uint64_t v = static_cast<uint64_t>(p.v[i]);
        for (unsigned b = 0; b < w; ++b) *out++ = static_cast<uint8_t>(v >> (8 * b));
    }
}

gw_status read_params(const Codec& c, const uint8_t* in, size_t size, CodecParams* out) {
    if (!params_wire_size_valid(c, size)) return GW_ERR_FRAME_PARAMS;
    CodecParams p;
    p.codec = &c;
    size_t used = 0;
    for (size_t i = 0; i < c.num_params; ++i) {
        const ParamDef& d = c.params[i];
        if (used == size) {  // omitted: valid sizes omit only absent-able ones
            p.v[i] = d.absent;
            continue;
        }
        uint64_t v = 0;
        for (unsigned b = 0; b < d.wire_bytes; ++b) v |= uint64_t(*in++) << (8 * b);
        used += d.wire_bytes;
        // Ranges are non-negative and below 2^63, so the compare is exact.
        if (v > static_cast<uint64_t>(d.max) || static_cast<int64_t>(v) < d.min)
            return GW_ERR_FRAME_PARAMS;
        p.v[i] = static_cast<int64_t>(v);
    }
    // An absent-able value written out where the writer omits it: not canonical.
    if (params_wire_size(p) != size) return GW_ERR_FRAME_PARAMS;
    if (c.validate && c.validate(p) != GW_OK) return GW_ERR_FRAME_PARAMS;
    *out = p;
    return GW_OK;
}

void generic_residual(const kern::Table& kt, const CodecParams& p, const float* x, uint64_t n,
                      const uint8_t* payload, uint64_t len, float* residual) {
    if (residual != x && n) std::memmove(residual, x, n * sizeof(float));
    // x + (-1)*D == x - D exactly in IEEE arithmetic.
    p.codec->accumulate(kt, p, payload, len, n, -1.0f, residual);
}

const float* widen_to_f32(const kern::Table& kt, const void* x, gw_dtype dtype, uint64_t n,
                          Scratch& scratch) {
    if (dtype == GW_DTYPE_F32 || n == 0) return static_cast<const float*>(x);
    float* f = static_cast<float*>(scratch.get(static_cast<size_t>(n) * sizeof(float)));
    if (!f) return nullptr;
    auto widen = dtype == GW_DTYPE_F16 ? kt.f16_to_f32 : kt.bf16_to_f32;
    if constexpr (kHostLittleEndian) {
        widen(x, f, n);
    } else {
        // The kernels read little-endian 16-bit values; the caller's are the
        // host's. A chunk at a time through a little-endian copy.
        const uint16_t* h = static_cast<const uint16_t*>(x);
        uint8_t le[2 * 1024];
        for (uint64_t i = 0; i < n; i += 1024) {
            const uint64_t c = n - i < 1024 ? n - i : 1024;
            for (uint64_t j = 0; j < c; ++j) store_le<uint16_t>(le + 2 * j, h[i + j]);
            widen(le, f + i, c);
        }
    }
    return f;
}

void axpy_host(const kern::Table& kt, float a, const float* x, float* acc, uint64_t n) {
    if constexpr (kHostLittleEndian) {
        kt.axpy(a, x, acc, n);
    } else {
        for (uint64_t i = 0; i < n; ++i) {
            const float t = a * x[i];
            acc[i] = acc[i] + t;
        }
    }
}

}  // namespace gw
