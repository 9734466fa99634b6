// The non-blocking collectives ipsum, ipsum_scatter and iall_gather (kpmap::Request): results
// equal to closed forms over the ranks, on LayoutLeft Views that need packing and unpacking, for
// the 16-bit types too (their user-defined MPI ops inside MPI_Iallreduce and
// MPI_Ireduce_scatter_block); two requests in flight on one axis completed in either order
// (also a different order on different ranks); a test() loop with kernels running meanwhile; a
// progress() loop, which leaves the completion to wait();
// completion by the destructor and by move assignment; wait_all; Requests holding the caller's
// Views; and the argument errors, which are the blocking forms' and leave nothing started. About
// 35 collective calls per rank.
#include <utility>
#include <vector>

#include "test_collectives_common.hpp"

namespace {

using namespace kct;

// value<T>(q, l) = 1 + l + c q, so its sum over the ranks q = 0..n-1 of the one-axis mesh is
// n (1 + l) + c n (n - 1) / 2 (c as in test_collectives_common.hpp).
template <class T>
double sum_over_ranks(int n, std::int64_t l) {
  const double c = is_16bit_v<T> ? 16.0 : 1000.0;
  return n * (1.0 + static_cast<double>(l)) + c * n * (n - 1) / 2.0;
}

// A kernel that runs while a request is in flight (a free function: CUDA's extended lambdas may
// not sit in TestBody, which gtest declares private).
void add_one(const kpmap::View1<int>& counter) {
  Kokkos::parallel_for(
      "test::add_one", Kokkos::RangePolicy<kpmap::execution_space>(0, 1),
      KOKKOS_LAMBDA(int) { counter(0) += 1; });
}

int host_value(const kpmap::View1<int>& v) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  return h(0);
}

class OneAxis : public ::testing::Test {
 protected:
  int n = world_size();
  int rank = world_rank();  // my axis index on the one-axis mesh
  kpmap::Mesh mesh{MPI_COMM_WORLD, {{"i", -1}}};
};

template <class T>
class Ipsum : public OneAxis {};

using ElementTypes = ::testing::Types<double, float, std::int32_t, kpmap::bf16, kpmap::fp16>;
TYPED_TEST_SUITE(Ipsum, ElementTypes);

// Out of place and in place on LayoutLeft [3, 4] Views: packed before the call, unpacked at
// wait(). 12 elements keep the 16-bit sums exact. 2 calls.
TYPED_TEST(Ipsum, ClosedFormInPlaceAndOutOfPlaceOnLayoutLeft) {
  using T = TypeParam;
  const int n = this->n, rank = this->rank;
  const auto expected = [&](const Index& i) { return sum_over_ranks<T>(n, i[0] * 4 + i[1]); };
  auto in = make<LView<T, 2>>({3, 4});
  auto out = make<LView<T, 2>>({3, 4});
  fill_rank(in, rank);
  fill(out, [](const Index&) { return -1.0; });
  kpmap::Request r = kpmap::ipsum(this->mesh, "i", in, out);
  EXPECT_FALSE(r.done()) << "done() before test() or wait()";
  r.wait();
  EXPECT_TRUE(r.done());
  r.wait();  // idempotent: nothing runs twice
  EXPECT_TRUE(r.test());
  expect_all(out, expected, "ipsum out of place");
  expect_all(in, [&](const Index& i) { return value<T>(rank, i[0] * 4 + i[1]); },
             "ipsum leaves its input alone");

  auto x = make<LView<T, 2>>({3, 4});
  fill_rank(x, rank);
  kpmap::Request rx = kpmap::ipsum(this->mesh, "i", x, x);
  rx.wait();
  expect_all(x, expected, "ipsum in place (MPI_IN_PLACE)");
}

// Over each axis of a two-axis mesh (sub-communicators); the expected sums are over the group's
// world ranks. 1 call per mesh.
TEST(TwoAxes, IpsumOverATuple) {
  const int rank = world_rank();
  for (const auto& spec : two_axis_meshes()) {
    kpmap::Mesh mesh(MPI_COMM_WORLD, spec);
    const std::vector<std::string> names{"model", "data"};
    const Group g = group_of(spec, names, rank);
    auto x = make<RView<double, 1>>({5});
    fill_rank(x, rank);
    kpmap::Request r = kpmap::ipsum(mesh, kpmap::AxisNames(names), x, x);
    r.wait();
    expect_all(x,
               [&](const Index& i) {
                 double s = 0;
                 for (int q : g.members) s += value<double>(q, i[0]);
                 return s;
               },
               describe(spec) + "ipsum over (model, data)");
  }
}

// Untiled [n, 3] -> [3]; tiled along dimension 1 of [2, 2n] -> [2, 2] (outer 2: the blocks are
// swapped before the call); bf16 through MPI_Ireduce_scatter_block's user op. 3 calls.
TEST_F(OneAxis, IpsumScatterTiledAndUntiled) {
  auto y = make<RView<double, 2>>({n, 3});
  auto s = make<RView<double, 1>>({3});
  fill_rank(y, rank);
  kpmap::Request r1 = kpmap::ipsum_scatter(mesh, "i", y, s, 0);

  auto z = make<LView<double, 2>>({2, 2 * n});
  auto t = make<LView<double, 2>>({2, 2});
  fill_rank(z, rank);
  kpmap::Request r2 = kpmap::ipsum_scatter(mesh, "i", z, t, 1, true);

  auto h = make<RView<kpmap::bf16, 2>>({n, 2});
  auto hs = make<RView<kpmap::bf16, 1>>({2});
  fill_rank(h, rank);
  kpmap::Request r3 = kpmap::ipsum_scatter(mesh, "i", h, hs, 0, false);

  r1.wait();
  r2.wait();
  r3.wait();
  // Row `rank` of everybody's y (untiled), columns [2 rank, 2 rank + 2) of z (tiled).
  expect_all(s, [&](const Index& i) { return sum_over_ranks<double>(n, rank * 3 + i[0]); },
             "ipsum_scatter untiled");
  expect_all(t,
             [&](const Index& i) {
               return sum_over_ranks<double>(n, i[0] * 2 * n + 2 * rank + i[1]);
             },
             "ipsum_scatter tiled along dimension 1");
  expect_all(hs, [&](const Index& i) { return sum_over_ranks<kpmap::bf16>(n, rank * 2 + i[0]); },
             "ipsum_scatter of bf16");
}

// Tiled along dimension 0 (straight into the output) and along dimension 1 of a LayoutLeft
// output (the block swap and the unpack run at wait()). 2 calls.
TEST_F(OneAxis, IallGatherTiled) {
  auto x = make<RView<double, 2>>({2, 3});
  fill_rank(x, rank);
  auto rows = make<RView<double, 2>>({2 * n, 3});
  auto cols = make<LView<double, 2>>({2, 3 * n});
  kpmap::Request r1 = kpmap::iall_gather(mesh, "i", x, rows, 0, true);
  kpmap::Request r2 = kpmap::iall_gather(mesh, "i", x, cols, 1, true);
  r2.wait();
  r1.wait();
  // Output element (a, b) comes from rank a / 2 (rows) or b / 3 (cols), at its input position.
  expect_all(rows, [](const Index& i) { return value<double>(i[0] / 2, (i[0] % 2) * 3 + i[1]); },
             "iall_gather tiled along 0");
  expect_all(cols, [](const Index& i) { return value<double>(i[1] / 3, i[0] * 3 + i[1] % 3); },
             "iall_gather tiled along 1");
}

// Two requests in flight on one axis: completed in start order, in reverse order, and in an
// order that differs between even and odd ranks (MPI orders the starts, not the completions).
// 6 calls.
TEST_F(OneAxis, TwoInFlightCompleteInAnyOrder) {
  for (int round = 0; round < 3; ++round) {
    auto a = make<RView<std::int64_t, 1>>({4});
    auto sum = make<RView<std::int64_t, 1>>({4});
    auto b = make<LView<float, 2>>({2, 2});
    auto gathered = make<LView<float, 3>>({2, n, 2});
    fill_rank(a, rank);
    fill_rank(b, rank);
    kpmap::Request r1 = kpmap::ipsum(mesh, "i", a, sum);
    kpmap::Request r2 = kpmap::iall_gather(mesh, "i", b, gathered, 1, false);
    const bool reverse = round == 1 || (round == 2 && rank % 2 == 1);
    if (reverse) {
      r2.wait();
      EXPECT_FALSE(r1.done());
      r1.wait();
    } else {
      r1.wait();
      r2.wait();
    }
    const std::string what = " (round " + std::to_string(round) + ")";
    expect_all(sum, [&](const Index& i) { return sum_over_ranks<std::int64_t>(n, i[0]); },
               "ipsum" + what);
    expect_all(gathered, [](const Index& i) { return value<float>(i[1], i[0] * 2 + i[2]); },
               "iall_gather untiled" + what);
  }
}

// Polling with test() while kernels run: completes, and the result is in place when test()
// first returns true. 1 call.
TEST_F(OneAxis, TestLoopCompletesWhileKernelsRun) {
  auto x = make<LView<double, 2>>({2, 3});
  auto y = make<LView<double, 2>>({2, 3});
  fill_rank(x, rank);
  kpmap::View1<int> counter("counter", 1);
  kpmap::Request r = kpmap::ipsum(mesh, "i", x, y);
  int polls = 0;
  const double start = MPI_Wtime();
  bool complete = false;
  while (!(complete = r.test()) && MPI_Wtime() - start < 60.0) {
    add_one(counter);
    ++polls;
  }
  ASSERT_TRUE(complete) << "test() did not complete the request in 60 s (" << polls << " polls)";
  EXPECT_TRUE(r.done());
  EXPECT_TRUE(r.test());
  EXPECT_EQ(host_value(counter), polls);
  expect_all(y, [&](const Index& i) { return sum_over_ranks<double>(n, i[0] * 3 + i[1]); },
             "ipsum completed by test()");
}

// progress() only calls MPI: once it returns true MPI has finished, but the completion work (the
// unpack into the LayoutLeft output) waits for wait(), so the output still holds what it held and
// the request is not done. 1 call.
TEST_F(OneAxis, ProgressLeavesTheCompletionToWait) {
  auto x = make<LView<double, 2>>({2, 3});
  auto y = make<LView<double, 2>>({2, 3});
  fill_rank(x, rank);
  fill(y, [](const Index&) { return -1.0; });
  kpmap::Request r = kpmap::ipsum(mesh, "i", x, y);
  const double start = MPI_Wtime();
  bool finished = false;
  while (!(finished = r.progress()) && MPI_Wtime() - start < 60.0) {
  }
  ASSERT_TRUE(finished) << "progress() did not see MPI finish in 60 s";
  EXPECT_FALSE(r.done()) << "progress() ran the completion work";
  expect_all(y, [](const Index&) { return -1.0; }, "the output before wait()");
  r.wait();
  EXPECT_TRUE(r.done());
  expect_all(y, [&](const Index& i) { return sum_over_ranks<double>(n, i[0] * 3 + i[1]); },
             "ipsum completed by wait() after progress()");
}

// A request nobody waits on is completed by its destructor (LayoutLeft output: the unpack runs
// there too); move assignment completes the request it replaces; a moved-from request is empty.
// 3 calls.
TEST_F(OneAxis, DestructorAndMoveAssignmentComplete) {
  auto x = make<RView<float, 2>>({2, 3});
  auto y = make<LView<float, 2>>({2, 3});
  fill_rank(x, rank);
  { kpmap::Request r = kpmap::ipsum(mesh, "i", x, y); }
  expect_all(y, [&](const Index& i) { return sum_over_ranks<float>(n, i[0] * 3 + i[1]); },
             "ipsum completed by the destructor");

  auto p = make<RView<std::int32_t, 1>>({3});
  auto q = make<RView<std::int32_t, 1>>({3});
  fill_rank(p, rank);
  fill_rank(q, rank);
  kpmap::Request r = kpmap::ipsum(mesh, "i", p, p);
  r = kpmap::ipsum(mesh, "i", q, q);  // p's request completes here
  expect_all(p, [&](const Index& i) { return sum_over_ranks<std::int32_t>(n, i[0]); },
             "the request replaced by move assignment");
  kpmap::Request moved = std::move(r);
  EXPECT_TRUE(r.done()) << "a moved-from request is empty";  // NOLINT(bugprone-use-after-move)
  EXPECT_FALSE(moved.done());
  moved.wait();
  expect_all(q, [&](const Index& i) { return sum_over_ranks<std::int32_t>(n, i[0]); },
             "the request after a move");
  kpmap::Request empty;
  EXPECT_TRUE(empty.done());
  EXPECT_TRUE(empty.test());
  empty.wait();
}

// wait_all over three kinds of request. 3 calls.
TEST_F(OneAxis, WaitAll) {
  auto a = make<RView<double, 1>>({3});
  auto b = make<RView<double, 2>>({n, 2});
  auto bs = make<RView<double, 1>>({2});
  auto c = make<RView<double, 1>>({3});
  auto g = make<RView<double, 2>>({n, 3});
  fill_rank(a, rank);
  fill_rank(b, rank);
  fill_rank(c, rank);
  std::vector<kpmap::Request> requests;
  requests.push_back(kpmap::ipsum(mesh, "i", a, a));
  requests.push_back(kpmap::ipsum_scatter(mesh, "i", b, bs, 0));
  requests.push_back(kpmap::iall_gather(mesh, "i", c, g, 0));
  for (const auto& r : requests) EXPECT_FALSE(r.done());
  kpmap::wait_all(requests);
  for (const auto& r : requests) EXPECT_TRUE(r.done());
  expect_all(a, [&](const Index& i) { return sum_over_ranks<double>(n, i[0]); }, "ipsum");
  expect_all(bs, [&](const Index& i) { return sum_over_ranks<double>(n, rank * 2 + i[0]); },
             "ipsum_scatter");
  expect_all(g, [](const Index& i) { return value<double>(i[0], i[1]); }, "iall_gather");
}

// A Request holds the caller's Views until it completes, since MPI reads and writes their
// memory directly (contiguous host Views): the caller may drop its own handles before wait().
// Blocking collectives hold none after they return. 4 calls.
TEST_F(OneAxis, RequestsHoldTheCallersViews) {
  auto g = make<RView<double, 2>>({n, 3});
  auto bs = make<RView<double, 1>>({2});
  std::vector<kpmap::Request> requests;
  {
    auto a = make<RView<double, 1>>({3});
    auto sum = make<RView<double, 1>>({3});
    auto b = make<RView<double, 2>>({n, 2});
    auto c = make<RView<double, 1>>({3});
    fill_rank(a, rank);
    fill_rank(b, rank);
    fill_rank(c, rank);
    kpmap::psum(mesh, "i", a, sum);
    EXPECT_EQ(a.use_count(), 1);
    EXPECT_EQ(sum.use_count(), 1);
    requests.push_back(kpmap::ipsum(mesh, "i", a, a));
    requests.push_back(kpmap::ipsum_scatter(mesh, "i", b, bs, 0));
    requests.push_back(kpmap::iall_gather(mesh, "i", c, g, 0));
    EXPECT_EQ(a.use_count(), 3) << "ipsum in place: its input and output are the caller's View";
    EXPECT_EQ(b.use_count(), 2);
    EXPECT_EQ(c.use_count(), 2);
  }
  EXPECT_EQ(bs.use_count(), 2);
  EXPECT_EQ(g.use_count(), 2);
  kpmap::wait_all(requests);
  EXPECT_EQ(bs.use_count(), 1) << "released at completion";
  EXPECT_EQ(g.use_count(), 1);
  expect_all(bs, [&](const Index& i) { return sum_over_ranks<double>(n, rank * 2 + i[0]); },
             "ipsum_scatter of a dropped input");
  expect_all(g, [](const Index& i) { return value<double>(i[0], i[1]); },
             "iall_gather of a dropped input");
}

// Wrong arguments throw the blocking form's exception, word for word, before anything is
// started: the wrongly shaped output (as many elements as the right one, so a started
// MPI_Iallreduce would fill it) is still untouched after a later ipsum on the axis has driven
// MPI's progress and completed. 1 call.
TEST_F(OneAxis, ErrorsAreTheBlockingFormsAndStartNothing) {
  auto in = make<RView<double, 2>>({2, 3});
  auto wrong = make<RView<double, 2>>({3, 2});
  fill_rank(in, rank);
  fill(wrong, [](const Index&) { return -7.0; });
  const std::string psum = shape_error([&] { kpmap::psum(mesh, "i", in, wrong); });
  EXPECT_EQ(psum, "psum over 'i' (size " + std::to_string(n) +
                      "): input shape [2, 3]: output View has shape [3, 2], expected [2, 3]");
  EXPECT_EQ(shape_error([&] { kpmap::Request r = kpmap::ipsum(mesh, "i", in, wrong); }), psum);

  auto y = make<RView<double, 2>>({n, 2});
  auto scattered = make<RView<double, 1>>({3});
  const std::string scatter =
      shape_error([&] { kpmap::psum_scatter(mesh, "i", y, scattered, 0, false); });
  EXPECT_NE(scatter.find("psum_scatter over 'i'"), std::string::npos) << scatter;
  EXPECT_NE(scatter.find("output View has shape [3], expected [2]"), std::string::npos) << scatter;
  EXPECT_EQ(
      shape_error([&] { kpmap::Request r = kpmap::ipsum_scatter(mesh, "i", y, scattered, 0); }),
      scatter);
  // A broken shape rule (2n + 1 not divisible by n, tiled; at np 1 the output shape instead).
  auto odd = make<RView<double, 1>>({2 * n + 1});
  auto odd_out = make<RView<double, 1>>({2});
  const std::string rule =
      shape_error([&] { kpmap::psum_scatter(mesh, "i", odd, odd_out, 0, true); });
  EXPECT_EQ(shape_error([&] {
              kpmap::Request r = kpmap::ipsum_scatter(mesh, "i", odd, odd_out, 0, true);
            }),
            rule);

  auto gathered = make<RView<double, 2>>({2, 3 * n + 1});
  const std::string gather =
      shape_error([&] { kpmap::all_gather(mesh, "i", in, gathered, 1, true); });
  EXPECT_NE(gather.find("all_gather over 'i'"), std::string::npos) << gather;
  EXPECT_EQ(
      shape_error([&] { kpmap::Request r = kpmap::iall_gather(mesh, "i", in, gathered, 1, true); }),
      gather);

  try {
    kpmap::Request r = kpmap::ipsum(mesh, "modle", in, in);
    ADD_FAILURE() << "no InputError";
  } catch (const kpmap::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'modle'"), std::string::npos) << e.what();
  }

  auto out = make<RView<double, 2>>({2, 3});
  kpmap::Request r = kpmap::ipsum(mesh, "i", in, out);
  r.wait();
  expect_all(out, [&](const Index& i) { return sum_over_ranks<double>(n, i[0] * 3 + i[1]); },
             "ipsum after the refused calls");
  expect_all(wrong, [](const Index&) { return -7.0; }, "the output of the refused ipsum");
}

}  // namespace
