// The model layer: the three gradient paths against a serial double reference, finite differences,
// the model-parallel split, accumulation, and convergence of plain gradient descent; 16-bit
// storage with float accumulation (LinearModel<bf16, float>, <fp16, float>).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <vector>

#include <KokkosBlas1_scal.hpp>

#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/data/shard.hpp"
#include "kpmap/model/linear_model.hpp"
#include "kpmap/optim/optimizer.hpp"
#include "model_common.hpp"

namespace {

using kpmap::GradientKernel;
using kpmap::View1;

constexpr GradientKernel kernels[] = {GradientKernel::fused, GradientKernel::kokkos_kernels, GradientKernel::team};

using kpmap::test::device_vector;
using kpmap::test::hashed;
using kpmap::test::to_host;

// The serial double reference: loss sum and gradient sums of the rows of X (host copy).
struct Reference {
  double loss = 0, grad_b = 0;
  std::vector<double> grad_w;
};

template <class HX, class HY>
Reference reference(const HX& X, const HY& y, const std::vector<double>& w, double b) {
  Reference ref;
  ref.grad_w.assign(X.extent(1), 0.0);
  for (std::size_t i = 0; i < X.extent(0); ++i) {
    double r = b - static_cast<double>(y(i));
    for (std::size_t j = 0; j < X.extent(1); ++j) r += static_cast<double>(X(i, j)) * w[j];
    ref.loss += r * r;
    ref.grad_b += 2 * r;
    for (std::size_t j = 0; j < X.extent(1); ++j) ref.grad_w[j] += 2 * r * static_cast<double>(X(i, j));
  }
  return ref;
}

template <class T>
double tolerance() {
  return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

// Compares device gradient sums (minus their starting values `start`) with the reference,
// relative to the size of the terms summed.
template <class T, class GW, class GB>
void expect_matches(const Reference& ref, double loss, const GW& grad_w, const GB& grad_b, double start,
                    double scale, const std::string& what) {
  // Rounding grows with the terms per sum: F + 1 per residual, n per gradient entry (scale).
  const double tol = tolerance<T>() * scale;
  EXPECT_NEAR(loss, ref.loss, tolerance<T>() * static_cast<double>(ref.grad_w.size() + 1) * ref.loss + 1e-300)
      << what;
  const auto gw = to_host(grad_w);
  for (std::size_t j = 0; j < ref.grad_w.size(); ++j) EXPECT_NEAR(gw(j) - start, ref.grad_w[j], tol) << what << " j " << j;
  if (grad_b.extent(0) > 0) {
    EXPECT_NEAR(to_host(grad_b)(0) - start, ref.grad_b, tol) << what;
  }
}

template <class T, class Layout>
void check_against_reference(long long n, long long F, bool bias) {
  kpmap::execution_space exec;
  const kpmap::SyntheticProblem p{n + 5, F, bias, 0.3, 5};
  // A batch of the shard with an offset: X is a row subview, as in the train loop.
  const auto shard = kpmap::make_shard<T, Layout>(exec, p, kpmap::make_batch_plan(n + 5, n, 0, 1), {0, F});
  const auto X = shard.batch_x(0);
  const auto y = shard.batch_y(0);
  const std::vector<double> w = hashed(F, 11);
  const double b = bias ? 0.375 : 0.0;
  const Reference ref = reference(to_host(X), to_host(y), w, b);
  const double scale = static_cast<double>(n) * static_cast<double>(F + 1);
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<T> model(kernel);
    View1<T> params = device_vector<T>([&] {
      auto v = w;
      if (bias) v.push_back(b);
      return v;
    }());
    View1<T> grads = device_vector<T>(std::vector<double>(params.extent(0), 0.5));  // += onto 0.5
    const auto [wv, bv] = kpmap::split_params(params, F);
    const auto [gw, gb] = kpmap::split_params(grads, F);
    const double loss = model.fused(exec, X, y, wv, bv, gw, gb);
    expect_matches<T>(ref, loss, gw, gb, 0.5, scale,
                      to_string(kernel) + " n " + std::to_string(n) + " F " + std::to_string(F));
  }
}

TEST(Gradient, EveryPathMatchesSerialReference) {
  const std::pair<long long, long long> shapes[] = {{1, 1}, {7, 3}, {33, 5}, {64, 17}, {101, 9}, {250, 33}, {97, 70}};
  for (auto [n, F] : shapes) {
    check_against_reference<double, Kokkos::LayoutRight>(n, F, true);
    check_against_reference<float, Kokkos::LayoutRight>(n, F, true);
    check_against_reference<double, Kokkos::LayoutLeft>(n, F, true);
    check_against_reference<float, Kokkos::LayoutLeft>(n, F, false);
    check_against_reference<double, Kokkos::LayoutRight>(n, F, false);
  }
}

TEST(Gradient, MatchesCentralFiniteDifferences) {
  kpmap::execution_space exec;
  const long long n = 40, F = 6;
  const auto s = kpmap::make_shard<double>(exec, {n, F, true, 0.2, 3}, kpmap::make_batch_plan(n, n, 0, 1), {0, F});
  std::vector<double> theta = hashed(F + 1, 12);  // [w, b]
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<double> model(kernel);
    auto mean_loss = [&](const std::vector<double>& t) {
      View1<double> params = device_vector<double>(t);
      View1<double> grads("g", F + 1);
      const auto [w, b] = kpmap::split_params(params, F);
      const auto [gw, gb] = kpmap::split_params(grads, F);
      return model.fused(exec, s.X, s.y, w, b, gw, gb) / n;
    };
    View1<double> params = device_vector<double>(theta);
    View1<double> grads("g", F + 1);
    const auto [w, b] = kpmap::split_params(params, F);
    const auto [gw, gb] = kpmap::split_params(grads, F);
    model.fused(exec, s.X, s.y, w, b, gw, gb);
    const auto g = to_host(grads);
    const double h = 1e-5;
    for (long long k = 0; k <= F; ++k) {
      auto plus = theta, minus = theta;
      plus[k] += h, minus[k] -= h;
      const double fd = (mean_loss(plus) - mean_loss(minus)) / (2 * h);
      EXPECT_NEAR(g(k) / n, fd, 1e-7 * std::max(1.0, std::abs(fd))) << to_string(kernel) << " k " << k;
    }
  }
}

// forward_partial per column block + host sum of z + backward per block == the unsplit result.
template <class T>
void check_model_split(int M) {
  kpmap::execution_space exec;
  const long long n = 37, F = 11;
  const auto s = kpmap::make_shard<T>(exec, {n, F, true, 0.1, 8}, kpmap::make_batch_plan(n, n, 0, 1), {0, F});
  const std::vector<double> w = hashed(F, 13);
  const double b = -0.625;
  const Reference ref = reference(to_host(s.X), to_host(s.y), w, b);
  View1<T> bias = device_vector<T>({b}), empty("empty", 0);
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<T> model(kernel);
    std::vector<double> z_sum(n, 0.0);
    for (int m = 0; m < M; ++m) {
      const kpmap::Range c = kpmap::column_range(F, m, M);
      const auto Xm = kpmap::make_shard<T>(exec, s.problem, s.plan, c).X;
      View1<T> wm = device_vector<T>(std::vector<double>(w.begin() + c.begin, w.begin() + c.end));
      View1<T> z("z", n);
      model.forward_partial(exec, Xm, wm, m == 0 ? bias : empty, z);  // b on model rank 0 only
      const auto zh = to_host(z);
      for (long long i = 0; i < n; ++i) z_sum[i] += zh(i);  // the psum over `model`
    }
    const View1<T> z = device_vector<T>(z_sum);
    std::vector<double> grad_w;
    for (int m = 0; m < M; ++m) {
      const kpmap::Range c = kpmap::column_range(F, m, M);
      const auto Xm = kpmap::make_shard<T>(exec, s.problem, s.plan, c).X;
      View1<T> gw("gw", c.size()), gb("gb", 1);
      const double loss = model.backward(exec, Xm, z, s.y, gw, gb);
      const double tol = tolerance<T>() * n * (F + 1);
      EXPECT_NEAR(loss, ref.loss, tolerance<T>() * (F + 1) * ref.loss) << to_string(kernel) << " M " << M;
      EXPECT_NEAR(to_host(gb)(0), ref.grad_b, tol) << to_string(kernel) << " M " << M;
      const auto g = to_host(gw);
      for (long long j = 0; j < c.size(); ++j) grad_w.push_back(g(j));
    }
    for (long long j = 0; j < F; ++j) EXPECT_NEAR(grad_w[j], ref.grad_w[j], tolerance<T>() * n * (F + 1)) << j;
  }
}

TEST(Gradient, ModelParallelSplitEqualsUnsplit) {
  for (int M : {1, 2, 3, 4}) {
    check_model_split<double>(M);
    check_model_split<float>(M);
  }
}

// backward/fused on two halves of a batch accumulate to the result on the whole batch.
TEST(Gradient, AccumulationOverMicroBatches) {
  kpmap::execution_space exec;
  const long long n = 50, F = 13;
  const auto s = kpmap::make_shard<double>(exec, {n, F, true, 0.1, 21}, kpmap::make_batch_plan(n, n, 0, 1), {0, F});
  View1<double> params = device_vector<double>(hashed(F + 1, 14));
  const auto [w, b] = kpmap::split_params(params, F);
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<double> model(kernel);
    View1<double> whole("whole", F + 1), parts("parts", F + 1);
    const auto [gw1, gb1] = kpmap::split_params(whole, F);
    const auto [gw2, gb2] = kpmap::split_params(parts, F);
    const double loss1 = model.fused(exec, s.X, s.y, w, b, gw1, gb1);
    const double loss2 = model.fused(exec, s.sub_x(0, 23), s.sub_y(0, 23), w, b, gw2, gb2) +
                         model.fused(exec, s.sub_x(23, 27), s.sub_y(23, 27), w, b, gw2, gb2);
    EXPECT_NEAR(loss1, loss2, 1e-12 * loss1);
    // The same through the two-phase path.
    View1<double> z("z", n), phased("phased", F + 1);
    const auto [gw3, gb3] = kpmap::split_params(phased, F);
    model.forward_partial(exec, s.X, w, b, z);
    const auto zs = [&](long long f, long long c) { return Kokkos::subview(z, Kokkos::make_pair(f, f + c)); };
    const double loss3 = model.backward(exec, s.sub_x(0, 23), zs(0, 23), s.sub_y(0, 23), gw3, gb3) +
                         model.backward(exec, s.sub_x(23, 27), zs(23, 27), s.sub_y(23, 27), gw3, gb3);
    EXPECT_NEAR(loss1, loss3, 1e-12 * loss1);
    const auto h1 = to_host(whole), h2 = to_host(parts), h3 = to_host(phased);
    for (long long j = 0; j <= F; ++j) {
      EXPECT_NEAR(h1(j), h2(j), 1e-12 * n) << to_string(kernel) << " j " << j;
      EXPECT_NEAR(h1(j), h3(j), 1e-12 * n) << to_string(kernel) << " j " << j;
    }
  }
}

// A data rank whose slice of the batch is empty (D > B) contributes zero sums.
TEST(Gradient, EmptySliceContributesNothing) {
  kpmap::execution_space exec;
  const auto s = kpmap::make_shard<double>(exec, {20, 5, true, 0.0, 4}, kpmap::make_batch_plan(20, 3, 0, 5), {0, 5});  // rows [0, 0)
  ASSERT_EQ(s.rows_per_batch(), 0);
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<double> model(kernel);
    View1<double> params = device_vector<double>(hashed(6, 15));
    View1<double> grads = device_vector<double>(std::vector<double>(6, 1.5));
    const auto [w, b] = kpmap::split_params(params, 5);
    const auto [gw, gb] = kpmap::split_params(grads, 5);
    EXPECT_EQ(model.fused(exec, s.batch_x(1), s.batch_y(1), w, b, gw, gb), 0.0);
    View1<double> z("z", 0);
    model.forward_partial(exec, s.batch_x(1), w, b, z);
    EXPECT_EQ(model.backward(exec, s.batch_x(1), z, s.batch_y(1), gw, gb), 0.0);
    const auto h = to_host(grads);
    for (int j = 0; j < 6; ++j) EXPECT_EQ(h(j), 1.5) << to_string(kernel);
  }
}

TEST(Gradient, ShapeMismatchIsShapeError) {
  kpmap::execution_space exec;
  kpmap::LinearModel<double> model(GradientKernel::fused);
  Kokkos::View<double**, kpmap::device_type> X("X", 4, 3);
  View1<double> y("y", 4), w("w", 2), b("b", 1), gw("gw", 3), gb("gb", 1);
  EXPECT_THROW(model.fused(exec, X, y, w, b, gw, gb), kpmap::ShapeError);
  EXPECT_EQ(kpmap::parse_gradient_kernel("kokkos_kernels"), GradientKernel::kokkos_kernels);
  EXPECT_EQ(kpmap::parse_gradient_kernel("team"), GradientKernel::team);
  for (GradientKernel kernel : kernels) EXPECT_EQ(kpmap::parse_gradient_kernel(to_string(kernel)), kernel);
  EXPECT_THROW(kpmap::parse_gradient_kernel("cublas"), kpmap::InputError);
}

// ---- Mixed precision: X, y, w, b in 16 bits, z, gradients and sums in float ----

// The double reference over the same 16-bit values, with the sums of |terms| that scale fp32's
// rounding: m_i = |b| + |y_i| + sum_j |x_ij w_j| bounds |r_i| and the error of its float sum.
struct MixedReference : Reference {
  double loss_terms = 0, grad_b_terms = 0;
  std::vector<double> grad_w_terms;
};

template <class HX, class HY>
MixedReference mixed_reference(const HX& X, const HY& y, const std::vector<double>& w, double b) {
  MixedReference ref;
  static_cast<Reference&>(ref) = reference(X, y, w, b);
  ref.grad_w_terms.assign(X.extent(1), 0.0);
  for (std::size_t i = 0; i < X.extent(0); ++i) {
    double m = std::abs(b) + std::abs(static_cast<double>(y(i)));
    for (std::size_t j = 0; j < X.extent(1); ++j) m += std::abs(static_cast<double>(X(i, j)) * w[j]);
    ref.loss_terms += 2 * m * m;
    ref.grad_b_terms += 2 * m;
    for (std::size_t j = 0; j < X.extent(1); ++j) ref.grad_w_terms[j] += 2 * m * std::abs(static_cast<double>(X(i, j)));
  }
  return ref;
}

// 64 units of fp32 roundoff (2^-24) per unit of sum|terms|: the sums here chain at most ~350
// float adds, whose rounding errors add up like a random walk (sqrt(350) ~ 19 units). One
// rounding to 16 bits anywhere (2^-9 bf16, 2^-12 fp16 relative) exceeds it by far.
constexpr double fp32_sum_tol = 64 * 0x1.0p-24;

// Gradient Views hold `start` + the sums (the model adds onto them).
template <class GW, class GB>
void expect_mixed(const MixedReference& ref, double loss, const GW& grad_w, const GB& grad_b, double start,
                  const std::string& what) {
  EXPECT_NEAR(loss, ref.loss, fp32_sum_tol * ref.loss_terms) << what;
  const auto gw = to_host(grad_w);
  for (std::size_t j = 0; j < ref.grad_w.size(); ++j) {
    EXPECT_NEAR(gw(j) - start, ref.grad_w[j], fp32_sum_tol * (ref.grad_w_terms[j] + start)) << what << " j " << j;
  }
  if (grad_b.extent(0) > 0) {
    EXPECT_NEAR(to_host(grad_b)(0) - start, ref.grad_b, fp32_sum_tol * (ref.grad_b_terms + start)) << what;
  }
}

// hashed values rounded to S, so the reference sees exactly what the model reads.
template <class S>
std::vector<double> rounded(std::vector<double> v) {
  for (double& x : v) x = static_cast<double>(S(x));
  return v;
}

template <class S, class Layout>
std::string mixed_name(GradientKernel kernel, long long n, long long F) {
  return std::string(std::is_same_v<S, kpmap::bf16> ? "bf16 " : "fp16 ") +
         (std::is_same_v<Layout, Kokkos::LayoutRight> ? "LayoutRight " : "LayoutLeft ") + to_string(kernel) +
         " n " + std::to_string(n) + " F " + std::to_string(F);
}

// Batch 1 of two: X is a row subview at an offset, as in the train loop.
template <class S, class Layout>
kpmap::Shard<S, Layout> mixed_shard(long long n, long long F, std::uint64_t seed) {
  const kpmap::SyntheticProblem p{2 * n + 3, F, true, 0.3, seed};
  return kpmap::make_shard<S, Layout>(kpmap::execution_space(), p, kpmap::make_batch_plan(2 * n + 3, n, 0, 1), {0, F});
}

template <class S, class Layout>
void check_mixed_fused(long long n, long long F, bool bias) {
  kpmap::execution_space exec;
  const auto shard = mixed_shard<S, Layout>(n, F, 6);
  const auto X = shard.batch_x(1);
  const auto y = shard.batch_y(1);
  std::vector<double> theta = rounded<S>(hashed(F, 11));
  if (bias) theta.push_back(static_cast<double>(S(-0.3)));
  const MixedReference ref = mixed_reference(to_host(X), to_host(y), theta, bias ? theta.back() : 0.0);
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<S, float> model(kernel);
    const View1<S> params = device_vector<S>(theta);
    const View1<float> grads = device_vector<float>(std::vector<double>(theta.size(), 0.5));  // += onto 0.5
    const auto [w, b] = kpmap::split_params(params, F);
    const auto [gw, gb] = kpmap::split_params(grads, F);
    const double loss = model.fused(exec, X, y, w, b, gw, gb);
    expect_mixed(ref, loss, gw, gb, 0.5, mixed_name<S, Layout>(kernel, n, F) + (bias ? " bias" : " no bias"));
  }
}

// F not a multiple of the SIMD width (16 floats) and n not a multiple of the block (8 rows).
constexpr std::pair<long long, long long> mixed_shapes[] = {{1, 1},  {7, 3},   {33, 5},  {64, 17}, {101, 9},
                                                           {250, 33}, {97, 70}, {40, 64}, {19, 261}};

template <class S>
void check_mixed_fused_all() {
  for (auto [n, F] : mixed_shapes) {
    for (bool bias : {true, false}) {
      check_mixed_fused<S, Kokkos::LayoutRight>(n, F, bias);
      check_mixed_fused<S, Kokkos::LayoutLeft>(n, F, bias);
    }
  }
}

TEST(MixedPrecision, Bf16FusedMatchesReferenceOverTheRoundedValues) { check_mixed_fused_all<kpmap::bf16>(); }
TEST(MixedPrecision, Fp16FusedMatchesReferenceOverTheRoundedValues) { check_mixed_fused_all<kpmap::fp16>(); }

// forward_partial per column block (float z), the psum of z over `model` in float, backward per
// block: the same sums as the reference, on every block.
template <class S, class Layout>
void check_mixed_split(long long n, long long F, int M) {
  kpmap::execution_space exec;
  const auto shard = mixed_shard<S, Layout>(n, F, 9);
  const std::vector<double> w = rounded<S>(hashed(F, 13));
  const double b = static_cast<double>(S(0.625));
  const MixedReference ref = mixed_reference(to_host(shard.batch_x(1)), to_host(shard.batch_y(1)), w, b);
  const View1<S> bias = device_vector<S>({b}), empty("empty", 0);
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<S, float> model(kernel);
    std::vector<double> z_sum(n, 0.0);
    for (int m = 0; m < M; ++m) {
      const kpmap::Range c = kpmap::column_range(F, m, M);
      const auto Xm = kpmap::make_shard<S, Layout>(exec, shard.problem, shard.plan, c).batch_x(1);
      const View1<float> z("z", n);
      model.forward_partial(exec, Xm, device_vector<S>({w.begin() + c.begin, w.begin() + c.end}), m == 0 ? bias : empty, z);
      const auto zh = to_host(z);
      for (long long i = 0; i < n; ++i) z_sum[i] += zh(i);
    }
    const View1<float> z = device_vector<float>(z_sum);
    std::vector<double> grad_w;
    for (int m = 0; m < M; ++m) {
      const kpmap::Range c = kpmap::column_range(F, m, M);
      const auto Xm = kpmap::make_shard<S, Layout>(exec, shard.problem, shard.plan, c).batch_x(1);
      const View1<float> gw("gw", c.size()), gb("gb", 1);
      const double loss = model.backward(exec, Xm, z, shard.batch_y(1), gw, gb);
      const std::string what = mixed_name<S, Layout>(kernel, n, F) + " M " + std::to_string(M) + " block " + std::to_string(m);
      EXPECT_NEAR(loss, ref.loss, fp32_sum_tol * ref.loss_terms) << what;
      EXPECT_NEAR(to_host(gb)(0), ref.grad_b, fp32_sum_tol * ref.grad_b_terms) << what;
      const auto g = to_host(gw);
      for (long long j = 0; j < c.size(); ++j) grad_w.push_back(g(j));
    }
    for (long long j = 0; j < F; ++j) {
      EXPECT_NEAR(grad_w[j], ref.grad_w[j], fp32_sum_tol * ref.grad_w_terms[j]) << mixed_name<S, Layout>(kernel, n, F) << " j " << j;
    }
  }
}

template <class S>
void check_mixed_split_all() {
  for (int M : {1, 2, 3}) {
    check_mixed_split<S, Kokkos::LayoutRight>(37, 11, M);
    check_mixed_split<S, Kokkos::LayoutLeft>(37, 11, M);
    check_mixed_split<S, Kokkos::LayoutRight>(101, 70, M);
    check_mixed_split<S, Kokkos::LayoutLeft>(101, 70, M);
  }
}

TEST(MixedPrecision, Bf16ModelParallelSplitMatchesReference) { check_mixed_split_all<kpmap::bf16>(); }
TEST(MixedPrecision, Fp16ModelParallelSplitMatchesReference) { check_mixed_split_all<kpmap::fp16>(); }

// An empty slice (D > B) with 16-bit storage: no sums, gradients untouched, both paths.
TEST(MixedPrecision, EmptySliceContributesNothing) {
  kpmap::execution_space exec;
  const auto s = kpmap::make_shard<kpmap::bf16, Kokkos::LayoutLeft>(exec, {20, 5, true, 0.0, 4},
                                                                   kpmap::make_batch_plan(20, 3, 0, 5), {0, 5});
  for (GradientKernel kernel : kernels) {
    kpmap::LinearModel<kpmap::bf16, float> model(kernel);
    const View1<kpmap::bf16> params = device_vector<kpmap::bf16>(hashed(6, 15));
    const View1<float> grads = device_vector<float>(std::vector<double>(6, 1.5));
    const auto [w, b] = kpmap::split_params(params, 5);
    const auto [gw, gb] = kpmap::split_params(grads, 5);
    EXPECT_EQ(model.fused(exec, s.batch_x(1), s.batch_y(1), w, b, gw, gb), 0.0);
    const View1<float> z("z", 0);
    model.forward_partial(exec, s.batch_x(1), w, b, z);
    EXPECT_EQ(model.backward(exec, s.batch_x(1), z, s.batch_y(1), gw, gb), 0.0);
    const auto h = to_host(grads);
    for (int j = 0; j < 6; ++j) EXPECT_EQ(h(j), 1.5f) << to_string(kernel);
  }
}

// Mini-batch gradient descent with the model and the SGD optimizer on a noise-free fp64 problem
// reaches w* and b* to 1e-8 relative (the convergence requirement, at the model level).
TEST(Convergence, NoiseFreeGradientDescentReachesTrueWeights) {
  kpmap::execution_space exec;
  const long long samples = 512, F = 8, B = 128;
  const kpmap::SyntheticProblem p{samples, F, true, 0.0, 77};
  for (GradientKernel kernel : kernels) {
    const auto s = kpmap::make_shard<double>(exec, p, kpmap::make_batch_plan(samples, B, 0, 1), {0, F});
    kpmap::LinearModel<double> model(kernel);
    View1<double> params("params", F + 1), grads("grads", F + 1);
    const auto [w, b] = kpmap::split_params(params, F);
    const auto [gw, gb] = kpmap::split_params(grads, F);
    auto sgd = kpmap::make_optimizer<double>({"sgd", 0.4}, F + 1);
    for (long long step = 0; step < 600; ++step) {
      const long long k = s.plan.batch_of_step(step);
      Kokkos::deep_copy(grads, 0.0);
      model.fused(exec, s.batch_x(k), s.batch_y(k), w, b, gw, gb);
      KokkosBlas::scal(grads, 1.0 / B, grads);  // sums -> mean
      sgd->apply(exec, step, params, grads);
    }
    std::vector<double> truth = kpmap::true_weights(p, 0, F);
    truth.push_back(kpmap::true_bias(p));
    const auto h = to_host(params);
    double err = 0, norm = 0;
    for (long long j = 0; j <= F; ++j) err += (h(j) - truth[j]) * (h(j) - truth[j]), norm += truth[j] * truth[j];
    EXPECT_LT(std::sqrt(err / norm), 1e-8) << to_string(kernel);
  }
}

}  // namespace
