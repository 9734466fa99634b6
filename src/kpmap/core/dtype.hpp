// Element types of storage, compute and communication, without Kokkos: the config layer (and the
// deck fuzzer, which builds it alone) needs the names, not the Views.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace kpmap {

// Element types of storage, compute and communication. bf16 and fp16 are kpmap's own 16-bit
// types (core/half.hpp).
enum class Dtype { fp64, fp32, bf16, fp16 };

inline constexpr std::size_t size_of(Dtype d) { return d == Dtype::fp64 ? 8 : d == Dtype::fp32 ? 4 : 2; }
// "fp64", "fp32", "bf16", "fp16": the names decks and reports use.
std::string to_string(Dtype dtype);
// The type such a name names; nothing for any other string.
std::optional<Dtype> dtype_from_string(const std::string& name);

}  // namespace kpmap
