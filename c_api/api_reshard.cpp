// C entry point of re-sharding (feedback/reshard.hpp): blobs of M workers
// into the blob of one of M'.
#include <cstdlib>

#include "api_internal.hpp"
#include "feedback/reshard.hpp"

using namespace gw::api;

extern "C" {

gw_status gw_reshard_options_init(gw_reshard_options* o, unsigned int version) {
    return init_versioned(o, version, GW_RESHARD_OPTIONS_VERSION,
                          gw_reshard_options GW_RESHARD_OPTIONS_INIT);
}

gw_status gw_reshard(const gw_reshard_part* parts, size_t count, const gw_reshard_options* o,
                     void* out, size_t capacity, size_t* written) {
    if (!o || !written || (!parts && count) || (!out && capacity)) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, GW_RESHARD_OPTIONS_VERSION)) return GW_ERR_OPTIONS_VERSION;
    for (size_t i = 0; i < count; ++i)
        if (!parts[i].blob && parts[i].size) return GW_ERR_NULL_POINTER;
    if (o->workers_in == 0 || o->workers_out == 0 || o->rank_out >= o->workers_out ||
        o->length > GW_MAX_ELEMENTS || o->offset > GW_MAX_ELEMENTS - o->length)
        return GW_ERR_INVALID_ARGUMENT;
    for (size_t i = 0; i < count; ++i)
        if (parts[i].offset > GW_MAX_ELEMENTS) return GW_ERR_INVALID_ARGUMENT;
    if (count == 0) return GW_ERR_STATE_MISSING;
    for (size_t i = 0; i < count; ++i)
        if (overlaps(out, capacity, parts[i].blob, parts[i].size)) return GW_ERR_OVERLAP;
    gw::reshard::Part* p =
        static_cast<gw::reshard::Part*>(std::calloc(count, sizeof(gw::reshard::Part)));
    if (!p) return GW_ERR_OUT_OF_MEMORY;
    for (size_t i = 0; i < count; ++i)
        p[i] = {parts[i].blob, parts[i].size, parts[i].rank, parts[i].offset};
    const gw::reshard::Target t{o->workers_in, o->workers_out, o->rank_out, o->offset, o->length};
    const gw_status st =
        gw::reshard::build(gw::kern::active(), p, count, t, out, capacity, written);
    std::free(p);
    return st;
}

}  // extern "C"
