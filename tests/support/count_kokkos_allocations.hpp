// Counts Kokkos memory allocations through Kokkos Tools' allocation callback, for the tests that
// assert "no Kokkos allocation in steady state": kpmap::test::kokkos_allocations grows while a
// CountKokkosAllocations lives.
#pragma once

#include <Kokkos_Core.hpp>
#include <cstdint>

namespace kpmap::test {

inline long kokkos_allocations = 0;

inline void count_kokkos_allocation(Kokkos_Profiling_SpaceHandle, const char*, const void*, std::uint64_t) {
  ++kokkos_allocations;
}

struct CountKokkosAllocations {
  CountKokkosAllocations() {
    Kokkos::Tools::Experimental::set_allocate_data_callback(count_kokkos_allocation);
  }
  ~CountKokkosAllocations() { Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr); }
};

}  // namespace kpmap::test
