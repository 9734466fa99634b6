// StepComm's finite check (step_comm_detail::any_nonfinite), which decides whether a step is
// skipped or stops the run: for bf16 and fp16 against every one of the 65536 bit patterns,
// decoded independently (an all-ones exponent field is Inf or NaN); for float and double at the
// edges of each class; and one bad element at every place of a View that spans several of the
// host's runs of host_run elements, the rest finite. Then the mean gradient as the optimizer
// reads it from the reduced wire (DividedWire, ScaledWire), against values computed here in the
// arithmetic each one promises.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/train/step_comm.hpp"
#include "support/host_copy.hpp"

namespace {

using kpmap::bf16;
using kpmap::fp16;
using kpmap::View1;
using kpmap::step_comm_detail::any_nonfinite;
using kpmap::test::device_vector;

// Every 16-bit pattern, one View of one element each (subviews of one View of all 65536).
template <class H>
void check_every_pattern(int exponent_bits_shift) {
  const kpmap::execution_space exec;
  View1<H> all("patterns", 65536);
  auto host = Kokkos::create_mirror_view(all);
  for (std::uint32_t b = 0; b < 65536; ++b) host(b) = H::from_bits(static_cast<std::uint16_t>(b));
  Kokkos::deep_copy(all, host);
  const std::uint32_t exponent = 0x7fffu >> exponent_bits_shift << exponent_bits_shift;
  int wrong = 0;
  for (long long b = 0; b < 65536; ++b) {
    const bool expected = (static_cast<std::uint32_t>(b) & exponent) == exponent;
    if (any_nonfinite(exec, View1<H>(Kokkos::subview(all, Kokkos::make_pair(b, b + 1)))) != expected) {
      if (wrong++ == 0) ADD_FAILURE() << "first wrong pattern 0x" << std::hex << b;
    }
  }
  EXPECT_EQ(wrong, 0);
  EXPECT_FALSE(any_nonfinite(exec, View1<H>("empty", 0)));
}

TEST(StepCommFinite, EveryBf16Pattern) { check_every_pattern<bf16>(7); }
TEST(StepCommFinite, EveryFp16Pattern) { check_every_pattern<fp16>(10); }

template <class T>
std::vector<T> finite_edges() {
  using L = std::numeric_limits<T>;
  return {T(0), -T(0), L::denorm_min(), -L::denorm_min(), L::min(), L::max(), L::lowest(), T(1), T(-3.5)};
}

template <class T>
std::vector<T> nonfinite_values() {
  using L = std::numeric_limits<T>;
  return {L::infinity(), -L::infinity(), L::quiet_NaN(), -L::quiet_NaN(), L::signaling_NaN()};
}

template <class T>
bool check_one(T value) {
  View1<T> v("value", 1);
  Kokkos::deep_copy(v, value);
  return any_nonfinite(kpmap::execution_space(), v);
}

TEST(StepCommFinite, FloatAndDoubleEdges) {
  for (float x : finite_edges<float>()) EXPECT_FALSE(check_one(x)) << x;
  for (double x : finite_edges<double>()) EXPECT_FALSE(check_one(x)) << x;
  for (float x : nonfinite_values<float>()) EXPECT_TRUE(check_one(x)) << x;
  for (double x : nonfinite_values<double>()) EXPECT_TRUE(check_one(x)) << x;
  // the largest finite value next to Inf in the bits: exponent one below all ones
  EXPECT_FALSE(check_one(kpmap::detail::bits_to_float(0x7f7fffffu)));
  EXPECT_TRUE(check_one(kpmap::detail::bits_to_float(0x7f800001u)));
}

// One Inf or NaN at each place of interest (both ends, both sides of every run boundary) in an
// otherwise finite View of 3 host runs and 5 elements, of each type; none at all gives false.
template <class T>
void check_places(T bad, T good) {
  const long long r = kpmap::step_comm_detail::host_run, n = 3 * r + 5;
  View1<T> v("v", n);
  Kokkos::deep_copy(v, good);
  const kpmap::execution_space exec;
  EXPECT_FALSE(any_nonfinite(exec, v));
  for (long long at : {0LL, 1LL, r - 1, r, 2 * r - 1, 2 * r, 3 * r - 1, 3 * r, n - 1}) {
    Kokkos::deep_copy(Kokkos::subview(v, at), bad);
    EXPECT_TRUE(any_nonfinite(exec, v)) << at;
    Kokkos::deep_copy(Kokkos::subview(v, at), good);
  }
  EXPECT_FALSE(any_nonfinite(exec, v));
}

TEST(StepCommFinite, EveryPlace) {
  check_places(bf16::from_bits(0xff80), bf16::from_bits(0x7f7f));  // -Inf among the largest finite
  check_places(fp16::from_bits(0x7e00), fp16::from_bits(0xfbff));  // NaN among the lowest finite
  check_places(std::numeric_limits<float>::infinity(), std::numeric_limits<float>::max());
  check_places(std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::lowest());
}

// ---- The mean gradient read from the reduced wire ----

// What g(i) gives inside a kernel, for i < g.size().
template <class M, class G>
std::vector<M> read(const G& g) {
  View1<M> out("out", g.size());
  Kokkos::parallel_for(
      "read", Kokkos::RangePolicy<kpmap::execution_space, Kokkos::IndexType<long long>>(0, g.size()),
      KOKKOS_LAMBDA(long long i) { out(i) = g(i); });
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), out);
  return std::vector<M>(h.data(), h.data() + h.extent(0));
}

// The uncast wire is divided in its own type (the accumulation type), as the sums were made, then
// converted to M: 1 / 3 in float, widened, is not 1 / 3 in double. The trailing slots (the loss
// and the count) are not read.
TEST(StepCommMeanGradient, DividedWireDividesInTheWireType) {
  using kpmap::step_comm_detail::DividedWire;
  const auto f = device_vector<float>({1, -6, 0.75, 99, 3});
  EXPECT_EQ(read<double>(DividedWire<float, double>{f, 3.0f, 3}),
            (std::vector<double>{static_cast<double>(1.0f / 3.0f), -2.0, static_cast<double>(0.75f / 3.0f)}));
  EXPECT_EQ(read<float>(DividedWire<float, float>{f, 3.0f, 2}), (std::vector<float>{1.0f / 3.0f, -2.0f}));
  const auto d = device_vector<double>({1, 10, 5});
  EXPECT_EQ(read<double>(DividedWire<double, double>{d, 4.0, 2}), (std::vector<double>{0.25, 2.5}));
}

// The cast wire is multiplied by 1 / (count * scale): exactly for 16-bit values and power-of-two
// factors; in float when M is float and the wire no wider, else in double.
TEST(StepCommMeanGradient, ScaledWireMultipliesInTheProductType) {
  using kpmap::step_comm_detail::ScaledWire;
  static_assert(std::is_same_v<ScaledWire<bf16, float>::P, float>);
  static_assert(std::is_same_v<ScaledWire<fp16, float>::P, float>);
  static_assert(std::is_same_v<ScaledWire<float, float>::P, float>);
  static_assert(std::is_same_v<ScaledWire<double, float>::P, double>);
  static_assert(std::is_same_v<ScaledWire<bf16, double>::P, double>);
  const std::vector<double> values = {256, -3, 0.5, 1.5, 7};  // exact in bf16 and fp16
  const std::vector<float> quarter = {64, -0.75f, 0.125f, 0.375f};
  EXPECT_EQ(read<float>(ScaledWire<bf16, float>{device_vector<bf16>(values), 0.25f, 4}), quarter);
  EXPECT_EQ(read<float>(ScaledWire<fp16, float>{device_vector<fp16>(values), 0.25f, 4}), quarter);
  EXPECT_EQ(read<double>(ScaledWire<bf16, double>{device_vector<bf16>(values), 0.25, 2}), (std::vector<double>{64, -0.75}));
  // A double wire read into float: the product in double, rounded once to float.
  const double w = 1.0 + 0x1p-40, third = 1.0 / 3.0;
  EXPECT_EQ(read<float>(ScaledWire<double, float>{device_vector<double>({w}), third, 1}),
            (std::vector<float>{static_cast<float>(w * third)}));
  // float * float rounds once in float: (1 + 2^-23) * (1 + 2^-23) = 1 + 2^-22 + 2^-46 -> 1 + 2^-22
  const float e = 1.0f + 0x1p-23f;
  EXPECT_EQ(read<float>(ScaledWire<float, float>{device_vector<float>({e}), e, 1}),
            (std::vector<float>{1.0f + 0x1p-22f}));
}

}  // namespace
