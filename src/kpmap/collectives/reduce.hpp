// Elementwise reductions over a mesh axis (or tuple), as jax.lax.psum / pmean / pmax / pmin:
// every rank on the axis gets the reduction of everybody's View.
//   psum(mesh, "data", in, out);   // out of place
//   psum(mesh, "data", x, x);      // in place (MPI_IN_PLACE)
//   auto s = psum(mesh, {"data", "model"}, x);  // a new View
#pragma once

#include <mpi.h>

#include <type_traits>

#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/collectives/pack.hpp"
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

template <class In, class Out>
void reduce(const char* name, ReduceOp op, bool mean, const Mesh& mesh, const AxisNames& axes,
            const In& in, const Out& out) {
  check_pair<In, Out>();
  static_assert(rank_v<In> == rank_v<Out>, "elementwise collectives keep the rank");
  using T = value_t<In>;
  const MPI_Comm comm = mesh.comm(axes);  // an unknown axis throws InputError first
  const Shape shape = shape_of(in);
  int n = 1;
  check_mpi(MPI_Comm_size(comm, &n), "MPI_Comm_size");
  check_output_shape(name, axes, n, shape, "", shape_of(out), shape);
  const int count = mpi_count(name, static_cast<std::int64_t>(in.size()));
  if (aliased(in, out)) {
    Staged<Out> buffer(out, Use::read_write);
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, buffer.data(), count, mpi_datatype<T>(), mpi_op<T>(op),
                            comm),
              "MPI_Allreduce");
    if (mean) divide(buffer.flat(), n);
    buffer.finish();
    return;
  }
  Staged<In> send(in, Use::read);
  Staged<Out> recv(out, Use::write);
  check_mpi(MPI_Allreduce(send.data(), recv.data(), count, mpi_datatype<T>(), mpi_op<T>(op), comm),
            "MPI_Allreduce");
  if (mean) divide(recv.flat(), n);
  recv.finish();
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
