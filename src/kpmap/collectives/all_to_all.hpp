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
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_to_all(const Axis& group, const In& in, const Out& out, int split_axis, int concat_axis,
                bool tiled = false) {
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

  using Space = typename Staged<Out>::memory_space;
  Staged<In> staged(in, Use::read, aliased(in, out));
  Staged<Out> recv(out, Use::write);
  typename Staged<In>::flat_type send = staged.flat();
  if (outer_in > 1) {
    send = allocate<T, Space>("kpmap::all_to_all_send", m);
    swap_leading(staged.flat(), send, outer_in, n, chunk / outer_in);
  }
  typename Staged<Out>::flat_type received = recv.flat();
  if (outer_out > 1) received = allocate<T, Space>("kpmap::all_to_all_recv", m);
  fence_all();
  const MPI_Datatype type = mpi_datatype<T>();
  if (!chunked(chunk)) {
    const int count = static_cast<int>(chunk);
    check_mpi(MPI_Alltoall(send.data(), count, type, received.data(), count, type, comm),
              "MPI_Alltoall");
  } else {
    // Elements [offset, offset + k) of every rank's block, as one block type of extent chunk.
    for_each_chunk(chunk, [&](std::int64_t offset, int k) {
      const BlockType block(type, k, chunk);
      check_mpi(MPI_Alltoall(send.data() + offset, 1, block.get(), received.data() + offset, 1,
                             block.get(), comm),
                "MPI_Alltoall");
    });
  }
  if (outer_out > 1) swap_leading(received, recv.flat(), n, outer_out, chunk / outer_out);
  recv.finish();
}

// The returning variant: all_to_all keeps the rank in both modes.
template <class V>
result_view_t<V> all_to_all(const Axis& group, const V& x, int split_axis, int concat_axis,
                            bool tiled = false) {
  auto out = detail::make_view<result_view_t<V>>(
      "kpmap::all_to_all", all_to_all_shape(group, detail::shape_of(x), split_axis, concat_axis, tiled));
  all_to_all(group, x, out, split_axis, concat_axis, tiled);
  return out;
}

// The same over a mesh and axis names (JAX's form), resolved (Mesh::axis) on every call.
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_to_all(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                int split_axis, int concat_axis, bool tiled = false) {
  all_to_all(mesh.axis(axes), in, out, split_axis, concat_axis, tiled);
}
template <class V>
result_view_t<V> all_to_all(const Mesh& mesh, const AxisNames& axes, const V& x, int split_axis,
                            int concat_axis, bool tiled = false) {
  return all_to_all(mesh.axis(axes), x, split_axis, concat_axis, tiled);
}

}  // namespace kpmap
