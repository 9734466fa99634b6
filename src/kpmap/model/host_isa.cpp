#include "kpmap/model/host_isa.hpp"

#include <atomic>

#include "kpmap/core/host_cpu.hpp"

namespace kpmap::model_detail {

namespace {

HostIsa detected() {
#if defined(KPMAP_AVX2_DISPATCH)
  if (!detail::cpu_has_avx2() || !detail::cpu_has_fma()) return HostIsa::baseline;
  return detail::cpu_has_avx512() ? HostIsa::avx512 : HostIsa::avx2;
#else
  return HostIsa::build_target;
#endif
}

std::atomic<HostIsa>& chosen() {
  static std::atomic<HostIsa> isa{detected()};
  return isa;
}

}  // namespace

HostIsa host_isa() { return chosen().load(std::memory_order_relaxed); }

const char* host_isa_name(HostIsa isa) {
  switch (isa) {
    case HostIsa::baseline: return "baseline";
    case HostIsa::avx2: return "avx2";
    case HostIsa::avx512: return "avx512";
    case HostIsa::build_target: break;
  }
  return "build target";
}

bool set_host_isa(HostIsa isa) {
  const HostIsa cpu = detected();
  // the versions are ordered: a CPU that runs one runs those before it
  const bool possible = cpu == HostIsa::build_target ? isa == HostIsa::build_target
                                                     : isa != HostIsa::build_target && isa <= cpu;
  if (possible) chosen().store(isa, std::memory_order_relaxed);
  return possible;
}

}  // namespace kpmap::model_detail
