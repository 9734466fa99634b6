// JAX's shape rules for all_gather, psum_scatter and all_to_all: the output shapes (tiled and
// untiled, several axis positions, rank 1-3 inputs), the ShapeError of every violated rule, the
// data each output element must hold (computed from the source rank and index independently of
// kpmap), tuples of axes, LayoutLeft and strided Views, and JAX's identities.
#include "test_collectives_common.hpp"

namespace {

using namespace kct;

// ---------------------------------------------------------------------------------------------
// Shapes: pure functions, no communication.

TEST(ShapeRules, AllGather) {
  const kpmap::AxisNames i("i");
  EXPECT_EQ(kpmap::all_gather_shape({3}, i, 4, 0, false), (Shape{4, 3}));
  EXPECT_EQ(kpmap::all_gather_shape({3}, i, 4, 1, false), (Shape{3, 4}));
  EXPECT_EQ(kpmap::all_gather_shape({3}, i, 4, 0, true), (Shape{12}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3, 5}, i, 4, 0, false), (Shape{4, 2, 3, 5}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3, 5}, i, 4, 2, false), (Shape{2, 3, 4, 5}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3, 5}, i, 4, 3, false), (Shape{2, 3, 5, 4}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3, 5}, i, 4, 1, true), (Shape{2, 12, 5}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3, 5}, i, 4, 2, true), (Shape{2, 3, 20}));
  // A negative axis counts from the end of the output (JAX's canonicalize_axis over ndim + 1
  // untiled, ndim tiled).
  EXPECT_EQ(kpmap::all_gather_shape({2, 3}, i, 4, -1, false), (Shape{2, 3, 4}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3}, i, 4, -3, false), (Shape{4, 2, 3}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3}, i, 4, -1, true), (Shape{2, 12}));
  EXPECT_EQ(kpmap::all_gather_shape({2, 3}, i, 4, -2, true), (Shape{8, 3}));
  EXPECT_EQ(shape_error([&] { kpmap::all_gather_shape({3}, i, 4, 1, true); }),
            "all_gather over 'i' (size 4): input shape [3], axis 1: out of range for an input of "
            "rank 1 (-1 <= axis < 1) (tiled)");
  EXPECT_EQ(shape_error([&] { kpmap::all_gather_shape({2, 3}, i, 4, 3, false); }),
            "all_gather over 'i' (size 4): input shape [2, 3], axis 3: out of range for an input "
            "of rank 2 (-3 <= axis <= 2) (untiled)");
  EXPECT_EQ(shape_error([&] { kpmap::all_gather_shape({2, 3}, i, 4, -4, false); }),
            "all_gather over 'i' (size 4): input shape [2, 3], axis -4: out of range for an input "
            "of rank 2 (-3 <= axis <= 2) (untiled)");
  EXPECT_EQ(shape_error([&] { kpmap::all_gather_shape({2, 3}, i, 4, -3, true); }),
            "all_gather over 'i' (size 4): input shape [2, 3], axis -3: out of range for an input "
            "of rank 2 (-2 <= axis < 2) (tiled)");
}

TEST(ShapeRules, PsumScatter) {
  const kpmap::AxisNames data("data");
  EXPECT_EQ(kpmap::psum_scatter_shape({4, 3}, data, 4, 0, false), (Shape{3}));
  EXPECT_EQ(kpmap::psum_scatter_shape({6, 4}, data, 4, 1, false), (Shape{6}));
  EXPECT_EQ(kpmap::psum_scatter_shape({4}, data, 4, 0, false), (Shape{}));
  EXPECT_EQ(kpmap::psum_scatter_shape({8, 3}, data, 4, 0, true), (Shape{2, 3}));
  EXPECT_EQ(kpmap::psum_scatter_shape({2, 3, 12}, data, 4, 2, true), (Shape{2, 3, 3}));
  EXPECT_EQ(shape_error([&] { kpmap::psum_scatter_shape({6, 3}, data, 4, 0, true); }),
            "psum_scatter over 'data' (size 4): input shape [6, 3], scatter_dimension 0: 6 is not "
            "divisible by 4 (tiled)");
  EXPECT_EQ(shape_error([&] { kpmap::psum_scatter_shape({6, 3}, data, 4, 0, false); }),
            "psum_scatter over 'data' (size 4): input shape [6, 3], scatter_dimension 0: 6 != 4 "
            "(untiled requires shape[scatter_dimension] == axis size)");
  EXPECT_EQ(shape_error([&] { kpmap::psum_scatter_shape({4, 3}, data, 4, 2, false); }),
            "psum_scatter over 'data' (size 4): input shape [4, 3], scatter_dimension 2: out of "
            "range for an input of rank 2 (0 <= scatter_dimension < 2) (untiled)");
  // Unlike all_gather's axis, negative dimensions are refused (JAX does not canonicalise them).
  EXPECT_NE(shape_error([&] { kpmap::psum_scatter_shape({3, 4}, data, 4, -1, false); })
                .find("scatter_dimension -1: out of range"),
            std::string::npos);
}

TEST(ShapeRules, AllToAll) {
  const kpmap::AxisNames dm({"data", "model"});
  // Untiled: split_axis removed, a new axis of size n inserted at concat_axis (output position).
  EXPECT_EQ(kpmap::all_to_all_shape({4, 3}, dm, 4, 0, 0, false), (Shape{4, 3}));
  EXPECT_EQ(kpmap::all_to_all_shape({4, 3}, dm, 4, 0, 1, false), (Shape{3, 4}));
  EXPECT_EQ(kpmap::all_to_all_shape({2, 4}, dm, 4, 1, 0, false), (Shape{4, 2}));
  EXPECT_EQ(kpmap::all_to_all_shape({4, 3, 2}, dm, 4, 0, 2, false), (Shape{3, 2, 4}));
  EXPECT_EQ(kpmap::all_to_all_shape({3, 2, 4}, dm, 4, 2, 1, false), (Shape{3, 4, 2}));
  // Tiled: shape[split] /= n, then shape[concat] *= n.
  EXPECT_EQ(kpmap::all_to_all_shape({8, 3}, dm, 4, 0, 1, true), (Shape{2, 12}));
  EXPECT_EQ(kpmap::all_to_all_shape({2, 8}, dm, 4, 1, 1, true), (Shape{2, 8}));
  EXPECT_EQ(kpmap::all_to_all_shape({3, 2, 8}, dm, 4, 2, 0, true), (Shape{12, 2, 2}));
  EXPECT_EQ(shape_error([&] { kpmap::all_to_all_shape({6, 3}, dm, 4, 0, 1, true); }),
            "all_to_all over '(data, model)' (size 4): input shape [6, 3], split_axis 0: 6 is not "
            "divisible by 4 (tiled)");
  EXPECT_EQ(shape_error([&] { kpmap::all_to_all_shape({3, 6}, dm, 4, 1, 0, false); }),
            "all_to_all over '(data, model)' (size 4): input shape [3, 6], split_axis 1: 6 != 4 "
            "(untiled requires shape[split_axis] == axis size)");
  EXPECT_NE(shape_error([&] { kpmap::all_to_all_shape({4, 3}, dm, 4, 2, 0, true); })
                .find("split_axis 2: out of range for an input of rank 2 (0 <= split_axis < 2)"),
            std::string::npos);
  EXPECT_NE(shape_error([&] { kpmap::all_to_all_shape({4, 3}, dm, 4, 0, 2, false); })
                .find("concat_axis 2: out of range for an input of rank 2 (0 <= concat_axis < 2)"),
            std::string::npos);
  EXPECT_NE(shape_error([&] { kpmap::all_to_all_shape({3, 4}, dm, 4, -1, 0, false); })
                .find("split_axis -1: out of range"),
            std::string::npos);
  EXPECT_NE(shape_error([&] { kpmap::all_to_all_shape({4, 3}, dm, 4, 0, -1, false); })
                .find("concat_axis -1: out of range"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Data: what each output element holds, from the source rank and its input index.

Index erase(Index idx, int d, int rank) {
  for (int k = std::max(d, 0); k + 1 < rank && k + 1 < 4; ++k) idx[k] = idx[k + 1];
  if (rank >= 1 && rank <= 4) idx[rank - 1] = 0;
  return idx;
}

Index insert(Index idx, int d, std::int64_t v, int rank) {  // rank: before the insertion
  for (int k = std::min(rank, 3); k > d && k > 0; --k) idx[k] = idx[k - 1];
  if (d >= 0 && d < 4) idx[d] = v;
  return idx;
}

template <int R>
void check_all_gather(const kpmap::Mesh& mesh, const kpmap::AxisNames& axes, const Group& g,
                      const Shape& s, int axis, bool tiled) {
  auto x = make<RView<double, R>>(s);
  fill_rank(x, world_rank());
  const std::string what = "all_gather over " + axes.str() + " of " + kpmap::to_string(s) + " axis " +
                           std::to_string(axis) + (tiled ? " tiled" : " untiled");
  // The expected values index the output from the front: a = axis + output rank if negative.
  const int a = axis >= 0 ? axis : axis + (tiled ? R : R + 1);
  const auto expected = [&](const Index& o) {
    const int src = static_cast<int>(tiled ? o[a] / s[a] : o[a]);
    Index i = o;
    if (tiled) i[a] = o[a] % s[a];
    else i = erase(o, a, R + 1);
    return value<double>(g.members[src], linear(s, i));
  };
  Shape want = s;
  if (tiled) want[a] *= g.size();
  else want.insert(want.begin() + a, g.size());
  if (tiled) {
    auto out = kpmap::all_gather(mesh, axes, x, axis, kpmap::tiled);
    EXPECT_EQ(shape_of(out), want) << what;
    expect_all(out, expected, what);
  } else {
    auto out = kpmap::all_gather(mesh, axes, x, axis, kpmap::untiled);
    static_assert(static_cast<int>(decltype(out)::rank) == R + 1);
    EXPECT_EQ(shape_of(out), want) << what;
    expect_all(out, expected, what);
  }
}

template <int R>
void check_psum_scatter(const kpmap::Mesh& mesh, const kpmap::AxisNames& axes, const Group& g,
                        const Shape& s, int d, bool tiled) {
  auto x = make<RView<double, R>>(s);
  fill_rank(x, world_rank());
  const int n = g.size();
  const auto expected = [&](const Index& o) {
    const Index i = tiled ? [&] { Index t = o; t[d] += g.me * (s[d] / n); return t; }()
                          : insert(o, d, g.me, R - 1);
    double sum = 0;
    for (int q : g.members) sum += value<double>(q, linear(s, i));
    return sum;
  };
  const std::string what = "psum_scatter over " + axes.str() + " of " + kpmap::to_string(s) + " dim " +
                           std::to_string(d) + (tiled ? " tiled" : " untiled");
  if (tiled) {
    auto out = make<RView<double, R>>(kpmap::psum_scatter_shape(mesh, axes, s, d, true));
    kpmap::psum_scatter(mesh, axes, x, out, d, true);
    expect_all(out, expected, what);
  } else {
    auto out = kpmap::psum_scatter(mesh, axes, x, d, kpmap::untiled);
    static_assert(static_cast<int>(decltype(out)::rank) == R - 1);
    EXPECT_EQ(shape_of(out), kpmap::psum_scatter_shape(mesh, axes, s, d, false)) << what;
    expect_all(out, expected, what);
  }
}

double all_to_all_expected(const Shape& s, const Group& g, const Index& o, int split, int concat,
                           bool tiled) {
  const int n = g.size();
  const int R = static_cast<int>(s.size());
  if (tiled) {
    Shape c = s;
    c[split] /= n;
    const int src = static_cast<int>(o[concat] / c[concat]);
    Index i = o;
    i[concat] = o[concat] % c[concat];
    i[split] += g.me * c[split];
    return value<double>(g.members[src], linear(s, i));
  }
  const int src = static_cast<int>(o[concat]);
  const Index i = insert(erase(o, concat, R), split, g.me, R - 1);
  return value<double>(g.members[src], linear(s, i));
}

template <int R>
void check_all_to_all(const kpmap::Mesh& mesh, const kpmap::AxisNames& axes, const Group& g,
                      const Shape& s, int split, int concat, bool tiled) {
  auto x = make<RView<double, R>>(s);
  fill_rank(x, world_rank());
  auto out = make<RView<double, R>>(kpmap::all_to_all_shape(mesh, axes, s, split, concat, tiled));
  kpmap::all_to_all(mesh, axes, x, out, split, concat, tiled);
  expect_all(out, [&](const Index& o) { return all_to_all_expected(s, g, o, split, concat, tiled); },
             "all_to_all over " + axes.str() + " of " + kpmap::to_string(s) + " split " +
                 std::to_string(split) + " concat " + std::to_string(concat) +
                 (tiled ? " tiled" : " untiled"));
}

class OneAxis : public ::testing::Test {
 protected:
  kpmap::Mesh mesh{MPI_COMM_WORLD, {{"i", -1}}};
  Group g = group_of({{"i", world_size()}}, {"i"}, world_rank());
  std::int64_t n = world_size();
};

TEST_F(OneAxis, AllGatherEveryAxisPosition) {  // 15 calls
  check_all_gather<1>(mesh, "i", g, {3}, 0, false);
  check_all_gather<1>(mesh, "i", g, {3}, 1, false);
  check_all_gather<1>(mesh, "i", g, {3}, 0, true);
  for (int axis = 0; axis <= 2; ++axis) check_all_gather<2>(mesh, "i", g, {2, 3}, axis, false);
  for (int axis = 0; axis <= 1; ++axis) check_all_gather<2>(mesh, "i", g, {2, 3}, axis, true);
  for (int axis = 0; axis <= 3; ++axis) check_all_gather<3>(mesh, "i", g, {2, 3, 2}, axis, false);
  for (int axis = 0; axis <= 2; ++axis) check_all_gather<3>(mesh, "i", g, {2, 3, 2}, axis, true);
}

TEST_F(OneAxis, AllGatherNegativeAxis) {  // 3 calls: -1 untiled is the last output axis
  check_all_gather<2>(mesh, "i", g, {2, 3}, -1, false);
  check_all_gather<2>(mesh, "i", g, {2, 3}, -3, false);
  check_all_gather<2>(mesh, "i", g, {2, 3}, -1, true);
}

TEST_F(OneAxis, PsumScatterEveryDimension) {  // 12 calls
  check_psum_scatter<1>(mesh, "i", g, {n}, 0, false);
  check_psum_scatter<1>(mesh, "i", g, {2 * n}, 0, true);
  check_psum_scatter<2>(mesh, "i", g, {n, 3}, 0, false);
  check_psum_scatter<2>(mesh, "i", g, {3, n}, 1, false);
  check_psum_scatter<2>(mesh, "i", g, {2 * n, 3}, 0, true);
  check_psum_scatter<2>(mesh, "i", g, {3, 2 * n}, 1, true);
  check_psum_scatter<3>(mesh, "i", g, {n, 2, 3}, 0, false);
  check_psum_scatter<3>(mesh, "i", g, {2, n, 3}, 1, false);
  check_psum_scatter<3>(mesh, "i", g, {2, 3, n}, 2, false);
  check_psum_scatter<3>(mesh, "i", g, {2 * n, 2, 1}, 0, true);
  check_psum_scatter<3>(mesh, "i", g, {2, 2 * n, 3}, 1, true);
  check_psum_scatter<3>(mesh, "i", g, {2, 3, 2 * n}, 2, true);
}

TEST_F(OneAxis, AllToAllEverySplitAndConcat) {  // 15 calls
  check_all_to_all<1>(mesh, "i", g, {n}, 0, 0, false);
  check_all_to_all<1>(mesh, "i", g, {2 * n}, 0, 0, true);
  check_all_to_all<2>(mesh, "i", g, {n, 3}, 0, 0, false);
  check_all_to_all<2>(mesh, "i", g, {n, 3}, 0, 1, false);
  check_all_to_all<2>(mesh, "i", g, {3, n}, 1, 0, false);
  check_all_to_all<2>(mesh, "i", g, {3, n}, 1, 1, false);
  check_all_to_all<2>(mesh, "i", g, {2 * n, 3}, 0, 1, true);
  check_all_to_all<2>(mesh, "i", g, {3, 2 * n}, 1, 0, true);
  check_all_to_all<3>(mesh, "i", g, {2, n, 3}, 1, 0, false);
  check_all_to_all<3>(mesh, "i", g, {2, n, 3}, 1, 2, false);
  check_all_to_all<3>(mesh, "i", g, {n, 2, 3}, 0, 2, false);
  check_all_to_all<3>(mesh, "i", g, {2, 3, n}, 2, 0, false);
  check_all_to_all<3>(mesh, "i", g, {2, 2 * n, 3}, 1, 2, true);
  check_all_to_all<3>(mesh, "i", g, {2 * n, 2, 3}, 0, 0, true);
  check_all_to_all<3>(mesh, "i", g, {2, 3, 2 * n}, 2, 1, true);
}

// In place (the same View in and out) where the output shape equals the input's: untiled with
// split == concat, and tiled with split == concat. The input is copied before MPI overwrites it.
TEST_F(OneAxis, AllToAllInPlace) {  // 3 calls
  const auto in_place = [&](auto x, int split, int concat, bool tiled) {
    const Shape s = shape_of(x);
    fill_rank(x, world_rank());
    kpmap::all_to_all(mesh, "i", x, x, split, concat, tiled);
    expect_all(x, [&](const Index& o) { return all_to_all_expected(s, g, o, split, concat, tiled); },
               "all_to_all in place of " + kpmap::to_string(s) + " split " + std::to_string(split) +
                   " concat " + std::to_string(concat) + (tiled ? " tiled" : " untiled"));
  };
  in_place(make<RView<double, 2>>({n, 3}), 0, 0, false);
  in_place(make<RView<double, 3>>({2, n, 3}), 1, 1, false);  // block swaps on both sides
  in_place(make<RView<double, 2>>({3, 2 * n}), 1, 1, true);
}

// JAX's identities, checked between kpmap's own results.
TEST_F(OneAxis, JaxIdentities) {
  auto x = make<RView<double, 2>>({2 * n, 3});
  fill_rank(x, world_rank());
  // Results are read on the host through mirrors (the Views may live in device memory).
  const auto sum = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kpmap::psum(mesh, "i", x));
  // psum == sum over the all_gather axis.
  const auto gathered = Kokkos::create_mirror_view_and_copy(
      Kokkos::HostSpace(), kpmap::all_gather(mesh, "i", x, 0, kpmap::untiled));
  expect_all(sum,
             [&](const Index& i) {
               double s = 0;
               for (int r = 0; r < n; ++r) s += gathered(r, i[0], i[1]);
               return s;
             },
             "psum == sum of all_gather");
  // psum == all_gather(psum_scatter(x), tiled).
  auto scattered = kpmap::psum_scatter(mesh, "i", x, 0, kpmap::tiled);
  auto regathered = kpmap::all_gather(mesh, "i", scattered, 0, kpmap::tiled);
  expect_all(regathered, [&](const Index& i) { return sum(i[0], i[1]); },
             "psum == all_gather(psum_scatter(x), tiled)");
  // pmean == psum / axis_size.
  auto mean = kpmap::pmean(mesh, "i", x);
  expect_all(mean, [&](const Index& i) { return sum(i[0], i[1]) / n; }, "pmean == psum / n");
}

// Row-major logical indices whatever the layout of the input or the output.
TEST_F(OneAxis, LayoutLeftAndStridedViews) {
  const Shape s{2, 3};
  auto left = make<LView<double, 2>>(s);
  fill_rank(left, world_rank());
  auto gathered = make<LView<double, 2>>({2, 3 * n});
  kpmap::all_gather(mesh, "i", left, gathered, 1, true);
  expect_all(gathered,
             [&](const Index& o) {
               return value<double>(g.members[o[1] / 3], linear(s, {o[0], o[1] % 3, 0, 0}));
             },
             "all_gather LayoutLeft, tiled axis 1");

  auto parent = make<RView<double, 2>>({3 * n, 5});
  auto block = Kokkos::subview(parent, Kokkos::pair<std::int64_t, std::int64_t>(n, 3 * n),
                               Kokkos::pair<int, int>(1, 4));  // [2n, 3], strided
  fill_rank(block, world_rank());
  const Shape bs{2 * n, 3};
  auto exchanged = make<LView<double, 2>>(kpmap::all_to_all_shape(mesh, "i", bs, 0, 1, true));
  kpmap::all_to_all(mesh, "i", block, exchanged, 0, 1, true);
  expect_all(exchanged, [&](const Index& o) { return all_to_all_expected(bs, g, o, 0, 1, true); },
             "all_to_all strided subview -> LayoutLeft");

  auto target = Kokkos::subview(parent, Kokkos::ALL, Kokkos::pair<int, int>(0, 2));  // [3n, 2]
  const Shape ss{3 * n * n, 2};
  auto src = make<LView<double, 2>>(ss);
  fill_rank(src, world_rank());
  kpmap::psum_scatter(mesh, "i", src, target, 0, true);
  expect_all(target,
             [&](const Index& o) {
               double sum = 0;
               for (int q : g.members) sum += value<double>(q, linear(ss, {g.me * 3 * n + o[0], o[1], 0, 0}));
               return sum;
             },
             "psum_scatter LayoutLeft -> strided subview");
}

TEST_F(OneAxis, WrongOutputShapesAndUnknownAxes) {
  auto x = make<RView<double, 2>>({n, 3});
  auto wrong = make<RView<double, 2>>({n, 4});
  const std::string size = std::to_string(n);
  EXPECT_EQ(shape_error([&] { kpmap::all_gather(mesh, "i", x, wrong, 0, true); }),
            "all_gather over 'i' (size " + size + "): input shape [" + size + ", 3], axis 0 (tiled): "
            "output View has shape [" + size + ", 4], expected [" + std::to_string(n * n) + ", 3]");
  EXPECT_EQ(shape_error([&] { kpmap::psum_scatter(mesh, "i", x, wrong, 0, true); }),
            "psum_scatter over 'i' (size " + size + "): input shape [" + size +
                ", 3], scatter_dimension 0 (tiled): output View has shape [" + size +
                ", 4], expected [1, 3]");
  EXPECT_NE(shape_error([&] { kpmap::all_to_all(mesh, "i", x, wrong, 0, 1, false); })
                .find("split_axis 0, concat_axis 1 (untiled): output View has shape"),
            std::string::npos);
  EXPECT_THROW(kpmap::all_gather(mesh, "j", x, 0, kpmap::tiled), kpmap::InputError);
  EXPECT_THROW(kpmap::all_to_all_shape(mesh, "j", {4}, 0, 0, true), kpmap::InputError);
}

// Tuples of axes in both orders and single axes of a two-axis mesh: 4 calls per axis choice.
TEST(TwoAxes, GatherScatterAllToAllOverTuples) {
  for (const auto& spec : two_axis_meshes()) {
    kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    for (const std::vector<std::string>& names :
         {std::vector<std::string>{"model"}, {"model", "data"}, {"data", "model"}}) {
      const kpmap::AxisNames axes(names);
      const Group g = group_of(spec, names, world_rank());
      const std::int64_t n = g.size();
      check_all_gather<2>(mesh, axes, g, {2, 3}, 1, true);
      check_psum_scatter<2>(mesh, axes, g, {3, n}, 1, false);
      check_all_to_all<2>(mesh, axes, g, {2 * n, 3}, 0, 1, true);
      check_all_to_all<3>(mesh, axes, g, {2, n, 3}, 1, 2, false);
    }
  }
}

}  // namespace
