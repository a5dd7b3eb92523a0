// Fuzz target: the frame parser and every decoder, through the public API.
// Any input must return a status (never crash, hang, leak or over-read), and
// whatever is accepted must behave consistently:
//  - gw_frame_size, gw_frame_inspect, gw_decode, gw_decode_accumulate,
//    gw_frame_spec and a server push agree on validity and on the frame;
//  - every valid frame is canonical: re-encoding its decoded values with its
//    own spec (gw_frame_spec), tag (and, for random-k, the draw its payload
//    names) gives the same bytes (format 2), or a
//    format 2 frame that decodes to the same floats (format 1);
//  - prefixes of a valid frame are reported as truncated.
// Mutated frames rarely keep their CRC32C fields right, so each input is also
// run with its checksums recomputed (fixed_checksums), which takes mutations
// of lengths, parameters and payloads past the checksum checks.
// The same bytes also drive every encoder (codecs from gw_codec_list(), so
// new codecs are covered once registered): parameters within
// gw_codec_param_bounds, f32/f16/bf16 input, a SIMD target; every frame an
// encoder writes must decode, be canonical and match the frame written
// under the default target.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "gradwire.h"

namespace {

constexpr uint64_t kMaxDecode = 1u << 20;  // larger valid frames are inspected only

struct Spec {  // owns a gw_codec_spec
    gw_codec_spec* p = nullptr;
    Spec() = default;
    Spec(const Spec&) = delete;
    Spec& operator=(const Spec&) = delete;
    ~Spec() { gw_codec_spec_free(p); }
};

bool same_bits(const float* a, const float* b, uint64_t n) {
    return n == 0 || std::memcmp(a, b, n * sizeof(float)) == 0;
}

uint32_t flags_of(gw_codec_id codec) {
    uint32_t flags = 0;
    FUZZ_CHECK(gw_codec_flags(codec, &flags) == GW_OK);
    return flags;
}

// The draw a frame carries (GW_CODEC_FLAG_DRAW_IN_PAYLOAD: its payload starts
// with seed, step, tensor), so re-encoding draws the same; zero for others.
gw_encode_ctx frame_ctx(const uint8_t* f, const gw_frame_info& info) {
    gw_encode_ctx ctx;
    FUZZ_CHECK(gw_encode_ctx_init(&ctx, GW_ENCODE_CTX_VERSION) == GW_OK);
    ctx.tag = info.tag;
    if (flags_of(info.codec) & GW_CODEC_FLAG_DRAW_IN_PAYLOAD) {
        const size_t payload = GW_FRAME_HEADER_SIZE + size_t(f[32] | f[33] << 8);
        uint32_t step = 0;
        std::memcpy(&ctx.seed, f + payload, 8);
        std::memcpy(&step, f + payload + 8, 4);
        std::memcpy(&ctx.tensor, f + payload + 12, 4);
        ctx.step = step;
    }
    return ctx;
}

std::vector<uint8_t> encode(const gw_codec_spec* spec, uint64_t tag, const void* x, gw_dtype dtype,
                            uint64_t n, gw_status* st, const gw_encode_ctx* with = nullptr) {
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_encode_bound(spec, n, &bound) == GW_OK);
    std::vector<uint8_t> f(bound + 1);
    gw_encode_ctx ctx;
    FUZZ_CHECK(gw_encode_ctx_init(&ctx, GW_ENCODE_CTX_VERSION) == GW_OK);
    if (with) ctx = *with;
    ctx.tag = tag;
    *st = gw_encode(spec, &ctx, x, dtype, n, f.data(), f.size(), &written);
    if (*st != GW_OK) return {};
    FUZZ_CHECK(written > 0 && written <= bound);
    f.resize(written);
    return f;
}

// Codecs whose frames are not a function of what they decode to (a
// stochastic rounding of an already-rounded value may go either way): their
// re-encoding is not checked byte for byte; their fields are checked by the
// decoders instead.
bool rounds(gw_codec_id c) { return flags_of(c) & GW_CODEC_FLAG_STOCHASTIC_ROUNDING; }

// Decode a frame known to be valid, with every consistency check on the way.
std::vector<float> decode_valid(const uint8_t* f, size_t fsize, uint64_t n) {
    std::vector<float> dec(n + 1), acc(n + 1, 0.0f);
    uint64_t count = 0;
    FUZZ_CHECK(gw_decode(f, fsize, dec.data(), n, &count) == GW_OK && count == n);
    if (n > 0) FUZZ_CHECK(gw_decode(f, fsize, dec.data(), n - 1, nullptr) == GW_ERR_BUFFER_TOO_SMALL);
    for (uint64_t i = 0; i < n; ++i) FUZZ_CHECK(std::isfinite(dec[i]));  // decoders emit finite values
    // 0 + 1*d == d and d + (-1)*d == 0 exactly (the residual path relies on both).
    FUZZ_CHECK(gw_decode_accumulate(f, fsize, 1.0f, acc.data(), n) == GW_OK);
    for (uint64_t i = 0; i < n; ++i) FUZZ_CHECK(acc[i] == dec[i]);
    FUZZ_CHECK(gw_decode_accumulate(f, fsize, -1.0f, acc.data(), n) == GW_OK);
    for (uint64_t i = 0; i < n; ++i) FUZZ_CHECK(acc[i] == 0.0f);
    FUZZ_CHECK(gw_decode_accumulate(f, fsize, 0.5f, acc.data(), n + 1) == GW_ERR_COUNT_MISMATCH);
    // Many frames at once == one after another; a truncated last frame is
    // blamed by index and changes nothing.
    std::vector<float> one(n + 1, 0.25f), many(n + 1, 0.25f);
    FUZZ_CHECK(gw_decode_accumulate(f, fsize, 0.5f, one.data(), n) == GW_OK);
    FUZZ_CHECK(gw_decode_accumulate(f, fsize, 0.5f, one.data(), n) == GW_OK);
    const void* frames[3] = {f, f, f};
    const size_t sizes[3] = {fsize, fsize, fsize - 1};
    size_t bad = 0;
    FUZZ_CHECK(gw_decode_accumulate_many(frames, sizes, 2, 0.5f, many.data(), n, &bad) == GW_OK);
    FUZZ_CHECK(std::memcmp(one.data(), many.data(), n * sizeof(float)) == 0);
    FUZZ_CHECK(gw_decode_accumulate_many(frames, sizes, 3, 0.5f, many.data(), n, &bad) != GW_OK &&
               bad == 2);
    FUZZ_CHECK(std::memcmp(one.data(), many.data(), n * sizeof(float)) == 0);
    dec.resize(n);
    return dec;
}

// Re-encoding the decoded values with the frame's own spec and tag gives the
// frame back (format 2) or a format 2 frame of the same values (format 1).
void check_canonical(const uint8_t* f, size_t fsize, const gw_frame_info& info,
                     const std::vector<float>& dec) {
    Spec spec;
    FUZZ_CHECK(gw_frame_spec(f, fsize, &spec.p) == GW_OK);
    gw_codec_id codec;
    FUZZ_CHECK(gw_codec_spec_codec(spec.p, &codec) == GW_OK && codec == info.codec);
    if (rounds(info.codec)) return;
    gw_status st;
    const gw_encode_ctx ctx = info.format_version == 2 ? frame_ctx(f, info) : gw_encode_ctx{};
    const auto again = encode(spec.p, info.tag, dec.data(), GW_DTYPE_F32, info.count, &st,
                              info.format_version == 2 ? &ctx : nullptr);
    FUZZ_CHECK(st == GW_OK);
    // The zstd stage is canonical in its raw payload, not in its compressed
    // bytes (those depend on the zstd version of the writer): frames of a
    // codec that may take the stage must give back the same values.
    int64_t zstd = 0;
    const bool staged_codec = gw_codec_spec_get(spec.p, GW_PARAM_ZSTD, &zstd) == GW_OK && zstd == 1;
    if (info.format_version == 2 && !staged_codec) {
        FUZZ_CHECK(again.size() == fsize && std::memcmp(again.data(), f, fsize) == 0);
        return;
    }
    if (info.format_version == 2) {
        const auto dec2 = decode_valid(again.data(), again.size(), info.count);
        FUZZ_CHECK(same_bits(dec2.data(), dec.data(), info.count));
        return;
    }
    FUZZ_CHECK(info.format_version == 1 && info.tag == 0 && info.flags == 0);
    gw_frame_info i2;
    gw_frame_info_init(&i2, GW_FRAME_INFO_VERSION);
    FUZZ_CHECK(gw_frame_inspect(again.data(), again.size(), &i2) == GW_OK);
    FUZZ_CHECK(i2.format_version == 2 && i2.codec == info.codec && i2.count == info.count &&
               i2.frame_size == again.size());
    const auto dec2 = decode_valid(again.data(), again.size(), info.count);
    FUZZ_CHECK(same_bits(dec2.data(), dec.data(), info.count));
}

// A one-worker server of the frame's length takes the frame as a push (tag
// check off) and broadcasts the same values with the same codec.
void check_server(const uint8_t* f, size_t fsize, const gw_frame_info& info,
                  const std::vector<float>& dec) {
    const uint64_t n = info.count;
    Spec spec;
    FUZZ_CHECK(gw_frame_spec(f, fsize, &spec.p) == GW_OK);
    gw_server_options so;
    gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION);
    so.total = so.length = n;
    so.num_workers = 1;
    so.check_tag = 0;
    gw_server* s = nullptr;
    FUZZ_CHECK(gw_server_create(&s, &so, spec.p, spec.p) == GW_OK);
    FUZZ_CHECK(gw_server_push(s, f, fsize) == GW_OK);
    FUZZ_CHECK(gw_server_push(s, f, fsize) == GW_ERR_SEQUENCE);
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_server_frame_bound(s, &bound) == GW_OK);
    std::vector<uint8_t> bf(bound);
    const gw_status step = gw_server_step(s, 0.1f, bf.data(), bf.size(), &written);
    gw_server_free(s);
    // The whole round in one call: the same status and bytes.
    FUZZ_CHECK(gw_server_create(&s, &so, spec.p, spec.p) == GW_OK);
    std::vector<uint8_t> rf(bound);
    size_t rwritten = 0, bad = 0;
    const void* frames[1] = {f};
    FUZZ_CHECK(gw_server_round(s, frames, &fsize, 1, 0.1f, rf.data(), rf.size(), &rwritten,
                               &bad) == step);
    if (step == GW_OK)
        FUZZ_CHECK(rwritten == written && std::memcmp(rf.data(), bf.data(), written) == 0);
    gw_server_free(s);
    // A quantizer's step may not fit float32 when values are near FLT_MAX.
    if (step == GW_ERR_OVERFLOW && rounds(info.codec)) return;
    FUZZ_CHECK(step == GW_OK);
    gw_frame_info bi;
    gw_frame_info_init(&bi, GW_FRAME_INFO_VERSION);
    FUZZ_CHECK(gw_frame_inspect(bf.data(), written, &bi) == GW_OK);
    FUZZ_CHECK(bi.format_version == 2 && bi.codec == info.codec && bi.tag == GW_TAG(0, 0) &&
               bi.count == n && bi.frame_size == written);
    const auto back = decode_valid(bf.data(), written, n);
    // (Unless the server draws its own positions or roundings, at its own round.)
    const uint32_t redrawn = GW_CODEC_FLAG_STOCHASTIC_ROUNDING | GW_CODEC_FLAG_DRAW_IN_PAYLOAD;
    if (!(flags_of(info.codec) & redrawn))
        for (uint64_t i = 0; i < n; ++i) FUZZ_CHECK(back[i] == dec[i]);

    // With the tag check on, the push is accepted only in round 0 of its tensor.
    so.check_tag = 1;
    so.tensor = GW_TAG_TENSOR(info.tag);
    FUZZ_CHECK(gw_server_create(&s, &so, spec.p, nullptr) == GW_OK);
    const gw_status st = gw_server_push(s, f, fsize);
    FUZZ_CHECK(st == (GW_TAG_STEP(info.tag) == 0 ? GW_OK : GW_ERR_TAG_MISMATCH));
    gw_server_free(s);
}

void decode_paths(const uint8_t* data, size_t size) {
    gw_frame_info info;
    gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
    const gw_status st = gw_frame_inspect(data, size, &info);
    size_t hsize = 0;
    const gw_status hst = gw_frame_size(data, size, &hsize);
    std::vector<float> out(64);
    const gw_status dst = gw_decode(data, size, out.data(), out.size(), nullptr);
    // With room for the count a format 2 header claims, large dense frames
    // reach gw_decode's one-read path (Codec::decode_crc) whatever their
    // payload holds: its verdict must be gw_decode_accumulate's, which checks
    // before it adds, and a refused frame leaves acc as it was.
    uint64_t claimed = 0;
    if (size >= GW_FRAME_HEADER_SIZE && data[4] == 2)
        for (int i = 7; i >= 0; --i) claimed = claimed << 8 | data[16 + i];
    if (claimed > out.size() && claimed <= kMaxDecode) {
        std::vector<float> dec(claimed), acc(claimed, 0.0f);
        const gw_status bst = gw_decode(data, size, dec.data(), claimed, nullptr);
        FUZZ_CHECK(bst == gw_decode_accumulate(data, size, 1.0f, acc.data(), claimed));
        FUZZ_CHECK(st == GW_OK || bst != GW_OK);
        if (bst != GW_OK)
            for (float a : acc) FUZZ_CHECK(a == 0.0f && !std::signbit(a));
    }
    if (st != GW_OK) {
        // Decoding sees the same bytes (exact size) and must refuse them too.
        FUZZ_CHECK(dst != GW_OK);
        Spec spec;
        FUZZ_CHECK(gw_frame_spec(data, size, &spec.p) == st && spec.p == nullptr);
        return;
    }
    // The header alone gives the same size as the full validation.
    FUZZ_CHECK(hst == GW_OK && hsize == info.frame_size);
    FUZZ_CHECK(info.frame_size <= size && info.frame_size > 0);
    FUZZ_CHECK(info.format_version == 1 || info.format_version == 2);
    FUZZ_CHECK(info.format_version == 2 || (info.tag == 0 && info.flags == 0));
    FUZZ_CHECK((info.flags & ~GW_FRAME_FLAG_ZSTD) == 0);
    FUZZ_CHECK(gw_codec_name(info.codec) != nullptr);
    const size_t fsize = static_cast<size_t>(info.frame_size);
    const size_t header = info.format_version == 1 ? 26 : GW_FRAME_HEADER_SIZE;
    FUZZ_CHECK(fsize >= header + 4 + info.payload_size);
    if (size > fsize) FUZZ_CHECK(dst == GW_ERR_FRAME_TRAILING);

    // Prefixes: the header alone sizes the frame; anything shorter than the
    // frame is truncated (a reader on a stream waits for more bytes).
    FUZZ_CHECK(gw_frame_size(data, header, &hsize) == GW_OK && hsize == fsize);
    FUZZ_CHECK(gw_frame_size(data, header - 1, &hsize) == GW_ERR_FRAME_TRUNCATED);
    gw_frame_info cut;
    gw_frame_info_init(&cut, GW_FRAME_INFO_VERSION);
    FUZZ_CHECK(gw_frame_inspect(data, fsize - 1, &cut) == GW_ERR_FRAME_TRUNCATED);
    FUZZ_CHECK(gw_frame_inspect(data, data[fsize - 1] % fsize, &cut) == GW_ERR_FRAME_TRUNCATED);

    if (info.count > kMaxDecode) return;  // valid but too large to be worth decoding here
    const auto dec = decode_valid(data, fsize, info.count);
    check_canonical(data, fsize, info, dec);
    if (info.count > 0) check_server(data, fsize, info, dec);
}

void store_crc(std::vector<uint8_t>& f, size_t covered) {
    uint32_t crc = 0;
    FUZZ_CHECK(gw_crc32c(f.data(), covered, &crc) == GW_OK);
    for (int i = 0; i < 4; ++i) f[covered + i] = static_cast<uint8_t>(crc >> (8 * i));
}

// The input with its header CRC (format 2) and its trailer CRC (where the
// header says the frame ends, if that is inside the input) recomputed.
std::vector<uint8_t> fixed_checksums(const uint8_t* data, size_t size) {
    std::vector<uint8_t> f(data, data + size);
    if (size >= GW_FRAME_HEADER_SIZE && std::memcmp(data, "GWFR", 4) == 0 && data[4] == 2)
        store_crc(f, 36);
    size_t total = 0;
    if (gw_frame_size(f.data(), f.size(), &total) == GW_OK && total >= 4 && total <= size)
        store_crc(f, total - 4);
    return f;
}

// ---------------------------------------------------------------------------
// Encoders on fuzzed input.

std::vector<gw_simd_target> supported_targets() {
    std::vector<gw_simd_target> out;
    for (gw_simd_target t : {GW_SIMD_SCALAR, GW_SIMD_SSE2, GW_SIMD_SSE4_2, GW_SIMD_AVX2,
                             GW_SIMD_AVX512, GW_SIMD_NEON})
        if (gw_simd_target_supported(t)) out.push_back(t);
    return out;
}

std::vector<gw_codec_id> codecs() {
    size_t count = 0;
    FUZZ_CHECK(gw_codec_list(nullptr, 0, &count) == GW_OK && count > 0);
    std::vector<gw_codec_id> ids(count);
    FUZZ_CHECK(gw_codec_list(ids.data(), ids.size(), &count) == GW_OK && count == ids.size());
    return ids;
}

// One parameter value from one control byte: the default, a small offset from
// the minimum, the maximum, or a point spread over the whole range.
int64_t pick(uint8_t b, int64_t min, int64_t max, int64_t def) {
    const int64_t k = b >> 2;
    switch (b & 3) {
        case 0: return def;
        case 1: return max - min < k ? max : min + k;
        case 2: return max;
        default:
            return min + static_cast<int64_t>(static_cast<double>(max - min) * double(k) / 63.0);
    }
}

// A spec of `codec` with parameters chosen by ctl (values the codec's cross
// checks refuse keep their previous value).
void make_spec(gw_codec_id codec, const uint8_t* ctl, size_t nctl, Spec* spec) {
    FUZZ_CHECK(gw_codec_spec_create(&spec->p, codec) == GW_OK);
    size_t np = 0;
    FUZZ_CHECK(gw_codec_params(codec, nullptr, 0, &np) == GW_OK);
    std::vector<gw_param> params(np);
    FUZZ_CHECK(gw_codec_params(codec, params.data(), np, &np) == GW_OK);
    for (size_t j = 0; j < np; ++j) {
        int64_t min = 0, max = 0, def = 0, got = 0;
        FUZZ_CHECK(gw_codec_param_bounds(codec, params[j], &min, &max, &def) == GW_OK);
        FUZZ_CHECK(min <= def && def <= max);
        const int64_t v = pick(ctl[(static_cast<size_t>(codec) * 5 + j) % nctl], min, max, def);
        FUZZ_CHECK(v >= min && v <= max);
        const gw_status st = gw_codec_spec_set(spec->p, params[j], v);
        FUZZ_CHECK(st == GW_OK || st == GW_ERR_INVALID_ARGUMENT);
        FUZZ_CHECK(gw_codec_spec_get(spec->p, params[j], &got) == GW_OK);
        FUZZ_CHECK(st != GW_OK || got == v);
        // Out of range is refused without change.
        if (max < INT64_MAX) FUZZ_CHECK(gw_codec_spec_set(spec->p, params[j], max + 1) == GW_ERR_INVALID_ARGUMENT);
        if (min > INT64_MIN) FUZZ_CHECK(gw_codec_spec_set(spec->p, params[j], min - 1) == GW_ERR_INVALID_ARGUMENT);
        int64_t still = 0;
        FUZZ_CHECK(gw_codec_spec_get(spec->p, params[j], &still) == GW_OK && still == got);
    }
}

// Reference widening of one f16 / bf16 element (sign matters only).
bool negative(const uint8_t* x, gw_dtype dtype, uint64_t i) {
    if (dtype == GW_DTYPE_F32) {
        float v;
        std::memcpy(&v, x + 4 * i, 4);
        return v < 0.0f;
    }
    const uint16_t h = static_cast<uint16_t>(x[2 * i] | x[2 * i + 1] << 8);
    return (h & 0x8000) != 0 && (h & 0x7FFF) != 0;
}

void encode_paths(const uint8_t* data, size_t size) {
    // Control bytes (zero-padded) from the front; the elements are all the bytes.
    uint8_t ctl[16] = {};
    if (size) std::memcpy(ctl, data, size < sizeof ctl ? size : sizeof ctl);
    const gw_dtype dtype = static_cast<gw_dtype>(GW_DTYPE_F32 + ctl[0] % 3);
    const size_t width = dtype == GW_DTYPE_F32 ? 4 : 2;
    const uint64_t n = size / width;
    std::vector<uint8_t> x(n * width + 1);  // aligned copy, never empty
    if (n) std::memcpy(x.data(), data, n * width);
    uint64_t tag = 0;
    std::memcpy(&tag, ctl + 8, sizeof tag);
    static const std::vector<gw_simd_target> targets = supported_targets();
    static const std::vector<gw_codec_id> ids = codecs();
    const gw_simd_target target = targets[(ctl[0] / 3) % targets.size()];

    for (gw_codec_id id : ids) {
        Spec spec;
        make_spec(id, ctl + 1, sizeof ctl - 1, &spec);
        gw_status st;
        const auto f = encode(spec.p, tag, x.data(), dtype, n, &st);
        if (st == GW_ERR_NONFINITE || st == GW_ERR_OVERFLOW) continue;
        FUZZ_CHECK(st == GW_OK);
        gw_frame_info info;
        gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
        FUZZ_CHECK(gw_frame_inspect(f.data(), f.size(), &info) == GW_OK);
        FUZZ_CHECK(info.format_version == 2 && info.codec == id && info.tag == tag &&
                   info.count == n && info.frame_size == f.size());
        const auto dec = decode_valid(f.data(), f.size(), n);
        Spec back;
        FUZZ_CHECK(gw_frame_spec(f.data(), f.size(), &back.p) == GW_OK);
        FUZZ_CHECK(gw_codec_spec_equal(back.p, spec.p) == 1);
        check_canonical(f.data(), f.size(), info, dec);
        if (id == GW_CODEC_IDENTITY && dtype == GW_DTYPE_F32)
            FUZZ_CHECK(n == 0 || std::memcmp(dec.data(), x.data(), n * 4) == 0);
        if (id == GW_CODEC_SIGN)
            for (uint64_t i = 0; i < n; ++i) FUZZ_CHECK(dec[i] == (negative(x.data(), dtype, i) ? -1.0f : 1.0f));
        if (id == GW_CODEC_SCALED_SIGN)
            for (uint64_t i = 0; i < n; ++i)
                FUZZ_CHECK(dec[i] == 0.0f || (dec[i] < 0) == negative(x.data(), dtype, i));

        // Every SIMD target writes the same bytes and decodes to the same bits.
        FUZZ_CHECK(gw_simd_set_target(target) == GW_OK);
        const auto ft = encode(spec.p, tag, x.data(), dtype, n, &st);
        FUZZ_CHECK(st == GW_OK && ft == f);
        const auto dt = decode_valid(f.data(), f.size(), n);
        FUZZ_CHECK(same_bits(dt.data(), dec.data(), n));
        FUZZ_CHECK(gw_simd_set_target(GW_SIMD_AUTO) == GW_OK);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    decode_paths(data, size);
    const auto fixed = fixed_checksums(data, size);
    if (size && std::memcmp(fixed.data(), data, size) != 0) decode_paths(fixed.data(), size);
    encode_paths(data, size);
    return 0;
}
