#include "kpmap/mesh/mpi_env.hpp"

#include <cstdio>

#include "kpmap/core/error.hpp"

namespace kpmap {

std::string thread_level_name(int level) {
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "thread level " + std::to_string(level);
}

void check_thread_level(int provided) {
  if (provided >= required_thread_level) return;
  throw RuntimeError("MPI provides " + thread_level_name(provided) + ", kpmap needs " +
                     thread_level_name(required_thread_level) +
                     " (host threads run while the main thread calls MPI): use an MPI library "
                     "built with thread support");
}

MpiEnvironment::MpiEnvironment(int& argc, char**& argv) {
  check_mpi(MPI_Init_thread(&argc, &argv, required_thread_level, &provided_), "MPI_Init_thread");
  try {
    check_thread_level(provided_);
  } catch (const RuntimeError& e) {
    std::fprintf(stderr, "kpmap: %s\n", e.what());
    MPI_Abort(MPI_COMM_WORLD, exit_runtime);
  }
}

MpiEnvironment::~MpiEnvironment() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

}  // namespace kpmap
