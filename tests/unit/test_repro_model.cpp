// The reproducible model kernels (model/repro_model.hpp) against a serial host loop that folds
// the same terms row by row (the accumulator's sums are exact, so any thread count, work split or
// join order must give its bits exactly), and against a long double reference to rounding. Also:
// the model-parallel path (column windows, partial forward accumulators summed) and micro-batches
// give the one-pass bits, and both layouts of X agree. Run at one thread (test_repro_model) and at
// two (test_repro_model.threads2, OpenMP builds).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "kpmap/model/gradient_kernel.hpp"
#include "kpmap/model/repro_model.hpp"
#include "model_common.hpp"

namespace {

using kpmap::ReproducibleModel;
using kpmap::ReproGrid;
using kpmap::ReproGrids;
using kpmap::View1;
using kpmap::test::device_vector;
using kpmap::test::hashed;
using kpmap::test::to_host;

template <class T>
struct Problem {
  long long n, F;
  std::vector<double> x, y, w;  // rounded to T already
  double b;
  ReproGrids grids;

  Problem(long long rows, long long features, bool bias) : n(rows), F(features) {
    const auto round = [](std::vector<double> v) {
      for (double& e : v) e = static_cast<double>(static_cast<T>(e));
      return v;
    };
    x = round(hashed(n * F, 1));
    y = round(hashed(n, 2));
    w = round(hashed(F, 3));
    b = bias ? static_cast<double>(static_cast<T>(0.25)) : 0.0;
    // Generous bounds: |x|, |y|, |w|, |b| <= 1.
    EXPECT_TRUE(ReproGrid::make(F, 1.0, grids.forward));
    const double r = F + 2.0;
    EXPECT_TRUE(ReproGrid::make(n, r, grids.gradient));
    EXPECT_TRUE(ReproGrid::make(n, r, grids.residual));
    EXPECT_TRUE(ReproGrid::make(n, r * r, grids.loss));
  }

  template <class Layout>
  Kokkos::View<T**, Layout, kpmap::device_type> X() const {
    Kokkos::View<T**, Layout, kpmap::device_type> v("X", n, F);
    auto h = Kokkos::create_mirror_view(v);
    for (long long i = 0; i < n; ++i)
      for (long long j = 0; j < F; ++j) h(i, j) = static_cast<T>(x[i * F + j]);
    Kokkos::deep_copy(v, h);
    return v;
  }
  View1<T> bias_view() const {
    return device_vector<T>(b != 0 ? std::vector<double>{b} : std::vector<double>{});
  }
  std::size_t slots() const { return 3 * static_cast<std::size_t>(F + 2); }

  // The serial fold: rows in order, columns in order.
  std::vector<double> serial() const {
    std::vector<double> acc(slots(), 0.0);
    const std::size_t S = static_cast<std::size_t>(F + 2);
    for (long long i = 0; i < n; ++i) {
      double s1 = 0, s2 = 0, s3 = 0;
      for (long long j = 0; j < F; ++j)
        kpmap::repro_add_product<2>(grids.forward, x[i * F + j], w[j], s1, s2, s3);
      const double r = (kpmap::repro_value(s1, s2, s3) + b) - y[i];
      for (long long j = 0; j < F; ++j) {
        kpmap::repro_add_product(grids.gradient, r, x[i * F + j], acc[j], acc[S + j], acc[2 * S + j]);
      }
      kpmap::repro_add(grids.residual, r, acc[F], acc[S + F], acc[2 * S + F]);
      kpmap::repro_add_product(grids.loss, r, r, acc[F + 1], acc[S + F + 1], acc[2 * S + F + 1]);
    }
    return acc;
  }
};

// A problem's inputs on the device: X in both layouts, y, w and b.
template <class T>
struct DeviceInputs {
  Problem<T> p;
  Kokkos::View<T**, Kokkos::LayoutRight, kpmap::device_type> X = p.template X<Kokkos::LayoutRight>();
  Kokkos::View<T**, Kokkos::LayoutLeft, kpmap::device_type> XL = p.template X<Kokkos::LayoutLeft>();
  View1<T> y = device_vector<T>(p.y), w = device_vector<T>(p.w), b = p.bias_view();
};

std::vector<double> host(const View1<double>& v) {
  auto h = to_host(v);
  return std::vector<double>(h.data(), h.data() + h.extent(0));
}

void expect_bits(const std::vector<double>& got, const std::vector<double>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < got.size(); ++k) {
    EXPECT_EQ(std::memcmp(&got[k], &want[k], sizeof(double)), 0)
        << what << ", slot " << k << ": " << got[k] << " vs " << want[k];
  }
}

template <class T>
class ReproModel : public ::testing::Test {};
using Types = ::testing::Types<double, float>;
TYPED_TEST_SUITE(ReproModel, Types);

TYPED_TEST(ReproModel, ThreadedKernelEqualsTheSerialFold) {
  using T = TypeParam;
  if (!kpmap::host_execution_v) {
    // The fold below runs on the host, whose products are rounded before they are added, where
    // device code fuses them (core/repro_sum.hpp): the bits may differ between the two. On a
    // device the other tests compare the kernel with itself and with the long double reference.
    GTEST_SKIP() << "the serial fold is host code; device kernels fuse their products";
  }
  if (const char* expect = std::getenv("KPMAP_TEST_EXPECT_THREADS")) {
    ASSERT_EQ(kpmap::execution_space().concurrency(), std::atoi(expect))
        << "the threads2 run needs two threads";
  }
  const kpmap::execution_space exec;
  for (const bool bias : {true, false}) {
    for (const long long F : {1LL, 7LL, 33LL}) {
      Problem<T> p(301, F, bias);
      const auto X = p.template X<Kokkos::LayoutRight>();
      const auto y = device_vector<T>(p.y), w = device_vector<T>(p.w), b = p.bias_view();
      View1<double> acc("acc", p.slots());
      ReproducibleModel<T> model;
      model.fused(exec, X, y, w, b, p.grids, acc);
      expect_bits(host(acc), p.serial(), "fused");
    }
  }
}

TYPED_TEST(ReproModel, MicroBatchesColumnWindowsAndLayoutsGiveTheSameBits) {
  using T = TypeParam;
  const kpmap::execution_space exec;
  const DeviceInputs<T> inputs{Problem<T>(203, 13, true)};
  const auto& [p, X, XL, y, w, b] = inputs;
  ReproducibleModel<T> model;
  View1<double> one("one", p.slots());
  model.fused(exec, X, y, w, b, p.grids, one);
  const std::vector<double> want = host(one);

  // Micro-batches of 50, 1, 100 and 52 rows into one accumulator.
  View1<double> parts("parts", p.slots());
  for (const auto& [r0, r1] :
       std::vector<std::pair<long long, long long>>{{0, 50}, {50, 51}, {51, 151}, {151, 203}}) {
    const auto rows = Kokkos::make_pair(r0, r1);
    model.fused(exec, Kokkos::subview(X, rows, Kokkos::ALL), Kokkos::subview(y, rows), w, b, p.grids, parts);
  }
  expect_bits(host(parts), want, "micro-batches");

  // LayoutLeft (the kokkos_kernels setting's layout).
  View1<double> left("left", p.slots());
  model.fused(exec, XL, y, w, b, p.grids, left);
  expect_bits(host(left), want, "LayoutLeft");

  // Model-parallel: three column windows; the partial forward accumulators summed (as the psum
  // over `model` does), then each window's backward.
  const std::vector<std::pair<long long, long long>> windows{{0, 4}, {4, 5}, {5, 13}};
  const long long n = p.n;
  std::vector<double> zsum(3 * n, 0.0);
  for (const auto& [c0, c1] : windows) {
    View1<double> zacc("zacc", 3 * n);
    const auto cols = Kokkos::make_pair(c0, c1);
    model.forward_partial(exec, Kokkos::subview(X, Kokkos::ALL, cols), Kokkos::subview(w, cols),
                          p.grids.forward, zacc);
    const std::vector<double> part = host(zacc);
    for (long long k = 0; k < 3 * n; ++k) zsum[k] += part[k];
  }
  const View1<double> zacc = device_vector<double>(zsum);
  View1<double> z("z", n);
  ReproducibleModel<T>::z_from_partials(exec, zacc, z);
  const std::size_t S = static_cast<std::size_t>(p.F + 2);
  for (const auto& [c0, c1] : windows) {
    const long long width = c1 - c0;
    const std::size_t s = static_cast<std::size_t>(width + 2);
    View1<double> acc("acc", 3 * s);
    model.backward(exec, Kokkos::subview(X, Kokkos::ALL, Kokkos::make_pair(c0, c1)), z, y, b, p.grids, acc);
    const std::vector<double> got = host(acc);
    std::vector<double> expected;
    for (int level = 0; level < 3; ++level) {
      for (long long j = c0; j < c1; ++j) expected.push_back(want[level * S + j]);
      expected.push_back(want[level * S + p.F]);
      expected.push_back(want[level * S + p.F + 1]);
    }
    expect_bits(got, expected, "column window");
  }
}

// Device backends sum wide X in passes of columns (ReproducibleModel::columns_per_pass: a GPU's
// shared memory holds the sums of 56 columns per pass). The one-row kernel that passes run is
// also the host's kernel for LayoutLeft X, so this runs the passes on any backend, with widths
// that leave a partial last pass, against the one-pass bits of LayoutRight X.
TYPED_TEST(ReproModel, PassesOverColumnsGiveTheOnePassBits) {
  using T = TypeParam;
  const kpmap::execution_space exec;
  const DeviceInputs<T> inputs{Problem<T>(203, 13, true)};
  const auto& [p, X, XL, y, w, b] = inputs;
  ReproducibleModel<T> one_pass;
  one_pass.set_columns_per_pass(0);
  View1<double> one("one", p.slots());
  one_pass.fused(exec, X, y, w, b, p.grids, one);
  const std::vector<double> want = host(one);
  one_pass.fused(exec, X, y, w, b, p.grids, one);  // a second micro-batch adds to the same slots
  const std::vector<double> want_twice = host(one);
  EXPECT_EQ(ReproducibleModel<T>().columns_per_pass(), kpmap::host_execution_v ? 0 : 56);

  for (const long long columns : {1LL, 4LL, 12LL, 13LL, 56LL}) {
    ReproducibleModel<T> model;
    model.set_columns_per_pass(columns);
    View1<double> acc("acc", p.slots());
    model.fused(exec, XL, y, w, b, p.grids, acc);
    model.fused(exec, XL, y, w, b, p.grids, acc);
    expect_bits(host(acc), want_twice, ("passes of " + std::to_string(columns) + " columns").c_str());

    // Micro-batches of 50, 1 and 152 rows (the model's z grows from 50 rows to 152).
    View1<double> parts("parts", p.slots());
    for (const auto& [r0, r1] : std::vector<std::pair<long long, long long>>{{0, 50}, {50, 51}, {51, 203}}) {
      const auto rows = Kokkos::make_pair(r0, r1);
      const auto X_rows = Kokkos::subview(XL, rows, Kokkos::ALL);
      model.fused(exec, X_rows, Kokkos::subview(y, rows), w, b, p.grids, parts);
    }
    const std::string batches = "micro-batches, passes of " + std::to_string(columns) + " columns";
    expect_bits(host(parts), want, batches.c_str());

    // Model-parallel: backward from z over a window of columns, in passes.
    View1<double> z("z", p.n);
    {
      View1<double> zacc("zacc", 3 * p.n);
      model.forward_partial(exec, X, w, p.grids.forward, zacc);
      ReproducibleModel<T>::z_from_partials(exec, zacc, z);
    }
    View1<double> back("back", p.slots());
    model.backward(exec, XL, z, y, b, p.grids, back);
    expect_bits(host(back), want, ("backward, passes of " + std::to_string(columns) + " columns").c_str());
  }
}

TYPED_TEST(ReproModel, SumsMatchALongDoubleReference) {
  using T = TypeParam;
  const kpmap::execution_space exec;
  Problem<T> p(257, 20, true);
  const auto X = p.template X<Kokkos::LayoutRight>();
  ReproducibleModel<T> model;
  View1<double> acc("acc", p.slots());
  model.fused(exec, X, device_vector<T>(p.y), device_vector<T>(p.w), p.bias_view(), p.grids, acc);
  const std::vector<double> got = host(acc);
  const std::size_t S = static_cast<std::size_t>(p.F + 2);
  std::vector<long double> grad(p.F, 0), scale(p.F, 0);
  long double rsum = 0, loss = 0, rabs = 0;
  for (long long i = 0; i < p.n; ++i) {
    long double z = p.b;
    for (long long j = 0; j < p.F; ++j) z += static_cast<long double>(p.x[i * p.F + j]) * p.w[j];
    const long double r = z - p.y[i];
    for (long long j = 0; j < p.F; ++j) {
      grad[j] += r * p.x[i * p.F + j];
      scale[j] += std::fabs(r * p.x[i * p.F + j]);
    }
    rsum += r;
    rabs += std::fabs(r);
    loss += r * r;
  }
  const auto value = [&](std::size_t slot) {
    return kpmap::repro_value(got[slot], got[S + slot], got[2 * S + slot]);
  };
  for (long long j = 0; j < p.F; ++j) {
    EXPECT_NEAR(value(j), static_cast<double>(grad[j]), 1e-13 * static_cast<double>(scale[j]))
        << "column " << j;
  }
  EXPECT_NEAR(value(p.F), static_cast<double>(rsum), 1e-13 * static_cast<double>(rabs));
  EXPECT_NEAR(value(p.F + 1), static_cast<double>(loss), 1e-13 * static_cast<double>(loss));
}

TEST(ReproModelShapes, MismatchedViewsThrow) {
  const kpmap::execution_space exec;
  Problem<double> p(10, 4, true);
  const auto X = p.X<Kokkos::LayoutRight>();
  ReproducibleModel<double> model;
  View1<double> wrong("acc", 3);
  EXPECT_THROW(model.fused(exec, X, device_vector<double>(p.y), device_vector<double>(p.w), p.bias_view(),
                           p.grids, wrong),
               kpmap::ShapeError);
  View1<double> zacc("zacc", 10);  // 3 per row needed
  EXPECT_THROW(model.forward_partial(exec, X, device_vector<double>(p.w), p.grids.forward, zacc),
               kpmap::ShapeError);
}

}  // namespace
