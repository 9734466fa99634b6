#include "kpmap/app/preflight.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <type_traits>

#include "kpmap/app/train_mode.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/train/checkpoint.hpp"

namespace kpmap {

namespace {

// The free memory of this rank's GPU and the ranks on its node that share that GPU (collective
// over `shared`, the node's ranks); false where memory_space is not CUDA or HIP device memory.
bool device_memory(MPI_Comm shared, NodeMemory& node) {
  int device = -1;
  std::size_t free = 0, total = 0;
#if defined(KOKKOS_ENABLE_CUDA)
  if (std::is_same_v<memory_space, Kokkos::CudaSpace>) {
    cudaGetDevice(&device);
    if (cudaMemGetInfo(&free, &total) != cudaSuccess) device = -1;
  }
#elif defined(KOKKOS_ENABLE_HIP)
  if (std::is_same_v<memory_space, Kokkos::HIPSpace>) {
    hipGetDevice(&device);
    if (hipMemGetInfo(&free, &total) != hipSuccess) device = -1;
  }
#endif
  (void)total;
  int any = device;
  check_mpi(MPI_Allreduce(&device, &any, 1, MPI_INT, MPI_MAX, shared), "MPI_Allreduce");
  if (any < 0) return false;
  MPI_Comm same = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split(shared, device < 0 ? MPI_UNDEFINED : device, 0, &same), "MPI_Comm_split");
  if (same != MPI_COMM_NULL) {
    MPI_Comm_size(same, &node.ranks_on_node);
    MPI_Comm_free(&same);
  }
  node.known = device >= 0;
  node.available = free;
  node.source = "free memory of GPU " + std::to_string(device);
  return true;
}


// Throws InputError (`what`) unless a file can be created in the existing directory `dir`.
void probe_directory(const std::string& dir, const std::string& what) {
  const std::filesystem::path probe = std::filesystem::path(dir) / (".kpmap-probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) throw InputError(what + ": cannot create a file in '" + dir + "' (" + std::strerror(errno) + ")");
  ::close(fd);
  ::unlink(probe.c_str());
}

}  // namespace

NodeMemory node_memory(MPI_Comm comm) {
  NodeMemory node;
  MPI_Comm shared = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &shared),
            "MPI_Comm_split_type");
  MPI_Comm_size(shared, &node.ranks_on_node);
  const bool on_device = device_memory(shared, node);
  MPI_Comm_free(&shared);
  if (on_device || !Kokkos::SpaceAccessibility<Kokkos::HostSpace, memory_space>::accessible) return node;
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      node.known = true;
      node.available = kib * 1024;
      break;
    }
  }
  return node;
}

std::string human_bytes(double bytes) {
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char text[32];
  if (u == 0) {
    std::snprintf(text, sizeof text, "%.0f B", bytes);
  } else {
    std::snprintf(text, sizeof text,
                  bytes < 10    ? "%.2f %s"
                  : bytes < 100 ? "%.1f %s"
                                : "%.0f %s",
                  bytes, units[u]);
  }
  return text;
}

void check_memory(const MemoryEstimate& need, const NodeMemory& node, const Config& config, int rank) {
  if (!node.known || need.total() <= node.per_rank()) return;
  std::ostringstream m;
  m << "memory: rank " << rank << " needs " << human_bytes(static_cast<double>(need.total())) << " (data "
    << human_bytes(static_cast<double>(need.data)) << ": X and y of its shard in "
    << to_string(config.precision.compute);
  if (need.file_rows > 0) {
    m << ", with the rows read from the file in fp64 (" << human_bytes(static_cast<double>(need.file_rows))
      << ") while it is built from them";
  }
  m << "; parameters " << human_bytes(static_cast<double>(need.parameters)) << "; gradients and buffers "
    << human_bytes(static_cast<double>(need.gradients)) << "; optimizer state "
    << human_bytes(static_cast<double>(need.optimizer)) << "), but its node has "
    << human_bytes(static_cast<double>(node.per_rank())) << " available per rank (" << node.source << " "
    << human_bytes(static_cast<double>(node.available)) << " shared by " << node.ranks_on_node
    << (node.ranks_on_node == 1 ? " rank" : " ranks")
    << "); lower problem.samples or problem.features, spread the shard over more ranks (mesh.axes: data "
       "splits the rows, model the features; or more nodes), or store the data in fewer bytes "
       "(precision.compute bf16 or fp16)";
  throw InputError(m.str());
}

void check_checkpoint_path(const CheckpointConfig& checkpoint) {
  if (!checkpoint.resume.empty()) find_checkpoint(checkpoint.resume);  // before the path is created
  if (checkpoint.path.empty()) return;
  const std::string what = "checkpoint.path: '" + checkpoint.path + "'";
  std::error_code ec;
  std::filesystem::create_directories(checkpoint.path, ec);
  if (!std::filesystem::is_directory(checkpoint.path, ec)) {
    throw InputError(what + ": not a directory, and cannot be created (allowed: a writable directory)");
  }
  probe_directory(checkpoint.path, what);
  const auto files = list_checkpoints(checkpoint.path);
  if (checkpoint.resume.empty() && !files.empty()) {
    throw InputError(what + " already holds checkpoints (the newest: " + files.back().second +
                     "); a new run does not overwrite them (allowed: resume from them with --resume " + checkpoint.path +
                     ", or another checkpoint.path)");
  }
}

void check_report_path(const std::string& path) {
  namespace fs = std::filesystem;
  const std::string what = "output.report (or --output): '" + path + "'";
  const fs::path file(path);
  const fs::path dir = file.has_parent_path() ? file.parent_path() : fs::path(".");
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    throw InputError(
        what + ": the directory '" + dir.string() +
        "' does not exist (allowed: a file in an existing, writable directory, or \"\" for no report)");
  }
  if (fs::is_directory(file, ec)) throw InputError(what + ": is a directory (allowed: a file path)");
  probe_directory(dir.string(), what);
  if (fs::exists(file, ec) && ::access(path.c_str(), W_OK) != 0) {
    throw InputError(what + ": exists and cannot be written (" + std::strerror(errno) + ")");
  }
}

int check_before_run(const Config& config, const Mesh& mesh, std::string& message) {
  const bool writes_report = config.mode == Mode::train || config.mode == Mode::bench;
  NodeMemory node;
  if (config.mode == Mode::train) node = node_memory(mesh.comm());  // collective: before any throw
  try {
    if (config.mode == Mode::train) {
      check_memory(estimate_memory(train_spec(config), mesh), node, config, mesh.rank());
    }
    if (writes_report && mesh.rank() == 0 && !config.output.report.empty())
      check_report_path(config.output.report);
    if (config.mode == Mode::train && mesh.rank() == 0) check_checkpoint_path(config.checkpoint);
  } catch (const Error& e) {
    message = e.what();
    return e.exit_code();
  } catch (const std::exception& e) {
    message = e.what();
    return exit_runtime;
  }
  return exit_success;
}

}  // namespace kpmap
