// No allocation in steady state: after their first call, repeated collectives allocate no Kokkos
// memory (Kokkos Tools' allocation callback), with Views that need packing, block swaps and 16-bit
// reductions, and the blocking ones no heap memory either (a counting operator new; on Kokkos 4
// only those that launch no kernel, since a Kokkos 4 kernel launch allocates). The training run's
// steady state: test_train_steady_state.cpp.
#include <string>
#include <vector>

#include "support/count_kokkos_allocations.hpp"
#include "support/count_new.hpp"
#include "test_collectives_common.hpp"

namespace {

using namespace kct;
using kpmap::test::CountKokkosAllocations;
using kpmap::test::kokkos_allocations;

// One round of blocking collectives over `data`, on row-major and column-major Views (packed),
// gathers and scatters along axis 1 (block swaps), bf16 (a user-defined MPI op), integers
// (pmean's division into floats) and the reproducible psum.
struct Round {
  kpmap::Mesh mesh{MPI_COMM_WORLD, two_axis_meshes().front()};
  kpmap::Axis ax = mesh.axis("data");
  kpmap::AxisNames names{"data"};
  int n = ax.size();
  RView<double, 1> v = make<RView<double, 1>>({4 * n});
  RView<double, 1> w = make<RView<double, 1>>({4 * n});
  LView<double, 2> x = make<LView<double, 2>>({3, 2 * n});
  LView<double, 2> y = make<LView<double, 2>>({3, 2 * n});
  LView<double, 3> gathered = make<LView<double, 3>>({3, n, 2 * n});
  LView<double, 2> scattered = make<LView<double, 2>>({3, 2});
  LView<double, 2> moved = make<LView<double, 2>>({3 * n, 2});
  RView<kpmap::bf16, 1> h = make<RView<kpmap::bf16, 1>>({2 * n});
  RView<kpmap::bf16, 1> hs = make<RView<kpmap::bf16, 1>>({2});
  LView<int, 2> k = make<LView<int, 2>>({3, 2 * n});
  LView<float, 2> km = make<LView<float, 2>>({3, 2 * n});
  kpmap::Permutation shift;

  Round() {
    for (int b = 0; b < n; ++b) shift.push_back({b, (-b - 1) % n});  // negative destinations too
    fill_rank(v, world_rank());
    fill_rank(x, world_rank());
    fill_rank(h, world_rank());
    fill_rank(k, world_rank());
  }

  void blocking() {
    kpmap::psum(ax, v, v);
    kpmap::pmean(mesh, names, x, y);
    kpmap::pmax(ax, x, y);
    kpmap::pmin(ax, x, x);
    kpmap::psum(ax, x, y, kpmap::reproducible);
    kpmap::pmean(ax, k, km);
    kpmap::all_gather(ax, x, gathered, 1);
    kpmap::psum_scatter(mesh, names, x, scattered, 1, true);
    kpmap::psum_scatter(ax, h, hs, 0, true);
    kpmap::psum(ax, h, h);
    kpmap::all_to_all(ax, x, moved, 1, 0, true);
    kpmap::ppermute(ax, x, y, shift);
    kpmap::pbroadcast(ax, x, y, 0);
  }

  // Collectives that launch no kernel: contiguous row-major host Views, gathers and scatters
  // along axis 0, in-place broadcasts. (A kernel launch itself allocates on Kokkos 4: its
  // RangePolicy constructs an instance handle.)
  void without_kernels() {
    kpmap::psum(ax, v, v);
    kpmap::pmax(mesh, names, v, v);
    kpmap::psum(ax, h, h);
    kpmap::psum_scatter(ax, h, hs, 0, true);
    kpmap::all_gather(ax, hs, h, 0, true);
    kpmap::ppermute(ax, v, w, shift);
    kpmap::pbroadcast(ax, v, v, 0);
  }

  void nonblocking() {
    std::vector<kpmap::Request> requests;
    requests.push_back(kpmap::ipsum(ax, x, y));
    requests.push_back(kpmap::iall_gather(ax, x, gathered, 1));
    requests.push_back(kpmap::ipsum_scatter(ax, h, hs, 0, true));
    kpmap::wait_all(requests);
  }
};

TEST(SteadyState, RepeatedCollectivesAllocateNothing) {
  Round r;
  r.blocking();  // the first calls fill the pools (and set up MPI's own state)
  r.nonblocking();
  r.without_kernels();
  const long heap_before = kpmap::test::heap_allocations.load();
  for (int i = 0; i < 3; ++i) r.without_kernels();
  EXPECT_EQ(kpmap::test::heap_allocations.load() - heap_before, 0) << "heap allocations in 3 rounds of collectives";
#if KOKKOS_VERSION < 40000
  // Kokkos 3 launches kernels without allocating: then no collective allocates heap memory.
  const long heap_kernels = kpmap::test::heap_allocations.load();
  for (int i = 0; i < 3; ++i) r.blocking();
  EXPECT_EQ(kpmap::test::heap_allocations.load() - heap_kernels, 0)
      << "heap allocations in 3 rounds of blocking collectives";
#endif
  CountKokkosAllocations counting;
  for (int i = 0; i < 3; ++i) {
    r.blocking();
    r.nonblocking();
  }
  EXPECT_EQ(kokkos_allocations, 0) << "Kokkos allocations in 3 rounds of collectives: "
                                   << kpmap::test::allocation_labels(0, kokkos_allocations);
}

// The same results as the first round's: reusing pooled buffers leaves no stale data behind.
TEST(SteadyState, PooledBuffersGiveTheSameResults) {
  Round r;
  const int rank = world_rank();
  const kct::Group g = group_of(two_axis_meshes().front(), {"data"}, rank);
  for (int round = 0; round < 2; ++round) {
    fill_rank(r.x, rank);
    kpmap::all_gather(r.ax, r.x, r.gathered, 1);
    expect_all(
        r.gathered, [&](const Index& i) { return value<double>(g.members[i[1]], i[0] * 2 * r.n + i[2]); },
        "all_gather, round " + std::to_string(round));
    kpmap::pmean(r.ax, r.k, r.km);
    expect_all(
        r.km,
        [&](const Index& i) {
          double t = 0;
          for (int m : g.members) t += value<int>(m, i[0] * 2 * r.n + i[1]);
          return static_cast<float>(t / r.n);
        },
        "integer pmean, round " + std::to_string(round));
  }
}

}  // namespace
