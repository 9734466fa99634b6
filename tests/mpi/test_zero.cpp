// ZeRO sharding (comm.strategy reduce_scatter), gradient buckets and overlap (docs/train.md).
// Expected values come from the allreduce run of the same problem on the same mesh, from one
// bucket without overlap, and from closed forms of the shard sizes, never from the run under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "train_common.hpp"

namespace {

using kpmap::CommStrategy;
using kpmap::Dtype;
using kpmap::GradientKernel;
using kpmap::Mesh;
using kpmap::TrainResult;
using kpmap::TrainSpec;
using kpmap::test::meshes;
using kpmap::test::name;
using kpmap::test::small_spec;
using kpmap::test::world_size;

TrainSpec with(TrainSpec s, CommStrategy strategy, long long bucket_bytes = 0, bool overlap = false) {
  s.comm_spec.strategy = strategy;
  s.comm_spec.bucket_bytes = bucket_bytes;
  s.comm_spec.overlap = overlap;
  return s;
}

TrainSpec with_optimizer(TrainSpec s, const std::string& optimizer) {
  s.optimizer.name = optimizer;
  s.optimizer.lr = optimizer == "adam" ? 0.05 : optimizer == "momentum" ? 0.05 : 0.2;
  return s;
}

const char* to_string(CommStrategy s) { return s == CommStrategy::allreduce ? "allreduce" : "reduce_scatter"; }

// Ranks of the mesh's data axis and the parameters of one model slice.
long long data_ranks(const std::vector<kpmap::MeshAxis>& axes) { return axes[0].size; }
long long slice_params(const TrainSpec& s, int model_index, int model_size) {
  return kpmap::column_range(s.problem.features, model_index, model_size).size() + (s.problem.bias ? 1 : 0);
}

// Bitwise: every loss, every weight and the bias have the same bytes.
void expect_identical(const TrainResult& got, const TrainResult& want, const std::string& what) {
  ASSERT_EQ(got.history.size(), want.history.size()) << what;
  for (size_t i = 0; i < got.history.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got.history[i].loss, &want.history[i].loss, sizeof(double)), 0)
        << what << ", step " << want.history[i].step << ": " << got.history[i].loss << " vs " << want.history[i].loss;
  }
  ASSERT_EQ(got.weights.size(), want.weights.size()) << what;
  EXPECT_EQ(std::memcmp(got.weights.data(), want.weights.data(), got.weights.size() * sizeof(double)), 0) << what;
  EXPECT_EQ(std::memcmp(&got.bias, &want.bias, sizeof(double)), 0) << what;
}

// fp64: reduce_scatter's loss history equals allreduce's to 1e-12 relative, for every optimizer,
// on every mesh of this rank count (np 3: uneven shards, np 4: 2x2).
TEST(Zero, ReduceScatterMatchesAllreduceFp64) {
  for (const auto& axes : meshes()) {
    const Mesh mesh(MPI_COMM_WORLD, axes);
    for (const char* optimizer : {"sgd", "momentum", "adam"}) {
      const TrainSpec base = with_optimizer(small_spec(Dtype::fp64), optimizer);
      const auto all = kpmap::train(with(base, CommStrategy::allreduce), mesh);
      const auto zero = kpmap::train(with(base, CommStrategy::reduce_scatter), mesh);
      kpmap::test::expect_same_history(zero, all, 1e-12, name(axes) + " " + optimizer);
    }
  }
}

// With mixed precision the master weights are sharded too: bf16 data, fp32 master, bf16 wire;
// and fp16 data with dynamic loss scaling (fp32 wire). The wire carries the same cast values, so
// the histories agree to the wire type's rounding of a differently ordered sum.
TEST(Zero, ReduceScatterWithMixedPrecision) {
  const Mesh mesh(MPI_COMM_WORLD, {{"data", world_size()}});
  TrainSpec bf16 = with_optimizer(small_spec(Dtype::fp32), "adam");
  bf16.compute = bf16.comm = Dtype::bf16;
  TrainSpec fp16 = small_spec(Dtype::fp32);
  fp16.compute = Dtype::fp16;
  fp16.params = Dtype::fp64;
  fp16.loss_scale.kind = kpmap::LossScaleSpec::Kind::dynamic;
  fp16.loss_scale.scale = 1024;
  for (const auto& [spec, rtol] : {std::make_pair(bf16, 2e-2), std::make_pair(fp16, 1e-5)}) {
    const auto all = kpmap::train(with(spec, CommStrategy::allreduce), mesh);
    const auto zero = kpmap::train(with(spec, CommStrategy::reduce_scatter), mesh);
    ASSERT_EQ(zero.history.size(), all.history.size());
    for (size_t i = 0; i < all.history.size(); ++i) {
      EXPECT_NEAR(zero.history[i].loss, all.history[i].loss, rtol * all.history[i].loss) << to_string(spec.compute) << " step " << i + 1;
    }
    EXPECT_NEAR(zero.weights_rel_error.value(), all.weights_rel_error.value(), 0.05 * all.weights_rel_error.value() + 1e-6);
  }
}

// Each data rank holds ceil(n / D) elements of every optimizer state View and of the master
// weights (n: parameters of its model slice), padding included and reported.
TEST(Zero, StateBytesAreTheShard) {
  for (const auto& axes : meshes()) {
    const Mesh mesh(MPI_COMM_WORLD, axes);
    const int m = mesh.has_axis("model") && axes[1].size > 1 ? mesh.axis_index("model") : 0;
    const int d = axes[0].size > 1 ? mesh.axis_index("data") : 0;
    const TrainSpec spec = with_optimizer(small_spec(Dtype::fp64), "adam");
    const long long n = slice_params(spec, m, static_cast<int>(axes[1].size));
    const long long D = data_ranks(axes), shard = (n + D - 1) / D;
    const long long owned = std::max(0LL, std::min(shard, n - d * shard));
    const auto all = kpmap::train(with(spec, CommStrategy::allreduce), mesh);
    const auto zero = kpmap::train(with(spec, CommStrategy::reduce_scatter), mesh);
    EXPECT_EQ(all.optimizer_bytes, static_cast<std::size_t>(2 * n * 8)) << name(axes);
    EXPECT_EQ(zero.optimizer_bytes, static_cast<std::size_t>(2 * shard * 8)) << name(axes);
    EXPECT_EQ(zero.shard_elements, shard) << name(axes);
    EXPECT_EQ(zero.shard_padding, shard - owned) << name(axes);
    EXPECT_EQ(all.shard_padding, 0) << name(axes);
    // Payload per step over `data`: allreduce hands over the n + 2 slots; reduce_scatter the
    // wire of D extended shards (s + 2 slots each) and its shard to the all_gather. The psum of the
    // partial products over `model` is the same in both. The non-finite check's int over the
    // whole mesh runs every step where reduced statistics differ between ranks: under
    // reduce_scatter, and with a model axis under both.
    if (D > 1) {
      const std::size_t flag = axes[1].size == 1 ? sizeof(int) : 0;
      const std::size_t data_bytes = static_cast<std::size_t>(D * (shard + 2) * 8 + shard * 8) + flag;
      const std::size_t all_bytes = static_cast<std::size_t>((n + 2) * 8);
      EXPECT_EQ(zero.comm_bytes_per_step - all.comm_bytes_per_step, data_bytes - all_bytes) << name(axes);
    }
  }
}

// More data ranks than parameters: the last shards are all padding and training still matches.
TEST(Zero, EmptyShards) {
  TrainSpec spec = small_spec(Dtype::fp64);
  spec.problem.features = 2;
  spec.problem.bias = false;
  const Mesh mesh(MPI_COMM_WORLD, {{"data", world_size()}});
  const auto all = kpmap::train(with(spec, CommStrategy::allreduce), mesh);
  const auto zero = kpmap::train(with(spec, CommStrategy::reduce_scatter), mesh);
  kpmap::test::expect_same_history(zero, all, 1e-12, "2 parameters");
  const long long shard = (2 + world_size() - 1) / world_size();
  EXPECT_EQ(zero.shard_elements, shard);
}

// Gradient accumulation k makes one gradient reduction per k micro-batches: the same calls per
// step as a step of one micro-batch, so k times fewer calls per sample.
TEST(Zero, AccumulationDividesCallsPerSample) {
  const Mesh mesh(MPI_COMM_WORLD, {{"data", world_size()}});
  for (CommStrategy strategy : {CommStrategy::allreduce, CommStrategy::reduce_scatter}) {
    TrainSpec small = with(small_spec(Dtype::fp64), strategy);
    small.batch = 16;
    TrainSpec accumulated = small;
    accumulated.batch = 64;
    accumulated.accumulation = 4;
    const auto one = kpmap::train(small, mesh);
    const auto four = kpmap::train(accumulated, mesh);
    const double per_sample_one = one.comm_calls_per_step / small.batch;
    const double per_sample_four = four.comm_calls_per_step / accumulated.batch;
    if (world_size() == 1) {
      EXPECT_EQ(one.comm_calls_per_step, 0.0);
      EXPECT_EQ(four.comm_calls_per_step, 0.0);
    } else {
      // allreduce: the psum; reduce_scatter: psum_scatter, all_gather and the non-finite check.
      EXPECT_EQ(one.comm_calls_per_step, strategy == CommStrategy::allreduce ? 1.0 : 3.0) << to_string(strategy);
      EXPECT_DOUBLE_EQ(per_sample_four * 4, per_sample_one) << to_string(strategy);
    }
  }
}

// Buckets and overlap move the same sums: bitwise the history of one bucket without overlap,
// for both strategies, fp64 and a bf16 wire, on every mesh, with the fused and team kernels;
// with the kokkos_kernels kernel the overlap's column windows go through BLAS, which sums a
// window's columns in its own blocking, so there the history agrees to rounding (buckets without
// overlap stay bitwise).
TEST(Zero, BucketsAndOverlapKeepTheSums) {
  struct Case {
    Dtype compute, params, comm;
    GradientKernel kernel;
  };
  const std::vector<Case> cases{{Dtype::fp64, Dtype::fp64, Dtype::fp64, GradientKernel::fused},
                                {Dtype::bf16, Dtype::fp32, Dtype::bf16, GradientKernel::fused},
                                {Dtype::fp64, Dtype::fp64, Dtype::fp64, GradientKernel::kokkos_kernels},
                                {Dtype::bf16, Dtype::fp32, Dtype::bf16, GradientKernel::team}};
  // Buckets of one element, of an odd number of bytes, one bucket with overlap.
  const auto variants = [](long long element) {
    return std::vector<std::pair<long long, bool>>{
        {element, false}, {element, true}, {5 * element + 1, false}, {5 * element + 1, true}, {0, true}};
  };
  for (const auto& axes : meshes()) {
    if (world_size() == 4 && axes[0].size == 1) continue;  // 1x4: keep np 4 to a few hundred calls
    const Mesh mesh(MPI_COMM_WORLD, axes);
    for (const Case& c : cases) {
      TrainSpec base = with_optimizer(small_spec(c.compute), "momentum");
      base.params = c.params;
      base.comm = c.comm;
      base.kernel = c.kernel;
      base.steps = 3;
      base.accumulation = 2;
      const long long element = static_cast<long long>(kpmap::size_of(c.comm));
      for (CommStrategy strategy : {CommStrategy::allreduce, CommStrategy::reduce_scatter}) {
        const auto want = kpmap::train(with(base, strategy), mesh);
        for (const auto& [bucket, overlap] : variants(element)) {
          const std::string what = name(axes) + " " + to_string(strategy) + " " + kpmap::to_string(c.compute) + " " +
                                   kpmap::to_string(c.kernel) + " bucket " + std::to_string(bucket) +
                                   (overlap ? " overlap" : "");
          const auto got = kpmap::train(with(base, strategy, bucket, overlap), mesh);
          if (c.kernel == GradientKernel::kokkos_kernels && (overlap || !kpmap::host_execution_v)) {
            // gemv on a window of columns: OpenBLAS blocks columns its own way (docs/train.md);
            // on a GPU, Kokkos Kernels' own gemv adds its blocks' sums with atomics, in any order
            kpmap::test::expect_same_history(got, want, 1e-13, what);
          } else {
            expect_identical(got, want, what);
          }
        }
      }
    }
  }
}

}  // namespace
