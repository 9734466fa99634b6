#include "kpmap/report/version.hpp"

#include <sstream>

#include "kpmap/model/host_isa.hpp"

namespace kpmap {

std::string kokkos_kernels_version() { return KPMAP_KOKKOSKERNELS_VERSION; }

std::string host_isa_name() { return model_detail::host_isa_name(model_detail::host_isa()); }

std::string version_report() {
  std::ostringstream out;
  out << "kpmap " << version() << '\n';
  out << "Kokkos " << kokkos_version() << " (backends:";
  for (const auto& b : kokkos_backends()) out << ' ' << b;
  out << "; kpmap runs on " << execution_space_name() << ")\n";
  out << "Kokkos Kernels " << kokkos_kernels_version() << '\n';
  out << "MPI: " << mpi_library_version() << '\n';
  out << "Host kernels: " << host_isa_name() << '\n';
  return out.str();
}

}  // namespace kpmap
