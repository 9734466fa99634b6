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

template <class T>
Optimizer<T>::Optimizer(const OptimizerSpec& spec, long long size) : spec_(spec), size_(size) {
  validate(spec);
  if (size < 0) throw ShapeError("kpmap::Optimizer: size " + std::to_string(size) + " < 0");
  for (const std::string& name : optimizer_state_names(spec.name)) {
    state_.emplace_back("kpmap::optim::" + spec.name + "_" + name, size);
  }
}

template <class T>
void Optimizer<T>::check(std::size_t params, std::size_t grads, long long step_number) const {
  if (static_cast<long long>(params) != size_ || static_cast<long long>(grads) != size_ || step_number < 0) {
    throw ShapeError("kpmap::Optimizer(" + spec_.name + ")::apply: params " + std::to_string(params) + ", grads " +
                     std::to_string(grads) + ", step " + std::to_string(step_number) + "; expected " +
                     std::to_string(size_) + " elements and step >= 0");
  }
}

template <class T>
optim_detail::AdamScalars<T> Optimizer<T>::adam_scalars(long long step_number) const {
  const auto& s = spec_;
  const double t = static_cast<double>(step_number + 1);
  return {static_cast<T>(s.lr),
          static_cast<T>(s.beta1),
          static_cast<T>(1.0 - s.beta1),
          static_cast<T>(s.beta2),
          static_cast<T>(1.0 - s.beta2),
          static_cast<T>(s.eps),
          static_cast<T>(1.0 / (1.0 - std::pow(s.beta1, t))),
          static_cast<T>(1.0 / (1.0 - std::pow(s.beta2, t)))};
}

template <class T>
std::size_t Optimizer<T>::state_bytes() const {
  std::size_t bytes = 0;
  for (const auto& s : state_) bytes += s.span() * sizeof(T);
  return bytes;
}

template <class T>
std::unique_ptr<Optimizer<T>> make_optimizer(const OptimizerSpec& spec, long long size) {
  return std::make_unique<Optimizer<T>>(spec, size);
}

#define KPMAP_OPTIM_INSTANTIATE(T) \
  template class Optimizer<T>;     \
  template std::unique_ptr<Optimizer<T>> make_optimizer<T>(const OptimizerSpec&, long long);
KPMAP_OPTIM_INSTANTIATE(double)
KPMAP_OPTIM_INSTANTIATE(float)
#undef KPMAP_OPTIM_INSTANTIATE

}  // namespace kpmap
