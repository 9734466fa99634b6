// Checkpoint files (docs/reliability.md): one HDF5 file per saved step, DIR/ckpt-00000010.h5,
// holding a TrainState over all features (independent of the mesh that wrote it), what the run
// was, and a checksum over all of it. A file is written whole under a temporary name, flushed to
// disk and renamed, so a checkpoint path never names a partial file.
//
// Layout (h5dump shows it): attributes on / (format, format_version, kpmap_version, step,
// next_batch, loss_scale, clean_steps, loss_exponent, params, optimizer, features, bias, mesh,
// identity, config, checksum); datasets /state/master and /state/optimizer/<name> (the master
// type: float or double) and /history/{step, loss, scale, skipped}.
#pragma once

#include <mpi.h>

#include <string>
#include <utility>
#include <vector>

#include "kpmap/train/trainer.hpp"

namespace kpmap {

// What a checkpoint says about the run that wrote it.
struct CheckpointInfo {
  std::string identity;   // JSON: the deck's keys that a resumed run must share
  std::string config;     // JSON: the writing run's resolved deck
  std::string mesh;       // "{data: 2, model: 2}"
  std::string params;     // fp64 | fp32: the type of the master weights and optimizer state
  std::string optimizer;  // sgd | momentum | adam
  long long features = 0;
  bool bias = false;
  long long next_batch = 0;  // the global batch the next step reads
};

// DIR/ckpt-%08lld.h5
std::string checkpoint_path(const std::string& dir, long long step);

// The checkpoint files in `dir` (by name), oldest step first; none for a missing directory.
std::vector<std::pair<long long, std::string>> list_checkpoints(const std::string& dir);

// Writes step `state.step` into `dir` (created if missing) and then removes the older files of
// `dir` beyond the newest `keep` up to this step. `fault` (test only, KPMAP_TEST_FAULT=io) fails
// after the data is written and before the rename. Returns the path. Throws RuntimeError naming
// the file; a failed write leaves no file under a checkpoint name.
std::string write_checkpoint(const std::string& dir, const TrainState& state, const CheckpointInfo& info,
                             long long keep, bool fault = false);

// `path` itself when it is a file, else the newest checkpoint in the directory `path`. Throws
// InputError when there is none.
std::string find_checkpoint(const std::string& path);

// Reads and verifies a checkpoint: its format, the shapes of its datasets and the checksum.
// Throws InputError naming the file and what is wrong (truncated, corrupted, not a checkpoint).
TrainState read_checkpoint(const std::string& path, CheckpointInfo& info);

// `state` of rank `root` on every rank of comm. Collective.
void broadcast(TrainState& state, MPI_Comm comm, int root = 0);

}  // namespace kpmap
