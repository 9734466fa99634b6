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

bool cpu_has_avx512() noexcept {
  __builtin_cpu_init();  // libgcc's check includes the OS's support for the 512-bit state (XCR0)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}
#else
bool cpu_has_avx2() noexcept { return false; }
bool cpu_has_fma() noexcept { return false; }
bool cpu_has_avx512() noexcept { return false; }
#endif

}  // namespace kpmap::detail
