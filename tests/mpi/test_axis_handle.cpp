// kpmap::Axis, the resolved handle of an axis or tuple: the same communicator, index and size as
// the names give (checked against the group computed independently from the mesh's layout), the
// same results from every collective, and no heap allocation when resolving names or calling
// psum on a contiguous host View (global operator new counted).
#include <algorithm>
#include <string>
#include <vector>

#include "support/count_new.hpp"
#include "test_collectives_common.hpp"

namespace {

using namespace kct;

// Every ordered tuple the two-axis meshes have, () included.
const std::vector<std::vector<std::string>> tuples = {
    {}, {"data"}, {"model"}, {"data", "model"}, {"model", "data"}};

TEST(AxisHandle, MatchesTheNamesAndTheLayout) {
  for (const auto& spec : two_axis_meshes()) {
    const kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    for (const auto& names : tuples) {
      const kpmap::AxisNames axes(names);
      const Group g = group_of(spec, names, world_rank());
      const kpmap::Axis ax = mesh.axis(axes);
      const std::string what = describe(spec) + axes.str();
      EXPECT_EQ(ax.comm(), mesh.comm(axes)) << what;
      EXPECT_EQ(ax.size(), g.size()) << what;
      EXPECT_EQ(ax.index(), g.me) << what;
      EXPECT_EQ(ax.str(), axes.str()) << what;
      EXPECT_EQ(kpmap::axis_index(ax), kpmap::axis_index(mesh, axes)) << what;
      EXPECT_EQ(kpmap::axis_size(ax), kpmap::axis_size(mesh, axes)) << what;
      int size = 0, rank = -1;
      MPI_Comm_size(ax.comm(), &size);
      MPI_Comm_rank(ax.comm(), &rank);
      EXPECT_EQ(size, g.size()) << what;
      EXPECT_EQ(rank, g.me) << what;
      // The communicator holds exactly the group's world ranks, in axis-index order.
      std::vector<int> members(size, -1);
      const int me = world_rank();
      MPI_Allgather(&me, 1, MPI_INT, members.data(), 1, MPI_INT, ax.comm());
      EXPECT_EQ(members, g.members) << what;
    }
  }
}

// Each collective through the handle and through the names, against values computed here from
// the group's members: 7 calls per form and tuple.
TEST(AxisHandle, CollectivesGiveTheNamesResults) {
  const int rank = world_rank();
  for (const auto& spec : two_axis_meshes()) {
    const kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    for (const auto& names : tuples) {
      const kpmap::AxisNames axes(names);
      const kpmap::Axis ax = mesh.axis(axes);
      const Group g = group_of(spec, names, rank);
      const int n = g.size();
      const std::string what = describe(spec) + axes.str();
      for (const bool handle : {true, false}) {
        const std::string form = what + (handle ? " (handle)" : " (names)");
        // psum of a scalar (rank-0 View): the sum of rank + 1 over the group.
        Kokkos::View<double, kpmap::device_type> s("s");
        Kokkos::deep_copy(s, static_cast<double>(rank + 1));
        if (handle) {
          kpmap::psum(ax, s, s);
        } else {
          kpmap::psum(mesh, axes, s, s);
        }
        double sum = 0;
        for (int m : g.members) sum += m + 1;
        expect_all(s, [&](const Index&) { return sum; }, "psum " + form);

        auto x = make<RView<double, 1>>({2 * n});
        fill_rank(x, rank);
        // pmax: the largest member's values (value() grows with the rank).
        const int top = *std::max_element(g.members.begin(), g.members.end());
        expect_all(handle ? kpmap::pmax(ax, x) : kpmap::pmax(mesh, axes, x),
                   [&](const Index& i) { return value<double>(top, i[0]); }, "pmax " + form);
        // all_gather (untiled): row i is member i's View.
        auto gathered = handle ? kpmap::all_gather(ax, x, 0, kpmap::untiled)
                               : kpmap::all_gather(mesh, axes, x, 0, kpmap::untiled);
        expect_all(gathered, [&](const Index& i) { return value<double>(g.members[i[0]], i[1]); },
                   "all_gather " + form);
        // psum_scatter (tiled): block `me` of the sum.
        auto scattered = handle ? kpmap::psum_scatter(ax, x, 0, kpmap::tiled)
                                : kpmap::psum_scatter(mesh, axes, x, 0, kpmap::tiled);
        expect_all(scattered,
                   [&](const Index& i) {
                     double t = 0;
                     for (int m : g.members) t += value<double>(m, g.me * 2 + i[0]);
                     return t;
                   },
                   "psum_scatter " + form);
        // ppermute, a cyclic shift: member me - 1's View.
        kpmap::Permutation shift;
        for (int b = 0; b < n; ++b) shift.push_back({b, (b + 1) % n});
        const int from = g.members[(g.me + n - 1) % n];
        expect_all(handle ? kpmap::ppermute(ax, x, shift) : kpmap::ppermute(mesh, axes, x, shift),
                   [&](const Index& i) { return value<double>(from, i[0]); }, "ppermute " + form);
        // pbroadcast from axis index 0.
        expect_all(handle ? kpmap::pbroadcast(ax, x, 0) : kpmap::pbroadcast(mesh, axes, x, 0),
                   [&](const Index& i) { return value<double>(g.members[0], i[0]); }, "pbroadcast " + form);
        // ipsum in place.
        kpmap::Request r = handle ? kpmap::ipsum(ax, x, x) : kpmap::ipsum(mesh, axes, x, x);
        r.wait();
        expect_all(x,
                   [&](const Index& i) {
                     double t = 0;
                     for (int m : g.members) t += value<double>(m, i[0]);
                     return t;
                   },
                   "ipsum " + form);
      }
    }
  }
}

// Resolving prebuilt names and psum on contiguous host Views (rank 0 and 1) allocate nothing.
TEST(AxisHandle, ResolvingAndPsumAllocateNothing) {
  const auto spec = two_axis_meshes().front();
  const kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
  const kpmap::AxisNames data("data"), both({"data", "model"});
  Kokkos::View<float*, Kokkos::HostSpace> v("v", 16);
  Kokkos::View<double, Kokkos::HostSpace> s("s");
  const kpmap::Axis ax = mesh.axis(data);
  kpmap::psum(ax, v, v);  // the first call may set up MPI's or Kokkos' own state
  kpmap::psum(mesh, data, s, s);
  const long before = kpmap::test::heap_allocations.load();
  const kpmap::Axis resolved = mesh.axis(both);
  kpmap::psum(ax, v, v);
  kpmap::psum(ax, s, s);
  kpmap::psum(mesh, data, v, v);
  kpmap::psum(mesh, both, s, s);
  EXPECT_EQ(kpmap::test::heap_allocations.load() - before, 0);
  EXPECT_EQ(resolved.size(), world_size());
}

}  // namespace
