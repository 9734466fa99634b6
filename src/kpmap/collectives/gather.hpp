// all_gather and psum_scatter over a mesh axis (or tuple), with JAX's shapes:
//   all_gather(x, axis, tiled=False):   inserts a dimension of the axis size at `axis`;
//                                       tiled=True concatenates along `axis` instead. A
//                                       negative axis counts from the end, as in JAX.
//   psum_scatter(x, scatter_dimension): sums over the axis and keeps block `axis_index` of
//                                       dimension d (untiled: shape[d] == axis size, d removed;
//                                       tiled: shape[d] divided by the axis size).
// Both views of the data are [outer, n, inner] row-major blocks where outer is the product of
// the dimensions before `axis` (or d); MPI wants [n, outer, inner], so a block swap runs only
// when outer > 1. iall_gather and ipsum_scatter are the non-blocking forms (request.hpp).
#pragma once

#include <mpi.h>

#include <utility>

#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/collectives/pack.hpp"
#include "kpmap/collectives/request.hpp"
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

// all_gather's checked arguments and staged buffers, shared by the blocking and the
// non-blocking form (every check throws here, before anything is started). MPI gathers into
// recvbuf(): the output itself when outer <= 1, otherwise a [n, outer, inner] buffer that
// finish() swaps into the output's [outer, n, inner] order.
template <class In, class Out>
struct GatherPlan {
  using T = value_t<In>;
  MPI_Comm comm;
  int n;
  int count;  // elements per rank
  MPI_Datatype type;
  std::int64_t m;  // elements of the input
  std::int64_t outer;
  Staged<In> send;
  Staged<Out> recv;
  Flat<T, typename Staged<Out>::memory_space> gathered;  // only when outer > 1

  void* recvbuf() const { return outer > 1 ? gathered.data() : recv.data(); }
  void finish() {
    if (outer > 1) swap_leading(gathered, recv.flat(), n, outer, m / outer);
    recv.finish();
  }
};

template <class In, class Out>
GatherPlan<In, Out> plan_all_gather(const Mesh& mesh, const AxisNames& axes, const In& in,
                                    const Out& out, int axis, bool tiled) {
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
  GatherPlan<In, Out> p{comm, n, count, mpi_datatype<T>(), m, outer,
                        Staged<In>(in, Use::read, aliased(in, out)), Staged<Out>(out, Use::write),
                        {}};
  if (outer > 1) {
    p.gathered = allocate<T, typename Staged<Out>::memory_space>("kpmap::all_gather", n * m);
  }
  return p;
}

// psum_scatter's checked arguments and staged buffers, shared likewise. When outer > 1 the
// input's [outer, n, inner] blocks are swapped into MPI's [n, outer, inner] order here, before
// the MPI call (MPI reads them); MPI writes the output directly (or its staging buffer).
template <class In, class Out>
struct ScatterPlan {
  MPI_Comm comm;
  int n;
  int count;  // elements per rank
  MPI_Datatype type;
  MPI_Op op;
  Staged<In> staged;
  Staged<Out> recv;
  typename Staged<In>::flat_type send;  // staged.flat(), or its block-swapped copy

  void finish() { recv.finish(); }
};

template <class In, class Out>
ScatterPlan<In, Out> plan_psum_scatter(const Mesh& mesh, const AxisNames& axes, const In& in,
                                       const Out& out, int scatter_dimension, bool tiled) {
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
  ScatterPlan<In, Out> p{comm, n, count, mpi_datatype<T>(), mpi_op<T>(ReduceOp::sum),
                         Staged<In>(in, Use::read, aliased(in, out)), Staged<Out>(out, Use::write),
                         {}};
  p.send = p.staged.flat();
  if (outer > 1) {
    p.send = allocate<T, typename Staged<In>::memory_space>("kpmap::psum_scatter", m);
    swap_leading(p.staged.flat(), p.send, outer, n, m / (outer * n));
    Kokkos::fence();
  }
  return p;
}

}  // namespace detail

// out has all_gather_shape(mesh, axes, shape(in), axis, tiled).
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_gather(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out, int axis,
                bool tiled = false) {
  auto p = detail::plan_all_gather(mesh, axes, in, out, axis, tiled);
  check_mpi(MPI_Allgather(p.send.data(), p.count, p.type, p.recvbuf(), p.count, p.type, p.comm),
            "MPI_Allgather");
  p.finish();
}

// out has psum_scatter_shape(mesh, axes, shape(in), scatter_dimension, tiled).
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void psum_scatter(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                  int scatter_dimension, bool tiled = false) {
  auto p = detail::plan_psum_scatter(mesh, axes, in, out, scatter_dimension, tiled);
  check_mpi(MPI_Reduce_scatter_block(p.send.data(), p.recv.data(), p.count, p.type, p.op, p.comm),
            "MPI_Reduce_scatter_block");
  p.finish();
}

// Non-blocking all_gather (MPI_Iallgather) and psum_scatter (MPI_Ireduce_scatter_block): the
// same checks, errors and results as the blocking forms, all thrown before anything is
// started; the output holds the result after the Request's wait() (or a test() that returned
// true). iall_gather's block swap (outer > 1) runs at completion; ipsum_scatter's runs before
// the MPI call, since MPI reads the swapped blocks. See request.hpp for lifetime and progress.
template <class In, class Out>
Request iall_gather(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                    int axis, bool tiled = false) {
  auto p = detail::plan_all_gather(mesh, axes, in, out, axis, tiled);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallgather(p.send.data(), p.count, p.type, p.recvbuf(), p.count, p.type, p.comm,
                           &request),
            "MPI_Iallgather");
  const MPI_Comm comm = p.comm;
  return Request(request, comm, std::move(p));
}

template <class In, class Out>
Request ipsum_scatter(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                      int scatter_dimension, bool tiled = false) {
  auto p = detail::plan_psum_scatter(mesh, axes, in, out, scatter_dimension, tiled);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Ireduce_scatter_block(p.send.data(), p.recv.data(), p.count, p.type, p.op,
                                      p.comm, &request),
            "MPI_Ireduce_scatter_block");
  const MPI_Comm comm = p.comm;
  return Request(request, comm, std::move(p));
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
