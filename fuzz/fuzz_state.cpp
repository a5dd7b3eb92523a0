// Fuzz target: checkpoint loaders. A blob either loads (and then saves back
// to the same bytes) or is refused with the handle unchanged.
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

std::vector<uint8_t> save_worker(const gw_worker* w) {
    size_t bound = 0, written = 0;
    gw_worker_save_bound(w, &bound);
    std::vector<uint8_t> b(bound);
    FUZZ_CHECK(gw_worker_save(w, b.data(), b.size(), &written) == GW_OK);
    b.resize(written);
    return b;
}

std::vector<uint8_t> save_server(const gw_server* s) {
    size_t bound = 0, written = 0;
    gw_server_save_bound(s, &bound);
    std::vector<uint8_t> b(bound);
    FUZZ_CHECK(gw_server_save(s, b.data(), b.size(), &written) == GW_OK);
    b.resize(written);
    return b;
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
            const auto before = save_worker(w);
            if (gw_worker_load(w, data, size) == GW_OK) {
                const auto after = save_worker(w);
                FUZZ_CHECK(after.size() == size && std::memcmp(after.data(), data, size) == 0);
            } else {
                FUZZ_CHECK(save_worker(w) == before);
            }
            gw_worker_free(w);
        }
    gw_server_options so;
    gw_server_options_init(&so, GW_SERVER_OPTIONS_VERSION);
    so.total = 8, so.offset = 4, so.length = 4, so.num_workers = 2;
    gw_server* s = nullptr;
    FUZZ_CHECK(gw_server_create(&s, &so) == GW_OK);
    const auto before = save_server(s);
    if (gw_server_load(s, data, size) == GW_OK) {
        const auto after = save_server(s);
        FUZZ_CHECK(after.size() == size && std::memcmp(after.data(), data, size) == 0);
    } else {
        FUZZ_CHECK(save_server(s) == before);
    }
    gw_server_free(s);
    return 0;
}
