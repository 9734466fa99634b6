// Mixed precision (docs/precision.md): 16-bit storage and compute with fp32 master weights,
// 16-bit gradients on the wire, static and dynamic loss scaling. Expected values come from the
// same problem in fp32/fp64 and from the 1x1 run, never from the run under test.
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "train_common.hpp"

namespace {

using kpmap::Dtype;
using kpmap::GradientKernel;
using kpmap::LossScaleSpec;
using kpmap::Mesh;
using kpmap::TrainResult;
using kpmap::TrainSpec;
using kpmap::test::meshes;
using kpmap::test::name;
using kpmap::test::reference;
using kpmap::test::small_spec;
using kpmap::test::world_size;

TrainSpec with_types(TrainSpec s, Dtype compute, Dtype params, Dtype comm) {
  s.compute = compute;
  s.params = params;
  s.comm = comm;
  return s;
}

// inputs/quickstart.yaml's problem with noise: the size the accuracy bounds are set for.
TrainSpec quickstart_noisy() {
  TrainSpec s;
  s.problem = {/*samples*/ 16384, /*features*/ 64, /*bias*/ true, /*noise*/ 0.5, /*seed*/ 42};
  s.steps = 150;
  s.batch = 256;
  s.optimizer.lr = 0.2;
  return s;
}

Mesh data_mesh() { return Mesh(MPI_COMM_WORLD, {{"data", world_size()}}); }

// Histories agree entry by entry within rtol, and the learned weights within atol.
void expect_close(const TrainResult& got, const TrainResult& want, double rtol, double atol, const std::string& what) {
  ASSERT_EQ(got.history.size(), want.history.size()) << what;
  for (size_t i = 0; i < got.history.size(); ++i) {
    EXPECT_NEAR(got.history[i].loss, want.history[i].loss, rtol * std::abs(want.history[i].loss))
        << what << ", step " << want.history[i].step;
  }
  for (size_t j = 0; j < want.weights.size(); ++j) EXPECT_NEAR(got.weights[j], want.weights[j], atol) << what << ", w" << j;
  EXPECT_NEAR(got.bias, want.bias, atol) << what;
}

TEST(MixedPrecision, SixteenBitComputeReachesTheFp32Answer) {
  const Mesh mesh = data_mesh();
  const TrainSpec base = quickstart_noisy();
  const auto fp32 = kpmap::train(with_types(base, Dtype::fp32, Dtype::fp32, Dtype::fp32), mesh);
  for (auto [half, kernel] : {std::make_pair(Dtype::bf16, GradientKernel::fused),
                               std::make_pair(Dtype::fp16, GradientKernel::fused),
                               std::make_pair(Dtype::bf16, GradientKernel::kokkos_kernels),
                               std::make_pair(Dtype::bf16, GradientKernel::team)}) {
    TrainSpec spec = with_types(base, half, Dtype::fp32, half);
    spec.kernel = kernel;
    const auto r = kpmap::train(spec, mesh);
    const std::string what = kpmap::to_string(half) + ", " + kpmap::to_string(kernel);
    EXPECT_NEAR(r.final_loss, fp32.final_loss, 1e-2 * fp32.final_loss) << what;
    EXPECT_LE(r.weights_rel_error.value(), 2 * fp32.weights_rel_error.value()) << what;
    // Half the bytes of data: the shard is stored in 16 bits.
    EXPECT_EQ(2 * r.data_bytes, fp32.data_bytes) << what;
  }
}

TEST(MixedPrecision, Fp64MasterWeightsUnderFp32Compute) {
  const Mesh mesh = data_mesh();
  TrainSpec spec = small_spec(Dtype::fp64);
  const auto fp64 = kpmap::train(spec, mesh);
  const auto mixed = kpmap::train(with_types(spec, Dtype::fp32, Dtype::fp64, Dtype::fp32), mesh);
  expect_close(mixed, fp64, 1e-5, 1e-5, "fp32 compute, fp64 params");
  // Master weights in fp64 plus the fp32 copy the kernels read.
  EXPECT_EQ(mixed.param_bytes, 13 * (sizeof(double) + sizeof(float)));
}

// Decomposition independence and accumulation with 16-bit data: the same bf16-rounded problem
// on every mesh; the sums differ only in fp32 rounding order, which can move a bf16 working
// weight by one unit (2^-8 relative), hence the looser tolerance (docs/precision.md).
TEST(MixedPrecision, SixteenBitComputeIsDecompositionIndependent) {
  for (Dtype wire : {Dtype::fp32, Dtype::bf16}) {
    const TrainSpec spec = with_types(small_spec(Dtype::fp32), Dtype::bf16, Dtype::fp32, wire);
    const auto want = reference(spec);
    const std::string what = std::string("bf16 compute, ") + kpmap::to_string(wire) + " wire, mesh ";
    for (const auto& axes : meshes()) {
      expect_close(kpmap::train(spec, Mesh(MPI_COMM_WORLD, axes)), want, 2e-2, 2e-2, what + name(axes));
    }
    const Mesh mesh(MPI_COMM_WORLD, meshes().back());
    for (long long k : {2, 4}) {
      TrainSpec acc = spec;
      acc.accumulation = k;
      expect_close(kpmap::train(acc, mesh), want, 2e-2, 2e-2, what + "accumulation " + std::to_string(k));
    }
  }
}

TEST(MixedPrecision, SixteenBitWireMovesHalfTheBytes) {
  const Mesh mesh = data_mesh();
  const TrainSpec spec = small_spec(Dtype::fp32);
  for (Dtype compute : {Dtype::fp32, Dtype::bf16}) {
    const auto fp32 = kpmap::train(with_types(spec, compute, Dtype::fp32, Dtype::fp32), mesh);
    for (Dtype wire : {Dtype::bf16, Dtype::fp16}) {
      const auto r = kpmap::train(with_types(spec, compute, Dtype::fp32, wire), mesh);
      const std::string what = kpmap::to_string(compute) + " compute, " + kpmap::to_string(wire) + " wire";
      // [12 weights, bias, loss, count] per step over `data`; nothing moves on one rank.
      EXPECT_EQ(r.comm_bytes_per_step, world_size() > 1 ? 15 * 2u : 0u) << what;
      EXPECT_EQ(2 * r.comm_bytes_per_step, fp32.comm_bytes_per_step) << what;
      expect_close(r, fp32, 2e-2, 2e-2, what);
    }
  }
}

// Targets of 1e-6 (problem.weight_scale): a gradient's share of the mean is ~1e-7 at the start
// and falls below fp16's smallest subnormal (6e-8) as the fit improves, so an unscaled fp16 wire
// flushes it to zero and training stalls. Dynamic scaling (65536 at the start) keeps it.
TEST(MixedPrecision, DynamicLossScalingRescuesUnderflowingFp16Gradients) {
  const Mesh mesh = data_mesh();
  TrainSpec spec = with_types(quickstart_noisy(), Dtype::fp32, Dtype::fp32, Dtype::fp16);
  spec.problem.noise = 0;
  spec.problem.weight_scale = 1e-6;
  const auto unscaled = kpmap::train(spec, mesh);
  spec.loss_scale.kind = LossScaleSpec::Kind::dynamic;
  spec.loss_scale.scale = 65536;
  const auto scaled = kpmap::train(spec, mesh);
  const double first = unscaled.history.front().loss;
  EXPECT_GT(unscaled.weights_rel_error.value(), 1e-2);
  EXPECT_GT(unscaled.final_loss, 1e-4 * first);  // stalled
  EXPECT_LT(scaled.weights_rel_error.value(), 1e-5);
  EXPECT_LT(scaled.final_loss, 1e-9 * first);  // converged
  for (const auto& h : scaled.history) EXPECT_FALSE(h.skipped) << "step " << h.step;
}

// KPMAP_TEST_INJECT_INF's switch: the last rank's gradient gets an Inf at step 3. Every rank
// skips step 3 (the flag is agreed over the whole mesh), halves the scale, and carries on; after
// growth_interval clean steps the scale doubles.
TEST(MixedPrecision, InjectedInfSkipsTheStepOnEveryRank) {
  TrainSpec spec = with_types(small_spec(Dtype::fp32), Dtype::fp16, Dtype::fp32, Dtype::fp16);
  spec.loss_scale = {LossScaleSpec::Kind::dynamic, /*scale*/ 8.0, /*growth_interval*/ 4, 2.0, 0.5};
  const Mesh mesh(MPI_COMM_WORLD, meshes().back());
  const auto clean = kpmap::train(spec, mesh);
  spec.inject_step = 3;
  spec.inject_rank = world_size() - 1;
  const auto r = kpmap::train(spec, mesh);
  ASSERT_EQ(r.history.size(), 12u);
  const std::vector<double> scales{8, 8, 8, 4, 4, 4, 4, 8, 8, 8, 8, 16};
  for (size_t i = 0; i < r.history.size(); ++i) {
    const auto& h = r.history[i];
    EXPECT_EQ(h.skipped, h.step == 3) << "step " << h.step;
    EXPECT_EQ(h.scale, scales[i]) << "step " << h.step;
    EXPECT_FALSE(clean.history[i].skipped) << "step " << h.step;
    EXPECT_TRUE(std::isfinite(h.loss)) << "step " << h.step;
  }
  // Up to the skipped step the runs agree bit for bit; step 4 starts from step 3's weights.
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(r.history[i].loss, clean.history[i].loss) << "step " << i + 1;
  EXPECT_NE(r.history[3].loss, clean.history[3].loss);
  EXPECT_LT(r.final_loss, 0.1 * r.history.front().loss);  // and it still trains
}

}  // namespace
