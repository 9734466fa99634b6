// Loss scaling: the loss (so every gradient) is multiplied by `scale` before the gradient is
// narrowed to the wire type and divided by it again in master precision, so small gradients
// survive a 16-bit wire instead of flushing to zero.
//
// The kernels accumulate in at least fp32, so the first narrowing of the gradient is its cast to
// the wire (train/step_comm.hpp); the scale is applied to the fp32/fp64 sums just before it. For
// a power-of-two scale that is bitwise what scaling the loss before the backward pass gives
// (barring an fp32 overflow, which shows up as Inf either way).
//
// dynamic (the usual dynamic scaler): a step whose reduced gradient holds an Inf or NaN on any
// rank (agreed over the whole mesh) is skipped everywhere and the scale is multiplied by
// backoff_factor; after growth_interval clean steps in a row it is multiplied by growth_factor.
#pragma once

namespace kpmap {

struct LossScaleSpec {
  enum class Kind { none, fixed, dynamic };
  Kind kind = Kind::none;
  double scale = 1.0;  // fixed: the scale; dynamic: the initial scale
  long long growth_interval = 2000;
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
};

class LossScaler {
 public:
  explicit LossScaler(const LossScaleSpec& spec) : spec_(spec), scale_(spec.kind == LossScaleSpec::Kind::none ? 1.0 : spec.scale) {}

  bool enabled() const { return spec_.kind != LossScaleSpec::Kind::none; }
  bool dynamic() const { return spec_.kind == LossScaleSpec::Kind::dynamic; }
  double scale() const { return scale_; }
  long long clean_steps() const { return clean_; }
  // A checkpoint's state (TrainState::loss_scale, clean_steps).
  void restore(double scale, long long clean_steps) {
    scale_ = scale;
    clean_ = clean_steps;
  }

  // After a step's reduction: whether to apply its update (false: skip), and the next scale.
  bool update(bool all_finite) {
    if (!dynamic()) return true;
    if (!all_finite) {
      scale_ *= spec_.backoff_factor;
      clean_ = 0;
      return false;
    }
    if (++clean_ == spec_.growth_interval) {
      scale_ *= spec_.growth_factor;
      clean_ = 0;
    }
    return true;
  }

 private:
  LossScaleSpec spec_;
  double scale_;
  long long clean_ = 0;  // clean steps since the last change of scale
};

}  // namespace kpmap
