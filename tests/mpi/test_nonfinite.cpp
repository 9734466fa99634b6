// A non-finite loss or gradient without dynamic loss scaling stops the run on every rank at that
// step, before its update, naming the lowest rank that saw it (docs/reliability.md). Expected
// values come from the injected step and rank, and from a clean run of the same spec.
#include <gtest/gtest.h>

#include <cmath>

#include "train_common.hpp"

namespace {

using kpmap::CommStrategy;
using kpmap::Dtype;
using kpmap::LossScaleSpec;
using kpmap::Mesh;
using kpmap::TrainResult;
using kpmap::TrainSpec;
using kpmap::test::meshes;
using kpmap::test::name;
using kpmap::test::small_spec;
using kpmap::test::world_size;

// The stopped run equals the clean run up to the step before the stop, bit for bit, and its
// weights are those the clean run had after that step (the stopped step's update is not applied).
void expect_stopped_at(const TrainResult& r, const TrainSpec& spec, const Mesh& mesh, long long step,
                       int rank, const std::string& what) {
  EXPECT_EQ(r.stopped.step, step) << what;
  EXPECT_EQ(r.stopped.rank, rank) << what;
  EXPECT_TRUE(r.stopped.in_own) << what;
  ASSERT_EQ(r.history.size(), static_cast<size_t>(step - 1)) << what;
  TrainSpec before = spec;
  before.inject_step = 0;
  before.steps = step - 1;
  const TrainResult clean = kpmap::train(before, mesh);
  for (size_t i = 0; i < r.history.size(); ++i) {
    EXPECT_EQ(r.history[i].loss, clean.history[i].loss) << what << ", step " << i + 1;
  }
  EXPECT_EQ(r.final_loss, clean.final_loss) << what;
  EXPECT_EQ(r.weights, clean.weights) << what;
  EXPECT_EQ(r.bias, clean.bias) << what;
}

// An Inf in the last rank's gradient at step 5 stops every rank at step 5 and names that rank, on
// every mesh (N x 1, 1 x N, 2 x 2), for both strategies and with buckets and overlap.
TEST(NonFinite, InjectedInfStopsEveryRankNamingStepAndRank) {
  for (const auto& axes : meshes()) {
    const Mesh mesh(MPI_COMM_WORLD, axes);
    for (CommStrategy strategy : {CommStrategy::allreduce, CommStrategy::reduce_scatter}) {
      for (bool overlap : {false, true}) {
        TrainSpec spec = small_spec(Dtype::fp64);
        spec.comm_spec.strategy = strategy;
        spec.comm_spec.overlap = overlap;
        spec.comm_spec.bucket_bytes = overlap ? 40 : 0;
        spec.inject_step = 5;
        spec.inject_rank = world_size() - 1;
        const std::string what = name(axes) +
                                 (strategy == CommStrategy::allreduce ? " allreduce" : " reduce_scatter") +
                                 (overlap ? " overlap" : "");
        expect_stopped_at(kpmap::train(spec, mesh), spec, mesh, 5, world_size() - 1, what);
      }
    }
  }
}

// The injected rank is named whichever it is; with an Inf at step 1 the history is empty.
TEST(NonFinite, NamesTheInjectedRankAtStepOne) {
  const Mesh mesh(MPI_COMM_WORLD, meshes().back());
  for (int rank = 0; rank < world_size(); ++rank) {
    TrainSpec spec = small_spec(Dtype::fp32);
    spec.inject_step = 1;
    spec.inject_rank = rank;
    const TrainResult r = kpmap::train(spec, mesh);
    EXPECT_EQ(r.stopped.step, 1) << "rank " << rank;
    EXPECT_EQ(r.stopped.rank, rank);
    EXPECT_TRUE(r.history.empty());
    EXPECT_TRUE(std::isnan(r.final_loss));
  }
}

// A learning rate far past stability (the Hessian's largest eigenvalue of this problem is about
// 2 (F + 1) / 3 with X uniform in [-1, 1]: lr 50 is ~100x too large) makes the loss grow by a
// large factor every step until it overflows: the run stops at the first non-finite step, every
// loss before it is finite, and a rank is named (its own loss sum overflowed, or in fp64 the finite
// sums of several ranks overflowed in their reduction).
TEST(NonFinite, DivergingLearningRateStopsAtTheFirstNonFiniteStep) {
  for (Dtype dtype : {Dtype::fp32, Dtype::fp64}) {
    TrainSpec spec = small_spec(dtype);
    spec.optimizer.lr = 50;
    spec.steps = 400;
    const Mesh mesh(MPI_COMM_WORLD, meshes().front());
    const TrainResult r = kpmap::train(spec, mesh);
    ASSERT_GT(r.stopped.step, 1) << to_string(dtype);
    EXPECT_LT(r.stopped.step, spec.steps) << to_string(dtype);
    EXPECT_GE(r.stopped.rank, 0) << to_string(dtype);
    EXPECT_LT(r.stopped.rank, world_size()) << to_string(dtype);
    ASSERT_EQ(r.history.size(), static_cast<size_t>(r.stopped.step - 1));
    for (const auto& h : r.history)
      EXPECT_TRUE(std::isfinite(h.loss)) << to_string(dtype) << ", step " << h.step;
    EXPECT_GT(r.history.back().loss, 1e20 * r.history.front().loss) << to_string(dtype);  // it did diverge
  }
}

// Finite sums whose cast to the wire overflows: no rank's own sums are non-finite, the reduced
// statistics are, and the lowest rank (every rank holds an Inf) is named, in_own false.
TEST(NonFinite, OverflowOnTheWireIsNamedAsTheReducedSums) {
  TrainSpec spec = small_spec(Dtype::fp32);
  spec.comm = Dtype::fp16;
  spec.loss_scale = {LossScaleSpec::Kind::fixed, /*scale*/ 1e9};
  const Mesh mesh(MPI_COMM_WORLD, meshes().back());
  const TrainResult r = kpmap::train(spec, mesh);
  EXPECT_EQ(r.stopped.step, 1);
  EXPECT_EQ(r.stopped.rank, 0);
  EXPECT_FALSE(r.stopped.in_own);
  EXPECT_TRUE(r.history.empty());
}

// Under dynamic loss scaling the same Inf skips the step instead (docs/precision.md).
TEST(NonFinite, DynamicLossScalingSkipsInsteadOfStopping) {
  TrainSpec spec = small_spec(Dtype::fp32);
  spec.loss_scale = {LossScaleSpec::Kind::dynamic, /*scale*/ 8.0};
  spec.inject_step = 4;
  spec.inject_rank = world_size() - 1;
  const Mesh mesh(MPI_COMM_WORLD, meshes().back());
  const TrainResult r = kpmap::train(spec, mesh);
  EXPECT_EQ(r.stopped.step, 0);
  ASSERT_EQ(r.history.size(), static_cast<size_t>(spec.steps));
  for (const auto& h : r.history) EXPECT_EQ(h.skipped, h.step == 4) << "step " << h.step;
}

}  // namespace
