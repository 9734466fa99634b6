// The host loops over many bf16 values (half.hpp): SSE2 (8 elements at a time), AVX2 (16) and
// AVX-512 (32), chosen at run time, and the scalar loop elsewhere. All give the scalar functions'
// bits.
#include "kpmap/core/half.hpp"

#include <atomic>

#include "kpmap/core/host_cpu.hpp"

#if defined(__SSE2__) && defined(__x86_64__) && !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#include <emmintrin.h>
#define KPMAP_BF16_SSE2 1
// The AVX2 and AVX-512 loops, compiled for them through the target attribute (GCC-compatible
// compilers, outside CUDA and HIP compilations, as host_isa.hpp's dispatch).
#if defined(__GNUC__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#include "kpmap/core/x86_intrinsics.hpp"
#define KPMAP_BF16_AVX2 1
#define KPMAP_BF16_AVX512 1
#define KPMAP_BF16_AVX512_TARGET "avx2," KPMAP_AVX512_SUBSETS
#endif
#endif

namespace kpmap::detail {

namespace {

void scaled_to_bf16_scalar(const float* in, float factor, bf16* out, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) out[i] = bf16(in[i] * factor);
}

void add_bf16_scalar(const bf16* a, bf16* b, std::int64_t n) noexcept {
  for (std::int64_t i = 0; i < n; ++i) b[i] = bf16(static_cast<float>(a[i]) + static_cast<float>(b[i]));
}

// float_to_bf16_bits of each lane's float, in its lane's low 16 bits, sign-extended so that a
// signed pack (packssdw) keeps it exactly: rounded to nearest even (u + 0x7fff + the kept lsb),
// NaNs quieted instead.
#if defined(KPMAP_BF16_SSE2)
__m128i float_to_bf16_bits_sse2(__m128 f) noexcept {
  const __m128i u = _mm_castps_si128(f);
  const __m128i rounded = _mm_add_epi32(_mm_add_epi32(u, _mm_set1_epi32(0x7fff)),
                                        _mm_and_si128(_mm_srli_epi32(u, 16), _mm_set1_epi32(1)));
  const __m128i nan =
      _mm_cmpgt_epi32(_mm_and_si128(u, _mm_set1_epi32(0x7fffffff)), _mm_set1_epi32(0x7f800000));
  const __m128i quieted = _mm_or_si128(u, _mm_set1_epi32(0x00400000));
  return _mm_srai_epi32(_mm_or_si128(_mm_and_si128(nan, quieted), _mm_andnot_si128(nan, rounded)), 16);
}

void scaled_to_bf16_sse2(const float* in, float factor, bf16* out, std::int64_t n) noexcept {
  std::int64_t i = 0;
  const __m128 f = _mm_set1_ps(factor);
  for (; i + 8 <= n; i += 8) {
    const __m128i lo = float_to_bf16_bits_sse2(_mm_mul_ps(_mm_loadu_ps(in + i), f));
    const __m128i hi = float_to_bf16_bits_sse2(_mm_mul_ps(_mm_loadu_ps(in + i + 4), f));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_packs_epi32(lo, hi));
  }
  scaled_to_bf16_scalar(in + i, factor, out + i, n - i);
}

void add_bf16_sse2(const bf16* a, bf16* b, std::int64_t n) noexcept {
  std::int64_t i = 0;
  const __m128i zero = _mm_setzero_si128();
  for (; i + 8 <= n; i += 8) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i));
    const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i));
    // a bf16 is the top half of its float: interleaving zeros below it widens it exactly
    const __m128 lo = _mm_add_ps(_mm_castsi128_ps(_mm_unpacklo_epi16(zero, x)),
                                 _mm_castsi128_ps(_mm_unpacklo_epi16(zero, y)));
    const __m128 hi = _mm_add_ps(_mm_castsi128_ps(_mm_unpackhi_epi16(zero, x)),
                                 _mm_castsi128_ps(_mm_unpackhi_epi16(zero, y)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(b + i),
                     _mm_packs_epi32(float_to_bf16_bits_sse2(lo), float_to_bf16_bits_sse2(hi)));
  }
  add_bf16_scalar(a + i, b + i, n - i);
}
#endif

// The same with 32-byte vectors. The unpacks and the pack work within each 16-byte half, so
// add_bf16's widening and narrowing pair up as in SSE2; the cast's pack is followed by a
// permutation that puts the halves in order.
#if defined(KPMAP_BF16_AVX2)
__attribute__((target("avx2"))) __m256i float_to_bf16_bits_avx2(__m256 f) noexcept {
  const __m256i u = _mm256_castps_si256(f);
  const __m256i rounded = _mm256_add_epi32(_mm256_add_epi32(u, _mm256_set1_epi32(0x7fff)),
                                           _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1)));
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffffff)),
                                         _mm256_set1_epi32(0x7f800000));
  const __m256i quieted = _mm256_or_si256(u, _mm256_set1_epi32(0x00400000));
  return _mm256_srai_epi32(_mm256_blendv_epi8(rounded, quieted, nan), 16);
}

__attribute__((target("avx2"))) void scaled_to_bf16_avx2(const float* in, float factor, bf16* out,
                                                         std::int64_t n) noexcept {
  std::int64_t i = 0;
  const __m256 f = _mm256_set1_ps(factor);
  for (; i + 16 <= n; i += 16) {
    const __m256i lo = float_to_bf16_bits_avx2(_mm256_mul_ps(_mm256_loadu_ps(in + i), f));
    const __m256i hi = float_to_bf16_bits_avx2(_mm256_mul_ps(_mm256_loadu_ps(in + i + 8), f));
    // packs gives [lo 0-3, hi 0-3 | lo 4-7, hi 4-7] (64-bit groups 0, 1 | 2, 3): order 0, 2, 1, 3
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packs_epi32(lo, hi), 0xd8);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), packed);
  }
  scaled_to_bf16_scalar(in + i, factor, out + i, n - i);
}

__attribute__((target("avx2"))) void add_bf16_avx2(const bf16* a, bf16* b, std::int64_t n) noexcept {
  std::int64_t i = 0;
  const __m256i zero = _mm256_setzero_si256();
  for (; i + 16 <= n; i += 16) {
    const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
    const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
    const __m256 lo = _mm256_add_ps(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, x)),
                                    _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, y)));
    const __m256 hi = _mm256_add_ps(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, x)),
                                    _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, y)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(b + i),
                        _mm256_packs_epi32(float_to_bf16_bits_avx2(lo), float_to_bf16_bits_avx2(hi)));
  }
  add_bf16_scalar(a + i, b + i, n - i);
}
#endif

// The same with 64-byte vectors (AVX-512 F, BW and DQ, which cpu_has_avx512 checks with VL): NaNs
// found by DQ's vfpclassps into a mask, which puts them, quieted, in place of the rounded words.
#if defined(KPMAP_BF16_AVX512)
__attribute__((target(KPMAP_BF16_AVX512_TARGET))) __m512i float_to_bf16_bits_avx512(__m512 f) noexcept {
  const __m512i u = _mm512_castps_si512(f);
  const __m512i rounded = _mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                           _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1)));
  const __mmask16 nan = _mm512_fpclass_ps_mask(f, 0x81);  // quiet or signalling NaN
  return _mm512_srai_epi32(_mm512_mask_or_epi32(rounded, nan, u, _mm512_set1_epi32(0x00400000)), 16);
}

__attribute__((target(KPMAP_BF16_AVX512_TARGET))) void scaled_to_bf16_avx512(const float* in, float factor,
                                                                             bf16* out, std::int64_t n) noexcept {
  std::int64_t i = 0;
  const __m512 f = _mm512_set1_ps(factor);
  // packs gives the 64-bit groups [lo 0-3, hi 0-3, lo 4-7, hi 4-7, ...]: order 0, 2, 4, 6, 1, 3, 5, 7
  const __m512i order = _mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0);
  for (; i + 32 <= n; i += 32) {
    const __m512i lo = float_to_bf16_bits_avx512(_mm512_mul_ps(_mm512_loadu_ps(in + i), f));
    const __m512i hi = float_to_bf16_bits_avx512(_mm512_mul_ps(_mm512_loadu_ps(in + i + 16), f));
    _mm512_storeu_si512(out + i, _mm512_permutexvar_epi64(order, _mm512_packs_epi32(lo, hi)));
  }
  scaled_to_bf16_scalar(in + i, factor, out + i, n - i);
}

__attribute__((target(KPMAP_BF16_AVX512_TARGET))) void add_bf16_avx512(const bf16* a, bf16* b,
                                                                       std::int64_t n) noexcept {
  std::int64_t i = 0;
  const __m512i zero = _mm512_setzero_si512();
  for (; i + 32 <= n; i += 32) {
    const __m512i x = _mm512_loadu_si512(a + i);
    const __m512i y = _mm512_loadu_si512(b + i);
    const __m512 lo = _mm512_add_ps(_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, x)),
                                    _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, y)));
    const __m512 hi = _mm512_add_ps(_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, x)),
                                    _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, y)));
    _mm512_storeu_si512(b + i, _mm512_packs_epi32(float_to_bf16_bits_avx512(lo), float_to_bf16_bits_avx512(hi)));
  }
  add_bf16_scalar(a + i, b + i, n - i);
}
#endif

HostLoops widest() noexcept {
#if defined(KPMAP_BF16_AVX512)
  if (cpu_has_avx512()) return HostLoops::avx512;
#endif
#if defined(KPMAP_BF16_AVX2)
  if (cpu_has_avx2()) return HostLoops::avx2;
#endif
#if defined(KPMAP_BF16_SSE2)
  return HostLoops::sse2;
#else
  return HostLoops::scalar;
#endif
}

std::atomic<HostLoops>& chosen() noexcept {
  static std::atomic<HostLoops> loops{widest()};
  return loops;
}

}  // namespace

HostLoops bf16_loops() noexcept { return chosen().load(std::memory_order_relaxed); }

bool set_bf16_loops(HostLoops loops) noexcept {
  // Every version up to the widest is compiled in (each one's guard lies inside the one before).
  const bool possible = static_cast<int>(loops) <= static_cast<int>(widest());
  if (possible) chosen().store(loops, std::memory_order_relaxed);
  return possible;
}

void scaled_to_bf16(const float* in, float factor, bf16* out, std::int64_t n) noexcept {
  switch (bf16_loops()) {
#if defined(KPMAP_BF16_AVX512)
    case HostLoops::avx512: return scaled_to_bf16_avx512(in, factor, out, n);
#endif
#if defined(KPMAP_BF16_AVX2)
    case HostLoops::avx2: return scaled_to_bf16_avx2(in, factor, out, n);
#endif
#if defined(KPMAP_BF16_SSE2)
    case HostLoops::sse2: return scaled_to_bf16_sse2(in, factor, out, n);
#endif
    default: return scaled_to_bf16_scalar(in, factor, out, n);
  }
}

void add_bf16(const bf16* a, bf16* b, std::int64_t n) noexcept {
  switch (bf16_loops()) {
#if defined(KPMAP_BF16_AVX512)
    case HostLoops::avx512: return add_bf16_avx512(a, b, n);
#endif
#if defined(KPMAP_BF16_AVX2)
    case HostLoops::avx2: return add_bf16_avx2(a, b, n);
#endif
#if defined(KPMAP_BF16_SSE2)
    case HostLoops::sse2: return add_bf16_sse2(a, b, n);
#endif
    default: return add_bf16_scalar(a, b, n);
  }
}

}  // namespace kpmap::detail
