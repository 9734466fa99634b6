// Optimizers on a flat parameter View: SGD, momentum (heavy ball) and Adam (bias-corrected),
// state in Kokkos Views, one kernel per update.
//
// The train loop passes the flat parameter View [w, b] (see model/linear_model.hpp: the bias is
// the last element when the problem has one) and the MEAN gradient of the same length (sums
// divided by the global row count after the pmean), once per step:
//   auto opt = make_optimizer<T>(spec, params.extent(0));
//   opt->apply(exec, step, params, grads);   // step = 0, 1, 2, ...: Adam's t is step + 1
// state() exposes the state Views (ZeRO sharding will shard them) and state_bytes() their size.
//
//   sgd:       w -= lr g
//   momentum:  v = mu v + g;  w -= lr v                                    (v starts at 0)
//   adam:      m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2;             (m, v start at 0)
//              w -= lr (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps)
#pragma once

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "kpmap/core/types.hpp"

namespace kpmap {

struct OptimizerSpec {
  std::string name = "sgd";  // sgd | momentum | adam
  double lr = 0.05;
  double momentum = 0.9;  // momentum only
  double beta1 = 0.9;     // adam only
  double beta2 = 0.999;   // adam only
  double eps = 1e-8;      // adam only
};

// Throws InputError naming the train.optimizer.* key, the value and what is allowed.
void validate(const OptimizerSpec& spec);

// The names of optimizer `name`'s state Views, in Optimizer::state() order (checkpoint
// datasets): sgd {}, momentum {velocity}, adam {m, v}.
std::vector<std::string> optimizer_state_names(const std::string& name);

// T: parameter (master) and state type; G: gradient type.
template <class T, class G = T>
class Optimizer {
 public:
  Optimizer(const OptimizerSpec& spec, long long size) : spec_(spec), size_(size) {}
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of `params` from `grads` (both of extent size()); step_number counts updates from
  // 0. Runs one kernel on `exec` without fencing. Throws ShapeError on an extent mismatch.
  void apply(const execution_space& exec, long long step_number, const View1<T>& params,
             const View1<const G>& grads);

  // The state Views, in a fixed order per optimizer: sgd {}, momentum {v}, adam {m, v}.
  virtual std::vector<View1<T>> state() const = 0;
  std::size_t state_bytes() const;
  const OptimizerSpec& spec() const { return spec_; }
  long long size() const { return size_; }

 protected:
  virtual void update(const execution_space& exec, long long step_number, const View1<T>& params,
                      const View1<const G>& grads) = 0;

  OptimizerSpec spec_;
  long long size_;
};

template <class T, class G = T>
class Sgd final : public Optimizer<T, G> {
 public:
  Sgd(const OptimizerSpec& spec, long long size) : Optimizer<T, G>(spec, size) {}
  std::vector<View1<T>> state() const override { return {}; }

 private:
  void update(const execution_space& exec, long long step_number, const View1<T>& params,
              const View1<const G>& grads) override;
};

template <class T, class G = T>
class Momentum final : public Optimizer<T, G> {
 public:
  Momentum(const OptimizerSpec& spec, long long size);
  std::vector<View1<T>> state() const override { return {velocity_}; }

 private:
  void update(const execution_space& exec, long long step_number, const View1<T>& params,
              const View1<const G>& grads) override;
  View1<T> velocity_;
};

template <class T, class G = T>
class Adam final : public Optimizer<T, G> {
 public:
  Adam(const OptimizerSpec& spec, long long size);
  std::vector<View1<T>> state() const override { return {m_, v_}; }

 private:
  void update(const execution_space& exec, long long step_number, const View1<T>& params,
              const View1<const G>& grads) override;
  View1<T> m_, v_;
};

// Validates spec and builds the named optimizer for `size` parameters, state zeroed.
template <class T, class G = T>
std::unique_ptr<Optimizer<T, G>> make_optimizer(const OptimizerSpec& spec, long long size);

// Instantiated in optimizer.cpp for these (T, G) pairs.
#define KPMAP_OPTIM_EXTERN(T, G)                   \
  extern template class Optimizer<T, G>;           \
  extern template class Sgd<T, G>;                 \
  extern template class Momentum<T, G>;            \
  extern template class Adam<T, G>;                \
  extern template std::unique_ptr<Optimizer<T, G>> \
  make_optimizer<T, G>(const OptimizerSpec&, long long);
KPMAP_OPTIM_EXTERN(double, double)
KPMAP_OPTIM_EXTERN(float, float)
#undef KPMAP_OPTIM_EXTERN

}  // namespace kpmap
