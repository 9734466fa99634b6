// Every standard integer type through every collective (mapped by size and signedness to MPI's
// fixed-width types), integer sums that need 64 bits or wrap, pmean of integers (JAX's floating
// result type), and rank-0 (scalar) Views in psum, pmean, pmax, pmin and ipsum. Expected values
// are exact integers computed from the world ranks, independently of kpmap.
#include <cstdint>
#include <type_traits>

#include "test_collectives_common.hpp"

namespace {

using namespace kct;

template <class T>
class Integers : public ::testing::Test {};

using IntegerTypes =
    ::testing::Types<char, signed char, unsigned char, short, unsigned short, int, unsigned int,
                     long, unsigned long, long long, unsigned long long>;
TYPED_TEST_SUITE(Integers, IntegerTypes);

// Distinct per rank and element; negative for signed types; every sum over 4 ranks fits int8.
template <class T>
double int_value(int rank, std::int64_t i) {
  return 1.0 + static_cast<double>(i) + 10.0 * rank - (std::is_signed_v<T> ? 20.0 : 0.0);
}

// 7 collectives per type (9 for unsigned char and the 64-bit types).
TYPED_TEST(Integers, EveryCollective) {
  using T = TypeParam;
  static_assert(kpmap::is_integer_element_v<T> && kpmap::is_element_v<T>);
  int size = 0;
  MPI_Type_size(kpmap::mpi_datatype<T>(), &size);
  EXPECT_EQ(size, static_cast<int>(sizeof(T)));

  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const Group g = group_of({{"i", n}}, {"i"}, rank);
  const auto fold = [&](std::int64_t i, auto op, double init) {
    double acc = init;
    for (int q : g.members) acc = op(acc, int_value<T>(q, i));
    return acc;
  };
  const auto sum = [&](std::int64_t i) { return fold(i, [](double a, double b) { return a + b; }, 0.0); };

  auto x = make<RView<T, 1>>({5});
  fill(x, [&](const Index& i) { return int_value<T>(rank, i[0]); });
  auto s = make<RView<T, 1>>({5});
  kpmap::psum(mesh, "i", x, s);
  expect_all(s, [&](const Index& i) { return sum(i[0]); }, "psum");
  auto mx = kpmap::pmax(mesh, "i", x);
  expect_all(mx, [&](const Index& i) { return fold(i[0], [](double a, double b) { return std::max(a, b); }, -1e300); },
             "pmax");
  auto mn = make<LView<T, 1>>({5});
  Kokkos::deep_copy(mn, x);
  kpmap::pmin(mesh, "i", mn, mn);  // in place
  expect_all(mn, [&](const Index& i) { return fold(i[0], [](double a, double b) { return std::min(a, b); }, 1e300); },
             "pmin in place");

  using R = kpmap::pmean_result_t<T>;
  static_assert(std::is_same_v<R, std::conditional_t<sizeof(T) <= 4, float, double>>);
  auto mean = kpmap::pmean(mesh, "i", x);
  static_assert(std::is_same_v<decltype(mean), RView<R, 1>>);
  expect_all(mean, [&](const Index& i) { return static_cast<double>(static_cast<R>(sum(i[0]) / n)); },
             "pmean");

  auto gathered = kpmap::all_gather(mesh, "i", x, 0, kpmap::untiled);  // [n, 5]
  expect_all(gathered, [&](const Index& o) { return int_value<T>(g.members[o[0]], o[1]); }, "all_gather");

  // A cycle written with negative destinations: j sends to (j + 1) mod n, counted from the end.
  kpmap::Permutation cycle;
  for (int j = 0; j < n; ++j) cycle.emplace_back(j, (j + 1) % n - n);
  auto shifted = kpmap::ppermute(mesh, "i", x, cycle);
  expect_all(shifted, [&](const Index& o) { return int_value<T>(g.members[(g.me + n - 1) % n], o[0]); },
             "ppermute");

  auto y = make<RView<T, 1>>({2 * n});
  fill(y, [&](const Index& i) { return int_value<T>(rank, i[0]); });
  auto block = kpmap::psum_scatter(mesh, "i", y, 0, kpmap::tiled);  // [2]
  expect_all(block, [&](const Index& o) { return sum(g.me * 2 + o[0]); }, "psum_scatter");

  if constexpr (sizeof(T) == 8 || std::is_same_v<T, unsigned char>) {
    auto b = kpmap::pbroadcast(mesh, "i", x, n - 1);
    expect_all(b, [&](const Index& o) { return int_value<T>(g.members[n - 1], o[0]); }, "pbroadcast");
    auto z = make<RView<T, 2>>({n, 2});
    fill(z, [&](const Index& i) { return int_value<T>(rank, i[0] * 2 + i[1]); });
    auto t = kpmap::all_to_all(mesh, "i", z, 0, 0, false);  // row j goes to index j
    expect_all(t, [&](const Index& o) { return int_value<T>(g.members[o[0]], g.me * 2 + o[1]); },
               "all_to_all");
  }
}

// 64-bit integers keep 64 bits (no truncation to int), and unsigned sums wrap modulo 2^bits as
// JAX's unsigned psum does. 3 calls.
TEST(IntegerSums, SixtyFourBitsAndUnsignedWrapAround) {
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const double big = 1099511627776.0;  // 2^40
  auto ll = make<RView<long long, 1>>({2});
  fill(ll, [&](const Index& i) { return big * (rank + 1) + static_cast<double>(i[0]); });
  kpmap::psum(mesh, "i", ll, ll);
  expect_all(ll, [&](const Index& i) { return big * n * (n + 1) / 2 + n * static_cast<double>(i[0]); },
             "psum of long long near 2^42");

  auto u8 = make<RView<unsigned char, 1>>({1});
  fill(u8, [](const Index&) { return 200.0; });
  kpmap::psum(mesh, "i", u8, u8);
  expect_all(u8, [&](const Index&) { return static_cast<double>((200 * n) % 256); }, "uint8 wraps");

  auto u64 = make<RView<unsigned long long, 1>>({1});
  fill(u64, [](const Index&) { return 9223372036854775808.0; });  // 2^63
  kpmap::psum(mesh, "i", u64, u64);
  expect_all(u64, [&](const Index&) { return n % 2 ? 9223372036854775808.0 : 0.0; }, "uint64 wraps");
}

// pmean of integers: float for 32-bit integers (JAX's default float32), double for 64-bit ones
// (JAX's float64 under x64). The exact mean is rounded once. 3 calls.
TEST(IntegerMean, FloatForInt32DoubleForInt64) {
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});

  // 2^24 + 1 on every rank: the mean is 2^24 + 1, which float rounds (to even) to 2^24.
  auto a = make<RView<std::int32_t, 2>>({2, 2});
  fill(a, [](const Index&) { return 16777217.0; });
  auto fa = make<LView<float, 2>>({2, 2});  // the caller's output, another layout
  kpmap::pmean(mesh, "i", a, fa);
  expect_all(fa, [](const Index&) { return 16777216.0; }, "pmean int32 -> float");

  // 2^40 + rank: the mean 2^40 + (n - 1) / 2 needs double.
  auto b = make<RView<std::int64_t, 1>>({3});
  fill(b, [&](const Index&) { return 1099511627776.0 + rank; });
  auto db = kpmap::pmean(mesh, "i", b);
  static_assert(std::is_same_v<decltype(db)::value_type, double>);
  expect_all(db, [&](const Index&) { return 1099511627776.0 + (n - 1) / 2.0; }, "pmean int64 -> double");

  auto wrong = make<RView<float, 2>>({2, 3});
  EXPECT_EQ(shape_error([&] { kpmap::pmean(mesh, "i", a, wrong); }),
            "pmean over 'i' (size " + std::to_string(n) +
                "): input shape [2, 2]: output View has shape [2, 3], expected [2, 2]");

  // rank + 1 in int16: the mean (n + 1) / 2 is a half-integer for even n.
  auto c = make<RView<short, 1>>({1});
  fill(c, [&](const Index&) { return rank + 1.0; });
  auto fc = kpmap::pmean(mesh, "i", c);
  static_assert(std::is_same_v<decltype(fc)::value_type, float>);
  expect_all(fc, [&](const Index&) { return (n + 1) / 2.0; }, "pmean int16 -> float");
}

// Rank-0 Views (JAX's most common psum: a scalar loss). 9 calls.
TEST(Scalars, ReductionsOnRankZeroViews) {
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  using Scalar = Kokkos::View<double, kpmap::device_type>;
  Scalar loss("loss");
  Kokkos::deep_copy(loss, rank + 1.0);
  const double total = n * (n + 1) / 2.0;

  auto s = kpmap::psum(mesh, "i", loss);
  static_assert(decltype(s)::rank == 0 && std::is_same_v<decltype(s)::value_type, double>);
  expect_all(s, [&](const Index&) { return total; }, "psum of a scalar");
  expect_all(kpmap::pmean(mesh, "i", loss), [&](const Index&) { return total / n; }, "pmean of a scalar");
  expect_all(kpmap::pmax(mesh, "i", loss), [&](const Index&) { return n; }, "pmax of a scalar");
  Scalar out("out");
  kpmap::pmin(mesh, "i", loss, out);
  expect_all(out, [&](const Index&) { return 1.0; }, "pmin of a scalar");
  kpmap::psum(mesh, "i", loss, loss);  // in place
  expect_all(loss, [&](const Index&) { return total; }, "psum of a scalar in place");

  Kokkos::View<int, kpmap::device_type> count("count");
  Kokkos::deep_copy(count, rank + 1);
  auto mean = kpmap::pmean(mesh, "i", count);
  static_assert(decltype(mean)::rank == 0 && std::is_same_v<decltype(mean)::value_type, float>);
  expect_all(mean, [&](const Index&) { return (n + 1) / 2.0; }, "pmean of an int scalar");

  Kokkos::View<kpmap::bf16, kpmap::device_type> half("half");
  Kokkos::deep_copy(half, kpmap::bf16(rank + 1.0f));
  kpmap::psum(mesh, "i", half, half);
  expect_all(half, [&](const Index&) { return total; }, "psum of a bf16 scalar");

  Scalar a("a"), b("b");
  Kokkos::deep_copy(a, 2.0 * rank);
  kpmap::Request r = kpmap::ipsum(mesh, "i", a, b);
  r.wait();
  expect_all(b, [&](const Index&) { return 2.0 * (total - n); }, "ipsum of a scalar");
}

}  // namespace
