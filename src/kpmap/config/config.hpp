// The typed, validated configuration of a run: the YAML deck (DESIGN.md §3, docs/decks.md) after
// --set overrides, defaults and validation. Every rank loads it identically, so a bad deck fails
// on every rank with the same message.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "kpmap/core/dtype.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

enum class Mode { train, collectives, bench, info };


struct MeshConfig {
  std::vector<MeshAxis> axes;  // resolved: sizes multiply to the rank count
};

struct ProblemConfig {
  // rows and columns of X; required with source synthetic. With a file source they are 0 until
  // the app reads the file's shape (app/data_mode.hpp), or what the deck gave, to be checked then.
  long long samples = 0;
  long long features = 0;
  bool bias = true;
  double noise = 0.0;      // standard deviation of the noise added to y
  long long seed = 42;
  double weight_scale = 1.0;  // w* and b* are uniform in [-weight_scale, weight_scale)
  std::string source = "synthetic";  // synthetic | hdf5:PATH | csv:PATH, as the deck gives it
  // The file of an hdf5: or csv: source (empty for synthetic): a relative PATH written in the
  // deck is relative to the deck's directory, one given with --set to the working directory.
  std::string data_path;
};

// Only the fields of the chosen optimizer are meaningful; the deck rejects the others.
struct OptimizerConfig {
  std::string name = "sgd";  // sgd | momentum | adam
  double lr = 0.05;
  double momentum = 0.9;  // momentum
  double beta1 = 0.9;     // adam
  double beta2 = 0.999;   // adam
  double eps = 1e-8;      // adam
};

struct TrainConfig {
  long long steps = 200;
  long long batch = 1024;      // global rows per step
  long long accumulation = 1;  // micro-batches per step, each batch / accumulation rows
  // fused | kokkos_kernels | team (kpmap::GradientKernel) | auto: the backend's default, which the
  // app layer resolves (resolve_gradient_kernel: fused on host backends, team on GPUs)
  std::string kernel = "auto";
  OptimizerConfig optimizer;
  double max_seconds = 0;  // > 0: after this many seconds, checkpoint and stop (needs checkpoint.path)
};

// precision.scaler: the dynamic loss scaler's settings (the usual defaults of dynamic scalers).
struct ScalerConfig {
  double init = 65536.0;        // the first scale
  long long growth_interval = 2000;  // clean steps in a row before the scale grows
  double growth_factor = 2.0;   // > 1
  double backoff_factor = 0.5;  // in (0, 1): the scale after a non-finite gradient
};

struct PrecisionConfig {
  Dtype compute = Dtype::fp32;  // X, y and the weights the kernels read
  Dtype params = Dtype::fp32;   // master weights and optimizer state (fp64 | fp32, >= compute)
  Dtype comm = Dtype::fp32;     // the gradient on the wire
  std::string loss_scale = "none";  // none | static | dynamic
  double static_scale = 1.0;        // loss_scale: a positive number
  ScalerConfig scaler;              // loss_scale: dynamic
  bool reproducible = false;        // exact, order-independent sums (comm: fp64 accumulators)
};

struct CommConfig {
  std::string strategy = "allreduce";
  long long bucket_bytes = 0;  // 0: one message per step
  bool overlap = false;
  // comm.model: a communication model file (kpmap fit-comm-model, docs/bench.md); "" for none.
  std::string model;
  std::string model_where;  // "deck.yaml:12:10: comm.model", for messages about the file
};

// checkpoint: where and how often a training run saves its state (docs/reliability.md), and the
// checkpoint it continues from. Mode train only.
struct CheckpointConfig {
  std::string path;    // directory of the checkpoint files ("" for none)
  long long every = 0;  // a checkpoint after every this many steps (0: only at the end or a stop)
  long long keep = 2;   // the newest this many checkpoint files are kept
  std::string resume;   // a checkpoint file, or a directory (its newest); "" to start afresh
};

struct CollectivesConfig {
  std::string axis = "i";  // the mesh axis the one-axis tutorial examples run over
};

// mode: bench, the collective sweep (docs/bench.md). Collective names are the bench layer's
// (kpmap::parse_collective); each entry of `axes` is one axis or an ordered tuple of axes.
struct BenchConfig {
  std::vector<std::string> collectives{"psum", "all_gather", "psum_scatter", "all_to_all"};
  std::vector<Dtype> dtypes{Dtype::fp32};
  std::vector<std::vector<std::string>> axes;  // default: every mesh axis on its own
  long long min_bytes = 8;
  long long max_bytes = 1 << 20;
  long long factor = 4;  // sizes min_bytes, min_bytes * factor, ... up to max_bytes
  long long iterations = 20;
  long long warmup = 5;
  std::string baseline = "none";  // none | mpi: also time the plain MPI call of every row
};

struct OutputConfig {
  long long every = 10;              // progress line every this many steps
  std::string report = "report.json";  // JSON report path ("" for none)
  std::string csv;                     // mode bench: the rows as CSV ("" for none)
};

struct Config {
  std::string deck;  // path of the deck file
  Mode mode = Mode::train;
  MeshConfig mesh;
  ProblemConfig problem;
  TrainConfig train;
  PrecisionConfig precision;
  CommConfig comm;
  CheckpointConfig checkpoint;
  CollectivesConfig collectives;
  BenchConfig bench;
  OutputConfig output;
  nlohmann::ordered_json resolved;  // the deck with every default filled in, echoed into reports
};

std::string to_string(Mode mode);

// Loads and validates the deck for a run on `ranks` ranks. Throws InputError.
// The sections a mode needs are read with their defaults (mode train: problem, train, precision,
// comm; mode bench: bench); every other section present is validated too, so no key is ever
// ignored.
Config load_config(const std::string& deck, const std::vector<std::string>& overrides, int ranks);

}  // namespace kpmap
