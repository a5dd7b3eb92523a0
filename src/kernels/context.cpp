#include "kernels/context.hpp"

#if defined(GW_HAVE_ZSTD)
#include <zstd.h>
#endif

namespace gw {

Context::Context(const Backend& b) : k_(b.kernels ? b.kernels : &kern::active()), alloc_(b.alloc) {}

void Context::bind(const Backend& b) {
    k_ = b.kernels ? b.kernels : &kern::active();
    alloc_ = b.alloc;
}

Context::~Context() {
#if defined(GW_HAVE_ZSTD)
    ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(zstd_c));
    ZSTD_freeDCtx(static_cast<ZSTD_DCtx*>(zstd_d));
#endif
}

Context& thread_context() {
    static thread_local Context cx;
    cx.set_kernels(kern::active());
    return cx;
}

}  // namespace gw
