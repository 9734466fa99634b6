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
// private gradient is kept in "pair order": each group of 16 features (8 words) is stored
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

// GCC's vector extensions for bf16 rows, in host code on little-endian hosts (GCC, Clang).
#if defined(__GNUC__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__) && \
    !defined(__SYCL_DEVICE_ONLY__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define KPMAP_HALF_VECTORS 1
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

#if defined(KPMAP_HALF_VECTORS) && defined(KPMAP_AVX2_DISPATCH)
// out[q] = the fold of s[q] for q < 4, each s[q] = [s_0 ... s_7] of one row (pair_dot's AVX2
// pass): t_k = s_k + s_k+4, then (t_0 + t_1) + (t_2 + t_3). The four rows are folded side by
// side in the lanes of the same vectors, each lane adding what the scalar fold of its row adds:
// 12 vector ops and a store for the four rows, where one row at a time took about 10 per row (an
// extract, scalar shuffles and adds).
__attribute__((target("avx2"))) inline void fold_rows4(const fma_floats8* s, float* out) {
  // [t of row 0 | t of row 1] and [t of row 2 | t of row 3]: low halves plus high halves
  const __m256 t01 = _mm256_add_ps(_mm256_permute2f128_ps(s[0], s[1], 0x20), _mm256_permute2f128_ps(s[0], s[1], 0x31));
  const __m256 t23 = _mm256_add_ps(_mm256_permute2f128_ps(s[2], s[3], 0x20), _mm256_permute2f128_ps(s[2], s[3], 0x31));
  // each half: [t_0 + t_1, t_2 + t_3] of row 0 (1), then of row 2 (3)
  const __m256 u = _mm256_add_ps(_mm256_shuffle_ps(t01, t23, 0x88), _mm256_shuffle_ps(t01, t23, 0xdd));
  // each half: [row 0 (1), row 2 (3), ...]
  const __m256 d = _mm256_add_ps(_mm256_shuffle_ps(u, u, 0x88), _mm256_shuffle_ps(u, u, 0xdd));
  float lanes[8];
  _mm256_storeu_ps(lanes, d);
  out[0] = lanes[0], out[1] = lanes[4], out[2] = lanes[1], out[3] = lanes[5];
}

// v as it is, but the compiler cannot tell: pair_dot's AVX2 passes each convert their own words
// of w with it. Left to itself, GCC keeps every step's converted words of the first pass for the
// next passes (8 AVX registers at 64 features, next to the 8 partial sums), and spills.
typedef std::uint32_t avx2_words __attribute__((vector_size(32)));
__attribute__((target("avx2"))) inline void read_here(avx2_words& v) { asm volatile("" : "+x"(v)); }
#endif

#if defined(KPMAP_HALF_VECTORS) && defined(KPMAP_AVX2_DISPATCH)
// The AVX-512 version of pair_dot and pair_axpy for bf16 rows with fused products (host_isa.hpp):
// the AVX2 version's lanes, two at a time. The dot product holds rows 2p and 2p + 1 side by side
// in one 64-byte vector (8 words of each: the AVX2 version's step), so each of its operations
// does what the AVX2 version does for the two rows with two; the axpy reads a row's cache line
// as one vector (2 groups of 16 features), whose even elements are the slots
// [8 even of group 0 | 8 even of group 1] and odd elements [8 odd | 8 odd]. Every partial sum
// and gradient slot adds the same products in the same order as in the AVX2 version, each
// fused, so the results are bitwise the AVX2 version's. A whole block of 8 rows in the training
// step's reduction (GradientReduce::pair_block) also folds its dot products and forms its
// residuals and their sums on vectors (pair_residuals8_avx512), the same adds as its scalar code.

// Words [j, j + 8) of rows a (low half) and b (high half).
__attribute__((target(KPMAP_AVX512_TARGET))) inline __m512i row_pair_words(const bf16* a, const bf16* b) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a));
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)), 1);
}

// The elements at the lower (`word << 16`) and higher (`word & 0xffff0000`) addresses of each word.
__attribute__((target(KPMAP_AVX512_TARGET))) inline __m512 low_elements(__m512i words) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(words, 16));
}
__attribute__((target(KPMAP_AVX512_TARGET))) inline __m512 high_elements(__m512i words) {
  return _mm512_castsi512_ps(_mm512_and_si512(words, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
}

// p as it is, but the compiler cannot tell: the code after it forms its own addresses from it
// instead of keeping those of the code before it in registers.
template <class P>
inline void launder(P*& p) {
  asm("" : "+r"(p));
}

// One pass of pair_dot_avx512 over rows xh + q * stride (q < 4), requesting rows [r0, r1) of
// `next`: s[0] = [row 0's 8 partial sums | row 1's], s[1] = [row 2's | row 3's] (the AVX2
// version's even + odd partials).
__attribute__((target(KPMAP_AVX512_TARGET))) inline void pair_pass_avx512(const bf16* KOKKOS_RESTRICT xh,
                                                                           long long stride,
                                                                           const bf16* KOKKOS_RESTRICT w, long long n,
                                                                           const bf16* next, int r0, int r1,
                                                                           __m512* s) {
  constexpr long long line = 32;  // bf16 elements per cache line
  __m512 even[2], odd[2];         // [row 2p's 8 partials | row 2p + 1's]
  for (int p = 0; p < 2; ++p) even[p] = _mm512_setzero_ps(), odd[p] = _mm512_setzero_ps();
  long long j = 0;
  for (; j + 16 <= n; j += 16) {
    if (j % line == 0) {
      for (int q = r0; q < r1; ++q) prefetch_hint(next + q * stride + j);
    }
    const __m512i ww = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + j)));
    const __m512 lo = low_elements(ww), hi = high_elements(ww);
    for (int p = 0; p < 2; ++p) {
      const __m512i xw = row_pair_words(xh + 2 * p * stride + j, xh + (2 * p + 1) * stride + j);
      even[p] = _mm512_fmadd_ps(low_elements(xw), lo, even[p]);
      odd[p] = _mm512_fmadd_ps(high_elements(xw), hi, odd[p]);
    }
  }
  if (j < n) {  // the last, partial step: element e to lane e / 2 of even (e even) or odd
    if (j % line == 0) {
      for (int q = r0; q < r1; ++q) prefetch_hint(next + q * stride + j);
    }
    const int rest = static_cast<int>(n - j);
    const __mmask16 elements = static_cast<__mmask16>((1u << rest) - 1);
    const unsigned e = (1u << ((rest + 1) / 2)) - 1, o = (1u << (rest / 2)) - 1;
    const __mmask16 even_lanes = static_cast<__mmask16>(e | e << 8), odd_lanes = static_cast<__mmask16>(o | o << 8);
    const __m512i ww = _mm512_broadcast_i64x4(_mm256_maskz_loadu_epi16(elements, w + j));
    const __m512 lo = low_elements(ww), hi = high_elements(ww);
    for (int p = 0; p < 2; ++p) {
      const __m512i xw =
          _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi16(elements, xh + 2 * p * stride + j)),
                             _mm256_maskz_loadu_epi16(elements, xh + (2 * p + 1) * stride + j), 1);
      even[p] = _mm512_mask3_fmadd_ps(low_elements(xw), lo, even[p], even_lanes);
      odd[p] = _mm512_mask3_fmadd_ps(high_elements(xw), hi, odd[p], odd_lanes);
    }
  }
  for (int p = 0; p < 2; ++p) s[p] = _mm512_add_ps(even[p], odd[p]);
}

// pair_dot<rows, 32, true, true> on 64-byte vectors; rows a multiple of 4, 4 at a time (as the
// AVX2 version's passes, which share the requests of the next block's rows).
template <int rows>
__attribute__((target(KPMAP_AVX512_TARGET))) inline void pair_dot_avx512(const bf16* KOKKOS_RESTRICT x,
                                                                          long long stride,
                                                                          const bf16* KOKKOS_RESTRICT w, long long n,
                                                                          float* out, const bf16* next,
                                                                          int prefetch_rows) {
  static_assert(rows % 4 == 0, "pairs of rows, folded 4 rows at a time");
  for (int h = 0; h < rows / 4; ++h) {
    __m512 s01_23[2];
    pair_pass_avx512(x + 4 * h * stride, stride, w, n, next, prefetch_rows * h / (rows / 4),
                     prefetch_rows * (h + 1) / (rows / 4), s01_23);
    fma_floats8 s[4];
    for (int p = 0; p < 2; ++p) {
      s[2 * p] = _mm512_castps512_ps256(s01_23[p]);
      s[2 * p + 1] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(s01_23[p]), 1));
    }
    fold_rows4(s, out + 4 * h);
  }
}

// pair_dot_avx512<8> with the dot products returned as one vector [d_0 ... d_7]: the same folds
// (fold_rows4's adds, operand for operand) on both passes' sums together, in 128-bit lanes: 12
// vector ops for the 8 rows, where two fold_rows4, their extracts and stores take about 30.
__attribute__((target(KPMAP_AVX512_TARGET))) inline __m256 pair_dot8_avx512(const bf16* KOKKOS_RESTRICT x,
                                                                            long long stride,
                                                                            const bf16* KOKKOS_RESTRICT w, long long n,
                                                                            const bf16* next, int prefetch_rows) {
  __m512 s[4];  // [row 0 | row 1], [2 | 3], [4 | 5], [6 | 7]: 8 partial sums s_0 ... s_7 each
  pair_pass_avx512(x, stride, w, n, next, 0, prefetch_rows / 2, s);
  const bf16 *x4 = x + 4 * stride, *next4 = next;
  launder(x4), launder(next4);
  pair_pass_avx512(x4, stride, w, n, next4, prefetch_rows / 2, prefetch_rows, s + 2);
  // t_k = s_k + s_k+4 (k < 4): 128-bit lane q of t[h] holds row 4h + q's
  __m512 t[2];
  for (int h = 0; h < 2; ++h) {
    t[h] = _mm512_add_ps(_mm512_shuffle_f32x4(s[2 * h], s[2 * h + 1], 0x88),
                         _mm512_shuffle_f32x4(s[2 * h], s[2 * h + 1], 0xdd));
  }
  // lane q: [t_0 + t_1, t_2 + t_3] of row q, then of row 4 + q
  const __m512 u = _mm512_add_ps(_mm512_shuffle_ps(t[0], t[1], 0x88), _mm512_shuffle_ps(t[0], t[1], 0xdd));
  // element 4q: (t_0 + t_1) + (t_2 + t_3) of row q; 4q + 2: of row 4 + q
  const __m512 d = _mm512_add_ps(u, _mm512_permute_ps(u, 0xb1));
  const __m512i rows = _mm512_setr_epi32(0, 4, 8, 12, 2, 6, 10, 14, 0, 0, 0, 0, 0, 0, 0, 0);
  return _mm512_castps512_ps256(_mm512_permutexvar_ps(rows, d));
}

// The residuals of rows [0, 8) and their sums, as GradientReduce::pair_block forms them one by
// one: r_q = d_q + (b - y_q) with d = pair_dot8_avx512's dot products, stored to r; sums[0] +=
// tree_sum<8>(r), sums[1] += tree_squares<8, true>(r), the same adds on the lanes of one vector.
__attribute__((target(KPMAP_AVX512_TARGET))) inline void pair_residuals8_avx512(
    const bf16* KOKKOS_RESTRICT x, long long stride, const bf16* KOKKOS_RESTRICT w, long long n, const bf16* next,
    int prefetch_rows, const bf16* y, float b, float* r, float* sums) {
  const __m256 d = pair_dot8_avx512(x, stride, w, n, next, prefetch_rows);
  const __m256i y_words = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(y)));
  const __m256 yv = _mm256_castsi256_ps(_mm256_slli_epi32(y_words, 16));
  const __m256 rv = _mm256_add_ps(d, _mm256_sub_ps(_mm256_set1_ps(b), yv));
  _mm256_storeu_ps(r, rv);
  const __m256 swapped = _mm256_permute_ps(rv, 0xb1);  // [r_1 r_0 r_3 r_2 ...]
  // element 2k: r_2k + r_2k+1, and r_2k^2 + r_2k+1^2 as fma(r_2k, r_2k, r_2k+1 * r_2k+1)
  const __m256 s1 = _mm256_add_ps(rv, swapped), q1 = _mm256_fmadd_ps(rv, rv, _mm256_mul_ps(swapped, swapped));
  // element 0: (pair 0 + pair 1), element 4: (pair 2 + pair 3)
  const __m256 s2 = _mm256_add_ps(s1, _mm256_permute_ps(s1, 0x4e)), q2 = _mm256_add_ps(q1, _mm256_permute_ps(q1, 0x4e));
  const __m256 sq = _mm256_unpacklo_ps(s2, q2);  // [sum, squares] of rows 0-3 in elements 0, 1; of 4-7 in 4, 5
  const __m128 both = _mm_add_ps(_mm256_castps256_ps128(sq), _mm256_extractf128_ps(sq, 1));
  const __m128 old = _mm_loadl_pi(_mm_setzero_ps(), reinterpret_cast<const __m64*>(sums));
  _mm_storel_pi(reinterpret_cast<__m64*>(sums), _mm_add_ps(old, both));
}

// pair_axpy<rows, 32, true, true> on 64-byte vectors.
template <int rows>
__attribute__((target(KPMAP_AVX512_TARGET))) inline void pair_axpy_avx512(float* KOKKOS_RESTRICT g, const float* a,
                                                                           const bf16* KOKKOS_RESTRICT x,
                                                                           long long stride, long long n,
                                                                           const bf16* next, int first_prefetch_row) {
  constexpr long long line = 32;
  const long long full = n - n % pair_group;
  __m512 c[rows];
  for (int q = 0; q < rows; ++q) c[q] = _mm512_set1_ps(a[q]);
  for (long long j0 = 0; j0 < n; j0 += line) {
    for (int q = first_prefetch_row; q < rows; ++q) prefetch_hint(next + q * stride + j0);
    if (j0 + line <= full) {  // slots [lo0 hi0 lo1 hi1] of the line's two groups, 8 each
      const __m512 g0 = _mm512_loadu_ps(g + j0), g1 = _mm512_loadu_ps(g + j0 + pair_group);
      __m512 lo = _mm512_shuffle_f32x4(g0, g1, 0x44), hi = _mm512_shuffle_f32x4(g0, g1, 0xee);
      for (int q = 0; q < rows; ++q) {
        const __m512i xw = _mm512_loadu_si512(x + q * stride + j0);
        lo = _mm512_fmadd_ps(c[q], low_elements(xw), lo);
        hi = _mm512_fmadd_ps(c[q], high_elements(xw), hi);
      }
      _mm512_storeu_ps(g + j0, _mm512_shuffle_f32x4(lo, hi, 0x44));
      _mm512_storeu_ps(g + j0 + pair_group, _mm512_shuffle_f32x4(lo, hi, 0xee));
      continue;
    }
    for (long long j = j0; j < full; j += pair_group) {  // a group of a partial line: 32-byte vectors
      const __m256i high = _mm256_set1_epi32(static_cast<int>(0xffff0000u));
      __m256 lo = _mm256_loadu_ps(g + j), hi = _mm256_loadu_ps(g + j + pair_group / 2);
      for (int q = 0; q < rows; ++q) {
        const __m256i xw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + q * stride + j));
        lo = _mm256_fmadd_ps(_mm512_castps512_ps256(c[q]), _mm256_castsi256_ps(_mm256_slli_epi32(xw, 16)), lo);
        hi = _mm256_fmadd_ps(_mm512_castps512_ps256(c[q]), _mm256_castsi256_ps(_mm256_and_si256(xw, high)), hi);
      }
      _mm256_storeu_ps(g + j, lo);
      _mm256_storeu_ps(g + j + pair_group / 2, hi);
    }
  }
  for (long long j = full; j < n; ++j) {
    for (int q = 0; q < rows; ++q) g[j] = __builtin_fmaf(a[q], static_cast<float>(x[q * stride + j]), g[j]);
  }
}
#endif

// out[q] = sum_j x[q * stride + j] * w[j] for q < rows, the rows interleaved so that each word
// of w serves several rows. The plain loops (fp16, and device passes) keep 8 partial sums per
// row: partial k (k < 4) adds the products of elements 2k, partial 4 + k those of elements
// 2k + 1 of every 8 (a word's two elements go to two partials, so no add waits on the one before
// it in the same step); the elements after the last 8 go to partial 0; the fold is
// s_k = partial k + partial 4 + k, then (s0 + s1) + (s2 + s3).
// With KPMAP_HALF_VECTORS, bf16 rows run on vector types with 16 partial sums per row: partial
// e adds the products of the elements at positions e mod 16, in order, so a step reads 32 bytes
// of a row (8 words: one AVX register, or two SSE ones) and each of its 16 products goes to its
// own partial; the fold is s_k = partial 2k + partial 2k + 1 (k < 8), t_k = s_k + s_k+4 (k < 4),
// then (t0 + t1) + (t2 + t3). 4 rows (AVX2) or 2 (SSE2) run at a time, so that their partial
// sums stay in the 16 vector registers, and each pass reads its own words of w.
// `fused`: each product fused with its sum (add_product, add_products).
// Meanwhile rows [0, prefetch_rows) of the next block (at `next`) are requested, a cache line
// per row every 32 features.
template <int rows, int vector_bytes = 16, bool unroll = false, bool fused = false, class H>
KOKKOS_INLINE_FUNCTION void pair_dot(const H* KOKKOS_RESTRICT x, long long stride, const H* KOKKOS_RESTRICT w,
                                     long long n, float* out, const H* next, int prefetch_rows) {
  constexpr int words = 4;
  constexpr long long line = 64 / static_cast<long long>(sizeof(H));
#if defined(KPMAP_HALF_VECTORS)
  if constexpr (std::is_same_v<H, bf16> && vector_bytes == 64) {  // the AVX-512 version
#if defined(KPMAP_AVX2_DISPATCH)
    static_assert(fused, "the AVX-512 version fuses its products");
    if constexpr (rows % 4 == 0) {
      pair_dot_avx512<rows>(x, stride, w, n, out, next, prefetch_rows);
    } else {
      pair_dot<rows, 32, true, true>(x, stride, w, n, out, next, prefetch_rows);
    }
    return;
#endif
  } else if constexpr (std::is_same_v<H, bf16>) {
    typedef std::uint32_t U __attribute__((vector_size(vector_bytes)));
    typedef float V __attribute__((vector_size(vector_bytes)));
    constexpr int per = vector_bytes / 4;  // words per vector
    constexpr int vectors = 8 / per;       // vectors per row and parity in a step of 8 words
    constexpr int pass = rows < 4 / vectors ? rows : 4 / vectors;  // rows at a time
    static_assert(rows % pass == 0, "whole passes");
    for_rows<rows / pass, true>([&](auto h) {
      const int q0 = h * pass;
      // The passes share the requests: this one requests rows [r0, r1) of the next block.
      const int r0 = prefetch_rows * h / (rows / pass), r1 = prefetch_rows * (h + 1) / (rows / pass);
      V even[pass][vectors], odd[pass][vectors];  // partials 2k and 2k + 1 of each row
      for (int q = 0; q < pass; ++q) {
        for (int v = 0; v < vectors; ++v) even[q][v] = V{}, odd[q][v] = V{};
      }
      long long j = 0;
      for (; j + 16 <= n; j += 16) {
        if (j % line == 0) {
          for (int q = r0; q < r1; ++q) prefetch_hint(next + q * stride + j);
        }
        V lo[vectors], hi[vectors];
        for (int v = 0; v < vectors; ++v) {
          U ww;
          std::memcpy(&ww, w + j + 2 * v * per, sizeof(U));
#if defined(KPMAP_AVX2_DISPATCH)
          if constexpr (fused && vector_bytes == 32) read_here(reinterpret_cast<avx2_words&>(ww));
#endif
          lo[v] = reinterpret_cast<V>(ww << 16), hi[v] = reinterpret_cast<V>(ww & 0xffff0000u);
        }
        for (int q = 0; q < pass; ++q) {
          for (int v = 0; v < vectors; ++v) {
            U xw;
            std::memcpy(&xw, x + (q0 + q) * stride + j + 2 * v * per, sizeof(U));
            add_products<fused>(even[q][v], reinterpret_cast<V>(xw << 16), lo[v]);
            add_products<fused>(odd[q][v], reinterpret_cast<V>(xw & 0xffff0000u), hi[v]);
          }
        }
      }
      if (j < n && j % line == 0) {
        for (int q = r0; q < r1; ++q) prefetch_hint(next + q * stride + j);
      }
      for (long long e = 0; j + e < n; ++e) {  // the last, partial step: element e to partial e
        const int k = static_cast<int>(e / 2), v = k / per, lane = k % per;
        const float wj = static_cast<float>(w[j + e]);
        for (int q = 0; q < pass; ++q) {
          const float xj = static_cast<float>(x[(q0 + q) * stride + j + e]);
          if (e % 2 == 0) {
            even[q][v][lane] = add_product<fused>(even[q][v][lane], xj, wj);
          } else {
            odd[q][v][lane] = add_product<fused>(odd[q][v][lane], xj, wj);
          }
        }
      }
#if defined(KPMAP_AVX2_DISPATCH)
      if constexpr (fused && vector_bytes == 32 && pass == 4) {
        fma_floats8 s[4];
        for_rows<4, true>([&](auto q) { s[q] = even[q][0] + odd[q][0]; });
        fold_rows4(s, out + q0);
        return;
      }
#endif
      for_rows<pass, unroll>([&](auto q) {
        V s[vectors];
        for (int v = 0; v < vectors; ++v) s[v] = even[q][v] + odd[q][v];
        float t[4];
        if constexpr (vectors == 2) {
          for (int k = 0; k < 4; ++k) t[k] = s[0][k] + s[1][k];
        } else {
          for (int k = 0; k < 4; ++k) t[k] = s[0][k] + s[0][k + 4];
        }
        out[q0 + q] = (t[0] + t[1]) + (t[2] + t[3]);
      });
    });
    return;
  }
#endif
  float part[rows][2 * words] = {};
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
        part[q][words + k] = add_product<fused>(part[q][words + k], high_of<H>(xw), hi[k]);
      }
    }
  }
  for (; j < n; ++j) {
    for (int q = 0; q < rows; ++q) {
      part[q][0] = add_product<fused>(part[q][0], static_cast<float>(x[q * stride + j]), static_cast<float>(w[j]));
    }
  }
  for (int q = 0; q < rows; ++q) {
    float s[words];
    for (int k = 0; k < words; ++k) s[k] = part[q][k] + part[q][words + k];
    out[q] = (s[0] + s[1]) + (s[2] + s[3]);
  }
}

// g (pair order) += sum_q a[q] * x[q * stride + j]: one load and store of g per `rows` rows,
// while rows [first_prefetch_row, rows) of the next block (at `next`) are requested. With
// KPMAP_HALF_VECTORS, bf16 rows run on vectors of vector_bytes, a cache line's groups at a time:
// the same sums in the same order.
template <int rows, int vector_bytes = 16, bool unroll = false, bool fused = false, class H>
KOKKOS_INLINE_FUNCTION void pair_axpy(float* KOKKOS_RESTRICT g, const float* a, const H* KOKKOS_RESTRICT x,
                                      long long stride, long long n, const H* next, int first_prefetch_row) {
  constexpr long long line = 64 / static_cast<long long>(sizeof(H));
  constexpr int words = pair_group / 2;
  const long long full = n - n % pair_group;
#if defined(KPMAP_HALF_VECTORS)
  if constexpr (std::is_same_v<H, bf16> && vector_bytes == 64) {  // the AVX-512 version
#if defined(KPMAP_AVX2_DISPATCH)
    static_assert(fused, "the AVX-512 version fuses its products");
    pair_axpy_avx512<rows>(g, a, x, stride, n, next, first_prefetch_row);
    return;
#endif
  } else if constexpr (std::is_same_v<H, bf16>) {
    typedef std::uint32_t U __attribute__((vector_size(vector_bytes)));
    typedef float V __attribute__((vector_size(vector_bytes)));
    constexpr int per = vector_bytes / 4;
    V cv[rows];
    broadcast_rows<rows, unroll>(a, cv);
    // Adds the rows to the `count` groups from j on, side by side: each slot's adds are a chain
    // in row order, and the groups' chains are independent.
    const auto add_groups = [&](long long j, auto count) {
      constexpr int G = decltype(count)::value, vectors = words / per;
      V lo[G][vectors], hi[G][vectors];
      for (int k = 0; k < G; ++k) {
        for (int v = 0; v < vectors; ++v) {
          std::memcpy(&lo[k][v], g + j + k * pair_group + v * per, sizeof(V));
          std::memcpy(&hi[k][v], g + j + k * pair_group + words + v * per, sizeof(V));
        }
      }
      for (int q = 0; q < rows; ++q) {
        for (int k = 0; k < G; ++k) {
          for (int v = 0; v < vectors; ++v) {
            U xw;
            std::memcpy(&xw, x + q * stride + j + k * pair_group + 2 * v * per, sizeof(U));
            add_products<fused>(lo[k][v], cv[q], reinterpret_cast<V>(xw << 16));
            add_products<fused>(hi[k][v], cv[q], reinterpret_cast<V>(xw & 0xffff0000u));
          }
        }
      }
      for (int k = 0; k < G; ++k) {
        for (int v = 0; v < vectors; ++v) {
          std::memcpy(g + j + k * pair_group + v * per, &lo[k][v], sizeof(V));
          std::memcpy(g + j + k * pair_group + words + v * per, &hi[k][v], sizeof(V));
        }
      }
    };
    for (long long j0 = 0; j0 < n; j0 += line) {
      for (int q = first_prefetch_row; q < rows; ++q) prefetch_hint(next + q * stride + j0);
      if (j0 + line <= full) {
        add_groups(j0, std::integral_constant<int, static_cast<int>(line / pair_group)>());
      } else {
        for (long long j = j0; j < full; j += pair_group) add_groups(j, std::integral_constant<int, 1>());
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
