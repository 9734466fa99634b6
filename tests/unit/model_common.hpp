// What the model layer's unit tests share: host copies and Views filled from host doubles
// (support/host_copy.hpp), and reproducible pseudo-random values.
#pragma once

#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kpmap/core/types.hpp"
#include "kpmap/data/synthetic.hpp"
#include "support/host_copy.hpp"

namespace kpmap::test {

// The execution space's thread count, printed; under a ctest entry that sets
// KPMAP_TEST_EXPECT_THREADS (the .threads2 runs) it must be that many, so that a misconfigured run
// cannot pass on one thread.
inline int expect_thread_count() {
  const int threads = kpmap::execution_space().concurrency();
  std::printf("execution space %s, %d thread(s)\n", kpmap::execution_space::name(), threads);
  if (const char* expected = std::getenv("KPMAP_TEST_EXPECT_THREADS")) {
    EXPECT_EQ(threads, std::atoi(expected));
  }
  return threads;
}

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
