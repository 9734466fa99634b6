// What the model layer's unit tests share: host copies and Views filled from host doubles
// (support/host_copy.hpp), and reproducible pseudo-random values.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kpmap/core/types.hpp"
#include "kpmap/data/synthetic.hpp"
#include "support/host_copy.hpp"

namespace kpmap::test {

template <class V>
auto to_host(const V& v) {
  return host_copy(v);
}

// n values uniform in the synthetic generator's range, a pure function of (stream, i).
inline std::vector<double> hashed(std::size_t n, std::uint64_t stream) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = synthetic::uniform(99, stream, i, 0);
  return v;
}

}  // namespace kpmap::test
