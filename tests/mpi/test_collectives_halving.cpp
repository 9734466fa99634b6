// Reductions through kpmap's user-defined MPI ops (16-bit sums, NaN-propagating max/min) over
// more than 2 KiB take a reduce-scatter by recursive halving and an all-gather by recursive
// doubling (detail::allreduce_by_halving, docs/collectives.md). The sums must be bitwise what
// MPI_Allreduce gives with the same op, whose reduction tree (MPICH's recursive doubling) the
// test computes serially from every rank's data, and the MPI calls show which algorithm ran
// (counted through MPI's profiling interface). The data are not integers: 16-bit sums round,
// so a different tree gives different bits (checked at 3 and 4 ranks, where trees can differ).
#include <cmath>
#include <cstring>
#include <map>
#include <string>

#include "test_collectives_common.hpp"

namespace {

std::map<std::string, int> calls;

}  // namespace

extern "C" {
int MPI_Allreduce(const void* s, void* r, int c, MPI_Datatype t, MPI_Op o, MPI_Comm comm) {
  ++calls["Allreduce"];
  return PMPI_Allreduce(s, r, c, t, o, comm);
}
int MPI_Sendrecv(const void* sb, int sc, MPI_Datatype st, int dest, int stag, void* rb, int rc,
                 MPI_Datatype rt, int src, int rtag, MPI_Comm comm, MPI_Status* status) {
  ++calls["Sendrecv"];
  return PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, src, rtag, comm, status);
}
int MPI_Send(const void* b, int c, MPI_Datatype t, int dest, int tag, MPI_Comm comm) {
  ++calls["Send"];
  return PMPI_Send(b, c, t, dest, tag, comm);
}
int MPI_Recv(void* b, int c, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status* status) {
  ++calls["Recv"];
  return PMPI_Recv(b, c, t, src, tag, comm, status);
}
}

namespace {

using namespace kct;

// Rank r's element i: not an integer, so 16-bit sums round.
template <class T>
T datum(int rank, std::int64_t i) {
  const float x = std::sin(0.37f * static_cast<float>(i) + 1.1f * static_cast<float>(rank)) *
                  static_cast<float>(1 + i % 7);
  return T(x);
}

template <class H>
H add(H a, H b) {
  return H(static_cast<float>(a) + static_cast<float>(b));
}

// MPICH's recursive doubling over a[0 .. p-1] (allreduce_intra_recursive_doubling.c): of the
// first 2 (p - p') ranks each odd one adds its even neighbour's value, then the p' survivors pair
// at distances 1, 2, 4, ...
template <class H, class Op>
H mpich_tree(const std::vector<H>& a, Op op) {
  const int p = static_cast<int>(a.size());
  int pof2 = 1;
  while (pof2 * 2 <= p) pof2 *= 2;
  const int rem = p - pof2;
  std::vector<H> level;
  for (int r = 1; r < 2 * rem; r += 2) level.push_back(op(a[r - 1], a[r]));
  for (int r = 2 * rem; r < p; ++r) level.push_back(a[r]);
  for (int mask = 1; mask < pof2; mask *= 2) {
    for (int i = 0; i < pof2; ++i) {
      if ((i & mask) == 0) level[i] = level[i | mask] = op(level[i], level[i | mask]);
    }
  }
  return level[0];
}

// Another order, a[0] + (a[1] + (a[2] + ...)): what the test must be able to tell apart.
template <class H>
H right_fold(const std::vector<H>& a) {
  H s = a.back();
  for (int r = static_cast<int>(a.size()) - 2; r >= 0; --r) s = add(a[r], s);
  return s;
}

template <class T>
std::uint64_t bits(T x) {
  if constexpr (sizeof(T) == 2) {
    return x.bits();
  } else {
    std::uint32_t u = 0;
    std::memcpy(&u, &x, sizeof u);
    return u;
  }
}

template <class V>
std::vector<typename V::non_const_value_type> host_copy(const V& v) {
  auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return {h.data(), h.data() + h.extent(0)};
}

template <class T>
RView<T, 1> rank_data(int rank, std::int64_t n) {
  auto v = make<RView<T, 1>>({n});
  auto h = Kokkos::create_mirror_view(v);
  for (std::int64_t i = 0; i < n; ++i) h(i) = datum<T>(rank, i);
  Kokkos::deep_copy(v, h);
  return v;
}

// The MPI calls one rank of a group of p makes for one message over 2 KiB.
void expect_halving_calls(int p, int me, const std::string& what) {
  int pof2 = 1, levels = 0;
  while (pof2 * 2 <= p) pof2 *= 2, ++levels;
  const int rem = p - pof2;
  const bool folded = me < 2 * rem;
  const bool survives = !folded || me % 2 == 1;
  EXPECT_EQ(calls["Allreduce"], 0) << what;
  EXPECT_EQ(calls["Sendrecv"], survives ? 2 * levels : 0) << what;
  EXPECT_EQ(calls["Send"] + calls["Recv"], folded ? 2 : 0) << what;
  calls.clear();
}

template <class H>
class Halving : public ::testing::Test {};
using HalfTypes = ::testing::Types<kpmap::bf16, kpmap::fp16>;
TYPED_TEST_SUITE(Halving, HalfTypes);

// psum over every rank of 1024 elements (2 KiB: MPI_Allreduce), 1025 and 4099 (the halving,
// with odd halves), out of place and in place: bitwise the serial tree, PMPI_Allreduce and ipsum
// (MPI_Iallreduce, which the trainer's overlapped buckets take).
TYPED_TEST(Halving, SumIsMpiAllreduceBitwise) {
  using H = TypeParam;
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  for (const std::int64_t count : {1024, 1025, 4099}) {
    const std::string what = "psum of " + std::to_string(count) + " elements";
    auto x = rank_data<H>(rank, count);
    auto mpi = host_copy(rank_data<H>(rank, count));  // MPI reads host memory (no GPU-aware MPI here)
    PMPI_Allreduce(MPI_IN_PLACE, mpi.data(), static_cast<int>(count), kpmap::mpi_datatype<H>(),
                   kpmap::mpi_op<H>(kpmap::ReduceOp::sum), MPI_COMM_WORLD);
    calls.clear();
    auto out = make<RView<H, 1>>({count});
    kpmap::psum(mesh, "i", x, out);
    if (n > 1 && count * 2 > 2048) {
      expect_halving_calls(n, rank, what);
    } else if (n > 1) {
      EXPECT_EQ(calls["Allreduce"], 1) << what;
      EXPECT_EQ(calls["Sendrecv"], 0) << what;
    }
    auto nonblocking = make<RView<H, 1>>({count});  // MPI_Iallreduce: MPICH's own tree
    kpmap::ipsum(mesh, "i", x, nonblocking).wait();
    kpmap::psum(mesh, "i", x, x);  // in place
    const auto got = host_copy(out), in_place = host_copy(x);
    const auto started = host_copy(nonblocking);
    int wrong = 0, orders_differ = 0;
    for (std::int64_t i = 0; i < count; ++i) {
      std::vector<H> a;
      for (int r = 0; r < n; ++r) a.push_back(datum<H>(r, i));
      const H want = mpich_tree(a, add<H>);
      if ((bits(got[i]) != bits(want) || bits(in_place[i]) != bits(want) || bits(mpi[i]) != bits(want) ||
           bits(started[i]) != bits(want)) &&
          ++wrong <= 3) {
        ADD_FAILURE() << what << ", element " << i << ": out of place " << static_cast<float>(got[i])
                      << ", in place " << static_cast<float>(in_place[i]) << ", PMPI_Allreduce "
                      << static_cast<float>(mpi[i]) << ", ipsum " << static_cast<float>(started[i])
                      << ", serial tree " << static_cast<float>(want);
      }
      orders_differ += bits(right_fold(a)) != bits(want);
    }
    EXPECT_EQ(wrong, 0) << what;
    if (n >= 3) {
      EXPECT_GT(orders_differ, 0) << what << ": the data cannot tell the trees apart";
    }
  }
}

// Chunks of 1500 elements (the test hook for messages over 2^31): 1500, 1500 and 1 element, the
// first two by halving, the last by MPI_Allreduce; the result is still the tree's.
TYPED_TEST(Halving, EachChunkTakesItsOwnPath) {
  using H = TypeParam;
  const int rank = world_rank(), n = world_size();
  if (n == 1) GTEST_SKIP() << "one rank: nothing to reduce";
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  auto x = rank_data<H>(rank, 3001);
  kpmap::detail::set_chunk_limit(1500);
  calls.clear();
  kpmap::psum(mesh, "i", x, x);
  kpmap::detail::set_chunk_limit(0);
  EXPECT_EQ(calls["Allreduce"], 1);
  calls["Allreduce"] = 0;
  calls["Sendrecv"] /= 2;
  calls["Send"] /= 2;
  calls["Recv"] /= 2;
  expect_halving_calls(n, rank, "each 1500-element chunk");
  const auto got = host_copy(x);
  int wrong = 0;
  for (std::int64_t i = 0; i < 3001; ++i) {
    std::vector<H> a;
    for (int r = 0; r < n; ++r) a.push_back(datum<H>(r, i));
    wrong += bits(got[i]) != bits(mpich_tree(a, add<H>));
  }
  EXPECT_EQ(wrong, 0);
}

// Over the data axis of a 2x2 mesh (two groups reduce at once, each rank's place in its group is
// its axis index) and, at other rank counts, over every rank.
TEST(HalvingGroups, SumOverOneAxisOfTwo) {
  const int rank = world_rank(), n = world_size();
  const std::vector<kpmap::MeshAxis> axes =
      n == 4 ? std::vector<kpmap::MeshAxis>{{"data", 2}, {"model", 2}}
             : std::vector<kpmap::MeshAxis>{{"data", n}, {"model", 1}};
  kpmap::Mesh mesh(MPI_COMM_WORLD, axes);
  const Group g = group_of(axes, {"data"}, rank);
  auto x = rank_data<kpmap::bf16>(rank, 2500);
  kpmap::psum(mesh, "data", x, x);
  const auto got = host_copy(x);
  int wrong = 0;
  for (std::int64_t i = 0; i < 2500; ++i) {
    std::vector<kpmap::bf16> a;
    for (int q : g.members) a.push_back(datum<kpmap::bf16>(q, i));
    wrong += bits(got[i]) != bits(mpich_tree(a, add<kpmap::bf16>));
  }
  EXPECT_EQ(wrong, 0) << describe(axes);
}

// pmax and pmin of 7 x 150 floats (LayoutLeft: packed first) through kpmap's max/min ops: the
// exact extremes, and NaN where the last rank holds one.
TEST(HalvingExtrema, NaNWinsAndExtremesAreExact) {
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const auto value = [](int r, const Index& i) {
    return i[0] == 3 && i[1] == 77 && r == world_size() - 1 ? std::nan("")
                                                             : static_cast<double>(datum<float>(r, i[0] * 150 + i[1]));
  };
  auto hi = make<LView<float, 2>>({7, 150});
  fill(hi, [&](const Index& i) { return value(rank, i); });
  auto lo = make<LView<float, 2>>({7, 150});
  Kokkos::deep_copy(lo, hi);
  calls.clear();
  kpmap::pmax(mesh, "i", hi, hi);
  if (n > 1) {
    expect_halving_calls(n, rank, "pmax of 1050 floats");
  }
  kpmap::pmin(mesh, "i", lo, lo);
  const auto extreme = [&](const Index& i, bool max) {
    double e = value(0, i);
    for (int r = 1; r < n; ++r) {
      const double v = value(r, i);
      if (std::isnan(v) || std::isnan(e)) {
        e = std::nan("");
      } else {
        e = max ? std::max(e, v) : std::min(e, v);
      }
    }
    return e;
  };
  auto check = [&](const LView<float, 2>& v, bool max, const char* what) {
    auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
    int wrong = 0;
    for (std::int64_t a = 0; a < 7; ++a) {
      for (std::int64_t b = 0; b < 150; ++b) {
        const double want = extreme({a, b, 0, 0}, max), got = h(a, b);
        wrong += std::isnan(want) ? !std::isnan(got) : got != want;
      }
    }
    EXPECT_EQ(wrong, 0) << what;
  };
  check(hi, true, "pmax");
  check(lo, false, "pmin");
}

}  // namespace
