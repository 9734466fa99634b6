// Phase timers: every phase is a Kokkos profiling region (Kokkos Tools see it unchanged) and
// its time is taken after a fence, so asynchronous kernels are charged to the right phase.
#pragma once

#include <mpi.h>

#include <array>
#include <string>

#include "kpmap/core/types.hpp"

namespace kpmap {

// comm: time spent in communication calls and waiting for them; comm_wait: the part of comm
// this rank spent waiting for other ranks to reach the step's collectives (per step, its comm
// time less the least comm time of any rank in that step); comm_in_flight (comm.overlap only):
// time gradient buckets were in flight while this rank computed (also counted in compute).
enum class Phase { total, compute, comm, comm_wait, comm_in_flight, optimizer };
inline constexpr std::array<Phase, 6> all_phases{Phase::total,     Phase::compute,        Phase::comm,
                                                 Phase::comm_wait, Phase::comm_in_flight, Phase::optimizer};
const char* to_string(Phase phase);

struct Stat {
  double min = 0, avg = 0, max = 0;
};

// min / avg / max of `local` over the ranks of `comm` (collective).
Stat stat_over_ranks(MPI_Comm comm, double local);

class Timers {
 public:
  double seconds(Phase phase) const { return seconds_[static_cast<int>(phase)]; }
  void add(Phase phase, double s) { seconds_[static_cast<int>(phase)] += s; }

 private:
  std::array<double, all_phases.size()> seconds_{};
};

// Times one phase from construction to destruction: a profiling region named "kpmap::<label>",
// closed after a fence of `space`.
class ScopedPhase {
 public:
  ScopedPhase(Timers& timers, Phase phase, const std::string& label,
              const execution_space& space = execution_space());
  ~ScopedPhase();
  ScopedPhase(const ScopedPhase&) = delete;
  ScopedPhase& operator=(const ScopedPhase&) = delete;

 private:
  Timers& timers_;
  Phase phase_;
  execution_space space_;
  double start_;
};

}  // namespace kpmap
