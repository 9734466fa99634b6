// JAX's edges: the empty tuple of axes `()` is the identity (a group of one rank), ppermute takes
// negative axis indices Python-style; and how kpmap meets MPI: the thread level it initialises
// MPI with, and the rule that keeps user-defined MPI ops off device memory.
#include <type_traits>
#include <utility>

#include "kpmap/mesh/mpi_env.hpp"
#include "test_collectives_common.hpp"

namespace {

using namespace kct;

// 8 calls per mesh.
TEST(EmptyAxisTuple, EveryCollectiveIsTheIdentity) {
  const int rank = world_rank();
  for (const auto& spec : two_axis_meshes()) {
    kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    const kpmap::AxisNames none;
    EXPECT_EQ(none.str(), "()");
    EXPECT_EQ(kpmap::axis_index(mesh, none), 0);
    EXPECT_EQ(kpmap::axis_size(mesh, none), 1);
    const auto mine = [&](const Index& i) { return value<double>(rank, i[0] * 3 + i[1]); };
    auto x = make<RView<double, 2>>({2, 3});
    fill_rank(x, rank);
    auto out = make<RView<double, 2>>({2, 3});
    kpmap::psum(mesh, {}, x, out);
    expect_all(out, mine, describe(spec) + "psum over ()");
    expect_all(kpmap::pmean(mesh, none, x), mine, "pmean over ()");
    expect_all(kpmap::pmax(mesh, none, x), mine, "pmax over ()");
    expect_all(kpmap::pmin(mesh, none, x), mine, "pmin over ()");
    auto g = kpmap::all_gather(mesh, none, x, 0, kpmap::untiled);  // [1, 2, 3]
    expect_all(g, [&](const Index& o) { return value<double>(rank, o[1] * 3 + o[2]); }, "all_gather over ()");
    expect_all(kpmap::psum_scatter(mesh, none, x, 1, kpmap::tiled), mine, "psum_scatter over ()");
    expect_all(kpmap::ppermute(mesh, none, x, {{0, 0}}), mine, "ppermute over ()");
    kpmap::Request r = kpmap::ipsum(mesh, none, x, x);
    r.wait();
    expect_all(x, mine, "ipsum over () in place");
  }
}

// Scalars (rank-0 Views), as JAX: all_gather stacks them into [n], ppermute and pbroadcast move
// them; a tiled all_gather, psum_scatter and all_to_all have no dimension to act on. 4 calls.
TEST(Scalars, NonReductionCollectives) {
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const kpmap::Axis ax = mesh.axis("i");
  Kokkos::View<double, kpmap::device_type> s("s");
  Kokkos::deep_copy(s, value<double>(rank, 0));
  auto g = kpmap::all_gather(ax, s, 0, kpmap::untiled);
  static_assert(decltype(g)::rank == 1);
  ASSERT_EQ(static_cast<int>(g.extent(0)), n);
  expect_all(g, [&](const Index& o) { return value<double>(static_cast<int>(o[0]), 0); }, "all_gather of a scalar");
  kpmap::Permutation shift;
  for (int b = 0; b < n; ++b) shift.push_back({b, (b + 1) % n});
  expect_all(kpmap::ppermute(ax, s, shift), [&](const Index&) { return value<double>((rank + n - 1) % n, 0); },
             "ppermute of a scalar");
  expect_all(kpmap::pbroadcast(mesh, "i", s, n - 1), [&](const Index&) { return value<double>(n - 1, 0); },
             "pbroadcast of a scalar");
  auto one = make<RView<double, 1>>({n});
  kpmap::Request r = kpmap::iall_gather(ax, s, one, 0);
  r.wait();
  expect_all(one, [&](const Index& o) { return value<double>(static_cast<int>(o[0]), 0); }, "iall_gather of a scalar");

  const std::string head = "over 'i' (size " + std::to_string(n) + "): input shape []";
  EXPECT_EQ(shape_error([&] { kpmap::all_gather(ax, s, 0, kpmap::tiled); }),
            "all_gather " + head + ", axis 0: out of range for an input of rank 0 (0 <= axis < 0) (tiled)");
  Kokkos::View<double, kpmap::device_type> t("t");
  EXPECT_EQ(shape_error([&] { kpmap::psum_scatter(ax, s, t, 0, true); }),
            "psum_scatter " + head +
                ", scatter_dimension 0: out of range for an input of rank 0 (0 <= scatter_dimension < 0) (tiled)");
  EXPECT_EQ(shape_error([&] { kpmap::all_to_all(ax, s, t, 0, 0, true); }),
            "all_to_all " + head + ", split_axis 0: out of range for an input of rank 0 (0 <= split_axis < 0) (tiled)");
}

// 2 calls.
TEST(NegativePermutationIndices, CountFromTheEnd) {
  const int rank = world_rank(), n = world_size();
  kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  auto x = make<RView<double, 1>>({3});
  fill_rank(x, rank);
  // (-1, 0): the last index sends to the first; everyone else gets zeros (n > 1).
  auto y = kpmap::ppermute(mesh, "i", x, {{-1, 0}});
  expect_all(y, [&](const Index& o) { return rank == 0 ? value<double>(n - 1, o[0]) : (n == 1 ? value<double>(0, o[0]) : 0.0); },
             "ppermute (-1, 0)");
  // Sources and destinations both negative: j - n sends to (j + 1) mod n - n.
  kpmap::Permutation cycle;
  for (int j = 0; j < n; ++j) cycle.emplace_back(j - n, (j + 1) % n - n);
  kpmap::ppermute(mesh, "i", x, x, cycle);
  expect_all(x, [&](const Index& o) { return value<double>((rank + n - 1) % n, o[0]); }, "ppermute cycle");

  const std::string head = "ppermute over 'i' (size " + std::to_string(n) + "): input shape [3]";
  const std::string range = "(-" + std::to_string(n) + " <= index < " + std::to_string(n) + ")";
  EXPECT_EQ(shape_error([&] { kpmap::ppermute(mesh, "i", x, {{-n - 1, 0}}); }),
            head + ", perm pair (" + std::to_string(-n - 1) + ", 0): index " + std::to_string(-n - 1) +
                " is not an axis index " + range);
  EXPECT_EQ(shape_error([&] { kpmap::ppermute(mesh, "i", x, {{0, 0}, {-n, 0}}); }),
            head + ", perm pair (" + std::to_string(-n) + ", 0): source " + std::to_string(-n) +
                " (axis index 0) appears twice (perm must be a partial permutation)");
}

TEST(MpiThreadLevel, InitialisedFunneledAndChecked) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  EXPECT_GE(provided, MPI_THREAD_FUNNELED) << "the test main initialises MPI with MpiEnvironment";
  EXPECT_EQ(kpmap::required_thread_level, MPI_THREAD_FUNNELED);
  EXPECT_NO_THROW(kpmap::check_thread_level(MPI_THREAD_FUNNELED));
  EXPECT_NO_THROW(kpmap::check_thread_level(MPI_THREAD_MULTIPLE));
  try {
    kpmap::check_thread_level(MPI_THREAD_SINGLE);
    ADD_FAILURE() << "no RuntimeError";
  } catch (const kpmap::RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("MPI provides MPI_THREAD_SINGLE, kpmap needs MPI_THREAD_FUNNELED", 0), 0u)
        << e.what();
  }
}

// User-defined MPI ops run on the host: reductions through them stage device memory through
// host buffers even with GPU-aware MPI; everything else may hand device memory to a GPU-aware MPI.
TEST(GpuAwareMpi, UserOpsNeverSeeDeviceMemory) {
  using kpmap::ReduceOp;
  using kpmap::detail::mpi_may_access;
  static_assert(kpmap::uses_user_op<float>(ReduceOp::max) && kpmap::uses_user_op<double>(ReduceOp::min));
  static_assert(kpmap::uses_user_op<kpmap::bf16>(ReduceOp::sum) && kpmap::uses_user_op<kpmap::fp16>(ReduceOp::sum));
  static_assert(!kpmap::uses_user_op<float>(ReduceOp::sum) && !kpmap::uses_user_op<long long>(ReduceOp::max));
  // (host accessible, GPU-aware MPI, user op)
  static_assert(mpi_may_access(true, false, true) && mpi_may_access(true, true, true));
  static_assert(!mpi_may_access(false, false, false) && !mpi_may_access(false, false, true));
  static_assert(mpi_may_access(false, true, false), "GPU-aware MPI takes device buffers...");
  static_assert(!mpi_may_access(false, true, true), "...but never for a user-defined op");
  // The plans choose host-only staging exactly for the user ops.
  using V = RView<float, 1>;
  using H = RView<kpmap::bf16, 1>;
  using kpmap::Axis;
  using E = kpmap::execution_space;
  using MaxPlan = decltype(kpmap::detail::plan_reduce<ReduceOp::max>("", false, E(), std::declval<const Axis&>(), V(), V()));
  using SumPlan = decltype(kpmap::detail::plan_reduce<ReduceOp::sum>("", false, E(), std::declval<const Axis&>(), V(), V()));
  static_assert(std::is_same_v<MaxPlan, kpmap::detail::ReducePlan<E, V, V, true>>);
  static_assert(std::is_same_v<SumPlan, kpmap::detail::ReducePlan<E, V, V, false>>);
  static_assert(kpmap::detail::ScatterPlan<E, H, H>::host_only && !kpmap::detail::ScatterPlan<E, V, V>::host_only);
  // Device Views are staged in pinned host memory where the backend has it.
  static_assert(std::is_same_v<typename kpmap::detail::Staged<E, V, true>::memory_space,
                               std::conditional_t<kpmap::host_accessible_v<kpmap::memory_space>,
                                                  kpmap::memory_space, kpmap::detail::staging_space>>);
}

}  // namespace
