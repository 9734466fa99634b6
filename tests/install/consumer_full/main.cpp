// A project outside kpmap's tree that links kpmap::kpmap: builds a mesh and prints the version
// report of the mini-app's layers (Kokkos Kernels' version among them).
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <iostream>

#include "kpmap/mesh/mesh.hpp"
#include "kpmap/mesh/mpi_env.hpp"
#include "kpmap/report/version.hpp"

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  int ok = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", -1}});
    int ranks = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const std::string report = kpmap::version_report();
    ok = mesh.axis_size("data") == ranks && report.find("Kokkos Kernels ") != std::string::npos;
    if (mesh.rank() == 0) std::cout << "consumer_full: mesh " << mesh.describe() << '\n' << report;
  }
  return ok ? 0 : 1;
}
