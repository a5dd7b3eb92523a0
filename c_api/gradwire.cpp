// The extern "C" layer: argument checks, option-struct versions, status
// codes and handle lifetimes. All logic lives in src/.
#include "gradwire.h"

#include <cmath>
#include <cstring>

#include "codecs/codec.hpp"
#include "feedback/ef_server.hpp"
#include "feedback/ef_worker.hpp"
#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "rng.hpp"
#include "util/bytes.hpp"

#define GW_STR2(x) #x
#define GW_STR(x) GW_STR2(x)

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
        case GW_ERR_COUNT_MISMATCH: return "frame element count differs from the tensor length";
        case GW_ERR_CODEC_MISMATCH: return "frame codec differs from the one expected";
        case GW_ERR_FRAME_TRUNCATED: return "frame truncated";
        case GW_ERR_FRAME_MAGIC: return "not a gradwire frame (bad magic)";
        case GW_ERR_FRAME_VERSION: return "unsupported frame format version";
        case GW_ERR_FRAME_CODEC: return "unknown codec id in frame";
        case GW_ERR_FRAME_FLAGS: return "reserved frame flag bits set";
        case GW_ERR_FRAME_CHECKSUM: return "frame checksum mismatch";
        case GW_ERR_FRAME_LENGTH: return "frame payload length inconsistent with its count";
        case GW_ERR_FRAME_PARAMS: return "malformed codec parameters in frame";
        case GW_ERR_FRAME_PAYLOAD: return "invalid frame payload";
        case GW_ERR_FRAME_TRAILING: return "bytes after the end of the frame";
        case GW_ERR_STATE_MAGIC: return "not a gradwire state blob (bad magic)";
        case GW_ERR_STATE_VERSION: return "unsupported state blob version";
        case GW_ERR_STATE_CHECKSUM: return "state blob checksum mismatch";
        case GW_ERR_STATE_MISMATCH: return "state blob belongs to a differently configured handle";
        case GW_ERR_STATE_CORRUPT: return "state blob malformed";
        case GW_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

unsigned int gw_version_number(void) { return GW_VERSION_NUMBER; }

const char* gw_version_string(void) {
    return GW_STR(GW_VERSION_MAJOR) "." GW_STR(GW_VERSION_MINOR) "." GW_STR(GW_VERSION_PATCH);
}

/* SIMD ------------------------------------------------------------------- */

// Out-of-range target values from C become 7: inside the C++ enum's value
// range (so the cast is defined) but no target, so callees reject it.
static gw_simd_target checked_target(const gw_simd_target& t) {
    const int v = gw::enum_value(t);
    return static_cast<gw_simd_target>(v >= GW_SIMD_AUTO && v <= GW_SIMD_AVX512 ? v : 7);
}

gw_status gw_simd_set_target(gw_simd_target t) { return gw::kern::set_target(checked_target(t)); }
gw_simd_target gw_simd_active_target(void) { return gw::kern::active_target(); }
int gw_simd_target_supported(gw_simd_target target) {
    const gw_simd_target t = checked_target(target);
    return t != GW_SIMD_AUTO && gw::kern::table_for(t) != nullptr;
}
const char* gw_simd_target_name(gw_simd_target t) {
    return gw::kern::target_name(checked_target(t));
}

/* Codecs and frames -------------------------------------------------------- */

gw_status gw_codec_options_init(gw_codec_options* o, unsigned int version) {
    if (!o) return GW_ERR_NULL_POINTER;
    if (version != GW_CODEC_OPTIONS_VERSION) return GW_ERR_OPTIONS_VERSION;
    *o = gw_codec_options GW_CODEC_OPTIONS_INIT;
    return GW_OK;
}

gw_status gw_encode_bound(const gw_codec_options* opts, uint64_t n, size_t* bound) {
    if (!opts || !bound) return GW_ERR_NULL_POINTER;
    gw::CodecParams p;
    const gw_status st = gw::codec_params_from_options(opts, &p);
    if (st != GW_OK) return st;
    if (!gw::frame::frame_size(*gw::codec_for(p.id), p, n, bound)) return GW_ERR_INVALID_ARGUMENT;
    return GW_OK;
}

gw_status gw_encode(const gw_codec_options* opts, const float* x, uint64_t n, void* frame,
                    size_t capacity, size_t* written) {
    if (!opts || !frame || !written || (!x && n)) return GW_ERR_NULL_POINTER;
    gw::CodecParams p;
    const gw_status st = gw::codec_params_from_options(opts, &p);
    if (st != GW_OK) return st;
    return gw::frame::encode(p, x, n, frame, capacity, written, nullptr);
}

gw_status gw_decode(const void* frame, size_t size, float* out, uint64_t capacity,
                    uint64_t* count) {
    if ((!frame && size) || (!out && capacity)) return GW_ERR_NULL_POINTER;
    gw::frame::View v;
    const gw_status st = gw::frame::open(frame, size, true, &v);
    if (st != GW_OK) return st;
    if (v.count > capacity) return GW_ERR_BUFFER_TOO_SMALL;
    if (v.count) v.codec->decode(v.params, v.payload, v.count, out);
    if (count) *count = v.count;
    return GW_OK;
}

gw_status gw_decode_accumulate(const void* frame, size_t size, float alpha, float* acc,
                               uint64_t n) {
    if ((!frame && size) || (!acc && n)) return GW_ERR_NULL_POINTER;
    if (!std::isfinite(alpha)) return GW_ERR_INVALID_ARGUMENT;
    gw::frame::View v;
    const gw_status st = gw::frame::open(frame, size, true, &v);
    if (st != GW_OK) return st;
    if (v.count != n) return GW_ERR_COUNT_MISMATCH;
    if (n) v.codec->accumulate(v.params, v.payload, v.count, alpha, acc);
    return GW_OK;
}

gw_status gw_scaled_sign_phi(const float* x, uint64_t n, uint32_t block_size, double* phi) {
    if ((!x && n) || !phi) return GW_ERR_NULL_POINTER;
    return gw::scaled_sign_phi(x, n, block_size, phi);
}

gw_status gw_frame_info_init(gw_frame_info* info, unsigned int version) {
    if (!info) return GW_ERR_NULL_POINTER;
    if (version != GW_FRAME_INFO_VERSION) return GW_ERR_OPTIONS_VERSION;
    std::memset(info, 0, sizeof *info);
    info->version = version;
    return GW_OK;
}

gw_status gw_frame_inspect(const void* frame, size_t size, gw_frame_info* info) {
    if ((!frame && size) || !info) return GW_ERR_NULL_POINTER;
    if (info->version != GW_FRAME_INFO_VERSION) return GW_ERR_OPTIONS_VERSION;
    gw::frame::View v;
    const gw_status st = gw::frame::open(frame, size, false, &v);
    if (st != GW_OK) return st;
    info->format_version = GW_FRAME_FORMAT_VERSION;
    info->codec = v.params.id;
    info->block_size = v.params.block_size;
    info->count = v.count;
    info->payload_size = v.payload_size;
    info->frame_size = v.frame_size;
    return GW_OK;
}

/* Worker ------------------------------------------------------------------- */

gw_status gw_worker_options_init(gw_worker_options* o, unsigned int version) {
    if (!o) return GW_ERR_NULL_POINTER;
    if (version != GW_WORKER_OPTIONS_VERSION) return GW_ERR_OPTIONS_VERSION;
    std::memset(o, 0, sizeof *o);
    o->version = version;
    o->codec = gw_codec_options GW_CODEC_OPTIONS_INIT;
    o->momentum = GW_MOMENTUM_NESTEROV;
    o->mu = 0.9f;
    o->error_feedback = 1;
    return GW_OK;
}

gw_status gw_worker_create(gw_worker** w, const gw_worker_options* o) {
    if (!w || !o) return GW_ERR_NULL_POINTER;
    if (o->version != GW_WORKER_OPTIONS_VERSION) return GW_ERR_OPTIONS_VERSION;
    return gw_worker::create(*o, w);
}

void gw_worker_free(gw_worker* w) { delete w; }

gw_status gw_worker_frame_bound(const gw_worker* w, size_t* bound) {
    if (!w || !bound) return GW_ERR_NULL_POINTER;
    *bound = w->frame_bound();
    return GW_OK;
}

gw_status gw_worker_step(gw_worker* w, const float* grad, float lr, void* frame, size_t capacity,
                         size_t* written) {
    if (!w || !grad || !frame || !written) return GW_ERR_NULL_POINTER;
    return w->step(grad, lr, frame, capacity, written);
}

gw_status gw_worker_residual(const gw_worker* w, float* out, uint64_t n) {
    if (!w || !out) return GW_ERR_NULL_POINTER;
    if (n != w->config().n) return GW_ERR_COUNT_MISMATCH;
    w->residual(out);
    return GW_OK;
}

gw_status gw_worker_momentum(const gw_worker* w, float* out, uint64_t n) {
    if (!w || !out) return GW_ERR_NULL_POINTER;
    if (n != w->config().n) return GW_ERR_COUNT_MISMATCH;
    w->momentum(out);
    return GW_OK;
}

gw_status gw_worker_save_bound(const gw_worker* w, size_t* bound) {
    if (!w || !bound) return GW_ERR_NULL_POINTER;
    *bound = w->save_bound();
    return GW_OK;
}

gw_status gw_worker_save(const gw_worker* w, void* blob, size_t capacity, size_t* written) {
    if (!w || !blob || !written) return GW_ERR_NULL_POINTER;
    if (capacity < w->save_bound()) return GW_ERR_BUFFER_TOO_SMALL;
    *written = w->save(blob);
    return GW_OK;
}

gw_status gw_worker_load(gw_worker* w, const void* blob, size_t size) {
    if (!w || (!blob && size)) return GW_ERR_NULL_POINTER;
    return w->load(blob, size);
}

/* Server ------------------------------------------------------------------- */

gw_status gw_server_options_init(gw_server_options* o, unsigned int version) {
    if (!o) return GW_ERR_NULL_POINTER;
    if (version != GW_SERVER_OPTIONS_VERSION) return GW_ERR_OPTIONS_VERSION;
    std::memset(o, 0, sizeof *o);
    o->version = version;
    o->num_workers = 1;
    o->codec = gw_codec_options GW_CODEC_OPTIONS_INIT;
    o->error_feedback = 1;
    return GW_OK;
}

gw_status gw_shard_range(uint64_t total, uint32_t parts, uint32_t index, uint64_t* offset,
                         uint64_t* length) {
    if (!offset || !length) return GW_ERR_NULL_POINTER;
    if (parts == 0 || index >= parts) return GW_ERR_INVALID_ARGUMENT;
    const uint64_t base = total / parts, extra = total % parts;
    *offset = index * base + (index < extra ? index : extra);
    *length = base + (index < extra ? 1 : 0);
    return GW_OK;
}

gw_status gw_server_create(gw_server** s, const gw_server_options* o) {
    if (!s || !o) return GW_ERR_NULL_POINTER;
    if (o->version != GW_SERVER_OPTIONS_VERSION) return GW_ERR_OPTIONS_VERSION;
    return gw_server::create(*o, s);
}

void gw_server_free(gw_server* s) { delete s; }

gw_status gw_server_frame_bound(const gw_server* s, size_t* bound) {
    if (!s || !bound) return GW_ERR_NULL_POINTER;
    *bound = s->frame_bound();
    return GW_OK;
}

gw_status gw_server_push(gw_server* s, const void* frame, size_t size) {
    if (!s || (!frame && size)) return GW_ERR_NULL_POINTER;
    return s->push(frame, size);
}

gw_status gw_server_step(gw_server* s, float lr, void* frame, size_t capacity, size_t* written) {
    if (!s || !frame || !written) return GW_ERR_NULL_POINTER;
    return s->step(lr, frame, capacity, written);
}

gw_status gw_server_reset_round(gw_server* s) {
    if (!s) return GW_ERR_NULL_POINTER;
    s->reset_round();
    return GW_OK;
}

gw_status gw_server_residual(const gw_server* s, float* out, uint64_t n) {
    if (!s || !out) return GW_ERR_NULL_POINTER;
    if (n != s->config().length) return GW_ERR_COUNT_MISMATCH;
    s->residual(out);
    return GW_OK;
}

gw_status gw_server_save_bound(const gw_server* s, size_t* bound) {
    if (!s || !bound) return GW_ERR_NULL_POINTER;
    *bound = s->save_bound();
    return GW_OK;
}

gw_status gw_server_save(const gw_server* s, void* blob, size_t capacity, size_t* written) {
    if (!s || !blob || !written) return GW_ERR_NULL_POINTER;
    if (capacity < s->save_bound()) return GW_ERR_BUFFER_TOO_SMALL;
    *written = s->save(blob);
    return GW_OK;
}

gw_status gw_server_load(gw_server* s, const void* blob, size_t size) {
    if (!s || (!blob && size)) return GW_ERR_NULL_POINTER;
    return s->load(blob, size);
}

/* RNG and CRC ---------------------------------------------------------------- */

gw_status gw_rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first,
                     uint32_t* out, size_t n) {
    if (!out && n) return GW_ERR_NULL_POINTER;
    gw::rng_u32(seed, step, tensor, first, out, n);
    return GW_OK;
}

gw_status gw_rng_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first,
                         float* out, size_t n) {
    if (!out && n) return GW_ERR_NULL_POINTER;
    uint32_t words[256];
    for (size_t done = 0; done < n;) {
        const size_t chunk = n - done < 256 ? n - done : 256;
        gw::rng_u32(seed, step, tensor, first + done, words, chunk);
        for (size_t i = 0; i < chunk; ++i) out[done + i] = gw::u32_to_unit_float(words[i]);
        done += chunk;
    }
    return GW_OK;
}

gw_status gw_crc32c(const void* data, size_t size, uint32_t* crc) {
    if ((!data && size) || !crc) return GW_ERR_NULL_POINTER;
    *crc = gw::kern::active().crc32c(0, data, size);
    return GW_OK;
}

}  // extern "C"
