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
#include <vector>

#include "kpmap/collectives/chunk.hpp"
#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/collectives/pack.hpp"
#include "kpmap/collectives/request.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

namespace detail {

template <class Tiling>
using if_tiling_t =
    std::enable_if_t<std::is_same_v<Tiling, tiled_t> || std::is_same_v<Tiling, untiled_t>, int>;

inline std::string tiling_arguments(const char* name, int value, bool tiled) {
  return std::string(", ") + name + " " + std::to_string(value) + (tiled ? " (tiled)" : " (untiled)");
}

// all_gather's checked arguments and staged buffers, shared by the blocking and the
// non-blocking form (every check throws here, before anything is started). MPI gathers into
// recvbuf(): the output itself when outer <= 1, otherwise a [n, outer, inner] buffer that
// finish() swaps into the output's [outer, n, inner] order.
template <class Exec, class In, class Out>
struct GatherPlan {
  using T = value_t<In>;
  MPI_Comm comm;
  int n;
  std::int64_t m;  // elements per rank (of the input)
  MPI_Datatype type;
  std::int64_t outer;
  Staged<Exec, In> send;
  Staged<Exec, Out> recv;
  Scratch<T, typename Staged<Exec, Out>::memory_space> gathered;  // only when outer > 1

  T* recvbuf() const { return outer > 1 ? gathered.view().data() : recv.data(); }
  void finish(const Exec& exec) {
    if (outer > 1) swap_leading(recv.flat_exec(exec), gathered.view(), recv.flat(), n, outer, m / outer);
    recv.finish(exec, outer > 1);
  }

  // call(sendbuf, sendcount, recvbuf, recvcount, recvtype) once, or once per chunk of the m
  // elements: chunk [offset, offset + k) of every rank's block, received as one block type of
  // k elements whose extent is m (rank r's chunk lands at r * m + offset).
  template <class Call>
  void for_each_call(Call&& call) const {
    if (!chunked(m)) {
      call(send.data(), static_cast<int>(m), recvbuf(), static_cast<int>(m), type);
      return;
    }
    for_each_chunk(m, [&](std::int64_t offset, int k) {
      const BlockType block(type, k, m);
      call(send.data() + offset, k, recvbuf() + offset, 1, block.get());
    });
  }
};

template <class Exec, class In, class Out>
GatherPlan<Exec, In, Out> plan_all_gather(const Exec& exec, const Axis& group, const In& in, const Out& out,
                                          int axis, bool tiled) {
  check_pair<In, Out>();
  using T = value_t<In>;
  const AxisNames& axes = group.names();
  const MPI_Comm comm = group.comm();
  const int n = group.size();
  const Shape shape = shape_of(in);
  const Shape expected = all_gather_shape(shape, axes, n, axis, tiled);
  const Shape got = shape_of(out);
  if (got != expected) {
    check_output_shape("all_gather", axes, n, shape, tiling_arguments("axis", axis, tiled), got, expected);
  }
  const std::int64_t m = static_cast<std::int64_t>(in.size());
  const std::int64_t outer = product(shape, 0, all_gather_axis(shape, axes, n, axis, tiled));
  using Space = typename Staged<Exec, Out>::memory_space;
  return GatherPlan<Exec, In, Out>{comm,
                                   n,
                                   m,
                                   mpi_datatype<T>(),
                                   outer,
                                   Staged<Exec, In>(exec, in, Use::read, aliased(in, out)),
                                   Staged<Exec, Out>(exec, out, Use::write, false, Fence::own_work),
                                   Scratch<T, Space>(outer > 1 ? n * m : 0)};
}

// psum_scatter's checked arguments and staged buffers, shared likewise. When outer > 1 the
// input's [outer, n, inner] blocks are swapped into MPI's [n, outer, inner] order here, before
// the MPI call (MPI reads them); MPI writes the output directly (or its staging buffer). The
// 16-bit types sum through a user-defined op, so their buffers are always in host memory.
template <class Exec, class In, class Out>
struct ScatterPlan {
  using T = value_t<In>;
  static constexpr bool host_only = uses_user_op<T>(ReduceOp::sum);
  using Space = typename Staged<Exec, In, host_only>::memory_space;
  MPI_Comm comm;
  int n;
  std::int64_t count;  // elements per rank
  MPI_Datatype type;
  MPI_Op op;
  Staged<Exec, In, host_only> staged;
  Staged<Exec, Out, host_only> recv;
  Scratch<T, Space> swapped;  // only when outer > 1

  // staged's buffer, or its block-swapped copy
  T* sendbuf() const { return swapped.view().data() ? swapped.view().data() : staged.data(); }
  void finish(const Exec& exec) { recv.finish(exec, false); }

  // scatter(sendbuf, recvbuf, count) once (MPI_Reduce_scatter_block); or, when the count
  // exceeds the chunk limit, reduce(sendbuf, recvbuf, k, root) for every chunk and every root:
  // chunk [offset, offset + k) of block r is reduced onto rank r.
  template <class Scatter, class Reduce>
  void for_each_call(Scatter&& scatter, Reduce&& reduce) const {
    if (!chunked(count)) {
      scatter(sendbuf(), recv.data(), static_cast<int>(count));
      return;
    }
    for_each_chunk(count, [&](std::int64_t offset, int k) {
      for (int root = 0; root < n; ++root) {
        reduce(sendbuf() + root * count + offset, recv.data() + offset, k, root);
      }
    });
  }
};

template <class Exec, class In, class Out>
ScatterPlan<Exec, In, Out> plan_psum_scatter(const Exec& exec, const Axis& group, const In& in,
                                             const Out& out, int scatter_dimension, bool tiled) {
  check_pair<In, Out>();
  using T = value_t<In>;
  using Plan = ScatterPlan<Exec, In, Out>;
  constexpr bool host_only = Plan::host_only;
  const AxisNames& axes = group.names();
  const MPI_Comm comm = group.comm();
  const int n = group.size();
  const Shape shape = shape_of(in);
  const Shape expected = psum_scatter_shape(shape, axes, n, scatter_dimension, tiled);
  const Shape got = shape_of(out);
  if (got != expected) {
    check_output_shape("psum_scatter", axes, n, shape,
                       tiling_arguments("scatter_dimension", scatter_dimension, tiled), got, expected);
  }
  const std::int64_t m = static_cast<std::int64_t>(in.size());
  const std::int64_t outer = product(shape, 0, scatter_dimension);
  Plan p{comm,
         n,
         m / n,
         mpi_datatype<T>(),
         mpi_op<T>(ReduceOp::sum),
         Staged<Exec, In, host_only>(exec, in, Use::read, aliased(in, out)),
         Staged<Exec, Out, host_only>(exec, out, Use::write, false, Fence::own_work),
         Scratch<T, typename Plan::Space>(outer > 1 ? m : 0)};
  if (outer > 1) {
    const auto& space = p.staged.flat_exec(exec);
    swap_leading(space, p.staged.flat(), p.swapped.view(), outer, n, m / (outer * n));
    fence_instance(space);
  }
  return p;
}

}  // namespace detail

// out has all_gather_shape(group, shape(in), axis, tiled).
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_gather(const Exec& exec, const Axis& group, const In& in, const Out& out, int axis,
                bool tiled = false) {
  auto p = detail::plan_all_gather(exec, group, in, out, axis, tiled);
  p.for_each_call([&](const void* send, int count, void* recv, int recv_count,
                      MPI_Datatype recv_type) {
    check_mpi(MPI_Allgather(send, count, p.type, recv, recv_count, recv_type, p.comm),
              "MPI_Allgather");
  });
  p.finish(exec);
}

// out has psum_scatter_shape(group, shape(in), scatter_dimension, tiled).
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void psum_scatter(const Exec& exec, const Axis& group, const In& in, const Out& out,
                  int scatter_dimension, bool tiled = false) {
  auto p = detail::plan_psum_scatter(exec, group, in, out, scatter_dimension, tiled);
  p.for_each_call(
      [&](const void* send, void* recv, int count) {
        check_mpi(MPI_Reduce_scatter_block(send, recv, count, p.type, p.op, p.comm),
                  "MPI_Reduce_scatter_block");
      },
      [&](const void* send, void* recv, int count, int root) {
        check_mpi(MPI_Reduce(send, recv, count, p.type, p.op, root, p.comm), "MPI_Reduce");
      });
  p.finish(exec);
}

// Non-blocking all_gather (MPI_Iallgather) and psum_scatter (MPI_Ireduce_scatter_block): the
// same checks, errors and results as the blocking forms, all thrown before anything is
// started; the output holds the result after the Request's wait() (or a test() that returned
// true). iall_gather's block swap (outer > 1) runs at completion; ipsum_scatter's runs before
// the MPI call, since MPI reads the swapped blocks. See request.hpp for lifetime and progress.
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
Request iall_gather(const Exec& exec, const Axis& group, const In& in, const Out& out, int axis,
                    bool tiled = false) {
  auto p = detail::plan_all_gather(exec, group, in, out, axis, tiled);
  detail::Requests requests;
  p.for_each_call([&](const void* send, int count, void* recv, int recv_count,
                      MPI_Datatype recv_type) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallgather(send, count, p.type, recv, recv_count, recv_type, p.comm, &request),
              "MPI_Iallgather");
    requests.push(request);
  });
  const MPI_Comm comm = p.comm;
  return Request(std::move(requests), comm, std::move(p), exec, in, out);
}

template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
Request ipsum_scatter(const Exec& exec, const Axis& group, const In& in, const Out& out,
                      int scatter_dimension, bool tiled = false) {
  auto p = detail::plan_psum_scatter(exec, group, in, out, scatter_dimension, tiled);
  detail::Requests requests;
  p.for_each_call(
      [&](const void* send, void* recv, int count) {
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Ireduce_scatter_block(send, recv, count, p.type, p.op, p.comm, &request),
                  "MPI_Ireduce_scatter_block");
        requests.push(request);
      },
      [&](const void* send, void* recv, int count, int root) {
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Ireduce(send, recv, count, p.type, p.op, root, p.comm, &request),
                  "MPI_Ireduce");
        requests.push(request);
      });
  const MPI_Comm comm = p.comm;
  return Request(std::move(requests), comm, std::move(p), exec, in, out);
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> all_gather(const Exec& exec, const Axis& group, const V& x, int axis, tiled_t) {
  auto out = detail::make_view<result_view_t<V>>(
      "kpmap::all_gather", all_gather_shape(group, detail::shape_of(x), axis, true));
  all_gather(exec, group, x, out, axis, true);
  return out;
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V, detail::rank_v<V> + 1> all_gather(const Exec& exec, const Axis& group, const V& x,
                                                   int axis, untiled_t) {
  auto out = detail::make_view<result_view_t<V, detail::rank_v<V> + 1>>(
      "kpmap::all_gather", all_gather_shape(group, detail::shape_of(x), axis, false));
  all_gather(exec, group, x, out, axis, false);
  return out;
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> psum_scatter(const Exec& exec, const Axis& group, const V& x, int scatter_dimension,
                              tiled_t) {
  auto out = detail::make_view<result_view_t<V>>(
      "kpmap::psum_scatter",
      psum_scatter_shape(group, detail::shape_of(x), scatter_dimension, true));
  psum_scatter(exec, group, x, out, scatter_dimension, true);
  return out;
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V, detail::rank_v<V> - 1> psum_scatter(const Exec& exec, const Axis& group, const V& x,
                                                     int scatter_dimension, untiled_t) {
  auto out = detail::make_view<result_view_t<V, detail::rank_v<V> - 1>>(
      "kpmap::psum_scatter",
      psum_scatter_shape(group, detail::shape_of(x), scatter_dimension, false));
  psum_scatter(exec, group, x, out, scatter_dimension, false);
  return out;
}

// Without an instance: the default one.
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_gather(const Axis& group, const In& in, const Out& out, int axis, bool tiled = false) {
  all_gather(detail::default_instance_for<Out>(), group, in, out, axis, tiled);
}
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void psum_scatter(const Axis& group, const In& in, const Out& out, int scatter_dimension,
                  bool tiled = false) {
  psum_scatter(detail::default_instance_for<Out>(), group, in, out, scatter_dimension, tiled);
}
template <class In, class Out>
Request iall_gather(const Axis& group, const In& in, const Out& out, int axis, bool tiled = false) {
  return iall_gather(detail::default_instance_for<Out>(), group, in, out, axis, tiled);
}
template <class In, class Out>
Request ipsum_scatter(const Axis& group, const In& in, const Out& out, int scatter_dimension,
                      bool tiled = false) {
  return ipsum_scatter(detail::default_instance_for<Out>(), group, in, out, scatter_dimension, tiled);
}
template <class V, class Tiling, detail::if_tiling_t<Tiling> = 0>
auto all_gather(const Axis& group, const V& x, int axis, Tiling tiling) {
  return all_gather(detail::default_instance_for<V>(), group, x, axis, tiling);
}
template <class V, class Tiling, detail::if_tiling_t<Tiling> = 0>
auto psum_scatter(const Axis& group, const V& x, int scatter_dimension, Tiling tiling) {
  return psum_scatter(detail::default_instance_for<V>(), group, x, scatter_dimension, tiling);
}

// The same over a mesh and axis names (JAX's form), with or without an instance, resolved
// (Mesh::axis) on every call.
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_gather(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out, int axis,
                bool tiled = false) {
  all_gather(mesh.axis(axes), in, out, axis, tiled);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void all_gather(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                int axis, bool tiled = false) {
  all_gather(exec, mesh.axis(axes), in, out, axis, tiled);
}
template <class In, class Out, std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void psum_scatter(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                  int scatter_dimension, bool tiled = false) {
  psum_scatter(mesh.axis(axes), in, out, scatter_dimension, tiled);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0,
          std::enable_if_t<Kokkos::is_view<Out>::value, int> = 0>
void psum_scatter(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in,
                  const Out& out, int scatter_dimension, bool tiled = false) {
  psum_scatter(exec, mesh.axis(axes), in, out, scatter_dimension, tiled);
}
template <class In, class Out>
Request iall_gather(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                    int axis, bool tiled = false) {
  return iall_gather(mesh.axis(axes), in, out, axis, tiled);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
Request iall_gather(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in,
                    const Out& out, int axis, bool tiled = false) {
  return iall_gather(exec, mesh.axis(axes), in, out, axis, tiled);
}
template <class In, class Out>
Request ipsum_scatter(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
                      int scatter_dimension, bool tiled = false) {
  return ipsum_scatter(mesh.axis(axes), in, out, scatter_dimension, tiled);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
Request ipsum_scatter(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in,
                      const Out& out, int scatter_dimension, bool tiled = false) {
  return ipsum_scatter(exec, mesh.axis(axes), in, out, scatter_dimension, tiled);
}
template <class V, class Tiling, detail::if_tiling_t<Tiling> = 0>
auto all_gather(const Mesh& mesh, const AxisNames& axes, const V& x, int axis, Tiling tiling) {
  return all_gather(mesh.axis(axes), x, axis, tiling);
}
template <class Exec, class V, class Tiling, detail::if_exec_t<Exec> = 0, detail::if_tiling_t<Tiling> = 0>
auto all_gather(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x, int axis,
                Tiling tiling) {
  return all_gather(exec, mesh.axis(axes), x, axis, tiling);
}
template <class V, class Tiling, detail::if_tiling_t<Tiling> = 0>
auto psum_scatter(const Mesh& mesh, const AxisNames& axes, const V& x, int scatter_dimension, Tiling tiling) {
  return psum_scatter(mesh.axis(axes), x, scatter_dimension, tiling);
}
template <class Exec, class V, class Tiling, detail::if_exec_t<Exec> = 0, detail::if_tiling_t<Tiling> = 0>
auto psum_scatter(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x,
                  int scatter_dimension, Tiling tiling) {
  return psum_scatter(exec, mesh.axis(axes), x, scatter_dimension, tiling);
}

}  // namespace kpmap
