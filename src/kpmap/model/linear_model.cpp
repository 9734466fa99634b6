#include "kpmap/model/gradient_kernel.hpp"

#include "kpmap/core/error.hpp"

namespace kpmap {

std::string to_string(GradientKernel kernel) {
  switch (kernel) {
    case GradientKernel::fused: return "fused";
    case GradientKernel::kokkos_kernels: return "kokkos_kernels";
    case GradientKernel::team: return "team";
  }
  return "fused";
}

GradientKernel parse_gradient_kernel(const std::string& name) {
  if (name == "fused") return GradientKernel::fused;
  if (name == "kokkos_kernels") return GradientKernel::kokkos_kernels;
  if (name == "team") return GradientKernel::team;
  if (name == "auto") return default_gradient_kernel();
  throw InputError("train.kernel: '" + name + "' is not one of fused, kokkos_kernels, team, auto");
}

}  // namespace kpmap
