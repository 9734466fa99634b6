// The reproducible accumulator (core/repro_sum.hpp): the same bits for any order and grouping of
// the additions, within its error bound of the exact sum (computed here in 128-bit fixed point),
// and no grid outside its range.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kpmap/core/repro_sum.hpp"

namespace {

using kpmap::ReproGrid;

struct Acc {
  double s1 = 0, s2 = 0, s3 = 0;
  void add(const ReproGrid& g, double p) { kpmap::repro_add(g, p, s1, s2, s3); }
  void add(const Acc& o) {
    s1 += o.s1;
    s2 += o.s2;
    s3 += o.s3;
  }
  double value() const { return kpmap::repro_value(s1, s2, s3); }
};

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::abs(x));
  return m;
}

ReproGrid grid_for(const std::vector<double>& terms) {
  ReproGrid g;
  EXPECT_TRUE(ReproGrid::make(static_cast<double>(terms.size()), max_abs(terms), g));
  return g;
}

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Terms of widely different magnitudes (2^-20 to 2^21, both signs), with large cancellations.
std::vector<double> wild_terms(std::size_t n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> mantissa(1.0, 2.0);
  std::uniform_int_distribution<int> exponent(-20, 20);
  std::vector<double> v;
  for (std::size_t i = 0; i < n; ++i) {
    const double x = std::ldexp(mantissa(rng), exponent(rng)) * (rng() % 2 ? 1 : -1);
    v.push_back(x);
    if (i % 7 == 0) v.push_back(-x * 0.999999);  // near-cancelling pairs
  }
  return v;
}

// The exact sum of terms that are multiples of 2^-75 and below 2^40 in magnitude: a 128-bit
// integer count of 2^-75, converted to double once (correctly rounded).
double exact_sum(const std::vector<double>& terms) {
  __int128 total = 0;
  for (double x : terms) total += static_cast<__int128>(std::ldexp(x, 75));  // an exact integer
  return std::ldexp(static_cast<double>(total), -75);
}

TEST(ReproSum, AnyOrderAndGroupingGivesTheSameBits) {
  const std::vector<double> terms = wild_terms(5000, 1);
  const ReproGrid g = grid_for(terms);
  Acc forward;
  for (double x : terms) forward.add(g, x);
  std::mt19937_64 rng(2);
  for (int trial = 0; trial < 20; ++trial) {
    std::vector<double> shuffled = terms;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    // Partial accumulators over random chunks (threads, ranks, micro-batches), joined in a
    // random order.
    std::vector<Acc> parts;
    for (std::size_t i = 0; i < shuffled.size();) {
      const std::size_t len = 1 + rng() % 700;
      Acc part;
      for (std::size_t k = i; k < std::min(shuffled.size(), i + len); ++k) part.add(g, shuffled[k]);
      parts.push_back(part);
      i += len;
    }
    std::shuffle(parts.begin(), parts.end(), rng);
    Acc total;
    for (const Acc& p : parts) total.add(p);
    ASSERT_TRUE(same_bits(total.s1, forward.s1) && same_bits(total.s2, forward.s2) &&
                same_bits(total.s3, forward.s3))
        << "trial " << trial;
    ASSERT_TRUE(same_bits(total.value(), forward.value())) << "trial " << trial;
  }
}

TEST(ReproSum, WithinTheErrorBoundOfTheExactSum) {
  for (unsigned seed = 10; seed < 15; ++seed) {
    const std::vector<double> terms = wild_terms(3000, seed);
    const ReproGrid g = grid_for(terms);
    Acc acc;
    for (double x : terms) acc.add(g, x);
    const double exact = exact_sum(terms);
    const double ulp = std::abs(exact) * std::numeric_limits<double>::epsilon();
    EXPECT_LE(std::abs(acc.value() - exact), g.error_bound() + 2 * ulp) << "seed " << seed;
    // The bound itself is tiny next to the largest term (about N^4 B 2^-150).
    EXPECT_LT(g.error_bound(), max_abs(terms) * 0x1p-90) << "seed " << seed;
  }
}

TEST(ReproSum, CancellationKeepsTheSmallTerm) {
  // 1e16 + 1 - 1e16 in every order: ordinary doubles lose the 1 in some orders; the exact
  // accumulator gives 1 in all.
  const std::vector<double> terms{1e16, 1.0, -1e16};
  const ReproGrid g = grid_for(terms);
  std::vector<int> order{0, 1, 2};
  do {
    Acc acc;
    for (int i : order) acc.add(g, terms[i]);
    EXPECT_EQ(acc.value(), 1.0);
  } while (std::next_permutation(order.begin(), order.end()));
}

TEST(ReproSum, IntegersAreExact) {
  std::vector<double> terms;
  double expected = 0;  // exact: integers far below 2^53
  for (int i = 1; i <= 1000; ++i) {
    terms.push_back(i % 3 == 0 ? -i : i);
    expected += terms.back();
  }
  const ReproGrid g = grid_for(terms);
  Acc acc;
  for (double x : terms) acc.add(g, x);
  EXPECT_EQ(acc.value(), expected);
}

TEST(ReproSum, ProductsMatchTheirRoundedOrFusedValue) {
  // a * b folded as a product: equal to folding the exact product (fp32 operands, exact in
  // double), whichever rounding the build uses.
  const ReproGrid g = grid_for({3.0, -2.0});
  double a1 = 0, a2 = 0, a3 = 0, b1 = 0, b2 = 0, b3 = 0;
  const float x = 1.2345678f, y = -0.7654321f;
  kpmap::repro_add_product(g, x, y, a1, a2, a3);
  kpmap::repro_add(g, static_cast<double>(x) * static_cast<double>(y), b1, b2, b3);
  EXPECT_TRUE(same_bits(a1, b1) && same_bits(a2, b2) && same_bits(a3, b3));
}

TEST(ReproSum, ZeroBoundAndTinyTerms) {
  ReproGrid g;
  ASSERT_TRUE(ReproGrid::make(10, 0.0, g));
  Acc zero;
  for (int i = 0; i < 10; ++i) zero.add(g, 0.0);
  EXPECT_EQ(zero.value(), 0.0);
  // Subnormal terms are kept exactly.
  const double tiny = std::numeric_limits<double>::denorm_min() * 3;
  ASSERT_TRUE(ReproGrid::make(4, tiny, g));
  Acc acc;
  for (int i = 0; i < 4; ++i) acc.add(g, i % 2 ? tiny : -tiny / 3);
  EXPECT_EQ(acc.value(), 2 * tiny - 2 * (tiny / 3));
}

TEST(ReproSum, NoGridOutsideTheRange) {
  ReproGrid g;
  EXPECT_FALSE(ReproGrid::make(10, std::numeric_limits<double>::infinity(), g));
  EXPECT_FALSE(ReproGrid::make(10, std::numeric_limits<double>::quiet_NaN(), g));
  EXPECT_FALSE(ReproGrid::make(10, 1e305, g));    // 2 x 10 x 1e305 > 2^1020
  EXPECT_FALSE(ReproGrid::make(0, 1.0, g));       // no terms
  EXPECT_FALSE(ReproGrid::make(0x1p41, 1.0, g));  // more than 2^40 terms
  EXPECT_FALSE(ReproGrid::make(10, -1.0, g));
  EXPECT_TRUE(ReproGrid::make(10, 1e300, g));
  EXPECT_TRUE(std::isfinite(g.level[0].sigma));
}

}  // namespace
