// precision.reproducible against ordinary sums (docs/performance.md), at np 2 on one host:
//   1. training-step time on a bandwidth-bound problem: a data axis of 2 ranks, full-batch steps
//      over an X of --x_mib MiB per rank (several times the last-level cache), fp64 and fp32,
//      the fused kernel; the two modes run interleaved, --repetitions times each, and the ratio
//      of the median step times is the figure;
//   2. psum over `data` of a double View against the reproducible psum, 8 B to 8 MiB, median of
//      --calls calls (after a warm-up), the slowest rank's time.
// Only rank 0 prints.
//
//   OMP_NUM_THREADS=1 mpiexec -n 2 build/default/tests/perf/bench_reproducible
//   [--x_mib=128] [--steps=10] [--repetitions=5] [--features=16,64,256] [--calls=50]
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kpmap/collectives/collectives.hpp"
#include "kpmap/mesh/mpi_env.hpp"
#include "kpmap/model/repro_rows.hpp"
#include "kpmap/train/trainer.hpp"
#include "quantile.hpp"

namespace {

using kpmap_perf::median;

struct Options {
  long long x_mib = 128;
  long long steps = 10;
  int repetitions = 5;
  int calls = 50;
  std::vector<long long> features{16, 64, 256};
};

std::vector<long long> parse_list(const std::string& list) {
  std::vector<long long> v;
  for (std::size_t p = 0; p != std::string::npos;) {
    const std::size_t q = list.find(',', p);
    v.push_back(std::atoll(list.substr(p, q == std::string::npos ? q : q - p).c_str()));
    p = q == std::string::npos ? q : q + 1;
  }
  return v;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* key) { return a.substr(std::strlen(key)); };
    if (a.rfind("--x_mib=", 0) == 0)
      o.x_mib = std::atoll(value("--x_mib=").c_str());
    else if (a.rfind("--steps=", 0) == 0)
      o.steps = std::atoll(value("--steps=").c_str());
    else if (a.rfind("--repetitions=", 0) == 0)
      o.repetitions = std::atoi(value("--repetitions=").c_str());
    else if (a.rfind("--calls=", 0) == 0)
      o.calls = std::atoi(value("--calls=").c_str());
    else if (a.rfind("--features=", 0) == 0)
      o.features = parse_list(value("--features="));
    else {
      std::fprintf(stderr, "bench_reproducible: unknown argument '%s'\n", a.c_str());
      std::exit(2);
    }
  }
  return o;
}

// The slowest rank's seconds.
double slowest(double seconds) {
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return seconds;
}

// Seconds per step of the timed loop (timing.total over the steps; setup excluded).
double step_seconds(const kpmap::TrainSpec& spec, const kpmap::Mesh& mesh) {
  const auto r = kpmap::train(spec, mesh);
  return slowest(r.timers.seconds(kpmap::Phase::total) / static_cast<double>(spec.steps));
}

void steps(const Options& o, const kpmap::Mesh& mesh, bool print) {
  if (print) {
    std::printf(
        "training step, data axis of %d ranks, %lld MiB of X per rank, fused kernel, reproducible row loops: "
        "%s\n",
        mesh.size(), o.x_mib, kpmap::model_detail::repro_rows_isa());
    std::printf("%6s %9s %10s %12s %12s %10s\n", "type", "features", "rows", "ordinary ms", "reprod. ms",
                "ratio");
  }
  for (const kpmap::Dtype type : {kpmap::Dtype::fp64, kpmap::Dtype::fp32}) {
    for (long long F : o.features) {
      kpmap::TrainSpec spec;
      const long long rows =
          o.x_mib * 1024 * 1024 / (static_cast<long long>(kpmap::size_of(type)) * F) * mesh.size();
      spec.problem = {rows, F, /*bias*/ true, /*noise*/ 0.1, /*seed*/ 11};
      spec.batch = rows;  // full batch: every step reads all of X
      spec.steps = o.steps;
      spec.optimizer.lr = 0.1;
      spec.compute = spec.params = spec.comm = type;
      std::vector<double> seconds[2];
      for (int rep = 0; rep < o.repetitions; ++rep) {
        for (int mode = 0; mode < 2; ++mode) {
          spec.reproducible = mode == 1;
          seconds[mode].push_back(step_seconds(spec, mesh));
        }
      }
      const double plain = median(seconds[0]), repro = median(seconds[1]);
      if (print) {
        std::printf("%6s %9lld %10lld %12.3f %12.3f %10.3f\n", kpmap::to_string(type).c_str(), F, rows,
                    1e3 * plain, 1e3 * repro, repro / plain);
      }
    }
  }
}

void psums(const Options& o, const kpmap::Mesh& mesh, bool print) {
  if (print) {
    std::printf("\npsum over data (%d ranks) of a double View, median of %d calls\n", mesh.size(), o.calls);
    std::printf("%10s %12s %12s %10s\n", "bytes", "psum us", "reprod. us", "ratio");
  }
  for (long long bytes = 8; bytes <= 8LL << 20; bytes *= 16) {
    const long long n = bytes / 8;
    kpmap::View1<double> x("x", n), out("out", n);
    Kokkos::deep_copy(x, 1.0 + mesh.rank());
    std::vector<double> seconds[2];
    for (int call = -3; call < o.calls; ++call) {
      for (int mode = 0; mode < 2; ++mode) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        if (mode == 0) {
          kpmap::psum(mesh, "data", x, out);
        } else {
          kpmap::psum(mesh, "data", x, out, kpmap::reproducible);
        }
        const double t = slowest(MPI_Wtime() - t0);
        if (call >= 0) seconds[mode].push_back(t);
      }
    }
    const double plain = median(seconds[0]), repro = median(seconds[1]);
    if (print) std::printf("%10lld %12.2f %12.2f %10.2f\n", bytes, 1e6 * plain, 1e6 * repro, repro / plain);
  }
}

}  // namespace

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const Options o = parse(argc, argv);
    int size = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", size}});
    steps(o, mesh, mesh.rank() == 0);
    psums(o, mesh, mesh.rank() == 0);
  }
  return 0;
}
