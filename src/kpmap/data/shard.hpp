// This rank's shard of the synthetic problem, materialised in parallel directly in Kokkos Views.
//
// A data rank d of D owns, in every one of the nb global batches, the rows
// [k*B + lo_d, k*B + hi_d) (BatchPlan); a model rank owns the columns [col_begin, col_end).
// The shard stores those nb blocks of n = hi_d - lo_d rows back to back:
//   X(k*n + i, j - col_begin) = x(global_row(k, i), j),   y(k*n + i) = y(global_row(k, i)),
// so batch k of this rank is the contiguous local row range batch_rows(k) and its X is the
// subview Kokkos::subview(X, batch_rows(k).pair(), Kokkos::ALL) (see batch_x / batch_y).
//
// Layout: LayoutRight (a row of X contiguous) suits the fused gradient kernel, which reads each
// row once; LayoutLeft is what Kokkos Kernels hands to the BLAS library for gemv (see
// docs/performance.md). The train loop picks the layout that matches its gradient kernel
// (preferred_layout in model/gradient.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <string>
#include <type_traits>

#include "kpmap/core/error.hpp"
#include "kpmap/core/types.hpp"
#include "kpmap/data/huge_pages.hpp"
#include "kpmap/data/source.hpp"
#include "kpmap/data/synthetic.hpp"

namespace kpmap {

template <class T, class Layout = Kokkos::LayoutRight>
struct Shard {
  using value_type = T;
  using matrix_type = Kokkos::View<T**, Layout, device_type>;
  using vector_type = View1<T>;

  SyntheticProblem problem;
  BatchPlan plan;
  Range columns;  // global columns [col_begin, col_end) held here
  matrix_type X;  // [plan.batches * rows_per_batch(), columns.size()]
  vector_type y;  // [plan.batches * rows_per_batch()]
  bool x_huge_pages = false;  // whether X was advised to take transparent huge pages (huge_pages.hpp)

  long long rows_per_batch() const { return plan.slice.size(); }
  // Local rows of global batch k (an empty range when this rank's slice is empty).
  Range batch_rows(long long k) const { return {k * rows_per_batch(), (k + 1) * rows_per_batch()}; }
  // The rows of X and y for global batch k, or a contiguous part [first, first + count) of them
  // (micro-batches of gradient accumulation).
  auto batch_x(long long k) const { return sub_x(batch_rows(k).begin, rows_per_batch()); }
  auto batch_y(long long k) const { return sub_y(batch_rows(k).begin, rows_per_batch()); }
  auto sub_x(long long first, long long count) const {
    return Kokkos::subview(X, Kokkos::make_pair(first, first + count), Kokkos::ALL);
  }
  auto sub_y(long long first, long long count) const {
    return Kokkos::subview(y, Kokkos::make_pair(first, first + count));
  }
  std::size_t bytes() const { return (X.span() + y.span()) * sizeof(T); }

  // A new X of rows x cols, not initialised; in host memory advised to take huge pages.
  void allocate_x(const execution_space& exec, long long rows, long long cols) {
    X = matrix_type(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kpmap::data::X"), rows, cols);
    if constexpr (std::is_same_v<typename matrix_type::memory_space, Kokkos::HostSpace>) {
      x_huge_pages = advise_huge_pages(X.data(), X.span() * sizeof(T));
    }
  }
};

namespace detail {

// y of global row r: the full dot product over all global features (not only this rank's
// columns), summed in double in column order, so every decomposition gets the same bits. X is
// rounded to T first, so a noise-free problem is exactly linear in the X the model sees.
template <class T>
KOKKOS_INLINE_FUNCTION double synthetic_y(const SyntheticProblem& p, long long r) {
  double sum = 0.0;
  for (long long j = 0; j < p.features; ++j) {
    sum += static_cast<double>(static_cast<T>(synthetic::x_entry(p.seed, r, j))) *
           synthetic::true_weight(p.seed, j, p.weight_scale);
  }
  sum += synthetic::true_bias(p.seed, p.bias, p.weight_scale);
  if (p.noise != 0.0) sum += p.noise * synthetic::gaussian(p.seed, r);
  return sum;
}

}  // namespace detail

// Materialises the shard of data rank `plan` and columns `columns` on `exec`, in parallel
// (one kernel for X, one for y). Not collective. Throws InputError for a column range outside
// [0, features), RuntimeError when plan was made for another sample count.
template <class T, class Layout = Kokkos::LayoutRight>
Shard<T, Layout> make_shard(const execution_space& exec, const SyntheticProblem& problem,
                            const BatchPlan& plan, Range columns) {
  validate(problem);
  validate_columns(problem, columns);
  if (plan.samples != problem.samples) {
    throw RuntimeError("kpmap::make_shard: the batch plan is for " + std::to_string(plan.samples) +
                       " samples, the problem has " + std::to_string(problem.samples));
  }
  Shard<T, Layout> s;
  s.problem = problem;
  s.plan = plan;
  s.columns = columns;
  const long long n = plan.slice.size();
  const long long rows = plan.batches * n;
  s.allocate_x(exec, rows, columns.size());
  s.y = View1<T>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kpmap::data::y"), rows);
  const auto X = s.X;
  const auto y = s.y;
  const BatchPlan pl = plan;
  const SyntheticProblem p = problem;
  const long long c0 = columns.begin;
  using policy2 = Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<2>, Kokkos::IndexType<long long>>;
  Kokkos::parallel_for(
      "kpmap::data::fill_x", policy2(exec, {0, 0}, {rows, columns.size()}),
      KOKKOS_LAMBDA(long long i, long long j) {
        X(i, j) = static_cast<T>(synthetic::x_entry(p.seed, pl.global_row(i / n, i % n), c0 + j));
      });
  Kokkos::parallel_for(
      "kpmap::data::fill_y", Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, rows),
      KOKKOS_LAMBDA(long long i) { y(i) = static_cast<T>(detail::synthetic_y<T>(p, pl.global_row(i / n, i % n))); });
  exec.fence();
  return s;
}

// The shard from data read from a file (data/source.hpp: read_data_block, in the same row order),
// cast to T on `exec` as make_shard casts the generator's doubles, so a file holding the synthetic
// problem's values gives the same bits. Throws RuntimeError when the block is not the plan's and
// columns' shape.
template <class T, class Layout = Kokkos::LayoutRight>
Shard<T, Layout> make_shard(const execution_space& exec, const SyntheticProblem& problem, const BatchPlan& plan,
                            Range columns, const DataBlock& block) {
  validate_columns(problem, columns);
  if (plan.samples != problem.samples || block.rows != plan.batches * plan.slice.size() ||
      block.cols != columns.size() || block.X.size() != static_cast<std::size_t>(block.rows * block.cols) ||
      block.y.size() != static_cast<std::size_t>(block.rows)) {
    throw RuntimeError("kpmap::make_shard: a data block of " + std::to_string(block.rows) + " x " +
                       std::to_string(block.cols) + " for a shard of " +
                       std::to_string(plan.batches * plan.slice.size()) + " x " + std::to_string(columns.size()));
  }
  Shard<T, Layout> s;
  s.problem = problem;
  s.plan = plan;
  s.columns = columns;
  const long long rows = block.rows, cols = block.cols;
  using HostX = Kokkos::View<const double**, Kokkos::LayoutRight, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  using HostY = Kokkos::View<const double*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>;
  // The block itself where the memory space can read host memory, otherwise a copy of it there.
  const auto xd = Kokkos::create_mirror_view_and_copy(memory_space(), HostX(block.X.data(), rows, cols));
  const auto yd = Kokkos::create_mirror_view_and_copy(memory_space(), HostY(block.y.data(), rows));
  s.allocate_x(exec, rows, cols);
  s.y = View1<T>(Kokkos::view_alloc(exec, Kokkos::WithoutInitializing, "kpmap::data::y"), rows);
  const auto X = s.X;
  const auto y = s.y;
  using policy2 = Kokkos::MDRangePolicy<execution_space, Kokkos::Rank<2>, Kokkos::IndexType<long long>>;
  Kokkos::parallel_for(
      "kpmap::data::cast_x", policy2(exec, {0, 0}, {rows, cols}),
      KOKKOS_LAMBDA(long long i, long long j) { X(i, j) = static_cast<T>(xd(i, j)); });
  Kokkos::parallel_for(
      "kpmap::data::cast_y", Kokkos::RangePolicy<execution_space, Kokkos::IndexType<long long>>(exec, 0, rows),
      KOKKOS_LAMBDA(long long i) { y(i) = static_cast<T>(yd(i)); });
  exec.fence();
  return s;
}

}  // namespace kpmap
