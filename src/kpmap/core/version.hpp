// What `kpmap --version` prints: kpmap, Kokkos with its backends, Kokkos Kernels, MPI.
#pragma once

#include <string>
#include <vector>

namespace kpmap {

std::string version();                        // kpmap's own, e.g. "0.1.0"
std::string kokkos_version();                 // e.g. "3.4.1"
std::vector<std::string> kokkos_backends();   // enabled execution spaces, e.g. {"OpenMP", "Serial"}
std::string execution_space_name();           // the space kpmap runs its kernels on
std::string kokkos_kernels_version();         // e.g. "3.4.01"
std::string mpi_library_version();            // MPI_Get_library_version, first line
std::string version_report();                 // all of the above, one item a line

}  // namespace kpmap
