// Every cross-rank reduction of a training step goes through StepComm, so that later strategies
// (reduce_scatter + all_gather, buckets, overlap) change one class.
//
//   sum_partial_products(z): psum over `model` of this model rank's partial X w (+ b).
//   mean_gradient(stats):    the weighted pmean over `data` of the step's statistics
//                            [grad sums..., loss_sum, count] (Acc, the kernels' accumulation
//                            type): psum(sums) / psum(count), so uneven shards are exact.
//   agree_finite(ok):        one psum of a flag over the whole mesh (dynamic loss scaling).
//
// The wire. With precision.comm equal to the accumulation type and no loss scaling, the sums
// travel as they are and are divided by the psum of the counts afterwards. Otherwise every slot
// is first cast to the wire type C (precision.comm), pre-divided by the step's global row count B
// (and the gradient and loss slots multiplied by the loss scale):
//   wire = C([scale * grad_sums / B..., scale * loss_sum / B, count / B])
// so each rank's contribution is a share of a mean and a 16-bit sum cannot overflow where the
// mean itself fits; after the psum the mean gradient is wire / (psum(count / B) * scale), unscaled
// in the master type M. The loss slot is not multiplied by the loss scale but by 2^-e, where 2^e
// is the previous step's loss rounded to a power of two (every rank knows it; before the first
// step, start_loss_exponent agrees on the largest local mean of y^2, the loss at w = 0): the loss
// then travels as a number near 1, which no 16-bit type flushes or overflows, and it keeps the
// wire type's relative precision (bf16: 8 significant bits). A loss that still comes back 0 or
// Inf moves e by 16 for the next step. The slots keep their meaning, so a 16-bit
// wire moves exactly half the bytes of an fp32 one. The cast is applied on a one-rank data axis
// too (nothing moves), so the answer does not depend on how many ranks share the batch.
#pragma once

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstddef>
#include <string>
#include <type_traits>
#include <vector>

#include "kpmap/collectives/collectives.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

// The mean over the global batch, as the step sees it after the reduction.
struct StepTotals {
  double loss = 0;  // mean squared error of the global batch (the unscaled loss)
};

namespace step_comm_detail {

// The kernels of StepComm, outside the class: CUDA's extended lambdas may not sit in private
// member functions.

// wire(i) = C(stats(i) * factor): grad_factor for the gradient slots, then the loss slot's and
// the count slot's factors.
template <class Acc, class C>
void to_wire(const execution_space& exec, const View1<Acc>& stats, const View1<C>& wire, double grad_factor,
             double loss_factor, double count_factor) {
  const long long n = static_cast<long long>(stats.extent(0)) - 2;
  Kokkos::parallel_for(
      "kpmap::train::to_wire", Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, n + 2),
      KOKKOS_LAMBDA(long long i) {
        const double factor = i < n ? grad_factor : i == n ? loss_factor : count_factor;
        wire(i) = static_cast<C>(static_cast<double>(stats(i)) * factor);
      });
}

// grad(i) = M(D(wire(i)) / divisor) over grad's extent, in D, the divisor's type.
template <class C, class D, class M>
void divide_into(const execution_space& exec, const View1<C>& wire, D divisor, const View1<M>& grad) {
  Kokkos::parallel_for(
      "kpmap::train::mean_gradient",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, static_cast<long long>(grad.extent(0))),
      KOKKOS_LAMBDA(long long i) { grad(i) = static_cast<M>(static_cast<D>(wire(i)) / divisor); });
}

template <class C>
long long count_nonfinite(const execution_space& exec, const View1<C>& v) {
  long long bad = 0;
  Kokkos::parallel_reduce(
      "kpmap::train::count_nonfinite",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, static_cast<long long>(v.extent(0))),
      KOKKOS_LAMBDA(long long i, long long& sum) {
        const double x = static_cast<double>(v(i));
        sum += (x - x == 0.0) ? 0 : 1;  // Inf - Inf and NaN - NaN are NaN
      },
      bad);
  return bad;
}

}  // namespace step_comm_detail

template <class Acc>
class StepComm {
 public:
  // wire: the gradient's type on the wire; scaled: a loss scale multiplies the gradient.
  StepComm(const Mesh& mesh, Dtype wire, bool scaled)
      : mesh_(mesh),
        data_size_(mesh.has_axis("data") ? mesh.axis_size("data") : 1),
        model_size_(mesh.has_axis("model") ? mesh.axis_size("model") : 1),
        wire_(wire),
        cast_(scaled || wire != dtype_v<Acc>),
        flag_("kpmap::train::finite_flag", 1),
        exponent_("kpmap::train::loss_exponent", 1) {
    for (const auto& axis : mesh.axes()) all_axes_.push_back(axis.name);
  }

  int data_size() const { return data_size_; }
  int model_size() const { return model_size_; }
  int data_index() const { return data_size_ > 1 ? mesh_.axis_index("data") : 0; }
  int model_index() const { return model_size_ > 1 ? mesh_.axis_index("model") : 0; }
  // Whether the statistics are cast (pre-divided, scaled) before they travel.
  bool casts() const { return cast_; }
  // Bytes of the wire buffer (0 when the sums travel in place).
  std::size_t wire_bytes(long long slots) const {
    return cast_ ? static_cast<std::size_t>(slots) * size_of(wire_) : 0;
  }

  template <class V>
  void sum_partial_products(const V& z) {
    if (model_size_ == 1) return;
    psum(mesh_, "model", z, z);
    bytes_ += z.extent(0) * sizeof(typename V::non_const_value_type);
  }

  // stats (n + 2, Acc) -> grad (n, M): the mean gradient, unscaled. grad may alias the head of
  // stats. rows: the global batch B. Leaves the wire values in place for all_finite().
  template <class M>
  StepTotals mean_gradient(const execution_space& exec, const View1<Acc>& stats, long long rows, double scale,
                           const View1<M>& grad) {
    switch (cast_ ? wire_ : dtype_v<Acc>) {
      case Dtype::fp64: return reduce<double>(exec, stats, rows, scale, grad, wire64_);
      case Dtype::fp32: return reduce<float>(exec, stats, rows, scale, grad, wire32_);
      case Dtype::bf16: return reduce<bf16>(exec, stats, rows, scale, grad, wire_bf16_);
      case Dtype::fp16: return reduce<fp16>(exec, stats, rows, scale, grad, wire_fp16_);
    }
    return {};
  }

  // True on every rank when no rank's reduced statistics (the wire of the last mean_gradient)
  // hold an Inf or NaN: one psum of a flag over the whole mesh.
  bool all_finite(bool locally_finite) {
    flag_(0) = locally_finite ? 0 : 1;
    if (mesh_.size() > 1) {
      psum(mesh_, AxisNames(all_axes_), flag_, flag_);
      bytes_ += sizeof(int);
    }
    return flag_(0) == 0;
  }

  // Before the first step, on every rank: the loss slot's first exponent, the largest of the
  // ranks' `local_loss` (a local estimate of the first loss, e.g. the mean of y^2), agreed with
  // one pmax over the mesh. Only the cast wire uses it.
  void start_loss_exponent(double local_loss) {
    int e = 0;
    if (std::isfinite(local_loss) && local_loss > 0) std::frexp(local_loss, &e);
    exponent_(0) = e;
    if (mesh_.size() > 1) pmax(mesh_, AxisNames(all_axes_), exponent_, exponent_);
    loss_exponent_ = exponent_(0);
  }

  // Whether every slot of the last reduction is finite on this rank.
  bool locally_finite(const execution_space& exec) const {
    switch (cast_ ? wire_ : dtype_v<Acc>) {
      case Dtype::fp64: return step_comm_detail::count_nonfinite(exec, wire64_) == 0;
      case Dtype::fp32: return step_comm_detail::count_nonfinite(exec, wire32_) == 0;
      case Dtype::bf16: return step_comm_detail::count_nonfinite(exec, wire_bf16_) == 0;
      case Dtype::fp16: return step_comm_detail::count_nonfinite(exec, wire_fp16_) == 0;
    }
    return true;
  }

  // Payload bytes this rank handed to collectives since the last call (no bytes leave a rank
  // over an axis of size 1, so those calls are skipped and not counted).
  std::size_t take_bytes() {
    const std::size_t b = bytes_;
    bytes_ = 0;
    return b;
  }

 private:
  template <class C, class M>
  StepTotals reduce(const execution_space& exec, const View1<Acc>& stats, long long rows, double scale,
                    const View1<M>& grad, View1<C>& wire) {
    const long long n = static_cast<long long>(grad.extent(0));
    if (!cast_) {
      if constexpr (std::is_same_v<C, Acc>) wire = stats;  // the sums travel in place
    } else {
      if (wire.extent(0) != stats.extent(0)) {
        wire = View1<C>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kpmap::train::wire"), stats.extent(0));
      }
      const double share = 1.0 / static_cast<double>(rows), scaled_share = scale * share;
      const double loss_share = std::ldexp(share, -loss_exponent_);
      step_comm_detail::to_wire(exec, stats, wire, scaled_share, loss_share, share);
    }
    if (data_size_ > 1) {
      exec.fence();
      psum(mesh_, "data", wire, wire);
      bytes_ += wire.extent(0) * sizeof(C);
    }
    const auto tail = Kokkos::subview(wire, Kokkos::make_pair(n, n + 2));
    auto host_tail = Kokkos::create_mirror_view(Kokkos::HostSpace(), tail);
    Kokkos::deep_copy(exec, host_tail, tail);
    exec.fence();
    const double loss_sum = static_cast<double>(host_tail(0)), count = static_cast<double>(host_tail(1));
    if (!cast_) {
      // Divided in the accumulation type, as the sums were made.
      step_comm_detail::divide_into(exec, wire, static_cast<C>(host_tail(1)), grad);
      return {loss_sum / count};
    }
    const double denominator = count * scale;
    step_comm_detail::divide_into(exec, wire, denominator, grad);
    const double loss = std::ldexp(loss_sum, loss_exponent_) / count;
    if (std::isfinite(loss) && loss > 0) {
      std::frexp(loss, &loss_exponent_);
    } else {
      loss_exponent_ += loss == 0 ? -16 : 16;
    }
    return {loss};
  }


  const Mesh& mesh_;
  int data_size_, model_size_;
  Dtype wire_;
  bool cast_;
  int loss_exponent_ = 0;  // the loss slot travels as loss * 2^-loss_exponent_
  std::vector<std::string> all_axes_;
  View1<double> wire64_;
  View1<float> wire32_;
  View1<bf16> wire_bf16_;
  View1<fp16> wire_fp16_;
  Kokkos::View<int*, Kokkos::HostSpace> flag_, exponent_;
  std::size_t bytes_ = 0;
};

}  // namespace kpmap
