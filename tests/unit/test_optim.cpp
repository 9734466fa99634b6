// Optimizers against updates computed by hand (values exact in binary where possible).
#include <gtest/gtest.h>

#include <Kokkos_Core.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "kpmap/core/error.hpp"
#include "kpmap/optim/optimizer.hpp"
#include "support/host_copy.hpp"

namespace {

using kpmap::OptimizerSpec;
using kpmap::View1;
using kpmap::test::device_vector;
using Rows = std::vector<std::vector<double>>;

template <class T>
void expect_values(const View1<T>& v, const std::vector<double>& expected, double tol, const std::string& what) {
  const auto h = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), v);
  ASSERT_EQ(h.extent(0), expected.size()) << what;
  for (std::size_t i = 0; i < expected.size(); ++i) EXPECT_NEAR(h(i), expected[i], tol) << what << " [" << i << "]";
}

// A gradient that is not a View: g(i) = twice(i) / 2, computed as the kernel reads it (as the
// trainer's optimizer reads the reduced wire, train/step_comm.hpp).
template <class T>
struct Halved {
  View1<const T> twice;
  long long size() const { return static_cast<long long>(twice.extent(0)); }
  KOKKOS_INLINE_FUNCTION T operator()(long long i) const { return twice(i) / 2; }
};

// Runs `grads.size()` steps from w0 and checks the parameters after each against `expected`;
// the gradient a View, or with `halved` a Halved of twice its values.
template <class T>
std::unique_ptr<kpmap::Optimizer<T>> run(const OptimizerSpec& spec, const std::vector<double>& w0, const Rows& grads,
                                         const Rows& expected, double tol, bool halved = false) {
  kpmap::execution_space exec;
  auto opt = kpmap::make_optimizer<T>(spec, static_cast<long long>(w0.size()));
  View1<T> w = device_vector<T>(w0);
  for (std::size_t s = 0; s < grads.size(); ++s) {
    if (halved) {
      std::vector<double> twice = grads[s];
      for (double& x : twice) x *= 2;
      opt->apply(exec, static_cast<long long>(s), w, Halved<T>{device_vector<T>(twice)});
    } else {
      opt->apply(exec, static_cast<long long>(s), w, device_vector<T>(grads[s]));
    }
    exec.fence();
    expect_values(w, expected[s], tol, spec.name + " step " + std::to_string(s));
  }
  return opt;
}

const std::vector<double> w0 = {1, -2, 0.25};
const Rows g = {{1, 2, -4}, {0.5, -1, 2}, {-2, 0, 1}};

template <class T>
void sgd_and_momentum(bool halved = false) {
  // w -= 0.5 g
  auto sgd = run<T>({"sgd", 0.5}, w0, g, {{0.5, -3, 2.25}, {0.25, -2.5, 1.25}, {1.25, -2.5, 0.75}}, 0.0, halved);
  EXPECT_TRUE(sgd->state().empty());
  EXPECT_EQ(sgd->state_bytes(), 0u);
  // v = 0.5 v + g; w -= 0.25 v:  v1 = g1, v2 = (1, 0, 0), v3 = (-1.5, 0, 1)
  OptimizerSpec momentum{"momentum", 0.25};
  momentum.momentum = 0.5;
  auto m = run<T>(momentum, w0, g, {{0.75, -2.5, 1.25}, {0.5, -2.5, 1.25}, {0.875, -2.5, 1.0}}, 0.0, halved);
  ASSERT_EQ(m->state().size(), 1u);
  expect_values(m->state()[0], {-1.5, 0, 1}, 0.0, "momentum v");
  EXPECT_EQ(m->state_bytes(), 3 * sizeof(T));
}

TEST(Optimizer, SgdAndMomentumDouble) { sgd_and_momentum<double>(); }
TEST(Optimizer, SgdAndMomentumFloat) { sgd_and_momentum<float>(); }

template <class T>
void adam(double tol, bool halved = false) {
  // Constant gradient: the bias-corrected moments are exactly g and g^2, so every step moves
  // each weight by lr * g / (|g| + eps).
  const std::vector<double> gc = {1, -2, 0.5};
  Rows expected;
  for (int t = 1; t <= 3; ++t) {
    std::vector<double> w(3);
    for (int i = 0; i < 3; ++i) w[i] = w0[i] - t * 0.1 * gc[i] / (std::abs(gc[i]) + 1e-8);
    expected.push_back(w);
  }
  run<T>({"adam", 0.1}, w0, {gc, gc, gc}, expected, tol, halved);

  // beta1 = 1/2, beta2 = 3/4, lr = 1, g = 2, -2, 0 by hand:
  //   t=1: m = 1, v = 1, mhat = 2, vhat = 4, w = 0 - 2/2 = -1
  //   t=2: m = -1/2, v = 7/4, mhat = -2/3, vhat = 4, w = -1 + 1/3
  //   t=3: m = -1/4, v = 21/16, mhat = -2/7, vhat = 84/37, w = -2/3 + (2/7)/sqrt(84/37)
  OptimizerSpec spec{"adam", 1.0};
  spec.beta1 = 0.5, spec.beta2 = 0.75, spec.eps = 1e-300;
  auto opt = run<T>(spec, {0}, {{2}, {-2}, {0}},
                    {{-1}, {-2.0 / 3}, {-2.0 / 3 + (2.0 / 7) / std::sqrt(84.0 / 37)}}, tol, halved);
  ASSERT_EQ(opt->state().size(), 2u);
  expect_values(opt->state()[0], {-0.25}, tol, "adam m");
  expect_values(opt->state()[1], {21.0 / 16}, tol, "adam v");
  EXPECT_EQ(opt->state_bytes(), 2 * sizeof(T));
}

TEST(Optimizer, AdamDouble) { adam<double>(1e-14); }
TEST(Optimizer, AdamFloat) { adam<float>(1e-6); }

// The same updates with the gradient read through an accessor that is not a View.
TEST(Optimizer, GradientThroughAnAccessor) {
  sgd_and_momentum<double>(true);
  sgd_and_momentum<float>(true);
  adam<double>(1e-14, true);
  adam<float>(1e-6, true);
}

TEST(Optimizer, BadSpecIsInputErrorNamingTheKey) {
  auto message = [](const OptimizerSpec& spec) {
    try {
      kpmap::make_optimizer<double>(spec, 3);
    } catch (const kpmap::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no InputError");
  };
  EXPECT_NE(message({"adagrad", 0.1}).find("train.optimizer.name: 'adagrad'"), std::string::npos);
  EXPECT_NE(message({"sgd", -0.1}).find("train.optimizer.lr"), std::string::npos);
  OptimizerSpec bad_beta{"adam", 0.1};
  bad_beta.beta2 = 1.0;
  EXPECT_NE(message(bad_beta).find("train.optimizer.beta2"), std::string::npos);
  OptimizerSpec bad_mu{"momentum", 0.1};
  bad_mu.momentum = -0.5;
  EXPECT_NE(message(bad_mu).find("train.optimizer.momentum"), std::string::npos);
  // The constructor itself validates: no optimizer of an unknown name or a negative size exists.
  EXPECT_THROW(kpmap::Optimizer<double>({"adagrad", 0.1}, 3), kpmap::InputError);
  EXPECT_THROW(kpmap::Optimizer<float>({"adam", 0.1}, -1), kpmap::ShapeError);
}

TEST(Optimizer, ExtentMismatchIsShapeError) {
  kpmap::execution_space exec;
  auto opt = kpmap::make_optimizer<double>({"momentum", 0.1}, 3);
  View1<double> w("w", 3), g("g", 2);
  EXPECT_THROW(opt->apply(exec, 0, w, g), kpmap::ShapeError);
  EXPECT_THROW(opt->apply(exec, 0, w, Halved<double>{g}), kpmap::ShapeError);
}

}  // namespace
