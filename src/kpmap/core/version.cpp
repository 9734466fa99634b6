#include "kpmap/core/version.hpp"

#include <mpi.h>

#include <sstream>

#include "kpmap/core/types.hpp"

namespace kpmap {

std::string version() { return KPMAP_VERSION_STRING; }

std::string kokkos_version() {
  std::ostringstream out;
  out << KOKKOS_VERSION / 10000 << '.' << KOKKOS_VERSION / 100 % 100 << '.' << KOKKOS_VERSION % 100;
  return out.str();
}

std::vector<std::string> kokkos_backends() {
  std::vector<std::string> names;
#if defined(KOKKOS_ENABLE_CUDA)
  names.emplace_back("Cuda");
#endif
#if defined(KOKKOS_ENABLE_HIP)
  names.emplace_back("HIP");
#endif
#if defined(KOKKOS_ENABLE_SYCL)
  names.emplace_back("SYCL");
#endif
#if defined(KOKKOS_ENABLE_OPENMPTARGET)
  names.emplace_back("OpenMPTarget");
#endif
#if defined(KOKKOS_ENABLE_OPENMP)
  names.emplace_back("OpenMP");
#endif
#if defined(KOKKOS_ENABLE_THREADS)
  names.emplace_back("Threads");
#endif
#if defined(KOKKOS_ENABLE_HPX)
  names.emplace_back("HPX");
#endif
#if defined(KOKKOS_ENABLE_SERIAL)
  names.emplace_back("Serial");
#endif
  return names;
}

std::string execution_space_name() { return execution_space::name(); }

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string s(text, len);
  auto end = s.find('\n');
  return end == std::string::npos ? s : s.substr(0, end);
}

}  // namespace kpmap
