// No allocation in a training run's steady state: no Kokkos memory (Kokkos Tools' allocation
// callback) after the first step, for every strategy, kernel, type mix, bucketing, overlap,
// accumulation and mesh the ranks allow.
#include <string>
#include <vector>

#include "support/count_kokkos_allocations.hpp"
#include "train_common.hpp"

namespace {

using kpmap::test::CountKokkosAllocations;
using kpmap::test::kokkos_allocations;

// Kokkos allocations per step of a training run: none after the first step.
struct Case {
  std::string what;
  kpmap::Dtype compute, params, comm;
  const char* optimizer;
  kpmap::CommStrategy strategy;
  kpmap::GradientKernel kernel;
  long long bucket_bytes;
  bool overlap;
  long long accumulation;
  bool reproducible;
};

TEST(SteadyState, TrainingStepsAllocateNothingAfterTheFirst) {
  using D = kpmap::Dtype;
  using S = kpmap::CommStrategy;
  using K = kpmap::GradientKernel;
  const std::vector<Case> cases = {
      {"fp64 sgd allreduce fused", D::fp64, D::fp64, D::fp64, "sgd", S::allreduce, K::fused, 0, false, 1,
       false},
      {"fp32 momentum kokkos_kernels accumulation 2", D::fp32, D::fp32, D::fp32, "momentum", S::allreduce,
       K::kokkos_kernels, 0, false, 2, false},
      {"bf16/fp32/bf16 adam reduce_scatter", D::bf16, D::fp32, D::bf16, "adam", S::reduce_scatter, K::fused,
       0, false, 1, false},
      {"fp32 adam allreduce buckets overlap, the backend's default kernel", D::fp32, D::fp32, D::fp32, "adam",
       S::allreduce, kpmap::default_gradient_kernel(), 24, true, 1, false},
      {"fp16 dynamic scaling", D::fp16, D::fp32, D::fp16, "sgd", S::allreduce, K::fused, 0, false, 1, false},
      {"fp64 reproducible", D::fp64, D::fp64, D::fp64, "sgd", S::allreduce, K::fused, 0, false, 1, true},
  };
  for (const auto& axes : kpmap::test::meshes()) {
    const kpmap::Mesh mesh(MPI_COMM_WORLD, axes);
    for (const Case& c : cases) {
      kpmap::TrainSpec spec;
      spec.problem = {/*samples*/ 256, /*features*/ 12, /*bias*/ true, /*noise*/ 0.1, /*seed*/ 7};
      spec.steps = 6;
      spec.batch = 64;
      spec.accumulation = c.accumulation;
      spec.kernel = c.kernel;
      spec.optimizer.name = c.optimizer;
      spec.optimizer.lr = 0.05;
      spec.compute = c.compute;
      spec.params = c.params;
      spec.comm = c.comm;
      spec.comm_spec = {c.strategy, c.bucket_bytes, c.overlap};
      spec.reproducible = c.reproducible;
      if (c.compute == D::fp16) {
        spec.loss_scale.kind = kpmap::LossScaleSpec::Kind::dynamic;
        spec.loss_scale.scale = 1024;
        spec.loss_scale.growth_interval = 2;  // the scale changes during the run
      }
      std::vector<long> after_step;
      CountKokkosAllocations counting;
      kpmap::train(spec, mesh, [&](long long, double) { after_step.push_back(kokkos_allocations); });
      const std::string what = c.what + " on " + kpmap::test::name(axes);
      ASSERT_EQ(after_step.size(), 6u) << what;
      EXPECT_GT(after_step.front(), 0) << what << ": the counter sees the run's own allocations";
      EXPECT_EQ(after_step.back(), after_step.front())
          << what << ": Kokkos allocations in steps 2 to 6: "
          << kpmap::test::allocation_labels(after_step.front(), after_step.back());
    }
  }
}

}  // namespace
