// The fused kernels' software prefetch (docs/performance.md, "How the fused kernel reads X").
#pragma once

#include <Kokkos_Core.hpp>

namespace kpmap::model_detail {

// A hint that the cache line holding p will be read soon; never faults, compiled away where the
// compiler has no such builtin and in device passes (where the caches differ).
// Locality 1 (`prefetcht2` on x86) brings the line into L2, not L1: a request into L1 holds one
// of the core's few L1 miss buffers until memory answers, which caps the lines in flight per
// core, where the L2 tracks more; the loads then find the line in L2 (measured:
// docs/performance.md).
KOKKOS_INLINE_FUNCTION void prefetch_hint(const void* p) {
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  __builtin_prefetch(p, 0, 1);
#else
  (void)p;
#endif
}

}  // namespace kpmap::model_detail
