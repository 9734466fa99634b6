#include "kpmap/train/timers.hpp"

#include "kpmap/core/error.hpp"

namespace kpmap {

const char* to_string(Phase phase) {
  switch (phase) {
    case Phase::total: return "total";
    case Phase::compute: return "compute";
    case Phase::comm: return "comm";
    case Phase::comm_wait: return "comm_wait";
    case Phase::comm_in_flight: return "comm_in_flight";
    case Phase::optimizer: return "optimizer";
  }
  return "?";
}

Stat stat_over_ranks(MPI_Comm comm, double local) {
  int ranks = 1;
  MPI_Comm_size(comm, &ranks);
  Stat s;
  check_mpi(MPI_Allreduce(&local, &s.min, 1, MPI_DOUBLE, MPI_MIN, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&local, &s.max, 1, MPI_DOUBLE, MPI_MAX, comm), "MPI_Allreduce");
  check_mpi(MPI_Allreduce(&local, &s.avg, 1, MPI_DOUBLE, MPI_SUM, comm), "MPI_Allreduce");
  s.avg /= ranks;
  return s;
}

ScopedPhase::ScopedPhase(Timers& timers, Phase phase, const std::string& label,
                         const execution_space& space)
    : timers_(timers), phase_(phase), space_(space), start_(MPI_Wtime()) {
  Kokkos::Profiling::pushRegion("kpmap::" + label);
}

ScopedPhase::~ScopedPhase() {
  space_.fence();
  timers_.add(phase_, MPI_Wtime() - start_);
  Kokkos::Profiling::popRegion();
}

}  // namespace kpmap
