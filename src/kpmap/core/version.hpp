// Versions of kpmap and of what its collectives run on: Kokkos with its backends, MPI (the
// mini-app adds Kokkos Kernels: report/version.hpp).
#pragma once

#include <string>
#include <vector>

namespace kpmap {

std::string version();                        // kpmap's own, e.g. "0.1.0"
std::string kokkos_version();                 // e.g. "3.4.1"
std::vector<std::string> kokkos_backends();   // enabled execution spaces, e.g. {"OpenMP", "Serial"}
std::string execution_space_name();           // the space kpmap runs its kernels on
std::string mpi_library_version();            // MPI_Get_library_version, first line

}  // namespace kpmap
