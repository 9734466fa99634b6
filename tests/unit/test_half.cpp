// bf16 and fp16 against their definitions: bit patterns written out from the bfloat16 and IEEE
// binary16 formats, an independent decoder (sign, exponent, mantissa -> std::ldexp) as the
// reference for every one of the 65536 patterns, and round-to-nearest-even checked at every
// midpoint between neighbouring finite values. Then use inside a Kokkos kernel and reducers.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kpmap/core/half.hpp"

namespace {

using kpmap::bf16;
using kpmap::fp16;

// Layout of each format, for the reference decoder.
template <class H>
struct Format;
template <>
struct Format<bf16> {
  static constexpr int mantissa_bits = 7;
  static constexpr int bias = 127;
};
template <>
struct Format<fp16> {
  static constexpr int mantissa_bits = 10;
  static constexpr int bias = 15;
};

template <class H>
constexpr std::uint32_t exponent_mask() {
  return ((1u << (15 - Format<H>::mantissa_bits)) - 1u) << Format<H>::mantissa_bits;
}

template <class H>
bool is_nan_bits(std::uint32_t b) {
  const std::uint32_t mantissa = b & ((1u << Format<H>::mantissa_bits) - 1u);
  return (b & exponent_mask<H>()) == exponent_mask<H>() && mantissa != 0;
}

// Value of a non-NaN pattern from the format's definition. An all-ones exponent with a zero
// mantissa decodes as the power of two where the next binade would start; the midpoint tests
// use that as the "next value" above the largest finite one (ties to it mean overflow to Inf).
template <class H>
double reference_value(std::uint32_t b) {
  const int m_bits = Format<H>::mantissa_bits;
  const int exponent = static_cast<int>((b & 0x7fffu) >> m_bits);
  const double mantissa = static_cast<double>(b & ((1u << m_bits) - 1u));
  const double magnitude =
      exponent == 0 ? std::ldexp(mantissa, 1 - Format<H>::bias - m_bits)
                    : std::ldexp(mantissa + std::ldexp(1.0, m_bits), exponent - Format<H>::bias - m_bits);
  return (b & 0x8000u) ? -magnitude : magnitude;
}

TEST(Half, StorageIsSixteenBits) {
  EXPECT_EQ(sizeof(bf16), 2u);
  EXPECT_EQ(sizeof(fp16), 2u);
  EXPECT_TRUE(std::is_trivially_copyable<bf16>::value);
  EXPECT_TRUE(std::is_trivially_copyable<fp16>::value);
  EXPECT_TRUE(std::is_standard_layout<bf16>::value);
  EXPECT_FALSE((std::is_convertible<int, bf16>::value));
  EXPECT_FALSE((std::is_convertible<float, fp16>::value));
  EXPECT_EQ(bf16().bits(), 0x0000);
  EXPECT_EQ(fp16().bits(), 0x0000);
}

TEST(Half, SignedZeros) {
  EXPECT_EQ(bf16(0.0f).bits(), 0x0000);
  EXPECT_EQ(bf16(-0.0f).bits(), 0x8000);
  EXPECT_EQ(fp16(0.0f).bits(), 0x0000);
  EXPECT_EQ(fp16(-0.0).bits(), 0x8000);
  EXPECT_TRUE(std::signbit(static_cast<float>(fp16::from_bits(0x8000))));
  EXPECT_TRUE(bf16::from_bits(0x0000) == bf16::from_bits(0x8000));
  EXPECT_FALSE(fp16::from_bits(0x0000) != fp16::from_bits(0x8000));
}

TEST(Half, One) {
  EXPECT_EQ(bf16(1.0f).bits(), 0x3f80);
  EXPECT_EQ(fp16(1.0f).bits(), 0x3c00);
  EXPECT_EQ(bf16(-2.0).bits(), 0xc000);
  EXPECT_EQ(fp16(-2.0).bits(), 0xc000);
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0x3f80)), 1.0f);
  EXPECT_EQ(static_cast<double>(fp16::from_bits(0x3c00)), 1.0);
}

TEST(Half, SmallestSubnormal) {
  EXPECT_EQ(static_cast<float>(fp16::from_bits(0x0001)), std::ldexp(1.0f, -24));
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0x0001)), std::ldexp(1.0f, -133));
  EXPECT_EQ(fp16(std::ldexp(1.0f, -24)).bits(), 0x0001);
  EXPECT_EQ(bf16(std::ldexp(1.0f, -133)).bits(), 0x0001);
  EXPECT_EQ(fp16(-std::ldexp(1.0f, -24)).bits(), 0x8001);
  EXPECT_EQ(static_cast<float>(fp16::from_bits(0x03ff)), std::ldexp(1023.0f, -24));
  EXPECT_EQ(static_cast<float>(fp16::from_bits(0x0400)), std::ldexp(1.0f, -14));
  // The smallest float subnormal is far below half of bf16's smallest: it rounds to zero.
  EXPECT_EQ(bf16(std::numeric_limits<float>::denorm_min()).bits(), 0x0000);
}

TEST(Half, LargestFinite) {
  EXPECT_EQ(static_cast<float>(fp16::from_bits(0x7bff)), 65504.0f);
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0x7f7f)), std::ldexp(255.0f, 120));
  EXPECT_NEAR(static_cast<double>(bf16::from_bits(0x7f7f)), 3.3895314e38, 1e31);
  EXPECT_EQ(fp16(65504.0f).bits(), 0x7bff);
  EXPECT_EQ(bf16(std::ldexp(255.0f, 120)).bits(), 0x7f7f);
}

TEST(Half, OverflowRoundsToInf) {
  EXPECT_EQ(fp16(65519.0f).bits(), 0x7bff);
  EXPECT_EQ(fp16(65520.0f).bits(), 0x7c00);  // the tie between 65504 and 65536 goes to even: Inf
  EXPECT_EQ(fp16(-65520.0f).bits(), 0xfc00);
  EXPECT_EQ(fp16(1e10f).bits(), 0x7c00);
  EXPECT_EQ(fp16(1e300).bits(), 0x7c00);
  EXPECT_EQ(bf16(FLT_MAX).bits(), 0x7f80);
  EXPECT_EQ(bf16(-FLT_MAX).bits(), 0xff80);
  EXPECT_EQ(bf16(1e300).bits(), 0x7f80);
  EXPECT_EQ(bf16(-1e300).bits(), 0xff80);
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(bf16(inf).bits(), 0x7f80);
  EXPECT_EQ(fp16(-inf).bits(), 0xfc00);
  EXPECT_EQ(static_cast<float>(fp16::from_bits(0x7c00)), inf);
  EXPECT_EQ(static_cast<float>(bf16::from_bits(0xff80)), -inf);
}

TEST(Half, NanStaysNan) {
  const float qnan = std::numeric_limits<float>::quiet_NaN();
  const float snan = std::numeric_limits<float>::signaling_NaN();
  for (float nan : {qnan, -qnan, snan, -snan}) {
    const bf16 b(nan);
    const fp16 h(nan);
    EXPECT_TRUE(is_nan_bits<bf16>(b.bits())) << std::hex << b.bits();
    EXPECT_TRUE(is_nan_bits<fp16>(h.bits())) << std::hex << h.bits();
    EXPECT_NE(b.bits() & 0x0040, 0) << "quiet";
    EXPECT_NE(h.bits() & 0x0200, 0) << "quiet";
    EXPECT_EQ(b.bits() & 0x8000, std::signbit(nan) ? 0x8000 : 0) << "sign kept";
    EXPECT_EQ(h.bits() & 0x8000, std::signbit(nan) ? 0x8000 : 0) << "sign kept";
    EXPECT_TRUE(std::isnan(static_cast<float>(b)));
    EXPECT_TRUE(std::isnan(static_cast<double>(h)));
    EXPECT_FALSE(b == b);
    EXPECT_TRUE(h != h);
    EXPECT_FALSE(h < h || h > h || h <= h || h >= h);
  }
  // A float NaN whose payload lies only in the 16 bits bf16 drops must not become Inf.
  EXPECT_TRUE(is_nan_bits<bf16>(bf16(kpmap::detail::bits_to_float(0x7f800001u)).bits()));
  EXPECT_TRUE(is_nan_bits<fp16>(fp16(kpmap::detail::bits_to_float(0x7f800001u)).bits()));
  EXPECT_TRUE(is_nan_bits<bf16>(bf16(std::numeric_limits<double>::quiet_NaN()).bits()));
}

TEST(Half, TiesToEven) {
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -8)).bits(), 0x3f80);
  EXPECT_EQ(bf16(1.0f + 3 * std::ldexp(1.0f, -8)).bits(), 0x3f82);
  EXPECT_EQ(bf16(-(1.0f + 3 * std::ldexp(1.0f, -8))).bits(), 0xbf82);
  EXPECT_EQ(bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)).bits(), 0x3f81);
  EXPECT_EQ(fp16(1.0f + std::ldexp(1.0f, -11)).bits(), 0x3c00);
  EXPECT_EQ(fp16(1.0f + 3 * std::ldexp(1.0f, -11)).bits(), 0x3c02);
  EXPECT_EQ(fp16(-(1.0f + 3 * std::ldexp(1.0f, -11))).bits(), 0xbc02);
  EXPECT_EQ(fp16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)).bits(), 0x3c01);
}

TEST(Half, FromDoubleRoundsOnce) {
  // Through float these would round to the tie and then to even: one ulp too low.
  EXPECT_EQ(bf16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -30)).bits(), 0x3f81);
  EXPECT_EQ(fp16(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits(), 0x3c01);
  EXPECT_EQ(fp16(-(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40))).bits(), 0xbc01);
  EXPECT_EQ(bf16(1.0 + std::ldexp(1.0, -8) - std::ldexp(1.0, -30)).bits(), 0x3f80);
  EXPECT_EQ(fp16(std::ldexp(1.0, -25) + std::ldexp(1.0, -60)).bits(), 0x0001);
  EXPECT_EQ(fp16(std::ldexp(1.0, -25)).bits(), 0x0000);
  EXPECT_EQ(bf16(std::ldexp(1.0, -134) + std::ldexp(1.0, -170)).bits(), 0x0001);
  EXPECT_EQ(bf16(std::ldexp(1.0, -200)).bits(), 0x0000);
  EXPECT_EQ(bf16(-std::ldexp(1.0, -200)).bits(), 0x8000);
}

TEST(Half, SubnormalRoundingInFp16) {
  EXPECT_EQ(fp16(std::ldexp(1.0f, -25)).bits(), 0x0000);      // tie between 0 and 2^-24: 0
  EXPECT_EQ(fp16(std::ldexp(3.0f, -25)).bits(), 0x0002);      // tie between 1 and 2 units: 2
  EXPECT_EQ(fp16(std::ldexp(5.0f, -26)).bits(), 0x0001);      // 1.25 units
  EXPECT_EQ(fp16(std::ldexp(1.0f, -25) + std::ldexp(1.0f, -35)).bits(), 0x0001);
  EXPECT_EQ(fp16(std::ldexp(1.0f, -26)).bits(), 0x0000);
  EXPECT_EQ(fp16(-std::ldexp(1.0f, -26)).bits(), 0x8000);     // signed zero
  EXPECT_EQ(fp16(std::ldexp(2047.0f, -25)).bits(), 0x0400);   // 1023.5 units: up to 2^-14
  EXPECT_EQ(fp16(std::ldexp(2045.0f, -25)).bits(), 0x03fe);   // 1022.5 units: even
}

// 16 bits -> float is exact (the reference decoder agrees for every pattern) and float -> 16
// bits gives back the same pattern for every non-NaN one; NaN patterns stay NaN.
template <class H>
void check_every_pattern() {
  int mismatches = 0;
  for (std::uint32_t b = 0; b <= 0xffffu; ++b) {
    const H h = H::from_bits(static_cast<std::uint16_t>(b));
    const float f = static_cast<float>(h);
    const double d = static_cast<double>(h);
    const bool inf = (b & 0x7fffu) == exponent_mask<H>();
    const double expected = !inf ? reference_value<H>(b)
                            : (b & 0x8000u) ? -std::numeric_limits<double>::infinity()
                                            : std::numeric_limits<double>::infinity();
    bool ok;
    if (is_nan_bits<H>(b)) {
      ok = std::isnan(f) && is_nan_bits<H>(H(f).bits()) && is_nan_bits<H>(H(d).bits());
    } else {
      ok = static_cast<double>(f) == expected && d == expected &&
           std::signbit(f) == ((b & 0x8000u) != 0) && H(f).bits() == b && H(d).bits() == b;
    }
    if (!ok && ++mismatches == 1) ADD_FAILURE() << "first mismatch: pattern 0x" << std::hex << b;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(Half, EveryBf16PatternRoundTrips) { check_every_pattern<bf16>(); }
TEST(Half, EveryFp16PatternRoundTrips) { check_every_pattern<fp16>(); }

// Round to nearest even at every midpoint between neighbouring positive finite values (and the
// midpoint above the largest, where the tie goes to Inf), from float and from double, with
// the values just below and above each midpoint; negatives mirror. The midpoints have one bit
// more than the format, so they are exact in float.
template <class H>
void check_every_midpoint() {
  const std::uint32_t inf = exponent_mask<H>();
  int mismatches = 0;
  for (std::uint32_t k = 0; k < inf; ++k) {
    const double lo = reference_value<H>(k);
    const double hi = reference_value<H>(k + 1);
    const float mid = static_cast<float>((lo + hi) / 2);
    const std::uint32_t even = (k & 1u) ? k + 1 : k;
    const float below = std::nextafter(mid, 0.0f);
    const float above = std::nextafter(mid, std::numeric_limits<float>::infinity());
    const double dmid = static_cast<double>(mid);
    const double dstep = std::ldexp(dmid, -45);
    for (std::uint32_t sign : {0x0000u, 0x8000u}) {
      const float s = sign ? -1.0f : 1.0f;
      mismatches += H(s * mid).bits() != (sign | even);
      mismatches += H(s * below).bits() != (sign | k);
      mismatches += H(s * above).bits() != (sign | (k + 1));
      mismatches += H(s * dmid).bits() != (sign | even);
      mismatches += H(s * (dmid - dstep)).bits() != (sign | k);
      mismatches += H(s * (dmid + dstep)).bits() != (sign | (k + 1));
    }
    if (mismatches != 0) {
      ADD_FAILURE() << "first mismatch between patterns 0x" << std::hex << k << " and 0x" << k + 1;
      return;
    }
  }
}

TEST(Half, Bf16RoundsToNearestEvenAtEveryMidpoint) { check_every_midpoint<bf16>(); }
TEST(Half, Fp16RoundsToNearestEvenAtEveryMidpoint) { check_every_midpoint<fp16>(); }

// The host's bulk loops (detail::scaled_to_bf16, detail::add_bf16: MPI's bf16 sum and the
// trainer's cast to a bf16 wire), in every version this build and CPU can run (scalar, SSE2,
// AVX2, AVX-512), give the bits of the scalar conversion, which the tests above check against the
// formats' definition: inputs at and around every bf16 midpoint and pattern (every 16-bit high
// half with low halves 0, just below, at and above the midpoint, and the largest), NaNs with
// payloads, and a length that leaves a tail past the 8-, 16- and 32-wide blocks. The sum of two
// NaNs is either one's NaN, quieted: C++ does not say which, for the scalar form either.
void check_bf16_loops() {
  const std::uint32_t lows[] = {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu, 0x1234u};
  std::vector<float> in;
  for (std::uint32_t high = 0; high < 0x10000u; ++high) {
    for (std::uint32_t low : lows) in.push_back(kpmap::detail::bits_to_float((high << 16) | low));
  }
  in.resize(in.size() + 11, 1.5f);
  const auto n = static_cast<std::int64_t>(in.size());
  for (float factor : {1.0f, 0.7f, 3.0f}) {
    std::vector<bf16> out(in.size());
    kpmap::detail::scaled_to_bf16(in.data(), factor, out.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      const bf16 expected(in[i] * factor);
      ASSERT_EQ(out[i].bits(), expected.bits()) << "element " << i << ", factor " << factor;
    }
  }
  std::vector<bf16> a(in.size()), b(in.size()), sum(in.size());
  for (std::int64_t i = 0; i < n; ++i) {
    a[i] = bf16::from_bits(static_cast<std::uint16_t>(i));
    b[i] = bf16::from_bits(static_cast<std::uint16_t>((static_cast<std::uint32_t>(i) * 2654435761u) >> 16));
    sum[i] = b[i];
  }
  kpmap::detail::add_bf16(a.data(), sum.data(), n);
  for (std::int64_t i = 0; i < n; ++i) {
    if (is_nan_bits<bf16>(a[i].bits()) && is_nan_bits<bf16>(b[i].bits())) {
      // Which NaN a float sum of two NaNs returns is the compiler's choice (the operand order of
      // addss/addps), in the scalar form too: either operand's, quieted.
      const std::uint16_t got = sum[i].bits();
      ASSERT_TRUE(got == (a[i].bits() | 0x40u) || got == (b[i].bits() | 0x40u)) << "element " << i;
      continue;
    }
    const bf16 expected(static_cast<float>(a[i]) + static_cast<float>(b[i]));
    ASSERT_EQ(sum[i].bits(), expected.bits()) << "element " << i;
  }
}

TEST(Half, HostBulkLoopsGiveTheScalarBits) {
  using kpmap::detail::HostLoops;
  const HostLoops widest = kpmap::detail::bf16_loops();
  int ran = 0;
  for (HostLoops loops : {HostLoops::scalar, HostLoops::sse2, HostLoops::avx2, HostLoops::avx512}) {
    if (!kpmap::detail::set_bf16_loops(loops)) continue;
    SCOPED_TRACE("loops " + std::to_string(static_cast<int>(loops)));
    check_bf16_loops();
    ++ran;
  }
  ASSERT_TRUE(kpmap::detail::set_bf16_loops(widest));
#if defined(__x86_64__)
  EXPECT_GE(ran, 2) << "x86-64 has SSE2 at least";
#endif
  RecordProperty("versions_checked", ran);  // 3 with AVX2, 4 with AVX-512 (where the CPU has them)
}

TEST(Half, ArithmeticRoundsOnceInFloat) {
  const bf16 one(1.0f), tiny = bf16::from_bits(0x3b80);  // 2^-8: half an ulp of 1
  EXPECT_EQ((one + tiny).bits(), 0x3f80);                 // tie -> even
  EXPECT_EQ((one + tiny + tiny).bits(), 0x3f80);          // each step rounds
  EXPECT_EQ((one + (tiny + tiny)).bits(), 0x3f81);
  EXPECT_EQ((fp16(6.0f) / fp16(4.0f)).bits(), 0x3e00);    // 1.5
  EXPECT_EQ((fp16(3.0f) * fp16(-0.5f)).bits(), 0xbe00);   // -1.5
  EXPECT_EQ((bf16(3.0f) - bf16(5.0f)).bits(), 0xc000);    // -2
  EXPECT_EQ((-bf16(2.0f)).bits(), 0xc000);
  fp16 x(2.0f);
  x += fp16(1.0f);
  x *= fp16(4.0f);
  x -= fp16(2.0f);
  x /= fp16(5.0f);
  EXPECT_EQ(x.bits(), 0x4000);  // ((2 + 1) * 4 - 2) / 5 = 2
  EXPECT_EQ((fp16(60000.0f) + fp16(60000.0f)).bits(), 0x7c00);
  EXPECT_TRUE(bf16(1.0f) < bf16(2.0f) && bf16(2.0f) >= bf16(2.0f) && !(bf16(2.0f) > bf16(2.0f)));
  EXPECT_TRUE(fp16(-1.0f) <= fp16(-1.0f) && fp16(-1.0f) != fp16(1.0f));
  EXPECT_EQ(kpmap::to_float(bf16(2.5f)), 2.5f);
  EXPECT_EQ(kpmap::to_float(fp16(-0.75f)), -0.75f);
  EXPECT_EQ(kpmap::to_float(1.25), 1.25f);
  EXPECT_EQ(kpmap::to_float(3.5f), 3.5f);
}

TEST(Half, VolatileOperationsForKokkosReducers) {
  volatile bf16 dest = bf16(3.0f);
  const volatile bf16 src = bf16(4.0f);
  dest += src;
  EXPECT_EQ(dest.bits(), 0x40e0);  // 7
  EXPECT_TRUE(src < dest && dest > src && !(dest == src));
  dest = src;
  const bf16 copy = dest;
  EXPECT_EQ(copy.bits(), 0x4080);  // 4
}

TEST(Half, ReductionIdentities) {
  EXPECT_EQ(Kokkos::reduction_identity<bf16>::sum().bits(), 0x0000);
  EXPECT_EQ(Kokkos::reduction_identity<bf16>::prod().bits(), 0x3f80);
  EXPECT_EQ(Kokkos::reduction_identity<bf16>::max().bits(), 0xff80);
  EXPECT_EQ(Kokkos::reduction_identity<bf16>::min().bits(), 0x7f80);
  EXPECT_EQ(Kokkos::reduction_identity<fp16>::sum().bits(), 0x0000);
  EXPECT_EQ(Kokkos::reduction_identity<fp16>::prod().bits(), 0x3c00);
  EXPECT_EQ(Kokkos::reduction_identity<fp16>::max().bits(), 0xfc00);
  EXPECT_EQ(Kokkos::reduction_identity<fp16>::min().bits(), 0x7c00);
}

// Filled and reduced in kernels. Values are small non-negative integers whose total stays
// within the exactly representable integers (256 for bf16, 2048 for fp16), so every partial
// sum is exact in any order and the expected totals are plain integer arithmetic.
template <class H>
void check_kernel_reductions(int n, int modulus) {
  Kokkos::View<H*> v("kpmap::test_half::v", n);
  Kokkos::parallel_for(
      "kpmap::test_half::fill", Kokkos::RangePolicy<>(0, n),
      KOKKOS_LAMBDA(int i) { v(i) = H(static_cast<float>(i % modulus)) * H(1.0f); });
  H sum, max, min;
  Kokkos::parallel_reduce(
      "kpmap::test_half::sum", Kokkos::RangePolicy<>(0, n),
      KOKKOS_LAMBDA(int i, H& acc) { acc += v(i); }, Kokkos::Sum<H>(sum));
  Kokkos::parallel_reduce(
      "kpmap::test_half::max", Kokkos::RangePolicy<>(0, n),
      KOKKOS_LAMBDA(int i, H& acc) { acc = v(i) > acc ? v(i) : acc; }, Kokkos::Max<H>(max));
  Kokkos::parallel_reduce(
      "kpmap::test_half::min", Kokkos::RangePolicy<>(0, n),
      KOKKOS_LAMBDA(int i, H& acc) { acc = v(i) < acc ? v(i) : acc; }, Kokkos::Min<H>(min));
  int expected = 0;
  for (int i = 0; i < n; ++i) expected += i % modulus;
  EXPECT_EQ(static_cast<float>(sum), static_cast<float>(expected));
  EXPECT_EQ(static_cast<float>(max), static_cast<float>(modulus - 1));
  EXPECT_EQ(static_cast<float>(min), 0.0f);
}

TEST(Half, KokkosReduceBf16) { check_kernel_reductions<bf16>(200, 3); }   // total 199
TEST(Half, KokkosReduceFp16) { check_kernel_reductions<fp16>(1000, 4); }  // total 1500

TEST(Half, ValueInitialisedViewIsPositiveZero) {
  Kokkos::View<bf16*> v("kpmap::test_half::zero", 16);
  auto host = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  for (int i = 0; i < 16; ++i) EXPECT_EQ(host(i).bits(), 0x0000);
}

}  // namespace
