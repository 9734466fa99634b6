// Host copies of Views of any layout, for tests that read or write elements on the host, and
// View1s filled from host doubles (device_vector).
//
// Kokkos copies between memory spaces only Views whose memory is contiguous (deep_copy refuses a
// padded LayoutLeft subview or a LayoutStride View of device memory, "no available copy
// mechanism"), while within one space it copies between any layouts. So a View in memory the host
// cannot read goes through a contiguous row-major View of its own space; a View the host can read
// is its own copy, as Kokkos' mirrors are.
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>
#include <vector>

#include "kpmap/core/types.hpp"

namespace kpmap::test {

template <class V>
inline constexpr bool host_readable_v =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible;

// A row-major View of V's rank, extents and memory space.
template <class V>
auto contiguous_like(const V& v) {
  using C = Kokkos::View<typename V::non_const_data_type, Kokkos::LayoutRight, typename V::memory_space>;
  const auto a = Kokkos::view_alloc(std::string("kpmap::test::contiguous"), Kokkos::WithoutInitializing);
  constexpr int R = static_cast<int>(V::rank);
  static_assert(R <= 4, "Views of rank 0 to 4");
  if constexpr (R == 0) return C(a);
  else if constexpr (R == 1) return C(a, v.extent(0));
  else if constexpr (R == 2) return C(a, v.extent(0), v.extent(1));
  else if constexpr (R == 3) return C(a, v.extent(0), v.extent(1), v.extent(2));
  else return C(a, v.extent(0), v.extent(1), v.extent(2), v.extent(3));
}

// v's elements in host memory: v itself where the host can read it, else a row-major copy.
template <class V>
auto host_copy(const V& v) {
  if constexpr (host_readable_v<V>) {
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  } else {
    const auto c = contiguous_like(v);
    Kokkos::deep_copy(c, v);
    return Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
  }
}

// Calls write(h) on host memory that holds v's elements, then puts h into v: v's own memory
// where the host can write it.
template <class V, class Write>
void write_through_host(const V& v, const Write& write) {
  if constexpr (host_readable_v<V>) {
    auto h = Kokkos::create_mirror_view(v);
    write(h);
    Kokkos::deep_copy(v, h);
  } else {
    const auto c = contiguous_like(v);
    Kokkos::deep_copy(c, v);
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), c);
    write(h);
    Kokkos::deep_copy(c, h);
    Kokkos::deep_copy(v, c);
  }
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

}  // namespace kpmap::test
