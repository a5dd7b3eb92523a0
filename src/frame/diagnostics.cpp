#include "frame/diagnostics.hpp"

#include "frame/frame.hpp"

namespace gw::frame {

gw_status contraction(Context& cx, const CodecParams& p, const EncodeCtx& ctx, const float* x,
                      uint64_t n, double* ratio) {
    size_t bound = 0;
    if (!frame_bound(p, n, &bound)) return GW_ERR_INVALID_ARGUMENT;
    Scratch frame_mem(cx.alloc()), res_mem(cx.alloc());
    uint8_t* out = static_cast<uint8_t*>(frame_mem.get(bound));
    float* res = static_cast<float*>(res_mem.get(static_cast<size_t>(n) * sizeof(float) + 4));
    if (!out || !res) return GW_ERR_OUT_OF_MEMORY;
    size_t written = 0;
    const gw_status st = encode(cx, p, ctx, 0, x, n, out, bound, &written, res);
    if (st != GW_OK) return st;
    const double xx = cx.k().sum_sq(x, n);
    *ratio = xx == 0.0 ? 0.0 : cx.k().sum_sq(res, n) / xx;
    return GW_OK;
}

}  // namespace gw::frame
