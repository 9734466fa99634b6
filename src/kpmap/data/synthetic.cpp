#include "kpmap/data/synthetic.hpp"

#include <cmath>
#include <string>

#include "kpmap/core/error.hpp"

namespace kpmap {

void validate(const SyntheticProblem& p) {
  if (p.samples < 1) throw InputError("problem.samples: " + std::to_string(p.samples) + " must be >= 1");
  if (p.features < 1) throw InputError("problem.features: " + std::to_string(p.features) + " must be >= 1");
  if (!(p.noise >= 0.0)) throw InputError("problem.noise: " + std::to_string(p.noise) + " must be >= 0");
  if (!(p.weight_scale > 0.0) || !std::isfinite(p.weight_scale)) {
    throw InputError("problem.weight_scale: " + std::to_string(p.weight_scale) + " must be finite and > 0");
  }
}

void validate_columns(const SyntheticProblem& p, Range c) {
  if (c.begin < 0 || c.end < c.begin || c.end > p.features) {
    throw InputError("data: column range [" + std::to_string(c.begin) + ", " + std::to_string(c.end) +
                     ") is not inside [0, problem.features = " + std::to_string(p.features) + ")");
  }
}

std::vector<double> true_weights(const SyntheticProblem& problem, long long col_begin, long long col_end) {
  validate_columns(problem, {col_begin, col_end});
  std::vector<double> w(static_cast<std::size_t>(col_end - col_begin));
  for (long long j = col_begin; j < col_end; ++j) {
    w[static_cast<std::size_t>(j - col_begin)] = synthetic::true_weight(problem.seed, j, problem.weight_scale);
  }
  return w;
}

double true_bias(const SyntheticProblem& problem) { return synthetic::true_bias(problem.seed, problem.bias, problem.weight_scale);
}

Range block_range(long long n, long long part, long long parts) {
  if (parts < 1 || part < 0 || part >= parts || n < 0) {
    throw RuntimeError("block_range: part " + std::to_string(part) + " of " + std::to_string(parts) +
                       " over " + std::to_string(n) + " items is not a valid split");
  }
  // Products fit in 64 bits for any realistic n (rows, features) times a rank count.
  return {part * n / parts, (part + 1) * n / parts};
}

BatchPlan make_batch_plan(long long samples, long long batch, int data_rank, int data_size) {
  if (batch < 1 || batch > samples) {
    throw InputError("train.batch: " + std::to_string(batch) + " must be in [1, problem.samples = " +
                     std::to_string(samples) + "]");
  }
  BatchPlan plan;
  plan.samples = samples;
  plan.batch = batch;
  plan.batches = samples / batch;
  plan.slice = block_range(batch, data_rank, data_size);
  return plan;
}

}  // namespace kpmap
