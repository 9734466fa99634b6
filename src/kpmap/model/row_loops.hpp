// Loops over the rows of a block, shared by the fused kernel's fp32 / fp64 loops
// (fused_kernels.hpp) and its 16-bit loops (half_kernels.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <type_traits>
#include <utility>

// GCC's vector extensions, in host code only (device passes keep the plain loops).
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && \
    !defined(__SYCL_DEVICE_ONLY__)
#define KPMAP_HOST_VECTORS 1
#endif

namespace kpmap::model_detail {

// f(q) for q = 0, 1, ..., count - 1, in that order. With `unroll`, as a loop unrolled in the
// source: q is an std::integral_constant, so every index into a block's residuals
// (GradientReduce::rows_block's and pair_block's r) is a constant when the compiler decides where
// they live, and they stay in registers. With a loop over a variable row index GCC 12 keeps them
// on the stack, writes them with scalar stores and reads them back as a vector for the axpy's
// broadcasts (block_axpy, pair_axpy), which store forwarding cannot serve: a stall per block,
// which bounds narrow rows. Unrolled, the loop bodies are copies: only the AVX2 version, whose
// work item is flattened into one function (Avx2Reduce), unrolls; elsewhere GCC left the copies
// of the dot products out of line.
template <class F, int... q>
KOKKOS_INLINE_FUNCTION void for_rows_as(const F& f, std::integer_sequence<int, q...>) {
  (f(std::integral_constant<int, q>()), ...);
}
template <int count, bool unroll, class F>
KOKKOS_INLINE_FUNCTION void for_rows(const F& f) {
#if defined(KPMAP_HOST_VECTORS)
  constexpr bool unrolled = unroll;
#else
  constexpr bool unrolled = false;  // device passes: the plain loop
#endif
  if constexpr (unrolled) {
    for_rows_as(f, std::make_integer_sequence<int, count>());
  } else {
    for (int q = 0; q < count; ++q) f(q);
  }
}

}  // namespace kpmap::model_detail
