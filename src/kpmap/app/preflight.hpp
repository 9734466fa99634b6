// Checks made after the mesh exists and before a mode allocates or computes anything
// (docs/reliability.md): the memory a training run needs against what the node has, and that
// the report can be written.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

#include "kpmap/config/config.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/train/memory.hpp"

namespace kpmap {

// The memory this rank may use where its data lives: for a host-accessible memory space,
// MemAvailable of /proc/meminfo divided by the ranks of `comm` that share the node
// (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); for CUDA or HIP device memory, the free memory of
// the rank's device (cudaMemGetInfo / hipMemGetInfo) divided by the ranks on the node that share
// that device.
struct NodeMemory {
  bool known = false;         // false: no /proc/meminfo
  std::size_t available = 0;  // bytes
  int ranks_on_node = 1;      // the ranks that share `available`
  std::string source = "MemAvailable";  // or "free memory of GPU 0"
  std::size_t per_rank() const { return available / static_cast<std::size_t>(ranks_on_node); }
};

// Collective over comm.
NodeMemory node_memory(MPI_Comm comm);

// "1.50 GiB", "512 B": binary units with three significant digits.
std::string human_bytes(double bytes);

// Throws InputError (exit 2) when `need` exceeds node.per_rank(): how much is needed, by
// category, and available, and which keys to change. Not collective.
void check_memory(const MemoryEstimate& need, const NodeMemory& node, const Config& config, int rank);

// Throws InputError unless `path` can be written: its directory exists and a file can be created
// in it (a probe file, removed at once), and an existing `path` is a writable file. Not collective.
void check_report_path(const std::string& path);

// Throws InputError unless checkpoint.resume (when set) names a checkpoint or a directory of them,
// and checkpoint.path (when set) is a writable directory (created if missing) that holds no
// checkpoint unless the run resumes. Not collective.
void check_checkpoint_path(const CheckpointConfig& checkpoint);

// Every check above that applies to the deck's mode; collective over the mesh (node_memory).
// Returns the exit code (0: fine) and the message for agree_on_exit.
int check_before_run(const Config& config, const Mesh& mesh, std::string& message);

}  // namespace kpmap
