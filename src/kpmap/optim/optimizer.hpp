// Optimizers on a flat parameter View: SGD, momentum (heavy ball) and Adam (bias-corrected),
// state in Kokkos Views, one kernel per update.
//
// The train loop passes the flat parameter View [w, b] (see model/linear_model.hpp: the bias is
// the last element when the problem has one) and the MEAN gradient of the same length (sums
// divided by the global row count after the pmean; a View, or an accessor that forms each
// element as the update reads it), once per step:
//   auto opt = make_optimizer<T>(spec, params.extent(0));
//   opt->apply(exec, step, params, grads);   // step = 0, 1, 2, ...: Adam's t is step + 1
// state() exposes the state Views (one shard of them under ZeRO) and state_bytes() their size.
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

namespace optim_detail {

using policy = Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>;

// 1 - beta and the bias corrections c = 1 / (1 - beta^t) come from the host in double: in
// float, 1 - 0.999f is off by 1.3e-5 relative (cancellation), which would bias every step.
template <class T>
struct AdamScalars {
  T lr, b1, one_minus_b1, b2, one_minus_b2, eps, c1, c2;
};

template <class T>
KOKKOS_INLINE_FUNCTION T square_root(T x) {
#if KOKKOS_VERSION >= 30700
  return Kokkos::sqrt(x);
#else
  return Kokkos::Experimental::sqrt(x);
#endif
}

// The kernels are free functions: CUDA forbids device lambdas in private member functions.
template <class T, class Grad>
void sgd(const execution_space& exec, long long n, T lr, const View1<T>& w, const Grad& g) {
  Kokkos::parallel_for(
      "kpmap::optim::sgd", policy(exec, 0, n), KOKKOS_LAMBDA(long long i) { w(i) -= lr * static_cast<T>(g(i)); });
}

template <class T, class Grad>
void momentum(const execution_space& exec, long long n, T lr, T mu, const View1<T>& v, const View1<T>& w,
              const Grad& g) {
  Kokkos::parallel_for(
      "kpmap::optim::momentum", policy(exec, 0, n), KOKKOS_LAMBDA(long long i) {
        v(i) = mu * v(i) + static_cast<T>(g(i));
        w(i) -= lr * v(i);
      });
}

template <class T, class Grad>
void adam(const execution_space& exec, long long n, AdamScalars<T> a, const View1<T>& m, const View1<T>& v,
          const View1<T>& w, const Grad& g) {
  Kokkos::parallel_for(
      "kpmap::optim::adam", policy(exec, 0, n), KOKKOS_LAMBDA(long long i) {
        const T gi = static_cast<T>(g(i));
        m(i) = a.b1 * m(i) + a.one_minus_b1 * gi;
        v(i) = a.b2 * v(i) + a.one_minus_b2 * gi * gi;
        w(i) -= a.lr * (m(i) * a.c1) / (square_root(v(i) * a.c2) + a.eps);
      });
}

}  // namespace optim_detail

// T: parameter (master) and state type.
template <class T>
class Optimizer {
 public:
  // Validates spec (InputError naming the key) and allocates the state, zeroed, for `size`
  // parameters (ShapeError when size < 0).
  Optimizer(const OptimizerSpec& spec, long long size);
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // One update of `params` from the mean gradient `grads` (both of extent size()); step_number
  // counts updates from 0. grads is a View, or any copyable type with size() and a
  // KOKKOS_INLINE_FUNCTION operator()(long long i) that the kernel calls once per element and
  // converts to T: e.g. a reduced gradient that is unscaled as it is read
  // (train/step_comm.hpp), with no pass of its own over the gradient. Runs one kernel on `exec`
  // without fencing. Throws ShapeError on an extent mismatch.
  template <class Grad>
  void apply(const execution_space& exec, long long step_number, const View1<T>& params, const Grad& grads) {
    check(params.extent(0), grads.size(), step_number);
    const OptimizerSpec& s = spec_;
    if (s.name == "sgd") {
      optim_detail::sgd(exec, size_, static_cast<T>(s.lr), params, grads);
    } else if (s.name == "momentum") {
      optim_detail::momentum(exec, size_, static_cast<T>(s.lr), static_cast<T>(s.momentum), state_[0], params,
                             grads);
    } else {
      optim_detail::adam(exec, size_, adam_scalars(step_number), state_[0], state_[1], params, grads);
    }
  }

  // The state Views, in a fixed order per optimizer: sgd {}, momentum {v}, adam {m, v}.
  const std::vector<View1<T>>& state() const { return state_; }
  std::size_t state_bytes() const;
  const OptimizerSpec& spec() const { return spec_; }
  long long size() const { return size_; }

 private:
  void check(std::size_t params, std::size_t grads, long long step_number) const;
  optim_detail::AdamScalars<T> adam_scalars(long long step_number) const;

  OptimizerSpec spec_;
  long long size_;
  std::vector<View1<T>> state_;
};

// The optimizer of spec for `size` parameters, as the constructor.
template <class T>
std::unique_ptr<Optimizer<T>> make_optimizer(const OptimizerSpec& spec, long long size);

// Instantiated in optimizer.cpp for these types.
#define KPMAP_OPTIM_EXTERN(T)        \
  extern template class Optimizer<T>; \
  extern template std::unique_ptr<Optimizer<T>> make_optimizer<T>(const OptimizerSpec&, long long);
KPMAP_OPTIM_EXTERN(double)
KPMAP_OPTIM_EXTERN(float)
#undef KPMAP_OPTIM_EXTERN

}  // namespace kpmap
