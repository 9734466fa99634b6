// What the trainer's MPI tests share: a small problem, the 1x1 reference run, the meshes that
// cover the ranks, and a history comparison.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "kpmap/train/trainer.hpp"
#include "support/world.hpp"

namespace kpmap::test {

inline TrainSpec small_spec(Dtype dtype) {
  TrainSpec s;
  s.problem = {/*samples*/ 512, /*features*/ 12, /*bias*/ true, /*noise*/ 0.1, /*seed*/ 7};
  s.steps = 12;
  s.batch = 64;
  s.kernel = GradientKernel::fused;
  s.optimizer.name = "sgd";
  s.optimizer.lr = 0.2;
  s.compute = s.params = s.comm = dtype;
  return s;
}

inline kpmap::TrainResult reference(const TrainSpec& spec) {
  const Mesh self(MPI_COMM_SELF, {{"data", 1}});
  return kpmap::train(spec, self);
}

inline void expect_same_history(const kpmap::TrainResult& got, const kpmap::TrainResult& want, double rtol,
                         const std::string& what) {
  ASSERT_EQ(got.history.size(), want.history.size()) << what;
  for (size_t i = 0; i < got.history.size(); ++i) {
    EXPECT_EQ(got.history[i].step, want.history[i].step) << what;
    EXPECT_NEAR(got.history[i].loss, want.history[i].loss, rtol * std::abs(want.history[i].loss))
        << what << ", step " << want.history[i].step;
  }
  for (size_t j = 0; j < want.weights.size(); ++j) {
    EXPECT_NEAR(got.weights[j], want.weights[j], 1e3 * rtol * (1 + std::abs(want.weights[j]))) << what << ", w" << j;
  }
  EXPECT_NEAR(got.bias, want.bias, 1e3 * rtol * (1 + std::abs(want.bias))) << what;
}

// Every mesh of (data, model) that covers the ranks: N x 1, 1 x N and, at 4 ranks, 2 x 2.
inline std::vector<std::vector<kpmap::MeshAxis>> meshes() {
  const int n = kpmap::test::world_size();
  std::vector<std::vector<kpmap::MeshAxis>> m{{{"data", n}, {"model", 1}}};
  if (n > 1) m.push_back({{"data", 1}, {"model", n}});
  if (n == 4) m.push_back({{"data", 2}, {"model", 2}});
  return m;
}

inline std::string name(const std::vector<kpmap::MeshAxis>& axes) {
  return std::to_string(axes[0].size) + "x" + std::to_string(axes[1].size);
}

}  // namespace kpmap::test
