// StepComm's finite check (step_comm_detail::any_nonfinite), which decides whether a step is
// skipped or stops the run: for bf16 and fp16 against every one of the 65536 bit patterns,
// decoded independently (an all-ones exponent field is Inf or NaN); for float and double at the
// edges of each class; and one bad element at every place of a View that spans several of the
// host's runs of host_run elements, the rest finite. Then the mean gradient as the optimizer
// reads it from the reduced wire (DividedWire, ScaledWire), against values computed here in the
// arithmetic each one promises. Then the cast of the gradient slots by the gradient kernels'
// epilogue (WireCast): the wire positions it writes (WireLayout::position, the inverse of slot)
// and the wire it leaves, bit for bit the one to_wire writes alone, for every wire type and
// layout.
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/model/epilogue.hpp"
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

// ---- The gradient slots cast by the kernels' epilogue (WireCast) ----

using kpmap::step_comm_detail::WireLayout;

// The layouts StepComm makes for n parameters: allreduce in one bucket and in buckets of 3;
// reduce_scatter over D = 1 to 4 ranks in one bucket per block and in buckets of 1, 2 and 3
// (blocks split, shards padded past n, a shard all padding when D > n).
std::vector<WireLayout> layouts(long long n) {
  std::vector<WireLayout> all;
  for (long long c : {0LL, 3LL}) {
    WireLayout l;
    l.n = n, l.ranks = 1, l.shard = n + 2, l.bucket = c > 0 ? std::min(c, n + 2) : n + 2;
    all.push_back(l);
  }
  for (long long D = 1; D <= 4; ++D) {
    for (long long c : {0LL, 1LL, 2LL, 3LL}) {
      WireLayout l;
      l.n = n, l.ranks = D, l.sharded = true, l.shard = (n + D - 1) / D;
      l.bucket = c > 0 ? std::min(c, l.shard + 2) : l.shard + 2;
      all.push_back(l);
    }
  }
  return all;
}

std::string describe(const WireLayout& l) {
  return std::string(l.sharded ? "reduce_scatter" : "allreduce") + " n " + std::to_string(l.n) + " D " +
         std::to_string(l.ranks) + " bucket " + std::to_string(l.bucket);
}

// position(i) is the wire position whose slot is i, every gradient slot has one and no two share
// it, and run_end(i) ends a run of slots at consecutive positions.
TEST(StepCommWireCast, PositionInvertsSlot) {
  for (long long n : {1LL, 2LL, 7LL, 10LL}) {
    for (const WireLayout& l : layouts(n)) {
      std::vector<int> hits(static_cast<std::size_t>(l.ranks * l.block()), 0);
      for (long long i = 0; i < n; ++i) {
        const long long p = l.position(i);
        ASSERT_TRUE(p >= 0 && p < l.ranks * l.block()) << describe(l) << " slot " << i;
        EXPECT_EQ(l.slot(p), i) << describe(l) << " slot " << i;
        ++hits[static_cast<std::size_t>(p)];
        const long long end = l.run_end(i);
        EXPECT_TRUE(end > i && end <= n) << describe(l) << " slot " << i;
        if (i + 1 < end) {
          EXPECT_EQ(l.position(i + 1), p + 1) << describe(l) << " slot " << i;
        }
      }
      for (long long p = 0; p < l.ranks * l.block(); ++p) {
        const long long i = l.slot(p);
        EXPECT_EQ(hits[static_cast<std::size_t>(p)], i >= 0 && i < n ? 1 : 0) << describe(l) << " position " << p;
      }
    }
  }
}

// The wire after the epilogue over every gradient slot and to_wire of the rest, against to_wire
// of every slot: the same bits, whatever the layout, for fp32 and fp64 sums and each wire type.
// The factor is not a power of two, so every value rounds.
template <class Acc, class C>
void check_wire_cast() {
  const kpmap::execution_space exec;
  constexpr long long n = 10000;  // the host's runs of epilogue_run slots, and a partial one
  std::vector<double> values(n + 2);
  for (long long i = 0; i < n + 2; ++i) values[i] = std::ldexp(std::sin(0.37 * i + 1), static_cast<int>(i % 29) - 14);
  const View1<Acc> stats = device_vector<Acc>(values);
  const double factor = 3.0 / 1024.0 / 1.7, loss_factor = 0.25, count_factor = 1.0 / 3.0;
  std::vector<WireLayout> all = layouts(n);
  WireLayout wide = all.back();  // buckets wider than a run: 4100 elements
  wide.bucket = 4100;
  all.push_back(wide);
  for (const WireLayout& l : all) {
    const long long size = l.ranks * l.block();
    View1<C> alone("alone", size), fused("fused", size);
    Kokkos::deep_copy(alone, static_cast<C>(7.0f));
    Kokkos::deep_copy(fused, static_cast<C>(7.0f));
    for (long long k = 0; k < l.buckets(); ++k) {
      kpmap::step_comm_detail::to_wire(exec, l, stats, alone, k, factor, loss_factor, count_factor);
    }
    kpmap::step_comm_detail::WireCast<Acc> cast;
    cast.type = kpmap::dtype_v<C>, cast.active = true, cast.stats = stats, cast.layout = l, cast.factor = factor;
    if constexpr (std::is_same_v<C, double>) cast.fp64 = fused;
    if constexpr (std::is_same_v<C, float>) cast.fp32 = fused;
    if constexpr (std::is_same_v<C, bf16>) cast.bf16s = fused;
    if constexpr (std::is_same_v<C, fp16>) cast.fp16s = fused;
    kpmap::model_detail::run_epilogue(exec, 0, n, cast);
    for (long long k = 0; k < l.buckets(); ++k) {
      kpmap::step_comm_detail::to_wire(exec, l, stats, fused, k, factor, loss_factor, count_factor, true);
    }
    const auto a = kpmap::test::host_copy(alone), b = kpmap::test::host_copy(fused);
    long long differ = 0, first = -1;
    for (long long p = 0; p < size; ++p) {
      if (std::memcmp(&a(p), &b(p), sizeof(C)) != 0 && differ++ == 0) first = p;
    }
    EXPECT_EQ(differ, 0) << describe(l) << ": first difference at position " << first << " (slot "
                         << (first >= 0 ? l.slot(first) : -1) << ")";
  }
}

TEST(StepCommWireCast, SameWireAsToWire) {
  check_wire_cast<float, bf16>();
  check_wire_cast<float, fp16>();
  check_wire_cast<float, float>();
  check_wire_cast<float, double>();
  check_wire_cast<double, bf16>();
  check_wire_cast<double, fp16>();
  check_wire_cast<double, float>();
  check_wire_cast<double, double>();
}

// An inactive WireCast (the sums travel in place) writes nothing.
TEST(StepCommWireCast, InactiveWritesNothing) {
  const kpmap::execution_space exec;
  const View1<float> wire = device_vector<float>({5, 5, 5});
  kpmap::step_comm_detail::WireCast<float> cast;
  cast.fp32 = wire, cast.stats = device_vector<float>({1, 2, 3});
  kpmap::model_detail::run_epilogue(exec, 0, 3, cast);
  EXPECT_EQ(kpmap::test::host_copy(wire)(1), 5.0f);
}

}  // namespace
