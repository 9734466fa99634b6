// The memory estimate (train/memory.hpp) against two independent counts: the bytes of every
// allocation counted by hand for small decks, and the bytes the trainer really holds while it
// steps, counted by Kokkos' allocation callbacks (Kokkos Tools).
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kpmap/app/preflight.hpp"
#include "kpmap/model/gradient_kernel.hpp"
#include "model_common.hpp"
#include "kpmap/train/memory.hpp"

namespace {

using kpmap::CommStrategy;
using kpmap::Dtype;
using kpmap::MemoryEstimate;
using kpmap::Mesh;
using kpmap::TrainSpec;

TrainSpec small(Dtype compute, Dtype params, Dtype comm, const char* optimizer, CommStrategy strategy) {
  TrainSpec s;
  s.problem = {/*samples*/ 100, /*features*/ 10, /*bias*/ true, /*noise*/ 0.0, /*seed*/ 1};
  s.batch = 20;  // 5 batches of 20 rows: every row is held
  s.steps = 3;
  s.optimizer.name = optimizer;
  s.kernel = kpmap::GradientKernel::fused;  // the hand counts below are the fused kernel's workspace
  s.compute = compute;
  s.params = params;
  s.comm = comm;
  s.comm_spec.strategy = strategy;
  return s;
}

Mesh one_rank() { return Mesh(MPI_COMM_SELF, {{"data", 1}}); }

// fp32 everywhere, SGD, allreduce: X and y 100 x (10 + 1) x 4; the 11 parameters are the master
// weights; the statistics (11 + 2 slots) hold the gradient in place; the model's sums 10 + 2.
TEST(MemoryEstimate, CountedByHandFp32Sgd) {
  const MemoryEstimate e = kpmap::estimate_memory(
      small(Dtype::fp32, Dtype::fp32, Dtype::fp32, "sgd", CommStrategy::allreduce), one_rank());
  EXPECT_EQ(e.data, 100u * 11 * 4);
  EXPECT_EQ(e.parameters, 11u * 4);
  EXPECT_EQ(e.gradients, 13u * 4 + 12 * 4);
  EXPECT_EQ(e.optimizer, 0u);
  EXPECT_EQ(e.total(), 4400u + 44 + 100);
}

// bf16 data, fp32 master weights, a bf16 wire, Adam, reduce_scatter on one rank (shard = all 11):
// data 100 x 11 x 2; master 11 x 4 plus the gathered bf16 copy and the outgoing bf16 shard
// (11 x 2 each); statistics 13 x 4, the wire 13 x 2, the sums 12 x 4 (the optimizer reads the mean
// gradient from the wire); Adam's two moments 2 x 11 x 4.
TEST(MemoryEstimate, CountedByHandBf16AdamReduceScatter) {
  const MemoryEstimate e = kpmap::estimate_memory(
      small(Dtype::bf16, Dtype::fp32, Dtype::bf16, "adam", CommStrategy::reduce_scatter), one_rank());
  EXPECT_EQ(e.data, 100u * 11 * 2);
  EXPECT_EQ(e.parameters, 11u * 4 + 11 * 2 + 11 * 2);
  EXPECT_EQ(e.gradients, 13u * 4 + 13 * 2 + 12 * 4);
  EXPECT_EQ(e.optimizer, 2u * 11 * 4);
}

// A data file's rows as read (fp64) are held only while the shard is built, before anything else:
// the peak is the shard with the larger of them and everything else. fp32 SGD as above: the rows
// 100 x 11 x 8 outweigh the rest (44 + 100).
TEST(MemoryEstimate, CountedByHandFileRowsWhileTheShardIsBuilt) {
  TrainSpec spec = small(Dtype::fp32, Dtype::fp32, Dtype::fp32, "sgd", CommStrategy::allreduce);
  spec.from_file = true;
  const MemoryEstimate e = kpmap::estimate_memory(spec, one_rank());
  EXPECT_EQ(e.data, 100u * 11 * 4);
  EXPECT_EQ(e.file_rows, 100u * 11 * 8);
  EXPECT_EQ(e.total(), 4400u + 8800);
}

// The rest outweighs the rows: 2 rows of 100 features, fp32 Adam. Data 2 x 101 x 4, the rows
// 2 x 101 x 8; the 101 master weights x 4; statistics 103 x 4 and the model's sums 102 x 4;
// Adam's moments 2 x 101 x 4.
TEST(MemoryEstimate, CountedByHandFileRowsOutweighed) {
  TrainSpec spec = small(Dtype::fp32, Dtype::fp32, Dtype::fp32, "adam", CommStrategy::allreduce);
  spec.problem.samples = 2;
  spec.problem.features = 100;
  spec.batch = 2;
  spec.from_file = true;
  const MemoryEstimate e = kpmap::estimate_memory(spec, one_rank());
  EXPECT_EQ(e.data, 2u * 101 * 4);
  EXPECT_EQ(e.file_rows, 2u * 101 * 8);
  EXPECT_EQ(e.total(), 808u + 404 + (412 + 408) + 808);
}

// The trainer frees a file's rows once the shard is built from them: none is held at any step;
// the file's true weights stay for weights_rel_error.
TEST(MemoryEstimate, FileRowsFreedOnceTheShardIsBuilt) {
  TrainSpec spec = small(Dtype::fp64, Dtype::fp64, Dtype::fp64, "sgd", CommStrategy::allreduce);
  spec.from_file = true;
  auto data = std::make_shared<kpmap::FileData>();
  data->block.rows = 100;  // one rank: every batch's rows in order
  data->block.cols = 10;
  for (int r = 0; r < 100; ++r) {
    for (int j = 0; j < 10; ++j) data->block.X.push_back((r * 7 + j * 3) % 11 - 5);
    data->block.y.push_back(r % 5);
  }
  data->truth = kpmap::TrueParameters{std::vector<double>(10, 1.0), 0.5};
  spec.data = data;
  std::size_t held = 0;
  long long steps = 0;
  const kpmap::TrainResult r = kpmap::train(spec, one_rank(), [&](long long, double) {
    held += data->block.X.capacity() + data->block.y.capacity();
    ++steps;
  });
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(held, 0u);
  EXPECT_TRUE(data->block.X.empty() && data->block.y.empty());
  ASSERT_TRUE(data->truth.has_value());
  EXPECT_TRUE(r.weights_rel_error.has_value());
}

// ---- the trainer's real allocations, through Kokkos' allocation callbacks ----

std::map<const void*, std::uint64_t> live;  // kpmap's allocations alive now
std::uint64_t live_bytes = 0, peak_bytes = 0;

// The Views the trainer holds while it steps; the result's gathering after the last step
// (kpmap::train::all_master, kpmap::train::weights) comes after the estimate's working set.
bool counted(const char* label) {
  const std::string l(label);
  return l.rfind("kpmap::", 0) == 0 && l != "kpmap::train::all_master" && l != "kpmap::train::weights";
}

void on_allocate(Kokkos_Profiling_SpaceHandle, const char* label, const void* ptr, std::uint64_t size) {
  if (!counted(label)) return;
  live[ptr] = size;
  live_bytes += size;
  if (live_bytes > peak_bytes) peak_bytes = live_bytes;
}

void on_deallocate(Kokkos_Profiling_SpaceHandle, const char*, const void* ptr, std::uint64_t) {
  const auto it = live.find(ptr);
  if (it == live.end()) return;
  live_bytes -= it->second;
  live.erase(it);
}

// The estimate of spec on one rank is the peak of kpmap's own Views while kpmap::train runs it,
// to within 64 bytes either way.
void expect_estimate_is_the_peak(const TrainSpec& spec, const std::string& what) {
  const Mesh mesh = one_rank();
  const MemoryEstimate e = kpmap::estimate_memory(spec, mesh);
  Kokkos::Tools::Experimental::set_allocate_data_callback(on_allocate);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(on_deallocate);
  live.clear();
  live_bytes = peak_bytes = 0;
  kpmap::train(spec, mesh);
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  Kokkos::Tools::Experimental::set_deallocate_data_callback(nullptr);
  EXPECT_LE(peak_bytes, e.total() + 64) << what;
  EXPECT_LE(e.total(), peak_bytes + 64) << what;
}

// The estimate is the peak of what the trainer allocates, to within the step's few scalar host
// buffers (flag, exponent, bound: under 32 bytes, left out of the estimate), for every optimizer,
// strategy, type mix and kernel.
TEST(MemoryEstimate, CoversTheTrainersAllocations) {
  struct Case {
    Dtype compute, params, comm;
    const char* optimizer;
    CommStrategy strategy;
    kpmap::GradientKernel kernel;
    bool overlap;
  };
  using K = kpmap::GradientKernel;
  for (const Case& c :
       {Case{Dtype::fp32, Dtype::fp32, Dtype::fp32, "sgd", CommStrategy::allreduce, K::fused, false},
        Case{Dtype::fp64, Dtype::fp64, Dtype::fp64, "momentum", CommStrategy::allreduce, K::kokkos_kernels,
             false},
        Case{Dtype::fp32, Dtype::fp64, Dtype::fp32, "adam", CommStrategy::reduce_scatter, K::fused, true},
        Case{Dtype::bf16, Dtype::fp32, Dtype::bf16, "adam", CommStrategy::reduce_scatter, K::fused, false},
        Case{Dtype::fp16, Dtype::fp32, Dtype::fp16, "momentum", CommStrategy::allreduce, K::kokkos_kernels,
             false},
        Case{Dtype::fp32, Dtype::fp32, Dtype::fp32, "sgd", CommStrategy::allreduce, K::team, false},
        Case{Dtype::bf16, Dtype::fp32, Dtype::bf16, "adam", CommStrategy::reduce_scatter, K::team, true}}) {
    TrainSpec spec = small(c.compute, c.params, c.comm, c.optimizer, c.strategy);
    spec.kernel = c.kernel;
    spec.comm_spec.overlap = c.overlap;
    const std::string what = to_string(c.compute) + "/" + to_string(c.params) + "/" + to_string(c.comm) +
                             " " + c.optimizer + " " + to_string(c.kernel) + (c.overlap ? " overlap" : "");
    expect_estimate_is_the_peak(spec, what);
  }
}

// precision.reproducible: its exact accumulators and the model's workspace (a pass of column
// sums; on a GPU backend, with rows wider than a pass, each row's z), at 10 and 70 features, in
// micro-batches of 6, 7 and 7 rows (the smaller first).
TEST(MemoryEstimate, CoversTheReproducibleTrainersAllocations) {
  for (const long long features : {10LL, 70LL}) {
    for (const Dtype t : {Dtype::fp64, Dtype::fp32}) {
      TrainSpec spec = small(t, t, t, "sgd", CommStrategy::allreduce);
      spec.problem.features = features;
      spec.reproducible = true;
      spec.accumulation = 3;
      expect_estimate_is_the_peak(spec,
                                  to_string(t) + " reproducible, " + std::to_string(features) + " features");
    }
  }
}

// The fused kernel on several host threads sums each chunk of a micro-batch's rows into its own
// F + 2 sums (model/fused_kernels.hpp reduce_items): 8192 rows of 64 features in two micro-batches,
// fp32 and bf16, on the threads of the run (test_memory.threads2: two, so 4 and 2 chunks).
TEST(MemoryEstimate, CoversTheFusedKernelsChunks) {
  const long long threads = kpmap::test::expect_thread_count();
  for (const Dtype t : {Dtype::fp32, Dtype::bf16}) {
    TrainSpec spec = small(t, Dtype::fp32, Dtype::fp32, "sgd", CommStrategy::allreduce);
    spec.problem.samples = spec.batch = 8192;
    spec.problem.features = 64;
    spec.accumulation = 2;
    const long long chunks = kpmap::fused_chunks(4096, 64, kpmap::size_of(t), sizeof(float), threads);
    if (kpmap::host_execution_v && threads == 2) {
      EXPECT_EQ(chunks, t == Dtype::fp32 ? 4 : 2);
    }
    expect_estimate_is_the_peak(spec, to_string(t) + " fused, " + std::to_string(chunks) + " chunks");
  }
}

TEST(MemoryEstimate, HumanBytes) {
  EXPECT_EQ(kpmap::human_bytes(512), "512 B");
  EXPECT_EQ(kpmap::human_bytes(1536), "1.50 KiB");
  EXPECT_EQ(kpmap::human_bytes(3.0 * (1ull << 40)), "3.00 TiB");
  EXPECT_EQ(kpmap::human_bytes(150.0 * (1 << 20)), "150 MiB");
}

}  // namespace
