#include "kpmap/core/dtype.hpp"

namespace kpmap {

std::string to_string(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp64: return "fp64";
    case Dtype::fp32: return "fp32";
    case Dtype::bf16: return "bf16";
    case Dtype::fp16: return "fp16";
  }
  return "?";
}

std::optional<Dtype> dtype_from_string(const std::string& name) {
  for (Dtype d : {Dtype::fp64, Dtype::fp32, Dtype::bf16, Dtype::fp16}) {
    if (to_string(d) == name) return d;
  }
  return std::nullopt;
}

}  // namespace kpmap
