// The handle structs of the C API, one per line of handles.def: a handle is
// `struct gw_<name> { Impl impl; }`, so the calls every handle shares are
// written once (handles.cpp) against `impl`.
#pragma once

#include "api_internal.hpp"
#include "feedback/asylpg.hpp"
#include "feedback/cltk.hpp"
#include "feedback/ef_server.hpp"
#include "feedback/ef_worker.hpp"
#include "feedback/fusion.hpp"
#include "feedback/lags_layer.hpp"
#include "feedback/state_blob.hpp"

#define GW_HANDLE(name, NAME, Impl, bound, steps, state) \
    struct gw_##name {                                   \
        Impl impl;                                       \
    };
#include "handles.def"
#undef GW_HANDLE

namespace gw::api {

// Free: the allocator is copied out before the handle that holds it goes.
template <class H> void destroy_handle(H* h) {
    if (!h) return;
    const gw::Allocator a = h->impl.context().alloc();
    h->~H();
    a.release(h);
}

// May a checkpoint be taken now? CLT-k's only between rounds (docs/c-api.md);
// every other machine at any time.
inline bool save_ready(const gw::Cltk& m) { return m.between_rounds(); }
template <class M> bool save_ready(const M&) { return true; }

// The kernels and allocator options of version 2 ask for; version 1: the
// process's target and malloc.
template <class Options> gw_status backend_of(const Options* o, gw::Backend* b) {
    if (o->version < 2) return GW_OK;
    const gw_simd_target t = checked_target(o->simd);
    if (t != GW_SIMD_AUTO) {
        b->kernels = gw::kern::table_for(t);
        if (!b->kernels) return enum_value(t) == 7 ? GW_ERR_INVALID_ARGUMENT : GW_ERR_UNSUPPORTED;
    }
    if (const gw_allocator* a = o->allocator) {
        if (!a->alloc || !a->free) return GW_ERR_NULL_POINTER;
        b->alloc = gw::Allocator{a->alloc, a->free, a->user};
    }
    return GW_OK;
}

// Create: the handle itself comes from the options' allocator too; init the
// machine with the translated config, hand out.
template <class H, class Options, class... Config>
gw_status create_handle(H** out, const Options* o, const Config&... c) {
    gw::Backend b;
    gw_status st = backend_of(o, &b);
    if (st != GW_OK) return st;
    void* mem = b.alloc.allocate(sizeof(H), alignof(H));
    if (!mem) return GW_ERR_OUT_OF_MEMORY;
    H* h = new (mem) H();
    st = h->impl.init(b, c...);
    if (st != GW_OK) {
        destroy_handle(h);
        return st;
    }
    *out = h;
    return GW_OK;
}

// Create a single-tensor machine whose options are exactly n, tensor, seed
// and a codec (LAGS layer, AsyLPG worker).
template <class Config, class H, class Options>
gw_status create_tensor_machine(H** h, const Options* o, unsigned int current,
                                const gw_codec_spec* codec) {
    if (!h || !o || !codec) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, current)) return GW_ERR_OPTIONS_VERSION;
    if (o->n == 0 || o->n > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    Config c;
    c.n = o->n;
    c.tensor = o->tensor;
    c.seed = o->seed;
    c.codec = codec->p;
    return create_handle(h, o, c);
}

// Checkpoints: the bound, save and load of the machine's field list.
template <class H> gw_status save_bound(const H* h, size_t* bound) {
    if (!h || !bound) return GW_ERR_NULL_POINTER;
    *bound = blob::save_bound(h->impl);
    return GW_OK;
}
template <class H> gw_status save(const H* h, void* out, size_t capacity, size_t* written) {
    if (h && !save_ready(h->impl)) return GW_ERR_SEQUENCE;  // sequence checks come first
    if (!h || !out || !written) return GW_ERR_NULL_POINTER;
    if (capacity < blob::save_bound(h->impl)) return GW_ERR_BUFFER_TOO_SMALL;
    *written = blob::save(h->impl, out);
    return GW_OK;
}
template <class H> gw_status load(H* h, const void* in, size_t size) {
    if (!h || (!in && size)) return GW_ERR_NULL_POINTER;
    return blob::load(h->impl, in, size);
}

// One scalar the machine reports (a bound, the step count, the leader, ...).
template <class H, class M, class R, class T>
gw_status read_value(const H* h, R (M::*get)() const, T* out) {
    if (!h || !out) return GW_ERR_NULL_POINTER;
    *out = static_cast<T>((h->impl.*get)());
    return GW_OK;
}

// A copy of one of the machine's n-vectors (residual, momentum, memory, ...).
template <class H, class M>
gw_status read_vector(const H* h, void (M::*get)(float*) const, float* out, uint64_t n) {
    if (!h || !out) return GW_ERR_NULL_POINTER;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    (h->impl.*get)(out);
    return GW_OK;
}

// One error-feedback step of a tensor into a frame (worker, LAGS layer).
template <class H>
gw_status tensor_step(H* h, const void* grad, gw_dtype dtype, uint64_t n, float lr, void* frame,
                      size_t capacity, size_t* written) {
    if (!h || !grad || !frame || !written) return GW_ERR_NULL_POINTER;
    if (!valid_dtype(dtype)) return GW_ERR_INVALID_ARGUMENT;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    if (overlaps(grad, span_bytes(n, dtype_size(dtype)), frame, capacity)) return GW_ERR_OVERLAP;
    return h->impl.step(grad, dtype, lr, frame, capacity, written);
}

}  // namespace gw::api
