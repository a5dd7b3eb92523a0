// Fuzz target: checkpoint loaders of every handle kind and configuration.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "gradwire.h"

#define FUZZ_CHECK(cond) \
    do {                 \
        if (!(cond)) std::abort(); \
    } while (0)

namespace {

template <class H>
std::vector<uint8_t> save(const H* h, gw_status (*bound_fn)(const H*, size_t*),
                          gw_status (*save_fn)(const H*, void*, size_t, size_t*)) {
    size_t bound = 0, written = 0;
    bound_fn(h, &bound);
    std::vector<uint8_t> b(bound);
    FUZZ_CHECK(save_fn(h, b.data(), b.size(), &written) == GW_OK);
    b.resize(written);
    return b;
}

// A blob either loads and saves back to the same bytes, or is refused with
// the handle unchanged.
template <class H>
void check_load(H* h, const uint8_t* data, size_t size, gw_status (*load_fn)(H*, const void*, size_t),
                gw_status (*bound_fn)(const H*, size_t*),
                gw_status (*save_fn)(const H*, void*, size_t, size_t*)) {
    const auto before = save(h, bound_fn, save_fn);
    if (load_fn(h, data, size) == GW_OK) {
        const auto after = save(h, bound_fn, save_fn);
        FUZZ_CHECK(after.size() == size && std::memcmp(after.data(), data, size) == 0);
    } else {
        FUZZ_CHECK(save(h, bound_fn, save_fn) == before);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    // Handles matching the seed corpus (fuzz/corpus/state): n = 4.
    for (int momentum = 0; momentum < 3; ++momentum)
        for (int ef = 0; ef < 2; ++ef) {
            gw_worker_options o;
            gw_worker_options_init(&o, GW_WORKER_OPTIONS_VERSION);
            o.n = 4;
            o.momentum = static_cast<gw_momentum>(momentum);
            o.error_feedback = ef;
            gw_worker* w = nullptr;
            FUZZ_CHECK(gw_worker_create(&w, &o) == GW_OK);
            check_load(w, data, size, gw_worker_load, gw_worker_save_bound, gw_worker_save);
            gw_worker_free(w);
        }
    gw_server_options so;
    gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION);
    so.total = 8, so.offset = 4, so.length = 4, so.num_workers = 2;
    gw_server* s = nullptr;
    FUZZ_CHECK(gw_server_create(&s, &so) == GW_OK);
    check_load(s, data, size, gw_server_load, gw_server_save_bound, gw_server_save);
    gw_server_free(s);
    return 0;
}
