// What a training run will allocate on one rank, computed from its TrainSpec and the mesh
// before anything is allocated (docs/reliability.md): the app layer checks it against the node's
// memory and records it in the report.
#pragma once

#include <algorithm>
#include <cstddef>

#include "kpmap/mesh/mesh.hpp"
#include "kpmap/train/trainer.hpp"

namespace kpmap {

// Bytes this rank's Views will hold, by category; each term mirrors one allocation of the trainer.
struct MemoryEstimate {
  std::size_t data = 0;        // X and y of this rank's shard, in precision.compute
  std::size_t file_rows = 0;   // a data file's rows as read (X and y of the shard in fp64), held
                               // only while the shard is built from them, before anything else
  std::size_t parameters = 0;  // master weights (precision.params), the kernels' copy, the gathered shards
  std::size_t gradients = 0;   // the step's statistics, the mean gradient, wire and receive buffers,
                               // partial products, residuals, the model's and the exact sums' workspaces
  std::size_t optimizer = 0;   // momentum / Adam state for the parameters this rank updates
  // The peak: the shard, with the file's rows while it is built, then with everything else.
  std::size_t total() const { return data + std::max(file_rows, parameters + gradients + optimizer); }
};

// Not collective: every rank computes its own from the mesh's coordinates. Throws InputError for
// a batch plan the deck cannot have (as make_batch_plan).
MemoryEstimate estimate_memory(const TrainSpec& spec, const Mesh& mesh);

}  // namespace kpmap
