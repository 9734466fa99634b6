// Elementwise reductions over a mesh axis (or tuple), as jax.lax.psum / pmean / pmax / pmin:
// every rank on the axis gets the reduction of everybody's View.
//   psum(mesh, "data", in, out);   // out of place
//   psum(mesh, "data", x, x);      // in place (MPI_IN_PLACE)
//   auto s = psum(mesh, {"data", "model"}, x);  // a new View
//   kpmap::Request r = ipsum(mesh, "data", x, x); ...; r.wait();  // non-blocking (request.hpp)
#pragma once

#include <mpi.h>

#include <optional>
#include <type_traits>
#include <utility>

#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/collectives/pack.hpp"
#include "kpmap/collectives/request.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/half.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

// pmean is defined for floating element types only. JAX promotes integers to float in pmean;
// kpmap asks the caller to convert first, so that no View silently changes its element type.
template <class T>
inline constexpr bool is_floating_element_v =
    std::is_floating_point_v<T> || std::is_same_v<T, bf16> || std::is_same_v<T, fp16>;

namespace detail {

// A reduction's checked arguments and staged buffers, shared by the blocking and the
// non-blocking form: every check throws here, before anything is started. The MPI call takes
// sendbuf() and recvbuf(); finish() moves its result into the output View.
template <class In, class Out>
struct ReducePlan {
  MPI_Comm comm;
  int n;  // the group's size
  int count;
  MPI_Datatype type;
  MPI_Op op;
  bool mean;
  std::optional<Staged<In>> send;  // empty in place
  Staged<Out> recv;

  const void* sendbuf() const { return send ? send->data() : MPI_IN_PLACE; }
  void* recvbuf() const { return recv.data(); }
  void finish() {
    if (mean) divide(recv.flat(), n);
    recv.finish();
  }
};

template <class In, class Out>
ReducePlan<In, Out> plan_reduce(const char* name, ReduceOp op, bool mean, const Mesh& mesh,
                                const AxisNames& axes, const In& in, const Out& out) {
  check_pair<In, Out>();
  static_assert(rank_v<In> == rank_v<Out>, "elementwise collectives keep the rank");
  using T = value_t<In>;
  const MPI_Comm comm = mesh.comm(axes);  // an unknown axis throws InputError first
  const Shape shape = shape_of(in);
  int n = 1;
  check_mpi(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  check_output_shape(name, axes, n, shape, "", shape_of(out), shape);
  const int count = mpi_count(name, static_cast<std::int64_t>(in.size()));
  const MPI_Datatype type = mpi_datatype<T>();
  const MPI_Op mpi_reduce = mpi_op<T>(op);
  if (aliased(in, out)) {  // MPI_IN_PLACE
    return {comm, n, count, type, mpi_reduce, mean, std::nullopt,
            Staged<Out>(out, Use::read_write)};
  }
  return {comm, n, count, type, mpi_reduce, mean, Staged<In>(in, Use::read),
          Staged<Out>(out, Use::write)};
}

template <class In, class Out>
void reduce(const char* name, ReduceOp op, bool mean, const Mesh& mesh, const AxisNames& axes,
            const In& in, const Out& out) {
  auto p = plan_reduce(name, op, mean, mesh, axes, in, out);
  check_mpi(MPI_Allreduce(p.sendbuf(), p.recvbuf(), p.count, p.type, p.op, p.comm),
            "MPI_Allreduce");
  p.finish();
}

template <class In, class Out>
Request ireduce(const char* name, ReduceOp op, bool mean, const Mesh& mesh,
                const AxisNames& axes, const In& in, const Out& out) {
  auto p = plan_reduce(name, op, mean, mesh, axes, in, out);
  MPI_Request request = MPI_REQUEST_NULL;
  check_mpi(MPI_Iallreduce(p.sendbuf(), p.recvbuf(), p.count, p.type, p.op, p.comm, &request),
            "MPI_Iallreduce");
  const MPI_Comm comm = p.comm;
  return Request(request, comm, std::move(p));
}

template <class V>
result_view_t<V> reduce_new(const char* name, ReduceOp op, bool mean, const Mesh& mesh,
                            const AxisNames& axes, const V& x) {
  auto out = make_view<result_view_t<V>>(name, shape_of(x));
  reduce(name, op, mean, mesh, axes, x, out);
  return out;
}

}  // namespace detail

// Sum over the axis. 16-bit types add in fp32 inside MPI's reduction (see mpi_types.hpp).
template <class In, class Out>
void psum(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  detail::reduce("psum", ReduceOp::sum, false, mesh, axes, in, out);
}

// Mean over the axis: psum / axis_size, floating element types only.
template <class In, class Out>
void pmean(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  static_assert(is_floating_element_v<detail::value_t<In>>,
                "pmean needs a floating element type: convert integers first (JAX promotes them)");
  detail::reduce("pmean", ReduceOp::sum, true, mesh, axes, in, out);
}

template <class In, class Out>
void pmax(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  detail::reduce("pmax", ReduceOp::max, false, mesh, axes, in, out);
}

template <class In, class Out>
void pmin(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  detail::reduce("pmin", ReduceOp::min, false, mesh, axes, in, out);
}

// Non-blocking psum (MPI_Iallreduce): the same checks, errors and result as psum, which are all
// thrown before anything is started; the output View holds the sum after the Request's wait()
// (or a test() that returned true). See request.hpp for the lifetime and progress rules.
template <class In, class Out>
Request ipsum(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out) {
  return detail::ireduce("psum", ReduceOp::sum, false, mesh, axes, in, out);
}

template <class V>
result_view_t<V> psum(const Mesh& mesh, const AxisNames& axes, const V& x) {
  return detail::reduce_new("psum", ReduceOp::sum, false, mesh, axes, x);
}

template <class V>
result_view_t<V> pmean(const Mesh& mesh, const AxisNames& axes, const V& x) {
  static_assert(is_floating_element_v<detail::value_t<V>>,
                "pmean needs a floating element type: convert integers first (JAX promotes them)");
  return detail::reduce_new("pmean", ReduceOp::sum, true, mesh, axes, x);
}

template <class V>
result_view_t<V> pmax(const Mesh& mesh, const AxisNames& axes, const V& x) {
  return detail::reduce_new("pmax", ReduceOp::max, false, mesh, axes, x);
}

template <class V>
result_view_t<V> pmin(const Mesh& mesh, const AxisNames& axes, const V& x) {
  return detail::reduce_new("pmin", ReduceOp::min, false, mesh, axes, x);
}

}  // namespace kpmap
