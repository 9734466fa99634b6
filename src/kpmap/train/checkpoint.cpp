#include "kpmap/train/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "kpmap/core/error.hpp"
#include "kpmap/core/version.hpp"
#include "kpmap/io/h5.hpp"

namespace kpmap {

namespace {

namespace fs = std::filesystem;

const char* const format_name = "kpmap checkpoint";
constexpr long long format_version = 1;

// FNV-1a (64 bit) over everything a checkpoint holds, in a fixed order.
class Checksum {
 public:
  void bytes(const void* data, std::size_t n) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < n; ++i) hash_ = (hash_ ^ p[i]) * 0x100000001b3ULL;
  }
  template <class T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value(s.size());
    bytes(s.data(), s.size());
  }
  void doubles(const std::vector<double>& v) {
    value(v.size());
    bytes(v.data(), v.size() * sizeof(double));
  }
  std::string hex() const {
    char out[17];
    std::snprintf(out, sizeof out, "%016" PRIx64, hash_);
    return out;
  }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

std::string checksum(const TrainState& s, const CheckpointInfo& info) {
  Checksum c;
  c.text(info.identity);
  c.text(info.config);
  c.text(info.mesh);
  c.text(info.params);
  c.text(info.optimizer);
  c.value(info.features);
  c.value(info.bias);
  c.value(info.next_batch);
  c.value(s.step);
  c.value(s.loss_scale);
  c.value(s.clean_steps);
  c.value(static_cast<long long>(s.loss_exponent));
  c.doubles(s.master);
  for (const auto& v : s.optimizer) c.doubles(v);
  for (const auto& h : s.history) {
    c.value(h.step);
    c.value(h.loss);
    c.value(h.scale);
    c.value(static_cast<long long>(h.skipped));
  }
  return c.hex();
}

// The data and its directory entry on disk before the file counts as written.
void sync_path(const std::string& path, bool directory) {
  const int fd = ::open(path.c_str(), directory ? O_RDONLY | O_DIRECTORY : O_RDONLY);
  if (fd < 0) throw RuntimeError("checkpoint: cannot open " + path + " to flush it: " + std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !directory) throw RuntimeError("checkpoint: fsync " + path + ": " + std::strerror(err));
}

void write_file(const std::string& path, const TrainState& s, const CheckpointInfo& info, bool fault) {
  using h5::set_attribute;
  h5::Handle file = h5::create_file(path);
  const hid_t root = file.get();
  set_attribute(root, "format", std::string(format_name));
  set_attribute(root, "format_version", format_version);
  set_attribute(root, "kpmap_version", version());
  set_attribute(root, "step", s.step);
  set_attribute(root, "next_batch", info.next_batch);
  set_attribute(root, "loss_scale", s.loss_scale);
  set_attribute(root, "clean_steps", s.clean_steps);
  set_attribute(root, "loss_exponent", static_cast<long long>(s.loss_exponent));
  set_attribute(root, "params", info.params);
  set_attribute(root, "optimizer", info.optimizer);
  set_attribute(root, "features", info.features);
  set_attribute(root, "bias", static_cast<long long>(info.bias));
  set_attribute(root, "mesh", info.mesh);
  set_attribute(root, "identity", info.identity);
  set_attribute(root, "config", info.config);
  set_attribute(root, "checksum", checksum(s, info));
  const h5::Type type = info.params == "fp32" ? h5::Type::f32 : h5::Type::f64;
  {
    const h5::Handle state = h5::create_group(root, "state");
    h5::write(state.get(), "master", s.master, type);
    const h5::Handle optimizer = h5::create_group(state.get(), "optimizer");
    const auto names = optimizer_state_names(info.optimizer);
    for (std::size_t i = 0; i < s.optimizer.size(); ++i) h5::write(optimizer.get(), names.at(i), s.optimizer[i], type);
  }
  {
    const h5::Handle history = h5::create_group(root, "history");
    std::vector<long long> step, skipped;
    std::vector<double> loss, scale;
    for (const auto& h : s.history) {
      step.push_back(h.step);
      skipped.push_back(h.skipped ? 1 : 0);
      loss.push_back(h.loss);
      scale.push_back(h.scale);
    }
    h5::write(history.get(), "step", step);
    h5::write(history.get(), "loss", loss, h5::Type::f64);
    h5::write(history.get(), "scale", scale, h5::Type::f64);
    h5::write(history.get(), "skipped", skipped);
  }
  if (fault) throw RuntimeError("test fault: an I/O error while writing " + path);
  file.close();
}

long long step_of(const std::string& name) {
  long long step = -1;
  char tail = 0;
  if (std::sscanf(name.c_str(), "ckpt-%lld.h5%c", &step, &tail) != 1 || step < 0) return -1;
  return name == fs::path(checkpoint_path("", step)).filename().string() ? step : -1;
}

}  // namespace

std::string checkpoint_path(const std::string& dir, long long step) {
  char name[32];
  std::snprintf(name, sizeof name, "ckpt-%08lld.h5", step);
  return (fs::path(dir) / name).string();
}

std::vector<std::pair<long long, std::string>> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<long long, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const long long step = step_of(entry.path().filename().string());
    if (step >= 0 && entry.is_regular_file(ec)) out.emplace_back(step, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string write_checkpoint(const std::string& dir, const TrainState& state, const CheckpointInfo& info,
                             long long keep, bool fault) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw RuntimeError("checkpoint: cannot create the directory " + dir + ": " + ec.message());
  const std::string path = checkpoint_path(dir, state.step);
  const std::string temporary = (fs::path(dir) / ("." + fs::path(path).filename().string() + ".tmp")).string();
  try {
    write_file(temporary, state, info, fault);
    sync_path(temporary, false);
  } catch (const h5::IoError& e) {
    fs::remove(temporary, ec);
    throw RuntimeError("checkpoint: writing " + path + ": " + e.what());
  } catch (...) {
    fs::remove(temporary, ec);
    throw;
  }
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    throw RuntimeError("checkpoint: cannot rename " + temporary + " to " + path + ": " + ec.message());
  }
  sync_path(dir, true);
  // The newest `keep` up to this step stay; files of later steps (an older run's) are left alone.
  auto files = list_checkpoints(dir);
  files.erase(std::remove_if(files.begin(), files.end(), [&](const auto& f) { return f.first > state.step; }),
              files.end());
  for (std::size_t i = 0; i + static_cast<std::size_t>(keep) < files.size(); ++i) fs::remove(files[i].second, ec);
  return path;
}

std::string find_checkpoint(const std::string& path) {
  std::error_code ec;
  if (fs::is_regular_file(path, ec)) return path;
  if (!fs::exists(path, ec)) throw InputError("checkpoint.resume: '" + path + "' does not exist (allowed: a checkpoint file, or a directory of them)");
  if (!fs::is_directory(path, ec)) throw InputError("checkpoint.resume: '" + path + "' is neither a file nor a directory");
  const auto files = list_checkpoints(path);
  if (files.empty()) {
    throw InputError("checkpoint.resume: the directory '" + path + "' holds no checkpoint (files named ckpt-NNNNNNNN.h5)");
  }
  return files.back().second;
}

TrainState read_checkpoint(const std::string& path, CheckpointInfo& info) {
  const std::string where = "checkpoint " + path;
  if (!h5::is_hdf5(path)) {
    throw InputError(where + ": not an HDF5 file (truncated or overwritten?); refused, and left as it is");
  }
  TrainState s;
  try {
    const h5::Handle file = h5::open_file(path);
    const hid_t root = file.get();
    if (!h5::has_attribute(root, "format") || h5::string_attribute(root, "format") != format_name) {
      throw InputError(where + ": an HDF5 file, but not a kpmap checkpoint (no attribute format = '" +
                       format_name + "')");
    }
    const long long version_found = h5::integer_attribute(root, "format_version");
    if (version_found != format_version) {
      throw InputError(where + ": format_version " + std::to_string(version_found) + " (this kpmap reads " +
                       std::to_string(format_version) + ")");
    }
    s.step = h5::integer_attribute(root, "step");
    info.next_batch = h5::integer_attribute(root, "next_batch");
    s.loss_scale = h5::double_attribute(root, "loss_scale");
    s.clean_steps = h5::integer_attribute(root, "clean_steps");
    s.loss_exponent = static_cast<int>(h5::integer_attribute(root, "loss_exponent"));
    info.params = h5::string_attribute(root, "params");
    info.optimizer = h5::string_attribute(root, "optimizer");
    info.features = h5::integer_attribute(root, "features");
    info.bias = h5::integer_attribute(root, "bias") != 0;
    info.mesh = h5::string_attribute(root, "mesh");
    info.identity = h5::string_attribute(root, "identity");
    info.config = h5::string_attribute(root, "config");
    const std::string stored = h5::string_attribute(root, "checksum");
    s.master = h5::read_doubles(root, "state/master");
    for (const auto& name : optimizer_state_names(info.optimizer)) {
      s.optimizer.push_back(h5::read_doubles(root, "state/optimizer/" + name));
    }
    const auto step = h5::read_integers(root, "history/step");
    const auto loss = h5::read_doubles(root, "history/loss");
    const auto scale = h5::read_doubles(root, "history/scale");
    const auto skipped = h5::read_integers(root, "history/skipped");
    const auto length = static_cast<std::size_t>(info.features + (info.bias ? 1 : 0));
    bool shapes = s.master.size() == length && step.size() == static_cast<std::size_t>(s.step) &&
                  loss.size() == step.size() && scale.size() == step.size() && skipped.size() == step.size();
    for (const auto& v : s.optimizer) shapes = shapes && v.size() == length;
    if (!shapes) throw InputError(where + ": its datasets' lengths do not match its step and features (corrupted)");
    for (std::size_t i = 0; i < step.size(); ++i) s.history.push_back({step[i], loss[i], scale[i], skipped[i] != 0});
    const std::string computed = checksum(s, info);
    if (computed != stored) {
      throw InputError(where + ": checksum mismatch (stored " + stored + ", computed " + computed +
                       "): the file is corrupted; refused, and left as it is");
    }
  } catch (const h5::IoError& e) {
    throw InputError(where + ": cannot be read (truncated or corrupted?): " + e.what() + "; refused, and left as it is");
  }
  return s;
}

void broadcast(TrainState& state, MPI_Comm comm, int root) {
  long long header[6] = {state.step,
                         state.clean_steps,
                         state.loss_exponent,
                         static_cast<long long>(state.master.size()),
                         static_cast<long long>(state.optimizer.size()),
                         static_cast<long long>(state.history.size())};
  check_mpi(MPI_Bcast(header, 6, MPI_LONG_LONG, root, comm), "MPI_Bcast");
  const auto n = static_cast<std::size_t>(header[3]), k = static_cast<std::size_t>(header[4]),
             h = static_cast<std::size_t>(header[5]);
  // Doubles: the scale, the vectors, then the history's loss and scale; integers: its step and skipped.
  std::vector<double> reals;
  std::vector<long long> integers;
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == root) {
    reals.push_back(state.loss_scale);
    reals.insert(reals.end(), state.master.begin(), state.master.end());
    for (const auto& v : state.optimizer) reals.insert(reals.end(), v.begin(), v.end());
    for (const auto& e : state.history) reals.push_back(e.loss);
    for (const auto& e : state.history) reals.push_back(e.scale);
    for (const auto& e : state.history) integers.push_back(e.step);
    for (const auto& e : state.history) integers.push_back(e.skipped ? 1 : 0);
  }
  reals.resize(1 + n * (k + 1) + 2 * h);
  integers.resize(2 * h);
  check_mpi(MPI_Bcast(reals.data(), static_cast<int>(reals.size()), MPI_DOUBLE, root, comm), "MPI_Bcast");
  check_mpi(MPI_Bcast(integers.data(), static_cast<int>(integers.size()), MPI_LONG_LONG, root, comm), "MPI_Bcast");
  if (rank == root) return;
  state.step = header[0];
  state.clean_steps = header[1];
  state.loss_exponent = static_cast<int>(header[2]);
  state.loss_scale = reals[0];
  auto at = reals.begin() + 1;
  state.master.assign(at, at + static_cast<long>(n));
  state.optimizer.assign(k, {});
  for (std::size_t i = 0; i < k; ++i) state.optimizer[i].assign(at + static_cast<long>((i + 1) * n), at + static_cast<long>((i + 2) * n));
  const std::size_t base = 1 + n * (k + 1);
  state.history.resize(h);
  for (std::size_t i = 0; i < h; ++i) state.history[i] = {integers[i], reals[base + i], reals[base + h + i], integers[h + i] != 0};
}

}  // namespace kpmap
