// kpmap::psum (through an Axis handle, and in "paired" also through the axis name) against a
// raw MPI_Allreduce on the same contiguous host buffer of floats, 8 B to 64 MiB. Every rank runs
// the same fixed iteration count per size, so all stay in lockstep; an iteration's time is the
// maximum over ranks (MPI_Allreduce MAX of each rank's MPI_Wtime span), and only rank 0 reports.
// Sizes alternate between the two variants so drift hits both alike; "paired/<bytes>"
// interleaves the calls within one loop and reports the overhead directly.
//   OMP_NUM_THREADS=1 mpiexec -n 2 bench_psum --benchmark_repetitions=9
//       --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <vector>
#include <cstdint>
#include <string>

#include "kpmap/collectives.hpp"

namespace {

const kpmap::Mesh* mesh = nullptr;
const kpmap::AxisNames axis("i");
const kpmap::AxisNames self;  // (): this rank alone

using Buffer = Kokkos::View<float*, Kokkos::HostSpace>;

// Runs one iteration per benchmark iteration and reports the slowest rank's time.
template <class F>
void timed(benchmark::State& state, std::int64_t bytes, F&& f) {
  for (auto _ : state) {
    const double start = MPI_Wtime();
    f();
    double elapsed = MPI_Wtime() - start;
    MPI_Allreduce(MPI_IN_PLACE, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    state.SetIterationTime(elapsed);
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

void mpi_allreduce(benchmark::State& state, std::int64_t bytes) {
  const auto count = bytes / static_cast<std::int64_t>(sizeof(float));
  Buffer in("in", count), out("out", count);
  Kokkos::deep_copy(in, 1.0f);
  const MPI_Comm comm = mesh->comm(axis);
  timed(state, bytes, [&] {
    MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
  });
}

void kpmap_psum(benchmark::State& state, std::int64_t bytes) {
  const auto count = bytes / static_cast<std::int64_t>(sizeof(float));
  Buffer in("in", count), out("out", count);
  Kokkos::deep_copy(in, 1.0f);
  const kpmap::Axis handle = mesh->axis(axis);
  timed(state, bytes, [&] { kpmap::psum(handle, in, out); });
}

// The overhead itself: each iteration calls MPI_Allreduce, kpmap's psum through an Axis handle
// (resolved once) and psum through the axis name, in an order that rotates every iteration, on
// the same buffers, so drift and interference from other processes hit all three alike. Reports
// the mean time of each (the maximum over ranks of the per-rank means) and kpmap's overhead over
// MPI in microseconds and percent, for the handle and for the name.
// psum through a handle as its own function, never inlined into the loop, so that callgrind
// reports its cost whatever the compiler inlines below it (tests/perf/psum_instructions.py).
[[gnu::noinline]] void psum_handle(const kpmap::Axis& handle, const Buffer& in, const Buffer& out) {
  kpmap::psum(handle, in, out);
}

// "paired_self/<bytes>" does the same over the empty tuple (), a group of one rank: MPI copies
// locally and no rank waits for another, so the wrapper's own cost shows without the other
// rank's scheduling noise (on a loaded machine the cross-rank rows vary by microseconds).
void paired(benchmark::State& state, std::int64_t bytes, const kpmap::AxisNames& axis) {
  const auto count = bytes / static_cast<std::int64_t>(sizeof(float));
  Buffer in("in", count), out("out", count);
  Kokkos::deep_copy(in, 1.0f);
  const kpmap::Axis handle = mesh->axis(axis);
  const MPI_Comm comm = handle.comm();
  auto call = [&](int variant) {
    const double start = MPI_Wtime();
    if (variant == 0) {
      MPI_Allreduce(in.data(), out.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, comm);
    } else if (variant == 1) {
      psum_handle(handle, in, out);
    } else {
      kpmap::psum(*mesh, axis, in, out);
    }
    return MPI_Wtime() - start;
  };
  double t[3] = {0, 0, 0};  // raw MPI, kpmap with the handle, kpmap with the name
  int first = 0;
  for (auto _ : state) {
    for (int j = 0; j < 3; ++j) t[(first + j) % 3] += call((first + j) % 3);
    first = (first + 1) % 3;
  }
  MPI_Allreduce(MPI_IN_PLACE, t, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  const double n = static_cast<double>(state.iterations());
  state.counters["mpi_us"] = 1e6 * t[0] / n;
  state.counters["kpmap_us"] = 1e6 * t[1] / n;
  state.counters["overhead_us"] = 1e6 * (t[1] - t[0]) / n;
  state.counters["overhead_pct"] = 100.0 * (t[1] - t[0]) / t[0];
  state.counters["name_us"] = 1e6 * t[2] / n;
  state.counters["name_overhead_us"] = 1e6 * (t[2] - t[0]) / n;
}

// Enough iterations for ~0.2 s at the expected speed, fixed per size so every rank agrees.
std::int64_t iterations(std::int64_t bytes) {
  if (bytes <= 64 * 1024) return 2000;
  if (bytes <= 1024 * 1024) return 500;
  if (bytes <= 4 * 1024 * 1024) return 100;
  return 10;
}

// The fastest repetition: the least disturbed by other processes on a shared machine.
double fastest(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }

void register_all() {
  std::vector<std::int64_t> sizes{8};
  for (std::int64_t b = 16; b <= 64LL * 1024 * 1024; b *= 4) sizes.push_back(b);  // powers of 4
  for (std::int64_t b : sizes) {
    const std::string suffix = "/" + std::to_string(b);
    benchmark::RegisterBenchmark(("MPI_Allreduce" + suffix).c_str(), mpi_allreduce, b)
        ->UseManualTime()->Iterations(iterations(b))->Unit(benchmark::kMicrosecond)
        ->ComputeStatistics("min", fastest);
    benchmark::RegisterBenchmark(("kpmap_psum" + suffix).c_str(), kpmap_psum, b)
        ->UseManualTime()->Iterations(iterations(b))->Unit(benchmark::kMicrosecond)
        ->ComputeStatistics("min", fastest);
    benchmark::RegisterBenchmark(("paired" + suffix).c_str(), paired, b, axis)
        ->Iterations(iterations(b))->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("paired_self" + suffix).c_str(), paired, b, self)
        ->Iterations(iterations(b))->Unit(benchmark::kMicrosecond);
  }
}

class NullReporter : public benchmark::BenchmarkReporter {
 public:
  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>&) override {}
};

}  // namespace

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const kpmap::Mesh world(MPI_COMM_WORLD, {{"i", -1}});
    mesh = &world;
    benchmark::Initialize(&argc, argv);
    register_all();
    if (rank == 0) {
      benchmark::RunSpecifiedBenchmarks();
    } else {
      NullReporter quiet;
      benchmark::RunSpecifiedBenchmarks(&quiet);
    }
    mesh = nullptr;
  }
  return 0;
}
