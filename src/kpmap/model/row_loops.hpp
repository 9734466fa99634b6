// Loops over the rows of a block, and the rounding of a product added to a sum, shared by the
// fused kernel's fp32 / fp64 loops (fused_kernels.hpp) and its 16-bit loops (half_kernels.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstring>
#include <type_traits>
#include <utility>

#include "kpmap/model/host_isa.hpp"

#if defined(KPMAP_AVX2_DISPATCH)
#include "kpmap/core/x86_intrinsics.hpp"
#endif

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
// work item is flattened into one function (run_avx2, run_avx512), unrolls; elsewhere GCC left the copies
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

// sum + a * b, rounded the same way wherever it is inlined: fused when the target has a fast fma
// (-march=native on x86, or aarch64) or the caller is compiled for one (`fused`: the AVX2 + FMA
// version of the fused kernel, host_isa.hpp), else a product then a sum. Written as
// `sum += a * b`, the rounding was the compiler's choice in each inlining context under its
// default -ffp-contract=fast: for bf16 the loss sum used a plain product in one instantiation of
// the same code and an fma in another (the products of 8 residuals vectorised, the sum not), so
// it could change with code around the kernel. Device passes keep the plain expression.
template <bool fused = false, class Acc>
KOKKOS_INLINE_FUNCTION Acc add_product(Acc sum, Acc a, Acc b) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
  if constexpr (fused && std::is_same_v<Acc, float>) {
    return __builtin_fmaf(a, b, sum);
  } else if constexpr (fused && std::is_same_v<Acc, double>) {
    return __builtin_fma(a, b, sum);
  } else if constexpr (std::is_same_v<Acc, float>) {
#if defined(__FP_FAST_FMAF)
    return __builtin_fmaf(a, b, sum);
#endif
  } else if constexpr (std::is_same_v<Acc, double>) {
#if defined(__FP_FAST_FMA)
    return __builtin_fma(a, b, sum);
#endif
  }
#endif
  return sum + a * b;
}

// v[0] + ... + v[count - 1] as a balanced tree: the first half's sum plus the second half's,
// ((v0 + v1) + (v2 + v3)) + ((v4 + v5) + (v6 + v7)) for 8; v[0] for 1.
template <int count, class Acc>
KOKKOS_INLINE_FUNCTION Acc tree_sum(const Acc* v) {
  if constexpr (count == 1) {
    return v[0];
  } else {
    return tree_sum<count / 2>(v) + tree_sum<count - count / 2>(v + count / 2);
  }
}

// v[0]^2 + ... + v[count - 1]^2 on tree_sum's tree, each pair's squares a^2 + b^2 formed as
// add_product<fused>(b * b, a, a): for 8, ((s01 + s23) + (s45 + s67)) with s_ab = a^2 + b^2.
template <int count, bool fused = false, class Acc>
KOKKOS_INLINE_FUNCTION Acc tree_squares(const Acc* v) {
  if constexpr (count == 1) {
    return v[0] * v[0];
  } else if constexpr (count == 2) {
    return add_product<fused>(v[1] * v[1], v[0], v[0]);
  } else {
    return tree_squares<count / 2, fused>(v) + tree_squares<count - count / 2, fused>(v + count / 2);
  }
}

#if defined(KPMAP_HOST_VECTORS)
#if defined(KPMAP_AVX2_DISPATCH)
// The fused products of the AVX2 + FMA version's vector loops, as FMA instructions: compiled for
// FMA, inlined into that version (flatten) when optimising and called from it otherwise. Left to
// the compiler's contraction, `sum += a * b` was fused when optimising and not at -O0, where the
// scalar code's add_product<true> still was. The vectors go by reference, so none crosses a call
// between code of different targets by value.
typedef float fma_floats4 __attribute__((vector_size(16)));
typedef float fma_floats8 __attribute__((vector_size(32)));
typedef double fma_doubles2 __attribute__((vector_size(16)));
typedef double fma_doubles4 __attribute__((vector_size(32)));
__attribute__((target("avx2,fma"))) inline void fused_add_product(fma_floats4& sum, const fma_floats4& a,
                                                                 const fma_floats4& b) {
  sum = _mm_fmadd_ps(a, b, sum);
}
__attribute__((target("avx2,fma"))) inline void fused_add_product(fma_floats8& sum, const fma_floats8& a,
                                                                 const fma_floats8& b) {
  sum = _mm256_fmadd_ps(a, b, sum);
}
__attribute__((target("avx2,fma"))) inline void fused_add_product(fma_doubles2& sum, const fma_doubles2& a,
                                                                 const fma_doubles2& b) {
  sum = _mm_fmadd_pd(a, b, sum);
}
__attribute__((target("avx2,fma"))) inline void fused_add_product(fma_doubles4& sum, const fma_doubles4& a,
                                                                 const fma_doubles4& b) {
  sum = _mm256_fmadd_pd(a, b, sum);
}
// The AVX-512 version's (fused_kernels.hpp, wide_rows_avx512).
typedef float fma_floats16 __attribute__((vector_size(64)));
typedef double fma_doubles8 __attribute__((vector_size(64)));
__attribute__((target(KPMAP_AVX512_TARGET))) inline void fused_add_product(fma_floats16& sum, const fma_floats16& a,
                                                                          const fma_floats16& b) {
  sum = _mm512_fmadd_ps(a, b, sum);
}
__attribute__((target(KPMAP_AVX512_TARGET))) inline void fused_add_product(fma_doubles8& sum, const fma_doubles8& a,
                                                                          const fma_doubles8& b) {
  sum = _mm512_fmadd_pd(a, b, sum);
}
#endif

// sum += a * b on GCC vector types, lane by lane: one fma per lane in the AVX2 + FMA version
// (`fused`), as add_product<true> for scalars; a product and a sum elsewhere.
template <bool fused, class V>
KOKKOS_INLINE_FUNCTION void add_products(V& sum, const V& a, const V& b) {
#if defined(KPMAP_AVX2_DISPATCH)
  if constexpr (fused) {
    fused_add_product(sum, a, b);
  } else {
    sum += a * b;
  }
#else
  static_assert(!fused, "fused vector products are the AVX2 + FMA version's");
  sum += a * b;
#endif
}

// v[q] = a[q] in every lane, for q < rows: the block's residuals as the axpy's broadcasts
// (block_axpy, pair_axpy); unrolled as for_rows, so the residuals stay in registers.
template <int rows, bool unroll, class V, class Acc>
KOKKOS_INLINE_FUNCTION void broadcast_rows(const Acc* a, V* v) {
  constexpr int per = static_cast<int>(sizeof(V) / sizeof(Acc));
  for_rows<rows, unroll>([&](auto q) {
    Acc lane[per];
    for (int k = 0; k < per; ++k) lane[k] = a[q];
    std::memcpy(&v[q], lane, sizeof(V));
  });
}
#endif

}  // namespace kpmap::model_detail
