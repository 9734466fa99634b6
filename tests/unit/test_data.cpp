// The synthetic data layer: the generator, the batching contract and shard materialisation.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "kpmap/core/error.hpp"
#include "kpmap/data/shard.hpp"

namespace {

using kpmap::BatchPlan;
using kpmap::Range;
using kpmap::SyntheticProblem;

template <class V>
auto to_host(const V& v) {
  return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
}

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

SyntheticProblem problem(long long samples, long long features, double noise = 0.0) {
  return {samples, features, true, noise, 1234567};
}

TEST(Generator, Mix64IsSplitMix64) {
  // SplitMix64 with state 0 yields these first outputs (reference implementation by S. Vigna):
  // output n is mix64(n * gamma) with mix64 adding the gamma once more.
  EXPECT_EQ(kpmap::synthetic::mix64(0), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(kpmap::synthetic::mix64(0x9e3779b97f4a7c15ULL), 0x6e789e6aa1b965f4ULL);
}

TEST(Generator, UniformAndGaussianMoments) {
  const long long n = 200000;
  double sum = 0, sum2 = 0, gsum = 0, gsum2 = 0, lo = 1, hi = -1;
  for (long long i = 0; i < n; ++i) {
    const double u = kpmap::synthetic::x_entry(7, i, i % 13);
    lo = std::min(lo, u), hi = std::max(hi, u);
    sum += u, sum2 += u * u;
    const double g = kpmap::synthetic::gaussian(7, i);
    gsum += g, gsum2 += g * g;
  }
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  // Standard errors: uniform mean 0.0013, variance of U(-1,1) is 1/3; Gaussian mean 0.0022.
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sum2 / n, 1.0 / 3.0, 0.01);
  EXPECT_NEAR(gsum / n, 0.0, 0.015);
  EXPECT_NEAR(gsum2 / n, 1.0, 0.02);
  // Different streams / transposed counters give different values.
  EXPECT_NE(kpmap::synthetic::x_entry(7, 3, 5), kpmap::synthetic::x_entry(7, 5, 3));
  EXPECT_NE(kpmap::synthetic::x_entry(7, 3, 5), kpmap::synthetic::x_entry(8, 3, 5));
}

TEST(BatchPlan, UnevenSlicesCoverEveryBatchRowOnce) {
  for (long long batch : {1LL, 3LL, 7LL, 10LL, 13LL}) {
    const long long samples = 5 * batch - 1;  // 4 batches, batch - 1 rows dropped (drop_last)
    for (int D = 1; D <= 5; ++D) {
      std::vector<int> seen(static_cast<std::size_t>(samples), 0);
      for (int d = 0; d < D; ++d) {
        const BatchPlan plan = kpmap::make_batch_plan(samples, batch, d, D);
        ASSERT_EQ(plan.batches, 4);
        EXPECT_EQ(plan.slice.begin, d * batch / D);
        EXPECT_EQ(plan.slice.end, (d + 1) * batch / D);
        for (long long k = 0; k < plan.batches; ++k) {
          for (long long i = 0; i < plan.slice.size(); ++i) ++seen[static_cast<std::size_t>(plan.global_row(k, i))];
        }
      }
      for (long long r = 0; r < samples; ++r) {
        EXPECT_EQ(seen[static_cast<std::size_t>(r)], r < 4 * batch ? 1 : 0) << "B " << batch << " D " << D << " row " << r;
      }
    }
  }
  const BatchPlan plan = kpmap::make_batch_plan(100, 30, 0, 1);
  EXPECT_EQ(plan.batch_of_step(0), 0);
  EXPECT_EQ(plan.batch_of_step(4), 1);  // 3 batches per epoch
}

TEST(BatchPlan, ColumnsSplitCoverEveryColumnOnce) {
  for (int M = 1; M <= 5; ++M) {
    long long next = 0;
    for (int m = 0; m < M; ++m) {
      const Range c = kpmap::column_range(7, m, M);
      EXPECT_EQ(c.begin, next);
      EXPECT_GE(c.size(), 7 / M);
      EXPECT_LE(c.size(), 7 / M + 1);
      next = c.end;
    }
    EXPECT_EQ(next, 7);
  }
}

TEST(BatchPlan, BadInputIsInputError) {
  EXPECT_THROW(kpmap::make_batch_plan(10, 11, 0, 1), kpmap::InputError);
  EXPECT_THROW(kpmap::make_batch_plan(10, 0, 0, 1), kpmap::InputError);
  EXPECT_THROW(kpmap::validate(problem(0, 3)), kpmap::InputError);
  EXPECT_THROW(kpmap::validate(problem(5, 3, -1.0)), kpmap::InputError);
  EXPECT_THROW(kpmap::true_weights(problem(5, 3), 1, 4), kpmap::InputError);
  try {
    kpmap::make_batch_plan(10, 11, 0, 1);
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("train.batch"), std::string::npos) << e.what();
  }
}

// Every shard of every (data x model) decomposition holds bit-identical entries to the 1x1 shard
// at the same global (row, col).
template <class T, class Layout>
void check_decompositions(double noise) {
  const SyntheticProblem p = problem(61, 11, noise);
  const long long batch = 13;  // 4 batches, 9 rows dropped
  kpmap::execution_space exec;
  const auto full = kpmap::make_shard<T, Layout>(exec, p, kpmap::make_batch_plan(61, batch, 0, 1), {0, 11});
  const auto X1 = to_host(full.X);
  const auto y1 = to_host(full.y);
  ASSERT_EQ(X1.extent(0), 52u);
  for (int D : {2, 3, 5}) {
    for (int M : {1, 2, 4}) {
      for (int d = 0; d < D; ++d) {
        for (int m = 0; m < M; ++m) {
          const Range cols = kpmap::column_range(11, m, M);
          const auto s = kpmap::make_shard<T, Layout>(exec, p, kpmap::make_batch_plan(61, batch, d, D), cols);
          const auto X = to_host(s.X);
          const auto y = to_host(s.y);
          ASSERT_EQ(X.extent(0), static_cast<std::size_t>(4 * s.rows_per_batch()));
          ASSERT_EQ(X.extent(1), static_cast<std::size_t>(cols.size()));
          for (long long k = 0; k < 4; ++k) {
            const Range rows = s.batch_rows(k);
            for (long long i = 0; i < rows.size(); ++i) {
              const long long g = s.plan.global_row(k, i);  // row g of the 1x1 shard (batch B, D = 1)
              EXPECT_TRUE(same_bits(y(rows.begin + i), y1(g))) << "y row " << g;
              for (long long j = 0; j < cols.size(); ++j) {
                EXPECT_TRUE(same_bits(X(rows.begin + i, j), X1(g, cols.begin + j))) << g << "," << j;
              }
            }
          }
        }
      }
    }
  }
}

TEST(Shard, DecompositionIndependentDouble) { check_decompositions<double, Kokkos::LayoutRight>(0.25); }
TEST(Shard, DecompositionIndependentFloat) { check_decompositions<float, Kokkos::LayoutRight>(0.25); }
TEST(Shard, DecompositionIndependentLayoutLeft) { check_decompositions<double, Kokkos::LayoutLeft>(0.0); }

// y = X w* + b* (+ noise) against a host loop over the shard's own X and true_weights.
TEST(Shard, YIsLinearInXPlusNoise) {
  const long long n = 400, F = 9;
  kpmap::execution_space exec;
  for (double noise : {0.0, 0.5}) {
    const SyntheticProblem p = problem(n, F, noise);
    const auto s = kpmap::make_shard<double>(exec, p, kpmap::make_batch_plan(n, n, 0, 1), {0, F});
    const auto X = to_host(s.X);
    const auto y = to_host(s.y);
    const std::vector<double> w = kpmap::true_weights(p, 0, F);
    const double b = kpmap::true_bias(p);
    EXPECT_NE(b, 0.0);
    double sum = 0, sum2 = 0;
    for (long long i = 0; i < n; ++i) {
      double pred = b;
      for (long long j = 0; j < F; ++j) pred += X(i, j) * w[static_cast<std::size_t>(j)];
      const double e = y(i) - pred;
      if (noise == 0.0) {
        EXPECT_NEAR(e, 0.0, 1e-13);
      }
      sum += e, sum2 += e * e;
    }
    if (noise > 0.0) {
      EXPECT_NEAR(sum / n, 0.0, 4 * noise / std::sqrt(n));
      EXPECT_NEAR(std::sqrt(sum2 / n), noise, 0.1 * noise);
    }
  }
  const SyntheticProblem nb{10, 3, false, 0.0, 1};
  EXPECT_EQ(kpmap::true_bias(nb), 0.0);
}

TEST(Shard, EmptySliceWhenMoreRanksThanBatchRows) {
  kpmap::execution_space exec;
  const auto s = kpmap::make_shard<double>(exec, problem(20, 4), kpmap::make_batch_plan(20, 3, 0, 5), {0, 4});
  EXPECT_EQ(s.rows_per_batch(), 0);
  EXPECT_EQ(s.X.extent(0), 0u);
  EXPECT_EQ(s.batch_x(2).extent(0), 0u);
  EXPECT_THROW(kpmap::make_shard<double>(exec, problem(20, 4), kpmap::make_batch_plan(20, 3, 0, 1), {2, 5}),
               kpmap::InputError);
}

#if defined(__linux__)
// Transparent huge pages for X (data/huge_pages.hpp), checked in the kernel's own record of each
// mapping: madvise(MADV_HUGEPAGE) marks the mapping `hg` in /proc/self/smaps whether or not huge
// pages are free at the time, so the flag, not the pages themselves, is what these tests assert.

// Whether the kernel offers transparent huge pages (its mode is not `never`).
bool huge_pages_offered() {
  std::ifstream enabled("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  return std::getline(enabled, mode) && mode.find("[never]") == std::string::npos;
}

// Whether the mapping holding p is marked for huge pages (VmFlags `hg` in /proc/self/smaps).
bool marked_for_huge_pages(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2) {
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("VmFlags:", 0) == 0) {
      return (line + " ").find(" hg ") != std::string::npos;
    }
  }
  return false;
}

constexpr std::size_t MiB = std::size_t(1) << 20;

// An anonymous mapping of `bytes`, not yet touched.
struct Mapping {
  explicit Mapping(std::size_t n)
      : bytes(n), data(mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)) {}
  ~Mapping() {
    if (data != MAP_FAILED) munmap(data, bytes);
  }
  char* at(std::size_t offset) const { return static_cast<char*>(data) + offset; }
  std::size_t bytes;
  void* data;
};

TEST(HugePages, TheWholeHugePagesOfARangeAreMarked) {
  const Mapping m(16 * MiB);
  ASSERT_NE(m.data, MAP_FAILED);
  ASSERT_FALSE(marked_for_huge_pages(m.at(8 * MiB)));
  EXPECT_EQ(kpmap::advise_huge_pages(m.at(0), m.bytes), huge_pages_offered());
  EXPECT_EQ(marked_for_huge_pages(m.at(8 * MiB)), huge_pages_offered());
}

TEST(HugePages, NoneForARangeWithoutAWholeHugePage) {
  const Mapping m(16 * MiB);
  ASSERT_NE(m.data, MAP_FAILED);
  // 1.5 MiB from 4 KiB past a page: no 2 MiB-aligned 2 MiB inside it (nor any larger page's)
  EXPECT_FALSE(kpmap::advise_huge_pages(m.at(4096), 3 * MiB / 2));
  EXPECT_FALSE(marked_for_huge_pages(m.at(MiB)));
}

TEST(HugePages, TurnedOffByTheEnvironment) {
  const Mapping m(16 * MiB);
  ASSERT_NE(m.data, MAP_FAILED);
  ASSERT_EQ(setenv("KPMAP_HUGE_PAGES", "0", 1), 0);
  const bool advised = kpmap::advise_huge_pages(m.at(0), m.bytes);
  unsetenv("KPMAP_HUGE_PAGES");
  EXPECT_FALSE(advised);
  EXPECT_FALSE(marked_for_huge_pages(m.at(8 * MiB)));
}

// make_shard asks for huge pages for X in host memory, before the generator writes it, and
// records it; with KPMAP_HUGE_PAGES=0 it does not.
TEST(HugePages, ShardXInHostMemory) {
  constexpr bool host = std::is_same_v<kpmap::Shard<float>::matrix_type::memory_space, Kokkos::HostSpace>;
  kpmap::execution_space exec;
  const long long rows = 65536, features = 64;  // X: 16 MiB
  const auto plan = kpmap::make_batch_plan(rows, rows, 0, 1);
  const auto s = kpmap::make_shard<float>(exec, problem(rows, features), plan, {0, features});
  EXPECT_EQ(s.x_huge_pages, host && huge_pages_offered());
  if (host) {
    EXPECT_EQ(marked_for_huge_pages(s.X.data() + s.X.span() / 2), huge_pages_offered());
  }
  ASSERT_EQ(setenv("KPMAP_HUGE_PAGES", "0", 1), 0);
  const auto off = kpmap::make_shard<float>(exec, problem(rows, features), plan, {0, features});
  unsetenv("KPMAP_HUGE_PAGES");
  EXPECT_FALSE(off.x_huge_pages);
  if (host) {
    EXPECT_FALSE(marked_for_huge_pages(off.X.data() + off.X.span() / 2));
  }
}
#endif

}  // namespace
