// The fused kernel's inner loops for 16-bit rows with float sums (LinearModel<bf16, float>,
// LinearModel<fp16, float>).
//
// Read as 32-bit words, a pair of 16-bit elements gives both elements' bits in the high half of
// a 32-bit lane with one op each: the element at the lower address is `word << 16`, the other
// `word & 0xffff0000`. For bf16 that already is the float; for fp16 the branch-free rebias of
// core/half.hpp (fp16_high_bits_to_float) follows. These are plain 32-bit lane operations, so the
// loops vectorise with no shuffles. Written per element (static_cast<float>), the compiler
// zero-extends each element and then shifts it: two vector ops per 4 elements where bf16 needs
// one (docs/performance.md).
//
// The price is the order of the sums. The dot product does not care which element is added
// first, but the axpy writes the gradient in that split order. So for 16-bit rows the
// thread-private gradient is kept in "pair order": each group of 16 features (8 words) is stored
// as its 8 even features, then its 8 odd ones; the features after the last full group stay in
// natural order. pair_slot maps a feature to its slot; add_gradient undoes the permutation once
// per call.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kpmap/core/half.hpp"
#include "kpmap/model/prefetch.hpp"
#include "kpmap/model/row_loops.hpp"

// GCC's vector extensions for bf16 rows, in host code on little-endian hosts with
// __builtin_shufflevector (GCC 12, Clang).
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && \
    !defined(__SYCL_DEVICE_ONLY__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && \
    defined(__has_builtin)
#if __has_builtin(__builtin_shufflevector)
#define KPMAP_HALF_VECTORS 1
#endif
#endif

namespace kpmap::model_detail {

// Features per group in pair order: 8 words, 32 bytes (one AVX or two SSE registers).
inline constexpr long long pair_group = 16;

// The slot of feature j in a gradient of F features kept in pair order.
KOKKOS_INLINE_FUNCTION long long pair_slot(long long j, long long F) {
  const long long full = F - F % pair_group;
  if (j >= full) return j;
  const long long base = j - j % pair_group, k = j % pair_group;
  return base + (k % 2) * (pair_group / 2) + k / 2;
}

// The 32-bit word holding p[0] (low half) and p[1] (high half), at any 2-byte alignment. On a
// little-endian host that is the memory itself: memcpy is a well-defined unaligned load, one
// instruction; elsewhere (device passes, big-endian hosts) the word is put together explicitly.
template <class H>
KOKKOS_INLINE_FUNCTION std::uint32_t half_pair(const H* p) {
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  std::uint32_t word;
  std::memcpy(&word, p, sizeof word);
  return word;
#else
  return static_cast<std::uint32_t>(p[0].bits()) | (static_cast<std::uint32_t>(p[1].bits()) << 16);
#endif
}

// The float of the element whose bits are the high half of w (the low half is zero).
template <class H>
KOKKOS_INLINE_FUNCTION float high_half_value(std::uint32_t w) {
  static_assert(is_half<H>::value, "16-bit rows: bf16 or fp16");
  if constexpr (std::is_same_v<H, bf16>) {
    return detail::bits_to_float(w);
  } else {
    return detail::fp16_high_bits_to_float(w);
  }
}

// The elements of a word: p[0] (low_of) and p[1] (high_of), exactly static_cast<float>.
template <class H>
KOKKOS_INLINE_FUNCTION float low_of(std::uint32_t word) {
  return high_half_value<H>(word << 16);
}
template <class H>
KOKKOS_INLINE_FUNCTION float high_of(std::uint32_t word) {
  return high_half_value<H>(word & 0xffff0000u);
}

#if defined(KPMAP_HALF_VECTORS)
// 4 words (16 bytes) of one row, or of two rows (32 bytes), and their floats.
typedef std::uint32_t words4 __attribute__((vector_size(16)));
typedef std::uint32_t words8 __attribute__((vector_size(32)));
typedef float floats4 __attribute__((vector_size(16)));
typedef float floats8 __attribute__((vector_size(32)));
template <int span>
struct PairVectors {
  using U = words4;
  using V = floats4;
};
template <>
struct PairVectors<2> {
  using U = words8;
  using V = floats8;
};
#endif

// out[q] = sum_j x[q * stride + j] * w[j] for q < rows, the rows interleaved so that each word
// of w serves all of them, with 4 partial sums (one SSE register) per row, each adding the
// products of a word's two elements one after the other (`fused`: one fma each, add_product).
// Meanwhile rows [0, prefetch_rows) of the next block (at `next`) are requested, a cache line
// per row every 32 features.
// With KPMAP_HALF_VECTORS, bf16 rows run on vector types: the same lanes, products and adds in
// the same order as the plain loops, so the same sums. With vector_bytes 32 (the AVX2 version)
// two rows' 4 partial sums share one register. As plain loops, GCC built w's floats from scalars
// (a shift, a mask and an insert per word) at every step.
template <int rows, int vector_bytes = 16, bool unroll = false, bool fused = false, class H>
KOKKOS_INLINE_FUNCTION void pair_dot(const H* KOKKOS_RESTRICT x, long long stride, const H* KOKKOS_RESTRICT w,
                                     long long n, float* out, const H* next, int prefetch_rows) {
  constexpr int words = 4;
  constexpr long long line = 64 / static_cast<long long>(sizeof(H));
#if defined(KPMAP_HALF_VECTORS)
  if constexpr (std::is_same_v<H, bf16>) {
    constexpr int span = rows % (vector_bytes / 16) == 0 ? vector_bytes / 16 : 1;  // rows per vector
    using PV = PairVectors<span>;
    using U = typename PV::U;
    using V = typename PV::V;
    V part[rows / span];
    for (int p = 0; p < rows / span; ++p) part[p] = V{};
    long long j = 0;
    for (; j + 2 * words <= n; j += 2 * words) {
      if (j % line == 0) {
        for (int q = 0; q < prefetch_rows; ++q) prefetch_hint(next + q * stride + j);
      }
      words4 w4;
      std::memcpy(&w4, w + j, 16);
      U ww;
      if constexpr (span == 2) {
        ww = __builtin_shufflevector(w4, w4, 0, 1, 2, 3, 4, 5, 6, 7);
      } else {
        ww = w4;
      }
      const V lo = reinterpret_cast<V>(ww << 16), hi = reinterpret_cast<V>(ww & 0xffff0000u);
      for (int p = 0; p < rows / span; ++p) {
        words4 x0;
        std::memcpy(&x0, x + p * span * stride + j, 16);
        U xw;
        if constexpr (span == 2) {
          words4 x1;
          std::memcpy(&x1, x + (p * span + 1) * stride + j, 16);
          xw = __builtin_shufflevector(x0, x1, 0, 1, 2, 3, 4, 5, 6, 7);
        } else {
          xw = x0;
        }
        add_products<fused>(part[p], reinterpret_cast<V>(xw << 16), lo);
        add_products<fused>(part[p], reinterpret_cast<V>(xw & 0xffff0000u), hi);
      }
    }
    for (; j < n; ++j) {
      for (int q = 0; q < rows; ++q) {
        const int p = q / span, k = q % span * words;
        part[p][k] = add_product<fused>(part[p][k], static_cast<float>(x[q * stride + j]), static_cast<float>(w[j]));
      }
    }
    for_rows<rows, unroll>([&](auto q) {
      const int p = q / span, k = q % span * words;
      out[q] = (part[p][k] + part[p][k + 1]) + (part[p][k + 2] + part[p][k + 3]);
    });
    return;
  }
#endif
  float part[rows][words] = {};
  long long j = 0;
  for (; j + 2 * words <= n; j += 2 * words) {
    if (j % line == 0) {
      for (int q = 0; q < prefetch_rows; ++q) prefetch_hint(next + q * stride + j);
    }
    float lo[words], hi[words];
    for (int k = 0; k < words; ++k) {
      const std::uint32_t ww = half_pair(w + j + 2 * k);
      lo[k] = low_of<H>(ww), hi[k] = high_of<H>(ww);
    }
    for (int q = 0; q < rows; ++q) {
      for (int k = 0; k < words; ++k) {
        const std::uint32_t xw = half_pair(x + q * stride + j + 2 * k);
        part[q][k] = add_product<fused>(part[q][k], low_of<H>(xw), lo[k]);
        part[q][k] = add_product<fused>(part[q][k], high_of<H>(xw), hi[k]);
      }
    }
  }
  for (; j < n; ++j) {
    for (int q = 0; q < rows; ++q) {
      part[q][0] = add_product<fused>(part[q][0], static_cast<float>(x[q * stride + j]), static_cast<float>(w[j]));
    }
  }
  for (int q = 0; q < rows; ++q) out[q] = (part[q][0] + part[q][1]) + (part[q][2] + part[q][3]);
}

// g (pair order) += sum_q a[q] * x[q * stride + j]: one load and store of g per `rows` rows,
// while rows [first_prefetch_row, rows) of the next block (at `next`) are requested. With
// KPMAP_HALF_VECTORS, bf16 rows run on vectors of vector_bytes: the same sums in the same order.
template <int rows, int vector_bytes = 16, bool unroll = false, bool fused = false, class H>
KOKKOS_INLINE_FUNCTION void pair_axpy(float* KOKKOS_RESTRICT g, const float* a, const H* KOKKOS_RESTRICT x,
                                      long long stride, long long n, const H* next, int first_prefetch_row) {
  constexpr long long line = 64 / static_cast<long long>(sizeof(H));
  constexpr int words = pair_group / 2;
  const long long full = n - n % pair_group;
#if defined(KPMAP_HALF_VECTORS)
  if constexpr (std::is_same_v<H, bf16>) {
    typedef std::uint32_t U __attribute__((vector_size(vector_bytes)));
    typedef float V __attribute__((vector_size(vector_bytes)));
    constexpr int per = vector_bytes / 4;
    V cv[rows];
    for_rows<rows, unroll>([&](auto q) {
      float lane[per];
      for (int k = 0; k < per; ++k) lane[k] = a[q];
      std::memcpy(&cv[q], lane, sizeof(V));
    });
    for (long long j0 = 0; j0 < n; j0 += line) {
      for (int q = first_prefetch_row; q < rows; ++q) prefetch_hint(next + q * stride + j0);
      const long long end = j0 + line < full ? j0 + line : full;
      for (long long j = j0; j < end; j += pair_group) {
        for (int v = 0; v < words / per; ++v) {
          V lo, hi;
          std::memcpy(&lo, g + j + v * per, sizeof(V));
          std::memcpy(&hi, g + j + words + v * per, sizeof(V));
          for (int q = 0; q < rows; ++q) {
            U xw;
            std::memcpy(&xw, x + q * stride + j + 2 * v * per, sizeof(U));
            add_products<fused>(lo, cv[q], reinterpret_cast<V>(xw << 16));
            add_products<fused>(hi, cv[q], reinterpret_cast<V>(xw & 0xffff0000u));
          }
          std::memcpy(g + j + v * per, &lo, sizeof(V));
          std::memcpy(g + j + words + v * per, &hi, sizeof(V));
        }
      }
    }
    for (long long j = full; j < n; ++j) {
      for (int q = 0; q < rows; ++q) g[j] = add_product<fused>(g[j], a[q], static_cast<float>(x[q * stride + j]));
    }
    return;
  }
#endif
  float c[rows];
  for (int q = 0; q < rows; ++q) c[q] = a[q];
  for (long long j0 = 0; j0 < n; j0 += line) {
    for (int q = first_prefetch_row; q < rows; ++q) prefetch_hint(next + q * stride + j0);
    const long long end = j0 + line < full ? j0 + line : full;
    for (long long j = j0; j < end; j += pair_group) {
      for (int k = 0; k < words; ++k) {
        float lo = g[j + k], hi = g[j + words + k];
        for (int q = 0; q < rows; ++q) {
          const std::uint32_t xw = half_pair(x + q * stride + j + 2 * k);
          lo = add_product<fused>(lo, c[q], low_of<H>(xw));
          hi = add_product<fused>(hi, c[q], high_of<H>(xw));
        }
        g[j + k] = lo, g[j + words + k] = hi;
      }
    }
  }
  for (long long j = full; j < n; ++j) {
    for (int q = 0; q < rows; ++q) g[j] = add_product<fused>(g[j], c[q], static_cast<float>(x[q * stride + j]));
  }
}

}  // namespace kpmap::model_detail
