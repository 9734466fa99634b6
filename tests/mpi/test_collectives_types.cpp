// Every data-moving collective on every element type (fp64, fp32, int32, int64, bf16, fp16),
// over a single axis and a tuple of axes of each two-axis mesh: all_gather, psum_scatter and
// all_to_all (tiled and untiled), ppermute (out of place, in place, zero fill) and pbroadcast
// (out of place, in place); ppermute's and pbroadcast's argument rules; axis_index/axis_size.
// Shapes stay under 16 elements so bf16 holds every value and sum exactly.
#include "test_collectives_common.hpp"

namespace {

using namespace kct;

template <class T>
class Types : public ::testing::Test {};

using ElementTypes =
    ::testing::Types<double, float, std::int32_t, std::int64_t, kpmap::bf16, kpmap::fp16>;
TYPED_TEST_SUITE(Types, ElementTypes);

const std::vector<std::vector<std::string>> axis_choices{{"data"}, {"model", "data"}};

// 6 calls per axis choice.
TYPED_TEST(Types, GatherScatterAllToAll) {
  using T = TypeParam;
  const int rank = world_rank();
  for (const auto& spec : two_axis_meshes()) {
    kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    for (const auto& names : axis_choices) {
      const kpmap::AxisNames axes(names);
      const Group g = group_of(spec, names, rank);
      const std::int64_t n = g.size();
      const std::string where = describe(spec) + axes.str();

      const Shape s{2, 2};
      auto x = make<RView<T, 2>>(s);
      fill_rank(x, rank);
      auto tiled = kpmap::all_gather(mesh, axes, x, 1, kpmap::tiled);  // [2, 2n]
      expect_all(tiled, [&](const Index& o) { return value<T>(g.members[o[1] / 2], o[0] * 2 + o[1] % 2); },
                 where + " all_gather tiled");
      auto stacked = kpmap::all_gather(mesh, axes, x, 0, kpmap::untiled);  // [n, 2, 2]
      expect_all(stacked, [&](const Index& o) { return value<T>(g.members[o[0]], o[1] * 2 + o[2]); },
                 where + " all_gather untiled");

      const Shape ps{n, 3};
      auto y = make<RView<T, 2>>(ps);
      fill_rank(y, rank);
      const auto summed = [&](std::int64_t lin) {
        double sum = 0;
        for (int q : g.members) sum += value<T>(q, lin);
        return sum;
      };
      auto row = kpmap::psum_scatter(mesh, axes, y, 0, kpmap::untiled);  // [3]
      expect_all(row, [&](const Index& o) { return summed(g.me * 3 + o[0]); }, where + " psum_scatter untiled");
      auto block = make<RView<T, 2>>({1, 3});
      kpmap::psum_scatter(mesh, axes, y, block, 0, true);
      expect_all(block, [&](const Index& o) { return summed(g.me * 3 + o[1]); }, where + " psum_scatter tiled");

      // all_to_all untiled on [n, 3] (split 0, concat 1 -> [3, n]); tiled on [2n, 1] (split 0,
      // concat 1 -> [2, n]).
      auto t = kpmap::all_to_all(mesh, axes, y, 0, 1, false);
      expect_all(t, [&](const Index& o) { return value<T>(g.members[o[1]], g.me * 3 + o[0]); },
                 where + " all_to_all untiled");
      auto z = make<RView<T, 2>>({2 * n, 1});
      fill_rank(z, rank);
      auto u = kpmap::all_to_all(mesh, axes, z, 0, 1, true);
      expect_all(u, [&](const Index& o) { return value<T>(g.members[o[1]], g.me * 2 + o[0]); },
                 where + " all_to_all tiled");
    }
  }
}

// 5 calls per axis choice.
TYPED_TEST(Types, PpermuteAndPbroadcast) {
  using T = TypeParam;
  const int rank = world_rank();
  for (const auto& spec : two_axis_meshes()) {
    kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    for (const auto& names : axis_choices) {
      const kpmap::AxisNames axes(names);
      const Group g = group_of(spec, names, rank);
      const int n = g.size();
      const std::string where = describe(spec) + axes.str();
      const auto lin = [](const Index& o) { return o[0] * 3 + o[1]; };

      // A cyclic shift: index j sends to j + 1 (mod n).
      kpmap::Permutation cycle;
      for (int j = 0; j < n; ++j) cycle.emplace_back(j, (j + 1) % n);
      const int from = g.members[(g.me + n - 1) % n];
      auto x = make<RView<T, 2>>({2, 3});
      fill_rank(x, rank);
      auto shifted = kpmap::ppermute(mesh, axes, x, cycle);
      expect_all(shifted, [&](const Index& o) { return value<T>(from, lin(o)); }, where + " ppermute cycle");
      kpmap::ppermute(mesh, axes, x, x, cycle);  // in place
      expect_all(x, [&](const Index& o) { return value<T>(from, lin(o)); }, where + " ppermute in place");

      // A shift without wrap-around: index 0 receives nothing and gets zeros.
      kpmap::Permutation shift;
      for (int j = 0; j + 1 < n; ++j) shift.emplace_back(j, j + 1);
      fill_rank(x, rank);
      auto out = make<RView<T, 2>>({2, 3});
      fill(out, [](const Index&) { return 7.0; });
      kpmap::ppermute(mesh, axes, x, out, shift);
      expect_all(out,
                 [&](const Index& o) { return g.me == 0 ? 0.0 : value<T>(g.members[g.me - 1], lin(o)); },
                 where + " ppermute zero fill");

      const int source = n - 1;
      auto b = kpmap::pbroadcast(mesh, axes, x, source);
      expect_all(b, [&](const Index& o) { return value<T>(g.members[source], lin(o)); },
                 where + " pbroadcast");
      auto left = make<LView<T, 2>>({2, 3});
      fill_rank(left, rank);
      kpmap::pbroadcast(mesh, axes, left, left, 0);  // in place, LayoutLeft
      expect_all(left, [&](const Index& o) { return value<T>(g.members[0], lin(o)); },
                 where + " pbroadcast in place");
    }
  }
}

TEST(Permute, ArgumentRules) {
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const int n = world_size();
  const std::string head = "ppermute over 'i' (size " + std::to_string(n) + "): input shape [3]";
  auto x = make<RView<double, 1>>({3});
  EXPECT_EQ(shape_error([&] { kpmap::ppermute(mesh, "i", x, {{0, n}}); }),
            head + ", perm pair (0, " + std::to_string(n) + "): index " + std::to_string(n) +
                " is not an axis index (-" + std::to_string(n) + " <= index < " +
                std::to_string(n) + ")");
  EXPECT_EQ(shape_error([&] { kpmap::ppermute(mesh, "i", x, {{0, 0}, {0, 0}}); }),
            head + ", perm pair (0, 0): source 0 appears twice (perm must be a partial permutation)");
  if (n >= 2) {
    EXPECT_EQ(shape_error([&] { kpmap::ppermute(mesh, "i", x, {{0, 1}, {1, 1}}); }),
              head + ", perm pair (1, 1): destination 1 appears twice (perm must be a partial "
                     "permutation)");
  }
  EXPECT_NE(shape_error([&] { kpmap::pbroadcast(mesh, "i", x, -1); }).find("source -1: not an axis index"),
            std::string::npos);
  EXPECT_EQ(shape_error([&] { kpmap::pbroadcast(mesh, "i", x, n); }),
            "pbroadcast over 'i' (size " + std::to_string(n) + "): input shape [3], source " +
                std::to_string(n) + ": not an axis index (0 <= source < " + std::to_string(n) + ")");
  auto wrong = make<RView<double, 1>>({4});
  EXPECT_NE(shape_error([&] { kpmap::ppermute(mesh, "i", x, wrong, {}); }).find("output View has shape [4]"),
            std::string::npos);
  EXPECT_THROW(kpmap::ppermute(mesh, "k", x, {}), kpmap::InputError);
}

TEST(Permute, AxisIndexAndSizeForwardToTheMesh) {
  for (const auto& spec : two_axis_meshes()) {
    kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    for (const auto& names : std::vector<std::vector<std::string>>{{"data"}, {"model"}, {"model", "data"}}) {
      const Group g = group_of(spec, names, world_rank());
      EXPECT_EQ(kpmap::axis_index(mesh, kpmap::AxisNames(names)), g.me);
      EXPECT_EQ(kpmap::axis_size(mesh, kpmap::AxisNames(names)), g.size());
    }
  }
}

}  // namespace
