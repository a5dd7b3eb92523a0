// C entry points for index sets: reading an index frame, and the overlap
// diagnostic between two index sets (docs/algorithms.md s.4).
#include "api_internal.hpp"
#include "frame/frame.hpp"
#include "util/bytes.hpp"

using namespace gw::api;

extern "C" {

gw_status gw_index_frame_indices(const void* frame, size_t size, uint32_t* idx, size_t capacity,
                                 size_t* count) {
    if ((!frame && size) || !count || (!idx && capacity)) return GW_ERR_NULL_POINTER;
    gw::frame::View v;
    const gw_status st = gw::frame::open(frame, size, true, gw::thread_workspace().stage, &v);
    if (st != GW_OK) return st;
    if (v.params.codec->id != GW_CODEC_INDEX) return GW_ERR_CODEC_MISMATCH;
    if (overlaps(frame, size, idx, span_bytes(capacity, sizeof(uint32_t)))) return GW_ERR_OVERLAP;
    const uint64_t k = gw::load_le<uint32_t>(v.payload);
    *count = static_cast<size_t>(k); /* set for a valid frame, so a caller can size idx */
    if (capacity < k) return GW_ERR_BUFFER_TOO_SMALL;
    gw::index_payload_indices(v.payload, idx);
    *count = static_cast<size_t>(k);
    return GW_OK;
}

gw_status gw_index_overlap(const uint32_t* a, size_t na, const uint32_t* b, size_t nb,
                           double* overlap) {
    if ((!a && na) || (!b && nb) || !overlap) return GW_ERR_NULL_POINTER;
    for (size_t i = 1; i < na; ++i)
        if (a[i] <= a[i - 1]) return GW_ERR_INVALID_ARGUMENT;
    for (size_t i = 1; i < nb; ++i)
        if (b[i] <= b[i - 1]) return GW_ERR_INVALID_ARGUMENT;
    if (na == 0 && nb == 0) {
        *overlap = 1.0;
        return GW_OK;
    }
    size_t i = 0, j = 0, common = 0;
    while (i < na && j < nb) {  // a merge of two increasing lists
        if (a[i] == b[j]) {
            ++common;
            ++i;
            ++j;
        } else if (a[i] < b[j]) {
            ++i;
        } else {
            ++j;
        }
    }
    *overlap = static_cast<double>(common) / static_cast<double>(na > nb ? na : nb);
    return GW_OK;
}

}  // extern "C"
