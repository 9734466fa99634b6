// ppermute, pbroadcast, axis_index and axis_size over a mesh axis (or tuple).
//   ppermute(x, perm):      perm holds (source, destination) pairs of axis indices in [-n, n)
//                           (negative ones count from the end, as in JAX), no source and no
//                           destination twice; a rank that receives nothing gets zeros.
//   pbroadcast(x, source):  every rank gets the View of axis index `source`.
#pragma once

#include <mpi.h>

#include <utility>
#include <vector>

#include "kpmap/collectives/chunk.hpp"
#include "kpmap/collectives/gather.hpp"

namespace kpmap {

using Permutation = std::vector<std::pair<int, int>>;

template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void ppermute(const Exec& exec, const Axis& group, const In& in, const Out& out, const Permutation& perm) {
  using namespace detail;
  check_pair<In, Out>();
  using T = value_t<In>;
  const MPI_Comm comm = group.comm();
  const int n = group.size(), me = group.index();
  check_permutation(group.names(), n, shape_of(in), perm);
  check_same_shape("ppermute", group.names(), n, in, out);
  int to = -1, from = -1;
  for (const auto& [src, dst] : perm) {  // negative indices count from the end, as in JAX
    if (axis_position(src, n) == me) to = axis_position(dst, n);
    if (axis_position(dst, n) == me) from = axis_position(src, n);
  }
  const std::int64_t total = static_cast<std::int64_t>(in.size());
  Staged<Exec, In> send(exec, in, Use::read, aliased(in, out));
  Staged<Exec, Out> recv(exec, out, Use::write, false, Fence::own_work);
  const MPI_Datatype type = mpi_datatype<T>();
  constexpr int tag = 0x6b70;  // a private communicator: any fixed tag is unambiguous
  // One send and one receive per chunk; messages between two ranks with one tag arrive in order.
  MPI_Request first[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  std::vector<MPI_Request> more;  // further chunks' requests (none unless chunked)
  for_each_chunk(total, [&](std::int64_t offset, int count) {
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    if (from >= 0) {
      check_mpi(MPI_Irecv(recv.data() + offset, count, type, from, tag, comm, &r[0]), "MPI_Irecv");
    }
    if (to >= 0) {
      check_mpi(MPI_Isend(send.data() + offset, count, type, to, tag, comm, &r[1]), "MPI_Isend");
    }
    if (offset == 0) {
      first[0] = r[0];
      first[1] = r[1];
    } else {
      more.insert(more.end(), r, r + 2);
    }
  });
  check_mpi(MPI_Waitall(2, first, MPI_STATUSES_IGNORE), "MPI_Waitall");
  if (!more.empty()) {
    check_mpi(MPI_Waitall(static_cast<int>(more.size()), more.data(), MPI_STATUSES_IGNORE),
              "MPI_Waitall");
  }
  if (from < 0) fill_zero(recv.flat_exec(exec), recv.flat());
  recv.finish(exec, from < 0);
}

template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void pbroadcast(const Exec& exec, const Axis& group, const In& in, const Out& out, int source) {
  using namespace detail;
  check_pair<In, Out>();
  using T = value_t<In>;
  const MPI_Comm comm = group.comm();
  const int n = group.size(), me = group.index();
  check_source(group.names(), n, shape_of(in), source);
  check_same_shape("pbroadcast", group.names(), n, in, out);
  const bool in_place = aliased(in, out);
  Staged<Exec, Out> buffer(exec, out, me == source && in_place ? Use::read_write : Use::write);
  if (me == source && !in_place) {
    Staged<Exec, In> own(exec, in, Use::read, false, Fence::own_work);
    Kokkos::deep_copy(buffer.flat_exec(exec), buffer.flat(), own.flat());
    fence_instance(buffer.flat_exec(exec));
  }
  for_each_chunk(static_cast<std::int64_t>(in.size()), [&](std::int64_t offset, int count) {
    check_mpi(MPI_Bcast(buffer.data() + offset, count, mpi_datatype<T>(), source, comm),
              "MPI_Bcast");
  });
  buffer.finish(exec, false);
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> ppermute(const Exec& exec, const Axis& group, const V& x, const Permutation& perm) {
  auto out = detail::make_view<result_view_t<V>>("kpmap::ppermute", detail::shape_of(x));
  ppermute(exec, group, x, out, perm);
  return out;
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> pbroadcast(const Exec& exec, const Axis& group, const V& x, int source) {
  auto out = detail::make_view<result_view_t<V>>("kpmap::pbroadcast", detail::shape_of(x));
  pbroadcast(exec, group, x, out, source);
  return out;
}

// Without an instance: the default one.
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void ppermute(const Axis& group, const In& in, const Out& out, const Permutation& perm) {
  ppermute(detail::default_instance_for<Out>(), group, in, out, perm);
}
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void pbroadcast(const Axis& group, const In& in, const Out& out, int source) {
  pbroadcast(detail::default_instance_for<Out>(), group, in, out, source);
}
template <class V>
result_view_t<V> ppermute(const Axis& group, const V& x, const Permutation& perm) {
  return ppermute(detail::default_instance_for<V>(), group, x, perm);
}
template <class V>
result_view_t<V> pbroadcast(const Axis& group, const V& x, int source) {
  return pbroadcast(detail::default_instance_for<V>(), group, x, source);
}

// The same over a mesh and axis names (JAX's form), with or without an instance, resolved
// (Mesh::axis) on every call.
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void ppermute(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
              const Permutation& perm) {
  ppermute(mesh.axis(axes), in, out, perm);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void ppermute(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
              const Permutation& perm) {
  ppermute(exec, mesh.axis(axes), in, out, perm);
}
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void pbroadcast(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                int source) {
  pbroadcast(mesh.axis(axes), in, out, source);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void pbroadcast(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                int source) {
  pbroadcast(exec, mesh.axis(axes), in, out, source);
}
template <class V>
result_view_t<V> ppermute(const Mesh& mesh, const AxisNames& axes, const V& x,
                          const Permutation& perm) {
  return ppermute(mesh.axis(axes), x, perm);
}
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> ppermute(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x,
                          const Permutation& perm) {
  return ppermute(exec, mesh.axis(axes), x, perm);
}
template <class V>
result_view_t<V> pbroadcast(const Mesh& mesh, const AxisNames& axes, const V& x, int source) {
  return pbroadcast(mesh.axis(axes), x, source);
}
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> pbroadcast(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x,
                            int source) {
  return pbroadcast(exec, mesh.axis(axes), x, source);
}

// As jax.lax.axis_index / the axis size: row-major over a tuple, in the tuple's order.
inline int axis_index(const Axis& group) { return group.index(); }
inline int axis_size(const Axis& group) { return group.size(); }
inline int axis_index(const Mesh& mesh, const AxisNames& axes) { return mesh.axis_index(axes); }
inline int axis_size(const Mesh& mesh, const AxisNames& axes) { return mesh.axis_size(axes); }

}  // namespace kpmap
