// Exact top-k and sparse frames, timed against the machine's in-place pass
// r[i] += g[i] over the same number of elements in the same run (Google
// Benchmark). After the runs it prints each top-k time as a ratio to that
// pass, and (--stats) the zstd stage's bits per index against the entropy of
// the gaps. The full suite with every kernel comes with the performance work.
#include <benchmark/benchmark.h>
#include <zstd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gradwire.h"
#include "kernels/kernels.hpp"

namespace {

std::vector<float> normal(size_t n, uint32_t seed) {
    std::vector<float> v(n);
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (auto& x : v) x = d(rng);
    return v;
}

const std::vector<float>& data(size_t n) {
    static std::map<size_t, std::vector<float>> cache;
    auto it = cache.find(n);
    if (it == cache.end()) it = cache.emplace(n, normal(n, 1)).first;
    return it->second;
}

// The yardstick: one in-place pass, 12 bytes of traffic per element.
void BM_InplaceAdd(benchmark::State& state) {
    const size_t n = static_cast<size_t>(state.range(0));
    std::vector<float> r(n, 0.0f);
    const std::vector<float>& g = data(n);
    for (auto _ : state) {
        float* rp = r.data();
        const float* gp = g.data();
        for (size_t i = 0; i < n; ++i) rp[i] += gp[i];
        benchmark::DoNotOptimize(rp);
        benchmark::ClobberMemory();
    }
    state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}

// The selection kernel alone (indices of the k largest |x_i|).
void BM_TopkSelect(benchmark::State& state) {
    const size_t n = static_cast<size_t>(state.range(0));
    const size_t k = static_cast<size_t>(double(n) * double(state.range(1)) / 1e6 + 0.5);
    const std::vector<float>& x = data(n);
    std::vector<uint32_t> idx(k);
    const size_t bytes = gw::kern::topk_scratch_bytes(n, k);
    std::vector<uint8_t> scratch(bytes + 64);
    void* s = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
    for (auto _ : state) {
        gw::kern::active().topk_select(x.data(), n, k, idx.data(), s, bytes);
        benchmark::DoNotOptimize(idx.data());
    }
    state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
}

// The whole encode through the C API: selection, values, gaps, zstd stage.
void BM_TopkEncode(benchmark::State& state) {
    const size_t n = static_cast<size_t>(state.range(0));
    const std::vector<float>& x = data(n);
    gw_codec_spec* spec = nullptr;
    gw_codec_spec_create(&spec, GW_CODEC_TOPK);
    gw_codec_spec_set(spec, GW_PARAM_DENSITY_PPM, state.range(1));
    gw_codec_spec_set(spec, GW_PARAM_ZSTD, state.range(2));
    size_t bound = 0, written = 0;
    gw_encode_bound(spec, n, &bound);
    std::vector<uint8_t> frame(bound);
    for (auto _ : state) {
        if (gw_encode(spec, nullptr, x.data(), GW_DTYPE_F32, n, frame.data(), frame.size(),
                      &written) != GW_OK)
            state.SkipWithError("encode failed");
    }
    state.counters["bytes_per_entry"] =
        double(written) / (double(n) * double(state.range(1)) / 1e6);
    state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(n));
    gw_codec_spec_free(spec);
}

constexpr int64_t k64M = 64 << 20;
BENCHMARK(BM_InplaceAdd)->Arg(1 << 16)->Arg(1 << 20)->Arg(k64M)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopkSelect)
    ->ArgsProduct({{1 << 16, 1 << 20, k64M}, {1000, 10000}})
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_TopkEncode)->ArgsProduct({{k64M}, {1000, 10000}, {0, 1}})->Unit(benchmark::kMillisecond);

// Records real time per run so the ratios can be printed after the table.
class RatioReporter : public benchmark::ConsoleReporter {
  public:
    void ReportRuns(const std::vector<Run>& runs) override {
        for (const Run& r : runs) times_[r.benchmark_name()] = r.GetAdjustedRealTime();
        ConsoleReporter::ReportRuns(runs);
    }
    void Finalize() override {
        ConsoleReporter::Finalize();
        std::printf("\nratio to one in-place pass r[i] += g[i] over the same n (same run):\n");
        for (const auto& [name, t] : times_) {
            if (name.rfind("BM_Topk", 0) != 0) continue;
            const std::string n = name.substr(name.find('/') + 1, name.find('/', name.find('/') + 1) -
                                                                      name.find('/') - 1);
            const auto base = times_.find("BM_InplaceAdd/" + n);
            if (base != times_.end()) std::printf("  %-40s %6.2fx\n", name.c_str(), t / base->second);
        }
    }

  private:
    std::map<std::string, double> times_;
};

// zstd level 1 on the four byte planes of the gaps, against the empirical
// entropy of the gap distribution, for top-k of 64M normal values.
void print_stats() {
    const size_t n = size_t(k64M);
    const std::vector<float>& x = data(n);
    std::printf("density  k        zstd bits/index  gap entropy  ratio   frame bytes/entry (zstd, raw)\n");
    for (double density : {0.001, 0.01}) {
        const size_t k = size_t(double(n) * density + 0.5);
        std::vector<uint32_t> idx(k);
        const size_t bytes = gw::kern::topk_scratch_bytes(n, k);
        std::vector<uint8_t> scratch(bytes + 64);
        void* s = scratch.data() + (64 - reinterpret_cast<uintptr_t>(scratch.data()) % 64) % 64;
        gw::kern::active().topk_select(x.data(), n, k, idx.data(), s, bytes);
        std::vector<uint8_t> planes(4 * k);
        std::map<uint32_t, size_t> hist;
        uint64_t next = 0;
        for (size_t i = 0; i < k; ++i) {
            const uint32_t gap = uint32_t(idx[i] - next);
            for (int b = 0; b < 4; ++b) planes[b * k + i] = uint8_t(gap >> (8 * b));
            ++hist[gap];
            next = uint64_t(idx[i]) + 1;
        }
        double h = 0;
        for (const auto& [gap, c] : hist) {
            const double p = double(c) / double(k);
            h -= p * std::log2(p);
        }
        std::vector<uint8_t> z(ZSTD_compressBound(planes.size()));
        const size_t zs = ZSTD_compress(z.data(), z.size(), planes.data(), planes.size(), 1);
        double frame_bytes[2] = {0, 0};
        for (int use : {0, 1}) {
            gw_codec_spec* spec = nullptr;
            gw_codec_spec_create(&spec, GW_CODEC_TOPK);
            gw_codec_spec_set(spec, GW_PARAM_DENSITY_PPM, int64_t(density * 1e6 + 0.5));
            gw_codec_spec_set(spec, GW_PARAM_ZSTD, use);
            size_t bound = 0, written = 0;
            gw_encode_bound(spec, n, &bound);
            std::vector<uint8_t> f(bound);
            gw_encode(spec, nullptr, x.data(), GW_DTYPE_F32, n, f.data(), f.size(), &written);
            frame_bytes[use] = double(written) / double(k);
            gw_codec_spec_free(spec);
        }
        const double bits = 8.0 * double(zs) / double(k);
        std::printf("%5.3f%%   %-8zu %-16.2f %-12.2f %-7.3f %.2f, %.2f\n", density * 100, k, bits, h,
                    bits / h, frame_bytes[1], frame_bytes[0]);
    }
}

}  // namespace

int main(int argc, char** argv) {
    bool stats = false;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--stats") == 0) stats = true;
    if (stats) {
        print_stats();
        return 0;
    }
    benchmark::Initialize(&argc, argv);
    RatioReporter reporter;
    benchmark::RunSpecifiedBenchmarks(&reporter);
    benchmark::Shutdown();
    return 0;
}
