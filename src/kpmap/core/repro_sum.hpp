// Reproducible sums: a three-level fixed-point accumulator whose result does not depend on the
// order of the additions (threads, ranks, micro-batches, MPI's reduction tree), in the style of
// the pre-rounding of Demmel and Nguyen (ReproBLAS) and the extraction of Rump, Ogita and Oishi.
//
// A sum of at most N terms, each of magnitude at most B, gets a grid (ReproGrid) before any term
// is added. Level 1: with E the smallest exponent such that 2 N B <= 2^E, it holds multiples of
// u1 = 2^(E - 51); a term p is split into q1 = p rounded to a multiple of u1 (adding and
// subtracting sigma1 = 3 * 2^E, whose ulp is u1) and the remainder p - q1 (exact, at most u1 / 2).
// Levels 2 and 3 do the same to the remainders, each with the grid of N terms of at most half
// the previous unit; what falls below u3 is dropped. Every level-k partial sum, of any subset of
// the terms, is a multiple of uk below 2^53 uk in magnitude, so it is exact in double: adding
// partial sums in any order, across threads, ranks (MPI_SUM on doubles) or calls, gives the same
// three numbers, and the value is (s1 + s2) + s3, rounded twice in that fixed order.
//
// Guarantees, for N <= 2^40 terms with |term| <= B:
//   - the result is identical (bitwise) for any order and grouping of the additions;
//   - |result - exact sum of the terms| <= N u3 / 2 (error_bound()) plus the final roundings
//     (one ulp of the result); each level keeps about 51 - log2(N) bits, so N u3 / 2 is about
//     N^4 B 2^-150: for N = 2^16 terms about B 2^-86, for N = 2^20 about B 2^-70 (an ordinary
//     fp64 sum's bound is N B 2^-53);
//   - the grid exists only when 2 N B is finite and at most 2^1020: otherwise make() says so and
//     the caller raises an error naming the tensor, never a wrong sum. The units never go below
//     the smallest subnormal, 2^-1074 (terms that small are kept exactly).
//
// Rounding is the same wherever the code is inlined: a product a * b is added either as a fused
// multiply-add (where the target has a fast one: CUDA, HIP, an x86 -march with FMA) or as a
// rounded product, never at the compiler's choice (-ffp-contract), so every kernel that folds the
// same product contributes the same bits. Builds that differ in this choice may differ in the
// last bits; within one build the result depends only on the terms.
#pragma once

#include <Kokkos_Core.hpp>
#include <cmath>

namespace kpmap {

struct ReproLevel {
  double sigma = 0;  // 3 * 2^e: adding and subtracting it rounds to a multiple of unit
  double unit = 0;   // 2^(e - 51)
};

struct ReproGrid {
  static constexpr int levels = 3;
  ReproLevel level[levels];
  double terms = 0, bound = 0;  // what the grid was made for

  // The grid for at most `terms` terms of magnitude at most `bound`; false (and the grid
  // unusable) when bound is not finite, 2 * terms * bound exceeds 2^1020, or terms is not in
  // [1, 2^40].
  static bool make(double terms, double bound, ReproGrid& g) {
    g = ReproGrid{};
    g.terms = terms;
    g.bound = bound;
    if (!(terms >= 1 && terms <= 0x1p40 && bound >= 0 && bound <= 0x1p1000)) return false;
    double top = 2 * terms * bound;
    if (!(top <= 0x1p1020)) return false;
    for (int k = 0; k < levels; ++k) {
      g.level[k] = make_level(top);
      top = terms * g.level[k].unit;  // 2 * terms * (unit / 2)
    }
    return true;
  }

  // |result - exact sum| for up to `terms` terms added with `used` levels, before the final
  // roundings.
  double error_bound(int used = levels) const { return terms * level[used - 1].unit / 2; }

 private:
  static ReproLevel make_level(double top) {
    int e = 0;
    if (top > 0) std::frexp(top, &e);  // top <= 2^e
    if (e < -1023) e = -1023;          // sigma stays normal, unit >= 2^-1074
    return {std::ldexp(3.0, e), std::ldexp(1.0, e - 51)};
  }
};

namespace repro_detail {
// p rounded to a multiple of sigma's ulp (not simplified away: kpmap never builds with
// -ffast-math or -fassociative-math).
KOKKOS_INLINE_FUNCTION double extract(double p, double sigma) { return (sigma + p) - sigma; }

// Levels 2 (and 3) of a remainder r (|r| <= u1 / 2).
template <int levels>
KOKKOS_INLINE_FUNCTION void add_rest(const ReproGrid& g, double r, double& s2, double& s3) {
  const double q2 = extract(r, g.level[1].sigma);
  s2 += q2;
  if constexpr (levels == 3) s3 += extract(r - q2, g.level[2].sigma);
}
}  // namespace repro_detail

// Adds the term p to the accumulator (s1, s2, s3). With levels = 2, s3 is not touched and what
// falls below u2 is dropped: the error bound is error_bound(2) (for short sums, such as a dot
// product over the features).
template <int levels = 3>
KOKKOS_INLINE_FUNCTION void repro_add(const ReproGrid& g, double p, double& s1, double& s2, double& s3) {
  static_assert(levels == 2 || levels == 3, "2 or 3 levels");
  const double q1 = repro_detail::extract(p, g.level[0].sigma);
  s1 += q1;
  repro_detail::add_rest<levels>(g, p - q1, s2, s3);
}

// Adds the product a * b (see the header comment for its rounding).
template <int levels = 3>
KOKKOS_INLINE_FUNCTION void repro_add_product(const ReproGrid& g, double a, double b, double& s1, double& s2,
                                              double& s3) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__) || defined(__FP_FAST_FMA)
  const double q1 = fma(a, b, g.level[0].sigma) - g.level[0].sigma;
  s1 += q1;
  repro_detail::add_rest<levels>(g, fma(a, b, -q1), s2, s3);
#else
  repro_add<levels>(g, a * b, s1, s2, s3);
#endif
}

// The value of an accumulator.
KOKKOS_INLINE_FUNCTION double repro_value(double s1, double s2, double s3) { return (s1 + s2) + s3; }

}  // namespace kpmap
