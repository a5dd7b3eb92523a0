// C entry points for index sets: reading an index frame, and the overlap
// diagnostic between two index sets (docs/algorithms.md s.4).
#include "api_internal.hpp"
#include "frame/frame.hpp"
#include "util/bytes.hpp"
#include "util/index_sets.hpp"

using namespace gw::api;

extern "C" {

gw_status gw_index_frame_indices(const void* frame, size_t size, uint32_t* idx, size_t capacity,
                                 size_t* count) {
    if ((!frame && size) || !count || (!idx && capacity)) return GW_ERR_NULL_POINTER;
    gw::Context& cx = gw::thread_context();
    gw::frame::View v;
    const gw_status st = gw::frame::open(cx, frame, size, true, &v);
    if (st != GW_OK) return st;
    if (v.params.codec->id != GW_CODEC_INDEX) return GW_ERR_CODEC_MISMATCH;
    if (overlaps(frame, size, idx, span_bytes(capacity, sizeof(uint32_t)))) return GW_ERR_OVERLAP;
    const uint64_t k = gw::load_le<uint32_t>(v.payload);
    *count = static_cast<size_t>(k); /* set for a valid frame, so a caller can size idx */
    if (capacity < k) return GW_ERR_BUFFER_TOO_SMALL;
    gw::index_payload_indices(cx.k(), v.payload, idx);
    *count = static_cast<size_t>(k);
    return GW_OK;
}

gw_status gw_index_overlap(const uint32_t* a, size_t na, const uint32_t* b, size_t nb,
                           double* overlap) {
    if ((!a && na) || (!b && nb) || !overlap) return GW_ERR_NULL_POINTER;
    if (!gw::index::increasing(a, na) || !gw::index::increasing(b, nb))
        return GW_ERR_INVALID_ARGUMENT;
    *overlap = gw::index::overlap(a, na, b, nb);
    return GW_OK;
}

}  // extern "C"
