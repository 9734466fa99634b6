#include "kpmap/core/error.hpp"

#include <climits>
#include <iostream>

namespace kpmap {

void check_mpi(int rc, const char* call) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw RuntimeError(std::string(call) + " failed: " + std::string(text, len));
}

int agree_on_exit(MPI_Comm comm, int exit_code, const std::string& message) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  int worst = exit_code;
  int first_failing = exit_code != 0 ? rank : INT_MAX;
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &worst, 1, MPI_INT, MPI_MAX, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(MPI_IN_PLACE, &first_failing, 1, MPI_INT, MPI_MIN, comm),
            "MPI_Allreduce");
  if (worst != 0 && rank == first_failing) {
    std::cerr << "kpmap: error: " << message << std::endl;
  }
  return worst;
}

}  // namespace kpmap
