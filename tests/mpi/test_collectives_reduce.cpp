// psum, pmean, pmax, pmin on every element type, in place and out of place, over single axes and
// tuples of axes in both orders, on every mesh shape the rank count allows; layouts and strided
// subviews; the shape errors. Expected values: sums/extrema over the group's world ranks of
// value(rank, index), computed from the declared mesh sizes (test_collectives_common.hpp).
#include <cmath>
#include <limits>
#include <tuple>

#include "test_collectives_common.hpp"

namespace {

using namespace kct;

enum class Op { sum, mean, max, min };

const char* name(Op op) {
  switch (op) {
    case Op::sum: return "psum";
    case Op::mean: return "pmean";
    case Op::max: return "pmax";
    case Op::min: return "pmin";
  }
  return "?";
}

template <class T>
double reduce_expected(Op op, const Group& g, std::int64_t lin) {
  double acc = op == Op::max ? -1e300 : op == Op::min ? 1e300 : 0.0;
  for (int q : g.members) {
    const double v = value<T>(q, lin);
    if (op == Op::sum || op == Op::mean) acc += v;
    if (op == Op::max) acc = std::max(acc, v);
    if (op == Op::min) acc = std::min(acc, v);
  }
  return op == Op::mean ? acc / g.size() : acc;
}

template <class In, class Out>
void apply(Op op, const kpmap::Mesh& mesh, const kpmap::AxisNames& axes, const In& in, const Out& out) {
  using T = typename Out::non_const_value_type;
  switch (op) {
    case Op::sum: kpmap::psum(mesh, axes, in, out); break;
    case Op::max: kpmap::pmax(mesh, axes, in, out); break;
    case Op::min: kpmap::pmin(mesh, axes, in, out); break;
    case Op::mean:
      if constexpr (kpmap::is_floating_element_v<T>) kpmap::pmean(mesh, axes, in, out);
      break;
  }
}

template <class T>
class Reduce : public ::testing::Test {};

using ElementTypes =
    ::testing::Types<double, float, std::int32_t, std::int64_t, kpmap::bf16, kpmap::fp16>;
TYPED_TEST_SUITE(Reduce, ElementTypes);

// 4 axis choices x 3-4 ops x (out of place + in place) per mesh.
TYPED_TEST(Reduce, EveryOpOverEveryAxisInPlaceAndOutOfPlace) {
  using T = TypeParam;
  std::vector<Op> ops{Op::sum, Op::max, Op::min};
  if (kpmap::is_floating_element_v<T>) ops.push_back(Op::mean);
  const int rank = world_rank();
  for (const auto& axes_spec : two_axis_meshes()) {
    kpmap::Mesh mesh(MPI_COMM_WORLD, axes_spec);
    for (const std::vector<std::string>& names :
         {std::vector<std::string>{"data"}, {"model"}, {"data", "model"}, {"model", "data"}}) {
      const kpmap::AxisNames axes(names);
      const Group g = group_of(axes_spec, names, rank);
      for (Op op : ops) {
        const std::string what = describe(axes_spec) + name(op) + " over " + axes.str();
        // Out of place, rank 2.
        auto in = make<RView<T, 2>>({2, 3});
        auto out = make<RView<T, 2>>({2, 3});
        fill_rank(in, rank);
        apply(op, mesh, axes, in, out);
        expect_all(out, [&](const Index& i) { return reduce_expected<T>(op, g, i[0] * 3 + i[1]); },
                   what + " (out of place)");
        expect_all(in, [&](const Index& i) { return value<T>(rank, i[0] * 3 + i[1]); },
                   what + " leaves its input alone");
        // In place, rank 1 (MPI_IN_PLACE).
        auto x = make<RView<T, 1>>({5});
        fill_rank(x, rank);
        apply(op, mesh, axes, x, x);
        expect_all(x, [&](const Index& i) { return reduce_expected<T>(op, g, i[0]); },
                   what + " (in place)");
      }
    }
  }
}

// The returning variants allocate a View of the input's shape and layout.
TYPED_TEST(Reduce, ReturningVariantsOnRank3) {
  using T = TypeParam;
  const int rank = world_rank();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const Group g = group_of({{"i", world_size()}}, {"i"}, rank);
  auto x = make<LView<T, 3>>({2, 2, 3});
  fill_rank(x, rank);
  const auto lin = [](const Index& i) { return (i[0] * 2 + i[1]) * 3 + i[2]; };
  auto s = kpmap::psum(mesh, "i", x);
  static_assert(std::is_same_v<decltype(s), LView<T, 3>>);
  expect_all(s, [&](const Index& i) { return reduce_expected<T>(Op::sum, g, lin(i)); }, "psum(x)");
  auto mx = kpmap::pmax(mesh, "i", x);
  expect_all(mx, [&](const Index& i) { return reduce_expected<T>(Op::max, g, lin(i)); }, "pmax(x)");
  auto mn = kpmap::pmin(mesh, "i", x);
  expect_all(mn, [&](const Index& i) { return reduce_expected<T>(Op::min, g, lin(i)); }, "pmin(x)");
  if constexpr (kpmap::is_floating_element_v<T>) {
    // pmean == psum / axis_size (JAX's identity), on data whose mean is not an integer.
    auto y = make<RView<T, 1>>({1});
    fill(y, [&](const Index&) { return rank + 1.0; });
    auto m = kpmap::pmean(mesh, "i", y);
    const int n = world_size();
    expect_all(m, [&](const Index&) { return (n + 1) / 2.0; }, "pmean of rank + 1");
    const auto sum = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), kpmap::psum(mesh, "i", y));
    expect_all(m, [&](const Index&) { return to_double(sum(0)) / n; }, "pmean == psum / n");
  }
}

template <class T>
class FloatingExtrema : public ::testing::Test {};

using FloatingTypes = ::testing::Types<double, float, kpmap::bf16, kpmap::fp16>;
TYPED_TEST_SUITE(FloatingExtrema, FloatingTypes);

// kpmap's max/min (its deliberate choice, docs/collectives.md; JAX's CPU backend drops NaNs): a
// NaN on any one rank makes the result NaN on every rank, and -0 < +0. Element j < 4 is NaN on
// rank j % n only; element 4 holds ordinary values of both signs; elements 5 and
// 6 hold -0 on rank 0 and +0 elsewhere, and the reverse. pmax out of place, pmin in place.
TYPED_TEST(FloatingExtrema, NanPropagatesAndNegativeZeroIsSmaller) {  // 2 calls
  using T = TypeParam;
  const int rank = world_rank();
  const int n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto ordinary = [](int r) { return (r % 2 ? -1.0 : 1.0) * value<T>(r, 4); };
  const auto mine = [&](const Index& i) {
    if (i[0] < 4) return rank == i[0] % n ? nan : value<T>(rank, i[0]);
    if (i[0] == 4) return ordinary(rank);
    return (rank == 0) == (i[0] == 5) ? -0.0 : 0.0;
  };
  double high = ordinary(0), low = ordinary(0);
  for (int r = 1; r < n; ++r) high = std::max(high, ordinary(r)), low = std::min(low, ordinary(r));
  // Expected: NaN x 4, the extremum, then the zeros (one rank holds only rank 0's sign).
  const std::vector<double> want_max{nan, nan, nan, nan, high, n > 1 ? 0.0 : -0.0, 0.0};
  const std::vector<double> want_min{nan, nan, nan, nan, low, -0.0, n > 1 ? -0.0 : 0.0};

  auto x = make<RView<T, 1>>({7});
  fill(x, mine);
  auto mx = make<RView<T, 1>>({7});
  kpmap::pmax(mesh, "i", x, mx);
  kpmap::pmin(mesh, "i", x, x);
  for (const auto& [view, want, what] : {std::make_tuple(mx, want_max, "pmax"),
                                         std::make_tuple(x, want_min, "pmin")}) {
    const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), view);
    for (int j = 0; j < 7; ++j) {
      const double got = to_double(h(j));
      if (std::isnan(want[j])) {
        EXPECT_TRUE(std::isnan(got)) << what << " element " << j << " is " << got << ", expected NaN";
      } else {
        EXPECT_EQ(got, want[j]) << what << " element " << j;
        EXPECT_EQ(std::signbit(got), std::signbit(want[j])) << what << " element " << j << " is " << got;
      }
    }
  }
}

// Row-major logical indices whatever the layout: LayoutLeft and strided subviews, in place and
// out of place, and the parts of the parent View outside a subview stay untouched.
TEST(ReduceLayouts, LayoutLeftAndStridedSubviews) {
  const int rank = world_rank();
  const int n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const Group g = group_of({{"i", n}}, {"i"}, rank);

  auto left = make<LView<double, 2>>({3, 4});
  fill_rank(left, rank);
  auto right = make<RView<double, 2>>({3, 4});
  kpmap::psum(mesh, "i", left, right);
  expect_all(right, [&](const Index& i) { return reduce_expected<double>(Op::sum, g, i[0] * 4 + i[1]); },
             "psum LayoutLeft -> LayoutRight");

  auto parent = make<RView<std::int64_t, 2>>({4, 6});
  fill(parent, [](const Index& i) { return -1.0 - static_cast<double>(i[0] * 6 + i[1]); });
  auto block = Kokkos::subview(parent, Kokkos::pair<int, int>(1, 3), Kokkos::pair<int, int>(2, 5));
  fill_rank(block, rank);
  kpmap::pmax(mesh, "i", block, block);  // in place on a 2x3 strided block
  expect_all(parent,
             [&](const Index& i) {
               const bool inside = i[0] >= 1 && i[0] < 3 && i[1] >= 2 && i[1] < 5;
               return inside ? reduce_expected<std::int64_t>(Op::max, g, (i[0] - 1) * 3 + (i[1] - 2))
                             : -1.0 - static_cast<double>(i[0] * 6 + i[1]);
             },
             "pmax in place on a strided subview");

  auto column = Kokkos::subview(parent, Kokkos::ALL, 4);  // stride 6
  auto sums = make<LView<std::int64_t, 1>>({4});
  fill_rank(column, rank);
  kpmap::psum(mesh, "i", column, sums);
  expect_all(sums, [&](const Index& i) { return reduce_expected<std::int64_t>(Op::sum, g, i[0]); },
             "psum of a column subview");

  auto left3 = make<LView<float, 3>>({2, 3, 2});
  fill_rank(left3, rank);
  kpmap::pmin(mesh, "i", left3, left3);
  expect_all(left3,
             [&](const Index& i) { return reduce_expected<float>(Op::min, g, (i[0] * 3 + i[1]) * 2 + i[2]); },
             "pmin in place on LayoutLeft rank 3");
}

// Contiguous row-major host Views reach MPI without a copy; other layouts are packed.
TEST(ReduceLayouts, ContiguousHostViewsAreNotCopied) {
  using kpmap::detail::Use;
  // The staging of a View for reading (copy: a separate buffer forced).
  const auto staged = [](const auto& v, bool copy = false) {
    return kpmap::detail::Staged<kpmap::execution_space, std::decay_t<decltype(v)>>(kpmap::execution_space(), v,
                                                                                   Use::read, copy);
  };
  auto right = make<RView<float, 2>>({3, 4});
  auto left = make<LView<float, 2>>({3, 4});
  auto left1 = make<LView<float, 1>>({7});
  auto parent = make<RView<float, 2>>({4, 6});
  auto rows = Kokkos::subview(parent, Kokkos::pair<int, int>(1, 3), Kokkos::ALL);
  auto cols = Kokkos::subview(parent, Kokkos::ALL, Kokkos::pair<int, int>(1, 3));
  constexpr bool host = kpmap::host_accessible_v<kpmap::memory_space> || KPMAP_GPU_AWARE_MPI;
  EXPECT_EQ(staged(right).direct(), host);
  EXPECT_EQ(staged(left1).direct(), host);
  EXPECT_EQ(staged(rows).direct(), host);
  if (host) {
    EXPECT_EQ(staged(right).data(), right.data());
  }
  EXPECT_FALSE(staged(left).direct());
  EXPECT_FALSE(staged(cols).direct());
  EXPECT_FALSE(staged(right, true).direct());
}

TEST(ReduceErrors, ShapeMismatchAndUnknownAxis) {
  const int n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"data", -1}, {"model", 1}});
  auto in = make<RView<double, 2>>({2, 3});
  auto out = make<RView<double, 2>>({3, 2});
  const std::string msg = shape_error([&] { kpmap::psum(mesh, {"data", "model"}, in, out); });
  EXPECT_EQ(msg, "psum over '(data, model)' (size " + std::to_string(n) +
                     "): input shape [2, 3]: output View has shape [3, 2], expected [2, 3]");
  EXPECT_NE(shape_error([&] { kpmap::pmax(mesh, "data", in, out); }).find("pmax over 'data'"),
            std::string::npos);
  try {
    kpmap::pmean(mesh, "modle", in, in);
    ADD_FAILURE() << "no InputError";
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'modle'"), std::string::npos) << e.what();
  }
}

}  // namespace
