// all_to_all over a mesh axis (or tuple), with jax.lax.all_to_all's exact semantics: the input is
// split into n chunks along split_axis, chunk j goes to axis index j, and the n chunks received
// are concatenated along concat_axis in source order.
//   tiled:   shape[split] % n == 0; shape[split] /= n, then shape[concat] *= n.
//   untiled: shape[split] == n; split_axis is removed and a new axis of size n is inserted at
//            concat_axis (a position in the output, as in JAX).
// Both sides are [outer, n, inner] row-major blocks (outer: the dimensions before split_axis on
// the way out, before concat_axis on the way in); MPI_Alltoall wants [n, outer, inner].
#pragma once

#include <mpi.h>

#include "kpmap/collectives/chunk.hpp"
#include "kpmap/collectives/gather.hpp"

namespace kpmap {

// out has all_to_all_shape(group, shape(in), split_axis, concat_axis, tiled).
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_to_all(const Exec& exec, const Axis& group, const In& in, const Out& out, int split_axis,
                int concat_axis, bool tiled = false) {
  using namespace detail;
  check_pair<In, Out>();
  using T = value_t<In>;
  const AxisNames& axes = group.names();
  const MPI_Comm comm = group.comm();
  const int n = group.size();
  const Shape shape = shape_of(in);
  const Shape expected = all_to_all_shape(shape, axes, n, split_axis, concat_axis, tiled);
  const Shape got = shape_of(out);
  if (got != expected) {
    check_output_shape("all_to_all", axes, n, shape,
                       ", split_axis " + std::to_string(split_axis) + ", concat_axis " +
                           std::to_string(concat_axis) + (tiled ? " (tiled)" : " (untiled)"),
                       got, expected);
  }
  const std::int64_t m = static_cast<std::int64_t>(in.size());
  const std::int64_t chunk = m / n;
  // One chunk's shape: the split dimension divided by n (tiled) or dropped (untiled).
  Shape chunk_shape = shape;
  if (tiled) {
    chunk_shape[split_axis] /= n;
  } else {
    chunk_shape.erase(chunk_shape.begin() + split_axis);
  }
  const std::int64_t outer_in = product(shape, 0, split_axis);
  const std::int64_t outer_out = product(chunk_shape, 0, concat_axis);

  using Space = typename Staged<Exec, Out>::memory_space;
  Staged<Exec, In> staged(exec, in, Use::read, aliased(in, out));
  Staged<Exec, Out> recv(exec, out, Use::write, false, Fence::own_work);
  const auto& space = recv.flat_exec(exec);
  const Scratch<T, Space> swapped_send(outer_in > 1 ? m : 0), swapped_recv(outer_out > 1 ? m : 0);
  T* send = staged.data();
  if (outer_in > 1) {
    swap_leading(space, staged.flat(), swapped_send.view(), outer_in, n, chunk / outer_in);
    fence_instance(space);
    send = swapped_send.view().data();
  }
  T* received = outer_out > 1 ? swapped_recv.view().data() : recv.data();
  const MPI_Datatype type = mpi_datatype<T>();
  if (!chunked(chunk)) {
    const int count = static_cast<int>(chunk);
    check_mpi(MPI_Alltoall(send, count, type, received, count, type, comm), "MPI_Alltoall");
  } else {
    // Elements [offset, offset + k) of every rank's block, as one block type of extent chunk.
    for_each_chunk(chunk, [&](std::int64_t offset, int k) {
      const BlockType block(type, k, chunk);
      check_mpi(MPI_Alltoall(send + offset, 1, block.get(), received + offset, 1, block.get(), comm),
                "MPI_Alltoall");
    });
  }
  if (outer_out > 1) swap_leading(space, swapped_recv.view(), recv.flat(), n, outer_out, chunk / outer_out);
  recv.finish(exec, outer_out > 1);
}

// The returning variant: all_to_all keeps the rank in both modes.
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> all_to_all(const Exec& exec, const Axis& group, const V& x, int split_axis,
                            int concat_axis, bool tiled = false) {
  auto out = detail::make_view<result_view_t<V>>(
      "kpmap::all_to_all", all_to_all_shape(group, detail::shape_of(x), split_axis, concat_axis, tiled));
  all_to_all(exec, group, x, out, split_axis, concat_axis, tiled);
  return out;
}

// Without an instance: the default one.
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_to_all(const Axis& group, const In& in, const Out& out, int split_axis, int concat_axis,
                bool tiled = false) {
  all_to_all(detail::default_instance_for<Out>(), group, in, out, split_axis, concat_axis, tiled);
}
template <class V>
result_view_t<V> all_to_all(const Axis& group, const V& x, int split_axis, int concat_axis,
                            bool tiled = false) {
  return all_to_all(detail::default_instance_for<V>(), group, x, split_axis, concat_axis, tiled);
}

// The same over a mesh and axis names (JAX's form), with or without an instance, resolved
// (Mesh::axis) on every call.
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_to_all(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                int split_axis, int concat_axis, bool tiled = false) {
  all_to_all(mesh.axis(axes), in, out, split_axis, concat_axis, tiled);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_to_all(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                int split_axis, int concat_axis, bool tiled = false) {
  all_to_all(exec, mesh.axis(axes), in, out, split_axis, concat_axis, tiled);
}
template <class V>
result_view_t<V> all_to_all(const Mesh& mesh, const AxisNames& axes, const V& x, int split_axis,
                            int concat_axis, bool tiled = false) {
  return all_to_all(mesh.axis(axes), x, split_axis, concat_axis, tiled);
}
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> all_to_all(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x,
                            int split_axis, int concat_axis, bool tiled = false) {
  return all_to_all(exec, mesh.axis(axes), x, split_axis, concat_axis, tiled);
}

}  // namespace kpmap
