#include "kpmap/optim/optimizer.hpp"

#include <cmath>
#include <sstream>

#include "kpmap/core/error.hpp"

namespace kpmap {

namespace {

std::string str(double v) {
  std::ostringstream out;
  out << v;
  return out.str();
}

void require(bool ok, const std::string& key, double value, const std::string& allowed) {
  if (!ok) throw InputError("train.optimizer." + key + ": " + str(value) + " must be " + allowed);
}

template <class T>
KOKKOS_INLINE_FUNCTION T square_root(T x) {
#if KOKKOS_VERSION >= 30700
  return Kokkos::sqrt(x);
#else
  return Kokkos::Experimental::sqrt(x);
#endif
}

using policy = Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>;

// The kernels are free functions: CUDA forbids device lambdas in private member functions.
template <class T, class G>
void sgd_kernel(const execution_space& exec, long long n, T lr, const View1<T>& w, const View1<const G>& g) {
  Kokkos::parallel_for(
      "kpmap::optim::sgd", policy(exec, 0, n), KOKKOS_LAMBDA(long long i) { w(i) -= lr * static_cast<T>(g(i)); });
}

template <class T, class G>
void momentum_kernel(const execution_space& exec, long long n, T lr, T mu, const View1<T>& v, const View1<T>& w,
                     const View1<const G>& g) {
  Kokkos::parallel_for(
      "kpmap::optim::momentum", policy(exec, 0, n), KOKKOS_LAMBDA(long long i) {
        v(i) = mu * v(i) + static_cast<T>(g(i));
        w(i) -= lr * v(i);
      });
}

// 1 - beta and the bias corrections c = 1 / (1 - beta^t) come from the host in double: in
// float, 1 - 0.999f is off by 1.3e-5 relative (cancellation), which would bias every step.
template <class T>
struct AdamScalars {
  T lr, b1, one_minus_b1, b2, one_minus_b2, eps, c1, c2;
};

template <class T, class G>
void adam_kernel(const execution_space& exec, long long n, AdamScalars<T> a, const View1<T>& m, const View1<T>& v,
                 const View1<T>& w, const View1<const G>& g) {
  Kokkos::parallel_for(
      "kpmap::optim::adam", policy(exec, 0, n), KOKKOS_LAMBDA(long long i) {
        const T gi = static_cast<T>(g(i));
        m(i) = a.b1 * m(i) + a.one_minus_b1 * gi;
        v(i) = a.b2 * v(i) + a.one_minus_b2 * gi * gi;
        w(i) -= a.lr * (m(i) * a.c1) / (square_root(v(i) * a.c2) + a.eps);
      });
}

}  // namespace

std::vector<std::string> optimizer_state_names(const std::string& name) {
  if (name == "momentum") return {"velocity"};
  if (name == "adam") return {"m", "v"};
  return {};
}

void validate(const OptimizerSpec& s) {
  if (s.name != "sgd" && s.name != "momentum" && s.name != "adam") {
    throw InputError("train.optimizer.name: '" + s.name + "' is not one of sgd, momentum, adam");
  }
  require(std::isfinite(s.lr) && s.lr > 0, "lr", s.lr, "finite and > 0");
  if (s.name == "momentum") require(s.momentum >= 0 && s.momentum < 1, "momentum", s.momentum, "in [0, 1)");
  if (s.name == "adam") {
    require(s.beta1 >= 0 && s.beta1 < 1, "beta1", s.beta1, "in [0, 1)");
    require(s.beta2 >= 0 && s.beta2 < 1, "beta2", s.beta2, "in [0, 1)");
    require(std::isfinite(s.eps) && s.eps > 0, "eps", s.eps, "finite and > 0");
  }
}

template <class T, class G>
void Optimizer<T, G>::apply(const execution_space& exec, long long step_number, const View1<T>& params,
                            const View1<const G>& grads) {
  if (static_cast<long long>(params.extent(0)) != size_ || static_cast<long long>(grads.extent(0)) != size_ ||
      step_number < 0) {
    throw ShapeError("kpmap::Optimizer(" + spec_.name + ")::apply: params " + std::to_string(params.extent(0)) +
                     ", grads " + std::to_string(grads.extent(0)) + ", step " + std::to_string(step_number) +
                     "; expected " + std::to_string(size_) + " elements and step >= 0");
  }
  update(exec, step_number, params, grads);
}

template <class T, class G>
std::size_t Optimizer<T, G>::state_bytes() const {
  std::size_t bytes = 0;
  for (const auto& s : state()) bytes += s.span() * sizeof(T);
  return bytes;
}

template <class T, class G>
void Sgd<T, G>::update(const execution_space& exec, long long, const View1<T>& w, const View1<const G>& g) {
  sgd_kernel(exec, this->size_, static_cast<T>(this->spec_.lr), w, g);
}

template <class T, class G>
Momentum<T, G>::Momentum(const OptimizerSpec& spec, long long size)
    : Optimizer<T, G>(spec, size), velocity_("kpmap::optim::momentum_v", size) {}

template <class T, class G>
void Momentum<T, G>::update(const execution_space& exec, long long, const View1<T>& w, const View1<const G>& g) {
  momentum_kernel(exec, this->size_, static_cast<T>(this->spec_.lr), static_cast<T>(this->spec_.momentum),
                  velocity_, w, g);
}

template <class T, class G>
Adam<T, G>::Adam(const OptimizerSpec& spec, long long size)
    : Optimizer<T, G>(spec, size), m_("kpmap::optim::adam_m", size), v_("kpmap::optim::adam_v", size) {}

template <class T, class G>
void Adam<T, G>::update(const execution_space& exec, long long step_number, const View1<T>& w,
                        const View1<const G>& g) {
  const auto& s = this->spec_;
  const double t = static_cast<double>(step_number + 1);
  const AdamScalars<T> a{static_cast<T>(s.lr),
                         static_cast<T>(s.beta1),
                         static_cast<T>(1.0 - s.beta1),
                         static_cast<T>(s.beta2),
                         static_cast<T>(1.0 - s.beta2),
                         static_cast<T>(s.eps),
                         static_cast<T>(1.0 / (1.0 - std::pow(s.beta1, t))),
                         static_cast<T>(1.0 / (1.0 - std::pow(s.beta2, t)))};
  adam_kernel(exec, this->size_, a, m_, v_, w, g);
}

template <class T, class G>
std::unique_ptr<Optimizer<T, G>> make_optimizer(const OptimizerSpec& spec, long long size) {
  validate(spec);
  if (size < 0) throw ShapeError("kpmap::make_optimizer: size " + std::to_string(size) + " < 0");
  if (spec.name == "sgd") return std::make_unique<Sgd<T, G>>(spec, size);
  if (spec.name == "momentum") return std::make_unique<Momentum<T, G>>(spec, size);
  return std::make_unique<Adam<T, G>>(spec, size);
}

#define KPMAP_OPTIM_INSTANTIATE(T, G) \
  template class Optimizer<T, G>;     \
  template class Sgd<T, G>;           \
  template class Momentum<T, G>;      \
  template class Adam<T, G>;          \
  template std::unique_ptr<Optimizer<T, G>> make_optimizer<T, G>(const OptimizerSpec&, long long);
KPMAP_OPTIM_INSTANTIATE(double, double)
KPMAP_OPTIM_INSTANTIATE(float, float)
#undef KPMAP_OPTIM_INSTANTIATE

}  // namespace kpmap
