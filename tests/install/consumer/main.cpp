// A project outside kpmap's tree: finds the installed package and builds a mesh with it.
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <iostream>

#include "kpmap/core/version.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/mesh/mpi_env.hpp"

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  int ok = 0;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", -1}});
    int ranks = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    ok = mesh.axis_size("data") == ranks;
    if (mesh.rank() == 0) std::cout << "consumer: kpmap " << kpmap::version() << ", mesh " << mesh.describe() << '\n';
  }
  return ok ? 0 : 1;
}
