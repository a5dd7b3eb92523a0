// The extern "C" layer: argument checks, option-struct versions, translation
// of public options into the core's own configs, status codes and handle
// lifetimes. All logic lives in src/; the core never sees a public struct.
#include "gradwire.h"

#include <cmath>
#include <cstring>
#include <new>

#include "api_internal.hpp"
#include "codecs/codec.hpp"
#include "handles.hpp"
#include "frame/frame.hpp"
#include "frame/many.hpp"
#include "kernels/kernels.hpp"
#include "util/bytes.hpp"
#include "util/shard.hpp"

#define GW_STR2(x) #x
#define GW_STR(x) GW_STR2(x)

using namespace gw::api;

extern "C" {

const char* gw_status_str(gw_status status) {
    switch (gw::enum_value(status)) {
        case GW_OK: return "ok";
        case GW_ERR_NULL_POINTER: return "a required pointer argument is NULL";
        case GW_ERR_INVALID_ARGUMENT: return "an argument is out of its documented range";
        case GW_ERR_BUFFER_TOO_SMALL: return "output buffer too small (see the _bound function)";
        case GW_ERR_OUT_OF_MEMORY: return "out of memory";
        case GW_ERR_UNSUPPORTED: return "not supported by this build or CPU";
        case GW_ERR_OPTIONS_VERSION: return "unknown options/info struct version";
        case GW_ERR_NONFINITE: return "input contains NaN or Inf; nothing was changed";
        case GW_ERR_SEQUENCE: return "call out of sequence";
        case GW_ERR_COUNT_MISMATCH: return "element count differs from the tensor length";
        case GW_ERR_CODEC_MISMATCH: return "frame codec or parameters differ from the ones expected";
        case GW_ERR_OVERLAP: return "input and output buffers overlap";
        case GW_ERR_TAG_MISMATCH: return "frame tag is not the tensor and round expected";
        case GW_ERR_OVERFLOW: return "finite inputs but the result overflows float32; nothing was changed";
        case GW_ERR_STALE: return "gradient frame computed on parameters older than the delay bound tau; rejected";
        case GW_ERR_FRAME_TRUNCATED: return "frame truncated";
        case GW_ERR_FRAME_MAGIC: return "not a gradwire frame (bad magic)";
        case GW_ERR_FRAME_VERSION: return "unsupported frame format version";
        case GW_ERR_FRAME_CODEC: return "unknown codec id in frame";
        case GW_ERR_FRAME_FLAGS: return "reserved or forbidden frame flag bits set";
        case GW_ERR_FRAME_CHECKSUM: return "frame checksum mismatch";
        case GW_ERR_FRAME_LENGTH: return "frame payload length inconsistent with its count";
        case GW_ERR_FRAME_PARAMS: return "malformed codec parameters in frame";
        case GW_ERR_FRAME_PAYLOAD: return "invalid frame payload";
        case GW_ERR_FRAME_TRAILING: return "bytes after the end of the frame";
        case GW_ERR_FRAME_INDEX: return "sparse index out of range";
        case GW_ERR_FRAME_ZSTD: return "zstd stage malformed, oversized or not canonical";
        case GW_ERR_STATE_MAGIC: return "not a gradwire state blob (bad magic)";
        case GW_ERR_STATE_VERSION: return "unsupported state blob version";
        case GW_ERR_STATE_CHECKSUM: return "state blob checksum mismatch";
        case GW_ERR_STATE_MISMATCH: return "state blob belongs to a differently configured handle";
        case GW_ERR_STATE_CORRUPT: return "state blob malformed";
        case GW_ERR_STATE_MISSING: return "re-sharding: a worker's state or a slice of the range is missing";
        case GW_ERR_STATE_DUPLICATE: return "re-sharding: a worker's state or a slice is given twice";
        case GW_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char* gw_status_name(gw_status status) {
#define GW_NAME(s) \
    case s: return #s;
    switch (gw::enum_value(status)) {
        GW_NAME(GW_OK) GW_NAME(GW_ERR_NULL_POINTER) GW_NAME(GW_ERR_INVALID_ARGUMENT)
        GW_NAME(GW_ERR_BUFFER_TOO_SMALL) GW_NAME(GW_ERR_OUT_OF_MEMORY) GW_NAME(GW_ERR_UNSUPPORTED)
        GW_NAME(GW_ERR_OPTIONS_VERSION) GW_NAME(GW_ERR_NONFINITE) GW_NAME(GW_ERR_SEQUENCE)
        GW_NAME(GW_ERR_COUNT_MISMATCH) GW_NAME(GW_ERR_CODEC_MISMATCH) GW_NAME(GW_ERR_OVERLAP)
        GW_NAME(GW_ERR_TAG_MISMATCH) GW_NAME(GW_ERR_OVERFLOW) GW_NAME(GW_ERR_STALE) GW_NAME(GW_ERR_FRAME_TRUNCATED)
        GW_NAME(GW_ERR_FRAME_MAGIC) GW_NAME(GW_ERR_FRAME_VERSION) GW_NAME(GW_ERR_FRAME_CODEC)
        GW_NAME(GW_ERR_FRAME_FLAGS) GW_NAME(GW_ERR_FRAME_CHECKSUM) GW_NAME(GW_ERR_FRAME_LENGTH)
        GW_NAME(GW_ERR_FRAME_PARAMS) GW_NAME(GW_ERR_FRAME_PAYLOAD) GW_NAME(GW_ERR_FRAME_TRAILING)
        GW_NAME(GW_ERR_FRAME_INDEX) GW_NAME(GW_ERR_FRAME_ZSTD) GW_NAME(GW_ERR_STATE_MAGIC)
        GW_NAME(GW_ERR_STATE_VERSION) GW_NAME(GW_ERR_STATE_CHECKSUM) GW_NAME(GW_ERR_STATE_MISMATCH)
        GW_NAME(GW_ERR_STATE_CORRUPT) GW_NAME(GW_ERR_STATE_MISSING)
        GW_NAME(GW_ERR_STATE_DUPLICATE) GW_NAME(GW_ERR_INTERNAL)
    }
#undef GW_NAME
    return "GW_UNKNOWN";
}

unsigned int gw_version_number(void) { return GW_VERSION_NUMBER; }

const char* gw_version_string(void) {
    return GW_STR(GW_VERSION_MAJOR) "." GW_STR(GW_VERSION_MINOR) "." GW_STR(GW_VERSION_PATCH);
}

/* SIMD ------------------------------------------------------------------- */

gw_status gw_simd_set_target(gw_simd_target t) { return gw::kern::set_target(checked_target(t)); }
gw_simd_target gw_simd_active_target(void) { return gw::kern::active_target(); }
int gw_simd_target_supported(gw_simd_target target) {
    const gw_simd_target t = checked_target(target);
    return t != GW_SIMD_AUTO && gw::kern::table_for(t) != nullptr;
}
const char* gw_simd_target_name(gw_simd_target t) {
    return gw::kern::target_name(checked_target(t));
}

/* Codecs and specs --------------------------------------------------------- */

const char* gw_codec_name(gw_codec_id codec) {
    const gw::Codec* c = checked_codec(codec);
    return c ? c->name : nullptr;
}

gw_status gw_codec_from_name(const char* name, gw_codec_id* codec) {
    if (!name || !codec) return GW_ERR_NULL_POINTER;
    for (size_t i = 0; i < gw::codec_count(); ++i)
        if (std::strcmp(gw::codec_at(i)->name, name) == 0) {
            *codec = gw::codec_at(i)->id;
            return GW_OK;
        }
    return GW_ERR_INVALID_ARGUMENT;
}

gw_status gw_codec_list(gw_codec_id* ids, size_t capacity, size_t* count) {
    if (!count || (!ids && capacity)) return GW_ERR_NULL_POINTER;
    *count = gw::codec_count();
    for (size_t i = 0; i < capacity && i < *count; ++i) ids[i] = gw::codec_at(i)->id;
    return GW_OK;
}

gw_status gw_codec_params(gw_codec_id codec, gw_param* params, size_t capacity, size_t* count) {
    if (!count || (!params && capacity)) return GW_ERR_NULL_POINTER;
    const gw::Codec* c = checked_codec(codec);
    if (!c) return GW_ERR_INVALID_ARGUMENT;
    *count = c->num_params;
    for (size_t i = 0; i < capacity && i < c->num_params; ++i) params[i] = c->params[i].id;
    return GW_OK;
}

const char* gw_param_name(gw_param param) { return gw::param_name(gw::enum_value(param)); }

gw_status gw_codec_param_bounds(gw_codec_id codec, gw_param param, int64_t* min, int64_t* max,
                                int64_t* default_value) {
    const gw::Codec* c = checked_codec(codec);
    if (!c) return GW_ERR_INVALID_ARGUMENT;
    const int slot = gw::param_slot(*c, gw::enum_value(param));
    if (slot < 0) return GW_ERR_INVALID_ARGUMENT;
    if (min) *min = c->params[slot].min;
    if (max) *max = c->params[slot].max;
    if (default_value) *default_value = c->params[slot].def;
    return GW_OK;
}

gw_status gw_codec_flags(gw_codec_id codec, uint32_t* flags) {
    if (!flags) return GW_ERR_NULL_POINTER;
    const gw::Codec* c = checked_codec(codec);
    if (!c) return GW_ERR_INVALID_ARGUMENT;
    *flags = c->caps & gw::kCapPublic;
    return GW_OK;
}

gw_status gw_codec_spec_create(gw_codec_spec** spec, gw_codec_id codec) {
    if (!spec) return GW_ERR_NULL_POINTER;
    const gw::Codec* c = checked_codec(codec);
    if (!c) return GW_ERR_INVALID_ARGUMENT;
    gw_codec_spec* s = new (std::nothrow) gw_codec_spec{gw::default_params(*c)};
    if (!s) return GW_ERR_OUT_OF_MEMORY;
    *spec = s;
    return GW_OK;
}

gw_status gw_codec_spec_clone(gw_codec_spec** copy, const gw_codec_spec* spec) {
    if (!copy || !spec) return GW_ERR_NULL_POINTER;
    gw_codec_spec* s = new (std::nothrow) gw_codec_spec{spec->p};
    if (!s) return GW_ERR_OUT_OF_MEMORY;
    *copy = s;
    return GW_OK;
}

void gw_codec_spec_free(gw_codec_spec* spec) { delete spec; }

gw_status gw_codec_spec_set(gw_codec_spec* spec, gw_param param, int64_t value) {
    if (!spec) return GW_ERR_NULL_POINTER;
    return gw::set_param(&spec->p, gw::enum_value(param), value);
}

gw_status gw_codec_spec_get(const gw_codec_spec* spec, gw_param param, int64_t* value) {
    if (!spec || !value) return GW_ERR_NULL_POINTER;
    const int slot = gw::param_slot(*spec->p.codec, gw::enum_value(param));
    if (slot < 0) return GW_ERR_INVALID_ARGUMENT;
    *value = spec->p.v[slot];
    return GW_OK;
}

gw_status gw_codec_spec_codec(const gw_codec_spec* spec, gw_codec_id* codec) {
    if (!spec || !codec) return GW_ERR_NULL_POINTER;
    *codec = spec->p.codec->id;
    return GW_OK;
}

int gw_codec_spec_equal(const gw_codec_spec* a, const gw_codec_spec* b) {
    return a && b && gw::params_equal(a->p, b->p);
}

gw_status gw_codec_spec_set_link(gw_codec_spec* spec, uint64_t bits_per_second) {
    if (!spec) return GW_ERR_NULL_POINTER;
    spec->p.link_bps = bits_per_second;
    return GW_OK;
}

gw_status gw_codec_spec_get_link(const gw_codec_spec* spec, uint64_t* bits_per_second) {
    if (!spec || !bits_per_second) return GW_ERR_NULL_POINTER;
    *bits_per_second = spec->p.link_bps;
    return GW_OK;
}

/* Encode and decode -------------------------------------------------------- */

gw_status gw_encode_ctx_init(gw_encode_ctx* ctx, unsigned int version) {
    return init_versioned(ctx, version, GW_ENCODE_CTX_VERSION, gw_encode_ctx GW_ENCODE_CTX_INIT);
}

gw_status gw_encode_bound(const gw_codec_spec* spec, uint64_t n, size_t* bound) {
    if (!spec || !bound) return GW_ERR_NULL_POINTER;
    if (!gw::frame::frame_bound(spec->p, n, bound)) return GW_ERR_INVALID_ARGUMENT;
    return GW_OK;
}

gw_status gw_encode(const gw_codec_spec* spec, const gw_encode_ctx* ctx, const void* x,
                    gw_dtype dtype, uint64_t n, void* frame, size_t capacity, size_t* written) {
    if (!spec || !frame || !written || (!x && n)) return GW_ERR_NULL_POINTER;
    if (ctx && !known_version(ctx->version, GW_ENCODE_CTX_VERSION)) return GW_ERR_OPTIONS_VERSION;
    if (!valid_dtype(dtype) || n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    if (overlaps(x, span_bytes(n, dtype_size(dtype)), frame, capacity)) return GW_ERR_OVERLAP;
    gw::Context& cx = gw::thread_context();
    const float* xf = gw::widen_to_f32(cx.k(), x, dtype, n, cx.convert);
    if (!xf && n) return GW_ERR_OUT_OF_MEMORY;
    gw::EncodeCtx c =
        ctx ? gw::encode_ctx(cx, ctx->seed, ctx->step, ctx->tensor) : gw::encode_ctx(cx, 0, 0, 0);
    c.check_unread = false;
    const uint64_t tag = ctx ? ctx->tag : 0;
    return gw::frame::encode(cx, spec->p, c, tag, xf, n, frame, capacity, written, nullptr);
}

gw_status gw_decode(const void* frame, size_t size, float* out, uint64_t capacity,
                    uint64_t* count) {
    if ((!frame && size) || (!out && capacity)) return GW_ERR_NULL_POINTER;
    if (capacity > GW_MAX_ELEMENTS) capacity = GW_MAX_ELEMENTS;
    if (overlaps(frame, size, out, span_bytes(capacity, 4))) return GW_ERR_OVERLAP;
    gw::Context& cx = gw::thread_context();
    gw::frame::View v;
    gw::frame::DecodeInto into{out, capacity};
    const gw_status st = gw::frame::open(cx, frame, size, true, &v, &into);
    if (st != GW_OK) return st;
    if (v.count > capacity) return GW_ERR_BUFFER_TOO_SMALL;
    if (v.count && !into.done)
        v.params.codec->decode(cx.k(), v.params, v.payload, v.payload_len, v.count, out);
    if (count) *count = v.count;
    return GW_OK;
}

gw_status gw_decode_accumulate(const void* frame, size_t size, float alpha, float* acc,
                               uint64_t n) {
    if ((!frame && size) || (!acc && n)) return GW_ERR_NULL_POINTER;
    if (!std::isfinite(alpha) || n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    if (overlaps(frame, size, acc, span_bytes(n, 4))) return GW_ERR_OVERLAP;
    gw::Context& cx = gw::thread_context();
    gw::frame::View v;
    const gw_status st = gw::frame::open(cx, frame, size, true, &v);
    if (st != GW_OK) return st;
    if (v.count != n) return GW_ERR_COUNT_MISMATCH;
    if (n) v.params.codec->accumulate(cx.k(), v.params, v.payload, v.payload_len, n, alpha, acc);
    return GW_OK;
}

gw_status gw_decode_accumulate_many(const void* const* frames, const size_t* sizes, size_t count,
                                    float alpha, float* acc, uint64_t n, size_t* bad) {
    size_t bad_local = 0;
    if (!bad) bad = &bad_local;
    *bad = SIZE_MAX;
    if ((!frames || !sizes) && count) return GW_ERR_NULL_POINTER;
    if (!acc && n) return GW_ERR_NULL_POINTER;
    if (!std::isfinite(alpha) || n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    for (size_t j = 0; j < count; ++j) {
        gw_status st = GW_OK;
        if (!frames[j] && sizes[j]) st = GW_ERR_NULL_POINTER;
        else if (overlaps(frames[j], sizes[j], acc, span_bytes(n, 4))) st = GW_ERR_OVERLAP;
        if (st != GW_OK) {
            *bad = j;
            return st;
        }
    }
    gw::Context& cx = gw::thread_context();
    gw::frame::Many m;
    const gw_status st = gw::frame::open_many(
        frames, sizes, count, n, cx, [](const gw::frame::View&) { return GW_OK; }, &m, bad);
    if (st != GW_OK) return st;
    gw::frame::add_all(cx, m, n, alpha, acc);
    return GW_OK;
}

gw_status gw_scaled_sign_phi(const float* x, uint64_t n, uint32_t block_size, double* phi) {
    if ((!x && n) || !phi) return GW_ERR_NULL_POINTER;
    if (n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    return gw::scaled_sign_phi(gw::kern::active(), x, n, block_size, phi);
}

/* Frames -------------------------------------------------------------------- */

gw_status gw_frame_size(const void* header, size_t size, size_t* frame_size) {
    if ((!header && size) || !frame_size) return GW_ERR_NULL_POINTER;
    return gw::frame::frame_size(gw::kern::active(), header, size, frame_size);
}

gw_status gw_frame_info_init(gw_frame_info* info, unsigned int version) {
    return init_versioned(info, version, GW_FRAME_INFO_VERSION, gw_frame_info GW_FRAME_INFO_INIT);
}

gw_status gw_frame_inspect(const void* frame, size_t size, gw_frame_info* info) {
    if ((!frame && size) || !info) return GW_ERR_NULL_POINTER;
    if (!known_version(info->version, GW_FRAME_INFO_VERSION)) return GW_ERR_OPTIONS_VERSION;
    gw::frame::View v;
    const gw_status st = gw::frame::open(gw::thread_context(), frame, size, false, &v);
    if (st != GW_OK) return st;
    info->format_version = v.format;
    info->codec = v.params.codec->id;
    info->flags = v.flags;
    info->tag = v.tag;
    info->count = v.count;
    info->payload_size = v.wire_payload_len;
    info->frame_size = v.frame_size;
    return GW_OK;
}

gw_status gw_frame_spec(const void* frame, size_t size, gw_codec_spec** spec) {
    if ((!frame && size) || !spec) return GW_ERR_NULL_POINTER;
    gw::frame::View v;
    const gw_status st = gw::frame::open(gw::thread_context(), frame, size, false, &v);
    if (st != GW_OK) return st;
    gw_codec_spec* s = new (std::nothrow) gw_codec_spec{v.params};
    if (!s) return GW_ERR_OUT_OF_MEMORY;
    *spec = s;
    return GW_OK;
}

/* Worker ------------------------------------------------------------------- */

gw_status gw_worker_create(gw_worker** w, const gw_worker_options* o, const gw_codec_spec* codec) {
    if (!w || !o || !codec) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, GW_WORKER_OPTIONS_VERSION)) return GW_ERR_OPTIONS_VERSION;
    const int momentum = gw::enum_value(o->momentum);
    if (o->n == 0 || o->n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    if (momentum != GW_MOMENTUM_NONE && momentum != GW_MOMENTUM_NESTEROV &&
        momentum != GW_MOMENTUM_SIGNUM)
        return GW_ERR_INVALID_ARGUMENT;
    if (!(o->mu >= 0.0f && o->mu < 1.0f)) return GW_ERR_INVALID_ARGUMENT;  // also rejects NaN
    // A decay without momentum would be silently ignored: say so instead.
    if (momentum == GW_MOMENTUM_NONE && o->mu != 0.0f) return GW_ERR_INVALID_ARGUMENT;
    if (o->error_feedback != 0 && o->error_feedback != 1) return GW_ERR_INVALID_ARGUMENT;
    gw::WorkerConfig c;
    c.n = o->n;
    c.codec = codec->p;
    c.momentum = static_cast<gw_momentum>(momentum);
    c.mu = o->mu;
    c.error_feedback = o->error_feedback == 1;
    c.tensor = o->tensor;
    c.seed = o->seed;
    return create_handle(w, o, c);
}

gw_status gw_worker_step(gw_worker* w, const void* grad, gw_dtype dtype, uint64_t n, float lr,
                         void* frame, size_t capacity, size_t* written) {
    return tensor_step(w, grad, dtype, n, lr, frame, capacity, written);
}

gw_status gw_worker_residual(const gw_worker* w, float* out, uint64_t n) {
    return read_vector(w, &gw::EfWorker::residual, out, n);
}

gw_status gw_worker_momentum(const gw_worker* w, float* out, uint64_t n) {
    return read_vector(w, &gw::EfWorker::momentum, out, n);
}

/* Server ------------------------------------------------------------------- */

gw_status gw_shard_range(uint64_t total, uint32_t parts, uint32_t index, uint64_t* offset,
                         uint64_t* length) {
    if (!offset || !length) return GW_ERR_NULL_POINTER;
    if (parts == 0 || index >= parts || total > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    gw::shard_range(total, parts, index, offset, length);
    return GW_OK;
}

gw_status gw_server_create(gw_server** s, const gw_server_options* o,
                           const gw_codec_spec* broadcast, const gw_codec_spec* expect) {
    if (!s || !o || !broadcast) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, GW_SERVER_OPTIONS_VERSION)) return GW_ERR_OPTIONS_VERSION;
    if (o->total > GW_MAX_ELEMENTS || o->offset > o->total || o->length > o->total - o->offset)
        return GW_ERR_INVALID_ARGUMENT;
    if (o->num_workers == 0 || o->num_workers > gw::EfServer::kMaxWorkers)
        return GW_ERR_INVALID_ARGUMENT;
    if (o->error_feedback != 0 && o->error_feedback != 1) return GW_ERR_INVALID_ARGUMENT;
    if (o->check_tag != 0 && o->check_tag != 1) return GW_ERR_INVALID_ARGUMENT;
    gw::ServerConfig c;
    c.total = o->total;
    c.offset = o->offset;
    c.length = o->length;
    c.workers = o->num_workers;
    c.codec = broadcast->p;
    c.has_expect = expect != nullptr;
    if (expect) c.expect = expect->p;
    c.error_feedback = o->error_feedback == 1;
    c.tensor = o->tensor;
    c.check_tag = o->check_tag == 1;
    return create_handle(s, o, c);
}

gw_status gw_server_push(gw_server* s, const void* frame, size_t size) {
    if (!s || (!frame && size)) return GW_ERR_NULL_POINTER;
    return s->impl.push(frame, size);
}

gw_status gw_server_step(gw_server* s, float lr, void* frame, size_t capacity, size_t* written) {
    if (!s || !frame || !written) return GW_ERR_NULL_POINTER;
    return s->impl.step(lr, frame, capacity, written);
}

gw_status gw_server_round(gw_server* s, const void* const* frames, const size_t* sizes,
                          size_t count, float lr, void* frame, size_t capacity, size_t* written,
                          size_t* bad) {
    size_t bad_local = 0;
    if (!bad) bad = &bad_local;
    *bad = SIZE_MAX;
    if (!s || !frame || !written || ((!frames || !sizes) && count)) return GW_ERR_NULL_POINTER;
    if (const gw_status st = s->impl.sequence(gw::EfServer::Call::kRound); st != GW_OK) return st;
    for (size_t j = 0; j < count; ++j) {
        gw_status st = GW_OK;
        if (!frames[j] && sizes[j]) st = GW_ERR_NULL_POINTER;
        else if (overlaps(frames[j], sizes[j], frame, capacity)) st = GW_ERR_OVERLAP;
        if (st != GW_OK) {
            *bad = j;
            return st;
        }
    }
    return s->impl.round(frames, sizes, count, lr, frame, capacity, written, bad);
}

gw_status gw_server_reset_round(gw_server* s) {
    if (!s) return GW_ERR_NULL_POINTER;
    s->impl.reset_round();
    return GW_OK;
}

gw_status gw_server_residual(const gw_server* s, float* out, uint64_t n) {
    if (!s || (!out && n)) return GW_ERR_NULL_POINTER;
    if (n != s->impl.config().length) return GW_ERR_COUNT_MISMATCH;
    s->impl.residual(out);
    return GW_OK;
}

/* RNG and CRC ---------------------------------------------------------------- */

gw_status gw_rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first,
                     uint32_t* out, size_t n) {
    if (!out && n) return GW_ERR_NULL_POINTER;
    gw::kern::active().rng_u32(seed, step, tensor, first, out, n);
    return GW_OK;
}

gw_status gw_rng_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first,
                         float* out, size_t n) {
    if (!out && n) return GW_ERR_NULL_POINTER;
    gw::kern::rng_uniform(seed, step, tensor, first, out, n);
    return GW_OK;
}

gw_status gw_crc32c(const void* data, size_t size, uint32_t* crc) {
    if ((!data && size) || !crc) return GW_ERR_NULL_POINTER;
    *crc = gw::kern::active().crc32c(0, data, size);
    return GW_OK;
}

}  // extern "C"
