// A real message of more than 2^31 elements (label perf, not in the default run): psum in place
// of 2^31 + 7 int8 elements (2 GiB per rank, about twice that with MPI's temporary buffer). MPI's
// counts are int; kpmap splits the message into calls of at most INT_MAX elements. Element i
// holds i % 7 + rank, so every sum is exact and small: (i % 7) * n + n (n - 1) / 2.
#include <cstdint>

#include "test_collectives_common.hpp"

namespace {

using Policy = Kokkos::RangePolicy<kpmap::execution_space, Kokkos::IndexType<std::int64_t>>;

// The kernels are free functions: CUDA's extended lambdas may not sit in TestBody, which gtest
// declares private.
void fill(const kpmap::View1<std::int8_t>& x, int rank) {
  Kokkos::parallel_for(
      "test::fill", Policy(0, static_cast<std::int64_t>(x.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i) { x(i) = static_cast<std::int8_t>(i % 7 + rank); });
}

// The elements that differ from (i % 7) * n + offset.
std::int64_t count_wrong(const kpmap::View1<std::int8_t>& x, int n, int offset) {
  std::int64_t wrong = 0;
  Kokkos::parallel_reduce(
      "test::check", Policy(0, static_cast<std::int64_t>(x.extent(0))),
      KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& bad) {
        if (x(i) != static_cast<std::int8_t>((i % 7) * n + offset)) ++bad;
      },
      wrong);
  return wrong;
}

TEST(Large, PsumOfMoreThanTwoToThe31Int8) {
  using kct::world_rank;
  using kct::world_size;
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const std::int64_t count = (std::int64_t{1} << 31) + 7;
  ASSERT_GT(count, kpmap::detail::chunk_limit());
  kpmap::View1<std::int8_t> x(Kokkos::view_alloc(Kokkos::WithoutInitializing, "x"), count);
  fill(x, rank);
  kpmap::psum(mesh, "i", x, x);
  const int offset = n * (n - 1) / 2;
  EXPECT_EQ(count_wrong(x, n, offset), 0);
  // The elements at both ends and around INT_MAX, one by one.
  for (std::int64_t i : {std::int64_t{0}, std::int64_t{2147483646}, std::int64_t{2147483647},
                         std::int64_t{2147483648}, count - 1}) {
    std::int8_t got = 0;
    Kokkos::deep_copy(got, Kokkos::subview(x, i));
    EXPECT_EQ(got, (i % 7) * n + offset) << "element " << i;
  }
}

}  // namespace
