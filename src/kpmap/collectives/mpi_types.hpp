// MPI datatypes and reduction ops for kpmap's element types, the element-type trait every
// collective checks at compile time, and the largest count kpmap hands one MPI call.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "kpmap/core/half.hpp"

namespace kpmap {

enum class ReduceOp { sum, max, min };

std::string to_string(ReduceOp op);

namespace detail {
template <class T, class... U>
inline constexpr bool is_one_of_v = (std::is_same_v<T, U> || ...);
}  // namespace detail

// The standard integer types (and char): signed char, short, int, long, long long, their
// unsigned counterparts, and char. MPI sees each as the fixed-width MPI type of its size and
// signedness (long long as MPI_INT64_T, unsigned as MPI_UINT32_T, ...). bool, wchar_t and the
// charN_t types are not integers here.
template <class T>
inline constexpr bool is_integer_element_v =
    detail::is_one_of_v<T, char, signed char, unsigned char, short, unsigned short, int,
                        unsigned int, long, unsigned long, long long, unsigned long long>;

// float, double, kpmap::bf16 and kpmap::fp16 (not long double).
template <class T>
inline constexpr bool is_floating_element_v = detail::is_one_of_v<T, float, double, bf16, fp16>;

// Every element type kpmap's collectives take.
template <class T>
inline constexpr bool is_element_v = is_integer_element_v<T> || is_floating_element_v<T>;

// Instantiated by every collective on its element type. An unsupported type stops the compile
// here, and the compiler's "required from ... [with T = ...]" line names the type.
template <class T>
struct element_type_check {
  static_assert(is_element_v<T>,
                "kpmap: unsupported element type T for a collective (the compiler names T in "
                "the instantiation below). Supported: float, double, kpmap::bf16, kpmap::fp16, "
                "and the standard integer types (signed/unsigned char, short, int, long, "
                "long long; char)");
  static constexpr bool value = true;
};

// The type pmean returns for elements of type T, as JAX's pmean (psum, then true division by
// the axis size): floating types keep their type; integers of up to 32 bits give float, as
// JAX's default (x64 disabled) float32; 64-bit integers give double, JAX's float64 (int64
// arrays exist in JAX only with x64 enabled, where the default float is float64).
template <class T>
using pmean_result_t = std::conditional_t<is_floating_element_v<T>, T,
                                          std::conditional_t<(sizeof(T) <= 4), float, double>>;

// Whether MPI reduces T with `op` through one of kpmap's user-defined ops (a host function MPI
// calls on the buffers): every op of bf16 and fp16, and max/min of float and double.
template <class T>
constexpr bool uses_user_op(ReduceOp op) {
  return std::is_same_v<T, bf16> || std::is_same_v<T, fp16> ||
         (std::is_floating_point_v<T> && op != ReduceOp::sum);
}

namespace detail {

enum class UserType { fp64, fp32, bf16, fp16 };

// The registry's handles (mpi_types.cpp); `what` names the caller in the error thrown before
// MPI_Init or after MPI_Finalize.
MPI_Datatype user_datatype(UserType which, const char* what);
MPI_Op user_op(UserType which, ReduceOp op, const char* what);

inline MPI_Op predefined_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return MPI_SUM;
    case ReduceOp::max: return MPI_MAX;
    case ReduceOp::min: return MPI_MIN;
  }
  return MPI_OP_NULL;
}

// The most elements kpmap hands one MPI call: INT_MAX (MPI's int count), unless a test lowered
// it. Larger messages are split into several calls of at most this many elements.
std::int64_t chunk_limit();

// Test hook: lowers the chunk limit to `elements` (>= 1) so that small messages take the
// chunked path; 0 restores INT_MAX. Not thread-safe; set it between collectives, on every rank.
void set_chunk_limit(std::int64_t elements);

}  // namespace detail

// The MPI datatype of one element of T. Integers: MPI_INT8_T ... MPI_INT64_T or MPI_UINT8_T ...
// MPI_UINT64_T by size and signedness. float and double: MPI_FLOAT, MPI_DOUBLE. bf16 and fp16:
// a committed 2-byte contiguous type (one MPI_UINT16_T holding the bit pattern), created on
// first use and freed at MPI_Finalize. Any other T fails to compile (element_type_check).
template <class T>
MPI_Datatype mpi_datatype() {
  static_assert(element_type_check<T>::value);
  if constexpr (std::is_same_v<T, double>) {
    return MPI_DOUBLE;
  } else if constexpr (std::is_same_v<T, float>) {
    return MPI_FLOAT;
  } else if constexpr (std::is_same_v<T, bf16>) {
    return detail::user_datatype(detail::UserType::bf16, "kpmap::mpi_datatype<bf16>");
  } else if constexpr (std::is_same_v<T, fp16>) {
    return detail::user_datatype(detail::UserType::fp16, "kpmap::mpi_datatype<fp16>");
  } else if constexpr (is_integer_element_v<T> && std::is_signed_v<T>) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
    if constexpr (sizeof(T) == 1) return MPI_INT8_T;
    else if constexpr (sizeof(T) == 2) return MPI_INT16_T;
    else if constexpr (sizeof(T) == 4) return MPI_INT32_T;
    else return MPI_INT64_T;
  } else if constexpr (is_integer_element_v<T>) {
    static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4 || sizeof(T) == 8);
    if constexpr (sizeof(T) == 1) return MPI_UINT8_T;
    else if constexpr (sizeof(T) == 2) return MPI_UINT16_T;
    else if constexpr (sizeof(T) == 4) return MPI_UINT32_T;
    else return MPI_UINT64_T;
  } else {
    return MPI_DATATYPE_NULL;  // unreachable: element_type_check stopped the compile
  }
}

// The MPI reduction op for T. Integers: the predefined MPI_SUM, MPI_MAX, MPI_MIN (unsigned sums
// wrap modulo 2^bits, as in JAX). float and double: MPI_SUM, and for max and min commutative
// user-defined ops (MPI_MAX/MPI_MIN leave NaN to the implementation). bf16 and fp16:
// user-defined ops for all three, valid only with mpi_datatype<T>(); sum adds each pair in float
// and rounds back to 16 bits (so a reduction over p ranks rounds up to p-1 times; see
// docs/precision.md).
// Every floating max and min propagates NaN (kpmap's deliberate rule, docs/collectives.md:
// whichever rank holds it), orders -0 below +0, and keeps the winning element's bits unchanged
// (16-bit types compare in float). User ops are created on first use and freed at
// MPI_Finalize; asking for one before MPI_Init or after MPI_Finalize throws RuntimeError. They
// run on the host: see uses_user_op and docs/collectives.md (GPU-aware MPI).
template <class T>
MPI_Op mpi_op(ReduceOp op) {
  static_assert(element_type_check<T>::value);
  using detail::UserType;
  if constexpr (std::is_same_v<T, double>) {
    return op == ReduceOp::sum ? MPI_SUM
                               : detail::user_op(UserType::fp64, op, "kpmap::mpi_op<double>");
  } else if constexpr (std::is_same_v<T, float>) {
    return op == ReduceOp::sum ? MPI_SUM
                               : detail::user_op(UserType::fp32, op, "kpmap::mpi_op<float>");
  } else if constexpr (std::is_same_v<T, bf16>) {
    return detail::user_op(UserType::bf16, op, "kpmap::mpi_op<bf16>");
  } else if constexpr (std::is_same_v<T, fp16>) {
    return detail::user_op(UserType::fp16, op, "kpmap::mpi_op<fp16>");
  } else {
    return detail::predefined_op(op);
  }
}

}  // namespace kpmap
