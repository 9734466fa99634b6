// The trainer's invariants (DESIGN.md §4): same global problem, same answer on every mesh, with
// any accumulation count and uneven shards; pmean weighted by sample counts.
// The reference for every comparison is the same run on a 1x1 mesh over MPI_COMM_SELF.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <thread>

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
                                           std::make_tuple(Dtype::fp64, GradientKernel::kokkos_kernels),
                                           std::make_tuple(Dtype::fp64, GradientKernel::team),
                                           std::make_tuple(Dtype::fp32, GradientKernel::team)));

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

// timing.comm_wait: the last rank naps after every step, so at every later step the other ranks
// reach the step's reduction first and wait for it there; the napping rank, last to arrive,
// waits for nobody.
TEST(Trainer, CommWaitIsTheTimeSpentWaitingForTheLastRank) {
  TrainSpec spec = small_spec(Dtype::fp64);
  spec.steps = 5;
  const int n = world_size();
  const Mesh mesh(MPI_COMM_WORLD, {{"data", n}});
  const int napper = n - 1;
  const double nap = 0.03;  // seconds
  const auto r = kpmap::train(spec, mesh, [&](long long, double) {
    if (mesh.rank() == napper) std::this_thread::sleep_for(std::chrono::duration<double>(nap));
  });
  const double wait = r.timers.seconds(kpmap::Phase::comm_wait), comm = r.timers.seconds(kpmap::Phase::comm);
  EXPECT_GE(wait, 0.0);
  EXPECT_LE(wait, comm + 1e-9);
  if (n == 1) {
    EXPECT_EQ(wait, 0.0);
    return;
  }
  // Steps 2 to 5 each start after a nap (the nap after step 5 delays no reduction).
  if (mesh.rank() != napper) {
    EXPECT_GE(wait, 0.75 * 4 * nap) << "rank " << mesh.rank();
  } else {
    EXPECT_LT(wait, 0.25 * 4 * nap);
  }
}

}  // namespace

namespace {

// The step's collectives, as the trainer records them, against docs/train.md worked out by hand:
// with F = 12 features over M model ranks and a global batch of 64 over D data ranks, in
// accumulation 2: per micro-batch one psum over model of its 32 / D rows (fp64 partial
// products), per step one psum over data of the F / M + 1 gradient sums, the loss and the count.
// The keys are step_collective_keys', in the same order (what a comm.model must cover), also for
// ZeRO, a bf16 wire and a dynamic loss scale, and for reproducible sums.
TEST(Trainer, RecordsTheCollectivesOfAStep) {
  using kpmap::CollectiveKey;
  using kpmap::Dtype;
  for (const auto& axes : kpmap::test::meshes()) {
    const kpmap::Mesh mesh(MPI_COMM_WORLD, axes);
    const int D = axes[0].size, M = axes[1].size;
    auto spec = kpmap::test::small_spec(Dtype::fp64);
    spec.steps = 3;
    spec.accumulation = 2;
    const auto r = kpmap::train(spec, mesh);
    std::vector<kpmap::StepCollective> want;
    if (M > 1) want.push_back({{"psum", "model", Dtype::fp64}, 8 * (32 / D), 2.0});
    if (D > 1) want.push_back({{"psum", "data", Dtype::fp64}, 8 * (12 / M + 3), 1.0});
    // With a model axis the ranks hold different reduced sums: the finite check's flag, a float
    // pmin over the whole mesh, every step.
    if (M > 1) want.push_back({{"pmin", "(data, model)", Dtype::fp32}, 4, 1.0});
    ASSERT_EQ(r.collectives.size(), want.size()) << kpmap::test::name(axes);
    std::vector<CollectiveKey> keys;
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(r.collectives[i].key, want[i].key) << kpmap::test::name(axes) << " " << i;
      EXPECT_EQ(r.collectives[i].bytes, want[i].bytes) << kpmap::test::name(axes) << " " << i;
      EXPECT_EQ(r.collectives[i].calls_per_step, want[i].calls_per_step) << kpmap::test::name(axes) << " " << i;
      keys.push_back(r.collectives[i].key);
    }
    EXPECT_EQ(keys, kpmap::step_collective_keys(spec, axes)) << kpmap::test::name(axes);

    auto zero = kpmap::test::small_spec(Dtype::bf16);
    zero.params = Dtype::fp32;
    zero.steps = 2;
    zero.comm_spec.strategy = kpmap::CommStrategy::reduce_scatter;
    zero.loss_scale.kind = kpmap::LossScaleSpec::Kind::dynamic;
    zero.loss_scale.scale = 1024;
    std::vector<CollectiveKey> made;
    for (const auto& c : kpmap::train(zero, mesh).collectives) made.push_back(c.key);
    EXPECT_EQ(made, kpmap::step_collective_keys(zero, axes)) << "zero, bf16, dynamic " << kpmap::test::name(axes);

    auto exact = kpmap::test::small_spec(Dtype::fp32);
    exact.steps = 2;
    exact.reproducible = true;
    made.clear();
    for (const auto& c : kpmap::train(exact, mesh).collectives) made.push_back(c.key);
    EXPECT_EQ(made, kpmap::step_collective_keys(exact, axes)) << "reproducible " << kpmap::test::name(axes);
  }
}

}  // namespace
