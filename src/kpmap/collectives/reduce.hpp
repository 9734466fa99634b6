// Elementwise reductions over a mesh axis (or tuple), as jax.lax.psum / pmean / pmax / pmin:
// every rank on the axis gets the reduction of everybody's View.
//   psum(mesh, "data", in, out);   // out of place
//   psum(mesh, "data", x, x);      // in place (MPI_IN_PLACE)
//   auto s = psum(mesh, {"data", "model"}, x);  // a new View
//   kpmap::Request r = ipsum(mesh, "data", x, x); ...; r.wait();  // non-blocking (request.hpp)
// Each also takes a resolved kpmap::Axis (mesh.hpp) in place of the mesh and the names:
//   const kpmap::Axis data = mesh.axis("data");
//   psum(data, x, x);
#pragma once

#include <mpi.h>

#include <optional>
#include <type_traits>
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

// A reduction's checked arguments and staged buffers, shared by the blocking and the
// non-blocking form: every check throws here, before anything is started. MPI reduces
// sendbuf(offset) into recvbuf(offset), chunk by chunk (chunk.hpp); finish() moves its result
// into the output View. Reductions through a user-defined MPI op stage device Views through
// host memory even with GPU-aware MPI (HostOnly; mpi_may_access in pack.hpp).
template <class Exec, class In, class Out, bool HostOnly>
struct ReducePlan {
  MPI_Comm comm;
  int n;  // the group's size
  std::int64_t count;
  MPI_Datatype type;
  MPI_Op op;
  bool mean;
  std::optional<Staged<Exec, In, HostOnly>> send;  // empty in place
  Staged<Exec, Out, HostOnly> recv;

  const void* sendbuf(std::int64_t offset) const {
    return send ? static_cast<const void*>(send->data() + offset) : MPI_IN_PLACE;
  }
  void* recvbuf(std::int64_t offset) const { return recv.data() + offset; }
  void finish(const Exec& exec) {
    if (mean) divide(recv.flat_exec(exec), recv.flat(), n);
    recv.finish(exec, mean);
  }
};

template <ReduceOp Op, class Exec, class In, class Out>
auto plan_reduce(const char* name, bool mean, const Exec& exec, const Axis& axis, const In& in,
                 const Out& out) {
  check_pair<In, Out>();
  using T = value_t<In>;
  constexpr bool host_only = uses_user_op<T>(Op);
  const MPI_Comm comm = axis.comm();
  const int n = axis.size();
  check_same_shape(name, axis.names(), n, in, out);
  const std::int64_t count = static_cast<std::int64_t>(in.size());
  const MPI_Datatype type = mpi_datatype<T>();
  const MPI_Op mpi_reduce = mpi_op<T>(Op);
  using Plan = ReducePlan<Exec, In, Out, host_only>;
  if (aliased(in, out)) {  // MPI_IN_PLACE
    return Plan{comm, n, count, type, mpi_reduce, mean, std::nullopt,
                Staged<Exec, Out, host_only>(exec, out, Use::read_write)};
  }
  // Built in place: no Staged is moved (each move would pass its scratch buffers along).
  return Plan{comm, n, count, type, mpi_reduce, mean,
              std::optional<Staged<Exec, In, host_only>>(std::in_place, exec, in, Use::read),
              Staged<Exec, Out, host_only>(exec, out, Use::write, false, Fence::own_work)};
}

template <ReduceOp Op, class Exec, class In, class Out>
void reduce(const char* name, bool mean, const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  auto p = plan_reduce<Op>(name, mean, exec, axis, in, out);
  for_each_chunk(p.count, [&](std::int64_t offset, int count) {
    check_mpi(MPI_Allreduce(p.sendbuf(offset), p.recvbuf(offset), count, p.type, p.op, p.comm),
              "MPI_Allreduce");
  });
  p.finish(exec);
}

template <ReduceOp Op, class Exec, class In, class Out>
Request ireduce(const char* name, bool mean, const Exec& exec, const Axis& axis, const In& in,
                const Out& out) {
  auto p = plan_reduce<Op>(name, mean, exec, axis, in, out);
  detail::Requests requests;
  for_each_chunk(p.count, [&](std::int64_t offset, int count) {
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Iallreduce(p.sendbuf(offset), p.recvbuf(offset), count, p.type, p.op, p.comm,
                             &request),
              "MPI_Iallreduce");
    requests.push(request);
  });
  const MPI_Comm comm = p.comm;
  return Request(std::move(requests), comm, std::move(p), exec, in, out);
}

template <ReduceOp Op, class Exec, class V>
result_view_t<V> reduce_new(const char* name, bool mean, const Exec& exec, const Axis& axis, const V& x) {
  auto out = make_view<result_view_t<V>>(name, shape_of(x));
  reduce<Op>(name, mean, exec, axis, x, out);
  return out;
}

// pmean of integers, as JAX: the integer psum (exact, wrapping on overflow as JAX's int psum
// does), then sum / n in double, rounded once to out's floating type (pmean_result_t).
template <class Exec, class In, class Out>
void integer_mean(const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  using T = value_t<In>;
  static_assert(std::is_same_v<typename Out::value_type, pmean_result_t<T>>,
                "pmean of integers writes pmean_result_t<T> (float up to 32 bits, else double)");
  static_assert(std::is_same_v<typename In::memory_space, typename Out::memory_space>,
                "input and output Views must live in the same memory space");
  const int n = axis.size();
  check_same_shape("pmean", axis.names(), n, in, out);
  const Scratch<T, typename In::memory_space> buffer(static_cast<std::int64_t>(in.size()));
  const auto sum = make_view_at<result_view_t<In>>(buffer.view().data(), shape_of(in));
  reduce<ReduceOp::sum>("pmean", false, exec, axis, in, sum);
  divide_into(exec, sum, out, n);
  fence_instance(exec);  // the output is ready when pmean returns
}

}  // namespace detail

// Every collective takes a Kokkos execution space instance first, or none (the default instance
// of the Views' execution space). Kernels (packing, block swaps, pmean's division) and copies
// run on that instance, and the collective fences only that instance before MPI touches the
// Views, and again before it returns: work on other instances that writes the input must be
// fenced by the caller.

// Sum over the axis. 16-bit types add in fp32 inside MPI's reduction (see mpi_types.hpp).
// Views of rank 0 to 3; over the empty tuple of axes (AxisNames()) the identity, as in JAX.
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void psum(const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  detail::reduce<ReduceOp::sum>("psum", false, exec, axis, in, out);
}

// Mean over the axis: psum / axis_size. Floating types keep their type (out has In's element
// type); integers write pmean_result_t (float for up to 32 bits, double for 64), as JAX.
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmean(const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  using T = detail::value_t<In>;
  static_assert(element_type_check<T>::value);
  if constexpr (is_floating_element_v<T>) {
    detail::reduce<ReduceOp::sum>("pmean", true, exec, axis, in, out);
  } else {
    detail::integer_mean(exec, axis, in, out);
  }
}

template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmax(const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  detail::reduce<ReduceOp::max>("pmax", false, exec, axis, in, out);
}

template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmin(const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  detail::reduce<ReduceOp::min>("pmin", false, exec, axis, in, out);
}

// Non-blocking psum (MPI_Iallreduce): the same checks, errors and result as psum, which are all
// thrown before anything is started; the output View holds the sum after the Request's wait()
// (or a test() that returned true). See request.hpp for the lifetime and progress rules.
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
Request ipsum(const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  return detail::ireduce<ReduceOp::sum>("psum", false, exec, axis, in, out);
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> psum(const Exec& exec, const Axis& axis, const V& x) {
  return detail::reduce_new<ReduceOp::sum>("psum", false, exec, axis, x);
}

// The View pmean(axis, x) returns: x's shape, layout and device, element type pmean_result_t
// (x's own for floating types).
template <class V>
using pmean_view_t =
    Kokkos::View<typename detail::data_type<pmean_result_t<detail::value_t<V>>,
                                            detail::rank_v<V>>::type,
                 detail::result_layout_t<V>, typename V::device_type>;

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
pmean_view_t<V> pmean(const Exec& exec, const Axis& axis, const V& x) {
  auto out = detail::make_view<pmean_view_t<V>>("pmean", detail::shape_of(x));
  pmean(exec, axis, x, out);
  return out;
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> pmax(const Exec& exec, const Axis& axis, const V& x) {
  return detail::reduce_new<ReduceOp::max>("pmax", false, exec, axis, x);
}

template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> pmin(const Exec& exec, const Axis& axis, const V& x) {
  return detail::reduce_new<ReduceOp::min>("pmin", false, exec, axis, x);
}

// Without an instance: the default one.
template <class In, class Out>
void psum(const Axis& axis, const In& in, const Out& out) {
  psum(detail::default_instance_for<Out>(), axis, in, out);
}
template <class In, class Out>
void pmean(const Axis& axis, const In& in, const Out& out) {
  pmean(detail::default_instance_for<Out>(), axis, in, out);
}
template <class In, class Out>
void pmax(const Axis& axis, const In& in, const Out& out) {
  pmax(detail::default_instance_for<Out>(), axis, in, out);
}
template <class In, class Out>
void pmin(const Axis& axis, const In& in, const Out& out) {
  pmin(detail::default_instance_for<Out>(), axis, in, out);
}
template <class In, class Out>
Request ipsum(const Axis& axis, const In& in, const Out& out) {
  return ipsum(detail::default_instance_for<Out>(), axis, in, out);
}
template <class V>
result_view_t<V> psum(const Axis& axis, const V& x) {
  return psum(detail::default_instance_for<V>(), axis, x);
}
template <class V>
pmean_view_t<V> pmean(const Axis& axis, const V& x) {
  return pmean(detail::default_instance_for<V>(), axis, x);
}
template <class V>
result_view_t<V> pmax(const Axis& axis, const V& x) {
  return pmax(detail::default_instance_for<V>(), axis, x);
}
template <class V>
result_view_t<V> pmin(const Axis& axis, const V& x) {
  return pmin(detail::default_instance_for<V>(), axis, x);
}

// The same over a mesh and axis names (JAX's form), with or without an instance: the names are
// resolved (Mesh::axis) on every call; an unknown axis throws InputError before anything else.
template <class In, class Out>
void psum(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  psum(mesh.axis(axes), in, out);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void psum(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  psum(exec, mesh.axis(axes), in, out);
}
template <class In, class Out>
void pmean(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  pmean(mesh.axis(axes), in, out);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmean(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  pmean(exec, mesh.axis(axes), in, out);
}
template <class In, class Out>
void pmax(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  pmax(mesh.axis(axes), in, out);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmax(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  pmax(exec, mesh.axis(axes), in, out);
}
template <class In, class Out>
void pmin(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  pmin(mesh.axis(axes), in, out);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmin(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  pmin(exec, mesh.axis(axes), in, out);
}
template <class In, class Out>
Request ipsum(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  return ipsum(mesh.axis(axes), in, out);
}
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
Request ipsum(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  return ipsum(exec, mesh.axis(axes), in, out);
}
template <class V>
result_view_t<V> psum(const Mesh& mesh, const AxisNames& axes, const V& x) {
  return psum(mesh.axis(axes), x);
}
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> psum(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x) {
  return psum(exec, mesh.axis(axes), x);
}
template <class V>
pmean_view_t<V> pmean(const Mesh& mesh, const AxisNames& axes, const V& x) {
  return pmean(mesh.axis(axes), x);
}
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
pmean_view_t<V> pmean(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x) {
  return pmean(exec, mesh.axis(axes), x);
}
template <class V>
result_view_t<V> pmax(const Mesh& mesh, const AxisNames& axes, const V& x) {
  return pmax(mesh.axis(axes), x);
}
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> pmax(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x) {
  return pmax(exec, mesh.axis(axes), x);
}
template <class V>
result_view_t<V> pmin(const Mesh& mesh, const AxisNames& axes, const V& x) {
  return pmin(mesh.axis(axes), x);
}
template <class Exec, class V, detail::if_exec_t<Exec> = 0>
result_view_t<V> pmin(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const V& x) {
  return pmin(exec, mesh.axis(axes), x);
}
}  // namespace kpmap
