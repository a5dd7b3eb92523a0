#include "frame/diagnostics.hpp"

#include "frame/frame.hpp"
#include "kernels/kernels.hpp"
#include "util/scratch.hpp"

namespace gw::frame {

gw_status contraction(const CodecParams& p, const EncodeCtx& ctx, const float* x, uint64_t n,
                      Scratch& stage, double* ratio) {
    size_t bound = 0;
    if (!frame_bound(p, n, &bound)) return GW_ERR_INVALID_ARGUMENT;
    Scratch frame_mem, res_mem;
    uint8_t* out = static_cast<uint8_t*>(frame_mem.get(bound));
    float* res = static_cast<float*>(res_mem.get(static_cast<size_t>(n) * sizeof(float) + 4));
    if (!out || !res) return GW_ERR_OUT_OF_MEMORY;
    size_t written = 0;
    const gw_status st = encode(p, ctx, 0, x, n, out, bound, &written, res, stage);
    if (st != GW_OK) return st;
    const kern::Table& t = kern::active();
    const double xx = t.sum_sq(x, n);
    *ratio = xx == 0.0 ? 0.0 : t.sum_sq(res, n) / xx;
    return GW_OK;
}

}  // namespace gw::frame
