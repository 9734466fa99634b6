// Counts Kokkos memory allocations through Kokkos Tools' allocation callback, for the tests that
// assert "no Kokkos allocation in steady state": while a CountKokkosAllocations lives,
// kpmap::test::kokkos_allocations counts them from 0 and kokkos_allocation_labels keeps their
// labels (what a failure names).
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace kpmap::test {

inline long kokkos_allocations = 0;
inline std::vector<std::string> kokkos_allocation_labels;

// Allocations of zero bytes are not counted: Kokkos' CUDA backend reports one per TeamPolicy
// launch without level-1 scratch (CudaInternal::resize_team_scratch_space, Kokkos 4.6), which
// allocates no memory.
inline void count_kokkos_allocation(Kokkos_Profiling_SpaceHandle, const char* label, const void*,
                                    std::uint64_t bytes) {
  if (bytes == 0) return;
  ++kokkos_allocations;
  kokkos_allocation_labels.emplace_back(label != nullptr ? label : "");
}

// The labels of allocations [from, to) of this count, comma-separated.
inline std::string allocation_labels(long from, long to) {
  std::string out;
  const std::size_t end = std::min(static_cast<std::size_t>(to), kokkos_allocation_labels.size());
  for (auto k = static_cast<std::size_t>(from); k < end; ++k) {
    out += (out.empty() ? "" : ", ") + kokkos_allocation_labels[k];
  }
  return out;
}

struct CountKokkosAllocations {
  CountKokkosAllocations() {
    kokkos_allocations = 0;
    kokkos_allocation_labels.clear();
    Kokkos::Tools::Experimental::set_allocate_data_callback(count_kokkos_allocation);
  }
  ~CountKokkosAllocations() { Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr); }
};

}  // namespace kpmap::test
