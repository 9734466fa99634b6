// Runs a deck: load and validate it on every rank, agree on errors, build the mesh, run its mode.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace kpmap {

struct RunOptions {
  std::string deck;                    // path of the YAML deck
  std::vector<std::string> overrides;  // "key.path=value", applied in order
};

// Collective over `world`. Returns the exit code, the same on every rank: 0 success,
// 1 runtime failure, 2 bad input. A failure after the mesh exists calls MPI_Abort.
int run(const RunOptions& options, MPI_Comm world);

}  // namespace kpmap
