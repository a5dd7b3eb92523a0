/*
 * gradwire bindings: the C ABI recast as classes and value-returning calls,
 * written once in C++ for every language SWIG generates (bindings/gradwire.i).
 *
 * Why a layer: SWIG maps output pointers and (pointer, capacity, written)
 * triples badly, and turning handles into classes needs constructors and
 * destructors. Here every call either succeeds or records a status and a
 * message in a thread-local slot (no C++ exceptions: the library is built
 * without them); the one %exception block of gradwire.i turns that slot
 * into the target language's exception.
 *
 * Buffers cross as gwb::In / gwb::Out, filled by per-language typemaps
 * (python.i: the buffer protocol; java.i: direct NIO buffers and primitive
 * arrays), always zero-copy. Each carries its element kind, so a float16
 * buffer handed in as F32 is an error rather than garbage.
 *
 * Adding a call: declare it here and define it in gwb.cpp; SWIG picks it up
 * for every language. New codecs need nothing: ids and parameters are read
 * from the library at run time. A new handle class says GWB_HANDLE (below)
 * with its line's columns from c_api/handles.def, and gets one line in
 * gradwire.i (GWB_HANDLE_CLASS); tests/plumbing_test.sh checks both.
 */
#ifndef GRADWIRE_BINDINGS_GWB_HPP
#define GRADWIRE_BINDINGS_GWB_HPP

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

#include "gradwire.h"

namespace gwb {

/* Element kinds a buffer can carry (what the language says it holds). */
enum Kind { KIND_BYTES = 0, KIND_F32, KIND_F16, KIND_U16, KIND_U32, KIND_I32, KIND_U64,
            KIND_I64, KIND_F64, KIND_OTHER };

/* A read-only view of caller memory (never owned). */
struct In {
    const void *data = nullptr;
    size_t size = 0;      /* bytes */
    Kind kind = KIND_BYTES;
    bool present = false; /* false: the caller passed None / null */
};
/* A writable view of caller memory (never owned). */
struct Out {
    void *data = nullptr;
    size_t size = 0;      /* bytes */
    Kind kind = KIND_BYTES;
    bool present = false;
};
/* A sequence of read-only views (the frames of one round). */
struct InList {
    std::vector<In> items;
};
/* Bytes made by the library and handed to the language (copied, then freed). */
struct Bytes {
    std::vector<uint8_t> data;
};
/* Integer lists handed to the language. */
struct U32List {
    std::vector<uint32_t> data;
};
struct U64List {
    std::vector<uint64_t> data;
};

/* The error slot the %exception block reads after every call. */
void clear_error();
bool error_pending();
int error_status();
const char *error_message();

/* ---------------------------------------------------------------- library */
std::string version();
unsigned int version_number();
std::string status_name(int status);
std::string status_message(int status);
void simd_set_target(gw_simd_target target);
gw_simd_target simd_active_target();
bool simd_target_supported(gw_simd_target target);
std::string simd_target_name(gw_simd_target target);

/* ----------------------------------------------------------------- codecs */
std::string codec_name(gw_codec_id codec); /* "" for an unknown id */
gw_codec_id codec_from_name(const std::string &name);
U32List codec_list();
U32List codec_params(gw_codec_id codec);
std::string param_name(gw_param param);
struct ParamBounds {
    int64_t min = 0, max = 0, default_value = 0;
};
ParamBounds codec_param_bounds(gw_codec_id codec, gw_param param);

class CodecSpec {
public:
    explicit CodecSpec(gw_codec_id codec);
    CodecSpec(const CodecSpec &other);
    CodecSpec &operator=(const CodecSpec &) = delete;
    ~CodecSpec();
    /* The codec and parameters a valid frame was written with. */
    static CodecSpec *from_frame(In frame);
    gw_codec_id codec() const;
    void set(gw_param param, int64_t value);
    int64_t get(gw_param param) const;
    void set_f32(gw_param param, float value);
    float get_f32(gw_param param) const;
    bool equals(const CodecSpec &other) const;
    /* The link's speed in bits per second (gw_codec_spec_set_link); 0 = unknown. */
    void set_link(uint64_t bits_per_second);
    uint64_t get_link() const;
    uint64_t encode_bound(uint64_t n) const;
    const gw_codec_spec *raw() const { return spec_; }

private:
    CodecSpec() = default;
    gw_codec_spec *spec_ = nullptr;
};

/* ---------------------------------------------------- stateless encode/decode */
/* Context of one encode (see gw_encode_ctx). */
struct EncodeContext {
    uint64_t seed = 0, step = 0;
    uint32_t tensor = 0;
    uint64_t tag = 0;
};
uint64_t tag(uint32_t tensor, uint32_t step);

/* Encode x (of `dtype`) into `frame`; returns bytes written. */
uint64_t encode_into(const CodecSpec &spec, const EncodeContext &ctx, In x, gw_dtype dtype,
                     Out frame);
Bytes encode(const CodecSpec &spec, const EncodeContext &ctx, In x, gw_dtype dtype);
/* Decode into a float32 buffer; returns the element count. */
uint64_t decode_into(In frame, Out out);
void decode_accumulate(In frame, float alpha, Out acc);
/* acc += alpha * decoded of every frame, in order, tiled (gw_decode_accumulate_many). */
void decode_accumulate_many(const InList &frames, float alpha, Out acc);

struct FrameInfo {
    unsigned int format_version = 0;
    gw_codec_id codec = GW_CODEC_IDENTITY;
    unsigned int flags = 0;
    uint64_t tag = 0, count = 0, payload_size = 0, frame_size = 0;
};
FrameInfo frame_inspect(In frame);
uint64_t frame_size(In header);
double frame_compression_ratio(In frame);
double scaled_sign_phi(In x, uint32_t block_size);
double codec_contraction(const CodecSpec &spec, const EncodeContext &ctx, In x);
uint32_t crc32c(In data);

/* ------------------------------------------------ sparse helpers, diagnostics */
void randk_indices(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t n, Out idx);
void randk_positions(unsigned int revision, uint64_t seed, uint32_t step, uint32_t tensor,
                     uint64_t n, Out idx);

/* --------------------------------------------------------- re-sharding */
/* gw_reshard: blobs[i] saved by old worker ranks[i] (uint32), its vectors
 * starting at element offsets[i] (uint64) of the tensor; the blob of new
 * worker rank_out of workers_out, holding [offset, offset + length). Empty:
 * a new AsyLPG worker, which starts from a fresh handle. */
Bytes reshard(const InList &blobs, In ranks, In offsets, uint32_t workers_in,
              uint32_t workers_out, uint32_t rank_out, uint64_t offset, uint64_t length);
void gather(In x, In idx, Out out);
void scatter_add(In values, In idx, float alpha, Out acc);
/* gw_ef_cast: out (16-bit values of dtype F16 or BF16) and e (float32, in and
 * out) from x; returns how many values were NaN or Inf. */
uint64_t ef_cast(In x, float alpha, Out e, gw_dtype dtype, Out out);
uint64_t index_frame_indices(In frame, Out idx);
uint64_t index_frame_count(In frame);
double index_overlap(In a, In b);
void rng_u32(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, Out out);
void rng_uniform(uint64_t seed, uint32_t step, uint32_t tensor, uint64_t first, Out out);
struct ShardRange {
    uint64_t offset = 0, length = 0;
};
ShardRange shard_range(uint64_t total, uint32_t parts, uint32_t index);
uint32_t scalecom_rate(double flops_per_gradient);

/* ------------------------------------------------------ handle plumbing */
/* What every handle class shares, written once: no copies, the destructor,
 * close(), and (per the C API's columns, c_api/handles.def) the frame bound,
 * the step count and checkpoints. A handle class says
 *     GWB_HANDLE(Class, name, bound, steps, state)
 * once in its body, with name the C prefix (gw_<name>_*) and bound / steps /
 * state as in handles.def (frame_bound | index_frame_bound | none,
 * step_count | none, checkpoint | none), then declares only its own calls.
 * GWB_TENSOR_HANDLE adds size(), the handle's tensor (or slice) length n_,
 * which its constructor sets. */
#ifndef SWIG
namespace detail {
/* False (and the error slot set) when the handle was closed. */
bool live(const void *h, const char *what);
/* True when the C call succeeded; otherwise the slot names the call. */
bool ok(gw_status status, const char *what);
bool present(const In &v, const char *what, const char *arg);
/* A scalar a handle reports through gw_<name>_<get>(h, &value). */
template <class T, class H>
T value(const H *h, gw_status (*get)(const H *, T *), const char *what) {
    T v = 0;
    if (live(h, what)) ok(get(h, &v), what);
    return v;
}
/* save(): bound, save, trim. */
template <class H>
Bytes save(const H *h, gw_status (*bound)(const H *, size_t *),
           gw_status (*save)(const H *, void *, size_t, size_t *), const char *what) {
    Bytes b;
    size_t cap = 0, written = 0;
    if (!live(h, what) || !ok(bound(h, &cap), what)) return b;
    b.data.resize(cap);
    if (!ok(save(h, b.data.data(), cap, &written), what)) written = 0;
    b.data.resize(written);
    return b;
}
template <class H>
void load(H *h, gw_status (*load)(H *, const void *, size_t), const In &blob, const char *what) {
    if (live(h, what) && present(blob, what, "blob")) ok(load(h, blob.data, blob.size), what);
}
}  // namespace detail
#endif

#define GWB_BOUND_none(name)
#define GWB_BOUND_frame_bound(name) GWB_BOUND(name, frame_bound)
#define GWB_BOUND_index_frame_bound(name) GWB_BOUND(name, index_frame_bound)
#define GWB_BOUND(name, bound)                                                        \
    uint64_t bound() const {                                                          \
        return detail::value<size_t>(h_, gw_##name##_##bound, "gw_" #name "_" #bound); \
    }
#define GWB_STEPS_none(name)
#define GWB_STEPS_step_count(name)                                                     \
    uint64_t step_count() const {                                                      \
        return detail::value<uint64_t>(h_, gw_##name##_step_count, "gw_" #name "_step_count"); \
    }
#define GWB_STATE_none(name)
#define GWB_STATE_checkpoint(name)                                                     \
    Bytes save() const {                                                               \
        return detail::save(h_, gw_##name##_save_bound, gw_##name##_save, "gw_" #name "_save"); \
    }                                                                                  \
    void load(In blob) { detail::load(h_, gw_##name##_load, blob, "gw_" #name "_load"); }
#define GWB_HANDLE(Class, name, bound, steps, state)                      \
  public:                                                                 \
    Class(const Class &) = delete;                                        \
    Class &operator=(const Class &) = delete;                              \
    ~Class() { gw_##name##_free(h_); }                                    \
    void close() {                                                        \
        gw_##name##_free(h_);                                             \
        h_ = nullptr;                                                     \
    }                                                                     \
    GWB_BOUND_##bound(name) GWB_STEPS_##steps(name) GWB_STATE_##state(name) \
                                                                          \
  private:                                                                \
    gw_##name *h_ = nullptr;                                              \
                                                                          \
  public:
#define GWB_TENSOR_HANDLE(Class, name, bound, steps, state) \
    GWB_HANDLE(Class, name, bound, steps, state)            \
    uint64_t size() const { return n_; }                    \
                                                            \
  private:                                                  \
    uint64_t n_ = 0;                                        \
                                                            \
  public:

/* ---------------------------------------------------------- worker and server */
class Worker {
public:
    Worker(uint64_t n, const CodecSpec &codec, gw_momentum momentum = GW_MOMENTUM_NESTEROV,
           float mu = 0.9f, bool error_feedback = true, uint32_t tensor = 0, uint64_t seed = 0);
    /* close() frees the handle now; any later call fails with GW_ERR_NULL_POINTER. */
    GWB_TENSOR_HANDLE(Worker, worker, frame_bound, step_count, checkpoint)
    uint64_t step_into(In grad, gw_dtype dtype, float lr, Out frame);
    Bytes step(In grad, gw_dtype dtype, float lr);
    void residual(Out out) const;
    void momentum(Out out) const;
};

class Server {
public:
    /* Owns [offset, offset + length) of a tensor of `total` elements;
     * `expect` may be null (accept any codec). */
    Server(uint64_t total, uint32_t num_workers, const CodecSpec &broadcast,
           const CodecSpec *expect = nullptr, uint64_t offset = 0, uint64_t length = UINT64_MAX,
           bool error_feedback = true, uint32_t tensor = 0, bool check_tag = true);
    GWB_TENSOR_HANDLE(Server, server, frame_bound, step_count, checkpoint)
    void push(In frame);
    uint64_t step_into(float lr, Out frame);
    Bytes step(float lr);
    /* All M frames of a round, then the step (gw_server_round). */
    uint64_t round_into(const InList &frames, float lr, Out frame);
    Bytes round(const InList &frames, float lr);
    void reset_round();
    void residual(Out out) const;
};

/* --------------------------------------------------------------- ScaleCom */
class Cltk {
public:
    Cltk(uint64_t n, uint32_t num_workers, uint32_t rank, const CodecSpec &index,
         float beta = 1.0f, uint64_t warmup_steps = 0, uint32_t tensor = 0);
    GWB_TENSOR_HANDLE(Cltk, cltk, index_frame_bound, step_count, checkpoint)
    uint64_t values_bound() const;
    uint32_t leader() const;
    void set_leader(uint32_t leader);
    void begin(In grad, gw_dtype dtype, float lr);
    uint64_t select_into(Out frame);
    Bytes select();
    /* frame may be absent in a dense warm-up round; returns the value count. */
    uint64_t extract(In frame, Out values);
    void apply(In summed, Out x);
    void reset_round();
    void memory(Out out) const;
    uint64_t indices(Out idx) const;
};

/* -------------------------------------------------------------- LAGS-SGD */
class LagsLayer {
public:
    LagsLayer(uint64_t n, const CodecSpec &codec, uint32_t tensor = 0, uint64_t seed = 0);
    GWB_TENSOR_HANDLE(LagsLayer, lags_layer, frame_bound, step_count, checkpoint)
    void set_k(uint64_t k);
    uint64_t k() const;
    uint64_t step_into(In grad, gw_dtype dtype, float lr, Out frame);
    Bytes step(In grad, gw_dtype dtype, float lr);
    void step_dense(In grad, gw_dtype dtype, float lr, Out out);
    void residual(Out out) const;
};

struct LagsNetwork {
    uint32_t num_workers = 1;
    double allgather_alpha = 0, allgather_beta = 0, allreduce_alpha = 0, allreduce_beta = 0;
    uint32_t value_bytes = 4;
    double max_ratio = 1000.0;
};
struct LagsPlanTimes {
    double t_plan = 0, t_dense = 0;
};
/* n: u64, t_backward and t_sparsify (may be absent): f64; writes ratio (f64),
 * k (u64) and verdict (i32), one per layer. */
LagsPlanTimes lags_plan(const LagsNetwork &net, In n, In t_backward, In t_sparsify, Out ratio,
                        Out k, Out verdict);
double lags_s_max(double t_f, double t_b, double t_c);
/* xs: `workers` float32 vectors of equal length, back to back. */
double sparsity_delta(In xs, uint32_t workers, uint64_t k);

/* AsyLPG family (gw_asylpg_*): the master and a worker. */
class AsylpgMaster {
public:
    AsylpgMaster(In x0, gw_asylpg_variant variant, float lr, float l1, float l2,
                 uint64_t epoch_length, uint32_t tau, float mu, unsigned bits_min,
                 unsigned bits_max, uint32_t model_block = 0, uint32_t tensor = 0,
                 uint64_t seed = 0);
    GWB_TENSOR_HANDLE(AsylpgMaster, asylpg_master, frame_bound, none, checkpoint)
    void snapshot(Out out) const;
    void begin_epoch(In full_grad);
    uint64_t model_into(Out frame);
    Bytes model();
    unsigned last_bits() const { return bits_; } /* b_x of the last model frame (0, 32) */
    void push(In frame);
    void params(Out out) const;
    U64List progress() const; /* epoch, inner, version, running */

private:
    unsigned bits_ = 0;
};

class AsylpgWorker {
public:
    AsylpgWorker(uint64_t n, const CodecSpec &codec, uint32_t tensor = 0, uint64_t seed = 0);
    GWB_TENSOR_HANDLE(AsylpgWorker, asylpg_worker, frame_bound, none, checkpoint)
    void set_snapshot(In snapshot);
    void receive(In frame);
    uint64_t model(Out out) const; /* returns the model's version */
    uint64_t step_into(In grad_model, In grad_snapshot, gw_dtype dtype, Out frame);
    Bytes step(In grad_model, In grad_snapshot, gw_dtype dtype);
};

class Fusion {
public:
    Fusion(uint32_t layers, uint64_t capacity = 1u << 16);
    GWB_HANDLE(Fusion, fusion, none, none, none)
    /* true when the bundle should go out now. */
    bool add(uint32_t layer, In frame);
    uint64_t bundle_size() const;
    uint64_t pending() const;
    uint64_t flush_into(Out bundle);
    Bytes flush();
};
/* A bundle's frames as (layer, offset, size) triples, flattened. */
U64List bundle_frames(In bundle);

}  // namespace gwb

#endif
