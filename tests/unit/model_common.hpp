// What the model layer's unit tests share: host copies, Views filled from host doubles, and
// reproducible pseudo-random values.
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

// A View1<T> filled from host doubles.
template <class T>
View1<T> device_vector(const std::vector<double>& values, const std::string& label = "test") {
  View1<T> v(label, values.size());
  auto h = Kokkos::create_mirror_view(v);
  for (std::size_t i = 0; i < values.size(); ++i) h(i) = static_cast<T>(values[i]);
  Kokkos::deep_copy(v, h);
  return v;
}

// n values uniform in the synthetic generator's range, a pure function of (stream, i).
inline std::vector<double> hashed(std::size_t n, std::uint64_t stream) {
  std::vector<double> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = synthetic::uniform(99, stream, i, 0);
  return v;
}

}  // namespace kpmap::test
