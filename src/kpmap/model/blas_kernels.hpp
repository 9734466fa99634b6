// The `kokkos_kernels` gradient path: KokkosBlas gemv "N" for X w, gemv "T" for X^T r, Blas1
// (fill, axpy, update, dot, sum) for the rest. With the BLAS TPL enabled, Kokkos Kernels 3.4
// hands gemv on host double/float to the BLAS library only when X is LayoutLeft (its LayoutRight
// specialisation needs LayoutRight vectors, which its own layout unification never produces), so
// this path wants LayoutLeft shards; see docs/performance.md for the figures.
//
// 16-bit storage (kpmap::bf16, fp16): Kokkos Kernels has no gemv for kpmap's own types (and 3.4
// has no bhalf_t), so the model first widens the micro-batch's X, and w, into Acc workspaces
// (widen_matrix, widen_vector) and runs the Acc path on the copies. The copy is LayoutLeft
// whatever X's layout, so its gemv reaches the BLAS library. Its cost: one extra pass over X
// that reads 2 bytes and writes 4 bytes per element, before the two gemv passes read the 4-byte
// copy; so this path moves more bytes per step than with fp32 storage. The fused path reads the
// 16-bit X directly.
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

using blas_policy = Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>;

// b(0) as C, or 0 for an empty bias.
template <class C, class BView>
C bias_on_host(const BView& b) {
  typename BView::non_const_value_type value{};
  if (b.extent(0) == 0) return C(0);
  Kokkos::deep_copy(value, Kokkos::subview(b, 0));
  return static_cast<C>(value);
}

// dst(i) (op)= Acc(src(i)) for the mixed-precision case (Acc != T), where BLAS cannot write Acc.
template <class Dst, class Src>
void convert_into(const Dst& dst, const Src& src, bool accumulate) {
  using D = typename Dst::non_const_value_type;
  Kokkos::parallel_for(
      "kpmap::model::convert", blas_policy(0, static_cast<long long>(dst.extent(0))),
      KOKKOS_LAMBDA(long long i) { dst(i) = (accumulate ? dst(i) : D(0)) + static_cast<D>(src(i)); });
}

// An Acc copy of X (16-bit storage) for the BLAS library, over `storage` (>= n * F elements).
template <class Acc>
using WideMatrix = Kokkos::View<Acc**, Kokkos::LayoutLeft, device_type, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

// An Acc copy of the columns [c0, c0 + width) of X, over `storage` (>= n * width elements).
template <class Acc, class XView>
WideMatrix<Acc> widen_columns(const XView& X, const View1<Acc>& storage, long long c0, long long width) {
  const long long n = static_cast<long long>(X.extent(0)), F = width;
  const WideMatrix<Acc> wide(storage.data(), n, F);
  if constexpr (std::is_same_v<typename XView::array_layout, Kokkos::LayoutRight>) {
    // 16 rows per work item: the rows are read in order, and the 16 elements of one column
    // written together fill one 64-byte line of the column-major copy.
    constexpr long long rows = 16;
    Kokkos::parallel_for(
        "kpmap::model::widen_x", blas_policy(0, (n + rows - 1) / rows), KOKKOS_LAMBDA(long long item) {
          const long long i0 = item * rows, i1 = i0 + rows < n ? i0 + rows : n;
          for (long long j = 0; j < F; ++j) {
            for (long long i = i0; i < i1; ++i) wide(i, j) = static_cast<Acc>(X(i, c0 + j));
          }
        });
  } else {
    // Column chunks: contiguous on both sides for LayoutLeft, and parallel even when F is small.
    constexpr long long chunk = 4096;
    const long long chunks = (n + chunk - 1) / chunk;
    Kokkos::parallel_for(
        "kpmap::model::widen_x", blas_policy(0, chunks * F), KOKKOS_LAMBDA(long long item) {
          const long long j = item / chunks, i0 = (item % chunks) * chunk;
          const long long i1 = i0 + chunk < n ? i0 + chunk : n;
          for (long long i = i0; i < i1; ++i) wide(i, j) = static_cast<Acc>(X(i, c0 + j));
        });
  }
  return wide;
}

template <class Acc, class XView>
WideMatrix<Acc> widen_matrix(const XView& X, const View1<Acc>& storage) {
  return widen_columns(X, storage, 0, static_cast<long long>(X.extent(1)));
}

// The first v.extent(0) elements of `storage`, set to Acc(v(i)).
template <class Acc, class VView>
View1<Acc> widen_vector(const VView& v, const View1<Acc>& storage) {
  const auto wide = Kokkos::subview(storage, Kokkos::make_pair(std::size_t(0), v.extent(0)));
  Kokkos::parallel_for(
      "kpmap::model::widen_w", blas_policy(0, static_cast<long long>(v.extent(0))),
      KOKKOS_LAMBDA(long long i) { wide(i) = static_cast<Acc>(v(i)); });
  return wide;
}

// z = X w (+ b); T is the type BLAS computes in, Acc the type of z.
template <class T, class Acc, class XView, class WView, class BView, class ZView>
void blas_forward(const XView& X, const WView& w, const BView& b, const ZView& z, const View1<T>& work) {
  const T bias = bias_on_host<T>(b);
  if constexpr (std::is_same_v<T, Acc>) {
    KokkosBlas::fill(z, bias);
    KokkosBlas::gemv("N", T(1), X, w, T(1), z);
  } else {
    KokkosBlas::fill(work, bias);
    KokkosBlas::gemv("N", T(1), X, w, T(1), work);
    convert_into(z, work, false);
  }
}

// r = X w + b - y (y in T, or in 16 bits when T is the widened type).
template <class T, class XView, class WView, class BView, class YView>
void blas_residual(const XView& X, const WView& w, const BView& b, const YView& y, const View1<T>& r) {
  const T bias = bias_on_host<T>(b);
  if constexpr (std::is_same_v<typename YView::non_const_value_type, T>) {
    KokkosBlas::fill(r, bias);
    KokkosBlas::axpy(T(-1), y, r);
  } else {
    Kokkos::parallel_for(
        "kpmap::model::bias_minus_y", blas_policy(0, static_cast<long long>(r.extent(0))),
        KOKKOS_LAMBDA(long long i) { r(i) = bias - static_cast<T>(y(i)); });
  }
  KokkosBlas::gemv("N", T(1), X, w, T(1), r);
}

// r = z - y, in the type BLAS works in (z is Acc; y is T, or 16-bit when T is the widened type).
template <class T, class ZView, class YView>
void blas_residual_from_z(const ZView& z, const YView& y, const View1<T>& r) {
  using Z = typename ZView::non_const_value_type;
  if constexpr (std::is_same_v<Z, T> && std::is_same_v<typename YView::non_const_value_type, T>) {
    KokkosBlas::update(T(1), z, T(-1), y, T(0), r);
  } else {
    Kokkos::parallel_for(
        "kpmap::model::residual_from_z", blas_policy(0, static_cast<long long>(r.extent(0))),
        KOKKOS_LAMBDA(long long i) { r(i) = static_cast<T>(z(i) - static_cast<Z>(y(i))); });
  }
}

// dst(i) = D(src(i)).
template <class Dst, class Src>
void cast_into(const Dst& dst, const Src& src) {
  using D = typename Dst::non_const_value_type;
  Kokkos::parallel_for(
      "kpmap::model::cast", blas_policy(0, static_cast<long long>(dst.extent(0))),
      KOKKOS_LAMBDA(long long i) { dst(i) = static_cast<D>(src(i)); });
}

// grad_w += 2 X^T r over the columns of X (all of them, or a window of the full gradient).
template <class T, class Acc, class XView, class RView, class GWView>
void blas_columns(const XView& X, const RView& r, const GWView& grad_w, const View1<T>& work) {
  if constexpr (std::is_same_v<T, Acc>) {
    KokkosBlas::gemv("T", T(2), X, r, T(1), grad_w);
  } else {
    KokkosBlas::gemv("T", T(2), X, r, T(0), work);
    convert_into(grad_w, work, true);
  }
}

// grad_b += 2 sum(r) (when grad_b has a slot); returns sum(r^2) once everything has completed.
template <class T, class Acc, class RView, class GBView>
double blas_residual_sums(const RView& r, const GBView& grad_b) {
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

// grad_w += 2 X^T r, grad_b += 2 sum(r); returns sum(r^2).
template <class T, class Acc, class XView, class GWView, class GBView>
double blas_gradient(const XView& X, const View1<T>& r, const GWView& grad_w, const GBView& grad_b,
                     const View1<T>& work) {
  blas_columns<T, Acc>(X, r, grad_w, work);
  return blas_residual_sums<T, Acc>(r, grad_b);
}

}  // namespace kpmap::model_detail
