// Fuzz target: the state machines and their checkpoints, in two modes.
//
// An input that starts with the state blob magic "GWST" is a checkpoint: it is
// loaded (gw_worker_load, gw_server_load, gw_cltk_load, gw_lags_layer_load,
// gw_asylpg_master_load, gw_asylpg_worker_load) into every handle
// configuration in state_configs.h. A blob either loads, saves back to the
// same bytes and leaves a handle that still steps, or is refused with a
// GW_ERR_STATE_* status and the handle bit-identical (saved before and
// after). Calls that fail after a load change nothing either.
//
// Any other input is a program (state_programs.h): one state machine with a
// fuzzed configuration and codec parameters, driven through fuzzer-chosen
// calls in any order with extreme values, checked against a model of the
// documented phases, and reloaded into a fresh handle after every successful
// call.
#include <cstdint>
#include <cstring>
#include <vector>

#include "fuzz_check.h"
#include "gradwire.h"
#include "state_configs.h"
#include "state_programs.h"

namespace {

const float kGrad[FUZZ_STATE_N] = {0.5f, -1.0f, 2.0f, -0.25f};

template <class H>
std::vector<uint8_t> save(const H* h, gw_status (*bound_fn)(const H*, size_t*),
                          gw_status (*save_fn)(const H*, void*, size_t, size_t*)) {
    size_t bound = 0, written = 0;
    FUZZ_CHECK(bound_fn(h, &bound) == GW_OK);
    std::vector<uint8_t> b(bound);
    FUZZ_CHECK(save_fn(h, b.data(), b.size(), &written) == GW_OK && written == bound);
    return b;
}
std::vector<uint8_t> save(const gw_worker* w) { return save(w, gw_worker_save_bound, gw_worker_save); }
std::vector<uint8_t> save(const gw_server* s) { return save(s, gw_server_save_bound, gw_server_save); }
std::vector<uint8_t> save(const gw_cltk* h) { return save(h, gw_cltk_save_bound, gw_cltk_save); }
std::vector<uint8_t> save(const gw_lags_layer* h) {
    return save(h, gw_lags_layer_save_bound, gw_lags_layer_save);
}

std::vector<uint8_t> save(const gw_asylpg_master* h) {
    return save(h, gw_asylpg_master_save_bound, gw_asylpg_master_save);
}
std::vector<uint8_t> save(const gw_asylpg_worker* h) {
    return save(h, gw_asylpg_worker_save_bound, gw_asylpg_worker_save);
}

bool state_error(gw_status st) { return st <= GW_ERR_STATE_MAGIC && st >= GW_ERR_STATE_CORRUPT; }

// A blob either loads and saves back to the same bytes, or is refused with
// the handle unchanged. Returns whether it loaded.
template <class H>
bool check_load(H* h, const uint8_t* data, size_t size, gw_status (*load_fn)(H*, const void*, size_t)) {
    const auto before = save(h);
    const gw_status st = load_fn(h, data, size);
    const auto after = save(h);
    if (st == GW_OK) {
        FUZZ_CHECK(after.size() == size && std::memcmp(after.data(), data, size) == 0);
        return true;
    }
    FUZZ_CHECK(state_error(st));
    FUZZ_CHECK(after == before);
    return false;
}

// A loaded worker steps (or refuses with nothing changed).
void exercise(gw_worker* w) {
    uint64_t steps = 0, steps2 = 0;
    FUZZ_CHECK(gw_worker_step_count(w, &steps) == GW_OK);
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_worker_frame_bound(w, &bound) == GW_OK);
    std::vector<uint8_t> frame(bound);
    const auto before = save(w);
    const gw_status st =
        gw_worker_step(w, kGrad, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f, frame.data(), frame.size(), &written);
    FUZZ_CHECK(gw_worker_step_count(w, &steps2) == GW_OK);
    if (st != GW_OK) {
        // lr_prev / lr or the combined vector may overflow float32.
        FUZZ_CHECK(st == GW_ERR_OVERFLOW);
        FUZZ_CHECK(save(w) == before && steps2 == steps);
        return;
    }
    FUZZ_CHECK(steps2 == steps + 1);
    gw_frame_info info;
    gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
    FUZZ_CHECK(gw_frame_inspect(frame.data(), written, &info) == GW_OK);
    FUZZ_CHECK(info.count == FUZZ_STATE_N && (info.tag & 0xFFFFFFFFu) == (steps & 0xFFFFFFFFu));
}

// A loaded server finishes its round or takes a push (or refuses with nothing changed).
void exercise(gw_server* s, uint32_t tensor, gw_codec_id push_codec) {
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_server_frame_bound(s, &bound) == GW_OK);
    std::vector<uint8_t> frame(bound);
    auto before = save(s);
    gw_status st = gw_server_step(s, 0.1f, frame.data(), frame.size(), &written);
    if (st != GW_OK) {
        FUZZ_CHECK(st == GW_ERR_SEQUENCE || st == GW_ERR_OVERFLOW);
        FUZZ_CHECK(save(s) == before);
    }
    uint64_t steps = 0;
    FUZZ_CHECK(gw_server_step_count(s, &steps) == GW_OK);
    gw_codec_spec* spec = nullptr;
    FUZZ_CHECK(gw_codec_spec_create(&spec, push_codec) == GW_OK);
    // Every configuration's slice holds FUZZ_STATE_N or 0 elements: push both.
    std::vector<uint8_t> push;
    for (uint64_t n : {uint64_t(FUZZ_STATE_N), uint64_t(0)}) {
        gw_encode_ctx ctx;
        gw_encode_ctx_init(&ctx, GW_ENCODE_CTX_VERSION);
        ctx.tag = GW_TAG(tensor, steps);
        size_t fb = 0;
        FUZZ_CHECK(gw_encode_bound(spec, n, &fb) == GW_OK);
        push.assign(fb, 0);
        FUZZ_CHECK(gw_encode(spec, &ctx, kGrad, GW_DTYPE_F32, n, push.data(), push.size(), &written) == GW_OK);
        push.resize(written);
        before = save(s);
        st = gw_server_push(s, push.data(), push.size());
        if (st != GW_OK) {
            // Wrong length for this slice, round already full, or the sum overflows.
            FUZZ_CHECK(st == GW_ERR_COUNT_MISMATCH || st == GW_ERR_SEQUENCE || st == GW_ERR_OVERFLOW);
            FUZZ_CHECK(save(s) == before);
        }
    }
    gw_codec_spec_free(spec);
}

// A loaded CLT-k handle runs a round: dense, or as its own leader (the
// override), or refuses with nothing changed.
void exercise(gw_cltk* h) {
    uint64_t steps = 0, steps2 = 0;
    FUZZ_CHECK(gw_cltk_step_count(h, &steps) == GW_OK);
    const auto before = save(h);
    gw_status st = gw_cltk_begin(h, kGrad, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f);
    if (st != GW_OK) {
        FUZZ_CHECK(st == GW_ERR_OVERFLOW);  // m + lr g beyond float32
        FUZZ_CHECK(save(h) == before);
        return;
    }
    uint32_t leader = 0;
    FUZZ_CHECK(gw_cltk_leader(h, &leader) == GW_OK);
    size_t fb = 0, written = 0, count = 0, vb = 0;
    FUZZ_CHECK(gw_cltk_index_frame_bound(h, &fb) == GW_OK && gw_cltk_values_bound(h, &vb) == GW_OK);
    std::vector<uint8_t> frame(fb);
    std::vector<float> values(vb + 1);
    if (leader == GW_CLTK_NO_LEADER) {
        FUZZ_CHECK(gw_cltk_extract(h, nullptr, 0, values.data(), values.size(), &count) == GW_OK);
    } else {
        st = gw_cltk_select(h, frame.data(), frame.size(), &written);
        if (st == GW_ERR_SEQUENCE) {  // another worker leads this round
            FUZZ_CHECK(gw_cltk_reset_round(h) == GW_OK && save(h) == before);
            return;
        }
        FUZZ_CHECK(st == GW_OK);
        FUZZ_CHECK(gw_cltk_extract(h, frame.data(), written, values.data(), values.size(), &count) == GW_OK);
    }
    FUZZ_CHECK(gw_cltk_apply(h, values.data(), count, nullptr, 0) == GW_OK);
    FUZZ_CHECK(gw_cltk_step_count(h, &steps2) == GW_OK && steps2 == steps + 1);
}

// A loaded LAGS layer steps with its k, sparse and dense (or refuses with
// nothing changed: the residual plus lr g may overflow).
void exercise(gw_lags_layer* h) {
    uint64_t k = 0;
    FUZZ_CHECK(gw_lags_layer_k(h, &k) == GW_OK && k >= 1 && k <= FUZZ_STATE_N);
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_lags_layer_frame_bound(h, &bound) == GW_OK);
    std::vector<uint8_t> frame(bound);
    auto before = save(h);
    gw_status st = gw_lags_layer_step(h, kGrad, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f, frame.data(),
                                      frame.size(), &written);
    if (st != GW_OK) {
        FUZZ_CHECK(st == GW_ERR_OVERFLOW && save(h) == before);
        return;
    }
    gw_frame_info info;
    gw_frame_info_init(&info, GW_FRAME_INFO_VERSION);
    FUZZ_CHECK(gw_frame_inspect(frame.data(), written, &info) == GW_OK && info.count == FUZZ_STATE_N);
    float out[FUZZ_STATE_N];
    before = save(h);
    st = gw_lags_layer_step_dense(h, kGrad, GW_DTYPE_F32, FUZZ_STATE_N, 0.1f, out);
    if (st != GW_OK) FUZZ_CHECK(st == GW_ERR_OVERFLOW && save(h) == before);
}

// An identity frame of kGrad, tensor 4, tagged with `version`.
std::vector<uint8_t> grad_frame(uint64_t version, uint64_t count) {
    gw_codec_spec* id = nullptr;
    FUZZ_CHECK(gw_codec_spec_create(&id, GW_CODEC_IDENTITY) == GW_OK);
    gw_encode_ctx ctx = GW_ENCODE_CTX_INIT;
    ctx.tag = GW_TAG(4, version);
    std::vector<uint8_t> f(GW_FRAME_HEADER_SIZE + 4 * FUZZ_STATE_N + 4);
    size_t written = 0;
    FUZZ_CHECK(gw_encode(id, &ctx, kGrad, GW_DTYPE_F32, count, f.data(), f.size(), &written) == GW_OK);
    gw_codec_spec_free(id);
    f.resize(written);
    return f;
}

// A loaded master runs an update (starting an epoch if it waits for one), or
// refuses with nothing changed (a model near FLT_MAX may overflow).
void exercise(gw_asylpg_master* h) {
    uint64_t epoch = 0, inner = 0, version = 0;
    int running = 0;
    FUZZ_CHECK(gw_asylpg_master_progress(h, &epoch, &inner, &version, &running) == GW_OK);
    FUZZ_CHECK(epoch >= 1 && (running == 0 || running == 1));
    if (!running) FUZZ_CHECK(gw_asylpg_master_begin_epoch(h, kGrad, FUZZ_STATE_N) == GW_OK);
    size_t bound = 0, written = 0;
    unsigned bits = 0;
    FUZZ_CHECK(gw_asylpg_master_frame_bound(h, &bound) == GW_OK);
    std::vector<uint8_t> frame(bound);
    auto before = save(h);
    gw_status st = gw_asylpg_master_model(h, frame.data(), frame.size(), &written, &bits);
    FUZZ_CHECK(st == GW_OK || (st == GW_ERR_OVERFLOW && save(h) == before));
    const auto g = grad_frame(version, FUZZ_STATE_N);
    before = save(h);
    st = gw_asylpg_master_push(h, g.data(), g.size());
    if (st != GW_OK) FUZZ_CHECK(st == GW_ERR_OVERFLOW && save(h) == before);
    FUZZ_CHECK(gw_asylpg_master_push(h, g.data(), 3) != GW_OK);
}

// A loaded worker takes a model and steps, or says why not with nothing changed.
void exercise(gw_asylpg_worker* h) {
    const auto model = grad_frame(2, FUZZ_STATE_N);
    auto before = save(h);
    gw_status st = gw_asylpg_worker_receive(h, model.data(), model.size());
    if (st != GW_OK) {
        FUZZ_CHECK(st == GW_ERR_SEQUENCE && save(h) == before);  // no snapshot yet
        return;
    }
    size_t bound = 0, written = 0;
    FUZZ_CHECK(gw_asylpg_worker_frame_bound(h, &bound) == GW_OK);
    std::vector<uint8_t> frame(bound);
    FUZZ_CHECK(gw_asylpg_worker_step(h, kGrad, kGrad, GW_DTYPE_F32, FUZZ_STATE_N, frame.data(),
                                     frame.size(), &written) == GW_OK);
}

// The save bounds of every configuration, by blob kind (computed once).
struct Bounds {
    std::vector<size_t> of[8];
    Bounds() {
        gw_worker* w = nullptr;
        for (size_t i = 0; fuzz_worker_config(i, &w); ++i) of[1].push_back(bound(w)), gw_worker_free(w);
        gw_server* s = nullptr;
        uint32_t tensor = 0;
        gw_codec_id push_codec;
        for (size_t i = 0; fuzz_server_config(i, &s, &tensor, &push_codec); ++i)
            of[2].push_back(bound(s)), gw_server_free(s);
        gw_cltk* c = nullptr;
        for (size_t i = 0; fuzz_cltk_config(i, &c); ++i) of[3].push_back(bound(c)), gw_cltk_free(c);
        gw_lags_layer* l = nullptr;
        for (size_t i = 0; fuzz_lags_config(i, &l); ++i) of[4].push_back(bound(l)), gw_lags_layer_free(l);
        gw_asylpg_master* am = nullptr;
        for (size_t i = 0; fuzz_asylpg_master_config(i, &am); ++i)
            of[6].push_back(bound(am)), gw_asylpg_master_free(am);
        gw_asylpg_worker* aw = nullptr;
        for (size_t i = 0; fuzz_asylpg_worker_config(i, &aw); ++i)
            of[7].push_back(bound(aw)), gw_asylpg_worker_free(aw);
    }
    template <class H> static size_t bound(const H* h) {
        FUZZ_CHECK(h != nullptr);
        return save(h).size();
    }
};

// A blob goes into the first configuration of every kind (all but its own
// must refuse it) and into every configuration of its own kind (u16 at
// offset 6) whose checkpoints have its size (the others refuse it at once).
void load_all(const uint8_t* data, size_t size) {
    static const Bounds bounds;
    const unsigned kind = size >= 8 ? unsigned(data[6] | (data[7] << 8)) : 0;
    auto want = [&](size_t i, unsigned k) { return i == 0 || (kind == k && bounds.of[k][i] == size); };
    gw_worker* w = nullptr;
    for (size_t i = 0; i < bounds.of[1].size(); ++i) {
        if (!want(i, 1)) continue;
        FUZZ_CHECK(fuzz_worker_config(i, &w) && w != nullptr);
        if (check_load(w, data, size, gw_worker_load)) exercise(w);
        gw_worker_free(w);
    }
    gw_server* s = nullptr;
    uint32_t tensor = 0;
    gw_codec_id push_codec;
    for (size_t i = 0; i < bounds.of[2].size(); ++i) {
        if (!want(i, 2)) continue;
        FUZZ_CHECK(fuzz_server_config(i, &s, &tensor, &push_codec) && s != nullptr);
        if (check_load(s, data, size, gw_server_load)) exercise(s, tensor, push_codec);
        gw_server_free(s);
    }
    gw_cltk* c = nullptr;
    for (size_t i = 0; i < bounds.of[3].size(); ++i) {
        if (!want(i, 3)) continue;
        FUZZ_CHECK(fuzz_cltk_config(i, &c) && c != nullptr);
        if (check_load(c, data, size, gw_cltk_load)) exercise(c);
        gw_cltk_free(c);
    }
    gw_lags_layer* l = nullptr;
    for (size_t i = 0; i < bounds.of[4].size(); ++i) {
        if (!want(i, 4)) continue;
        FUZZ_CHECK(fuzz_lags_config(i, &l) && l != nullptr);
        if (check_load(l, data, size, gw_lags_layer_load)) exercise(l);
        gw_lags_layer_free(l);
    }
    gw_asylpg_master* am = nullptr;
    for (size_t i = 0; i < bounds.of[6].size(); ++i) {
        if (!want(i, 6)) continue;
        FUZZ_CHECK(fuzz_asylpg_master_config(i, &am) && am != nullptr);
        if (check_load(am, data, size, gw_asylpg_master_load)) exercise(am);
        gw_asylpg_master_free(am);
    }
    gw_asylpg_worker* aw = nullptr;
    for (size_t i = 0; i < bounds.of[7].size(); ++i) {
        if (!want(i, 7)) continue;
        FUZZ_CHECK(fuzz_asylpg_worker_config(i, &aw) && aw != nullptr);
        if (check_load(aw, data, size, gw_asylpg_worker_load)) exercise(aw);
        gw_asylpg_worker_free(aw);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 4 || std::memcmp(data, "GWST", 4) != 0) {
        prog::run(data, size);
        return 0;
    }
    load_all(data, size);
    if (size >= 4) {
        std::vector<uint8_t> fixed(data, data + size);
        uint32_t crc = 0;
        FUZZ_CHECK(gw_crc32c(data, size - 4, &crc) == GW_OK);
        for (int i = 0; i < 4; ++i) fixed[size - 4 + i] = static_cast<uint8_t>(crc >> (8 * i));
        if (std::memcmp(fixed.data(), data, size) != 0) load_all(fixed.data(), size);
    }
    return 0;
}
