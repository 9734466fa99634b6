#include "kpmap/core/host_cpu.hpp"

namespace kpmap::detail {

#if defined(__GNUC__) && defined(__x86_64__)
bool cpu_has_avx2() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}

bool cpu_has_fma() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("fma");
}
#else
bool cpu_has_avx2() noexcept { return false; }
bool cpu_has_fma() noexcept { return false; }
#endif

}  // namespace kpmap::detail
