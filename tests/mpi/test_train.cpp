// The trainer's invariants (DESIGN.md §4): same global problem, same answer on every mesh, with
// any accumulation count and uneven shards; pmean weighted by sample counts.
// The reference for every comparison is the same run on a 1x1 mesh over MPI_COMM_SELF.
#include <gtest/gtest.h>

#include <cmath>

#include "train_common.hpp"

namespace {

using kpmap::Dtype;
using kpmap::GradientKernel;
using kpmap::Mesh;
using kpmap::TrainSpec;
using kpmap::test::expect_same_history;
using kpmap::test::meshes;
using kpmap::test::name;
using kpmap::test::reference;
using kpmap::test::small_spec;
using kpmap::test::world_size;

class Decomposition : public ::testing::TestWithParam<std::tuple<Dtype, GradientKernel>> {};

TEST_P(Decomposition, LossHistoryMatchesOneRankOnEveryMesh) {
  const auto [dtype, kernel] = GetParam();
  TrainSpec spec = small_spec(dtype);
  spec.kernel = kernel;
  const double rtol = dtype == Dtype::fp64 ? 1e-12 : 1e-5;
  const auto want = reference(spec);
  for (const auto& axes : meshes()) {
    const Mesh mesh(MPI_COMM_WORLD, axes);
    expect_same_history(kpmap::train(spec, mesh), want, rtol, "mesh " + name(axes));
  }
}

INSTANTIATE_TEST_SUITE_P(Trainer, Decomposition,
                         ::testing::Values(std::make_tuple(Dtype::fp64, GradientKernel::fused),
                                           std::make_tuple(Dtype::fp32, GradientKernel::fused),
                                           std::make_tuple(Dtype::fp64, GradientKernel::kokkos_kernels)));

TEST(Trainer, AccumulationGivesTheSameHistory) {
  TrainSpec spec = small_spec(Dtype::fp64);
  spec.steps = 6;
  const auto want = reference(spec);
  const Mesh mesh(MPI_COMM_WORLD, meshes().back());
  for (long long k : {1, 2, 4}) {
    spec.accumulation = k;
    expect_same_history(kpmap::train(spec, mesh), want, 1e-12, "accumulation " + std::to_string(k));
  }
}

TEST(Trainer, UnevenShardsAreExact) {
  TrainSpec spec = small_spec(Dtype::fp64);
  spec.batch = 30;  // 30 rows over 4 data ranks: 7, 8, 7, 8
  spec.steps = 6;
  spec.problem.bias = false;
  const auto want = reference(spec);
  const Mesh mesh(MPI_COMM_WORLD, {{"data", world_size()}});
  expect_same_history(kpmap::train(spec, mesh), want, 1e-12, "batch 30");
}

TEST(Trainer, AdamAndMomentumAreDecompositionIndependent) {
  for (const char* opt : {"adam", "momentum"}) {
    TrainSpec spec = small_spec(Dtype::fp64);
    spec.steps = 6;
    spec.optimizer.name = opt;
    spec.optimizer.lr = 0.05;
    const auto want = reference(spec);
    const Mesh mesh(MPI_COMM_WORLD, meshes().back());
    expect_same_history(kpmap::train(spec, mesh), want, 1e-12, opt);
  }
}

TEST(Trainer, ReportsBytesAndMemoryPerRank) {
  TrainSpec spec = small_spec(Dtype::fp64);
  spec.steps = 2;
  const int n = world_size();
  const Mesh mesh(MPI_COMM_WORLD, {{"data", n}});
  const auto r = kpmap::train(spec, mesh);
  // Parameters: 12 weights + bias in double; one psum over data per step of [grad, loss, count].
  EXPECT_EQ(r.param_bytes, 13 * sizeof(double));
  EXPECT_EQ(r.comm_bytes_per_step, n > 1 ? 15 * sizeof(double) : 0u);
  EXPECT_EQ(r.optimizer_bytes, 0u);
}

}  // namespace
