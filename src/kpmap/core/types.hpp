// Execution and memory spaces kpmap runs on, and the View aliases every layer shares.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kpmap/config.hpp"
#include "kpmap/core/dtype.hpp"

namespace kpmap {

#if defined(KPMAP_EXECUTION_SPACE_Serial)
using execution_space = Kokkos::Serial;
#elif defined(KPMAP_EXECUTION_SPACE_OpenMP)
using execution_space = Kokkos::OpenMP;
#elif defined(KPMAP_EXECUTION_SPACE_Cuda)
using execution_space = Kokkos::Cuda;
#elif defined(KPMAP_EXECUTION_SPACE_HIP)
using execution_space = Kokkos::Experimental::HIP;
#else
using execution_space = Kokkos::DefaultExecutionSpace;
#endif
using memory_space = execution_space::memory_space;
using device_type = Kokkos::Device<execution_space, memory_space>;

template <class T>
using View1 = Kokkos::View<T*, device_type>;
template <class T>
using View2 = Kokkos::View<T**, device_type>;
template <class T>
using View3 = Kokkos::View<T***, device_type>;

// Whether host code (MPI, in particular) may dereference a View of this memory space.
template <class MemorySpace>
inline constexpr bool host_accessible_v =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, MemorySpace>::accessible;

// exec.fence() with no allocation per call: from Kokkos 3.5 every fence takes a name, and the
// default one is a std::string built at each call (longer than the small-string buffer). Waits
// for the work submitted to this instance only.
template <class Exec>
void fence_instance(const Exec& exec) {
#if KOKKOS_VERSION >= 30500
  static const std::string name = "kpmap::fence";
  exec.fence(name);
#else
  exec.fence();
#endif
}

}  // namespace kpmap
