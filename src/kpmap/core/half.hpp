// kpmap's 16-bit element types: bf16 (bfloat16: 1 sign, 8 exponent, 7 mantissa bits) and fp16
// (IEEE 754 binary16: 1, 5, 10). Real 16-bit storage, usable inside Kokkos kernels on any backend.
//
// Conversions to 16 bits round to nearest, ties to even; overflow gives Inf; NaN stays NaN
// (quiet, sign kept). Conversions from 16 bits to float and double are exact. Arithmetic is done
// in float and rounded back once per operation. Comparisons follow IEEE (NaN compares unequal
// to everything, +0 == -0). There is deliberately no constructor from int: bf16(1) would hide
// a rounding decision; write bf16(1.0f).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kpmap/core/types.hpp"

namespace kpmap {

namespace detail {

// Bit casts between float (double) and its 32 (64) bits. memcpy is the well-defined C++ way on
// the host (the compiler turns it into a register move); device passes use the backend's
// intrinsic, because memcpy in device code is not guaranteed everywhere and a union would be
// undefined behaviour.
KOKKOS_INLINE_FUNCTION std::uint32_t float_to_bits(float f) noexcept {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

KOKKOS_INLINE_FUNCTION std::uint64_t double_to_bits(double d) noexcept {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return static_cast<std::uint64_t>(__double_as_longlong(d));
#else
  std::uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
#endif
}

KOKKOS_INLINE_FUNCTION float bits_to_float(std::uint32_t u) noexcept {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

KOKKOS_INLINE_FUNCTION std::uint16_t float_to_bf16_bits(float f) noexcept {
  const std::uint32_t u = float_to_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {
    // NaN: truncating could drop every payload bit and make Inf, so set the quiet bit.
    return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
  }
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry out of the
  // mantissa moves into the exponent, which is exactly right (and FLT_MAX carries into Inf).
  const std::uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return static_cast<std::uint16_t>(rounded >> 16);
}

KOKKOS_INLINE_FUNCTION float bf16_bits_to_float(std::uint16_t h) noexcept {
  return bits_to_float(static_cast<std::uint32_t>(h) << 16);
}

// fp16 subnormals: the result counts units of 2^-24; `a` is a float magnitude below 2^-14.
KOKKOS_INLINE_FUNCTION std::uint32_t fp16_subnormal_bits(std::uint32_t a) noexcept {
  if (a < 0x33000000u) return 0;  // below 2^-25, half the smallest subnormal
  const std::uint32_t exponent = a >> 23;  // 102 .. 112
  const std::uint32_t significand = (a & 0x7fffffu) | 0x800000u;
  const std::uint32_t shift = 126u - exponent;  // 14 .. 24
  std::uint32_t units = significand >> shift;
  const std::uint32_t rest = significand & ((1u << shift) - 1u);
  const std::uint32_t half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (units & 1u))) ++units;  // may carry into 2^-14: fine
  return units;
}

KOKKOS_INLINE_FUNCTION std::uint16_t float_to_fp16_bits(float f) noexcept {
  const std::uint32_t u = float_to_bits(f);
  const std::uint32_t sign = (u >> 16) & 0x8000u;
  const std::uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) {  // NaN: quiet, keep sign and the top payload bits
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  }
  if (a >= 0x477ff000u) {  // >= 65520 = 65504 + half an ulp: the tie goes to even, i.e. Inf
    return static_cast<std::uint16_t>(sign | 0x7c00u);
  }
  if (a < 0x38800000u) {  // below 2^-14: subnormal or zero
    return static_cast<std::uint16_t>(sign | fp16_subnormal_bits(a));
  }
  // Normal: rebias the exponent (127 -> 15) and round the 13 dropped bits to nearest even.
  const std::uint32_t rebased = a - 0x38000000u;
  const std::uint32_t rounded = rebased + 0xfffu + ((rebased >> 13) & 1u);
  return static_cast<std::uint16_t>(sign | (rounded >> 13));
}

// Branch-free (so that loops over fp16 data vectorise; after Maratyszcza's FP16 library): a
// normal or special value is its bits moved into float position and scaled by 2^-112, which
// rebiases the exponent exactly (Inf and NaN stay Inf and NaN); a subnormal m * 2^-24 is
// (0.5 + m * 2^-24) - 0.5, exact in float. Both results are normal floats or zero, so
// flush-to-zero modes cannot touch them. fp16_high_bits_to_float takes the fp16's bits in the
// high half of a 32-bit word and zeros in the low half (h << 16): the form in which the fused
// kernel takes both elements of a word (model/half_kernels.hpp).
KOKKOS_INLINE_FUNCTION float fp16_high_bits_to_float(std::uint32_t w) noexcept {
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t two_w = w + w;  // exponent and mantissa, sign shifted out
  const float normal = bits_to_float((two_w >> 4) + (0xE0u << 23)) * bits_to_float(0x07800000u);
  const float subnormal = bits_to_float((two_w >> 17) | (126u << 23)) - 0.5f;
  // The choice as a mask, not `?:`: GCC turns the conditional into a branch and then does not
  // vectorise the loops around it.
  const std::uint32_t is_subnormal = 0u - static_cast<std::uint32_t>(two_w < (1u << 27));
  return bits_to_float(sign | (float_to_bits(subnormal) & is_subnormal) |
                       (float_to_bits(normal) & ~is_subnormal));
}

KOKKOS_INLINE_FUNCTION float fp16_bits_to_float(std::uint16_t h) noexcept {
  return fp16_high_bits_to_float(static_cast<std::uint32_t>(h) << 16);
}

// Rounds a double to float with round-to-odd: truncate, and set the last bit if anything was
// dropped. Rounding that float to 16 bits (RNE) then equals rounding the double to 16 bits
// directly, because float keeps more than two extra bits at every 16-bit magnitude; a plain
// double -> float -> 16-bit cast would round twice and can miss a tie (1 + 2^-8 + 2^-30 would
// become bf16 1.0 instead of 1 + 2^-7).
KOKKOS_INLINE_FUNCTION float round_to_odd_float(double d) noexcept {
  const double float_max = 3.4028234663852886e38;
  // Beyond FLT_MAX every 16-bit format overflows to Inf; avoid the out-of-range cast.
  if (d > float_max) return bits_to_float(0x7f800000u);
  if (d < -float_max) return bits_to_float(0xff800000u);
  const float f = static_cast<float>(d);
  if (d != d || static_cast<double>(f) == d) return f;  // NaN, or exact
  std::uint32_t u = float_to_bits(f);
  if ((u & 1u) == 0u) {
    const double abs_d = d < 0 ? -d : d;
    const double abs_f = f < 0 ? -static_cast<double>(f) : static_cast<double>(f);
    u = abs_f > abs_d ? u - 1u : u + 1u;  // the odd neighbour on d's side of f
  }
  return bits_to_float(u);
}

}  // namespace detail

class bf16;
class fp16;

template <class T>
struct is_half : std::false_type {};
template <>
struct is_half<bf16> : std::true_type {};
template <>
struct is_half<fp16> : std::true_type {};

// bfloat16: float with the low 16 mantissa bits rounded off (same range, 8 significant bits).
class bf16 {
 public:
  KOKKOS_INLINE_FUNCTION constexpr bf16() noexcept : bits_(0) {}
  KOKKOS_INLINE_FUNCTION explicit bf16(float f) noexcept : bits_(detail::float_to_bf16_bits(f)) {}
  // Correctly rounded (no double rounding): see detail::round_to_odd_float.
  KOKKOS_INLINE_FUNCTION explicit bf16(double d) noexcept
      : bits_(detail::float_to_bf16_bits(detail::round_to_odd_float(d))) {}
  bf16(int) = delete;  // say which rounding you mean: bf16(1.0f)

  // For Kokkos 3.4, whose reducers copy and join through volatile references (CUDA shared
  // memory). Templates on purpose: a template is never a copy constructor or copy assignment,
  // so the type stays trivially copyable.
  template <class H, std::enable_if_t<std::is_same<H, bf16>::value, int> = 0>
  KOKKOS_INLINE_FUNCTION bf16(const volatile H& other) noexcept : bits_(other.bits()) {}
  template <class H, std::enable_if_t<std::is_same<H, bf16>::value, int> = 0>
  KOKKOS_INLINE_FUNCTION void operator=(const volatile H& other) volatile noexcept {
    bits_ = other.bits();
  }

  KOKKOS_INLINE_FUNCTION explicit operator float() const noexcept {
    return detail::bf16_bits_to_float(bits_);
  }
  KOKKOS_INLINE_FUNCTION explicit operator double() const noexcept {
    return static_cast<double>(detail::bf16_bits_to_float(bits_));
  }

  KOKKOS_INLINE_FUNCTION static constexpr bf16 from_bits(std::uint16_t b) noexcept {
    return bf16(b, raw_bits{});
  }
  KOKKOS_INLINE_FUNCTION constexpr std::uint16_t bits() const noexcept { return bits_; }
  KOKKOS_INLINE_FUNCTION std::uint16_t bits() const volatile noexcept { return bits_; }
  // The exact float value of a bit pattern (what operator float returns).
  KOKKOS_INLINE_FUNCTION static float float_from_bits(std::uint16_t b) noexcept {
    return detail::bf16_bits_to_float(b);
  }

 private:
  struct raw_bits {};
  KOKKOS_INLINE_FUNCTION constexpr bf16(std::uint16_t b, raw_bits) noexcept : bits_(b) {}
  std::uint16_t bits_;
};

// IEEE 754 binary16: 11 significant bits, largest finite 65504, subnormals down to 2^-24.
class fp16 {
 public:
  KOKKOS_INLINE_FUNCTION constexpr fp16() noexcept : bits_(0) {}
  KOKKOS_INLINE_FUNCTION explicit fp16(float f) noexcept : bits_(detail::float_to_fp16_bits(f)) {}
  // Correctly rounded (no double rounding): see detail::round_to_odd_float.
  KOKKOS_INLINE_FUNCTION explicit fp16(double d) noexcept
      : bits_(detail::float_to_fp16_bits(detail::round_to_odd_float(d))) {}
  fp16(int) = delete;  // say which rounding you mean: fp16(1.0f)

  // For Kokkos 3.4, whose reducers copy and join through volatile references (CUDA shared
  // memory). Templates on purpose: a template is never a copy constructor or copy assignment,
  // so the type stays trivially copyable.
  template <class H, std::enable_if_t<std::is_same<H, fp16>::value, int> = 0>
  KOKKOS_INLINE_FUNCTION fp16(const volatile H& other) noexcept : bits_(other.bits()) {}
  template <class H, std::enable_if_t<std::is_same<H, fp16>::value, int> = 0>
  KOKKOS_INLINE_FUNCTION void operator=(const volatile H& other) volatile noexcept {
    bits_ = other.bits();
  }

  KOKKOS_INLINE_FUNCTION explicit operator float() const noexcept {
    return detail::fp16_bits_to_float(bits_);
  }
  KOKKOS_INLINE_FUNCTION explicit operator double() const noexcept {
    return static_cast<double>(detail::fp16_bits_to_float(bits_));
  }

  KOKKOS_INLINE_FUNCTION static constexpr fp16 from_bits(std::uint16_t b) noexcept {
    return fp16(b, raw_bits{});
  }
  KOKKOS_INLINE_FUNCTION constexpr std::uint16_t bits() const noexcept { return bits_; }
  KOKKOS_INLINE_FUNCTION std::uint16_t bits() const volatile noexcept { return bits_; }
  // The exact float value of a bit pattern (what operator float returns).
  KOKKOS_INLINE_FUNCTION static float float_from_bits(std::uint16_t b) noexcept {
    return detail::fp16_bits_to_float(b);
  }

 private:
  struct raw_bits {};
  KOKKOS_INLINE_FUNCTION constexpr fp16(std::uint16_t b, raw_bits) noexcept : bits_(b) {}
  std::uint16_t bits_;
};

static_assert(sizeof(bf16) == 2 && sizeof(fp16) == 2, "16-bit storage");
static_assert(std::is_trivially_copyable<bf16>::value && std::is_trivially_copyable<fp16>::value,
              "MPI and Kokkos deep_copy move these as raw bytes");
static_assert(std::is_standard_layout<bf16>::value && std::is_standard_layout<fp16>::value,
              "layout-compatible with std::uint16_t");

namespace detail {

// Host loops over many bf16 values (half.cpp): MPI's bf16 sum and the trainer's cast to a bf16
// wire. They give the bits of the scalar functions above (except which NaN the sum of two NaNs
// returns, either one's quieted, which the compiler picks for the scalar form too). On x86-64
// they run 32 elements at a time with AVX-512 (F, BW, VL, DQ) where the CPU has it, else 16 with
// AVX2, else 8 with SSE2 (which every x86-64 compiler targets); elsewhere the scalar loop.
// Compilers do not vectorise the scalar forms well: they narrow 32-bit lanes to 16 bits by
// shuffles, where an arithmetic shift and a signed pack suffice. Host code only. The versions,
// narrowest first:
enum class HostLoops { scalar, sse2, avx2, avx512 };

// out[i] = bf16(in[i] * factor) for i < n.
void scaled_to_bf16(const float* in, float factor, bf16* out, std::int64_t n) noexcept;
// b[i] = a[i] + b[i] for i < n (the sum in float, rounded once).
void add_bf16(const bf16* a, bf16* b, std::int64_t n) noexcept;

// The loops the two functions above run: the widest this CPU has, unless set_bf16_loops chose
// another. Tests: set_bf16_loops(loops) runs `loops` from now on, or returns false (and nothing
// changes) where this build or CPU cannot.
HostLoops bf16_loops() noexcept;
bool set_bf16_loops(HostLoops loops) noexcept;

}  // namespace detail

template <class H>
using enable_if_half_t = std::enable_if_t<is_half<H>::value, int>;

// Arithmetic: in float, rounded back once.
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H operator+(const H& a, const H& b) noexcept {
  return H(static_cast<float>(a) + static_cast<float>(b));
}
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H operator-(const H& a, const H& b) noexcept {
  return H(static_cast<float>(a) - static_cast<float>(b));
}
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H operator*(const H& a, const H& b) noexcept {
  return H(static_cast<float>(a) * static_cast<float>(b));
}
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H operator/(const H& a, const H& b) noexcept {
  return H(static_cast<float>(a) / static_cast<float>(b));
}
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H operator-(const H& a) noexcept {  // exact: flips the sign bit
  return H::from_bits(static_cast<std::uint16_t>(a.bits() ^ 0x8000u));
}

template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H& operator+=(H& a, const H& b) noexcept {
  return a = a + b;
}
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H& operator-=(H& a, const H& b) noexcept {
  return a = a - b;
}
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H& operator*=(H& a, const H& b) noexcept {
  return a = a * b;
}
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION H& operator/=(H& a, const H& b) noexcept {
  return a = a / b;
}
// Kokkos 3.4's Sum reducer: `dest += src` on volatile references.
template <class H, enable_if_half_t<H> = 0>
KOKKOS_INLINE_FUNCTION void operator+=(volatile H& a, const volatile H& b) noexcept {
  const H sum(H::float_from_bits(a.bits()) + H::float_from_bits(b.bits()));
  a = sum;
}

// Comparisons, IEEE semantics through float; the volatile overloads serve Kokkos 3.4's Max/Min.
#define KPMAP_HALF_COMPARISON(OP)                                                             \
  template <class H, enable_if_half_t<H> = 0>                                                 \
  KOKKOS_INLINE_FUNCTION bool operator OP(const H& a, const H& b) noexcept {                  \
    return H::float_from_bits(a.bits()) OP H::float_from_bits(b.bits());                          \
  }                                                                                           \
  template <class H, enable_if_half_t<H> = 0>                                                 \
  KOKKOS_INLINE_FUNCTION bool operator OP(const volatile H& a, const volatile H& b) noexcept { \
    return H::float_from_bits(a.bits()) OP H::float_from_bits(b.bits());                          \
  }
KPMAP_HALF_COMPARISON(==)
KPMAP_HALF_COMPARISON(!=)
KPMAP_HALF_COMPARISON(<)
KPMAP_HALF_COMPARISON(<=)
KPMAP_HALF_COMPARISON(>)
KPMAP_HALF_COMPARISON(>=)
#undef KPMAP_HALF_COMPARISON

// So that generic kernels can write to_float(v) for any element type.
KOKKOS_INLINE_FUNCTION constexpr float to_float(float x) noexcept { return x; }
KOKKOS_INLINE_FUNCTION constexpr float to_float(double x) noexcept {
  return static_cast<float>(x);
}
KOKKOS_INLINE_FUNCTION float to_float(bf16 x) noexcept { return static_cast<float>(x); }
KOKKOS_INLINE_FUNCTION float to_float(fp16 x) noexcept { return static_cast<float>(x); }

// The Dtype of an element type (double, float, bf16, fp16).
template <class T>
inline constexpr Dtype dtype_v = std::is_same_v<T, double>  ? Dtype::fp64
                                 : std::is_same_v<T, float> ? Dtype::fp32
                                 : std::is_same_v<T, bf16>  ? Dtype::bf16
                                                            : Dtype::fp16;

}  // namespace kpmap

namespace Kokkos {

// Identities for Kokkos::Sum, Prod, Max and Min. Max starts at -Inf and Min at +Inf (not at
// the largest finite value), so a reduction over values that include +-Inf is still right.
template <>
struct reduction_identity<kpmap::bf16> {
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::bf16 sum() {
    return kpmap::bf16::from_bits(0x0000);
  }
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::bf16 prod() {
    return kpmap::bf16::from_bits(0x3f80);
  }
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::bf16 max() {
    return kpmap::bf16::from_bits(0xff80);
  }
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::bf16 min() {
    return kpmap::bf16::from_bits(0x7f80);
  }
};

template <>
struct reduction_identity<kpmap::fp16> {
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::fp16 sum() {
    return kpmap::fp16::from_bits(0x0000);
  }
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::fp16 prod() {
    return kpmap::fp16::from_bits(0x3c00);
  }
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::fp16 max() {
    return kpmap::fp16::from_bits(0xfc00);
  }
  KOKKOS_FORCEINLINE_FUNCTION constexpr static kpmap::fp16 min() {
    return kpmap::fp16::from_bits(0x7c00);
  }
};

}  // namespace Kokkos
