// The training step's gradient communication, run on two ranks of one data axis
// (docs/performance.md):
//   1. communication time per step (the report's timing.comm; its part timing.comm_wait, the
//      time a rank waited for the other to reach the step's collectives; and "net", comm less
//      wait) for allreduce against reduce_scatter + all_gather, each with an fp32 and a bf16
//      wire, on a gradient of --features fp32 elements (1 MiB by default);
//   2. step time with comm.overlap on against off (same buckets), on a problem whose
//      communication is a large part of the step (a small local batch);
//   3. the gradient's reduction alone, as the trainer makes it (StepComm: the cast of the loss
//      and count slots, the collective, the finite check of the reduced wire; for reduce_scatter
//      also the all_gather of the updated fp32 parameters and the pmin of the finite flag; the
//      gradient slots are cast to the wire by the gradient kernel's epilogue before, untimed
//      here, and the optimizer unscales the reduced wire as it reads it), the ranks aligned by a
//      barrier before each step's reduction: timing.comm in (1) also holds the time a rank waits
//      for the other to finish its gradient, which on two ranks sharing two cores with the host's
//      other work can exceed the reduction itself. The allreduce rows again "after gradient": each
//      step's reduction after the trainer's gradient pass (the fused kernel) over an X of as many
//      bytes as the rank's X (untimed); (3) otherwise repeats the reduction on buffers still in
//      cache.
//   4. the parts of (3)'s allreduce for each wire, timed one by one: for fp32 the psum of the sums
//      in place; for bf16 the 16-bit psum (with the cast of the loss and count slots); for both
//      the finite check of the reduced wire (the calls StepComm makes for one bucket). And what
//      the cast of the gradient slots costs: as the epilogue of the gradient's last pass
//      (model_detail::add_gradient with WireCast, less add_gradient alone), and as a pass of its
//      own (to_wire of every slot).
// The variants run interleaved, --repetitions times each, so a drift of the host hits them alike;
// each figure is the median over repetitions of the maximum over ranks (in (3), of the median
// over --steps reductions).
//
//   OMP_NUM_THREADS=1 mpiexec -n 2 build/default/tests/perf/bench_comm [--features=262144]
//   [--rows=8] [--steps=20] [--repetitions=7] [--bucket_bytes=262144]
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "kpmap/mesh/mpi_env.hpp"
#include "kpmap/model/epilogue.hpp"
#include "kpmap/model/fused_kernels.hpp"
#include "kpmap/model/linear_model.hpp"
#include "kpmap/train/step_comm.hpp"
#include "kpmap/train/trainer.hpp"
#include "quantile.hpp"

namespace {

using kpmap_perf::median;

struct Options {
  long long features = 262144;  // 1 MiB of fp32 gradient
  long long rows = 8;           // rows per rank and step
  long long steps = 20;
  int repetitions = 7;
  long long bucket_bytes = 262144;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto number = [&](const char* key, auto& out) {
      if (a.rfind(key, 0) != 0) return false;
      out = static_cast<std::remove_reference_t<decltype(out)>>(std::atoll(a.c_str() + std::strlen(key)));
      return true;
    };
    if (!number("--features=", o.features) && !number("--rows=", o.rows) && !number("--steps=", o.steps) &&
        !number("--repetitions=", o.repetitions) && !number("--bucket_bytes=", o.bucket_bytes)) {
      std::fprintf(stderr, "bench_comm: unknown argument '%s'\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

double max_over_ranks(double local) {
  double m = 0;
  MPI_Allreduce(&local, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

struct Variant {
  std::string name;
  kpmap::CommStrategy strategy;
  kpmap::Dtype wire;
  long long bucket_bytes;
  bool overlap;
  bool after_gradient = false;  // table 3: the gradient pass over the rank's X before each reduction
};

struct Sample {
  double comm, wait, step;  // seconds per step, max over ranks; wait: timing.comm_wait
  double net;               // comm - wait: the collectives once every rank was there (max over ranks)
  std::size_t bytes;
  double calls;
};

Sample run(kpmap::TrainSpec spec, const Variant& v, const kpmap::Mesh& mesh) {
  spec.comm = v.wire;
  spec.comm_spec = {v.strategy, v.bucket_bytes, v.overlap};
  const auto r = kpmap::train(spec, mesh);
  const double steps = static_cast<double>(spec.steps);
  const double comm = r.timers.seconds(kpmap::Phase::comm) / steps;
  const double wait = r.timers.seconds(kpmap::Phase::comm_wait) / steps;
  return {max_over_ranks(comm), max_over_ranks(wait), max_over_ranks(r.timers.seconds(kpmap::Phase::total) / steps),
          max_over_ranks(comm - wait), r.comm_bytes_per_step, r.comm_calls_per_step};
}

void table(const char* title, const kpmap::TrainSpec& spec, const std::vector<Variant>& variants, const Options& o,
           const kpmap::Mesh& mesh, bool root) {
  std::vector<std::vector<Sample>> samples(variants.size());
  for (int rep = 0; rep < o.repetitions; ++rep) {
    for (std::size_t v = 0; v < variants.size(); ++v) samples[v].push_back(run(spec, variants[v], mesh));
  }
  if (!root) return;
  std::printf("\n%s\n%-28s %10s %10s %10s %10s %12s %8s %10s %10s %10s\n", title, "variant", "comm ms", "wait ms",
              "net ms", "step ms", "bytes/step", "calls", "comm/ref", "net/ref", "step/ref");
  double ref_comm = 0, ref_net = 0, ref_step = 0;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    std::vector<double> comm, wait, net, step;
    for (const Sample& s : samples[v]) {
      comm.push_back(s.comm), wait.push_back(s.wait), net.push_back(s.net), step.push_back(s.step);
    }
    const double c = median(comm), w = median(wait), n = median(net), t = median(step);
    if (v == 0) ref_comm = c, ref_net = n, ref_step = t;
    std::printf("%-28s %10.3f %10.3f %10.3f %10.3f %12zu %8.1f %10.3f %10.3f %10.3f\n", variants[v].name.c_str(),
                1e3 * c, 1e3 * w, 1e3 * n, 1e3 * t, samples[v][0].bytes, samples[v][0].calls, c / ref_comm,
                n / ref_net, t / ref_step);
  }
}

// The statistics a timed reduction starts from (n gradient sums and the loss sum 1, then the
// rank's row count), handed to the epilogue `then` as the gradient kernel hands them, with the
// ranks aligned by a barrier once they are written.
template <class Then = kpmap::model_detail::NoEpilogue>
void fill_aligned(const kpmap::execution_space& exec, const kpmap::View1<float>& stats, long long n, long long rows,
                  const Then& then = Then()) {
  Kokkos::deep_copy(exec, stats, 1.0f);
  Kokkos::deep_copy(exec, Kokkos::subview(stats, n + 1), static_cast<float>(rows));
  kpmap::model_detail::run_epilogue(exec, 0, n, then);
  exec.fence();
  MPI_Barrier(MPI_COMM_WORLD);
}

// Seconds per reduction of a gradient of n fp32 slots (table 3): the median over `steps`, each the
// maximum over ranks, after one untimed reduction that allocates the wire buffers. An
// `after_gradient` variant runs the trainer's gradient pass (LinearModel::fused, the fused kernel,
// over an X of rows x n fp32 values, as many bytes as the rank's X) before each step, untimed, so
// the reduction starts from the state a training step's gradient pass leaves it in.
double wire_seconds(const kpmap::Mesh& mesh, const Variant& v, long long n, long long rows, long long steps) {
  const kpmap::execution_space exec;
  kpmap::StepComm<float> comm(mesh, v.wire, false, {v.strategy, v.bucket_bytes, v.overlap}, n);
  kpmap::View1<float> stats("bench::stats", n + 2);
  kpmap::View1<float> shard("bench::shard", comm.shard_size()), gathered("bench::gathered", comm.gathered_size());
  // The gradient pass: X = 1, y = 1, w = 0, b = 0, so every residual is -1, the loss sum is rows
  // and every gradient sum is -2 rows (exact in fp32).
  const long long x_rows = v.after_gradient ? rows : 0, x_cols = v.after_gradient ? n : 0;
  const Kokkos::View<float**, Kokkos::LayoutRight, kpmap::device_type> x("bench::x", x_rows, x_cols);
  const kpmap::View1<float> y("bench::y", x_rows), w("bench::w", x_cols), b("bench::b", 1);
  const kpmap::View1<float> gw("bench::gw", x_cols), gb("bench::gb", 1);
  Kokkos::deep_copy(exec, x, 1.0f);
  Kokkos::deep_copy(exec, y, 1.0f);
  kpmap::LinearModel<float> model(kpmap::GradientKernel::fused);
  std::vector<double> times;
  for (long long step = 0; step <= steps; ++step) {
    if (v.after_gradient) {
      Kokkos::deep_copy(exec, gw, 0.0f);
      Kokkos::deep_copy(exec, gb, 0.0f);
      const double loss = model.fused(exec, x, y, w, b, gw, gb);
      float last = 0;
      Kokkos::deep_copy(last, Kokkos::subview(gw, n - 1));
      if (loss != static_cast<double>(x_rows) || last != -2.0f * static_cast<float>(x_rows)) {
        std::fprintf(stderr, "bench_comm: the gradient pass went wrong\n");
      }
    }
    // The gradient slots cast to the wire as the trainer's gradient kernel does, before the timing.
    fill_aligned(exec, stats, n, rows, comm.gradient_cast(exec, stats, rows * mesh.size(), 1.0));
    const double start = MPI_Wtime();
    for (long long k = 0; k < comm.buckets(); ++k) comm.start(exec, stats, k, rows * mesh.size(), 1.0);
    comm.finish(exec);
    comm.check_finite(exec, false, false);  // as the trainer's step without dynamic loss scaling
    if (comm.sharded()) comm.gather_params(exec, shard, gathered);
    exec.fence();
    const double seconds = max_over_ranks(MPI_Wtime() - start);
    if (step > 0) times.push_back(seconds);
  }
  return median(times);
}

void wire_table(const std::vector<Variant>& variants, const Options& o, const kpmap::Mesh& mesh, bool root) {
  std::vector<std::vector<double>> samples(variants.size());
  for (int rep = 0; rep < o.repetitions; ++rep) {
    for (std::size_t v = 0; v < variants.size(); ++v) {
      samples[v].push_back(wire_seconds(mesh, variants[v], o.features, o.rows, o.steps));
    }
  }
  if (!root) return;
  std::printf("\nthe reduction alone (StepComm), ranks aligned; the last rows after a gradient pass over the "
              "rank's X, their ratios to the first of them\n%-28s %12s %10s\n",
              "variant", "ms", "vs ref");
  double ref = 0;
  for (std::size_t v = 0; v < variants.size(); ++v) {
    const double t = median(samples[v]);
    if (v == 0 || (variants[v].after_gradient && !variants[v - 1].after_gradient)) ref = t;
    std::printf("%-28s %12.3f %10.3f\n", variants[v].name.c_str(), 1e3 * t, t / ref);
  }
}

// Table 4: the parts of one allreduce reduction of n + 2 fp32 sums (n = --features), each part
// fenced and timed on its own, the ranks aligned by a barrier before each wire's sequence; each
// figure is the median over --steps x --repetitions of the maximum over ranks. The gradient
// slots are cast to the bf16 wire before its collective, untimed, as in table 3. Then, in a
// sequence of its own, what that cast costs: as the epilogue of the gradient's last pass
// (add_gradient of n sums with WireCast, less add_gradient alone) and as a pass of its own
// (to_wire), in alternate steps, each the first write to the wire since its collective. False
// when a finite check on any rank saw an Inf or NaN (every sum is finite).
bool parts_table(const Options& o, const kpmap::Mesh& mesh, bool root) {
  namespace sd = kpmap::step_comm_detail;
  namespace md = kpmap::model_detail;
  const kpmap::execution_space exec;
  const long long n = o.features, rows = o.rows * mesh.size();
  const kpmap::Axis data = mesh.axis(kpmap::AxisNames("data"));
  kpmap::View1<float> stats("bench::stats", n + 2), sums("bench::sums", n + 2);
  kpmap::View1<kpmap::bf16> wire("bench::wire", n + 2);
  Kokkos::deep_copy(sums, 0.5f);
  const auto grad = Kokkos::subview(stats, Kokkos::make_pair(0LL, n));
  sd::WireLayout layout;  // allreduce, one bucket: the wire is the n + 2 slots in order
  layout.n = n;
  layout.shard = layout.bucket = n + 2;
  const double share = 1.0 / static_cast<double>(rows);
  sd::WireCast<float> cast;  // what StepComm::gradient_cast makes for this wire
  cast.type = kpmap::Dtype::bf16, cast.active = true, cast.stats = stats, cast.layout = layout, cast.factor = share;
  cast.bf16s = wire;
  enum { add, add_cast, bf16_sum, bf16_check, cast_alone, fp32_sum, fp32_check, parts };
  std::vector<double> t[parts];
  double mark = 0;
  int bad = 0;  // this rank's finite checks that saw an Inf or NaN
  const auto lap = [&](int part, bool keep) {
    exec.fence();
    const double now = MPI_Wtime(), seconds = max_over_ranks(now - mark);
    if (keep) t[part].push_back(seconds);
    mark = MPI_Wtime();
  };
  for (int rep = 0; rep < o.repetitions; ++rep) {
    for (long long step = 0; step <= o.steps; ++step) {  // step 0 is not kept
      const bool keep = step > 0;
      // The reduction's parts, the gradient slots cast to the wire first as in table 3.
      fill_aligned(exec, stats, n, o.rows, cast);
      mark = MPI_Wtime();
      sd::to_wire(exec, layout, stats, wire, 0, share, share, share, true);  // StepComm::start
      kpmap::psum(exec, data, wire, wire);
      lap(bf16_sum, keep);
      bad += sd::any_nonfinite(exec, wire);
      lap(bf16_check, keep);
      fill_aligned(exec, stats, n, o.rows);
      mark = MPI_Wtime();
      kpmap::psum(exec, data, stats, stats);
      lap(fp32_sum, keep);
      bad += sd::any_nonfinite(exec, stats);
      lap(fp32_check, keep);
    }
  }
  // The cast of the gradient slots, in a sequence of its own: in the gradient's last pass (even
  // steps) or as a pass of its own (odd steps), each the first write to the wire since its
  // collective (untimed here), as in a training step.
  for (int rep = 0; rep < o.repetitions; ++rep) {
    for (long long step = 0; step <= o.steps; ++step) {
      const bool keep = step > 0;
      kpmap::psum(exec, data, wire, wire);
      fill_aligned(exec, stats, n, o.rows);
      mark = MPI_Wtime();
      md::add_gradient(exec, sums, grad, kpmap::View1<float>(), false);
      lap(add, keep);
      fill_aligned(exec, stats, n, o.rows);
      mark = MPI_Wtime();
      if (step % 2 == 0) {
        md::add_gradient(exec, sums, grad, kpmap::View1<float>(), false, 0, cast);
        lap(add_cast, keep);
      } else {
        sd::to_wire(exec, layout, stats, wire, 0, share, share, share);
        lap(cast_alone, keep);
      }
    }
  }
  const bool failed = max_over_ranks(bad) > 0;
  if (failed && root) std::printf("FAILED: a finite check saw an Inf or NaN in finite sums\n");
  if (!root) return !failed;
  double m[parts];
  for (int k = 0; k < parts; ++k) m[k] = median(t[k]);
  const double fp32 = m[fp32_sum] + m[fp32_check], bf16 = m[bf16_sum] + m[bf16_check];
  std::printf("\nthe allreduce's parts, each timed alone (ms)\n%-8s %12s %10s %10s %10s\n", "wire", "collective",
              "check", "sum", "vs fp32");
  std::printf("%-8s %12.3f %10.3f %10.3f %10.3f\n", "fp32", 1e3 * m[fp32_sum], 1e3 * m[fp32_check], 1e3 * fp32, 1.0);
  std::printf("%-8s %12.3f %10.3f %10.3f %10.3f\n", "bf16", 1e3 * m[bf16_sum], 1e3 * m[bf16_check], 1e3 * bf16,
              bf16 / fp32);
  std::printf("bf16 collective / fp32 collective: %.3f\n", m[bf16_sum] / m[fp32_sum]);
  std::printf("the cast of the gradient slots to bf16 (ms): in the last pass %.3f (add_gradient %.3f, with the cast "
              "%.3f), as a pass of its own %.3f\n",
              1e3 * (m[add_cast] - m[add]), 1e3 * m[add], 1e3 * m[add_cast], 1e3 * m[cast_alone]);
  return !failed;
}

}  // namespace

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  bool ok = true;
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const Options o = parse(argc, argv);
    int ranks = 1, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", ranks}});
    kpmap::TrainSpec spec;
    spec.problem = {o.rows * ranks * 4, o.features, /*bias*/ true, /*noise*/ 0.1, /*seed*/ 5};
    spec.batch = o.rows * ranks;
    spec.steps = o.steps;
    spec.optimizer.lr = 1e-3;
    spec.compute = spec.params = kpmap::Dtype::fp32;
    if (rank == 0) {
      std::printf("bench_comm: %d ranks, %lld features (%.2f MiB fp32 gradient), %lld rows per rank, %lld steps, "
                  "median of %d\n",
                  ranks, o.features, 4.0 * static_cast<double>(o.features) / (1 << 20), o.rows, o.steps,
                  o.repetitions);
    }
    using kpmap::CommStrategy;
    using kpmap::Dtype;
    table("communication per step (timing.comm)", spec,
          {{"allreduce fp32", CommStrategy::allreduce, Dtype::fp32, 0, false},
           {"allreduce bf16", CommStrategy::allreduce, Dtype::bf16, 0, false},
           {"reduce_scatter fp32", CommStrategy::reduce_scatter, Dtype::fp32, 0, false},
           {"reduce_scatter bf16", CommStrategy::reduce_scatter, Dtype::bf16, 0, false}},
          o, mesh, rank == 0);
    const std::string buckets = "buckets " + std::to_string(o.bucket_bytes) + " B";
    table("step time with overlap (allreduce fp32)", spec,
          {{buckets, CommStrategy::allreduce, Dtype::fp32, o.bucket_bytes, false},
           {buckets + ", overlap", CommStrategy::allreduce, Dtype::fp32, o.bucket_bytes, true},
           {"one message", CommStrategy::allreduce, Dtype::fp32, 0, false}},
          o, mesh, rank == 0);
    wire_table({{"allreduce fp32", CommStrategy::allreduce, Dtype::fp32, 0, false},
                {"allreduce bf16", CommStrategy::allreduce, Dtype::bf16, 0, false},
                {"reduce_scatter fp32", CommStrategy::reduce_scatter, Dtype::fp32, 0, false},
                {"reduce_scatter bf16", CommStrategy::reduce_scatter, Dtype::bf16, 0, false},
                {"fp32 after gradient", CommStrategy::allreduce, Dtype::fp32, 0, false, true},
                {"bf16 after gradient", CommStrategy::allreduce, Dtype::bf16, 0, false, true}},
               o, mesh, rank == 0);
    ok = parts_table(o, mesh, rank == 0);
  }
  return ok ? 0 : 1;
}
