// C entry points of the fusion buffer and the bundle reader (feedback/fusion.hpp).
#include "handles.hpp"

using namespace gw::api;

extern "C" {

gw_status gw_fusion_create(gw_fusion** h, const gw_fusion_options* o) {
    if (!h || !o) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, GW_FUSION_OPTIONS_VERSION)) return GW_ERR_OPTIONS_VERSION;
    if (o->layers == 0 || o->layers > GW_FUSION_MAX_LAYERS) return GW_ERR_INVALID_ARGUMENT;
    return create_handle(h, o, o->capacity, o->layers);
}

gw_status gw_fusion_add(gw_fusion* h, uint32_t layer, const void* frame, size_t size, int* flush) {
    if (!h || (!frame && size) || !flush) return GW_ERR_NULL_POINTER;
    return h->impl.add(layer, static_cast<const uint8_t*>(frame), size, flush);
}

gw_status gw_fusion_bundle_size(const gw_fusion* h, size_t* size) {
    return read_value(h, &gw::fusion::Buffer::bundle_size, size);
}

gw_status gw_fusion_pending(const gw_fusion* h, size_t* frames) {
    return read_value(h, &gw::fusion::Buffer::pending, frames);
}

gw_status gw_fusion_flush(gw_fusion* h, void* bundle, size_t capacity, size_t* written) {
    if (!h || !bundle || !written) return GW_ERR_NULL_POINTER;
    return h->impl.flush(static_cast<uint8_t*>(bundle), capacity, written);
}

gw_status gw_bundle_frames(const void* bundle, size_t size, gw_bundle_entry* entries,
                           size_t capacity, size_t* count) {
    if ((!bundle && size) || !count || (!entries && capacity)) return GW_ERR_NULL_POINTER;
    gw::Context& cx = gw::thread_context();
    gw::Scratch mem(cx.alloc());
    auto* e = static_cast<gw::fusion::Entry*>(
        mem.get(capacity < GW_FUSION_MAX_LAYERS ? capacity * sizeof(gw::fusion::Entry) + 1
                                                : GW_FUSION_MAX_LAYERS * sizeof(gw::fusion::Entry)));
    if (!e) return GW_ERR_OUT_OF_MEMORY;
    size_t n = 0;
    const gw_status st =
        gw::fusion::read(cx, static_cast<const uint8_t*>(bundle), size, e, capacity, &n);
    if (st != GW_OK && st != GW_ERR_BUFFER_TOO_SMALL) return st;
    *count = n;
    if (st != GW_OK) return st;
    for (size_t i = 0; i < n; ++i) entries[i] = gw_bundle_entry{e[i].slot, e[i].offset, e[i].size};
    return GW_OK;
}

}  // extern "C"
