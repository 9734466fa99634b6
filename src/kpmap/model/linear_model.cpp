#include "kpmap/model/linear_model.hpp"

#include "kpmap/core/error.hpp"

namespace kpmap {

std::string to_string(GradientKernel kernel) {
  return kernel == GradientKernel::fused ? "fused" : "kokkos_kernels";
}

GradientKernel parse_gradient_kernel(const std::string& name) {
  if (name == "fused") return GradientKernel::fused;
  if (name == "kokkos_kernels") return GradientKernel::kokkos_kernels;
  throw InputError("train.kernel: '" + name + "' is not one of fused, kokkos_kernels");
}

}  // namespace kpmap
