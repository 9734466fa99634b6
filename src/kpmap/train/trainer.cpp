#include "kpmap/train/trainer.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <memory>
#include <type_traits>

#include "kpmap/collectives/reproducible.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/data/shard.hpp"
#include "kpmap/model/repro_model.hpp"
#include "kpmap/train/step_comm.hpp"

namespace kpmap {

namespace {

using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;

// Sums of 16-bit and fp32 data accumulate in fp32, of fp64 data in fp64.
template <class S>
using accumulation_t = std::conditional_t<std::is_same_v<S, double>, double, float>;

// The whole state of a run in one place: data shard (S); the parameters the kernels read (S);
// the parameters this rank updates, in the master type M, with their optimizer state; the
// step's statistics [grad sums..., loss_sum, count] (Acc); the step counter. The data position is
// a function of the step (BatchPlan::batch_of_step). The optimizer reads the mean gradient from
// the reduced wire (StepComm::with_mean_gradient); only precision.reproducible makes it in `grad`
// (M; the head of stats when M == Acc under allreduce).
//
// allreduce: every rank updates all n_params parameters; master is params itself when S == M.
// reduce_scatter (ZeRO): this rank updates its shard of comm.shard_size() elements (master,
// optimizer state), casts it to S (outgoing; master itself when S == M) and all_gathers every
// shard into `gathered`, whose head is params.
template <class S, class M, class Layout>
struct RunState {
  using Acc = accumulation_t<S>;
  Shard<S, Layout> shard;
  long long features_local = 0;
  long long n_params = 0;  // features_local (+ 1 with bias)
  View1<S> gathered;       // comm.gathered_size()
  View1<S> params;         // n_params: the head of gathered
  View1<M> master;         // comm.shard_size()
  View1<S> outgoing;       // reduce_scatter: the shard in S for the all_gather
  View1<Acc> stats;        // n_params + 2
  View1<M> grad;           // precision.reproducible: comm.shard_size()
  View1<Acc> z;            // partial products of one micro-batch (model-parallel only)
  View1<Acc> r;            // comm.overlap: the residuals of the step's rows
  std::unique_ptr<Optimizer<M>> optimizer;
  long long step = 0;

  auto grads() const { return Kokkos::subview(stats, Kokkos::make_pair(0LL, n_params)); }
  std::size_t param_bytes() const {
    std::size_t bytes = master.span() * sizeof(M);
    if (static_cast<const void*>(gathered.data()) != static_cast<const void*>(master.data())) {
      bytes += gathered.span() * sizeof(S);
    }
    if (static_cast<const void*>(outgoing.data()) != static_cast<const void*>(master.data())) {
      bytes += outgoing.span() * sizeof(S);
    }
    return bytes;
  }
  std::size_t gradient_bytes() const {
    const bool separate = static_cast<const void*>(grad.data()) != static_cast<const void*>(stats.data());
    return static_cast<std::size_t>(n_params) * sizeof(Acc) + (separate ? grad.span() * sizeof(M) : 0);
  }
};

template <class S, class M, class Layout>
RunState<S, M, Layout> make_state(const TrainSpec& spec, const StepComm<accumulation_t<S>>& comm) {
  using Acc = accumulation_t<S>;
  const SyntheticProblem& problem = spec.problem;
  const execution_space exec;
  RunState<S, M, Layout> s;
  const Range cols = column_range(problem.features, comm.model_index(), comm.model_size());
  const BatchPlan plan = make_batch_plan(problem.samples, spec.batch, comm.data_index(), comm.data_size());
  s.shard = spec.data ? make_shard<S, Layout>(exec, problem, plan, cols, spec.data->block)
                      : make_shard<S, Layout>(exec, problem, plan, cols);
  if (spec.data) spec.data->block = DataBlock{};  // the file's rows in fp64: the shard holds them now
  s.features_local = cols.size();
  s.n_params = s.features_local + (problem.bias ? 1 : 0);
  s.master = View1<M>("kpmap::train::master", comm.shard_size());  // w = 0, b = 0
  if constexpr (std::is_same_v<S, M>) {
    s.outgoing = s.master;
    s.gathered = comm.sharded() ? View1<S>("kpmap::train::params", comm.gathered_size()) : s.master;
  } else {
    if (comm.sharded()) s.outgoing = View1<S>("kpmap::train::outgoing", comm.shard_size());
    s.gathered = View1<S>("kpmap::train::params", comm.gathered_size());
  }
  s.params = Kokkos::subview(s.gathered, Kokkos::make_pair(0LL, s.n_params));
  s.stats = View1<Acc>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::stats"), s.n_params + 2);
  if (spec.reproducible) {
    if constexpr (std::is_same_v<M, Acc>) {
      if (!comm.sharded()) s.grad = s.grads();
    }
    if (s.grad.extent(0) == 0) {
      s.grad = View1<M>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::grad"), comm.shard_size());
    }
  }
  const long long micro_rows = s.shard.rows_per_batch() / spec.accumulation +
                               (s.shard.rows_per_batch() % spec.accumulation ? 1 : 0);
  if (comm.model_size() > 1) {
    s.z = View1<Acc>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::z"), micro_rows);
  }
  if (spec.comm_spec.overlap) {
    s.r = View1<Acc>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::residuals"), s.shard.rows_per_batch());
  }
  s.optimizer = make_optimizer<M>(spec.optimizer, comm.shard_size());
  return s;
}

// The loss at w = 0 of this rank's rows of the first batch: the mean of y^2 (0 for no rows).
template <class S, class M, class Layout>
double first_loss_estimate(const RunState<S, M, Layout>& s) {
  const auto y = s.shard.batch_y(0);
  double sum = 0;
  Kokkos::parallel_reduce(
      "kpmap::train::first_loss_estimate",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(0, static_cast<long long>(y.extent(0))),
      KOKKOS_LAMBDA(long long i, double& acc) {
        const double v = static_cast<double>(y(i));
        acc += v * v;
      },
      sum);
  return y.extent(0) > 0 ? sum / static_cast<double>(y.extent(0)) : 0.0;
}

// Local sums over this rank's slice of the step's batch, micro-batch by micro-batch; the
// partial products of each micro-batch are summed over `model` first when features are split.
// split (comm.overlap): pass 1 only, the residuals of every row into s.r, the bias gradient and
// the loss; the gradient of w follows bucket by bucket (column_sums), with the same sums.
// cast (StepComm::gradient_cast): the epilogue of the last micro-batch, whose sums finish the
// gradient slots.
template <class S, class M, class Layout, class Model, class Comm, class Cast>
double local_sums(RunState<S, M, Layout>& s, Model& model, Comm& comm, long long accumulation, bool split,
                  const Cast& cast, Timers& timers) {
  const execution_space exec;
  const auto [w, b] = split_params(s.params, s.features_local);
  const auto [gw, gb] = split_params(s.grads(), s.features_local);
  const Range rows = s.shard.batch_rows(s.shard.plan.batch_of_step(s.step));
  double loss_sum = 0;
  for (long long j = 0; j < accumulation; ++j) {
    const Range part = block_range(rows.size(), j, accumulation);
    const auto X = s.shard.sub_x(rows.begin + part.begin, part.size());
    const auto y = s.shard.sub_y(rows.begin + part.begin, part.size());
    const auto r = Kokkos::subview(s.r, split ? Kokkos::make_pair(part.begin, part.end) : Kokkos::make_pair(0LL, 0LL));
    const Cast then = j + 1 == accumulation ? cast : Cast();
    if (comm.model_size() == 1) {
      ScopedPhase phase(timers, Phase::compute, split ? "residual" : "gradient", exec);
      loss_sum += split ? model.residual(exec, X, y, w, b, r, gb, then) : model.fused(exec, X, y, w, b, gw, gb, then);
      continue;
    }
    const auto z = Kokkos::subview(s.z, Kokkos::make_pair(0LL, part.size()));
    // The bias enters the sum of partial products once, from model rank 0.
    const auto b_once = comm.model_index() == 0 ? b : Kokkos::subview(b, Kokkos::make_pair(0LL, 0LL));
    {
      ScopedPhase phase(timers, Phase::compute, "forward", exec);
      model.forward_partial(exec, X, w, b_once, z);
    }
    {
      ScopedPhase phase(timers, Phase::comm, "psum_model", exec);
      comm.sum_partial_products(z);
    }
    ScopedPhase phase(timers, Phase::compute, split ? "residual" : "backward", exec);
    loss_sum += split ? model.residual_from_z(exec, X, z, y, r, gb, then) : model.backward(exec, X, z, y, gw, gb, then);
  }
  return loss_sum;
}

// comm.overlap, pass 2: the gradient of the columns among `slots` (one bucket's; the slots past
// the features are the bias, summed in pass 1), every micro-batch, in micro-batch order.
template <class S, class M, class Layout, class Model, class Cast>
void column_sums(RunState<S, M, Layout>& s, Model& model, const std::vector<Range>& slots, long long accumulation,
                 const Cast& cast, Timers& timers) {
  const execution_space exec;
  ScopedPhase phase(timers, Phase::compute, "gradient_columns", exec);
  const Range rows = s.shard.batch_rows(s.shard.plan.batch_of_step(s.step));
  for (const Range& slot : slots) {
    const long long c0 = slot.begin, c1 = std::min(slot.end, s.features_local);
    for (long long j = 0; c0 < c1 && j < accumulation; ++j) {
      const Range part = block_range(rows.size(), j, accumulation);
      model.gradient_columns(exec, s.shard.sub_x(rows.begin + part.begin, part.size()),
                             Kokkos::subview(s.r, Kokkos::make_pair(part.begin, part.end)), c0,
                             Kokkos::subview(s.stats, Kokkos::make_pair(c0, c1)), j + 1 == accumulation ? cast : Cast());
    }
  }
}

// The kernels' parameters from the updated master weights: a cast (allreduce, S != M), and under
// reduce_scatter the all_gather of every rank's shard.
template <class S, class M, class Layout, class Comm>
void refresh_params(RunState<S, M, Layout>& s, Comm& comm, const execution_space& exec) {
  if constexpr (!std::is_same_v<S, M>) {
    const auto master = s.master;
    const auto to = comm.sharded() ? s.outgoing : s.params;
    Kokkos::parallel_for(
        "kpmap::train::cast_params", Kokkos::RangePolicy<execution_space>(exec, 0, master.extent(0)),
        KOKKOS_LAMBDA(long long i) { to(i) = static_cast<S>(master(i)); });
  }
  if (comm.sharded()) comm.gather_params(exec, s.outgoing, s.gathered);
}

// Test only (TrainSpec::fault): an exception on this rank alone, the others being on their way
// into the step's collectives.
void raise_fault(TrainSpec::Fault fault, const Mesh& mesh, long long step, int rank) {
  const std::string where = "step " + std::to_string(step) + ", rank " + std::to_string(rank);
  if (fault == TrainSpec::Fault::step) throw RuntimeError("test fault: an exception inside " + where);
  // A collective called with Views of different shapes: its shape check throws on this rank
  // before anything is sent.
  const View1<double> in("fault_in", 1), out("fault_out", 2);
  psum(mesh, AxisNames(mesh.axes().front().name), in, out);
}

// One step: the global batch's loss before the update, the scale it used, whether it was skipped.
// A non-finite loss or gradient skips the update under dynamic loss scaling, and otherwise stops
// the run (stop.step set, no update, the step not counted).
template <class S, class M, class Layout, class Model, class Comm>
HistoryEntry step(RunState<S, M, Layout>& s, Model& model, Comm& comm, LossScaler& scaler,
                  const TrainSpec& spec, int rank, Timers& timers, TrainStop& stop) {
  using Acc = accumulation_t<S>;
  const execution_space exec;
  if (s.step + 1 == spec.fault_step && rank == spec.fault_rank && spec.fault != TrainSpec::Fault::io) {
    raise_fault(spec.fault, comm.mesh(), s.step + 1, rank);
  }
  Kokkos::deep_copy(exec, s.stats, Acc(0));
  const bool overlap = spec.comm_spec.overlap;
  // The gradient kernels cast each finished gradient slot to the wire, except at a step where a
  // test injects an Inf after them (start() then casts every slot).
  const bool inject = s.step + 1 == spec.inject_step && rank == spec.inject_rank;
  using Cast = step_comm_detail::WireCast<Acc>;
  const Cast cast = inject ? Cast() : comm.gradient_cast(exec, s.stats, spec.batch, scaler.scale());
  const double loss_sum = local_sums(s, model, comm, spec.accumulation, overlap, cast, timers);
  const std::array<Acc, 2> tail{static_cast<Acc>(loss_sum), static_cast<Acc>(s.shard.rows_per_batch())};
  Kokkos::deep_copy(exec, Kokkos::subview(s.stats, s.n_params), tail[0]);
  Kokkos::deep_copy(exec, Kokkos::subview(s.stats, s.n_params + 1), tail[1]);
  HistoryEntry entry{s.step + 1, 0.0, scaler.scale(), false};
  // Bucket by bucket: without overlap every slot is final already; with it, each bucket's columns
  // are computed first, and its reduction is in flight while the next bucket's are computed.
  double first_start = 0;
  bool own_nonfinite = !std::isfinite(loss_sum);
  for (long long k = 0; k < comm.buckets(); ++k) {
    if (overlap) column_sums(s, model, comm.bucket_slots(k), spec.accumulation, cast, timers);
    if (k == 0 && inject) {  // slot 0 is in bucket 0
      Kokkos::deep_copy(exec, Kokkos::subview(s.stats, 0), std::numeric_limits<Acc>::infinity());
    }
    own_nonfinite = comm.own_nonfinite(exec, s.stats, k) || own_nonfinite;
    ScopedPhase phase(timers, Phase::comm, "reduce_gradient", exec);
    comm.start(exec, s.stats, k, spec.batch, scaler.scale());
    if (k == 0) first_start = MPI_Wtime();
    comm.progress();
  }
  if (overlap && comm.data_size() > 1) timers.add(Phase::comm_in_flight, MPI_Wtime() - first_start);
  bool apply = true;
  {
    ScopedPhase phase(timers, Phase::comm, "reduce_gradient", exec);
    entry.loss = comm.finish(exec).loss;
    const FiniteCheck check = comm.check_finite(exec, own_nonfinite, scaler.dynamic());
    if (scaler.dynamic()) {
      apply = scaler.update(!check.any());
    } else if (check.any()) {
      stop = {entry.step, check.rank, check.in_own};
      return entry;
    }
  }
  entry.skipped = !apply;
  if (apply) {
    {
      ScopedPhase phase(timers, Phase::optimizer, "optimizer", exec);
      comm.template with_mean_gradient<M>([&](const auto& g) { s.optimizer->apply(exec, s.step, s.master, g); });
    }
    ScopedPhase phase(timers, comm.sharded() ? Phase::comm : Phase::optimizer, "refresh_params", exec);
    refresh_params(s, comm, exec);
  }
  ++s.step;
  return entry;
}

// The learned [w, b] over all features on every rank, and its distance to [w*, b*] (from the
// generator, or the data file's w and b; none for a file without w).
template <class S, class M, class Layout, class Comm>
void finish(const RunState<S, M, Layout>& s, const Mesh& mesh, Comm& comm, const SyntheticProblem& problem,
            const FileData* data, TrainResult& r) {
  View1<M> mine = s.master;
  if (comm.sharded()) {  // every shard of the master weights
    mine = View1<M>("kpmap::train::all_master", comm.gathered_size());
    comm.gather_params(execution_space(), s.master, mine);
  }
  // On a device backend a host copy, labelled as the gathered result (not the master weights).
  auto local = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), mine, "kpmap::train::weights");
  HostVector full("kpmap::train::weights", problem.features + 1);  // zero outside my columns
  const Range cols = s.shard.columns;
  for (long long j = 0; j < s.features_local; ++j) full(cols.begin + j) = static_cast<double>(local(j));
  if (problem.bias && comm.model_index() == 0) full(problem.features) = static_cast<double>(local(s.features_local));
  if (comm.model_size() > 1) psum(mesh, "model", full, full);
  r.weights.assign(full.data(), full.data() + problem.features);
  r.bias = full(problem.features);
  if (data != nullptr && !data->truth) return;
  const auto w_true = data != nullptr ? data->truth->w : true_weights(problem, 0, problem.features);
  const double b_true = data != nullptr ? data->truth->b : true_bias(problem);
  double diff = (r.bias - b_true) * (r.bias - b_true), norm = b_true * b_true;
  for (long long j = 0; j < problem.features; ++j) {
    diff += (r.weights[j] - w_true[j]) * (r.weights[j] - w_true[j]);
    norm += w_true[j] * w_true[j];
  }
  r.weights_rel_error = std::sqrt(diff / norm);
}

// The parameters of this rank's model slice: its columns (+ 1 with bias).
long long slice_params(const TrainSpec& spec, const Mesh& mesh) {
  const bool split = mesh.has_axis("model");
  return column_range(spec.problem.features, split ? mesh.axis_index("model") : 0, split ? mesh.axis_size("model") : 1)
             .size() +
         (spec.problem.bias ? 1 : 0);
}

// ---- precision.reproducible (model/repro_model.hpp) ----

// The exact sums' state: the step accumulator, the model-parallel forward accumulators, and the
// bounds of the data (max |X|, max |y| over every rank's rows), agreed once.
template <class S>
struct ReproState {
  ReproducibleModel<S> model;
  View1<double> acc;   // 3 (features_local + 2), level-major
  View1<double> zacc;  // model-parallel: 3 x the rows of a micro-batch
  View1<double> z;     // model-parallel: z of a micro-batch
  View1<double> loss;  // the step's loss sum
  double x_max = 0, y_max = 0;
};

template <class S, class M, class Layout, class Comm>
ReproState<S> make_repro_state(const RunState<S, M, Layout>& s, Comm& comm) {
  ReproState<S> rs;
  rs.acc = View1<double>("kpmap::train::repro_acc", 3 * (s.features_local + 2));
  rs.loss = View1<double>("kpmap::train::repro_loss", 1);
  if (comm.model_size() > 1) {
    const long long micro_rows = static_cast<long long>(s.z.extent(0));
    rs.zacc = View1<double>("kpmap::train::repro_zacc", 3 * micro_rows);
    rs.z = View1<double>("kpmap::train::repro_z", micro_rows);
  }
  Kokkos::View<double*, Kokkos::HostSpace> bounds("kpmap::train::data_bounds", 2);
  bounds(0) = max_abs(s.shard.X);
  bounds(1) = max_abs(s.shard.y);
  comm.agree_max(bounds);
  rs.x_max = bounds(0);
  rs.y_max = bounds(1);
  return rs;
}

// The grids of step `step` (1-based): bounds from max |X|, max |y|, max |w| over every model rank
// and |b|; throws AgreedError (exit 1), the same on every rank, when a sum leaves the grids' range.
template <class S, class M, class Layout, class Comm>
ReproGrids repro_grids(const RunState<S, M, Layout>& s, const ReproState<S>& rs, Comm& comm, const TrainSpec& spec) {
  const auto [w, b] = split_params(s.params, s.features_local);
  const double w_max = comm.max_over_model(max_abs(w));
  const double b_abs = max_abs(b);
  const double features = static_cast<double>(spec.problem.features), rows = static_cast<double>(spec.batch);
  const double slack = 1 + 0x1p-20;  // covers the roundings of z, z + b and (z + b) - y
  const double term = rs.x_max * w_max;
  const double residual = (features * term + b_abs + rs.y_max) * slack;
  ReproGrids g;
  const auto make = [&](const char* what, double terms, double bound, ReproGrid& grid) {
    if (ReproGrid::make(terms, bound, grid)) return;
    throw AgreedError("precision.reproducible: step " + std::to_string(s.step + 1) + ": the " + what +
                      " sums " + std::to_string(static_cast<long long>(terms)) + " terms bounded by " +
                      std::to_string(bound) + " (max |X| " + std::to_string(rs.x_max) + ", max |w| " +
                      std::to_string(w_max) + ", |b| " + std::to_string(b_abs) +
                      "): outside the exact accumulator's range (finite, 2 x terms x bound <= 2^1020); "
                      "the weights diverge: lower train.optimizer.lr");
  };
  make("forward pass (X w)", features, term, g.forward);
  make("gradient", rows, residual * rs.x_max * slack, g.gradient);
  make("bias gradient", rows, residual, g.residual);
  make("loss", rows, residual * residual * slack, g.loss);
  return g;
}

// One reproducible step: the sums of every micro-batch into one accumulator, its psum over
// `data`, then the mean gradient 2 sum / B and the loss sum / B, each rounded once.
template <class S, class M, class Layout, class Comm>
HistoryEntry repro_step(RunState<S, M, Layout>& s, ReproState<S>& rs, Comm& comm, const TrainSpec& spec,
                        Timers& timers) {
  const execution_space exec;
  const auto [w, b] = split_params(s.params, s.features_local);
  const ReproGrids grids = repro_grids(s, rs, comm, spec);
  Kokkos::deep_copy(exec, rs.acc, 0.0);
  const Range rows = s.shard.batch_rows(s.shard.plan.batch_of_step(s.step));
  for (long long j = 0; j < spec.accumulation; ++j) {
    const Range part = block_range(rows.size(), j, spec.accumulation);
    const auto X = s.shard.sub_x(rows.begin + part.begin, part.size());
    const auto y = s.shard.sub_y(rows.begin + part.begin, part.size());
    if (comm.model_size() == 1) {
      ScopedPhase phase(timers, Phase::compute, "gradient", exec);
      rs.model.fused(exec, X, y, w, b, grids, rs.acc);
      continue;
    }
    const auto zacc = Kokkos::subview(rs.zacc, Kokkos::make_pair(0LL, 3 * part.size()));
    const auto z = Kokkos::subview(rs.z, Kokkos::make_pair(0LL, part.size()));
    {
      ScopedPhase phase(timers, Phase::compute, "forward", exec);
      rs.model.forward_partial(exec, X, w, grids.forward, zacc);
    }
    {
      ScopedPhase phase(timers, Phase::comm, "psum_model", exec);
      comm.sum_partial_products(zacc);
    }
    ScopedPhase phase(timers, Phase::compute, "backward", exec);
    ReproducibleModel<S>::z_from_partials(exec, zacc, z);
    rs.model.backward(exec, X, z, y, b, grids, rs.acc);
  }
  {
    ScopedPhase phase(timers, Phase::comm, "reduce_gradient", exec);
    comm.sum_exact(rs.acc);
  }
  HistoryEntry entry{s.step + 1, 0.0, 1.0, false};
  {
    ScopedPhase phase(timers, Phase::optimizer, "optimizer", exec);
    const long long F = s.features_local, slots = F + 2;
    const double B = static_cast<double>(spec.batch);
    const auto acc = rs.acc;
    const auto grad = s.grad;
    const auto loss = rs.loss;
    const long long n_params = s.n_params;
    Kokkos::parallel_for(
        "kpmap::train::repro_mean", Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, n_params + 1),
        KOKKOS_LAMBDA(long long j) {
          const long long slot = j < F ? j : j == n_params ? F + 1 : F;  // w, then b, then the loss
          const double sum = repro_value(acc(slot), acc(slots + slot), acc(2 * slots + slot));
          if (j < n_params) {
            grad(j) = static_cast<M>(2 * sum / B);
          } else {
            loss(0) = sum / B;
          }
        });
    Kokkos::deep_copy(exec, entry.loss, Kokkos::subview(rs.loss, 0));
    exec.fence();
    s.optimizer->apply(exec, s.step, s.master, View1<const M>(s.grad));
    refresh_params(s, comm, exec);
  }
  ++s.step;
  return entry;
}

// ---- checkpoints (TrainState) ----

// The index in a TrainState vector ([w over all features, b]) of element k of this rank's master
// weights and optimizer state, or -1 for padding; `saves`: this rank is the one whose copy a
// checkpoint takes (each element has one: data rank 0's under allreduce, model rank 0's bias).
template <class S, class M, class Layout, class Comm>
long long state_index(const RunState<S, M, Layout>& s, const Comm& comm, long long features, long long k, bool& saves) {
  const long long slot = comm.shard_begin() + k;  // in this model slice's [w, b]
  saves = comm.sharded() || comm.data_index() == 0;
  if (slot < s.features_local) return s.shard.columns.begin + slot;
  if (slot >= s.n_params) return -1;
  saves = saves && comm.model_index() == 0;
  return features;
}

// The master weights first, then the optimizer's state.
template <class S, class M, class Layout>
std::vector<View1<M>> state_views(const RunState<S, M, Layout>& s) {
  std::vector<View1<M>> views{s.master};
  for (const auto& v : s.optimizer->state()) views.push_back(v);
  return views;
}

// Every rank's part of the state, gathered on mesh rank 0 (one MPI_Gatherv of indices and one of
// values); the other ranks return the scalars only.
template <class S, class M, class Layout, class Comm>
TrainState collect_state(const RunState<S, M, Layout>& s, Comm& comm, const LossScaler& scaler,
                         const TrainSpec& spec, const Mesh& mesh) {
  const long long features = spec.problem.features, length = features + (spec.problem.bias ? 1 : 0);
  std::vector<long long> index, local;
  for (long long k = 0; k < comm.shard_size(); ++k) {
    bool saves = false;
    const long long g = state_index(s, comm, features, k, saves);
    if (g >= 0 && saves) {
      index.push_back(g);
      local.push_back(k);
    }
  }
  const auto views = state_views(s);
  std::vector<double> values;  // view by view
  for (const auto& v : views) {
    const auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    for (long long k : local) values.push_back(static_cast<double>(host(k)));
  }
  const int n = static_cast<int>(index.size()), root = 0, nv = static_cast<int>(views.size());
  std::vector<int> counts(mesh.rank() == root ? mesh.size() : 0), displs(counts.size());
  check_mpi(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, mesh.comm()), "MPI_Gather");
  int total = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    displs[r] = total;
    total += counts[r];
  }
  std::vector<long long> all_index(static_cast<std::size_t>(total));
  check_mpi(MPI_Gatherv(index.data(), n, MPI_LONG_LONG, all_index.data(), counts.data(), displs.data(), MPI_LONG_LONG,
                        root, mesh.comm()),
            "MPI_Gatherv");
  for (auto& c : counts) c *= nv;
  for (auto& d : displs) d *= nv;
  std::vector<double> all_values(static_cast<std::size_t>(total) * nv);
  check_mpi(MPI_Gatherv(values.data(), n * nv, MPI_DOUBLE, all_values.data(), counts.data(), displs.data(), MPI_DOUBLE,
                        root, mesh.comm()),
            "MPI_Gatherv");
  TrainState state;
  state.step = s.step;
  state.loss_scale = scaler.scale();
  state.clean_steps = scaler.clean_steps();
  state.loss_exponent = comm.loss_exponent();
  if (mesh.rank() != root) return state;
  if (total != length) {
    throw RuntimeError("checkpoint: the ranks hold " + std::to_string(total) + " of " + std::to_string(length) +
                       " parameters");
  }
  std::vector<std::vector<double>> full(static_cast<std::size_t>(nv), std::vector<double>(length));
  for (std::size_t r = 0; r < counts.size(); ++r) {  // rank r's indices, then its values view by view
    const int m = counts[r] / nv;
    const long long* idx = all_index.data() + displs[r] / nv;
    const double* from = all_values.data() + displs[r];
    for (int v = 0; v < nv; ++v) {
      for (int i = 0; i < m; ++i) full[v][idx[i]] = from[v * m + i];
    }
  }
  state.master = std::move(full.front());
  state.optimizer.assign(std::make_move_iterator(full.begin() + 1), std::make_move_iterator(full.end()));
  return state;
}

// The run continues from `state`: this rank's elements of every vector (padding zero), the step,
// the loss scaler and the wire's loss exponent, then the kernels' parameters from the master
// weights as after any update.
template <class S, class M, class Layout, class Comm>
void restore_state(RunState<S, M, Layout>& s, Comm& comm, LossScaler& scaler, const TrainState& state,
                   const TrainSpec& spec) {
  const auto views = state_views(s);
  for (std::size_t v = 0; v < views.size(); ++v) {
    const std::vector<double>& from = v == 0 ? state.master : state.optimizer[v - 1];
    auto host = Kokkos::create_mirror_view(Kokkos::HostSpace(), views[v]);
    for (long long k = 0; k < comm.shard_size(); ++k) {
      bool saves = false;
      const long long g = state_index(s, comm, spec.problem.features, k, saves);
      host(k) = g >= 0 ? static_cast<M>(from[g]) : M(0);
    }
    Kokkos::deep_copy(views[v], host);
  }
  s.step = state.step;
  scaler.restore(state.loss_scale, state.clean_steps);
  comm.set_loss_exponent(state.loss_exponent);
  const execution_space exec;
  refresh_params(s, comm, exec);
  exec.fence();
}

// timing.comm_wait: each step's comm time on this rank, and the part of it spent waiting for the
// other ranks, which the rank that reaches the step's collectives last does not: its comm time
// less the least over the mesh in that step. One MPI_MIN of the kept steps' times every
// `block` steps and after the last, outside the timed phases.
class CommWait {
 public:
  explicit CommWait(const Mesh& mesh) : mesh_(mesh) {}
  void add_step(double comm_seconds) {
    steps_.push_back(comm_seconds);
    if (steps_.size() == block) settle();
  }
  // Seconds waited over the steps added so far (collective).
  double seconds() {
    settle();
    return waited_;
  }

 private:
  static constexpr std::size_t block = 4096;
  void settle() {
    if (mesh_.size() > 1 && !steps_.empty()) {
      least_.resize(steps_.size());
      check_mpi(MPI_Allreduce(steps_.data(), least_.data(), static_cast<int>(steps_.size()), MPI_DOUBLE, MPI_MIN,
                              mesh_.comm()),
                "MPI_Allreduce");
      for (std::size_t k = 0; k < steps_.size(); ++k) waited_ += steps_[k] - least_[k];
    }
    steps_.clear();
  }
  const Mesh& mesh_;
  std::vector<double> steps_, least_;
  double waited_ = 0;
};

// After every step: one agreed stop request (the largest code over the mesh).
int agreed_stop(const TrainControl& control, const Mesh& mesh) {
  if (!control.stop_request) return 0;
  int code = control.stop_request();
  if (mesh.size() > 1) check_mpi(MPI_Allreduce(MPI_IN_PLACE, &code, 1, MPI_INT, MPI_MAX, mesh.comm()), "MPI_Allreduce");
  return code;
}

// The step loop and the result, whatever the step: one_step() returns the step's HistoryEntry;
// workspace_bytes(): the step's buffers beyond the state's gradient, after the steps (the
// report's memory.gradients).
// control: resume from a state (restored by the caller), save it on schedule, stop on request.
template <class S, class M, class Layout, class Comm, class OneStep, class Workspace>
TrainResult drive(RunState<S, M, Layout>& s, Comm& comm, const LossScaler& scaler, const TrainSpec& spec,
                  const Mesh& mesh, const StepCallback& on_step, const TrainControl& control, TrainResult& r,
                  OneStep&& one_step, Workspace&& workspace_bytes) {
  const double start = MPI_Wtime();
  std::size_t bytes = 0;
  long long calls = 0;
  if (control.resume != nullptr) r.history = control.resume->history;
  comm.take_collectives(1);  // only the steps' calls
  CommWait wait(mesh);
  while (s.step < spec.steps) {
    const double comm_before = r.timers.seconds(Phase::comm);
    const HistoryEntry entry = one_step();
    wait.add_step(r.timers.seconds(Phase::comm) - comm_before);
    ++r.steps_run;
    bytes += comm.take_bytes();
    calls += comm.take_calls();
    if (r.stopped.step > 0) break;
    r.history.push_back(entry);
    if (on_step) on_step(entry.step, entry.loss);
    r.interrupted = agreed_stop(control, mesh);
    const bool due = (control.every > 0 && s.step % control.every == 0) || s.step == spec.steps;
    if (control.save && (due || r.interrupted != 0)) {
      TrainState state = collect_state(s, comm, scaler, spec, mesh);
      state.history = r.history;
      control.save(state);
    }
    if (r.interrupted != 0) break;
  }
  r.timers.add(Phase::total, MPI_Wtime() - start);
  r.timers.add(Phase::comm_wait, wait.seconds());
  r.final_loss = r.history.empty() ? std::numeric_limits<double>::quiet_NaN() : r.history.back().loss;
  const long long steps_run = std::max(1LL, r.steps_run);
  r.collectives = comm.take_collectives(steps_run);
  r.comm_bytes_per_step = bytes / static_cast<std::size_t>(steps_run);
  r.comm_calls_per_step = static_cast<double>(calls) / static_cast<double>(steps_run);
  r.param_bytes = s.param_bytes();
  r.gradient_bytes = s.gradient_bytes() + workspace_bytes();
  r.optimizer_bytes = s.optimizer->state_bytes();
  r.data_bytes = s.shard.bytes();
  r.data_huge_pages = s.shard.x_huge_pages;
  r.shard_elements = comm.shard_size();
  r.shard_padding = comm.shard_padding();
  finish(s, mesh, comm, spec.problem, spec.data.get(), r);
  return r;
}

template <class S, class M, class Layout>
TrainResult run_reproducible(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step,
                             const TrainControl& control) {
  if constexpr (is_half<S>::value) {
    throw InputError("precision.reproducible: true needs precision.compute fp64 or fp32, not " + to_string(dtype_v<S>));
  } else {
    if (spec.comm_spec.strategy != CommStrategy::allreduce || spec.comm_spec.bucket_bytes != 0 ||
        spec.comm_spec.overlap || spec.loss_scale.kind != LossScaleSpec::Kind::none) {
      throw InputError("precision.reproducible: true needs comm.strategy allreduce, comm.bucket_bytes 0, "
                       "comm.overlap false and no loss scale");
    }
    using Acc = accumulation_t<S>;
    TrainResult r;
    r.reproducible = true;
    StepComm<Acc> comm(mesh, dtype_v<Acc>, false, spec.comm_spec, slice_params(spec, mesh));
    RunState<S, M, Layout> s = make_state<S, M, Layout>(spec, comm);
    LossScaler scaler(spec.loss_scale);  // none: a checkpoint records scale 1
    if (control.resume != nullptr) restore_state(s, comm, scaler, *control.resume, spec);
    ReproState<S> rs = make_repro_state(s, comm);
    return drive(
        s, comm, scaler, spec, mesh, on_step, control, r, [&] { return repro_step(s, rs, comm, spec, r.timers); },
        [&] { return (rs.acc.span() + rs.zacc.span() + rs.z.span()) * sizeof(double) + rs.model.workspace_bytes(); });
  }
}

template <class S, class M, class Layout>
TrainResult run(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step, const TrainControl& control) {
  if (spec.reproducible) return run_reproducible<S, M, Layout>(spec, mesh, on_step, control);
  using Acc = accumulation_t<S>;
  TrainResult r;
  LossScaler scaler(spec.loss_scale);
  StepComm<Acc> comm(mesh, spec.comm, scaler.enabled(), spec.comm_spec, slice_params(spec, mesh));
  RunState<S, M, Layout> s = make_state<S, M, Layout>(spec, comm);
  if (control.resume != nullptr) {
    restore_state(s, comm, scaler, *control.resume, spec);
  } else if (comm.casts()) {
    comm.start_loss_exponent(first_loss_estimate(s));
  }
  LinearModel<S, Acc> model(spec.kernel);
  return drive(
      s, comm, scaler, spec, mesh, on_step, control, r,
      [&] { return step(s, model, comm, scaler, spec, mesh.rank(), r.timers, r.stopped); },
      [&] { return comm.wire_bytes(); });
}

template <class S, class M>
TrainResult run_with_kernel(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step,
                            const TrainControl& control) {
  if (spec.kernel == GradientKernel::kokkos_kernels) {
    return run<S, M, preferred_layout_t<GradientKernel::kokkos_kernels>>(spec, mesh, on_step, control);
  }
  static_assert(std::is_same_v<preferred_layout_t<GradientKernel::fused>, preferred_layout_t<GradientKernel::team>>);
  return run<S, M, preferred_layout_t<GradientKernel::fused>>(spec, mesh, on_step, control);
}

template <class S>
TrainResult run_with_params(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step,
                            const TrainControl& control) {
  if (spec.params == Dtype::fp64) return run_with_kernel<S, double>(spec, mesh, on_step, control);
  if constexpr (!std::is_same_v<S, double>) {
    if (spec.params == Dtype::fp32) return run_with_kernel<S, float>(spec, mesh, on_step, control);
  }
  throw InputError("precision.params: " + to_string(spec.params) + " is narrower than precision.compute " +
                   to_string(dtype_v<S>) + " (allowed: fp64" + (std::is_same_v<S, double> ? "" : " | fp32") + ")");
}

}  // namespace

std::vector<CollectiveKey> step_collective_keys(const TrainSpec& spec, const std::vector<MeshAxis>& axes) {
  int data = 1, model = 1, ranks = 1;
  std::vector<std::string> names;
  for (const auto& a : axes) {
    if (a.name == "data") data = a.size;
    if (a.name == "model") model = a.size;
    ranks *= a.size;
    names.push_back(a.name);
  }
  // As StepComm makes them: Acc is the kernels' sum type, the wire precision.comm when the
  // statistics are cast (another type, or a loss scale), the all_gather's the compute type.
  const Dtype acc = spec.compute == Dtype::fp64 ? Dtype::fp64 : Dtype::fp32;
  const bool scaled = spec.loss_scale.kind != LossScaleSpec::Kind::none;
  const Dtype wire = spec.reproducible ? Dtype::fp64 : scaled || spec.comm != acc ? spec.comm : acc;
  const bool sharded = spec.comm_spec.strategy == CommStrategy::reduce_scatter && !spec.reproducible;
  std::vector<CollectiveKey> keys;  // in the order a step first makes them
  if (model > 1) {
    if (spec.reproducible) keys.push_back({"pmax", "model", Dtype::fp64});  // the bound of max |w|
    keys.push_back({"psum", "model", spec.reproducible ? Dtype::fp64 : acc});
  }
  if (data > 1) keys.push_back({sharded ? "psum_scatter" : "psum", "data", wire});
  // The finite check's flag (StepComm::check_finite): every step under dynamic loss scaling or
  // where the reduced statistics differ between ranks (a model axis, reduce_scatter).
  if (!spec.reproducible && ranks > 1 &&
      (spec.loss_scale.kind == LossScaleSpec::Kind::dynamic || model > 1 || sharded)) {
    keys.push_back({"pmin", AxisNames(names).str(), Dtype::fp32});
  }
  if (data > 1 && sharded) keys.push_back({"all_gather", "data", spec.compute});
  return keys;
}

TrainResult train(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step, const TrainControl& control) {
  switch (spec.compute) {
    case Dtype::fp64: return run_with_params<double>(spec, mesh, on_step, control);
    case Dtype::fp32: return run_with_params<float>(spec, mesh, on_step, control);
    case Dtype::bf16: return run_with_params<bf16>(spec, mesh, on_step, control);
    case Dtype::fp16: return run_with_params<fp16>(spec, mesh, on_step, control);
  }
  throw InputError("precision.compute: unknown type");
}

}  // namespace kpmap
