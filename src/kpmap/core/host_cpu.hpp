// What the host CPU offers beyond the build's target, for code that carries versions for both.
#pragma once

// The AVX-512 subsets cpu_has_avx512 checks, for __attribute__((target(...))) of the loops run
// where it holds.
#define KPMAP_AVX512_SUBSETS "avx512f,avx512bw,avx512vl,avx512dq"

namespace kpmap::detail {

// Whether this x86-64 CPU has AVX2 (false on other architectures).
bool cpu_has_avx2() noexcept;

// Whether this x86-64 CPU has FMA (fused multiply-add, FMA3; false on other architectures).
bool cpu_has_fma() noexcept;

// Whether this x86-64 CPU has the AVX-512 subsets F, BW, VL and DQ, with the operating system
// saving their registers (false on other architectures).
bool cpu_has_avx512() noexcept;

}  // namespace kpmap::detail
