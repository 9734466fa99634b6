// MPI datatypes and user-defined reduction ops for bf16 and fp16, through raw MPI calls.
// Integer-valued data small enough that every partial sum is exact in 16 bits gives exact
// expected sums, maxes and mins in any reduction order; one test sums values whose exact total
// is not representable and checks the documented bound (docs/precision.md).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kpmap/collectives/mpi_types.hpp"
#include "support/world.hpp"

namespace {

using kpmap::test::world_size;
using kpmap::test::world_rank;

using kpmap::bf16;
using kpmap::fp16;
using kpmap::ReduceOp;

// In [-8, 8]: over at most 4 ranks every partial sum lies within [-32, 32], exact in both types.
int value(int rank, int i) { return (i * 7 + rank * 3) % 17 - 8; }

template <class H>
void check_datatype(const char* name) {
  const MPI_Datatype t = kpmap::mpi_datatype<H>();
  EXPECT_EQ(t, kpmap::mpi_datatype<H>()) << "created once";
  int size = 0;
  MPI_Type_size(t, &size);
  EXPECT_EQ(size, 2);
  MPI_Aint lb = -1, extent = 0;
  MPI_Type_get_extent(t, &lb, &extent);
  EXPECT_EQ(lb, 0);
  EXPECT_EQ(extent, 2);
  char got[MPI_MAX_OBJECT_NAME];
  int len = 0;
  MPI_Type_get_name(t, got, &len);
  EXPECT_EQ(std::string(got, static_cast<size_t>(len)), name);
  const MPI_Op sum = kpmap::mpi_op<H>(ReduceOp::sum);
  EXPECT_EQ(sum, kpmap::mpi_op<H>(ReduceOp::sum)) << "created once";
  EXPECT_NE(sum, MPI_OP_NULL);
  EXPECT_NE(sum, kpmap::mpi_op<H>(ReduceOp::max));
  EXPECT_NE(kpmap::mpi_op<H>(ReduceOp::max), kpmap::mpi_op<H>(ReduceOp::min));
  int commutative = 0;
  MPI_Op_commutative(sum, &commutative);
  EXPECT_EQ(commutative, 1);
}

TEST(MpiTypes, HalfDatatypesAreTwoBytesAndCreatedOnce) {
  check_datatype<bf16>("kpmap_bf16");
  check_datatype<fp16>("kpmap_fp16");
  EXPECT_NE(kpmap::mpi_datatype<bf16>(), kpmap::mpi_datatype<fp16>());
  EXPECT_NE(kpmap::mpi_op<bf16>(ReduceOp::sum), kpmap::mpi_op<fp16>(ReduceOp::sum));
}

// The ops on known bit patterns, locally: inout = in op inout.
TEST(MpiTypes, OpsOnKnownBitPatterns) {
  const MPI_Datatype t = kpmap::mpi_datatype<bf16>();
  bf16 in[3] = {bf16::from_bits(0x3f80), bf16::from_bits(0x3f80), bf16::from_bits(0x3b80)};
  bf16 inout[3] = {bf16::from_bits(0x3f80), bf16::from_bits(0xc000), bf16::from_bits(0x3f80)};
  MPI_Reduce_local(in, inout, 3, t, kpmap::mpi_op<bf16>(ReduceOp::sum));
  EXPECT_EQ(inout[0].bits(), 0x4000);  // 1 + 1 = 2
  EXPECT_EQ(inout[1].bits(), 0xbf80);  // 1 + -2 = -1
  EXPECT_EQ(inout[2].bits(), 0x3f80);  // 2^-8 + 1: the tie rounds to even, 1

  const MPI_Datatype h = kpmap::mpi_datatype<fp16>();
  const fp16 nan = fp16::from_bits(0x7e00);
  fp16 a[4] = {fp16::from_bits(0x3c00), fp16::from_bits(0xc000), nan, fp16::from_bits(0x0001)};
  fp16 mx[4] = {fp16::from_bits(0x4000), fp16::from_bits(0xbc00), fp16::from_bits(0x3c00), nan};
  fp16 mn[4] = {mx[0], mx[1], mx[2], mx[3]};
  MPI_Reduce_local(a, mx, 4, h, kpmap::mpi_op<fp16>(ReduceOp::max));
  MPI_Reduce_local(a, mn, 4, h, kpmap::mpi_op<fp16>(ReduceOp::min));
  EXPECT_EQ(mx[0].bits(), 0x4000);
  EXPECT_EQ(mx[1].bits(), 0xbc00);
  EXPECT_EQ(mn[0].bits(), 0x3c00);
  EXPECT_EQ(mn[1].bits(), 0xc000);
  EXPECT_EQ(mx[2].bits(), 0x7e00) << "NaN from `in` propagates";
  EXPECT_EQ(mn[3].bits(), 0x7e00) << "NaN in `inout` stays";
}

// The bf16 sum op against an independent rounding: for every bf16 bit pattern a (and a few
// patterns past 65536 elements, so that lengths not a multiple of the op's 8-wide blocks are
// covered), a + b in float, then the nearer of the two bf16 values around that float, compared in
// double, ties to the even pattern (the value 2^128 standing in above the largest finite bf16,
// where the rounding overflows to Inf); a NaN comes back quiet with its sign.
std::uint16_t bf16_sum_reference(std::uint16_t a, std::uint16_t b) {
  const auto to_float = [](std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
  };
  const float s = to_float(std::uint32_t{a} << 16) + to_float(std::uint32_t{b} << 16);
  std::uint32_t u;
  std::memcpy(&u, &s, sizeof u);
  if (std::isnan(s)) return static_cast<std::uint16_t>((u >> 16) | 0x40u);
  if (std::isinf(s)) return static_cast<std::uint16_t>(u >> 16);
  const std::uint32_t low = u >> 16, high = low + 1;  // the magnitudes around |s|, same sign
  const auto magnitude = [&](std::uint32_t pattern) {
    const std::uint32_t m = pattern & 0x7fffu;
    return m == 0x7f80u ? std::ldexp(1.0, 128) : std::fabs(static_cast<double>(to_float(m << 16)));
  };
  const double d_low = std::fabs(s) - magnitude(low), d_high = magnitude(high) - std::fabs(s);
  if (d_low < d_high) return static_cast<std::uint16_t>(low);
  if (d_high < d_low) return static_cast<std::uint16_t>(high);
  return static_cast<std::uint16_t>((low & 1u) ? high : low);
}

TEST(MpiTypes, Bf16SumRoundsEveryPatternAsAnIndependentReference) {
  const MPI_Datatype t = kpmap::mpi_datatype<bf16>();
  const int n = 65536 + 5;
  for (std::uint32_t pass = 0; pass < 4; ++pass) {
    std::vector<bf16> in(n), inout(n);
    std::vector<std::uint16_t> partner(n), expected(n);
    for (int i = 0; i < n; ++i) {
      const auto a = static_cast<std::uint16_t>(i & 0xffff);
      // pass 0-2: pseudo-random partners; pass 3: a * 2^-8 where the exponent allows (ties)
      std::uint16_t b =
          static_cast<std::uint16_t>((static_cast<std::uint32_t>(i) * (2654435761u + pass)) >> 16);
      if (pass == 3) b = (a & 0x7f80u) > (8u << 7) ? static_cast<std::uint16_t>(a - (8u << 7)) : a;
      in[i] = bf16::from_bits(a);
      inout[i] = bf16::from_bits(b);
      partner[i] = b;
      expected[i] = bf16_sum_reference(a, b);
    }
    MPI_Reduce_local(in.data(), inout.data(), n, t, kpmap::mpi_op<bf16>(ReduceOp::sum));
    int wrong = 0;
    for (int i = 0; i < n && wrong < 5; ++i) {
      // The sum of two NaNs is either one's NaN, quieted: which one is the compiler's choice.
      const bool both_nan = (in[i].bits() & 0x7fffu) > 0x7f80u && (partner[i] & 0x7fffu) > 0x7f80u;
      const std::uint16_t got = inout[i].bits();
      if (both_nan ? got != (in[i].bits() | 0x40u) && got != (partner[i] | 0x40u) : got != expected[i]) {
        ++wrong;
        ADD_FAILURE() << "pass " << pass << ", element " << i << ": " << std::hex << in[i].bits() << " + "
                      << partner[i] << " gave " << inout[i].bits() << ", expected " << expected[i];
      }
    }
  }
}

template <class H>
void check_exact_allreduce(bool in_place) {
  const int n = 1000, p = world_size(), rank = world_rank();
  std::vector<H> send(n), recv(n);
  for (int i = 0; i < n; ++i) send[i] = H(static_cast<float>(value(rank, i)));
  for (ReduceOp op : {ReduceOp::sum, ReduceOp::max, ReduceOp::min}) {
    recv = send;
    const void* source = in_place ? MPI_IN_PLACE : send.data();
    ASSERT_EQ(MPI_Allreduce(source, recv.data(), n, kpmap::mpi_datatype<H>(), kpmap::mpi_op<H>(op),
                            MPI_COMM_WORLD),
              MPI_SUCCESS);
    int wrong = 0;
    for (int i = 0; i < n; ++i) {
      int expected = op == ReduceOp::sum ? 0 : value(0, i);
      for (int r = 0; r < p; ++r) {
        const int v = value(r, i);
        expected = op == ReduceOp::sum ? expected + v
                   : op == ReduceOp::max ? std::max(expected, v)
                                         : std::min(expected, v);
      }
      if (static_cast<float>(recv[i]) != static_cast<float>(expected) && ++wrong == 1) {
        ADD_FAILURE() << kpmap::to_string(op) << " element " << i << ": got "
                      << static_cast<float>(recv[i]) << ", expected " << expected;
      }
    }
    EXPECT_EQ(wrong, 0) << kpmap::to_string(op);
  }
}

TEST(MpiTypes, Bf16AllreduceIsExactOnIntegers) { check_exact_allreduce<bf16>(false); }
TEST(MpiTypes, Bf16AllreduceInPlace) { check_exact_allreduce<bf16>(true); }
TEST(MpiTypes, Fp16AllreduceIsExactOnIntegers) { check_exact_allreduce<fp16>(false); }
TEST(MpiTypes, Fp16AllreduceInPlace) { check_exact_allreduce<fp16>(true); }

// Rank 0 contributes `big` + 2 (i % 8), a 16-bit number whose ulp is 2; every other rank
// contributes 1, exactly half that ulp, so exact totals are often not representable. Each
// combine of the user op rounds to 16 bits, so the result depends on the reduction tree, but
// it stays within the bound of docs/precision.md:
// |computed - exact| <= (p - 1) u sum|x|, u = 2^-8 (bf16), 2^-11 (fp16).
template <class H>
void check_rounding_bound(float big, double u) {
  const int n = 64, p = world_size(), rank = world_rank();
  std::vector<H> x(n);
  for (int i = 0; i < n; ++i) x[i] = H(rank == 0 ? big + 2.0f * (i % 8) : 1.0f);
  ASSERT_EQ(MPI_Allreduce(MPI_IN_PLACE, x.data(), n, kpmap::mpi_datatype<H>(),
                          kpmap::mpi_op<H>(ReduceOp::sum), MPI_COMM_WORLD),
            MPI_SUCCESS);
  for (int i = 0; i < n; ++i) {
    const double exact = big + 2.0 * (i % 8) + (p - 1);  // all terms positive: sum|x| == exact
    const double error = std::fabs(static_cast<double>(x[i]) - exact);
    EXPECT_LE(error, (p - 1) * u * exact) << "element " << i;
    if (p == 2) {
      // One combine: big + 2k + 1 is a tie between big + 2k and big + 2k + 2, rounded to the
      // one with an even last bit. An fp32 wire would have given the same here, but not at p > 2.
      const double even = big + 2.0 * (i % 8) + ((i % 8) % 2 == 0 ? 0 : 2);
      EXPECT_EQ(static_cast<double>(x[i]), even) << "element " << i;
    }
    if (p == 1) {
      EXPECT_EQ(static_cast<double>(x[i]), exact);
    }
  }
}

TEST(MpiTypes, Bf16SumRoundsEachCombineWithinBound) {
  check_rounding_bound<bf16>(256.0f, std::ldexp(1.0, -8));
}
TEST(MpiTypes, Fp16SumRoundsEachCombineWithinBound) {
  check_rounding_bound<fp16>(2048.0f, std::ldexp(1.0, -11));
}

}  // namespace
