// Starting and ending MPI the way kpmap needs it: MPI_Init_thread with
// MPI_THREAD_FUNNELED, because Kokkos' OpenMP (or other host-threaded) backend runs threads in
// every rank while only the thread that initialised MPI calls it. The provided level is
// checked, and a library too old or configured without thread support ends the job with a
// message instead of undefined behaviour later.
//
//   int main(int argc, char** argv) {
//     kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread + check; MPI_Finalize at exit
//     Kokkos::ScopeGuard kokkos(argc, argv);
//     ...
//   }
#pragma once

#include <mpi.h>

#include <string>

namespace kpmap {

// The thread level kpmap needs: MPI called from the main thread only, other threads running.
inline constexpr int required_thread_level = MPI_THREAD_FUNNELED;

// "MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED", "MPI_THREAD_MULTIPLE".
std::string thread_level_name(int level);

// Throws RuntimeError unless `provided` is at least required_thread_level; the message names
// both levels.
void check_thread_level(int provided);

// RAII: MPI_Init_thread(required_thread_level) and the check in the constructor (on failure it
// prints the message to stderr and calls MPI_Abort with exit code 1), MPI_Finalize in the
// destructor. Use one per process, before Kokkos is initialised. Code that initialises MPI
// itself should call MPI_Init_thread with required_thread_level and check_thread_level.
class MpiEnvironment {
 public:
  MpiEnvironment(int& argc, char**& argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

  int provided() const { return provided_; }

 private:
  int provided_ = MPI_THREAD_SINGLE;
};

}  // namespace kpmap
