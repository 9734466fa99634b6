#include "kpmap/bench/bench.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kpmap/bench/check.hpp"
#include "kpmap/core/error.hpp"

namespace kpmap {

namespace {

constexpr Collective all_collectives[] = {
    Collective::psum,       Collective::pmean,      Collective::pmax,
    Collective::pmin,       Collective::all_gather, Collective::psum_scatter,
    Collective::all_to_all, Collective::ppermute,   Collective::pbroadcast, Collective::psum_reproducible};

// Collectives whose per-rank buffers are n blocks of `count` elements on one side.
bool blocked(Collective c) {
  return c == Collective::all_gather || c == Collective::psum_scatter || c == Collective::all_to_all;
}

// The largest L such that every integer in [0, L] is exact in the type.
double exact_integers(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp64:
      return 9007199254740992.0;  // 2^53
    case Dtype::fp32:
      return 16777216.0;  // 2^24
    case Dtype::fp16:
      return 2048.0;  // 2^11
    case Dtype::bf16:
      return 256.0;  // 2^8
  }
  return 0.0;
}

}  // namespace

std::string to_string(Collective c) {
  switch (c) {
    case Collective::psum:
      return "psum";
    case Collective::pmean:
      return "pmean";
    case Collective::pmax:
      return "pmax";
    case Collective::pmin:
      return "pmin";
    case Collective::all_gather:
      return "all_gather";
    case Collective::psum_scatter:
      return "psum_scatter";
    case Collective::all_to_all:
      return "all_to_all";
    case Collective::ppermute:
      return "ppermute";
    case Collective::pbroadcast:
      return "pbroadcast";
    case Collective::psum_reproducible:
      return "psum_reproducible";
  }
  return "?";
}

Collective parse_collective(const std::string& name) {
  for (Collective c : all_collectives) {
    if (to_string(c) == name) return c;
  }
  throw InputError("'" + name + "' is not a collective kpmap benchmarks");
}

const char* redop(Collective c) {
  switch (c) {
    case Collective::psum:
    case Collective::psum_scatter:
    case Collective::psum_reproducible:
      return "sum";
    case Collective::pmean:
      return "avg";
    case Collective::pmax:
      return "max";
    case Collective::pmin:
      return "min";
    default:
      return "none";
  }
}

std::size_t element_size(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp64:
      return 8;
    case Dtype::fp32:
      return 4;
    case Dtype::bf16:
    case Dtype::fp16:
      return 2;
  }
  return 0;
}

Message message(Collective c, std::int64_t bytes, std::size_t element_size, int n) {
  const std::int64_t elements = bytes / static_cast<std::int64_t>(element_size);
  Message m;
  if (blocked(c)) {
    m.count = std::max<std::int64_t>(1, elements / n);
    m.in = c == Collective::all_gather ? m.count : n * m.count;
    m.out = c == Collective::psum_scatter ? m.count : n * m.count;
  } else {
    m.count = std::max<std::int64_t>(1, elements);
    m.in = m.out = m.count;
  }
  m.bytes = std::max(m.in, m.out) * static_cast<std::int64_t>(element_size);
  return m;
}

double busbw_factor(Collective c, int n) {
  const double nn = n;
  switch (c) {
    case Collective::psum:
    case Collective::pmean:
    case Collective::pmax:
    case Collective::pmin:
    case Collective::psum_reproducible:
      return 2.0 * (nn - 1.0) / nn;
    case Collective::all_gather:
    case Collective::psum_scatter:
    case Collective::all_to_all:
      return (nn - 1.0) / nn;
    case Collective::ppermute:
    case Collective::pbroadcast:
      return 1.0;
  }
  return 0.0;
}

int value_modulus(Dtype dtype, int n) {
  const double m = std::floor(exact_integers(dtype) / n) + 1.0;
  return static_cast<int>(std::min(1024.0, m));
}

double overhead(const BenchRow& row) {
  return row.baseline_time_us > 0 ? row.time_us / row.baseline_time_us - 1.0 : 0.0;
}

std::vector<std::int64_t> sweep_sizes(const BenchSpec& spec) {
  std::vector<std::int64_t> sizes;
  for (std::int64_t s = spec.min_bytes; s <= spec.max_bytes; s *= spec.factor) {
    sizes.push_back(s);
    if (s > std::numeric_limits<std::int64_t>::max() / spec.factor) break;
  }
  return sizes;
}

namespace bench {

std::vector<double> reduction_table(Collective c, int n, int m) {
  std::vector<double> r(static_cast<std::size_t>(m));
  for (int j = 0; j < m; ++j) {
    double sum = 0, hi = 0, lo = m;
    for (int b = 0; b < n; ++b) {
      const double v = static_cast<double>(pattern(b, j, m));
      sum += v;
      hi = std::max(hi, v);
      lo = std::min(lo, v);
    }
    switch (c) {
      case Collective::pmax:
        r[j] = hi;
        break;
      case Collective::pmin:
        r[j] = lo;
        break;
      case Collective::pmean:
        r[j] = sum / n;
        break;
      default:
        r[j] = sum;
    }
  }
  return r;
}

}  // namespace bench
}  // namespace kpmap
