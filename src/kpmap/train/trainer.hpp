// The trainer: the reference tutorial's train_step on a (data, model) mesh. Each data rank
// computes the gradient of the mean squared error on its slice of the global batch, the sums are
// psum'ed over `data` and divided by the global sample count (a weighted pmean), and every rank
// applies the same update; features are split over `model`, with the partial products psum'ed.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "kpmap/core/types.hpp"
#include "kpmap/data/source.hpp"
#include "kpmap/data/synthetic.hpp"
#include "kpmap/mesh/mesh.hpp"
#include "kpmap/model/linear_model.hpp"
#include "kpmap/optim/optimizer.hpp"
#include "kpmap/train/comm_spec.hpp"
#include "kpmap/train/loss_scale.hpp"
#include "kpmap/train/timers.hpp"

namespace kpmap {

struct HistoryEntry {
  long long step;        // 1-based
  double loss;           // mean squared error of the step's global batch, before its update
  double scale = 1.0;    // the loss scale the step used
  bool skipped = false;  // a dynamic loss scaler skipped the update (non-finite gradient)
};

// A run that stopped before its last step: a loss or gradient was not finite without dynamic
// loss scaling. The step's update was not applied: the weights are those of the last good step.
struct TrainStop {
  long long step = 0;   // 1-based step that saw the Inf or NaN (0: the run did not stop)
  int rank = -1;        // the lowest mesh rank that saw it
  bool in_own = false;  // in that rank's own loss or gradient (false: only in the reduced sums)
};

// The state a checkpoint holds (train/checkpoint.hpp), independent of the mesh: every vector
// over all features, w then b (with bias), in the master precision's values.
struct TrainState {
  long long step = 0;                  // completed steps; the data position is a function of it
  std::vector<double> master;          // the master weights
  std::vector<std::vector<double>> optimizer;  // the optimizer's state, in Optimizer::state_names() order
  double loss_scale = 1.0;             // the loss scaler's scale and clean steps in a row
  long long clean_steps = 0;
  int loss_exponent = 0;               // the 16-bit wire's loss exponent (train/step_comm.hpp)
  std::vector<HistoryEntry> history;   // steps 1 to step
};

// How a run saves its state and stops on request (app layer: checkpoint files, signals, a time
// limit).
struct TrainControl {
  const TrainState* resume = nullptr;  // continue from this state (the same on every rank)
  // Called on every rank after every `every` steps (0: never on a schedule), after the last step,
  // and when the run stops on request; the state is complete on mesh rank 0 only (the other
  // ranks pass theirs there: one gather over the mesh).
  std::function<void(const TrainState&)> save;
  long long every = 0;
  // This rank's request to stop (0: none; a positive reason code), asked after every step; the
  // ranks agree on the largest with one 4-byte allreduce over the mesh per step.
  std::function<int()> stop_request;
};

struct TrainResult {
  std::vector<HistoryEntry> history;  // every step (up to the last good one when stopped)
  TrainStop stopped;
  long long steps_run = 0;            // steps this run made (a resumed run: after its checkpoint)
  int interrupted = 0;                // the agreed TrainControl::stop_request code (0: ran to the end)
  double final_loss = 0;              // history.back().loss (NaN when the first step stopped)
  // |[w, b] - [w*, b*]| / |[w*, b*]| over all features; absent for data from a file without w
  std::optional<double> weights_rel_error;
  std::vector<double> weights;        // the learned w, all features (identical on every rank)
  double bias = 0;                    // the learned b (0 without bias)
  Timers timers;                      // this rank's
  std::size_t comm_bytes_per_step = 0;  // payload bytes this rank handed to collectives per step
  double comm_calls_per_step = 0;       // collective calls this rank made per step
  std::vector<StepCollective> collectives;  // those calls by key and size, in the order first made
  std::size_t param_bytes = 0, gradient_bytes = 0, optimizer_bytes = 0, data_bytes = 0;
  bool data_huge_pages = false;  // X was advised to take transparent huge pages (data/huge_pages.hpp)
  long long shard_elements = 0;  // parameters this rank updates (all of its model slice under allreduce)
  long long shard_padding = 0;   // of which zeros past the last parameter (reduce_scatter)
  bool reproducible = false;     // the sums were reproducible (TrainSpec::reproducible)
};

// What the trainer needs to know (the app layer fills it from the deck's Config).
struct TrainSpec {
  SyntheticProblem problem;  // samples, features and bias; the generator's fields when data is null
  // The rows come from a data file (problem.source hdf5: or csv:): set before `data` is read, so
  // that the memory estimate counts the rows as read (train/memory.hpp).
  bool from_file = false;
  // This rank's rows and columns of a data file, read by the app for the mesh the run gets, with
  // the file's true weights if it has them; null: synthetic data. train() builds its shard from
  // the rows and then empties data->block, so they are held only while the shard is built (a
  // second train() with this spec is refused); data->truth stays.
  std::shared_ptr<FileData> data;
  long long steps = 1;
  long long batch = 1;         // global rows per step
  long long accumulation = 1;  // micro-batches per step
  GradientKernel kernel = default_gradient_kernel();
  OptimizerSpec optimizer;
  Dtype compute = Dtype::fp32;  // X, y and the weights the kernels read (sums in >= fp32)
  Dtype params = Dtype::fp32;   // master weights and optimizer state: fp64 | fp32, >= compute
  Dtype comm = Dtype::fp32;     // the gradient on the wire (train/step_comm.hpp)
  CommSpec comm_spec;           // strategy, buckets, overlap
  LossScaleSpec loss_scale;
  // Exact, order-independent sums (model/repro_model.hpp): the same bits on every mesh, thread
  // count, accumulation and gradient kernel. fp64 | fp32 compute, allreduce, no buckets, no
  // overlap, no loss scale.
  bool reproducible = false;
  // Test only: mesh rank `inject_rank` puts +Inf into its gradient at step `inject_step`
  // (1-based; 0: never), to exercise the dynamic loss scaler's skip and the non-finite stop.
  long long inject_step = 0;
  int inject_rank = 0;
  // Test only: mesh rank `fault_rank` raises an exception at step `fault_step` (1-based; 0: never)
  // while the other ranks go on into the step's collectives: in the step itself, or from a
  // collective it calls wrongly (psum's shape check).
  enum class Fault { step, collective, io };  // io: the app's checkpoint writer
  Fault fault = Fault::step;
  long long fault_step = 0;
  int fault_rank = 0;
};

// Called on every rank after every step, with the 1-based step and its loss.
using StepCallback = std::function<void(long long step, double loss)>;

// The keys of the collectives a step of `spec` makes on a mesh of these axes (none over an axis
// of size 1), known before it runs: what a communication model must cover (comm.model).
std::vector<CollectiveKey> step_collective_keys(const TrainSpec& spec, const std::vector<MeshAxis>& axes);

// Collective over the mesh, whose axes are named from {data, model} (a missing axis has size 1).
// A non-finite loss or gradient without dynamic loss scaling ends the run on every rank at that
// step, before its update (TrainResult::stopped). Throws InputError for a combination of types it does not support (params narrower than
// compute, 16-bit params).
// With control.resume, the run continues from that state (its history comes first in the result);
// the caller has checked that it belongs to this spec.
TrainResult train(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step = {},
                  const TrainControl& control = {});

}  // namespace kpmap
