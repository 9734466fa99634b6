// all_gather and psum_scatter over a mesh axis (or tuple), with JAX's shapes:
//   all_gather(x, axis, tiled=False):   inserts a dimension of the axis size at `axis`;
//                                       tiled=True concatenates along `axis` instead. A
//                                       negative axis counts from the end, as in JAX.
//   psum_scatter(x, scatter_dimension): sums over the axis and keeps block `axis_index` of
//                                       dimension d (untiled: shape[d] == axis size, d removed;
//                                       tiled: shape[d] divided by the axis size).
// Both views of the data are [outer, n, inner] row-major blocks where outer is the product of
// the dimensions before `axis` (or d); MPI wants [n, outer, inner], so a block swap runs only
// when outer > 1.
#pragma once

#include <mpi.h>

#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/collectives/pack.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

namespace detail {

inline std::string tiling_arguments(const char* name, int value, bool tiled) {
  return std::string(", ") + name + " " + std::to_string(value) + (tiled ? " (tiled)" : " (untiled)");
}

inline int comm_size(MPI_Comm comm) {
  int n = 1;
  check_mpi(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  return n;
}

}  // namespace detail

// out has all_gather_shape(mesh, axes, shape(in), axis, tiled).
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_gather(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out, int axis,
                bool tiled = false) {
  using namespace detail;
  check_pair<In, Out>();
  using T = value_t<In>;
  const MPI_Comm comm = mesh.comm(axes);
  const int n = comm_size(comm);
  const Shape shape = shape_of(in);
  const Shape expected = all_gather_shape(shape, axes, n, axis, tiled);
  check_output_shape("all_gather", axes, n, shape, tiling_arguments("axis", axis, tiled),
                     shape_of(out), expected);
  const std::int64_t m = static_cast<std::int64_t>(in.size());
  const int count = mpi_count("all_gather", m);
  const std::int64_t outer = product(shape, 0, all_gather_axis(shape, axes, n, axis, tiled));
  Staged<In> send(in, Use::read, aliased(in, out));
  Staged<Out> recv(out, Use::write);
  if (outer <= 1) {
    check_mpi(MPI_Allgather(send.data(), count, mpi_datatype<T>(), recv.data(), count,
                            mpi_datatype<T>(), comm),
              "MPI_Allgather");
  } else {
    auto gathered = allocate<T, typename Staged<Out>::memory_space>("kpmap::all_gather", n * m);
    check_mpi(MPI_Allgather(send.data(), count, mpi_datatype<T>(), gathered.data(), count,
                            mpi_datatype<T>(), comm),
              "MPI_Allgather");
    swap_leading(gathered, recv.flat(), n, outer, m / outer);
  }
  recv.finish();
}

// out has psum_scatter_shape(mesh, axes, shape(in), scatter_dimension, tiled).
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void psum_scatter(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                  int scatter_dimension, bool tiled = false) {
  using namespace detail;
  check_pair<In, Out>();
  using T = value_t<In>;
  const MPI_Comm comm = mesh.comm(axes);
  const int n = comm_size(comm);
  const Shape shape = shape_of(in);
  const Shape expected = psum_scatter_shape(shape, axes, n, scatter_dimension, tiled);
  check_output_shape("psum_scatter", axes, n, shape,
                     tiling_arguments("scatter_dimension", scatter_dimension, tiled),
                     shape_of(out), expected);
  const std::int64_t m = static_cast<std::int64_t>(in.size());
  const int count = mpi_count("psum_scatter", m / n);
  const std::int64_t outer = product(shape, 0, scatter_dimension);
  Staged<In> staged(in, Use::read, aliased(in, out));
  Staged<Out> recv(out, Use::write);
  typename Staged<In>::flat_type send = staged.flat();
  if (outer > 1) {
    send = allocate<T, typename Staged<In>::memory_space>("kpmap::psum_scatter", m);
    swap_leading(staged.flat(), send, outer, n, m / (outer * n));
    Kokkos::fence();
  }
  check_mpi(MPI_Reduce_scatter_block(send.data(), recv.data(), count, mpi_datatype<T>(),
                                     mpi_op<T>(ReduceOp::sum), comm),
            "MPI_Reduce_scatter_block");
  recv.finish();
}

template <class V>
result_view_t<V> all_gather(const Mesh& mesh, const AxisNames& axes, const V& x, int axis,
                            tiled_t) {
  auto out = detail::make_view<result_view_t<V>>(
      "kpmap::all_gather", all_gather_shape(mesh, axes, detail::shape_of(x), axis, true));
  all_gather(mesh, axes, x, out, axis, true);
  return out;
}

template <class V>
result_view_t<V, detail::rank_v<V> + 1> all_gather(const Mesh& mesh, const AxisNames& axes,
                                                   const V& x, int axis, untiled_t) {
  auto out = detail::make_view<result_view_t<V, detail::rank_v<V> + 1>>(
      "kpmap::all_gather", all_gather_shape(mesh, axes, detail::shape_of(x), axis, false));
  all_gather(mesh, axes, x, out, axis, false);
  return out;
}

template <class V>
result_view_t<V> psum_scatter(const Mesh& mesh, const AxisNames& axes, const V& x,
                              int scatter_dimension, tiled_t) {
  auto out = detail::make_view<result_view_t<V>>(
      "kpmap::psum_scatter",
      psum_scatter_shape(mesh, axes, detail::shape_of(x), scatter_dimension, true));
  psum_scatter(mesh, axes, x, out, scatter_dimension, true);
  return out;
}

template <class V>
result_view_t<V, detail::rank_v<V> - 1> psum_scatter(const Mesh& mesh, const AxisNames& axes,
                                                     const V& x, int scatter_dimension,
                                                     untiled_t) {
  auto out = detail::make_view<result_view_t<V, detail::rank_v<V> - 1>>(
      "kpmap::psum_scatter",
      psum_scatter_shape(mesh, axes, detail::shape_of(x), scatter_dimension, false));
  psum_scatter(mesh, axes, x, out, scatter_dimension, false);
  return out;
}

}  // namespace kpmap
