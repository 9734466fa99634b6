// The rank and size of MPI_COMM_WORLD, for tests whose expected values depend on them.
#pragma once

#include <mpi.h>

namespace kpmap::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int world_size() {
  int n = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

}  // namespace kpmap::test
