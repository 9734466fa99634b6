// precision.reproducible (docs/train.md) and the reproducible psum / pmean (docs/collectives.md).
// Training: every mesh that fits in the world (1x1, 2x1, 3x1, 4x1, 1x2, 2x2, each on a
// sub-communicator of the first ranks), accumulation 1, 2, 4, both gradient kernels, fp64 and
// fp32, give the bytes of the 1x1 run (MPI_COMM_SELF, accumulation 1, fused) in every loss, every
// weight and the bias. Thread counts: the same runs at OMP_NUM_THREADS=2
// (test_reproducible.threads2) compare against the 1-thread run's bytes, saved to a file by
// test_reproducible.np1 (KPMAP_TEST_REPRO_BYTES). psum: the sum does not depend on which rank
// holds which term, and keeps terms an ordinary sum loses.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "kpmap/collectives/collectives.hpp"
#include "train_common.hpp"

namespace {

using kpmap::Dtype;
using kpmap::GradientKernel;
using kpmap::Mesh;
using kpmap::TrainResult;
using kpmap::TrainSpec;
using kpmap::test::world_rank;
using kpmap::test::world_size;

template <class V>
auto to_host(const V& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

TrainSpec spec(Dtype dtype, long long accumulation = 1, GradientKernel kernel = GradientKernel::fused) {
  TrainSpec s = kpmap::test::small_spec(dtype);
  s.steps = 6;
  s.batch = 60;  // split unevenly over 3 and 4 data ranks and 4 micro-batches
  s.optimizer.name = "adam";
  s.optimizer.lr = 0.05;
  s.reproducible = true;
  s.accumulation = accumulation;
  s.kernel = kernel;
  if (dtype == Dtype::fp32) s.params = Dtype::fp32;
  s.comm = Dtype::fp64;
  return s;
}

// Every loss, every weight and the bias, as bytes.
std::vector<double> bytes_of(const TrainResult& r) {
  std::vector<double> v;
  for (const auto& h : r.history) v.push_back(h.loss);
  v.insert(v.end(), r.weights.begin(), r.weights.end());
  v.push_back(r.bias);
  return v;
}

void expect_identical(const std::vector<double>& got, const std::vector<double>& want,
                      const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(std::memcmp(&got[k], &want[k], sizeof(double)), 0)
        << what << ", value " << k << ": " << got[k] << " vs " << want[k];
  }
}

// Runs `s` on a (data, model) mesh of the first d * m ranks; the other ranks get an empty result.
std::vector<double> run_on(const TrainSpec& s, int d, int m) {
  MPI_Comm sub = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, world_rank() < d * m ? 0 : MPI_UNDEFINED, world_rank(), &sub);
  if (sub == MPI_COMM_NULL) return {};
  std::vector<double> result;
  {
    const Mesh mesh(sub, {{"data", d}, {"model", m}});
    result = bytes_of(kpmap::train(s, mesh));
  }
  MPI_Comm_free(&sub);
  return result;
}

std::vector<double> reference(Dtype dtype) { return bytes_of(kpmap::test::reference(spec(dtype))); }

std::vector<std::pair<int, int>> meshes_that_fit() {
  std::vector<std::pair<int, int>> all{{1, 1}, {2, 1}, {3, 1}, {4, 1}, {1, 2}, {2, 2}}, fit;
  for (const auto& m : all)
    if (m.first * m.second <= world_size()) fit.push_back(m);
  return fit;
}

std::string name(Dtype dtype, int d, int m, long long accumulation, GradientKernel kernel) {
  return kpmap::to_string(dtype) + " " + std::to_string(d) + "x" + std::to_string(m) + ", accumulation " +
         std::to_string(accumulation) + ", " + kpmap::to_string(kernel);
}

TEST(ReproducibleTrain, EveryMeshGivesTheSameBytes) {
  for (const Dtype dtype : {Dtype::fp64, Dtype::fp32}) {
    const std::vector<double> want = reference(dtype);
    for (const auto& [d, m] : meshes_that_fit()) {
      const std::vector<double> got = run_on(spec(dtype), d, m);
      if (!got.empty()) expect_identical(got, want, name(dtype, d, m, 1, GradientKernel::fused));
    }
  }
}

TEST(ReproducibleTrain, AccumulationAndKernelsGiveTheSameBytes) {
  // On the largest data-only mesh and the largest mesh with a model axis that fit.
  std::vector<std::pair<int, int>> meshes{{world_size() >= 4 ? 4 : world_size(), 1}};
  if (world_size() >= 4) meshes.push_back({2, 2});
  for (const Dtype dtype : {Dtype::fp64, Dtype::fp32}) {
    const std::vector<double> want = reference(dtype);
    for (const auto& [d, m] : meshes) {
      for (const long long accumulation : {1LL, 2LL, 4LL}) {
        for (const GradientKernel kernel : {GradientKernel::fused, GradientKernel::kokkos_kernels}) {
          if (accumulation == 1 && kernel == GradientKernel::fused) continue;  // the test above
          const std::vector<double> got = run_on(spec(dtype, accumulation, kernel), d, m);
          if (!got.empty()) expect_identical(got, want, name(dtype, d, m, accumulation, kernel));
        }
      }
    }
  }
}

// Rows wider than a GPU's pass over the columns (ReproducibleModel::device_columns): on a device
// backend one model rank forms each row's z and then sums the columns in passes, over micro-
// batches of different sizes; the bytes are the same on every mesh and accumulation.
TEST(ReproducibleTrain, WideRowsGiveTheSameBytes) {
  TrainSpec s = spec(Dtype::fp64);
  s.problem.features = 70;
  const std::vector<double> want = bytes_of(kpmap::test::reference(s));
  for (const auto& [d, m] : std::vector<std::pair<int, int>>{{1, 1}, {2, 1}, {1, 2}}) {
    if (d * m > world_size()) continue;
    for (const long long accumulation : {1LL, 4LL}) {
      TrainSpec t = s;
      t.accumulation = accumulation;
      const std::vector<double> got = run_on(t, d, m);
      const std::string what = "70 features, " + name(Dtype::fp64, d, m, accumulation, t.kernel);
      if (!got.empty()) expect_identical(got, want, what);
    }
  }
}

TEST(ReproducibleTrain, MatchesOrdinarySumsToRounding) {
  for (const Dtype dtype : {Dtype::fp64, Dtype::fp32}) {
    TrainSpec ordinary = spec(dtype);
    ordinary.reproducible = false;
    ordinary.comm = dtype;
    const TrainResult a = kpmap::test::reference(spec(dtype)), b = kpmap::test::reference(ordinary);
    EXPECT_TRUE(a.reproducible);
    EXPECT_FALSE(b.reproducible);
    kpmap::test::expect_same_history(a, b, dtype == Dtype::fp64 ? 1e-12 : 1e-5, kpmap::to_string(dtype));
  }
}

// The 1-thread bytes go to the file named by KPMAP_TEST_REPRO_BYTES (test_reproducible.np1); a
// run at two threads (test_reproducible.threads2, KPMAP_TEST_EXPECT_THREADS=2) compares with them.
TEST(ReproducibleTrain, ThreadCountsGiveTheSameBytes) {
  const char* file = std::getenv("KPMAP_TEST_REPRO_BYTES");
  if (file == nullptr) GTEST_SKIP() << "KPMAP_TEST_REPRO_BYTES not set";
  std::vector<double> mine;
  for (const Dtype dtype : {Dtype::fp64, Dtype::fp32}) {
    const std::vector<double> r = reference(dtype);
    mine.insert(mine.end(), r.begin(), r.end());
  }
  if (const char* expect = std::getenv("KPMAP_TEST_EXPECT_THREADS")) {
    ASSERT_EQ(kpmap::execution_space().concurrency(), std::atoi(expect));
    std::ifstream in(file, std::ios::binary);
    ASSERT_TRUE(in) << "no bytes from the 1-thread run in " << file;
    std::vector<double> saved(mine.size());
    in.read(reinterpret_cast<char*>(saved.data()),
            static_cast<std::streamsize>(saved.size() * sizeof(double)));
    ASSERT_EQ(in.gcount(), static_cast<std::streamsize>(saved.size() * sizeof(double)));
    expect_identical(mine, saved, std::string("threads ") + expect + " against 1");
  } else if (world_rank() == 0) {
    ASSERT_EQ(kpmap::execution_space().concurrency(), 1);
    std::ofstream out(file, std::ios::binary);
    out.write(reinterpret_cast<const char*>(mine.data()),
              static_cast<std::streamsize>(mine.size() * sizeof(double)));
    ASSERT_TRUE(out.good());
  }
}

TEST(ReproducibleTrain, DivergenceStopsEveryRankWithTheStep) {
  TrainSpec s = spec(Dtype::fp64);
  s.optimizer.name = "sgd";
  s.optimizer.lr = 1e150;  // the weights overflow after a few steps
  s.steps = 20;
  const Mesh mesh(MPI_COMM_WORLD, {{"data", world_size()}, {"model", 1}});
  try {
    kpmap::train(s, mesh);
    FAIL() << "expected a RuntimeError";
  } catch (const kpmap::RuntimeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("precision.reproducible: step "), std::string::npos) << what;
    EXPECT_NE(what.find("outside the exact accumulator's range"), std::string::npos) << what;
  }
}

// ---- the collectives' reproducible psum / pmean ----

TEST(ReproduciblePsum, NoMatterWhichRankHoldsWhichTerm) {
  const int n = world_size();
  const Mesh mesh(MPI_COMM_WORLD, {{"i", n}});
  // Element e's terms t(e, k), k < n, spread over the ranks in every rotation.
  const long long elements = 64;
  const auto term = [](long long e, int k) {
    return std::ldexp(1.0 + 0.1234567 * static_cast<double>((e * 7 + k * 13) % 17),
                      static_cast<int>((e + 5 * k) % 40) - 20) *
           ((e + k) % 3 == 0 ? -1 : 1);
  };
  std::vector<double> first;
  for (int rotation = 0; rotation < n; ++rotation) {
    kpmap::View1<double> x("x", elements), out("out", elements);
    auto h = Kokkos::create_mirror_view(x);
    for (long long e = 0; e < elements; ++e) h(e) = term(e, (world_rank() + rotation) % n);
    Kokkos::deep_copy(x, h);
    kpmap::psum(mesh, "i", x, out, kpmap::reproducible);
    auto got = to_host(out);
    std::vector<double> v(got.data(), got.data() + elements);
    if (rotation == 0) {
      first = v;
      for (long long e = 0; e < elements; ++e) {
        long double exact = 0;
        for (int k = 0; k < n; ++k) exact += term(e, k);
        EXPECT_EQ(v[e], static_cast<double>(exact)) << "element " << e;  // few terms: exact in long double
      }
    } else {
      expect_identical(v, first, "rotation " + std::to_string(rotation));
    }
  }
}

TEST(ReproduciblePsum, CancellationKeepsTheSmallTermAndPmeanDivides) {
  const int n = world_size();
  const Mesh mesh(MPI_COMM_WORLD, {{"i", n}});
  // Rank 0: 1e16 (element 0) and 3 (element 1), the last rank: -1e16, every other rank: 1.
  kpmap::View1<float> f("f", 2);
  kpmap::View1<double> x("x", 2);
  auto h = Kokkos::create_mirror_view(x);
  h(0) = world_rank() == 0 ? 1e16 : world_rank() == n - 1 ? -1e16 : 1.0;
  h(1) = world_rank() == 0 ? 3.0 : 0.0;
  if (n == 1) h(0) = 1e16;
  Kokkos::deep_copy(x, h);
  kpmap::psum(mesh, "i", x, x, kpmap::reproducible);  // in place
  auto s = to_host(x);
  EXPECT_EQ(s(0), n == 1 ? 1e16 : static_cast<double>(n - 2));
  EXPECT_EQ(s(1), 3.0);
  Kokkos::deep_copy(f, 2.0f * static_cast<float>(world_rank() + 1));
  kpmap::pmean(mesh, "i", f, f, kpmap::reproducible);
  auto m = to_host(f);
  EXPECT_EQ(m(0), static_cast<float>(n + 1));  // mean of 2, 4, ..., 2n
}

TEST(ReproduciblePsum, NonFiniteThrowsOnEveryRank) {
  const int n = world_size();
  const Mesh mesh(MPI_COMM_WORLD, {{"i", n}});
  kpmap::View1<double> x("x", 3);
  Kokkos::deep_copy(x, world_rank() == n - 1 ? std::nan("") : 1.0);
  EXPECT_THROW(kpmap::psum(mesh, "i", x, x, kpmap::reproducible), kpmap::RuntimeError);
  Kokkos::deep_copy(x, world_rank() == 0 ? 1e306 : 1.0);  // 2 n 1e306 > 2^1020
  EXPECT_THROW(kpmap::psum(mesh, "i", x, x, kpmap::reproducible), kpmap::RuntimeError);
}

}  // namespace
