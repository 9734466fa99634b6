// Training-step time with 16-bit storage against fp32 storage on a bandwidth-bound problem: one
// rank, full-batch steps over an X of --x_mib MiB in fp32 (several times the last-level cache),
// the fused kernel, fp32 master weights. Each repetition runs the two types back to back, fp32
// first in even repetitions and bf16 first in odd ones, so a drift of the host's bandwidth hits
// them alike. Printed: the median step times and their ratio, and the median (and quartiles) of
// the repetitions' own bf16 / fp32 ratios, which pair two runs a few seconds apart
// (docs/performance.md).
//
//   OMP_NUM_THREADS=2 OMP_PROC_BIND=spread OMP_PLACES=threads build/default/tests/perf/bench_step
//   [--x_mib=256] [--steps=10] [--repetitions=5] [--features=64,256]
#include <mpi.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kpmap/mesh/mpi_env.hpp"
#include "kpmap/train/trainer.hpp"
#include "quantile.hpp"

namespace {

using kpmap_perf::quantile;

struct Options {
  long long x_mib = 256;
  long long steps = 10;
  int repetitions = 5;
  std::vector<long long> features{64, 256};
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const auto value = [&](const char* key) { return a.substr(std::strlen(key)); };
    if (a.rfind("--x_mib=", 0) == 0) o.x_mib = std::atoll(value("--x_mib=").c_str());
    else if (a.rfind("--steps=", 0) == 0) o.steps = std::atoll(value("--steps=").c_str());
    else if (a.rfind("--repetitions=", 0) == 0) o.repetitions = std::atoi(value("--repetitions=").c_str());
    else if (a.rfind("--features=", 0) == 0) {
      o.features.clear();
      std::string list = value("--features=");
      for (std::size_t p = 0; p != std::string::npos;) {
        const std::size_t q = list.find(',', p);
        o.features.push_back(std::atoll(list.substr(p, q == std::string::npos ? q : q - p).c_str()));
        p = q == std::string::npos ? q : q + 1;
      }
    } else {
      std::fprintf(stderr, "bench_step: unknown argument '%s'\n", a.c_str());
      std::exit(2);
    }
  }
  const bool widths = std::all_of(o.features.begin(), o.features.end(), [](long long f) { return f > 0; });
  if (o.x_mib < 1 || o.steps < 1 || o.repetitions < 1 || o.features.empty() || !widths) {
    std::fprintf(stderr, "bench_step: --x_mib, --steps, --repetitions and each of --features must be at least 1\n");
    std::exit(2);
  }
  return o;
}

// Seconds per step of the timed loop (the report's timing.total over the steps; setup excluded).
double step_seconds(const kpmap::TrainSpec& spec, const kpmap::Mesh& mesh) {
  const auto r = kpmap::train(spec, mesh);
  return r.timers.seconds(kpmap::Phase::total) / static_cast<double>(spec.steps);
}

}  // namespace

int main(int argc, char** argv) {
  kpmap::MpiEnvironment mpi(argc, argv);  // MPI_Init_thread(FUNNELED), checked
  {
    Kokkos::ScopeGuard kokkos(argc, argv);
    const Options o = parse(argc, argv);
    const kpmap::Mesh mesh(MPI_COMM_SELF, {{"data", 1}});
    const std::vector<kpmap::Dtype> types{kpmap::Dtype::fp32, kpmap::Dtype::bf16};
    std::printf("%9s %10s %12s %12s %12s %20s %10s\n", "features", "rows", "fp32 ms", "bf16 ms", "bf16/fp32",
                "paired (q1, q3)", "bf16 GB/s");
    for (long long F : o.features) {
      kpmap::TrainSpec spec;
      const long long rows = o.x_mib * 1024 * 1024 / (4 * F);
      spec.problem = {rows, F, /*bias*/ true, /*noise*/ 0.1, /*seed*/ 11};
      spec.batch = rows;  // full batch: every step reads all of X
      spec.steps = o.steps;
      spec.optimizer.lr = 0.1;
      spec.params = spec.comm = kpmap::Dtype::fp32;
      std::vector<std::vector<double>> seconds(types.size());
      std::vector<double> ratios;
      for (int rep = 0; rep < o.repetitions; ++rep) {
        for (std::size_t k = 0; k < types.size(); ++k) {
          const std::size_t t = rep % 2 == 0 ? k : types.size() - 1 - k;
          spec.compute = types[t];
          seconds[t].push_back(step_seconds(spec, mesh));
        }
        ratios.push_back(seconds[1].back() / seconds[0].back());
      }
      const double fp32 = quantile(seconds[0], 0.5), bf16 = quantile(seconds[1], 0.5);
      std::printf("%9lld %10lld %12.3f %12.3f %12.3f %6.3f (%.3f, %.3f) %10.2f\n", F, rows, 1e3 * fp32, 1e3 * bf16,
                  bf16 / fp32, quantile(ratios, 0.5), quantile(ratios, 0.25), quantile(ratios, 0.75),
                  2.0 * static_cast<double>(rows * F) / bf16 * 1e-9);
    }
  }
  return 0;
}
