// The synthetic regression problem y = X w* + b* + noise. Every entry is a pure function of
// (seed, global row, global column) through a counter-based hash, so any mesh, rank count and
// execution space sees bit-identical X and w* (y too, up to the last bit of log/cos in the noise
// term when host and device math libraries differ; noise-free problems are bit-identical).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <utility>
#include <vector>

namespace kpmap {

struct SyntheticProblem {
  long long samples = 0;   // global rows of X
  long long features = 0;  // global columns of X
  bool bias = true;        // b* != 0 and the model fits a bias
  double noise = 0.0;      // standard deviation of the Gaussian noise added to y
  std::uint64_t seed = 42;
  double weight_scale = 1.0;  // w* and b* uniform in [-weight_scale, weight_scale)
};

// Throws InputError (exit 2) naming the problem.* key when a field is out of range.
void validate(const SyntheticProblem& problem);

namespace synthetic {

// Independent streams of the generator, so X, w*, b* and the noise never share a counter.
enum Stream : std::uint64_t { stream_x = 1, stream_w = 2, stream_b = 3, stream_noise1 = 4, stream_noise2 = 5 };

// SplitMix64's finaliser: a bijection on 64 bits with full avalanche.
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Hash of the counter (seed, stream, row, col); chained so that swapping row and col changes it.
KOKKOS_INLINE_FUNCTION std::uint64_t hash(std::uint64_t seed, std::uint64_t stream, std::uint64_t row,
                                          std::uint64_t col) {
  return mix64(mix64(mix64(seed ^ mix64(stream)) + row) + col);
}

// Uniform in [-1, 1) from the top 53 bits: exact in double, so identical on every device.
KOKKOS_INLINE_FUNCTION double uniform(std::uint64_t seed, std::uint64_t stream, std::uint64_t row,
                                      std::uint64_t col) {
  const double unit = static_cast<double>(hash(seed, stream, row, col) >> 11) * 0x1.0p-53;  // [0, 1)
  return 2.0 * unit - 1.0;
}

KOKKOS_INLINE_FUNCTION double x_entry(std::uint64_t seed, long long row, long long col) {
  return uniform(seed, stream_x, static_cast<std::uint64_t>(row), static_cast<std::uint64_t>(col));
}

// Scaled after drawing, so a scale of 1 gives the same bits as no scale.
KOKKOS_INLINE_FUNCTION double true_weight(std::uint64_t seed, long long col, double scale) {
  return uniform(seed, stream_w, 0, static_cast<std::uint64_t>(col)) * scale;
}

KOKKOS_INLINE_FUNCTION double true_bias(std::uint64_t seed, bool bias, double scale) {
  return bias ? uniform(seed, stream_b, 0, 0) * scale : 0.0;
}

// Standard normal by Box-Muller from two hashed uniforms; u1 in (0, 1] keeps log finite.
KOKKOS_INLINE_FUNCTION double gaussian(std::uint64_t seed, long long row) {
#if KOKKOS_VERSION >= 30700
  using Kokkos::cos;
  using Kokkos::log;
  using Kokkos::sqrt;
#else
  using Kokkos::Experimental::cos;
  using Kokkos::Experimental::log;
  using Kokkos::Experimental::sqrt;
#endif
  const auto r = static_cast<std::uint64_t>(row);
  const double u1 = 1.0 - static_cast<double>(hash(seed, stream_noise1, r, 0) >> 11) * 0x1.0p-53;
  const double u2 = static_cast<double>(hash(seed, stream_noise2, r, 0) >> 11) * 0x1.0p-53;
  constexpr double two_pi = 6.283185307179586476925286766559;
  return sqrt(-2.0 * log(u1)) * cos(two_pi * u2);
}

}  // namespace synthetic

// w*_j for the global columns [col_begin, col_end), in double (what weights_rel_error compares).
std::vector<double> true_weights(const SyntheticProblem& problem, long long col_begin, long long col_end);

// b* (0 when problem.bias is false).
double true_bias(const SyntheticProblem& problem);

// Half-open range [begin, end) of a block split: part p of P over n items gets
// [floor(p*n/P), floor((p+1)*n/P)). Used for the model axis (columns) and a batch's data slices.
struct Range {
  long long begin = 0;
  long long end = 0;
  long long size() const { return end - begin; }
};
Range block_range(long long n, long long part, long long parts);

// Throws InputError when columns is not a range inside [0, problem.features).
void validate_columns(const SyntheticProblem& problem, Range columns);

// Columns owned by model rank m of M.
inline Range column_range(long long features, int m, int M) { return block_range(features, m, M); }

// The batching contract (decomposition-independent, drop_last): global batch size B,
// nb = samples / B batches per epoch, step s uses global batch k = s mod nb covering global rows
// [k*B, (k+1)*B), and data rank d of D takes rows [k*B + lo_d, k*B + hi_d) with
// [lo_d, hi_d) = block_range(B, d, D). The slice may be empty when D > B.
struct BatchPlan {
  long long samples = 0;
  long long batch = 0;      // B, global rows per step
  long long batches = 0;    // nb = samples / batch
  Range slice;              // [lo_d, hi_d) within every global batch
  long long batch_of_step(long long step) const { return step % batches; }
  // Global row of local slice row i in global batch k.
  KOKKOS_INLINE_FUNCTION long long global_row(long long k, long long i) const {
    return k * batch + slice.begin + i;
  }
};

// Throws InputError naming train.batch when batch is not in [1, samples].
BatchPlan make_batch_plan(long long samples, long long batch, int data_rank, int data_size);

}  // namespace kpmap
