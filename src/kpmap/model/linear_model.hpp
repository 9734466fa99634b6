// Linear regression: forward, loss and gradient of the squared error, with three interchangeable
// implementations (GradientKernel, model/gradient_kernel.hpp) that agree to rounding.
//
// Everything returned or accumulated is an UNNORMALISED sum over the rows given, so that the
// train loop can split a batch over ranks (data axis), features (model axis) and micro-batches
// and still normalise once: after psum over `data` of the sums and of the row count n,
//   loss = loss_sum / n,   dL/dw = grad_w / n,   dL/db = grad_b / n,
// where, for residuals r_i = x_i . w + b - y_i of the rows seen,
//   loss_sum = sum_i r_i^2,   grad_w += 2 X^T r,   grad_b += 2 sum_i r_i.
//
// Parameters and the bias: the train loop keeps ONE flat parameter View of length F_local + 1,
// [w_0 .. w_{F_local-1}, b] (split_params below), and a gradient View of the same shape, so a
// single optimizer apply, a single pmean and (later) a single ZeRO shard cover w and b. The bias
// is replicated on every model rank: its gradient 2 sum(r) depends only on the full residual,
// which every model rank holds after the psum of z, so the replicas stay identical. A problem
// without bias uses length F_local and passes empty (extent 0) b / grad_b Views: b is then 0 and
// grad_b is not touched.
//
// One model rank (M == 1), per micro-batch:
//   double loss_sum = model.fused(exec, X_rows, y_rows, w, b, grad_w, grad_b);
// Model-parallel (M > 1), per micro-batch:
//   model.forward_partial(exec, X_rows, w_local, b_or_empty, z);  // b on model rank 0 only
//   psum(z, "model");                                              // z = X w + b, all rows
//   double loss_sum = model.backward(exec, X_rows, z, y_rows, grad_w_local, grad_b);
// (loss_sum is then identical on every model rank: count it on one model rank or divide by M.)
//
// Two passes, for overlapping the gradient's reduction with its computation: pass 1 forms every
// residual of the micro-batch, pass 2 the gradient one column window at a time, so that the
// reduction of a finished window can start while the next one is computed:
//   double loss_sum = model.residual(exec, X_rows, y_rows, w, b, r, grad_b);   // M == 1, or
//   double loss_sum = model.residual_from_z(exec, X_rows, z, y_rows, r, grad_b);  // after psum(z)
//   for each window [c0, c0 + width) of [0, F_local):
//     model.gradient_columns(exec, X_rows, r, c0, subview(grad_w, [c0, c0 + width)));
// r is a View1<Acc> of one slot per row. With GradientKernel::team the passes split the one-pass
// team kernel's work in the same way (same teams, rows and order of every sum), so they are
// bitwise fused() / backward() on any backend. With GradientKernel::fused on a host backend (Serial, or
// OpenMP with a fixed thread count) the result is bitwise the one of fused() (residual) or
// backward() (residual_from_z), for any partition of [0, F_local) into windows, also when
// accumulating into non-zero gradients: the passes run the one-pass kernel's arithmetic
// (model/fused_kernels.hpp, Part). The price is a second read of X (each window reads its
// columns of every row). With kokkos_kernels, pass 2 is gemv "T" on the window; bitwise equality
// with fused() then depends on the BLAS library (tests/unit/test_model_split.cpp says what holds).
//
// Epilogue: fused, backward, residual, residual_from_z and gradient_columns take an optional last
// argument `then` (model/epilogue.hpp) that is handed each gradient slot of [w, b] the call adds
// to, once it holds its sum, while it is still in L1 (after the gemv on the kokkos_kernels path):
// the trainer passes the cast of the finished gradient to the communication wire to the last
// micro-batch's calls.
//
// Types: T is the storage type of X, y and the parameters; Acc the type residuals, z and the
// gradient are accumulated in (Acc = T by default; the gradient Views are View1<Acc>). Every
// call runs its kernels on `exec` and returns after they have completed (the loss sum is read
// back to the host).
//
// Mixed precision: LinearModel<bf16, float> and LinearModel<fp16, float> read X, y, w and b in
// 16 bits (half the bytes of fp32) and compute every product, residual and sum in float, rounding
// nothing to 16 bits: z, the gradients and the loss come out in float. The fused path reads the
// 16-bit X directly; the kokkos_kernels path first writes a float copy of the micro-batch's X
// into a workspace (an extra pass over X, see model/blas_kernels.hpp and docs/performance.md).
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/model/blas_kernels.hpp"
#include "kpmap/model/epilogue.hpp"
#include "kpmap/model/fused_kernels.hpp"
#include "kpmap/model/gradient_kernel.hpp"
#include "kpmap/model/team_kernels.hpp"

namespace kpmap {

// The layout of X each path reads fastest (measured in docs/performance.md): rows contiguous for
// the fused and team kernels, columns contiguous for Kokkos Kernels (its BLAS TPL needs LayoutLeft).
template <GradientKernel K>
using preferred_layout_t =
    std::conditional_t<K == GradientKernel::kokkos_kernels, Kokkos::LayoutLeft, Kokkos::LayoutRight>;

// {w, b} views into a flat parameter (or gradient) View of length features_local (+ 1 if bias).
template <class V>
auto split_params(const V& flat, long long features_local) {
  const auto n = static_cast<long long>(flat.extent(0));
  return std::make_pair(Kokkos::subview(flat, Kokkos::make_pair(0LL, features_local)),
                        Kokkos::subview(flat, Kokkos::make_pair(features_local, n)));
}

template <class T, class Acc = T>
class LinearModel {
  static_assert(!is_half<Acc>::value, "accumulate in float or double: a 16-bit sum would round at every add");
  // The BLAS path's element type: Acc when it widens 16-bit storage (Kokkos Kernels has no gemv
  // for kpmap's 16-bit types), T otherwise.
  static constexpr bool widens = is_half<T>::value;
  using C = std::conditional_t<widens, Acc, T>;

 public:
  using value_type = T;
  using accumulation_type = Acc;

  explicit LinearModel(GradientKernel kernel) : kernel_(kernel) {}
  GradientKernel kernel() const { return kernel_; }

  // z = X w (+ b(0) when b has a slot): this model rank's partial products, overwritten.
  template <class XView, class WView, class BView, class ZView>
  void forward_partial(const execution_space& exec, const XView& X, const WView& w, const BView& b,
                       const ZView& z) {
    check(X, w, b, z.extent(0) == X.extent(0), "z");
    if (kernel_ == GradientKernel::fused) {
      model_detail::rows_times_w<Acc>(exec, X, w, b, z);
      exec.fence();
    } else if (kernel_ == GradientKernel::team) {
      model_detail::team_forward<Acc>(exec, X, w, b, z);
      exec.fence();
    } else {
      exec.fence();
      model_detail::blas_forward<C, Acc>(blas_x(X), blas_w(w), b, z, work(rows_, X.extent(0), "kpmap::model::rows"));
      Kokkos::fence();
    }
  }

  // From z = X w + b (all model ranks' parts): grad_w += 2 X^T r, grad_b += 2 sum(r) with
  // r = z - y; returns sum(r^2).
  template <class XView, class ZView, class YView, class GWView, class GBView, class Then = model_detail::NoEpilogue>
  double backward(const execution_space& exec, const XView& X, const ZView& z, const YView& y,
                  const GWView& grad_w, const GBView& grad_b, const Then& then = Then()) {
    check(X, grad_w, grad_b, z.extent(0) == X.extent(0) && y.extent(0) == X.extent(0), "z, y");
    if (kernel_ == GradientKernel::fused) {
      const View1<Acc> s = sums(X.extent(1));
      model_detail::reduce_rows<model_detail::FromZ, Acc>(exec, X, y, grad_w, grad_b, z, s);
      return model_detail::add_gradient(exec, s, grad_w, grad_b, model_detail::pair_order_v<Acc, XView>, 0, then);
    }
    if (kernel_ == GradientKernel::team) {
      const View1<Acc> s = sums(X.extent(1));
      model_detail::team_reduce<model_detail::FromZ, Acc, model_detail::Part::all>(
          exec, X, y, grad_w, grad_b, z, z, 0, 0, team_work(X.extent(0), X.extent(1)), s);
      return model_detail::add_gradient(exec, s, grad_w, grad_b, false, 0, then);
    }
    exec.fence();
    const View1<C> r = work(rows_, X.extent(0), "kpmap::model::residual");
    model_detail::blas_residual_from_z(z, y, r);
    const double loss = model_detail::blas_gradient<C, Acc>(blas_x(X), r, grad_w, grad_b, work(cols_, X.extent(1), "kpmap::model::cols"));
    model_detail::run_epilogue(exec, 0, slots(grad_w, grad_b), then);
    return loss;
  }

  // One rank holds all features: loss sum and gradient sums in one pass over X (fused) or
  // gemv N + gemv T (kokkos_kernels); accumulates into grad_w / grad_b, returns sum(r^2).
  template <class XView, class YView, class WView, class BView, class GWView, class GBView,
            class Then = model_detail::NoEpilogue>
  double fused(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
               const GWView& grad_w, const GBView& grad_b, const Then& then = Then()) {
    check(X, w, b, y.extent(0) == X.extent(0), "y");
    check(X, grad_w, grad_b, true, "");
    if (kernel_ == GradientKernel::fused) {
      const View1<Acc> s = sums(X.extent(1));
      model_detail::reduce_rows<model_detail::Fused, Acc>(exec, X, y, w, b, y, s);
      return model_detail::add_gradient(exec, s, grad_w, grad_b, model_detail::pair_order_v<Acc, XView>, 0, then);
    }
    if (kernel_ == GradientKernel::team) {
      const View1<Acc> s = sums(X.extent(1));
      model_detail::team_reduce<model_detail::Fused, Acc, model_detail::Part::all>(
          exec, X, y, w, b, y, y, 0, 0, team_work(X.extent(0), X.extent(1)), s);
      return model_detail::add_gradient(exec, s, grad_w, grad_b, false, 0, then);
    }
    exec.fence();
    const View1<C> r = work(rows_, X.extent(0), "kpmap::model::residual");
    const auto Xc = blas_x(X);  // one widening pass serves both gemv calls
    model_detail::blas_residual(Xc, blas_w(w), b, y, r);
    const double loss = model_detail::blas_gradient<C, Acc>(Xc, r, grad_w, grad_b, work(cols_, X.extent(1), "kpmap::model::cols"));
    model_detail::run_epilogue(exec, 0, slots(grad_w, grad_b), then);
    return loss;
  }

  // ---- The two-pass gradient (see the top of this file) ----

  // Pass 1, one model rank: r(i) = x_i . w + b - y_i for the rows of X, grad_b += 2 sum(r) (when
  // grad_b has a slot); returns sum(r^2). The arithmetic of fused(): its loss sum and grad_b
  // bitwise (both kernels, host backends).
  // kokkos_kernels with 16-bit T: gradient_columns on the same X (same data pointer, extents and
  // strides) reads the float copy of X made here instead of copying its window again, so X must
  // not be modified in between. (So does it after fused(), backward() or forward_partial() of
  // that X; residual_from_z makes no copy, and each window then copies its own columns.)
  template <class XView, class YView, class WView, class BView, class RView, class GBView,
            class Then = model_detail::NoEpilogue>
  double residual(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
                  const RView& r, const GBView& grad_b, const Then& then = Then()) {
    check(X, w, b, y.extent(0) == X.extent(0) && r.extent(0) == X.extent(0), "y, r");
    check(X, w, grad_b, true, "");
    check_residual_view<RView>();
    if (kernel_ == GradientKernel::fused) {
      const View1<Acc> s = sums(0);
      model_detail::reduce_part<model_detail::Fused, Acc, model_detail::Part::residual>(exec, X, y, w, b, y, r, 0, 0, s);
      return model_detail::add_gradient(exec, s, View1<Acc>(), grad_b, false, bias_slot(X), then);
    }
    if (kernel_ == GradientKernel::team) {
      const View1<Acc> s = sums(0);
      model_detail::team_reduce<model_detail::Fused, Acc, model_detail::Part::residual>(
          exec, X, y, w, b, y, r, 0, 0, team_work(X.extent(0), 0), s);
      return model_detail::add_gradient(exec, s, View1<Acc>(), grad_b, false, bias_slot(X), then);
    }
    exec.fence();
    const View1<C> rc = blas_r(r);
    model_detail::blas_residual(blas_x(X), blas_w(w), b, y, rc);
    const double loss = blas_finish_residual(r, rc, grad_b);
    model_detail::run_epilogue(exec, bias_slot(X), static_cast<long long>(grad_b.extent(0)), then);
    return loss;
  }

  // Pass 1, model-parallel: from z = X w + b (all model ranks' parts), r(i) = z(i) - y(i),
  // grad_b += 2 sum(r); returns sum(r^2). The arithmetic of backward(): its loss sum and grad_b
  // bitwise (both kernels, host backends). X gives the rows (and, for fused, the kernel's
  // work items); it is not read.
  template <class XView, class ZView, class YView, class RView, class GBView, class Then = model_detail::NoEpilogue>
  double residual_from_z(const execution_space& exec, const XView& X, const ZView& z, const YView& y,
                         const RView& r, const GBView& grad_b, const Then& then = Then()) {
    static_assert(XView::rank == 2 && ZView::rank == 1 && YView::rank == 1 && GBView::rank == 1, "X rank 2, vectors rank 1");
    check_residual_view<RView>();
    const std::size_t n = X.extent(0);
    if (z.extent(0) != n || y.extent(0) != n || r.extent(0) != n || grad_b.extent(0) > 1) {
      throw ShapeError("kpmap::LinearModel: X is " + std::to_string(n) + " x " + std::to_string(X.extent(1)) +
                       ", but z, y, r have " + std::to_string(z.extent(0)) + ", " + std::to_string(y.extent(0)) +
                       ", " + std::to_string(r.extent(0)) + " rows and the bias gradient extent " +
                       std::to_string(grad_b.extent(0)) + " (0 or 1 allowed)");
    }
    if (kernel_ == GradientKernel::fused) {
      const View1<Acc> s = sums(0);
      model_detail::reduce_part<model_detail::FromZ, Acc, model_detail::Part::residual>(exec, X, y, r, grad_b, z, r, 0, 0, s);
      return model_detail::add_gradient(exec, s, View1<Acc>(), grad_b, false, bias_slot(X), then);
    }
    if (kernel_ == GradientKernel::team) {
      const View1<Acc> s = sums(0);
      model_detail::team_reduce<model_detail::FromZ, Acc, model_detail::Part::residual>(
          exec, X, y, r, grad_b, z, r, 0, 0, team_work(n, 0), s);
      return model_detail::add_gradient(exec, s, View1<Acc>(), grad_b, false, bias_slot(X), then);
    }
    exec.fence();
    const View1<C> rc = blas_r(r);
    model_detail::blas_residual_from_z(z, y, rc);
    const double loss = blas_finish_residual(r, rc, grad_b);
    model_detail::run_epilogue(exec, bias_slot(X), static_cast<long long>(grad_b.extent(0)), then);
    return loss;
  }

  // Pass 2: grad_w(j) += 2 sum_i r(i) X(i, c0 + j) for j < grad_w.extent(0), with r from pass 1
  // on the same X; grad_w is the window [c0, c0 + grad_w.extent(0)) of the full gradient (a
  // contiguous View1<Acc>). Any partition of [0, F) into windows, one call each, gives the
  // gradient of fused() / backward() (bitwise with the fused kernel on host backends).
  template <class XView, class RView, class GWView, class Then = model_detail::NoEpilogue>
  void gradient_columns(const execution_space& exec, const XView& X, const RView& r, long long c0,
                        const GWView& grad_w, const Then& then = Then()) {
    static_assert(XView::rank == 2 && RView::rank == 1 && GWView::rank == 1, "X rank 2, vectors rank 1");
    static_assert(!std::is_same_v<typename GWView::array_layout, Kokkos::LayoutStride>,
                  "parameter and gradient Views must be contiguous");
    static_assert(std::is_same_v<typename RView::non_const_value_type, Acc> &&
                      !std::is_same_v<typename RView::array_layout, Kokkos::LayoutStride>,
                  "r is a contiguous View1<Acc>");
    const long long n = static_cast<long long>(X.extent(0)), F = static_cast<long long>(X.extent(1));
    const long long width = static_cast<long long>(grad_w.extent(0));
    if (c0 < 0 || c0 > F - width || static_cast<long long>(r.extent(0)) != n) {
      throw ShapeError("kpmap::LinearModel: X is " + std::to_string(n) + " x " + std::to_string(F) +
                       ", but the gradient window [" + std::to_string(c0) + ", " + std::to_string(c0 + width) +
                       ") is not inside [0, " + std::to_string(F) + ") or r has " + std::to_string(r.extent(0)) +
                       " rows");
    }
    if (kernel_ == GradientKernel::fused) {
      const View1<Acc> s = sums(static_cast<std::size_t>(width));
      // The tag only picks how a residual is formed, which this part does not do.
      model_detail::reduce_part<model_detail::FromZ, Acc, model_detail::Part::columns>(exec, X, r, r, r, r, r, c0, width, s);
      model_detail::add_gradient(exec, s, grad_w, View1<Acc>(), model_detail::pair_order_v<Acc, XView>, c0, then);
      return;
    }
    if (kernel_ == GradientKernel::team) {
      const View1<Acc> s = sums(static_cast<std::size_t>(width));
      model_detail::team_reduce<model_detail::FromZ, Acc, model_detail::Part::columns>(
          exec, X, r, r, r, r, r, c0, width, team_work(X.extent(0), static_cast<std::size_t>(width)), s);
      model_detail::add_gradient(exec, s, grad_w, View1<Acc>(), false, c0, then);
      return;
    }
    exec.fence();
    const auto window = Kokkos::make_pair(c0, c0 + width);
    // r in the type BLAS computes in: r itself, or a copy (exact: C is the narrower type).
    Kokkos::View<const C*, device_type> rc;
    if constexpr (std::is_same_v<C, Acc>) {
      rc = r;
    } else {
      const View1<C> copy = work(rows_, X.extent(0), "kpmap::model::residual");
      model_detail::cast_into(copy, r);
      rc = copy;
    }
    const View1<C> wc = work(cols_, static_cast<std::size_t>(width), "kpmap::model::cols");
    if constexpr (widens) {
      // The float copy residual() (or any call that widened) made of this X, else a float copy
      // of the window's columns, which replaces it.
      model_detail::WideMatrix<Acc> Xw;
      if (wide_key_ == XKey::of(X)) {
        Xw = Kokkos::subview(model_detail::WideMatrix<Acc>(wide_x_.data(), X.extent(0), X.extent(1)), Kokkos::ALL, window);
      } else {
        wide_key_ = XKey{};
        Xw = model_detail::widen_columns(X, work(wide_x_, X.extent(0) * static_cast<std::size_t>(width), "kpmap::model::wide_x"), c0, width);
      }
      model_detail::blas_columns<C, Acc>(Xw, rc, grad_w, wc);
    } else {
      model_detail::blas_columns<C, Acc>(Kokkos::subview(X, Kokkos::ALL, window), rc, grad_w, wc);
    }
    Kokkos::fence();
    model_detail::run_epilogue(exec, c0, width, then);
  }

  // Bytes of the workspace this model holds (for the report's memory field).
  std::size_t workspace_bytes() const {
    return (sums_.span() + partial_.span() + wide_x_.span() + wide_w_.span()) * sizeof(Acc) +
           (rows_.span() + cols_.span()) * sizeof(C);
  }

 private:
  // Which X the float copy in wide_x_ was made of (16-bit storage, kokkos_kernels).
  struct XKey {
    const void* data = nullptr;
    std::size_t rows = 0, cols = 0, stride0 = 0, stride1 = 0;
    template <class XView>
    static XKey of(const XView& X) {
      return {X.data(), X.extent(0), X.extent(1), static_cast<std::size_t>(X.stride(0)), static_cast<std::size_t>(X.stride(1))};
    }
    bool operator==(const XKey& o) const {
      return data == o.data && rows == o.rows && cols == o.cols && stride0 == o.stride0 && stride1 == o.stride1;
    }
  };

  // The flat gradient's slot of the bias: after this model rank's features.
  template <class XView>
  static long long bias_slot(const XView& X) {
    return static_cast<long long>(X.extent(1));
  }
  template <class GWView, class GBView>
  static long long slots(const GWView& grad_w, const GBView& grad_b) {
    return static_cast<long long>(grad_w.extent(0) + grad_b.extent(0));
  }

  template <class RView>
  static void check_residual_view() {
    static_assert(RView::rank == 1 && std::is_same_v<typename RView::value_type, Acc> &&
                      !std::is_same_v<typename RView::array_layout, Kokkos::LayoutStride>,
                  "r is a contiguous View1<Acc>");
  }
  // The residual the BLAS calls write: r itself, or a workspace in C (copied to r afterwards).
  template <class RView>
  View1<C> blas_r(const RView& r) {
    if constexpr (std::is_same_v<C, Acc>) {
      return r;
    } else {
      return work(rows_, r.extent(0), "kpmap::model::residual");
    }
  }
  // The residual sums of the BLAS path (the calls of fused() / backward()), and r from rc.
  template <class RView, class GBView>
  double blas_finish_residual(const RView& r, const View1<C>& rc, const GBView& grad_b) {
    const double loss = model_detail::blas_residual_sums<C, Acc>(rc, grad_b);
    if constexpr (!std::is_same_v<C, Acc>) {
      model_detail::cast_into(r, rc);
      Kokkos::fence();
    }
    return loss;
  }

  // Throws ShapeError (a caller bug) unless the Views fit X: vector extent F, bias extent 0 or 1.
  template <class XView, class VView, class BView>
  static void check(const XView& X, const VView& v, const BView& b, bool rows_ok, const char* rows_what) {
    static_assert(XView::rank == 2 && VView::rank == 1 && BView::rank == 1, "X rank 2, vectors rank 1");
    static_assert(!std::is_same_v<typename VView::array_layout, Kokkos::LayoutStride>,
                  "parameter and gradient Views must be contiguous");
    if (v.extent(0) != X.extent(1) || b.extent(0) > 1 || !rows_ok) shape_error(X, v, b, rows_what);
  }
  template <class XView, class VView, class BView>
  static void shape_error(const XView& X, const VView& v, const BView& b, const char* rows_what) {
    throw ShapeError("kpmap::LinearModel: X is " + std::to_string(X.extent(0)) + " x " +
                     std::to_string(X.extent(1)) + ", but a parameter/gradient View has extent " +
                     std::to_string(v.extent(0)) + ", the bias extent " + std::to_string(b.extent(0)) +
                     " (0 or 1 allowed)" + (rows_what[0] ? std::string(" or ") + rows_what + " rows differ" : ""));
  }

  // The reduction's result for `features` gradient sums (Part in model/fused_kernels.hpp).
  View1<Acc> sums(std::size_t features) { return work(sums_, features + 2, "kpmap::model::sums"); }
  // The team kernel's per-team partial sums of `features` columns over `rows` rows.
  View1<Acc> team_work(std::size_t rows, std::size_t features) {
    const auto teams = static_cast<std::size_t>(model_detail::team_count(static_cast<long long>(rows)));
    return work(partial_, teams * (features + 2), "kpmap::model::team_partials");
  }
  // The first n elements of a BLAS workspace, grown when too small.
  template <class E>
  static View1<E> work(View1<E>& buffer, std::size_t n, const char* label) {
    if (buffer.extent(0) < n) buffer = View1<E>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
    return Kokkos::subview(buffer, Kokkos::make_pair(std::size_t(0), n));
  }
  // What the BLAS calls read: X and w themselves, or their Acc copies for 16-bit storage.
  template <class XView>
  auto blas_x(const XView& X) {
    if constexpr (widens) {
      wide_key_ = XKey::of(X);
      return model_detail::widen_matrix(X, work(wide_x_, X.extent(0) * X.extent(1), "kpmap::model::wide_x"));
    } else {
      return X;
    }
  }
  template <class WView>
  auto blas_w(const WView& w) {
    if constexpr (widens) {
      return model_detail::widen_vector(w, work(wide_w_, w.extent(0), "kpmap::model::wide_w"));
    } else {
      return w;
    }
  }

  GradientKernel kernel_;
  View1<Acc> sums_;
  View1<Acc> partial_;  // team: the per-team partial sums
  View1<C> rows_, cols_;      // BLAS workspaces: a residual (rows) and a gradient in C (columns)
  View1<Acc> wide_x_, wide_w_;  // 16-bit storage only: the Acc copies of X and w
  XKey wide_key_;               // the X wide_x_ holds a copy of (empty: none, or a window only)
};

}  // namespace kpmap
