// The calls every handle shares, expanded once per line of handles.def:
// options init, free, the frame bound, the step count and checkpoints.
#include "api_internal.hpp"
#include "handles.hpp"

using namespace gw::api;

// Each column of handles.def picks one of these by name (`none`: no call).
#define GW_PLUMB_BOUND_none(name)
#define GW_PLUMB_BOUND_frame_bound(name) GW_PLUMB_BOUND(name, frame_bound)
#define GW_PLUMB_BOUND_index_frame_bound(name) GW_PLUMB_BOUND(name, index_frame_bound)
#define GW_PLUMB_BOUND(name, bound)                                     \
    gw_status gw_##name##_##bound(const gw_##name* h, size_t* bytes) { \
        return read_value(h, &decltype(h->impl)::bound, bytes);        \
    }

#define GW_PLUMB_STEPS_none(name)
#define GW_PLUMB_STEPS_step_count(name)                                      \
    gw_status gw_##name##_step_count(const gw_##name* h, uint64_t* steps) { \
        return read_value(h, &decltype(h->impl)::steps, steps);             \
    }

#define GW_PLUMB_STATE_none(name)
#define GW_PLUMB_STATE_checkpoint(name)                                                   \
    gw_status gw_##name##_save_bound(const gw_##name* h, size_t* bound) {                 \
        return save_bound(h, bound);                                                      \
    }                                                                                     \
    gw_status gw_##name##_save(const gw_##name* h, void* blob, size_t cap, size_t* out) { \
        return save(h, blob, cap, out);                                                   \
    }                                                                                     \
    gw_status gw_##name##_load(gw_##name* h, const void* blob, size_t size) {             \
        return load(h, blob, size);                                                       \
    }

#define GW_HANDLE(name, NAME, Impl, bound, steps, state)                               \
    gw_status gw_##name##_options_init(gw_##name##_options* o, unsigned int version) { \
        return init_versioned(o, version, GW_##NAME##_OPTIONS_VERSION,                 \
                              gw_##name##_options GW_##NAME##_OPTIONS_INIT,            \
                              offsetof(gw_##name##_options, simd));                    \
    }                                                                                  \
    void gw_##name##_free(gw_##name* h) { destroy_handle(h); }                         \
    GW_PLUMB_BOUND_##bound(name) GW_PLUMB_STEPS_##steps(name) GW_PLUMB_STATE_##state(name)

extern "C" {
#include "handles.def"
}
