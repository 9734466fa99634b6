// Runs a deck: load and validate it on every rank, agree on errors, build the mesh, run its mode.
#pragma once

#include <mpi.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "kpmap/config/config.hpp"

namespace kpmap {

struct RunOptions {
  std::string deck;                    // path of the YAML deck
  std::vector<std::string> overrides;  // "key.path=value", applied in order
};

// Collective over `world`. Returns the exit code, the same on every rank: 0 success,
// 1 runtime failure, 2 bad input. A failure after the mesh exists calls MPI_Abort.
int run(const RunOptions& options, MPI_Comm world);

// Collective over `world`: every rank loads the deck with its overrides and runs `check` on the
// config (it throws kpmap::Error for bad input), then the ranks agree. Returns 0 with `config`
// set on every rank, or the agreed exit code (2 bad input, 1 runtime failure) after the lowest
// failing rank printed its message once.
int load_deck(const RunOptions& options, MPI_Comm world, const std::function<void(Config&)>& check,
              std::optional<Config>& config);

}  // namespace kpmap
