#include "feedback/lags_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernels.hpp"
#include "kernels/context.hpp"

namespace gw::lags {

double allgather_time(const Network& net, double bytes) {
    return double(net.workers - 1) * (net.ag_alpha + bytes * net.ag_beta);
}

double allreduce_time(const Network& net, double bytes) {
    const double p = net.workers;
    return 2.0 * (p - 1.0) * net.ar_alpha + 2.0 * (p - 1.0) / p * bytes * net.ar_beta;
}

namespace {

double sparse_time(const Network& net, uint64_t k, double t_spar) {
    return allgather_time(net, double(k) * (net.value_bytes + 4.0)) + t_spar;
}

// The largest k whose all-gather (after t_spar) fits in `budget`, or 0.
uint64_t largest_hidden_k(const Network& net, uint64_t n, double budget, double t_spar) {
    if (net.workers <= 1) return n;
    const double steps = net.workers - 1.0;
    const double avail = budget - t_spar - steps * net.ag_alpha;
    if (avail < 0) return 0;
    if (net.ag_beta <= 0) return n;
    const double k = std::floor(avail / (steps * net.ag_beta * (net.value_bytes + 4.0)));
    return k >= double(n) ? n : uint64_t(k);
}

// End of the last collective when layer j is sent taking times[j].
double pipeline_end(size_t layers, const double* t_b, const double* comm) {
    double ready = 0, link = 0;
    for (size_t j = 0; j < layers; ++j) {
        ready += t_b[j];
        link = std::max(link, ready) + comm[j];
    }
    return link;
}

}  // namespace

gw_status plan(const Network& net, size_t layers, const uint64_t* n, const double* t_b,
               const double* t_spar, LayerPlan* out, double* t_plan, double* t_dense) {
    Scratch mem(malloc_allocator());
    double* plan_comm = static_cast<double*>(mem.get(4 * layers * sizeof(double) + 1));
    if (!plan_comm) return GW_ERR_OUT_OF_MEMORY;
    double* dense_comm = plan_comm + layers;
    double* fast_comm = dense_comm + layers;  // the shorter of eq. 19's and the dense collective
    double* deadline = fast_comm + layers;
    // Eq. 19 per layer, then the shorter collective. Layer j's collective
    // starts at max(link, ready_j) whichever way it goes, and the end is
    // nondecreasing in every link time (max and + round monotonically), so
    // the shorter collective on every layer ends earliest of all 2^layers
    // choices: never later than eq. 19 everywhere nor than all-dense, also
    // in floating point. (Comparing exposed times instead sent a layer
    // dense when both were hidden behind the next backward, though the
    // dense one held the link longer and delayed the layers after it.)
    for (size_t j = 0; j < layers; ++j) {
        const double spar = t_spar ? t_spar[j] : 0.0;
        const double budget = j + 1 < layers ? t_b[j + 1] : 0.0;
        const uint64_t d = n[j];
        LayerPlan p;
        const uint64_t kh = largest_hidden_k(net, d, budget, spar);
        const double c_hidden = kh ? double(d) / double(kh) : HUGE_VAL;
        if (kh && c_hidden <= net.max_ratio) {
            p = {c_hidden, kh, kHidden};
        } else {
            p = {net.max_ratio, uint64_t(std::ceil(double(d) / net.max_ratio)), kCapped};
            if (p.k < 1) p.k = 1;
        }
        dense_comm[j] = allreduce_time(net, 4.0 * double(d));
        const double sparse = sparse_time(net, p.k, spar);
        if (dense_comm[j] <= sparse) p = {1.0, d, kDense};  // ties: nothing held back
        fast_comm[j] = std::min(sparse, dense_comm[j]);
        out[j] = p;
    }
    const double end_fast = pipeline_end(layers, t_b, fast_comm);
    *t_dense = pipeline_end(layers, t_b, dense_comm);
    // A compressed layer then goes dense where that does not delay the end,
    // so no gradient is held back for nothing: deadline[j] is the latest its
    // collective may end with every later layer on its shorter collective.
    for (size_t j = layers; j-- > 0;)
        deadline[j] = j + 1 < layers ? deadline[j + 1] - fast_comm[j + 1] : end_fast;
    double ready = 0, link = 0;
    for (size_t j = 0; j < layers; ++j) {
        ready += t_b[j];
        const double start = std::max(link, ready);
        const bool to_dense = out[j].verdict != kDense && start + dense_comm[j] <= deadline[j];
        plan_comm[j] = to_dense ? dense_comm[j] : fast_comm[j];
        link = start + plan_comm[j];
    }
    const double end_plan = pipeline_end(layers, t_b, plan_comm);
    // The deadlines are differences, rounded: if they let a switch through
    // that ends later after all, keep the shorter collectives.
    const bool switch_ok = end_plan <= end_fast;
    for (size_t j = 0; j < layers; ++j)
        if (switch_ok && plan_comm[j] != fast_comm[j]) out[j] = {1.0, n[j], kDense};
    *t_plan = switch_ok ? end_plan : end_fast;
    return GW_OK;
}

double s_max(double t_f, double t_b, double t_c) {
    const double r = t_c / t_b;
    return 1.0 + 1.0 / (t_f / std::min(t_c, t_b) + std::max(r, 1.0 / r));
}

gw_status delta(const kern::Table& t, const float* const* xs, uint32_t workers, uint64_t n,
                uint64_t k, double* out) {
    const Allocator& a = malloc_allocator();
    Scratch work(a), idx_mem(a), sums(a);
    void* w = work.get(kern::kTopkScratchBytes);
    uint32_t* idx = static_cast<uint32_t*>(idx_mem.get(k * sizeof(uint32_t) + 1));
    double* s = static_cast<double*>(sums.get(2 * n * sizeof(double) + 1));
    if (!w || !idx || !s) return GW_ERR_OUT_OF_MEMORY;
    double* r = s + n;  // s - sum_p TopK(x_p)
    std::memset(s, 0, 2 * n * sizeof(double));
    for (uint32_t p = 0; p < workers; ++p) {
        const float* x = xs[p];
        for (uint64_t i = 0; i < n; ++i) {
            s[i] += x[i];
            r[i] += x[i];
        }
        t.topk_select(x, n, k, idx, w, kern::kTopkScratchBytes);
        for (uint64_t j = 0; j < k; ++j) r[idx[j]] -= x[idx[j]];
    }
    double num = 0, ss = 0;
    for (uint64_t i = 0; i < n; ++i) {
        num += r[i] * r[i];
        ss += s[i] * s[i];
    }
    const double den = (1.0 - double(k) / double(n)) * ss;
    *out = num == 0 ? 0.0 : (den == 0 ? HUGE_VAL : num / den);
    return GW_OK;
}

}  // namespace gw::lags
