// What `kpmap --version` prints: kpmap, Kokkos with its backends, Kokkos Kernels, MPI, and the
// instruction set of the fused kernel's host loops.
#pragma once

#include <string>

#include "kpmap/core/version.hpp"

namespace kpmap {

std::string kokkos_kernels_version();  // e.g. "3.4.01"
std::string host_isa_name();           // "avx2", "avx512", "baseline" or "build target" (host_isa.hpp)
std::string version_report();          // core/version.hpp's versions and Kokkos Kernels', one a line

}  // namespace kpmap
