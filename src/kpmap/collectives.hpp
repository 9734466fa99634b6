// kpmap::collectives, everything in one include: the device mesh and its resolved axes
// (kpmap::Mesh, kpmap::Axis), MPI set up at the thread level kpmap needs (kpmap::MpiEnvironment),
// every collective (docs/collectives.md), kpmap's errors, View aliases and 16-bit types, and the
// versions it runs on. Needs only Kokkos and MPI; link kpmap::collectives
// (find_package(kpmap COMPONENTS collectives)).
//
//   #include <kpmap/collectives.hpp>
//   kpmap::MpiEnvironment mpi(argc, argv);
//   Kokkos::ScopeGuard kokkos(argc, argv);
//   kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", -1}});
//   const kpmap::Axis data = mesh.axis("data");  // resolved once
//   kpmap::psum(data, x, x);                      // or kpmap::psum(mesh, "data", x, x)
#pragma once

#include "kpmap/collectives/collectives.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/core/version.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/mesh/mpi_env.hpp"
