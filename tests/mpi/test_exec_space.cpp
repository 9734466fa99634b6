// Every collective takes a Kokkos execution space instance first: the same results as the form
// without one (values computed here from the group's members), for the default instance and a
// second instance (Serial, where the build has it and the Views are host memory). On Kokkos 4,
// whose Tools report the instance of every kernel and fence, the collective's kernels run on the
// instance given and it fences only that instance: never a global fence; where nothing is copied,
// once.
#include <set>
#include <string>
#include <vector>

#include "test_collectives_common.hpp"

namespace {

using namespace kct;

#if KOKKOS_VERSION >= 40000
// Device ids (Kokkos::Tools::Experimental::device_id) of kernels and fences, between arm() and
// disarm().
std::vector<std::uint32_t> kernel_ids, fence_ids;
std::set<std::string> kernel_names;

void on_kernel(const char* name, std::uint32_t device, std::uint64_t*) {
  kernel_ids.push_back(device);
  kernel_names.insert(name);
}
// Kokkos fences globally around every kernel while Tools callbacks are set ("Kokkos::Tools::..."
// fences): those are the tracing's own, not the collectives'.
void on_fence(const char* name, std::uint32_t device, std::uint64_t*) {
  if (std::string(name).rfind("Kokkos::Tools::", 0) != 0) fence_ids.push_back(device);
}

[[maybe_unused]] void arm() {
  kernel_ids.clear();
  fence_ids.clear();
  kernel_names.clear();
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(on_kernel);
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(on_kernel);
  Kokkos::Tools::Experimental::set_begin_fence_callback(on_fence);
}
[[maybe_unused]] void disarm() {
  Kokkos::Tools::Experimental::set_begin_parallel_for_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
  Kokkos::Tools::Experimental::set_begin_fence_callback(nullptr);
}
#endif

// Each collective with `exec` through the handle and through the names, on column-major Views
// (packed by a kernel) whose gathers and scatters need a block swap (a second kernel).
template <class Exec>
void run_all(const Exec& exec, const std::string& what) {
  const int rank = world_rank();
  const auto spec = two_axis_meshes().front();
  const kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
  const std::vector<std::string> names{"data"};
  const kpmap::AxisNames axes(names);
  const kpmap::Axis ax = mesh.axis(axes);
  const Group g = group_of(spec, names, rank);
  const int n = g.size();
  const Shape shape{3, 2 * n};
  const auto sum_at = [&](std::int64_t l) {
    double t = 0;
    for (int m : g.members) t += value<double>(m, l);
    return t;
  };
  auto x = make<LView<double, 2>>(shape);
  fill_rank(x, rank);

  auto s = make<LView<double, 2>>(shape);
  kpmap::psum(exec, ax, x, s);
  expect_all(
      s, [&](const Index& i) { return sum_at(linear(shape, i)); }, "psum " + what);
  kpmap::pmean(exec, mesh, axes, x, s);
  expect_all(
      s, [&](const Index& i) { return sum_at(linear(shape, i)) / n; }, "pmean " + what);
  const int top = *std::max_element(g.members.begin(), g.members.end());
  const int bottom = *std::min_element(g.members.begin(), g.members.end());
  expect_all(
      kpmap::pmax(exec, ax, x), [&](const Index& i) { return value<double>(top, linear(shape, i)); },
      "pmax " + what);
  expect_all(
      kpmap::pmin(exec, mesh, axes, x),
      [&](const Index& i) { return value<double>(bottom, linear(shape, i)); }, "pmin " + what);
  kpmap::psum(exec, ax, x, s, kpmap::reproducible);
  expect_all(
      s, [&](const Index& i) { return sum_at(linear(shape, i)); }, "reproducible psum " + what);

  // Integers: pmean returns floats, as JAX.
  auto k = make<LView<int, 2>>(shape);
  fill_rank(k, rank);
  auto km = make<LView<float, 2>>(shape);
  kpmap::pmean(exec, ax, k, km);
  expect_all(
      km, [&](const Index& i) { return static_cast<float>(sum_at(linear(shape, i)) / n); },
      "integer pmean " + what);

  // all_gather along axis 1 (untiled): out(r, i, member, j) order needs the block swap.
  expect_all(
      kpmap::all_gather(exec, ax, x, 1, kpmap::untiled),
      [&](const Index& i) { return value<double>(g.members[i[1]], i[0] * 2 * n + i[2]); },
      "all_gather " + what);
  auto gathered = make<LView<double, 2>>({3, 2 * n * n});
  kpmap::Request rg = kpmap::iall_gather(exec, mesh, axes, x, gathered, 1, true);
  rg.wait();
  expect_all(
      gathered,
      [&](const Index& i) { return value<double>(g.members[i[1] / (2 * n)], i[0] * 2 * n + i[1] % (2 * n)); },
      "iall_gather " + what);

  // psum_scatter along axis 1 (tiled): block `me` of every row.
  const auto scatter_expected = [&](const Index& i) { return sum_at(i[0] * 2 * n + g.me * 2 + i[1]); };
  expect_all(kpmap::psum_scatter(exec, ax, x, 1, kpmap::tiled), scatter_expected, "psum_scatter " + what);
  auto scattered = make<LView<double, 2>>({3, 2});
  kpmap::Request rs = kpmap::ipsum_scatter(exec, mesh, axes, x, scattered, 1, true);
  rs.wait();
  expect_all(scattered, scatter_expected, "ipsum_scatter " + what);

  // all_to_all, split along axis 1 and concatenated along axis 0 (tiled): block j of my
  // columns goes to member j, rows stacked in source order.
  expect_all(
      kpmap::all_to_all(exec, ax, x, 1, 0, true),
      [&](const Index& i) {
        return value<double>(g.members[i[0] / 3], (i[0] % 3) * 2 * n + g.me * 2 + i[1]);
      },
      "all_to_all " + what);

  kpmap::Permutation shift;
  for (int b = 0; b < n; ++b) shift.push_back({b, (b + 1) % n});
  const int from = g.members[(g.me + n - 1) % n];
  expect_all(
      kpmap::ppermute(exec, ax, x, shift),
      [&](const Index& i) { return value<double>(from, linear(shape, i)); }, "ppermute " + what);
  expect_all(
      kpmap::pbroadcast(exec, mesh, axes, x, 0),
      [&](const Index& i) { return value<double>(g.members[0], linear(shape, i)); }, "pbroadcast " + what);

  kpmap::Request r = kpmap::ipsum(exec, ax, x, x);
  r.wait();
  expect_all(
      x, [&](const Index& i) { return sum_at(linear(shape, i)); }, "ipsum in place " + what);
}

TEST(ExecSpace, DefaultInstanceGivesTheResults) { run_all(kpmap::execution_space(), "(default instance)"); }

#if KOKKOS_VERSION >= 40000
// Where MPI uses the Views' memory itself (contiguous host Views), a collective fences its
// instance once, before MPI: the caller's kernels writing the input are then done, and nothing
// runs after MPI. pmean fences again after its division kernel.
TEST(ExecSpace, OneFenceWhereNothingIsCopied) {
  using Host = Kokkos::DefaultHostExecutionSpace;
  using HView = Kokkos::View<double*, Kokkos::LayoutRight, Kokkos::HostSpace>;
  const kpmap::Mesh mesh(MPI_COMM_WORLD, {{"i", -1}});
  const kpmap::Axis ax = mesh.axis("i");
  const Host host;
  HView x("x", 4), y("y", 4);
  const auto fences = [&](auto&& call) {
    call();  // pools and lookups warmed
    arm();
    call();
    disarm();
    for (std::uint32_t f : fence_ids) EXPECT_EQ(f, Kokkos::Tools::Experimental::device_id(host));
    return fence_ids.size();
  };
  EXPECT_EQ(fences([&] { kpmap::psum(host, ax, x, y); }), 1u) << "psum out of place";
  EXPECT_EQ(fences([&] { kpmap::psum(host, ax, y, y); }), 1u) << "psum in place";
  EXPECT_EQ(fences([&] { kpmap::pmean(host, ax, x, y); }), 2u) << "pmean: the division, then a fence";
  EXPECT_EQ(fences([&] { kpmap::ipsum(host, ax, x, y).wait(); }), 1u) << "ipsum";
}
#endif

#if defined(KOKKOS_ENABLE_SERIAL)
#if KOKKOS_VERSION >= 40000
// The kernels and fences of the collectives themselves (outputs allocated beforehand, the pools
// warmed by a first round): every one on `exec`.
template <class Exec>
void expect_only_instance(const Exec& exec) {
  const kpmap::Mesh mesh(MPI_COMM_WORLD, two_axis_meshes().front());
  const kpmap::Axis ax = mesh.axis("data");
  const int data = ax.size();
  auto x = make<LView<double, 2>>({3, 2 * data});
  auto s = make<LView<double, 2>>({3, 2 * data});
  auto gathered = make<LView<double, 3>>({3, data, 2 * data});
  auto scattered = make<LView<double, 2>>({3, 2});
  auto moved = make<LView<double, 2>>({3 * data, 2});
  kpmap::Permutation shift;
  for (int b = 0; b < data; ++b) shift.push_back({b, (b + 1) % data});
  const auto round = [&] {
    kpmap::psum(exec, ax, x, s);
    kpmap::pmean(exec, ax, x, x);
    kpmap::psum(exec, ax, x, s, kpmap::reproducible);
    kpmap::all_gather(exec, ax, x, gathered, 1);
    kpmap::psum_scatter(exec, ax, x, scattered, 1, true);
    kpmap::all_to_all(exec, ax, x, moved, 1, 0, true);
    kpmap::ppermute(exec, ax, x, s, shift);
    kpmap::pbroadcast(exec, ax, x, s, 0);
    kpmap::Request r = kpmap::ipsum(exec, ax, x, s);
    r.wait();
  };
  round();
  arm();
  round();
  disarm();
  const std::uint32_t id = Kokkos::Tools::Experimental::device_id(exec);
  EXPECT_TRUE(kernel_names.count("kpmap::pack") && kernel_names.count("kpmap::unpack") &&
              kernel_names.count("kpmap::swap_leading"))
      << "the Views were chosen to need packing and block swaps";
  for (std::uint32_t k : kernel_ids) EXPECT_EQ(k, id) << "a kernel ran on another instance";
  EXPECT_FALSE(fence_ids.empty());
  for (std::uint32_t f : fence_ids) EXPECT_EQ(f, id) << "a fence of another instance (or a global one)";
}
#endif

// A Serial instance drives host Views in any build that has Serial (kpmap's own space may be OpenMP).
TEST(ExecSpace, AnotherInstanceGivesTheResults) {
  if constexpr (kpmap::host_accessible_v<kpmap::memory_space>) {
#if KOKKOS_VERSION >= 40000
    const Kokkos::Serial serial(Kokkos::NewInstance{});
#else
    const Kokkos::Serial serial;
#endif
    run_all(serial, "(Serial instance)");
#if KOKKOS_VERSION >= 40000
    expect_only_instance(serial);
#endif
  } else {
    GTEST_SKIP() << "kpmap's memory space is not host memory";
  }
}
#endif

}  // namespace
