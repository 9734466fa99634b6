// The gradient kernels a LinearModel can run (train.kernel), and which one runs by default.
#pragma once

#include <Kokkos_Core.hpp>
#include <string>

#include "kpmap/core/types.hpp"

namespace kpmap {

// fused:          one RangePolicy pass over the rows (model/fused_kernels.hpp), tuned for CPUs.
// kokkos_kernels: KokkosBlas gemv N and T (model/blas_kernels.hpp).
// team:           a TeamPolicy kernel shaped for GPUs (model/team_kernels.hpp): teams over blocks
//                 of rows, vector lanes over features, per-team partial gradients summed in a
//                 fixed order by a second kernel.
enum class GradientKernel { fused, kokkos_kernels, team };

// Whether kpmap::execution_space runs on the host (Serial, OpenMP, Threads) rather than on a GPU
// (Cuda, HIP, SYCL): whether host code can read its memory space.
inline constexpr bool host_execution_v =
    Kokkos::SpaceAccessibility<Kokkos::HostSpace, execution_space::memory_space>::accessible;

// The kernel of train.kernel auto (the default): fused on host execution spaces, team on GPU
// ones.
constexpr GradientKernel default_gradient_kernel() {
  return host_execution_v ? GradientKernel::fused : GradientKernel::team;
}

std::string to_string(GradientKernel kernel);
// A kernel's name, or "auto" for default_gradient_kernel(); throws InputError naming
// train.kernel and the allowed values.
GradientKernel parse_gradient_kernel(const std::string& name);

}  // namespace kpmap
