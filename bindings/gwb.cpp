/* gradwire bindings: see gwb.hpp. Every call checks its buffers (kind,
 * length, presence) before the C ABI sees them, and records the first
 * failure in the thread-local error slot. */
#include "gwb.hpp"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

namespace gwb {
namespace {

thread_local int err_status = GW_OK;
thread_local char err_message[512];

/* Record a failure: "<what>: <message>". Returns false for `return fail(...)`. */
bool fail(gw_status status, const char *what, const char *fmt = nullptr, ...) {
    err_status = status;
    char detail[384];
    if (fmt) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(detail, sizeof detail, fmt, ap);
        va_end(ap);
    } else {
        snprintf(detail, sizeof detail, "%s", gw_status_str(status));
    }
    snprintf(err_message, sizeof err_message, "%s: %s", what, detail);
    return false;
}

/* True when the C call succeeded; otherwise the slot names the call. */
bool ok(gw_status status, const char *what) {
    return status == GW_OK || fail(status, what);
}

/* A call asked only for a count: "buffer too small" is the expected answer. */
bool count_query(gw_status status, const char *what) {
    return status == GW_ERR_BUFFER_TOO_SMALL || ok(status, what);
}

const char *kind_name(Kind k) {
    switch (k) {
        case KIND_BYTES: return "bytes";
        case KIND_F32: return "float32";
        case KIND_F16: return "float16";
        case KIND_U16: return "16-bit integers";
        case KIND_U32: return "uint32";
        case KIND_I32: return "int32";
        case KIND_U64: return "uint64";
        case KIND_I64: return "int64";
        case KIND_F64: return "float64";
        default: return "an unsupported element type";
    }
}

size_t dtype_bytes(gw_dtype d) { return d == GW_DTYPE_F32 ? 4 : 2; }

/* Element count of a buffer that must hold `kind` (raw bytes are accepted
 * too: the caller vouches for their layout), `width` bytes each. */
template <class View>
bool count_of(const View &v, Kind kind, size_t width, const char *what, const char *arg,
              uint64_t *n) {
    if (!v.present) return fail(GW_ERR_NULL_POINTER, what, "%s is None/null", arg);
    bool match = v.kind == kind || v.kind == KIND_BYTES ||
                 (kind == KIND_U16 && v.kind == KIND_F16) ||
                 (kind == KIND_U32 && v.kind == KIND_I32) ||
                 (kind == KIND_U64 && v.kind == KIND_I64);
    if (!match)
        return fail(GW_ERR_INVALID_ARGUMENT, what, "%s holds %s, expected %s", arg,
                    kind_name(v.kind), kind_name(kind));
    if (v.size % width)
        return fail(GW_ERR_INVALID_ARGUMENT, what, "%s is %zu bytes, not a whole number of %zu-byte elements",
                    arg, v.size, width);
    *n = v.size / width;
    return true;
}

/* A tensor handed in with an explicit dtype: the buffer's kind must agree
 * (float32 for F32, float16 or 16-bit integers for F16, 16-bit integers for
 * BF16, which no buffer protocol names). */
bool tensor_count(const In &x, gw_dtype dtype, const char *what, uint64_t *n) {
    if (dtype != GW_DTYPE_F32 && dtype != GW_DTYPE_F16 && dtype != GW_DTYPE_BF16)
        return fail(GW_ERR_INVALID_ARGUMENT, what, "unknown dtype %d", (int)dtype);
    if (x.present && dtype == GW_DTYPE_BF16 && x.kind == KIND_F16)
        return fail(GW_ERR_INVALID_ARGUMENT, what, "a float16 buffer passed as BF16");
    return count_of(x, dtype == GW_DTYPE_F32 ? KIND_F32 : KIND_U16, dtype_bytes(dtype), what,
                    "the tensor", n);
}

bool bytes_of(const In &v, const char *what, const char *arg) {
    if (!v.present) return fail(GW_ERR_NULL_POINTER, what, "%s is None/null", arg);
    return true;
}

bool writable_bytes(const Out &v, const char *what, const char *arg) {
    if (!v.present) return fail(GW_ERR_NULL_POINTER, what, "%s is None/null", arg);
    return true;
}

bool floats_exactly(const Out &v, uint64_t n, const char *what, const char *arg) {
    uint64_t have = 0;
    if (!count_of(v, KIND_F32, 4, what, arg, &have)) return false;
    if (have != n)
        return fail(GW_ERR_COUNT_MISMATCH, what, "%s holds %llu floats, the handle has %llu", arg,
                    (unsigned long long)have, (unsigned long long)n);
    return true;
}

gw_encode_ctx to_ctx(const EncodeContext &c) {
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    ctx.seed = c.seed;
    ctx.step = c.step;
    ctx.tensor = c.tensor;
    ctx.tag = c.tag;
    return ctx;
}

/* step(): a frame of at most `cap` bytes written by `write`. */
template <class F>
Bytes make_bytes(uint64_t cap, F write) {
    Bytes b;
    if (error_pending()) return b;
    b.data.resize(cap);
    uint64_t written = write(Out{b.data.data(), (size_t)cap, KIND_BYTES, true});
    if (error_pending()) {
        b.data.clear();
        return b;
    }
    b.data.resize(written);
    return b;
}

}  // namespace

#define GWB_LIVE(h, what, ret) \
    if (!detail::live(h, what)) return ret;

bool detail::live(const void *h, const char *what) {
    return h || fail(GW_ERR_NULL_POINTER, what, "the handle is closed");
}
bool detail::ok(gw_status status, const char *what) { return gwb::ok(status, what); }
bool detail::present(const In &v, const char *what, const char *arg) {
    return bytes_of(v, what, arg);
}

namespace {
/* The shapes handle calls share: a copy of one of the handle's n-vectors, a
 * frame handed in, a call with no data, a tensor step into a frame. */
template <class H>
void read_floats(const H *h, gw_status (*get)(const H *, float *, uint64_t), uint64_t n, Out out,
                 const char *what) {
    if (detail::live(h, what) && floats_exactly(out, n, what, "out"))
        ok(get(h, (float *)out.data, n), what);
}
template <class H>
void frame_in(H *h, gw_status (*take)(H *, const void *, size_t), const In &frame,
              const char *what) {
    if (detail::live(h, what) && bytes_of(frame, what, "frame"))
        ok(take(h, frame.data, frame.size), what);
}
template <class H>
void floats_in(H *h, gw_status (*take)(H *, const float *, uint64_t), const In &x,
               const char *what, const char *arg) {
    uint64_t n = 0;
    if (detail::live(h, what) && count_of(x, KIND_F32, 4, what, arg, &n))
        ok(take(h, (const float *)x.data, n), what);
}
/* A frame (or bundle) written into caller memory; returns its length. */
template <class H>
uint64_t write_out(H *h, gw_status (*write)(H *, void *, size_t, size_t *), const Out &out,
                   const char *what, const char *arg) {
    size_t written = 0;
    if (detail::live(h, what) && writable_bytes(out, what, arg))
        ok(write(h, out.data, out.size, &written), what);
    return written;
}
template <class H> void call(H *h, gw_status (*fn)(H *), const char *what) {
    if (detail::live(h, what)) ok(fn(h), what);
}
template <class H>
uint64_t tensor_step(H *h,
                     gw_status (*step)(H *, const void *, gw_dtype, uint64_t, float, void *,
                                       size_t, size_t *),
                     const In &grad, gw_dtype dtype, float lr, const Out &frame, const char *what) {
    uint64_t n = 0;
    size_t written = 0;
    if (detail::live(h, what) && tensor_count(grad, dtype, what, &n) &&
        writable_bytes(frame, what, "frame"))
        ok(step(h, grad.data, dtype, n, lr, frame.data, frame.size, &written), what);
    return written;
}
}  // namespace

void clear_error() { err_status = GW_OK; err_message[0] = 0; }
bool error_pending() { return err_status != GW_OK; }
int error_status() { return err_status; }
const char *error_message() { return err_message; }

/* ---------------------------------------------------------------- library */
std::string version() { return gw_version_string(); }
unsigned int version_number() { return gw_version_number(); }
std::string status_name(int s) { return gw_status_name((gw_status)s); }
std::string status_message(int s) { return gw_status_str((gw_status)s); }
void simd_set_target(gw_simd_target t) { ok(gw_simd_set_target(t), "gw_simd_set_target"); }
gw_simd_target simd_active_target() { return gw_simd_active_target(); }
bool simd_target_supported(gw_simd_target t) { return gw_simd_target_supported(t) != 0; }
std::string simd_target_name(gw_simd_target t) {
    const char *n = gw_simd_target_name(t);
    return n ? n : "";
}

/* ----------------------------------------------------------------- codecs */
std::string codec_name(gw_codec_id c) {
    const char *n = gw_codec_name(c);
    return n ? n : "";
}
gw_codec_id codec_from_name(const std::string &name) {
    gw_codec_id c = GW_CODEC_IDENTITY;
    if (gw_codec_from_name(name.c_str(), &c) != GW_OK)
        fail(GW_ERR_INVALID_ARGUMENT, "gw_codec_from_name", "no codec named '%s'", name.c_str());
    return c;
}
U32List codec_list() {
    U32List out;
    size_t count = 0;
    if (!ok(gw_codec_list(nullptr, 0, &count), "gw_codec_list")) return out;
    std::vector<gw_codec_id> ids(count);
    if (!ok(gw_codec_list(ids.data(), count, &count), "gw_codec_list")) return out;
    for (gw_codec_id id : ids) out.data.push_back((uint32_t)id);
    return out;
}
U32List codec_params(gw_codec_id codec) {
    U32List out;
    size_t count = 0;
    if (!ok(gw_codec_params(codec, nullptr, 0, &count), "gw_codec_params")) return out;
    std::vector<gw_param> ps(count);
    if (!ok(gw_codec_params(codec, ps.data(), count, &count), "gw_codec_params")) return out;
    for (gw_param p : ps) out.data.push_back((uint32_t)p);
    return out;
}
std::string param_name(gw_param p) {
    const char *n = gw_param_name(p);
    return n ? n : "";
}
ParamBounds codec_param_bounds(gw_codec_id codec, gw_param param) {
    ParamBounds b;
    ok(gw_codec_param_bounds(codec, param, &b.min, &b.max, &b.default_value),
       "gw_codec_param_bounds");
    return b;
}

CodecSpec::CodecSpec(gw_codec_id codec) {
    ok(gw_codec_spec_create(&spec_, codec), "gw_codec_spec_create");
}
CodecSpec::CodecSpec(const CodecSpec &other) {
    ok(gw_codec_spec_clone(&spec_, other.spec_), "gw_codec_spec_clone");
}
CodecSpec::~CodecSpec() { gw_codec_spec_free(spec_); }
CodecSpec *CodecSpec::from_frame(In frame) {
    if (!bytes_of(frame, "gw_frame_spec", "frame")) return nullptr;
    CodecSpec *s = new CodecSpec();
    if (!ok(gw_frame_spec(frame.data, frame.size, &s->spec_), "gw_frame_spec")) {
        delete s;
        return nullptr;
    }
    return s;
}
gw_codec_id CodecSpec::codec() const {
    gw_codec_id c = GW_CODEC_IDENTITY;
    ok(gw_codec_spec_codec(spec_, &c), "gw_codec_spec_codec");
    return c;
}
void CodecSpec::set(gw_param p, int64_t v) { ok(gw_codec_spec_set(spec_, p, v), "gw_codec_spec_set"); }
int64_t CodecSpec::get(gw_param p) const {
    int64_t v = 0;
    ok(gw_codec_spec_get(spec_, p, &v), "gw_codec_spec_get");
    return v;
}
void CodecSpec::set_f32(gw_param p, float v) {
    ok(gw_codec_spec_set_f32(spec_, p, v), "gw_codec_spec_set_f32");
}
float CodecSpec::get_f32(gw_param p) const {
    float v = 0;
    ok(gw_codec_spec_get_f32(spec_, p, &v), "gw_codec_spec_get_f32");
    return v;
}
bool CodecSpec::equals(const CodecSpec &o) const { return gw_codec_spec_equal(spec_, o.spec_) != 0; }
void CodecSpec::set_link(uint64_t bps) { ok(gw_codec_spec_set_link(spec_, bps), "gw_codec_spec_set_link"); }
uint64_t CodecSpec::get_link() const {
    uint64_t v = 0;
    ok(gw_codec_spec_get_link(spec_, &v), "gw_codec_spec_get_link");
    return v;
}
uint64_t CodecSpec::encode_bound(uint64_t n) const {
    size_t b = 0;
    ok(gw_encode_bound(spec_, n, &b), "gw_encode_bound");
    return b;
}

/* ---------------------------------------------------- stateless encode/decode */
uint64_t tag(uint32_t tensor, uint32_t step) { return GW_TAG(tensor, step); }

uint64_t encode_into(const CodecSpec &spec, const EncodeContext &c, In x, gw_dtype dtype,
                     Out frame) {
    uint64_t n = 0;
    size_t written = 0;
    if (!tensor_count(x, dtype, "gw_encode", &n) || !writable_bytes(frame, "gw_encode", "frame"))
        return 0;
    gw_encode_ctx ctx = to_ctx(c);
    ok(gw_encode(spec.raw(), &ctx, x.data, dtype, n, frame.data, frame.size, &written), "gw_encode");
    return written;
}
Bytes encode(const CodecSpec &spec, const EncodeContext &c, In x, gw_dtype dtype) {
    uint64_t n = 0;
    if (!tensor_count(x, dtype, "gw_encode", &n)) return Bytes();
    return make_bytes(spec.encode_bound(n), [&](Out f) { return encode_into(spec, c, x, dtype, f); });
}
uint64_t decode_into(In frame, Out out) {
    uint64_t cap = 0, count = 0;
    if (!bytes_of(frame, "gw_decode", "frame") ||
        !count_of(out, KIND_F32, 4, "gw_decode", "out", &cap))
        return 0;
    ok(gw_decode(frame.data, frame.size, (float *)out.data, cap, &count), "gw_decode");
    return count;
}
void decode_accumulate(In frame, float alpha, Out acc) {
    uint64_t n = 0;
    if (!bytes_of(frame, "gw_decode_accumulate", "frame") ||
        !count_of(acc, KIND_F32, 4, "gw_decode_accumulate", "acc", &n))
        return;
    ok(gw_decode_accumulate(frame.data, frame.size, alpha, (float *)acc.data, n),
       "gw_decode_accumulate");
}
namespace {
/* The pointers and sizes of a list of frames; false (error set) if one is absent. */
bool frame_arrays(const InList &frames, const char *what, std::vector<const void *> *ptr,
                  std::vector<size_t> *size) {
    for (size_t j = 0; j < frames.items.size(); ++j) {
        if (!frames.items[j].present)
            return fail(GW_ERR_NULL_POINTER, what, "frames[%zu] is None/null", j);
        ptr->push_back(frames.items[j].data);
        size->push_back(frames.items[j].size);
    }
    return true;
}
/* A many-frame call's status, naming the rejected frame (call first: `bad` is its output). */
bool ok_frame(gw_status status, size_t bad, const char *what) {
    if (status == GW_OK || bad == SIZE_MAX) return ok(status, what);
    return fail(status, what, "frames[%zu]: %s", bad, gw_status_str(status));
}
}  // namespace

void decode_accumulate_many(const InList &frames, float alpha, Out acc) {
    const char *what = "gw_decode_accumulate_many";
    uint64_t n = 0;
    std::vector<const void *> ptr;
    std::vector<size_t> size;
    if (!frame_arrays(frames, what, &ptr, &size) || !count_of(acc, KIND_F32, 4, what, "acc", &n))
        return;
    size_t bad = SIZE_MAX;
    const gw_status st = gw_decode_accumulate_many(ptr.data(), size.data(), ptr.size(), alpha,
                                                   (float *)acc.data, n, &bad);
    ok_frame(st, bad, what);
}
FrameInfo frame_inspect(In frame) {
    FrameInfo r;
    gw_frame_info info = GW_FRAME_INFO_INIT;
    if (!bytes_of(frame, "gw_frame_inspect", "frame") ||
        !ok(gw_frame_inspect(frame.data, frame.size, &info), "gw_frame_inspect"))
        return r;
    r.format_version = info.format_version;
    r.codec = info.codec;
    r.flags = info.flags;
    r.tag = info.tag;
    r.count = info.count;
    r.payload_size = info.payload_size;
    r.frame_size = info.frame_size;
    return r;
}
uint64_t frame_size(In header) {
    size_t s = 0;
    if (bytes_of(header, "gw_frame_size", "header"))
        ok(gw_frame_size(header.data, header.size, &s), "gw_frame_size");
    return s;
}
double frame_compression_ratio(In frame) {
    double r = 0;
    if (bytes_of(frame, "gw_frame_compression_ratio", "frame"))
        ok(gw_frame_compression_ratio(frame.data, frame.size, &r), "gw_frame_compression_ratio");
    return r;
}
double scaled_sign_phi(In x, uint32_t block_size) {
    uint64_t n = 0;
    double phi = 0;
    if (count_of(x, KIND_F32, 4, "gw_scaled_sign_phi", "x", &n))
        ok(gw_scaled_sign_phi((const float *)x.data, n, block_size, &phi), "gw_scaled_sign_phi");
    return phi;
}
double codec_contraction(const CodecSpec &spec, const EncodeContext &c, In x) {
    uint64_t n = 0;
    double r = 0;
    gw_encode_ctx ctx = to_ctx(c);
    if (count_of(x, KIND_F32, 4, "gw_codec_contraction", "x", &n))
        ok(gw_codec_contraction(spec.raw(), &ctx, (const float *)x.data, n, &r),
           "gw_codec_contraction");
    return r;
}
uint32_t crc32c(In data) {
    uint32_t c = 0;
    if (bytes_of(data, "gw_crc32c", "data")) ok(gw_crc32c(data.data, data.size, &c), "gw_crc32c");
    return c;
}

/* ------------------------------------------------ sparse helpers, diagnostics */
void randk_indices(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t n, Out idx) {
    uint64_t k = 0;
    if (count_of(idx, KIND_U32, 4, "gw_randk_indices", "idx", &k))
        ok(gw_randk_indices(seed, step, tensor, n, k, (uint32_t *)idx.data), "gw_randk_indices");
}
void randk_positions(unsigned int revision, uint64_t seed, uint32_t step, uint32_t tensor,
                     uint64_t n, Out idx) {
    uint64_t k = 0;
    if (count_of(idx, KIND_U32, 4, "gw_randk_positions", "idx", &k))
        ok(gw_randk_positions(revision, seed, step, tensor, n, k, (uint32_t *)idx.data),
           "gw_randk_positions");
}
Bytes reshard(const InList &blobs, In ranks, In offsets, uint32_t workers_in,
              uint32_t workers_out, uint32_t rank_out, uint64_t offset, uint64_t length) {
    const char *what = "gw_reshard";
    Bytes b;
    uint64_t nr = 0, no = 0;
    if (!count_of(ranks, KIND_U32, 4, what, "ranks", &nr) ||
        !count_of(offsets, KIND_U64, 8, what, "offsets", &no))
        return b;
    if (nr != blobs.items.size() || no != blobs.items.size()) {
        fail(GW_ERR_COUNT_MISMATCH, what, "%zu blobs, %llu ranks, %llu offsets",
             blobs.items.size(), (unsigned long long)nr, (unsigned long long)no);
        return b;
    }
    std::vector<gw_reshard_part> parts(blobs.items.size());
    for (size_t i = 0; i < parts.size(); ++i) {
        const In &x = blobs.items[i];
        if (!x.present) {
            fail(GW_ERR_NULL_POINTER, what, "blobs[%zu] is None/null", i);
            return b;
        }
        uint64_t off;
        memcpy(&off, (const uint8_t *)offsets.data + 8 * i, 8);
        uint32_t rank;
        memcpy(&rank, (const uint8_t *)ranks.data + 4 * i, 4);
        parts[i] = {x.data, x.size, rank, off};
    }
    gw_reshard_options o = GW_RESHARD_OPTIONS_INIT;
    o.workers_in = workers_in, o.workers_out = workers_out, o.rank_out = rank_out;
    o.offset = offset, o.length = length;
    size_t need = 0;
    gw_status st = gw_reshard(parts.data(), parts.size(), &o, nullptr, 0, &need);
    if (st == GW_OK) return b;  // nothing to carry
    if (st != GW_ERR_BUFFER_TOO_SMALL) {
        ok(st, what);
        return b;
    }
    b.data.resize(need);
    size_t written = 0;
    if (!ok(gw_reshard(parts.data(), parts.size(), &o, b.data.data(), need, &written), what))
        b.data.clear();
    return b;
}
void gather(In x, In idx, Out out) {
    uint64_t n = 0, k = 0, m = 0;
    if (!count_of(x, KIND_F32, 4, "gw_gather", "x", &n) ||
        !count_of(idx, KIND_U32, 4, "gw_gather", "idx", &k) ||
        !count_of(out, KIND_F32, 4, "gw_gather", "out", &m))
        return;
    if (m != k) {
        fail(GW_ERR_COUNT_MISMATCH, "gw_gather", "out holds %llu floats for %llu indices",
             (unsigned long long)m, (unsigned long long)k);
        return;
    }
    ok(gw_gather((const float *)x.data, n, (const uint32_t *)idx.data, k, (float *)out.data),
       "gw_gather");
}
void scatter_add(In values, In idx, float alpha, Out acc) {
    uint64_t k = 0, k2 = 0, n = 0;
    if (!count_of(values, KIND_F32, 4, "gw_scatter_add", "values", &k) ||
        !count_of(idx, KIND_U32, 4, "gw_scatter_add", "idx", &k2) ||
        !count_of(acc, KIND_F32, 4, "gw_scatter_add", "acc", &n))
        return;
    if (k != k2) {
        fail(GW_ERR_COUNT_MISMATCH, "gw_scatter_add", "%llu values for %llu indices",
             (unsigned long long)k, (unsigned long long)k2);
        return;
    }
    ok(gw_scatter_add((const float *)values.data, (const uint32_t *)idx.data, k, alpha,
                      (float *)acc.data, n),
       "gw_scatter_add");
}
uint64_t ef_cast(In x, float alpha, Out e, gw_dtype dtype, Out out) {
    const char *what = "gw_ef_cast";
    uint64_t n = 0, ne = 0, no = 0, bad = 0;
    if (dtype != GW_DTYPE_F16 && dtype != GW_DTYPE_BF16) {
        fail(GW_ERR_INVALID_ARGUMENT, what, "dtype must be F16 or BF16, not %d", (int)dtype);
        return 0;
    }
    if (out.present && dtype == GW_DTYPE_BF16 && out.kind == KIND_F16) {
        fail(GW_ERR_INVALID_ARGUMENT, what, "a float16 buffer passed as BF16");
        return 0;
    }
    if (!count_of(x, KIND_F32, 4, what, "x", &n) || !count_of(e, KIND_F32, 4, what, "e", &ne) ||
        !count_of(out, KIND_U16, 2, what, "out", &no))
        return 0;
    if (ne != n || no != n) {
        fail(GW_ERR_COUNT_MISMATCH, what, "x holds %llu values, e %llu, out %llu",
             (unsigned long long)n, (unsigned long long)ne, (unsigned long long)no);
        return 0;
    }
    ok(gw_ef_cast((const float *)x.data, n, alpha, (float *)e.data, dtype, out.data, &bad), what);
    return bad;
}
uint64_t index_frame_indices(In frame, Out idx) {
    uint64_t cap = 0;
    size_t count = 0;
    if (bytes_of(frame, "gw_index_frame_indices", "frame") &&
        count_of(idx, KIND_U32, 4, "gw_index_frame_indices", "idx", &cap))
        ok(gw_index_frame_indices(frame.data, frame.size, (uint32_t *)idx.data, cap, &count),
           "gw_index_frame_indices");
    return count;
}
uint64_t index_frame_count(In frame) {
    size_t count = 0;
    if (bytes_of(frame, "gw_index_frame_indices", "frame"))
        count_query(gw_index_frame_indices(frame.data, frame.size, nullptr, 0, &count),
                    "gw_index_frame_indices");
    return count;
}
double index_overlap(In a, In b) {
    uint64_t na = 0, nb = 0;
    double o = 0;
    if (count_of(a, KIND_U32, 4, "gw_index_overlap", "a", &na) &&
        count_of(b, KIND_U32, 4, "gw_index_overlap", "b", &nb))
        ok(gw_index_overlap((const uint32_t *)a.data, na, (const uint32_t *)b.data, nb, &o),
           "gw_index_overlap");
    return o;
}
void rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, Out out) {
    uint64_t n = 0;
    if (count_of(out, KIND_U32, 4, "gw_rng_u32", "out", &n))
        ok(gw_rng_u32(seed, step, tensor, first, (uint32_t *)out.data, n), "gw_rng_u32");
}
void rng_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, Out out) {
    uint64_t n = 0;
    if (count_of(out, KIND_F32, 4, "gw_rng_uniform", "out", &n))
        ok(gw_rng_uniform(seed, step, tensor, first, (float *)out.data, n), "gw_rng_uniform");
}
ShardRange shard_range(uint64_t total, uint32_t parts, uint32_t index) {
    ShardRange r;
    ok(gw_shard_range(total, parts, index, &r.offset, &r.length), "gw_shard_range");
    return r;
}
uint32_t scalecom_rate(double flops) {
    uint32_t r = 0;
    ok(gw_scalecom_rate(flops, &r), "gw_scalecom_rate");
    return r;
}

/* ---------------------------------------------------------- worker and server */
Worker::Worker(uint64_t n, const CodecSpec &codec, gw_momentum momentum, float mu,
               bool error_feedback, uint32_t tensor, uint64_t seed)
    : n_(n) {
    gw_worker_options o = GW_WORKER_OPTIONS_INIT;
    o.n = n;
    o.momentum = momentum;
    o.mu = momentum == GW_MOMENTUM_NONE ? 0.0f : mu;
    o.error_feedback = error_feedback ? 1 : 0;
    o.tensor = tensor;
    o.seed = seed;
    ok(gw_worker_create(&h_, &o, codec.raw()), "gw_worker_create");
}
uint64_t Worker::step_into(In grad, gw_dtype dtype, float lr, Out frame) {
    return tensor_step(h_, gw_worker_step, grad, dtype, lr, frame, "gw_worker_step");
}
Bytes Worker::step(In grad, gw_dtype dtype, float lr) {
    return make_bytes(frame_bound(), [&](Out f) { return step_into(grad, dtype, lr, f); });
}
void Worker::residual(Out out) const {
    read_floats(h_, gw_worker_residual, n_, out, "gw_worker_residual");
}
void Worker::momentum(Out out) const {
    read_floats(h_, gw_worker_momentum, n_, out, "gw_worker_momentum");
}

Server::Server(uint64_t total, uint32_t num_workers, const CodecSpec &broadcast,
               const CodecSpec *expect, uint64_t offset, uint64_t length, bool error_feedback,
               uint32_t tensor, bool check_tag) {
    gw_server_options o = GW_SERVER_OPTIONS_INIT;
    o.total = total;
    o.offset = offset;
    /* The default length: the rest of the tensor from offset. */
    o.length = length == UINT64_MAX ? (offset <= total ? total - offset : 0) : length;
    o.num_workers = num_workers;
    o.error_feedback = error_feedback ? 1 : 0;
    o.tensor = tensor;
    o.check_tag = check_tag ? 1 : 0;
    n_ = o.length;
    ok(gw_server_create(&h_, &o, broadcast.raw(), expect ? expect->raw() : nullptr),
       "gw_server_create");
}
void Server::push(In frame) { frame_in(h_, gw_server_push, frame, "gw_server_push"); }
uint64_t Server::step_into(float lr, Out frame) {
    size_t written = 0;
    GWB_LIVE(h_, "gw_server_step", 0);
    if (writable_bytes(frame, "gw_server_step", "frame"))
        ok(gw_server_step(h_, lr, frame.data, frame.size, &written), "gw_server_step");
    return written;
}
Bytes Server::step(float lr) {
    return make_bytes(frame_bound(), [&](Out f) { return step_into(lr, f); });
}
uint64_t Server::round_into(const InList &frames, float lr, Out frame) {
    const char *what = "gw_server_round";
    size_t written = 0, bad = SIZE_MAX;
    std::vector<const void *> ptr;
    std::vector<size_t> size;
    GWB_LIVE(h_, what, 0);
    if (frame_arrays(frames, what, &ptr, &size) && writable_bytes(frame, what, "frame")) {
        const gw_status st = gw_server_round(h_, ptr.data(), size.data(), ptr.size(), lr,
                                             frame.data, frame.size, &written, &bad);
        ok_frame(st, bad, what);
    }
    return written;
}
Bytes Server::round(const InList &frames, float lr) {
    return make_bytes(frame_bound(), [&](Out f) { return round_into(frames, lr, f); });
}
void Server::reset_round() { call(h_, gw_server_reset_round, "gw_server_reset_round"); }
void Server::residual(Out out) const {
    read_floats(h_, gw_server_residual, n_, out, "gw_server_residual");
}

/* --------------------------------------------------------------- ScaleCom */
Cltk::Cltk(uint64_t n, uint32_t num_workers, uint32_t rank, const CodecSpec &index, float beta,
           uint64_t warmup_steps, uint32_t tensor)
    : n_(n) {
    gw_cltk_options o = GW_CLTK_OPTIONS_INIT;
    o.n = n;
    o.num_workers = num_workers;
    o.rank = rank;
    o.beta = beta;
    o.warmup_steps = warmup_steps;
    o.tensor = tensor;
    ok(gw_cltk_create(&h_, &o, index.raw()), "gw_cltk_create");
}
uint64_t Cltk::values_bound() const {
    return detail::value<size_t>(h_, gw_cltk_values_bound, "gw_cltk_values_bound");
}
uint32_t Cltk::leader() const {
    return detail::value<uint32_t>(h_, gw_cltk_leader, "gw_cltk_leader");
}
void Cltk::set_leader(uint32_t leader) {
    GWB_LIVE(h_, "gw_cltk_set_leader", );
    ok(gw_cltk_set_leader(h_, leader), "gw_cltk_set_leader");
}
void Cltk::begin(In grad, gw_dtype dtype, float lr) {
    uint64_t n = 0;
    GWB_LIVE(h_, "gw_cltk_begin", );
    if (tensor_count(grad, dtype, "gw_cltk_begin", &n))
        ok(gw_cltk_begin(h_, grad.data, dtype, n, lr), "gw_cltk_begin");
}
uint64_t Cltk::select_into(Out frame) {
    return write_out(h_, gw_cltk_select, frame, "gw_cltk_select", "frame");
}
Bytes Cltk::select() {
    return make_bytes(index_frame_bound(), [&](Out f) { return select_into(f); });
}
uint64_t Cltk::extract(In frame, Out values) {
    uint64_t cap = 0;
    size_t count = 0;
    GWB_LIVE(h_, "gw_cltk_extract", 0);
    if (count_of(values, KIND_F32, 4, "gw_cltk_extract", "values", &cap))
        ok(gw_cltk_extract(h_, frame.present ? frame.data : nullptr, frame.present ? frame.size : 0,
                           (float *)values.data, cap, &count),
           "gw_cltk_extract");
    return count;
}
void Cltk::apply(In summed, Out x) {
    uint64_t k = 0, n = 0;
    GWB_LIVE(h_, "gw_cltk_apply", );
    if (!count_of(summed, KIND_F32, 4, "gw_cltk_apply", "summed", &k)) return;
    if (x.present && !floats_exactly(x, n_, "gw_cltk_apply", "x")) return;
    if (x.present) n = n_;
    ok(gw_cltk_apply(h_, (const float *)summed.data, k, x.present ? (float *)x.data : nullptr, n),
       "gw_cltk_apply");
}
void Cltk::reset_round() { call(h_, gw_cltk_reset_round, "gw_cltk_reset_round"); }
void Cltk::memory(Out out) const { read_floats(h_, gw_cltk_memory, n_, out, "gw_cltk_memory"); }
uint64_t Cltk::indices(Out idx) const {
    uint64_t cap = 0;
    size_t count = 0;
    GWB_LIVE(h_, "gw_cltk_indices", 0);
    if (count_of(idx, KIND_U32, 4, "gw_cltk_indices", "idx", &cap))
        ok(gw_cltk_indices(h_, (uint32_t *)idx.data, cap, &count), "gw_cltk_indices");
    return count;
}

/* -------------------------------------------------------------- LAGS-SGD */
LagsLayer::LagsLayer(uint64_t n, const CodecSpec &codec, uint32_t tensor, uint64_t seed) : n_(n) {
    gw_lags_layer_options o = GW_LAGS_LAYER_OPTIONS_INIT;
    o.n = n;
    o.tensor = tensor;
    o.seed = seed;
    ok(gw_lags_layer_create(&h_, &o, codec.raw()), "gw_lags_layer_create");
}
void LagsLayer::set_k(uint64_t k) {
    GWB_LIVE(h_, "gw_lags_layer_set_k", );
    ok(gw_lags_layer_set_k(h_, k), "gw_lags_layer_set_k");
}
uint64_t LagsLayer::k() const {
    return detail::value<uint64_t>(h_, gw_lags_layer_k, "gw_lags_layer_k");
}
uint64_t LagsLayer::step_into(In grad, gw_dtype dtype, float lr, Out frame) {
    return tensor_step(h_, gw_lags_layer_step, grad, dtype, lr, frame, "gw_lags_layer_step");
}
Bytes LagsLayer::step(In grad, gw_dtype dtype, float lr) {
    return make_bytes(frame_bound(), [&](Out f) { return step_into(grad, dtype, lr, f); });
}
void LagsLayer::step_dense(In grad, gw_dtype dtype, float lr, Out out) {
    uint64_t n = 0;
    GWB_LIVE(h_, "gw_lags_layer_step_dense", );
    if (tensor_count(grad, dtype, "gw_lags_layer_step_dense", &n) &&
        floats_exactly(out, n_, "gw_lags_layer_step_dense", "out"))
        ok(gw_lags_layer_step_dense(h_, grad.data, dtype, n, lr, (float *)out.data),
           "gw_lags_layer_step_dense");
}
void LagsLayer::residual(Out out) const {
    read_floats(h_, gw_lags_layer_residual, n_, out, "gw_lags_layer_residual");
}

/* ---------------------------------------------------------------- AsyLPG */
AsylpgMaster::AsylpgMaster(In x0, gw_asylpg_variant variant, float lr, float l1, float l2,
                           uint64_t epoch_length, uint32_t tau, float mu, unsigned bits_min,
                           unsigned bits_max, uint32_t model_block, uint32_t tensor,
                           uint64_t seed) {
    const char *what = "gw_asylpg_master_create";
    if (!count_of(x0, KIND_F32, 4, what, "x0", &n_)) return;
    gw_asylpg_master_options o = GW_ASYLPG_MASTER_OPTIONS_INIT;
    o.n = n_;
    o.variant = variant;
    o.lr = lr;
    o.l1 = l1;
    o.l2 = l2;
    o.epoch_length = epoch_length;
    o.tau = tau;
    o.mu = mu;
    o.bits_min = bits_min;
    o.bits_max = bits_max;
    o.model_block = model_block;
    o.tensor = tensor;
    o.seed = seed;
    ok(gw_asylpg_master_create(&h_, &o, (const float *)x0.data, n_), what);
}
void AsylpgMaster::snapshot(Out out) const {
    read_floats(h_, gw_asylpg_master_snapshot, n_, out, "gw_asylpg_master_snapshot");
}
void AsylpgMaster::begin_epoch(In full_grad) {
    floats_in(h_, gw_asylpg_master_begin_epoch, full_grad, "gw_asylpg_master_begin_epoch",
              "full_grad");
}
uint64_t AsylpgMaster::model_into(Out frame) {
    size_t written = 0;
    GWB_LIVE(h_, "gw_asylpg_master_model", 0);
    if (writable_bytes(frame, "gw_asylpg_master_model", "frame"))
        ok(gw_asylpg_master_model(h_, frame.data, frame.size, &written, &bits_),
           "gw_asylpg_master_model");
    return written;
}
Bytes AsylpgMaster::model() {
    return make_bytes(frame_bound(), [&](Out f) { return model_into(f); });
}
void AsylpgMaster::push(In frame) {
    frame_in(h_, gw_asylpg_master_push, frame, "gw_asylpg_master_push");
}
void AsylpgMaster::params(Out out) const {
    read_floats(h_, gw_asylpg_master_params, n_, out, "gw_asylpg_master_params");
}
U64List AsylpgMaster::progress() const {
    U64List l;
    uint64_t e = 0, i = 0, v = 0;
    int running = 0;
    GWB_LIVE(h_, "gw_asylpg_master_progress", l);
    if (ok(gw_asylpg_master_progress(h_, &e, &i, &v, &running), "gw_asylpg_master_progress"))
        l.data = {e, i, v, uint64_t(running)};
    return l;
}

AsylpgWorker::AsylpgWorker(uint64_t n, const CodecSpec &codec, uint32_t tensor, uint64_t seed)
    : n_(n) {
    gw_asylpg_worker_options o = GW_ASYLPG_WORKER_OPTIONS_INIT;
    o.n = n;
    o.tensor = tensor;
    o.seed = seed;
    ok(gw_asylpg_worker_create(&h_, &o, codec.raw()), "gw_asylpg_worker_create");
}
void AsylpgWorker::set_snapshot(In snapshot) {
    floats_in(h_, gw_asylpg_worker_set_snapshot, snapshot, "gw_asylpg_worker_set_snapshot",
              "snapshot");
}
void AsylpgWorker::receive(In frame) {
    frame_in(h_, gw_asylpg_worker_receive, frame, "gw_asylpg_worker_receive");
}
uint64_t AsylpgWorker::model(Out out) const {
    uint64_t v = 0;
    GWB_LIVE(h_, "gw_asylpg_worker_model", 0);
    if (floats_exactly(out, n_, "gw_asylpg_worker_model", "out"))
        ok(gw_asylpg_worker_model(h_, (float *)out.data, n_, &v), "gw_asylpg_worker_model");
    return v;
}
uint64_t AsylpgWorker::step_into(In gm, In gs, gw_dtype dtype, Out frame) {
    uint64_t n = 0, n2 = 0;
    size_t written = 0;
    const char *what = "gw_asylpg_worker_step";
    GWB_LIVE(h_, what, 0);
    if (!tensor_count(gm, dtype, what, &n) || !tensor_count(gs, dtype, what, &n2) ||
        !writable_bytes(frame, what, "frame"))
        return 0;
    if (n != n2) {
        fail(GW_ERR_COUNT_MISMATCH, what, "the two gradients differ in length");
        return 0;
    }
    ok(gw_asylpg_worker_step(h_, gm.data, gs.data, dtype, n, frame.data, frame.size, &written),
       what);
    return written;
}
Bytes AsylpgWorker::step(In gm, In gs, gw_dtype dtype) {
    return make_bytes(frame_bound(), [&](Out f) { return step_into(gm, gs, dtype, f); });
}

LagsPlanTimes lags_plan(const LagsNetwork &n_, In n, In t_backward, In t_sparsify, Out ratio,
                        Out k, Out verdict) {
    LagsPlanTimes t;
    const char *what = "gw_lags_plan";
    uint64_t layers = 0, tb = 0, ts = 0, r = 0, kk = 0, v = 0;
    if (!count_of(n, KIND_U64, 8, what, "n", &layers) ||
        !count_of(t_backward, KIND_F64, 8, what, "t_backward", &tb) ||
        (t_sparsify.present && !count_of(t_sparsify, KIND_F64, 8, what, "t_sparsify", &ts)) ||
        !count_of(ratio, KIND_F64, 8, what, "ratio", &r) ||
        !count_of(k, KIND_U64, 8, what, "k", &kk) ||
        !count_of(verdict, KIND_I32, 4, what, "verdict", &v))
        return t;
    if (tb != layers || (t_sparsify.present && ts != layers) || r != layers || kk != layers ||
        v != layers) {
        fail(GW_ERR_COUNT_MISMATCH, what, "every array must have one entry per layer (%llu)",
             (unsigned long long)layers);
        return t;
    }
    gw_lags_network net = GW_LAGS_NETWORK_INIT;
    net.num_workers = n_.num_workers;
    net.allgather_alpha = n_.allgather_alpha;
    net.allgather_beta = n_.allgather_beta;
    net.allreduce_alpha = n_.allreduce_alpha;
    net.allreduce_beta = n_.allreduce_beta;
    net.value_bytes = n_.value_bytes;
    net.max_ratio = n_.max_ratio;
    ok(gw_lags_plan(&net, layers, (const uint64_t *)n.data, (const double *)t_backward.data,
                    t_sparsify.present ? (const double *)t_sparsify.data : nullptr,
                    (double *)ratio.data, (uint64_t *)k.data, (gw_lags_verdict *)verdict.data,
                    &t.t_plan, &t.t_dense),
       what);
    return t;
}
double lags_s_max(double t_f, double t_b, double t_c) {
    double s = 0;
    ok(gw_lags_s_max(t_f, t_b, t_c, &s), "gw_lags_s_max");
    return s;
}
double sparsity_delta(In xs, uint32_t workers, uint64_t k) {
    uint64_t total = 0;
    double d = 0;
    if (!count_of(xs, KIND_F32, 4, "gw_sparsity_delta", "xs", &total)) return 0;
    if (workers == 0 || total % workers) {
        fail(GW_ERR_INVALID_ARGUMENT, "gw_sparsity_delta",
             "xs holds %llu floats, not %u vectors of equal length", (unsigned long long)total,
             workers);
        return 0;
    }
    uint64_t n = total / workers;
    std::vector<const float *> rows(workers);
    for (uint32_t p = 0; p < workers; p++) rows[p] = (const float *)xs.data + p * n;
    ok(gw_sparsity_delta(rows.data(), workers, n, k, &d), "gw_sparsity_delta");
    return d;
}

Fusion::Fusion(uint32_t layers, uint64_t capacity) {
    gw_fusion_options o = GW_FUSION_OPTIONS_INIT;
    o.layers = layers;
    o.capacity = capacity;
    ok(gw_fusion_create(&h_, &o), "gw_fusion_create");
}
bool Fusion::add(uint32_t layer, In frame) {
    int flush = 0;
    GWB_LIVE(h_, "gw_fusion_add", false);
    if (bytes_of(frame, "gw_fusion_add", "frame"))
        ok(gw_fusion_add(h_, layer, frame.data, frame.size, &flush), "gw_fusion_add");
    return flush != 0;
}
uint64_t Fusion::bundle_size() const {
    return detail::value<size_t>(h_, gw_fusion_bundle_size, "gw_fusion_bundle_size");
}
uint64_t Fusion::pending() const {
    return detail::value<size_t>(h_, gw_fusion_pending, "gw_fusion_pending");
}
uint64_t Fusion::flush_into(Out bundle) {
    return write_out(h_, gw_fusion_flush, bundle, "gw_fusion_flush", "bundle");
}
Bytes Fusion::flush() {
    return make_bytes(bundle_size(), [&](Out b) { return flush_into(b); });
}
U64List bundle_frames(In bundle) {
    U64List out;
    size_t count = 0;
    if (!bytes_of(bundle, "gw_bundle_frames", "bundle")) return out;
    if (!count_query(gw_bundle_frames(bundle.data, bundle.size, nullptr, 0, &count),
                     "gw_bundle_frames"))
        return out;
    std::vector<gw_bundle_entry> e(count);
    if (!ok(gw_bundle_frames(bundle.data, bundle.size, e.data(), count, &count), "gw_bundle_frames"))
        return out;
    for (const gw_bundle_entry &x : e) {
        out.data.push_back(x.layer);
        out.data.push_back(x.offset);
        out.data.push_back(x.size);
    }
    return out;
}

}  // namespace gwb
