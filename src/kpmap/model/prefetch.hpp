// The fused kernels' software prefetch (docs/performance.md, "How the fused kernel reads X").
#pragma once

#include <Kokkos_Core.hpp>

namespace kpmap::model_detail {

// A hint that the cache line holding p will be read soon; never faults, compiled away where the
// compiler has no such builtin and in device passes (where the caches differ).
KOKKOS_INLINE_FUNCTION void prefetch_hint(const void* p) {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  __builtin_prefetch(p);
#else
  (void)p;
#endif
}

}  // namespace kpmap::model_detail
