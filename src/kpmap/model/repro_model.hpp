// Linear regression with reproducible sums (precision.reproducible, docs/train.md): every sum
// whose order depends on the decomposition (over features: z = X w, split over `model`; over
// rows: the gradient, the bias gradient and the loss, split over threads, micro-batches and
// `data`) is a fixed-point accumulator (core/repro_sum.hpp: three levels, two for the dot
// products over the features) on a grid fixed before the step. Each product is rounded the same
// way wherever it is formed, and the accumulators add exactly, so the step's sums are the same
// bits on every mesh, thread count and accumulation.
//
// The step accumulator: a View1<double> of 3 (F + 2) doubles, level-major ([level][slot]), slots
// [0, F) sum_i r_i x_ij over this rank's F columns, F sum_i r_i, F + 1 sum_i r_i^2, where
// r_i = (z_i + b) - y_i in double and z_i = sum_j x_ij w_j is the value of its own accumulator
// (one per row). One model rank, per micro-batch:
//   model.fused(exec, X, y, w, b, grids, acc);
// Model-parallel, per micro-batch:
//   model.forward_partial(exec, X, w, grids.forward, zacc);  // 3 rows doubles
//   psum(mesh, "model", zacc, zacc);                          // exact
//   model.z_from_partials(exec, zacc, z);
//   model.backward(exec, X, z, y, b, grids, acc);
// Both give the same accumulator (the forward sums are exact, then rounded once per row in the
// same way). X, y, w and b are read in their storage type T (fp64 or fp32) and converted to
// double; products of fp32 values are exact in double.
//
// Either gradient kernel setting runs these kernels (Kokkos Kernels' gemv sums in its own
// order); rows of LayoutRight Views are read through pointers (on host backends by the loops of
// model/repro_rows.cpp, built for SSE2 and AVX2), other layouts through the View.
#pragma once

#include <Kokkos_Core.hpp>
#include <algorithm>
#include <string>
#include <type_traits>

#include "kpmap/core/error.hpp"
#include "kpmap/core/repro_sum.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/model/gradient_kernel.hpp"
#include "kpmap/model/repro_rows.hpp"

// Whether this compilation pass may call the host row loops (not in a device pass).
#if !defined(__CUDA_ARCH__) && !defined(__HIP_DEVICE_COMPILE__)
#define KPMAP_REPRO_HOST_ROWS 1
#else
#define KPMAP_REPRO_HOST_ROWS 0
#endif

namespace kpmap {

namespace model_detail {

// The forward accumulator of row i over its columns (lanes of independent accumulators, all
// exact). Two levels: a dot product has few terms (the features), so level 2's unit is already
// about F^2 2^-100 of the bound (s3 stays 0).
template <class XView, class WView>
KOKKOS_INLINE_FUNCTION void repro_dot(const XView& X, long long i, const WView& w, const ReproGrid& g,
                                      double& s1, double& s2, double& s3) {
  constexpr int lanes = 4;
  double p1[lanes] = {}, p2[lanes] = {}, p3[lanes] = {};  // p3: unused with two levels
  const long long F = static_cast<long long>(X.extent(1));
  if constexpr (std::is_same_v<typename XView::array_layout, Kokkos::LayoutRight>) {
    const auto* KOKKOS_RESTRICT x = X.data() + i * static_cast<long long>(X.stride(0));
    const auto* KOKKOS_RESTRICT wp = w.data();
#if KPMAP_REPRO_HOST_ROWS
    double s[2];
    repro_row_dot(g, x, wp, F, s);
    s1 = s[0];
    s2 = s[1];
    s3 = 0;
    return;
#endif
    long long j = 0;
    for (; j + lanes <= F; j += lanes) {
      for (int k = 0; k < lanes; ++k) {
        repro_add_product<2>(g, static_cast<double>(x[j + k]), static_cast<double>(wp[j + k]), p1[k], p2[k],
                             p3[k]);
      }
    }
    for (int k = 0; j + k < F; ++k) {
      repro_add_product<2>(g, static_cast<double>(x[j + k]), static_cast<double>(wp[j + k]), p1[k], p2[k],
                           p3[k]);
    }
  } else {
    for (long long j = 0; j < F; ++j) {
      const int k = static_cast<int>(j % lanes);
      repro_add_product<2>(g, static_cast<double>(X(i, j)), static_cast<double>(w(j)), p1[k], p2[k], p3[k]);
    }
  }
  s1 = (p1[0] + p1[1]) + (p1[2] + p1[3]);
  s2 = (p2[0] + p2[1]) + (p2[2] + p2[3]);
  s3 = 0;
}

// a_k[j] += level k of r * x[j] for j < n (the columns of one row).
template <class T>
KOKKOS_INLINE_FUNCTION void repro_axpy(const ReproGrid& g, double r, const T* KOKKOS_RESTRICT x, long long n,
                                       double* KOKKOS_RESTRICT a1, double* KOKKOS_RESTRICT a2,
                                       double* KOKKOS_RESTRICT a3) {
  for (long long j = 0; j < n; ++j) repro_add_product(g, r, static_cast<double>(x[j]), a1[j], a2[j], a3[j]);
}

struct ReproFused {};  // z_i from X and w
struct ReproFromZ {};  // z_i given (the psum over `model` of the partial accumulators)

template <class Tag, class XView, class YView, class WView, class BView, class ZView>
struct ReproGradientReduce {
  using value_type = double[];
  using size_type = std::size_t;

  size_type value_count;  // 3 (cols + 2)
  XView X;
  YView y;
  WView w;  // ReproFused only
  BView b;  // extent 0 without bias
  ZView z;  // ReproFromZ only
  ReproGrids g;
  // The gradient columns of this pass, [j0, j0 + cols): every column but on device backends
  // (ReproducibleModel::columns_per_pass). The residual and loss slots follow them.
  long long j0 = 0, cols = 0;

  // Host backends with contiguous rows hand blocks of `block` rows to the row loops of
  // model/repro_rows.cpp; anything else (device backends, other layouts) takes one row per item.
  static constexpr bool host_rows =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename execution_space::memory_space>::accessible &&
      std::is_same_v<typename XView::array_layout, Kokkos::LayoutRight> &&
      !std::is_same_v<typename YView::array_layout, Kokkos::LayoutStride> &&
      !std::is_same_v<typename ZView::array_layout, Kokkos::LayoutStride>;
  static constexpr long long block = host_rows ? 16 : 1;
  long long items() const { return (static_cast<long long>(X.extent(0)) + block - 1) / block; }

  KOKKOS_INLINE_FUNCTION void operator()(long long item, value_type acc) const {
    const size_type S = static_cast<size_type>(cols + 2);
    double* a1 = acc;
    double* a2 = acc + S;
    double* a3 = acc + 2 * S;
    const double bias = b.extent(0) > 0 ? static_cast<double>(b(0)) : 0.0;
    if constexpr (host_rows) {  // every column in one pass (cols == F)
      const long long i0 = item * block, n = static_cast<long long>(X.extent(0));
      const long long rows = n - i0 < block ? n - i0 : block;
#if KPMAP_REPRO_HOST_ROWS
      const auto* x = X.data() + i0 * static_cast<long long>(X.stride(0));
      const double* zp = nullptr;
      if constexpr (!std::is_same_v<Tag, ReproFused>) zp = z.data() + i0;
      repro_rows(g, x, static_cast<long long>(X.stride(0)), rows,
                 std::is_same_v<Tag, ReproFused> ? w.data() : nullptr, zp, bias, y.data() + i0, cols, a1, a2,
                 a3);
#else
      for (long long i = i0; i < i0 + rows; ++i) one_row(i, bias, a1, a2, a3);
#endif
    } else {
      one_row(item, bias, a1, a2, a3);
    }
  }

  KOKKOS_INLINE_FUNCTION void one_row(long long i, double bias, double* a1, double* a2, double* a3) const {
    double zi;
    if constexpr (std::is_same_v<Tag, ReproFused>) {
      double s1, s2, s3;
      repro_dot(X, i, w, g.forward, s1, s2, s3);
      zi = repro_value(s1, s2, s3);
    } else {
      zi = z(i);
    }
    const double r = (zi + bias) - static_cast<double>(y(i));
    if constexpr (std::is_same_v<typename XView::array_layout, Kokkos::LayoutRight>) {
      repro_axpy(g.gradient, r, X.data() + i * static_cast<long long>(X.stride(0)) + j0, cols, a1, a2, a3);
    } else {
      for (long long j = 0; j < cols; ++j)
        repro_add_product(g.gradient, r, static_cast<double>(X(i, j0 + j)), a1[j], a2[j], a3[j]);
    }
    repro_add(g.residual, r, a1[cols], a2[cols], a3[cols]);
    repro_add_product(g.loss, r, r, a1[cols + 1], a2[cols + 1], a3[cols + 1]);
  }

  KOKKOS_INLINE_FUNCTION void init(value_type acc) const {
    for (size_type k = 0; k < value_count; ++k) acc[k] = 0;
  }
  KOKKOS_INLINE_FUNCTION void join(value_type dst, const value_type src) const {
    for (size_type k = 0; k < value_count; ++k) dst[k] += src[k];
  }
#if KOKKOS_VERSION < 40000
  KOKKOS_INLINE_FUNCTION void join(volatile double* dst, const volatile double* src) const {
    for (size_type k = 0; k < value_count; ++k) dst[k] += src[k];
  }
#endif
};

// acc (3 (F + 2) slots) += the reduction of f over its `items` work items (sums: its workspace,
// extent f.value_count): f's columns [j0, j0 + cols) into their slots, and its residual and loss
// slots only from the pass that starts at column 0 (every pass sums them alike). A free
// function: CUDA's extended lambdas may not sit in private member functions.
template <class Functor>
void repro_reduce(const execution_space& exec, const Functor& f, long long items, const View1<double>& sums,
                  const View1<double>& acc) {
  Kokkos::parallel_reduce("kpmap::model::repro_gradient",
                          Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, items),
                          f, sums);
  const long long F = static_cast<long long>(f.X.extent(1)), j0 = f.j0, cols = f.cols;
  Kokkos::parallel_for(
      "kpmap::model::repro_accumulate",
      Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(
          exec, 0, static_cast<long long>(f.value_count)),
      KOKKOS_LAMBDA(long long k) {
        const long long level = k / (cols + 2), slot = k % (cols + 2);
        if (slot < cols) {
          acc(level * (F + 2) + j0 + slot) += sums(k);
        } else if (j0 == 0) {
          acc(level * (F + 2) + F + (slot - cols)) += sums(k);
        }
      });
  exec.fence();
}

}  // namespace model_detail

template <class T>
class ReproducibleModel {
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>,
                "reproducible sums read fp64 or fp32 data (16-bit storage is not supported)");

 public:
  // One model rank: acc += this micro-batch's sums (r from X w + b).
  template <class XView, class YView, class WView, class BView>
  void fused(const execution_space& exec, const XView& X, const YView& y, const WView& w, const BView& b,
             const ReproGrids& grids, const View1<double>& acc) {
    check(X, y.extent(0) == X.extent(0) && w.extent(0) == X.extent(1), acc);
    using F = model_detail::ReproGradientReduce<model_detail::ReproFused, XView, YView, WView, BView, YView>;
    if (pass_width<F>(X) < static_cast<long long>(X.extent(1))) {
      // Each row's z once, then the passes from z: X is read twice, not once per pass. The same
      // bits: z is the value of the same accumulator, and r is formed from it the same way.
      const long long n = static_cast<long long>(X.extent(0));
      if (static_cast<long long>(z_.extent(0)) < n) {  // the smaller ones freed first
        zacc_ = {};
        z_ = {};
        zacc_ = View1<double>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::model::repro_zacc"), 3 * n);
        z_ = View1<double>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::model::repro_z"), n);
      }
      const auto z = Kokkos::subview(z_, Kokkos::make_pair(0LL, n));
      const auto zacc = Kokkos::subview(zacc_, Kokkos::make_pair(0LL, 3 * n));
      forward_partial(exec, X, w, grids.forward, zacc);
      z_from_partials(exec, zacc, z);
      backward(exec, X, z, y, b, grids, acc);
      return;
    }
    reduce(exec, F{value_count(X), X, y, w, b, y, grids}, acc);
  }

  // Model-parallel, step 1: zacc (extent 3 rows, level-major) <- each row's forward
  // accumulator over this rank's columns (without the bias).
  template <class XView, class WView>
  void forward_partial(const execution_space& exec, const XView& X, const WView& w, const ReproGrid& grid,
                       const View1<double>& zacc) {
    const long long n = static_cast<long long>(X.extent(0));
    if (w.extent(0) != X.extent(1) || static_cast<long long>(zacc.extent(0)) != 3 * n) {
      throw ShapeError("kpmap::ReproducibleModel::forward_partial: X is " + std::to_string(n) + " x " +
                       std::to_string(X.extent(1)) + ", w has " + std::to_string(w.extent(0)) +
                       " elements and zacc " + std::to_string(zacc.extent(0)) + " (3 per row)");
    }
    Kokkos::parallel_for(
        "kpmap::model::repro_forward",
        Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, n),
        KOKKOS_LAMBDA(long long i) {
          model_detail::repro_dot(X, i, w, grid, zacc(i), zacc(n + i), zacc(2 * n + i));
        });
    exec.fence();
  }

  // Model-parallel, step 2 (after the psum of zacc over `model`): z(i) = the value of row i's
  // accumulator.
  static void z_from_partials(const execution_space& exec, const View1<double>& zacc,
                              const View1<double>& z) {
    const long long n = static_cast<long long>(z.extent(0));
    Kokkos::parallel_for(
        "kpmap::model::repro_z",
        Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, n),
        KOKKOS_LAMBDA(long long i) { z(i) = repro_value(zacc(i), zacc(n + i), zacc(2 * n + i)); });
  }

  // Model-parallel, step 3: acc += this micro-batch's sums (r from z + b).
  template <class XView, class ZView, class YView, class BView>
  void backward(const execution_space& exec, const XView& X, const ZView& z, const YView& y, const BView& b,
                const ReproGrids& grids, const View1<double>& acc) {
    check(X, y.extent(0) == X.extent(0) && z.extent(0) == X.extent(0), acc);
    using F = model_detail::ReproGradientReduce<model_detail::ReproFromZ, XView, YView, YView, BView, ZView>;
    reduce(exec, F{value_count(X), X, y, y, b, z, grids}, acc);
  }

  // Gradient columns per pass over X of the one-row kernel (device backends, and X that is not
  // LayoutRight on the host); 0: every column in one pass. Kokkos keeps a parallel_reduce's
  // 3 (columns + 2) doubles per thread in shared memory on a GPU, and its CUDA backend refuses more
  // than 48 KiB for a block of 34 slots: device_columns = 56 needs 3 * 58 * 8 * 34 = 47 328 bytes.
  // Wider X is summed in passes of that many columns, each reading its columns of X (fused() first
  // forms every row's z, reading X once more); every slot gets the same exact terms, so the bits
  // do not change.
  static constexpr long long device_columns = 56;
  // The setting a model starts with: every column in one pass on host backends.
  static constexpr long long default_columns_per_pass = host_execution_v ? 0 : device_columns;
  // The columns of a pass of the one-row kernel over F columns with the default setting (the
  // workspace this model allocates, which train/memory.cpp estimates).
  static long long default_pass_columns(long long F) { return pass_columns(F, default_columns_per_pass); }
  long long columns_per_pass() const { return columns_per_pass_; }
  void set_columns_per_pass(long long columns) { columns_per_pass_ = columns > 0 ? columns : 0; }

  std::size_t workspace_bytes() const { return (sums_.span() + zacc_.span() + z_.span()) * sizeof(double); }

 private:
  template <class XView>
  static std::size_t value_count(const XView& X) {
    return 3 * (X.extent(1) + 2);
  }
  template <class XView>
  static void check(const XView& X, bool ok, const View1<double>& acc) {
    static_assert(XView::rank == 2, "X has rank 2");
    if (!ok || acc.extent(0) != value_count(X)) {
      throw ShapeError("kpmap::ReproducibleModel: X is " + std::to_string(X.extent(0)) + " x " +
                       std::to_string(X.extent(1)) + " but y, z, w or the accumulator (" +
                       std::to_string(acc.extent(0)) + ", 3 (F + 2) needed) do not fit it");
    }
  }

  // The columns of a pass over F columns with `columns` per pass (0: all of them).
  static long long pass_columns(long long F, long long columns) { return columns == 0 ? F : std::min(F, columns); }

  // The gradient columns per pass of Functor over X.
  template <class Functor, class XView>
  long long pass_width(const XView& X) const {
    const long long F = static_cast<long long>(X.extent(1));
    return std::max(1LL, Functor::host_rows ? F : pass_columns(F, columns_per_pass_));
  }

  template <class Functor>
  void reduce(const execution_space& exec, Functor f, const View1<double>& acc) {
    const long long F = static_cast<long long>(f.X.extent(1));
    const long long width = pass_width<Functor>(f.X);
    for (long long j0 = 0;; j0 += width) {  // at least one pass: it also sums the residual and loss
      f.j0 = j0;
      f.cols = std::min(width, F - j0);
      f.value_count = static_cast<std::size_t>(3 * (f.cols + 2));
      if (sums_.extent(0) < f.value_count) {
        sums_ = View1<double>(Kokkos::view_alloc(Kokkos::WithoutInitializing, "kpmap::model::repro_sums"),
                              f.value_count);
      }
      model_detail::repro_reduce(exec, f, f.items(),
                                 Kokkos::subview(sums_, Kokkos::make_pair(std::size_t(0), f.value_count)), acc);
      if (j0 + width >= F) break;
    }
  }

  long long columns_per_pass_ = default_columns_per_pass;
  View1<double> sums_;
  View1<double> zacc_, z_;  // fused() in more than one pass: each row's forward accumulator and z
};

}  // namespace kpmap
