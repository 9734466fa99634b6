// Linear regression: forward, loss and gradient of the squared error, with two interchangeable
// implementations (GradientKernel) that agree to rounding.
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
#include "kpmap/model/fused_kernels.hpp"

namespace kpmap {

enum class GradientKernel { fused, kokkos_kernels };

std::string to_string(GradientKernel kernel);
// Throws InputError naming train.kernel and the allowed values.
GradientKernel parse_gradient_kernel(const std::string& name);

// The layout of X each path reads fastest (measured in docs/performance.md): rows contiguous for
// the fused kernel, columns contiguous for Kokkos Kernels (its BLAS TPL needs LayoutLeft).
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
    } else {
      exec.fence();
      model_detail::blas_forward<C, Acc>(blas_x(X), blas_w(w), b, z, work(rows_, X.extent(0), "kpmap::model::rows"));
      Kokkos::fence();
    }
  }

  // From z = X w + b (all model ranks' parts): grad_w += 2 X^T r, grad_b += 2 sum(r) with
  // r = z - y; returns sum(r^2).
  template <class XView, class ZView, class YView, class GWView, class GBView>
  double backward(const execution_space& exec, const XView& X, const ZView& z, const YView& y,
                  const GWView& grad_w, const GBView& grad_b) {
    check(X, grad_w, grad_b, z.extent(0) == X.extent(0) && y.extent(0) == X.extent(0), "z, y");
    if (kernel_ == GradientKernel::fused) {
      model_detail::reduce_rows<model_detail::FromZ, Acc>(exec, X, y, grad_w, grad_b, z, sums(X.extent(1)));
      return model_detail::add_gradient(exec, sums_, grad_w, grad_b, model_detail::pair_order_v<Acc, XView>);
    }
    exec.fence();
    const View1<C> r = work(rows_, X.extent(0), "kpmap::model::residual");
    model_detail::blas_residual_from_z(z, y, r);
    return model_detail::blas_gradient<C, Acc>(blas_x(X), r, grad_w, grad_b, work(cols_, X.extent(1), "kpmap::model::cols"));
  }

  // One rank holds all features: loss sum and gradient sums in one pass over X (fused) or
  // gemv N + gemv T (kokkos_kernels); accumulates into grad_w / grad_b, returns sum(r^2).
  template <class XView, class YView, class WView, class BView, class GWView, class GBView>
  double fused(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
               const GWView& grad_w, const GBView& grad_b) {
    check(X, w, b, y.extent(0) == X.extent(0), "y");
    check(X, grad_w, grad_b, true, "");
    if (kernel_ == GradientKernel::fused) {
      model_detail::reduce_rows<model_detail::Fused, Acc>(exec, X, y, w, b, y, sums(X.extent(1)));
      return model_detail::add_gradient(exec, sums_, grad_w, grad_b, model_detail::pair_order_v<Acc, XView>);
    }
    exec.fence();
    const View1<C> r = work(rows_, X.extent(0), "kpmap::model::residual");
    const auto Xc = blas_x(X);  // one widening pass serves both gemv calls
    model_detail::blas_residual(Xc, blas_w(w), b, y, r);
    return model_detail::blas_gradient<C, Acc>(Xc, r, grad_w, grad_b, work(cols_, X.extent(1), "kpmap::model::cols"));
  }

  // Bytes of the workspace this model holds (for the report's memory field).
  std::size_t workspace_bytes() const {
    return (sums_.span() + wide_x_.span() + wide_w_.span()) * sizeof(Acc) + (rows_.span() + cols_.span()) * sizeof(C);
  }

 private:
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

  View1<Acc>& sums(std::size_t features) {
    if (sums_.extent(0) != features + 2) {
      sums_ = View1<Acc>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::model::sums"), features + 2);
    }
    return sums_;
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
  View1<C> rows_, cols_;      // BLAS workspaces: a residual (rows) and a gradient in C (columns)
  View1<Acc> wide_x_, wide_w_;  // 16-bit storage only: the Acc copies of X and w
};

}  // namespace kpmap
