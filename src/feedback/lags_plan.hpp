// LAGS-SGD's system model (docs/algorithms.md s.7): the adaptive per-layer
// compression ratio of eq. 19 from an alpha-beta model of the collectives,
// the pipelining bound S_max, and the Assumption 1 diagnostic delta.
//
// The pipeline model: layers become ready in backward order (layer j after
// the backward of layers 0..j, t_b[0] + ... + t_b[j]); a sparse layer is then
// sparsified (t_spar[j]) and all-gathered, a dense layer all-reduced; the
// collectives run one after another on one link. The ring models:
//   allgather of m bytes per worker:  (P - 1) (alpha_ag + m beta_ag)
//   allreduce of N bytes:             2 (P - 1) alpha_ar + 2 (P - 1) / P N beta_ar
// Eq. 19 (the cap reading): c_j = min{c_u, min{c : t_comm(c) + t_spar <=
// t_b[j + 1]}}: the least compression whose all-gather hides behind the
// backward of the next layer, c_u when none does (the last layer has nothing
// left to hide behind). Each layer then takes the shorter of that all-gather
// and its dense all-reduce, and goes dense where that does not delay the end
// of the last collective. So under the model a plan never takes longer than
// eq. 19 on every layer nor than not compressing.
#pragma once

#include <cstddef>
#include <cstdint>

#include "gradwire_types.h"
#include "kernels/kernels.hpp"

namespace gw::lags {

enum Verdict : int { kHidden = 1, kCapped = 2, kDense = 3 };

struct Network {
    uint32_t workers = 1;
    double ag_alpha = 0, ag_beta = 0, ar_alpha = 0, ar_beta = 0;
    uint32_t value_bytes = 4;  // + 4 index bytes per sparse entry
    double max_ratio = 1000;   // c_u
};

double allgather_time(const Network& net, double bytes_per_worker);
double allreduce_time(const Network& net, double bytes);

struct LayerPlan {
    double ratio;
    uint64_t k;
    Verdict verdict;
};

// Plans `layers` layers (backward order). t_spar may be null (zero). Returns
// the modelled end of the last collective for the plan and for all-dense.
gw_status plan(const Network& net, size_t layers, const uint64_t* n, const double* t_b,
               const double* t_spar, LayerPlan* out, double* t_plan, double* t_dense);

// S_max = 1 + 1 / (t_f / min(t_c, t_b) + max(r, 1/r)), r = t_c / t_b.
double s_max(double t_f, double t_b, double t_c);

// delta = ||s - sum_p TopK(x_p)||^2 / ((1 - k/n) ||s||^2), s = sum_p x_p.
// Inputs finite; GW_ERR_OUT_OF_MEMORY if working memory cannot be had.
gw_status delta(const kern::Table& t, const float* const* xs, uint32_t workers, uint64_t n,
                uint64_t k, double* out);

}  // namespace gw::lags
