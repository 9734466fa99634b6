// The trainer's invariants (DESIGN.md §4): same global problem, same answer on every mesh, with
// any accumulation count and uneven shards; pmean weighted by sample counts.
// The reference for every comparison is the same run on a 1x1 mesh over MPI_COMM_SELF.
#include <gtest/gtest.h>

#include <cmath>

#include "kpmap/train/trainer.hpp"
#include "support/world.hpp"

namespace {

using kpmap::test::world_size;

using kpmap::Dtype;
using kpmap::GradientKernel;
using kpmap::Mesh;
using kpmap::TrainSpec;

TrainSpec small_spec(Dtype dtype) {
  TrainSpec s;
  s.problem = {/*samples*/ 512, /*features*/ 12, /*bias*/ true, /*noise*/ 0.1, /*seed*/ 7};
  s.steps = 12;
  s.batch = 64;
  s.kernel = GradientKernel::fused;
  s.optimizer.name = "sgd";
  s.optimizer.lr = 0.2;
  s.compute = dtype;
  return s;
}

kpmap::TrainResult reference(const TrainSpec& spec) {
  const Mesh self(MPI_COMM_SELF, {{"data", 1}});
  return kpmap::train(spec, self);
}

void expect_same_history(const kpmap::TrainResult& got, const kpmap::TrainResult& want, double rtol,
                         const std::string& what) {
  ASSERT_EQ(got.history.size(), want.history.size()) << what;
  for (size_t i = 0; i < got.history.size(); ++i) {
    EXPECT_EQ(got.history[i].step, want.history[i].step) << what;
    EXPECT_NEAR(got.history[i].loss, want.history[i].loss, rtol * std::abs(want.history[i].loss))
        << what << ", step " << want.history[i].step;
  }
  for (size_t j = 0; j < want.weights.size(); ++j) {
    EXPECT_NEAR(got.weights[j], want.weights[j], 1e3 * rtol * (1 + std::abs(want.weights[j]))) << what << ", w" << j;
  }
  EXPECT_NEAR(got.bias, want.bias, 1e3 * rtol * (1 + std::abs(want.bias))) << what;
}

// Every mesh of (data, model) that covers the ranks: N x 1, 1 x N and, at 4 ranks, 2 x 2.
std::vector<std::vector<kpmap::MeshAxis>> meshes() {
  const int n = world_size();
  std::vector<std::vector<kpmap::MeshAxis>> m{{{"data", n}, {"model", 1}}};
  if (n > 1) m.push_back({{"data", 1}, {"model", n}});
  if (n == 4) m.push_back({{"data", 2}, {"model", 2}});
  return m;
}

std::string name(const std::vector<kpmap::MeshAxis>& axes) {
  return std::to_string(axes[0].size) + "x" + std::to_string(axes[1].size);
}

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
