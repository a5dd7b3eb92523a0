#include "feedback/reshard.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "feedback/state_blob.hpp"
#include "util/buffer.hpp"
#include "util/bytes.hpp"

namespace gw::reshard {

namespace {

using namespace gw::blob;

constexpr uint32_t kMaxFields = 24;  // more than any kind has
constexpr uint32_t kCyclic = 0xFFFFFFFFu;
constexpr uint64_t kMaxElements = uint64_t(1) << 40;  // GW_MAX_ELEMENTS: no handle is longer

struct Field {
    uint16_t id;
    uint8_t type;
    uint64_t count;
    const uint8_t* data;
};

struct Blob {
    uint16_t kind = 0;
    uint32_t nfields = 0;
    Field f[kMaxFields];
    uint32_t rank = 0;
    uint64_t offset = 0, length = 0;  // the tensor range its vectors hold

    const Field* get(uint16_t id) const {
        for (uint32_t i = 0; i < nfields; ++i)
            if (f[i].id == id) return &f[i];
        return nullptr;
    }
    template <class T> T value(uint16_t id) const { return load_le<T>(get(id)->data); }
};

// One kind's field list in order (docs/wire-format.md, "State blobs"); optional
// fields are vectors whose presence the kind's rule below decides.
struct Spec {
    uint16_t id;
    uint8_t type;
    bool optional;
};
constexpr Spec kWorkerSpec[] = {{1, kU64, 0}, {2, kU8, 0},  {3, kBytes, 0}, {4, kU8, 0},
                                {5, kF32, 0}, {6, kU8, 0},  {7, kU32, 0},   {8, kU64, 0},
                                {32, kU64, 0}, {33, kF32, 0}, {64, kF32s, 1}, {65, kF32s, 1}};
constexpr Spec kServerSpec[] = {{1, kU64, 0},  {2, kU64, 0},  {3, kU64, 0},  {4, kU32, 0},
                                {5, kU8, 0},   {6, kBytes, 0}, {7, kU8, 0},  {8, kU32, 0},
                                {32, kU64, 0}, {33, kF32, 0}, {34, kU32, 0}, {64, kF32s, 1},
                                {65, kF32s, 1}};
constexpr Spec kCltkSpec[] = {{1, kU64, 0}, {2, kU32, 0}, {3, kU32, 0},   {4, kF32, 0},
                              {5, kU64, 0}, {6, kU32, 0}, {7, kU8, 0},    {8, kBytes, 0},
                              {32, kU64, 0}, {33, kU32, 0}, {64, kF32s, 0}};
constexpr Spec kLagsSpec[] = {{1, kU64, 0},  {2, kU32, 0},  {3, kU64, 0},  {4, kU8, 0},
                              {5, kBytes, 0}, {32, kU64, 0}, {33, kF32, 0}, {34, kU64, 0},
                              {64, kF32s, 0}};
constexpr Spec kMasterSpec[] = {{1, kU64, 0},  {2, kU8, 0},   {3, kF32, 0},  {4, kF32, 0},
                                {5, kF32, 0},  {6, kF32, 0},  {7, kU64, 0},  {8, kU32, 0},
                                {9, kU8, 0},   {10, kU8, 0},  {11, kU32, 0}, {12, kU32, 0},
                                {13, kU64, 0}, {32, kU64, 0}, {33, kU64, 0}, {34, kU64, 0},
                                {35, kU8, 0},  {64, kF32s, 0}, {65, kF32s, 0}, {66, kF32s, 0},
                                {67, kF32s, 0}, {68, kF32s, 0}};
constexpr Spec kAWorkerSpec[] = {{1, kU64, 0},  {12, kU32, 0}, {13, kU64, 0}, {14, kU8, 0},
                                 {15, kBytes, 0}, {36, kU64, 0}, {34, kU64, 0}, {37, kU8, 0},
                                 {65, kF32s, 0}, {69, kF32s, 0}};

template <size_t N> bool matches(const Blob& b, const Spec (&spec)[N]) {
    uint32_t i = 0;
    for (const Spec& s : spec) {
        if (i < b.nfields && b.f[i].id == s.id) {
            if (b.f[i].type != s.type || (s.type != kBytes && s.type != kF32s && b.f[i].count != 1))
                return false;
            ++i;
        } else if (!s.optional) {
            return false;
        }
    }
    return i == b.nfields;
}

// Every vector of a blob holds `length` elements.
bool vectors_hold(const Blob& b, uint64_t length) {
    for (uint32_t i = 0; i < b.nfields; ++i)
        if (b.f[i].type == kF32s && b.f[i].count != length) return false;
    return true;
}

// The scalars each kind's loader checks (its scalars_valid): the clock's
// lr_prev, a server's pushes, CLT-k's leader, LAGS's k, the AsyLPG phases.
bool clock_valid(const Blob& b) {
    const float lr = b.value<float>(33);
    return std::isfinite(lr) && lr >= 0.0f;
}
bool scalars_valid(const Blob& b) {
    switch (b.kind) {
        case kWorker: return clock_valid(b);
        case kServer: return clock_valid(b) && b.value<uint32_t>(34) <= b.value<uint32_t>(4);
        case kCltk: {
            const uint32_t leader = b.value<uint32_t>(33);
            return leader == kCyclic || leader < b.value<uint32_t>(2);
        }
        case kLags: {
            const uint64_t k = b.value<uint64_t>(34);
            return clock_valid(b) && k >= 1 && k <= b.value<uint64_t>(1);
        }
        case kAsylpgMaster: {
            const uint64_t epoch = b.value<uint64_t>(32), inner = b.value<uint64_t>(33);
            const uint8_t phase = b.value<uint8_t>(35);
            return epoch >= 1 && phase <= 1 && inner < b.value<uint64_t>(7) &&
                   (phase == 1 || inner == 0);
        }
        default: return b.value<uint8_t>(37) <= 2;  // kAsylpgWorker
    }
}

// Structure, field list and the kind's own consistency; GW_ERR_STATE_* otherwise.
gw_status parse(const kern::Table& kt, const Part& p, Blob* b) {
    const auto* d = static_cast<const uint8_t*>(p.blob);
    uint32_t nfields = 0;
    gw_status st = check_header(kt, d, p.size, &b->kind, &nfields);
    if (st != GW_OK) return st;
    if (nfields > kMaxFields) return GW_ERR_STATE_CORRUPT;
    const size_t end = p.size - kTrailerSize;
    size_t pos = kHeaderSize;
    for (uint32_t i = 0; i < nfields; ++i) {
        if (end - pos < kFieldHeader) return GW_ERR_STATE_CORRUPT;
        Field& f = b->f[i];
        f.id = load_le<uint16_t>(d + pos);
        f.type = d[pos + 2];
        f.count = load_le<uint64_t>(d + pos + 4);
        const size_t width = type_width(f.type);
        if (width == 0 || d[pos + 3] != 0) return GW_ERR_STATE_CORRUPT;
        pos += kFieldHeader;
        if (f.count > (end - pos) / width) return GW_ERR_STATE_CORRUPT;
        f.data = d + pos;
        if (f.type == kF32s && !floats_finite_le(f.data, f.count)) return GW_ERR_STATE_CORRUPT;
        pos += static_cast<size_t>(f.count * width);
    }
    if (pos != end) return GW_ERR_STATE_CORRUPT;
    b->nfields = nfields;
    b->rank = p.rank;

    bool ok = false;
    switch (b->kind) {
        case kWorker:
            ok = matches(*b, kWorkerSpec) && b->value<uint64_t>(1) >= 1 &&
                 (b->get(64) != nullptr) == (b->value<uint8_t>(4) != GW_MOMENTUM_NONE) &&
                 (b->get(65) != nullptr) == (b->value<uint8_t>(6) != 0);
            b->offset = p.offset;
            b->length = ok ? b->value<uint64_t>(1) : 0;
            break;
        case kServer:
            b->rank = 0;  // ignored: slices are ordered by their offsets alone
            ok = matches(*b, kServerSpec);
            if (ok) {
                b->offset = b->value<uint64_t>(2);
                b->length = b->value<uint64_t>(3);
                const uint64_t total = b->value<uint64_t>(1);
                ok = b->offset <= total && b->length <= total - b->offset &&
                     (b->get(64) != nullptr) == (b->value<uint8_t>(7) != 0 && b->length > 0) &&
                     (b->get(65) != nullptr) == (b->value<uint32_t>(34) > 0);
            }
            break;
        case kCltk: ok = matches(*b, kCltkSpec); break;
        case kLags: ok = matches(*b, kLagsSpec); break;
        case kAsylpgMaster: ok = matches(*b, kMasterSpec); break;
        case kAsylpgWorker: ok = matches(*b, kAWorkerSpec); break;
        default: return GW_ERR_STATE_MISMATCH;  // no state of a kind that re-shards
    }
    if (ok && b->kind != kWorker && b->kind != kServer) b->length = b->value<uint64_t>(1);
    if (!ok || !scalars_valid(*b) || !vectors_hold(*b, b->length) || b->length > kMaxElements ||
        (b->kind == kServer && b->value<uint64_t>(1) > kMaxElements))
        return GW_ERR_STATE_CORRUPT;
    return GW_OK;
}

// Fields that may differ between parts: the geometry a part holds.
bool per_part(uint16_t kind, uint16_t id) {
    switch (kind) {
        case kWorker: return id == 1;
        case kServer: return id == 2 || id == 3 || id == 34;
        case kCltk: return id == 3;
        case kAsylpgWorker: return id == 13 || id >= 32;  // each worker's seed and progress
        default: return false;
    }
}

// Every non-vector field not per part is the same bytes in every part.
gw_status same_configuration(const Blob* b, size_t count) {
    for (size_t p = 1; p < count; ++p) {
        for (uint32_t i = 0; i < b[0].nfields; ++i) {
            const Field& x = b[0].f[i];
            if (x.type == kF32s || per_part(b[0].kind, x.id)) continue;
            const Field* y = b[p].get(x.id);  // every non-vector field is in every blob
            if (x.count != y->count || std::memcmp(x.data, y->data, x.count * type_width(x.type)))
                return GW_ERR_STATE_MISMATCH;
        }
    }
    return GW_OK;
}

// order[] = part indices by (rank, offset): the sum's order is fixed by the
// state, not by the order the caller lists the parts in.
void sort_parts(const Blob* b, size_t* order, size_t count) {
    for (size_t i = 0; i < count; ++i) order[i] = i;
    // O(count log count) for any count a caller passes, no allocation.
    std::sort(order, order + count, [b](size_t i, size_t j) {
        return b[i].rank < b[j].rank || (b[i].rank == b[j].rank && b[i].offset < b[j].offset);
    });
}

// The parts in `order` (one rank's, or the server's slices) tile [lo, hi)
// with no overlap among them: GW_ERR_STATE_DUPLICATE / _MISSING otherwise.
gw_status covers(const Blob* b, const size_t* order, size_t count, uint64_t lo, uint64_t hi) {
    uint64_t prev_end = 0, cursor = lo;
    bool any = false;
    for (size_t i = 0; i < count; ++i) {
        const Blob& x = b[order[i]];
        if (x.length == 0) continue;
        if (any && x.offset < prev_end) return GW_ERR_STATE_DUPLICATE;
        any = true;
        prev_end = x.offset + x.length;
        if (prev_end <= cursor || x.offset >= hi) continue;
        if (x.offset > cursor) return GW_ERR_STATE_MISSING;
        cursor = prev_end;
    }
    return cursor >= hi ? GW_OK : GW_ERR_STATE_MISSING;
}

struct Output {
    size_t size = 0;
    bool vectors = false;  // it holds a vector (and needs scratch to build it)
    Writer* w = nullptr;   // null: only size it

    void field(const Field& f) { raw(f.id, f.type, f.count, f.data); }
    void raw(uint16_t id, uint8_t type, uint64_t count, const void* data) {
        const size_t bytes = static_cast<size_t>(count * type_width(type));
        size += kFieldHeader + bytes;
        vectors = vectors || type == kF32s;
        if (w) w->field(id, static_cast<Type>(type), count, data, bytes);
    }
    template <class T> void value(uint16_t id, T v) {
        uint8_t le[sizeof v];
        store_le<T>(le, v);
        raw(id, TypeOf<T>::value, 1, le);
    }
};

// The mean over the M ranks (or rank_out's own values when M' = M) of vector
// `id` over [t.offset, t.offset + t.length), summed in double in rank order.
gw_status mean_vector(const Blob* b, const size_t* order, size_t count, const Target& t,
                      uint16_t id, float* out) {
    const bool own = t.workers_in == t.workers_out;
    double* acc = static_cast<double*>(std::calloc(t.length, sizeof(double)));
    if (!acc) return GW_ERR_OUT_OF_MEMORY;
    const uint64_t lo = t.offset, hi = t.offset + t.length;
    for (size_t i = 0; i < count; ++i) {
        const Blob& x = b[order[i]];
        if (own && x.rank != t.rank_out) continue;
        const uint64_t a = x.offset > lo ? x.offset : lo;
        const uint64_t e = x.offset + x.length < hi ? x.offset + x.length : hi;
        const uint8_t* v = x.get(id)->data;
        for (uint64_t k = a; k < e; ++k) acc[k - lo] += load_le<float>(v + 4 * (k - x.offset));
    }
    const double m = own ? 1.0 : static_cast<double>(t.workers_in);
    // out holds the new field's bytes (little-endian, like join_slices' copy).
    uint8_t* le = reinterpret_cast<uint8_t*>(out);
    for (uint64_t k = 0; k < t.length; ++k) store_le<float>(le + 4 * k, static_cast<float>(acc[k] / m));
    std::free(acc);
    return GW_OK;
}

// The server's slice: its e_s cut and joined from the old slices.
void join_slices(const Blob* b, const size_t* order, size_t count, const Target& t, float* out) {
    const uint64_t lo = t.offset, hi = t.offset + t.length;
    for (size_t i = 0; i < count; ++i) {
        const Blob& x = b[order[i]];
        const uint64_t a = x.offset > lo ? x.offset : lo;
        const uint64_t e = x.offset + x.length < hi ? x.offset + x.length : hi;
        if (a < e) std::memcpy(out + (a - lo), x.get(64)->data + 4 * (a - x.offset), 4 * (e - a));
    }
}

// Writes (or sizes) the new blob of a kind whose vectors are averaged or
// joined: the first part's fields, geometry rewritten, vectors rebuilt.
gw_status emit(const Blob* b, const size_t* order, size_t count, const Target& t, Output& o,
               float* scratch) {
    const Blob& f = b[0];
    for (uint32_t i = 0; i < f.nfields; ++i) {
        const Field& x = f.f[i];
        if (x.type == kF32s) {
            if (f.kind == kServer) continue;  // e_s is added below, whatever part 0 held
            if (o.w) {
                gw_status st = mean_vector(b, order, count, t, x.id, scratch);
                if (st != GW_OK) return st;
            }
            o.raw(x.id, kF32s, t.length, scratch);
            continue;
        }
        switch (f.kind * 256 + x.id) {
            case kWorker * 256 + 1: o.value<uint64_t>(1, t.length); break;
            case kServer * 256 + 2: o.value<uint64_t>(2, t.offset); break;
            case kServer * 256 + 3: o.value<uint64_t>(3, t.length); break;
            case kServer * 256 + 4: o.value<uint32_t>(4, t.workers_out); break;
            case kCltk * 256 + 2: o.value<uint32_t>(2, t.workers_out); break;
            case kCltk * 256 + 3: o.value<uint32_t>(3, t.rank_out); break;
            case kCltk * 256 + 33: {
                const uint32_t leader = load_le<uint32_t>(x.data);
                o.value<uint32_t>(33, leader < t.workers_out ? leader : kCyclic);
                break;
            }
            default: o.field(x);
        }
    }
    if (f.kind == kServer && f.value<uint8_t>(7) != 0 && t.length > 0) {
        if (o.w) join_slices(b, order, count, t, scratch);
        o.raw(64, kF32s, t.length, scratch);
    }
    return GW_OK;
}

// Kind-specific checks of the parts against the target.
gw_status check_parts(const Blob* b, const size_t* order, size_t count, const Target& t) {
    const uint16_t kind = b[0].kind;
    for (size_t i = 0; i < count; ++i) {
        const Blob& x = b[i];
        if (kind != kServer && x.rank >= t.workers_in) return GW_ERR_INVALID_ARGUMENT;
        if (kind == kServer && x.value<uint32_t>(4) != t.workers_in) return GW_ERR_STATE_MISMATCH;
        if (kind == kCltk &&
            (x.value<uint32_t>(2) != t.workers_in || x.value<uint32_t>(3) != x.rank))
            return GW_ERR_STATE_MISMATCH;
        if ((kind == kCltk || kind == kLags) && x.offset != 0) return GW_ERR_INVALID_ARGUMENT;
    }
    if (kind == kServer) {
        const uint64_t total = b[0].value<uint64_t>(1);
        if (t.offset > total || t.length > total - t.offset) return GW_ERR_INVALID_ARGUMENT;
        for (size_t i = 0; i < count; ++i)
            if (b[i].value<uint32_t>(34) != 0) return GW_ERR_SEQUENCE;  // mid-round
        return covers(b, order, count, t.offset, t.offset + t.length);
    }
    if ((kind == kCltk || kind == kLags) && (t.offset != 0 || t.length != b[0].length))
        return GW_ERR_INVALID_ARGUMENT;  // whole tensors only
    if (t.length == 0) return GW_ERR_INVALID_ARGUMENT;
    // Every old rank's pieces tile the new range (at M' = M, rank_out's do).
    const bool own = t.workers_in == t.workers_out;
    uint32_t next = 0;  // the rank expected next (ranks are < M, sorted)
    bool found = false;
    for (size_t i = 0, j; i < count; i = j) {
        const uint32_t r = b[order[i]].rank;
        for (j = i; j < count && b[order[j]].rank == r;) ++j;
        if (!own && r != next) return GW_ERR_STATE_MISSING;
        next = r + 1;
        found = found || r == t.rank_out;
        gw_status st = covers(b, order + i, j - i, t.offset, t.offset + t.length);
        if (st != GW_OK && (!own || r == t.rank_out || st == GW_ERR_STATE_DUPLICATE)) return st;
    }
    if (own ? !found : next != t.workers_in) return GW_ERR_STATE_MISSING;
    return GW_OK;
}

// AsyLPG: the master as it is; a worker rank below M keeps its blob, a new
// one starts fresh (0 bytes).
gw_status carry(const Part* parts, const Blob* b, size_t count, const Target& t, void* out,
                size_t capacity, size_t* written) {
    size_t pick = count;
    if (b[0].kind == kAsylpgMaster) {
        if (count > 1) return GW_ERR_STATE_DUPLICATE;
        pick = 0;
    } else {
        for (size_t i = 0; i < count; ++i) {
            if (b[i].rank >= t.workers_in) return GW_ERR_INVALID_ARGUMENT;
            if (b[i].rank != t.rank_out) continue;
            if (pick != count) return GW_ERR_STATE_DUPLICATE;
            pick = i;
        }
        if (t.rank_out >= t.workers_in) {
            *written = 0;
            return GW_OK;
        }
        if (pick == count) return GW_ERR_STATE_MISSING;
    }
    *written = parts[pick].size;
    if (capacity < parts[pick].size) return GW_ERR_BUFFER_TOO_SMALL;
    std::memcpy(out, parts[pick].blob, parts[pick].size);
    return GW_OK;
}

template <class T> struct Freed {
    T* p;
    ~Freed() { std::free(p); }
};

}  // namespace

gw_status build(const kern::Table& kt, const Part* parts, size_t count, const Target& t, void* out,
                size_t capacity, size_t* written) {
    *written = 0;
    Freed<Blob> blobs{static_cast<Blob*>(std::calloc(count, sizeof(Blob)))};
    Freed<size_t> order{static_cast<size_t*>(std::calloc(count, sizeof(size_t)))};
    if (!blobs.p || !order.p) return GW_ERR_OUT_OF_MEMORY;
    Blob* b = blobs.p;
    for (size_t i = 0; i < count; ++i) {
        gw_status st = parse(kt, parts[i], &b[i]);
        if (st != GW_OK) return st;
    }
    for (size_t i = 1; i < count; ++i)
        if (b[i].kind != b[0].kind) return GW_ERR_STATE_MISMATCH;
    gw_status st = same_configuration(b, count);
    if (st != GW_OK) return st;
    if (b[0].kind == kAsylpgMaster || b[0].kind == kAsylpgWorker)
        return carry(parts, b, count, t, out, capacity, written);
    sort_parts(b, order.p, count);
    if ((st = check_parts(b, order.p, count, t)) != GW_OK) return st;

    Output sizer;
    emit(b, order.p, count, t, sizer, nullptr);
    const size_t size = kHeaderSize + sizer.size + kTrailerSize;
    *written = size;
    if (capacity < size) return GW_ERR_BUFFER_TOO_SMALL;
    // Scratch only for vectors: a blob without any (a worker with neither
    // momentum nor residual) may have any length.
    const uint64_t floats = sizer.vectors ? t.length : 0;
    FloatBuf scratch = alloc_floats(malloc_allocator(), floats);
    if (floats && !scratch) return GW_ERR_OUT_OF_MEMORY;
    Writer w(kt, static_cast<uint8_t*>(out), static_cast<Kind>(b[0].kind));
    Output o;
    o.w = &w;
    if ((st = emit(b, order.p, count, t, o, scratch.get())) != GW_OK) {
        *written = 0;
        return st;
    }
    w.finish();
    return GW_OK;
}

}  // namespace gw::reshard
