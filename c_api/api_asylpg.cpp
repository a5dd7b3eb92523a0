// C entry points of the AsyLPG family's master and worker (feedback/asylpg.hpp).
#include <cmath>

#include "handles.hpp"

using namespace gw::api;

namespace {
bool model_bits_ok(unsigned b) { return b <= 8 || b == 16; }
}  // namespace

extern "C" {

gw_status gw_asylpg_master_create(gw_asylpg_master** h, const gw_asylpg_master_options* o,
                                  const float* x0, uint64_t n) {
    if (!h || !o || !x0) return GW_ERR_NULL_POINTER;
    if (!known_version(o->version, GW_ASYLPG_MASTER_OPTIONS_VERSION)) return GW_ERR_OPTIONS_VERSION;
    const int variant = gw::enum_value(o->variant);
    if (o->n == 0 || o->n > GW_MAX_ELEMENTS || (variant != GW_ASYLPG_PLAIN && variant != GW_ASYLPG_ACC) ||
        !model_bits_ok(o->bits_min) || !model_bits_ok(o->bits_max))
        return GW_ERR_INVALID_ARGUMENT;
    if (n != o->n) return GW_ERR_COUNT_MISMATCH;
    gw::AsylpgMasterConfig c;
    c.n = o->n;
    c.variant = static_cast<uint8_t>(variant);
    c.lr = o->lr;
    c.l1 = o->l1;
    c.l2 = o->l2;
    c.mu = o->mu;
    c.epoch_length = o->epoch_length;
    c.tau = o->tau;
    c.bits_min = static_cast<uint8_t>(o->bits_min);
    c.bits_max = static_cast<uint8_t>(o->bits_max);
    c.model_block = o->model_block;
    c.tensor = o->tensor;
    c.seed = o->seed;
    c.x0 = x0;
    return create_handle(h, o, c);
}

gw_status gw_asylpg_master_snapshot(const gw_asylpg_master* h, float* out, uint64_t n) {
    return read_vector(h, &gw::AsylpgMaster::snapshot, out, n);
}

gw_status gw_asylpg_master_begin_epoch(gw_asylpg_master* h, const float* full_grad, uint64_t n) {
    if (!h || !full_grad) return GW_ERR_NULL_POINTER;
    if (const gw_status st = h->impl.sequence(gw::AsylpgMaster::Call::kBeginEpoch); st != GW_OK)
        return st;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    return h->impl.begin_epoch(full_grad);
}

gw_status gw_asylpg_master_model(gw_asylpg_master* h, void* frame, size_t capacity,
                                 size_t* written, unsigned int* bits) {
    if (!h || !frame || !written || !bits) return GW_ERR_NULL_POINTER;
    return h->impl.model(frame, capacity, written, bits);
}

gw_status gw_asylpg_master_push(gw_asylpg_master* h, const void* frame, size_t size) {
    if (!h || (!frame && size)) return GW_ERR_NULL_POINTER;
    return h->impl.push(frame, size);
}

gw_status gw_asylpg_master_params(const gw_asylpg_master* h, float* out, uint64_t n) {
    return read_vector(h, &gw::AsylpgMaster::params, out, n);
}

gw_status gw_asylpg_master_progress(const gw_asylpg_master* h, uint64_t* epoch, uint64_t* inner,
                                    uint64_t* version, int* running) {
    if (!h) return GW_ERR_NULL_POINTER;
    const auto s = h->impl.scalars();
    if (epoch) *epoch = s.epoch;
    if (inner) *inner = s.inner;
    if (version) *version = s.version;
    if (running) *running = s.phase.is(gw::kInEpoch);
    return GW_OK;
}

gw_status gw_asylpg_worker_create(gw_asylpg_worker** h, const gw_asylpg_worker_options* o,
                                  const gw_codec_spec* codec) {
    return create_tensor_machine<gw::AsylpgWorkerConfig>(h, o, GW_ASYLPG_WORKER_OPTIONS_VERSION,
                                                         codec);
}

gw_status gw_asylpg_worker_set_snapshot(gw_asylpg_worker* h, const float* snapshot, uint64_t n) {
    if (!h || !snapshot) return GW_ERR_NULL_POINTER;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    return h->impl.set_snapshot(snapshot);
}

gw_status gw_asylpg_worker_receive(gw_asylpg_worker* h, const void* frame, size_t size) {
    if (!h || (!frame && size)) return GW_ERR_NULL_POINTER;
    return h->impl.receive(frame, size);
}

gw_status gw_asylpg_worker_model(const gw_asylpg_worker* h, float* out, uint64_t n,
                                 uint64_t* version) {
    if (!h || !out) return GW_ERR_NULL_POINTER;
    return h->impl.model(out, n, version);
}

gw_status gw_asylpg_worker_step(gw_asylpg_worker* h, const void* grad_model,
                                const void* grad_snapshot, gw_dtype dtype, uint64_t n,
                                void* frame, size_t capacity, size_t* written) {
    if (!h || !grad_model || !grad_snapshot || !frame || !written) return GW_ERR_NULL_POINTER;
    if (const gw_status st = h->impl.sequence(gw::AsylpgWorker::Call::kStep); st != GW_OK)
        return st;
    if (!valid_dtype(dtype)) return GW_ERR_INVALID_ARGUMENT;
    if (n != h->impl.config().n) return GW_ERR_COUNT_MISMATCH;
    const size_t in = span_bytes(n, dtype_size(dtype));
    if (overlaps(grad_model, in, frame, capacity) || overlaps(grad_snapshot, in, frame, capacity))
        return GW_ERR_OVERLAP;
    return h->impl.step(grad_model, grad_snapshot, dtype, frame, capacity, written);
}

}  // extern "C"
