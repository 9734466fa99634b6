// The trainer converges to the right answer: w* on a noise-free problem, and on a noisy one the
// least-squares solution, solved here independently from the normal equations.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "kpmap/train/trainer.hpp"

namespace {

using kpmap::Dtype;
using kpmap::Mesh;
using kpmap::TrainSpec;

TrainSpec full_batch_spec(double noise) {
  TrainSpec s;
  s.problem = {/*samples*/ 256, /*features*/ 8, /*bias*/ true, noise, /*seed*/ 3};
  s.batch = 256;  // full batch: gradient descent, whose fixed point is the least-squares solution
  s.steps = 400;
  s.optimizer.name = "sgd";
  s.optimizer.lr = 0.5;
  s.compute = s.params = s.comm = Dtype::fp64;
  return s;
}

// Least squares over [X, 1] by the normal equations, Gaussian elimination with partial pivoting
// in long double.
std::vector<double> least_squares(const kpmap::SyntheticProblem& p) {
  const int n = static_cast<int>(p.features) + 1;
  std::vector<long double> A(n * n, 0.0L), rhs(n, 0.0L);
  const auto w = kpmap::true_weights(p, 0, p.features);
  const double b = kpmap::true_bias(p);
  for (long long i = 0; i < p.samples; ++i) {
    std::vector<long double> row(n, 1.0L);
    double y = b + p.noise * kpmap::synthetic::gaussian(p.seed, i);
    for (long long j = 0; j < p.features; ++j) {
      row[j] = kpmap::synthetic::x_entry(p.seed, i, j);
      y += static_cast<double>(row[j]) * w[j];
    }
    for (int r = 0; r < n; ++r) {
      rhs[r] += row[r] * y;
      for (int c = 0; c < n; ++c) A[r * n + c] += row[r] * row[c];
    }
  }
  for (int k = 0; k < n; ++k) {
    int pivot = k;
    for (int r = k + 1; r < n; ++r) {
      if (std::fabs(A[r * n + k]) > std::fabs(A[pivot * n + k])) pivot = r;
    }
    for (int c = 0; c < n; ++c) std::swap(A[k * n + c], A[pivot * n + c]);
    std::swap(rhs[k], rhs[pivot]);
    for (int r = k + 1; r < n; ++r) {
      const long double f = A[r * n + k] / A[k * n + k];
      for (int c = k; c < n; ++c) A[r * n + c] -= f * A[k * n + c];
      rhs[r] -= f * rhs[k];
    }
  }
  std::vector<double> x(n);
  for (int r = n - 1; r >= 0; --r) {
    long double s = rhs[r];
    for (int c = r + 1; c < n; ++c) s -= A[r * n + c] * x[c];
    x[r] = static_cast<double>(s / A[r * n + r]);
  }
  return x;
}

TEST(Convergence, NoiseFreeProblemRecoversTrueWeights) {
  const Mesh self(MPI_COMM_SELF, {{"data", 1}});
  for (auto kernel : {kpmap::GradientKernel::fused, kpmap::GradientKernel::kokkos_kernels, kpmap::GradientKernel::team}) {
    TrainSpec spec = full_batch_spec(0.0);
    spec.kernel = kernel;
    const auto r = kpmap::train(spec, self);
    EXPECT_LT(r.weights_rel_error.value(), 1e-8) << kpmap::to_string(kernel);
    // Independently of the trainer's own metric: compare with w* directly.
    const auto w = kpmap::true_weights(spec.problem, 0, spec.problem.features);
    for (size_t j = 0; j < w.size(); ++j) EXPECT_NEAR(r.weights[j], w[j], 1e-8) << j;
    EXPECT_NEAR(r.bias, kpmap::true_bias(spec.problem), 1e-8);
  }
}

TEST(Convergence, NoisyProblemReachesTheLeastSquaresSolution) {
  const Mesh self(MPI_COMM_SELF, {{"data", 1}});
  TrainSpec spec = full_batch_spec(0.3);
  const auto ls = least_squares(spec.problem);
  const auto r = kpmap::train(spec, self);
  double diff = 0, norm = 0;
  for (long long j = 0; j < spec.problem.features; ++j) {
    diff += (r.weights[j] - ls[j]) * (r.weights[j] - ls[j]);
    norm += ls[j] * ls[j];
  }
  diff += (r.bias - ls.back()) * (r.bias - ls.back());
  norm += ls.back() * ls.back();
  EXPECT_LT(std::sqrt(diff / norm), 1e-6);
  // The noise moves the solution away from w*: the test would not tell otherwise.
  EXPECT_GT(r.weights_rel_error.value(), 1e-4);
}

}  // namespace
