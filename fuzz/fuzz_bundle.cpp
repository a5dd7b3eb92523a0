// Fuzz target: the bundle reader (gw_bundle_frames) of LAGS's fusion buffer.
// Any input returns a status (never a crash, hang, leak or over-read); an
// accepted bundle is canonical: its frames, added back into a fusion buffer
// as their layers, flush to the same bytes. Each input is also run with its
// trailing CRC32C recomputed, to get mutations past the checksum.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "gradwire.h"

namespace {

void check(const uint8_t* data, size_t size) {
    size_t count = 0;
    const gw_status st = gw_bundle_frames(data, size, nullptr, 0, &count);
    if (st != GW_OK && st != GW_ERR_BUFFER_TOO_SMALL) {
        FUZZ_CHECK(st < 0);
        return;
    }
    std::vector<gw_bundle_entry> e(count);
    size_t again = 0;
    FUZZ_CHECK(gw_bundle_frames(data, size, e.data(), e.size(), &again) == GW_OK && again == count);
    gw_fusion_options o = GW_FUSION_OPTIONS_INIT;
    o.layers = count ? e[count - 1].layer + 1 : 1;
    o.capacity = SIZE_MAX;
    gw_fusion* f = nullptr;
    FUZZ_CHECK(gw_fusion_create(&f, &o) == GW_OK);
    for (const gw_bundle_entry& x : e) {
        FUZZ_CHECK(x.offset + x.size <= size);
        int flush = 0;
        FUZZ_CHECK(gw_fusion_add(f, x.layer, data + x.offset, x.size, &flush) == GW_OK);
    }
    size_t bsize = 0, written = 0;
    FUZZ_CHECK(gw_fusion_bundle_size(f, &bsize) == GW_OK && bsize == size);
    std::vector<uint8_t> out(bsize);
    FUZZ_CHECK(gw_fusion_flush(f, out.data(), out.size(), &written) == GW_OK && written == size);
    FUZZ_CHECK(std::memcmp(out.data(), data, size) == 0);
    gw_fusion_free(f);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    check(data, size);
    if (size >= 4) {
        std::vector<uint8_t> fixed(data, data + size);
        uint32_t crc = 0;
        FUZZ_CHECK(gw_crc32c(data, size - 4, &crc) == GW_OK);
        std::memcpy(&fixed[size - 4], &crc, 4);
        if (std::memcmp(fixed.data(), data, size) != 0) check(fixed.data(), size);
    }
    return 0;
}
