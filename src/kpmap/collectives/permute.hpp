// ppermute, pbroadcast, axis_index and axis_size over a mesh axis (or tuple).
//   ppermute(x, perm):      perm holds (source, destination) pairs of axis indices, no source
//                           and no destination twice; a rank that receives nothing gets zeros.
//   pbroadcast(x, source):  every rank gets the View of axis index `source`.
#pragma once

#include <mpi.h>

#include <utility>
#include <vector>

#include "kpmap/collectives/gather.hpp"

namespace kpmap {

using Permutation = std::vector<std::pair<int, int>>;

template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void ppermute(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
              const Permutation& perm) {
  using namespace detail;
  check_pair<In, Out>();
  using T = value_t<In>;
  const MPI_Comm comm = mesh.comm(axes);
  const int n = comm_size(comm);
  const Shape shape = shape_of(in);
  check_permutation(axes, n, shape, perm);
  check_output_shape("ppermute", axes, n, shape, "", shape_of(out), shape);
  int me = 0;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  int to = -1, from = -1;
  for (const auto& [src, dst] : perm) {
    if (src == me) to = dst;
    if (dst == me) from = src;
  }
  const int count = mpi_count("ppermute", static_cast<std::int64_t>(in.size()));
  Staged<In> send(in, Use::read, aliased(in, out));
  Staged<Out> recv(out, Use::write);
  MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  constexpr int tag = 0x6b70;  // a private communicator: any fixed tag is unambiguous
  if (from >= 0) {
    check_mpi(MPI_Irecv(recv.data(), count, mpi_datatype<T>(), from, tag, comm, &requests[0]),
              "MPI_Irecv");
  }
  if (to >= 0) {
    check_mpi(MPI_Isend(send.data(), count, mpi_datatype<T>(), to, tag, comm, &requests[1]),
              "MPI_Isend");
  }
  check_mpi(MPI_Waitall(2, requests, MPI_STATUSES_IGNORE), "MPI_Waitall");
  if (from < 0) fill_zero(recv.flat());
  recv.finish();
}

template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void pbroadcast(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                int source) {
  using namespace detail;
  check_pair<In, Out>();
  using T = value_t<In>;
  const MPI_Comm comm = mesh.comm(axes);
  const int n = comm_size(comm);
  const Shape shape = shape_of(in);
  check_source(axes, n, shape, source);
  check_output_shape("pbroadcast", axes, n, shape, "", shape_of(out), shape);
  int me = 0;
  check_mpi(MPI_Comm_rank(comm, &me), "MPI_Comm_rank");
  const int count = mpi_count("pbroadcast", static_cast<std::int64_t>(in.size()));
  const bool in_place = aliased(in, out);
  Staged<Out> buffer(out, me == source && in_place ? Use::read_write : Use::write);
  if (me == source && !in_place) {
    Staged<In> own(in, Use::read);
    Kokkos::deep_copy(buffer.flat(), own.flat());
    Kokkos::fence();
  }
  check_mpi(MPI_Bcast(buffer.data(), count, mpi_datatype<T>(), source, comm), "MPI_Bcast");
  buffer.finish();
}

template <class V>
result_view_t<V> ppermute(const Mesh& mesh, const AxisNames& axes, const V& x,
                          const Permutation& perm) {
  auto out = detail::make_view<result_view_t<V>>("kpmap::ppermute", detail::shape_of(x));
  ppermute(mesh, axes, x, out, perm);
  return out;
}

template <class V>
result_view_t<V> pbroadcast(const Mesh& mesh, const AxisNames& axes, const V& x, int source) {
  auto out = detail::make_view<result_view_t<V>>("kpmap::pbroadcast", detail::shape_of(x));
  pbroadcast(mesh, axes, x, out, source);
  return out;
}

// As jax.lax.axis_index / the axis size: row-major over a tuple, in the tuple's order.
inline int axis_index(const Mesh& mesh, const AxisNames& axes) { return mesh.axis_index(axes); }
inline int axis_size(const Mesh& mesh, const AxisNames& axes) { return mesh.axis_size(axes); }

}  // namespace kpmap
