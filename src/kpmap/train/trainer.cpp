#include "kpmap/train/trainer.hpp"

#include <cmath>
#include <memory>

#include "kpmap/core/error.hpp"
#include "kpmap/data/shard.hpp"
#include "kpmap/train/step_comm.hpp"

namespace kpmap {

namespace {

using HostVector = Kokkos::View<double*, Kokkos::HostSpace>;

// The whole state of a run in one place: data shard, parameters [w, b], the step's statistics
// buffer [grad sums..., loss_sum, count] (its head is the gradient), optimizer, step counter.
// The data position is a function of the step (BatchPlan::batch_of_step).
template <class T, class Layout>
struct RunState {
  Shard<T, Layout> shard;
  long long features_local = 0;
  long long n_params = 0;  // features_local (+ 1 with bias)
  View1<T> params;
  View1<T> stats;  // n_params + 2
  View1<T> z;      // partial products of one micro-batch (model-parallel only)
  std::unique_ptr<Optimizer<T>> optimizer;
  long long step = 0;

  auto grads() const { return Kokkos::subview(stats, Kokkos::make_pair(0LL, n_params)); }
};

template <class T, class Layout>
RunState<T, Layout> make_state(const TrainSpec& spec, const StepComm<T>& comm) {
  const SyntheticProblem& problem = spec.problem;
  const execution_space exec;
  RunState<T, Layout> s;
  const Range cols = column_range(problem.features, comm.model_index(), comm.model_size());
  s.shard = make_shard<T, Layout>(exec, problem,
                                  make_batch_plan(problem.samples, spec.batch, comm.data_index(),
                                                  comm.data_size()),
                                  cols);
  s.features_local = cols.size();
  s.n_params = s.features_local + (problem.bias ? 1 : 0);
  s.params = View1<T>("kpmap::train::params", s.n_params);  // w = 0, b = 0
  s.stats = View1<T>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::stats"), s.n_params + 2);
  const long long micro_rows = s.shard.rows_per_batch() / spec.accumulation +
                               (s.shard.rows_per_batch() % spec.accumulation ? 1 : 0);
  if (comm.model_size() > 1) {
    s.z = View1<T>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::train::z"), micro_rows);
  }
  s.optimizer = make_optimizer<T>(spec.optimizer, s.n_params);
  return s;
}

// Local sums over this rank's slice of the step's batch, micro-batch by micro-batch; the
// partial products of each micro-batch are summed over `model` first when features are split.
template <class T, class Layout>
double local_sums(RunState<T, Layout>& s, LinearModel<T>& model, StepComm<T>& comm, long long accumulation,
                  Timers& timers) {
  const execution_space exec;
  const auto [w, b] = split_params(s.params, s.features_local);
  const auto [gw, gb] = split_params(s.grads(), s.features_local);
  const long long k = s.shard.plan.batch_of_step(s.step);
  const Range rows = s.shard.batch_rows(k);
  double loss_sum = 0;
  for (long long j = 0; j < accumulation; ++j) {
    const Range part = block_range(rows.size(), j, accumulation);
    const auto X = s.shard.sub_x(rows.begin + part.begin, part.size());
    const auto y = s.shard.sub_y(rows.begin + part.begin, part.size());
    if (comm.model_size() == 1) {
      ScopedPhase phase(timers, Phase::compute, "gradient", exec);
      loss_sum += model.fused(exec, X, y, w, b, gw, gb);
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
    ScopedPhase phase(timers, Phase::compute, "backward", exec);
    loss_sum += model.backward(exec, X, z, y, gw, gb);
  }
  return loss_sum;
}

// One step: returns the global batch's mean squared error before the update.
template <class T, class Layout>
double step(RunState<T, Layout>& s, LinearModel<T>& model, StepComm<T>& comm, long long accumulation,
            Timers& timers) {
  const execution_space exec;
  Kokkos::deep_copy(exec, s.stats, T(0));
  const double loss_sum = local_sums(s, model, comm, accumulation, timers);
  const auto rows = static_cast<double>(s.shard.rows_per_batch());
  const auto tail = Kokkos::subview(s.stats, Kokkos::make_pair(s.n_params, s.n_params + 2));
  Kokkos::View<T[2], Kokkos::HostSpace> host_tail("kpmap::train::tail");
  host_tail(0) = static_cast<T>(loss_sum);
  host_tail(1) = static_cast<T>(rows);
  Kokkos::deep_copy(exec, tail, host_tail);
  {
    ScopedPhase phase(timers, Phase::comm, "pmean_data", exec);
    comm.average(s.stats);
  }
  Kokkos::deep_copy(exec, host_tail, tail);
  exec.fence();
  const T count = host_tail(1);
  const double loss = static_cast<double>(host_tail(0)) / static_cast<double>(count);
  {
    ScopedPhase phase(timers, Phase::optimizer, "optimizer", exec);
    const auto g = s.grads();
    Kokkos::parallel_for(
        "kpmap::train::normalise", Kokkos::RangePolicy<execution_space>(exec, 0, s.n_params),
        KOKKOS_LAMBDA(long long i) { g(i) /= count; });
    s.optimizer->apply(exec, s.step, s.params, View1<const T>(g));
  }
  ++s.step;
  return loss;
}

// The learned [w, b] over all features on every rank, and its distance to [w*, b*].
template <class T, class Layout>
void finish(const RunState<T, Layout>& s, const Mesh& mesh, const StepComm<T>& comm,
            const SyntheticProblem& problem, TrainResult& r) {
  auto local = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), s.params);
  HostVector full("kpmap::train::weights", problem.features + 1);  // zero outside my columns
  const Range cols = s.shard.columns;
  for (long long j = 0; j < s.features_local; ++j) full(cols.begin + j) = static_cast<double>(local(j));
  if (problem.bias && comm.model_index() == 0) full(problem.features) = static_cast<double>(local(s.features_local));
  if (comm.model_size() > 1) psum(mesh, "model", full, full);
  r.weights.assign(full.data(), full.data() + problem.features);
  r.bias = full(problem.features);
  const auto w_true = true_weights(problem, 0, problem.features);
  const double b_true = true_bias(problem);
  double diff = (r.bias - b_true) * (r.bias - b_true), norm = b_true * b_true;
  for (long long j = 0; j < problem.features; ++j) {
    diff += (r.weights[j] - w_true[j]) * (r.weights[j] - w_true[j]);
    norm += w_true[j] * w_true[j];
  }
  r.weights_rel_error = std::sqrt(diff / norm);
}

template <class T, class Layout>
TrainResult run(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step) {
  TrainResult r;
  StepComm<T> comm(mesh);
  RunState<T, Layout> s = make_state<T, Layout>(spec, comm);
  LinearModel<T> model(spec.kernel);
  const double start = MPI_Wtime();
  std::size_t bytes = 0;
  while (s.step < spec.steps) {
    const double loss = step(s, model, comm, spec.accumulation, r.timers);
    bytes += comm.take_bytes();
    r.history.push_back({s.step, loss});
    if (on_step) on_step(s.step, loss);
  }
  r.timers.add(Phase::total, MPI_Wtime() - start);
  r.final_loss = r.history.back().loss;
  r.comm_bytes_per_step = bytes / static_cast<std::size_t>(spec.steps);
  r.param_bytes = s.params.span() * sizeof(T);
  r.gradient_bytes = static_cast<std::size_t>(s.n_params) * sizeof(T);
  r.optimizer_bytes = s.optimizer->state_bytes();
  r.data_bytes = s.shard.bytes();
  finish(s, mesh, comm, spec.problem, r);
  return r;
}

template <class T>
TrainResult run_with_kernel(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step) {
  if (spec.kernel == GradientKernel::fused) {
    return run<T, preferred_layout_t<GradientKernel::fused>>(spec, mesh, on_step);
  }
  return run<T, preferred_layout_t<GradientKernel::kokkos_kernels>>(spec, mesh, on_step);
}

}  // namespace

TrainResult train(const TrainSpec& spec, const Mesh& mesh, const StepCallback& on_step) {
  if (spec.compute == Dtype::fp64) return run_with_kernel<double>(spec, mesh, on_step);
  if (spec.compute == Dtype::fp32) return run_with_kernel<float>(spec, mesh, on_step);
  throw InputError("precision.compute: only fp64 and fp32 are available for training yet");
}

}  // namespace kpmap
