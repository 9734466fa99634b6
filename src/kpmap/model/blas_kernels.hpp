// The `kokkos_kernels` gradient path: KokkosBlas gemv "N" for X w, gemv "T" for X^T r, Blas1
// (fill, axpy, update, dot, sum) for the rest. With the BLAS TPL enabled, Kokkos Kernels 3.4
// hands gemv on host double/float to the BLAS library only when X is LayoutLeft (its LayoutRight
// specialisation needs LayoutRight vectors, which its own layout unification never produces), so
// this path wants LayoutLeft shards; see docs/performance.md for the figures.
//
// Kokkos Kernels 3.4 takes no execution space instance: these calls run on the default instance,
// so the caller's instance is fenced first and Kokkos::fence() ends each call.
#pragma once

#include <KokkosBlas1_axpby.hpp>
#include <KokkosBlas1_dot.hpp>
#include <KokkosBlas1_fill.hpp>
#include <KokkosBlas1_sum.hpp>
#include <KokkosBlas1_update.hpp>
#include <KokkosBlas2_gemv.hpp>
#include <Kokkos_Core.hpp>

#include <type_traits>

#include "kpmap/core/types.hpp"

namespace kpmap::model_detail {

template <class BView>
typename BView::non_const_value_type bias_on_host(const BView& b) {
  typename BView::non_const_value_type value{};
  if (b.extent(0) > 0) Kokkos::deep_copy(value, Kokkos::subview(b, 0));
  return value;
}

// dst(i) (op)= Acc(src(i)) for the mixed-precision case (Acc != T), where BLAS cannot write Acc.
template <class Dst, class Src>
void convert_into(const Dst& dst, const Src& src, bool accumulate) {
  using D = typename Dst::non_const_value_type;
  Kokkos::parallel_for(
      "kpmap::model::convert", Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(
                                   0, static_cast<long long>(dst.extent(0))),
      KOKKOS_LAMBDA(long long i) { dst(i) = (accumulate ? dst(i) : D(0)) + static_cast<D>(src(i)); });
}

// z = X w (+ b).
template <class T, class Acc, class XView, class WView, class BView, class ZView>
void blas_forward(const XView& X, const WView& w, const BView& b, const ZView& z, const View1<T>& work) {
  const T bias = bias_on_host(b);
  if constexpr (std::is_same_v<T, Acc>) {
    KokkosBlas::fill(z, bias);
    KokkosBlas::gemv("N", T(1), X, w, T(1), z);
  } else {
    KokkosBlas::fill(work, bias);
    KokkosBlas::gemv("N", T(1), X, w, T(1), work);
    convert_into(z, work, false);
  }
}

// r = X w + b - y.
template <class T, class XView, class WView, class BView, class YView>
void blas_residual(const XView& X, const WView& w, const BView& b, const YView& y, const View1<T>& r) {
  KokkosBlas::fill(r, bias_on_host(b));
  KokkosBlas::axpy(T(-1), y, r);
  KokkosBlas::gemv("N", T(1), X, w, T(1), r);
}

// r = z - y (z is Acc, r is the storage type BLAS works in).
template <class T, class Acc, class ZView, class YView>
void blas_residual_from_z(const ZView& z, const YView& y, const View1<T>& r) {
  if constexpr (std::is_same_v<T, Acc>) {
    KokkosBlas::update(T(1), z, T(-1), y, T(0), r);
  } else {
    Kokkos::parallel_for(
        "kpmap::model::residual_from_z",
        Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(0, static_cast<long long>(r.extent(0))),
        KOKKOS_LAMBDA(long long i) { r(i) = static_cast<T>(z(i) - static_cast<Acc>(y(i))); });
  }
}

// grad_w += 2 X^T r, grad_b += 2 sum(r); returns sum(r^2).
template <class T, class Acc, class XView, class GWView, class GBView>
double blas_gradient(const XView& X, const View1<T>& r, const GWView& grad_w, const GBView& grad_b,
                     const View1<T>& work) {
  if constexpr (std::is_same_v<T, Acc>) {
    KokkosBlas::gemv("T", T(2), X, r, T(1), grad_w);
  } else {
    KokkosBlas::gemv("T", T(2), X, r, T(0), work);
    convert_into(grad_w, work, true);
  }
  if (grad_b.extent(0) > 0) {
    const Acc two_sum = Acc(2) * static_cast<Acc>(KokkosBlas::sum(r));
    Kokkos::parallel_for(
        "kpmap::model::add_bias_gradient", Kokkos::RangePolicy<execution_space>(0, 1),
        KOKKOS_LAMBDA(int) { grad_b(0) += two_sum; });
  }
  const double loss = static_cast<double>(KokkosBlas::dot(r, r));
  Kokkos::fence();
  return loss;
}

}  // namespace kpmap::model_detail
