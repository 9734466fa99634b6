// The benchmarks' quartiles and medians (bench_gradient's paired rows, bench_step's paired ratios,
// bench_comm's and bench_reproducible's medians).
#pragma once
#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace kpmap_perf {

// The value at fraction q (0: smallest, 0.5: median, 1: largest) of v, the nearest rank; v not empty.
inline double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

// quantile(v, 0.5): v[n / 2] of the sorted v, the upper of the two middle values when n is even.
inline double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

}  // namespace kpmap_perf
