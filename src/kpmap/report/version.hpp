// What `kpmap --version` prints: kpmap, Kokkos with its backends, Kokkos Kernels, MPI.
#pragma once

#include <string>

#include "kpmap/core/version.hpp"

namespace kpmap {

std::string kokkos_kernels_version();  // e.g. "3.4.01"
std::string version_report();          // core/version.hpp's versions and Kokkos Kernels', one a line

}  // namespace kpmap
