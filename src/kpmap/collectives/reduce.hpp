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

#include <algorithm>
#include <cstdint>
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
  int n;   // the group's size
  int me;  // my rank in comm
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
    return Plan{comm, n, axis.index(), count, type, mpi_reduce, mean, std::nullopt,
                Staged<Exec, Out, host_only>(exec, out, Use::read_write)};
  }
  // Built in place: no Staged is moved (each move would pass its scratch buffers along).
  return Plan{comm, n, axis.index(), count, type, mpi_reduce, mean,
              std::optional<Staged<Exec, In, host_only>>(std::in_place, exec, in, Use::read),
              Staged<Exec, Out, host_only>(exec, out, Use::write, false, Fence::own_work)};
}

// Messages through a user-defined op larger than this take allreduce_by_halving (MPICH's
// MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE, where it switches its predefined ops the same way).
inline constexpr std::int64_t halving_min_bytes = 2048;

// MPI_Allreduce of `count` elements of `type` through the user-defined op `op`, on the host.
// MPICH reduces with a user-defined op by recursive doubling at every size: each rank sends and
// combines the whole message log2(p) times. This runs the same reduction tree as a reduce-scatter
// by recursive halving followed by an all-gather by recursive doubling (Rabenseifner's algorithm,
// which MPICH takes for its predefined ops on long messages): each rank sends 2 (p' - 1) / p' of
// the message and combines (p' - 1) / p' of it, p' the largest power of two <= p. The halving
// pairs ranks at distance 1 first, as MPICH's recursive doubling does, and when p is not a power
// of two the first 2 (p - p') ranks fold into p - p' as MPICH's do, so every element is combined
// in the same order as MPI_Allreduce would combine it: the result is bitwise MPI_Allreduce's
// (for commutative ops, which kpmap's are; of two NaNs either may win in both). `buf` holds this
// rank's contribution (copied from sendbuf unless that is MPI_IN_PLACE) and then the result.
template <class T>
void allreduce_by_halving(const void* sendbuf, T* buf, int count, MPI_Datatype type, MPI_Op op,
                          MPI_Comm comm, int size, int rank) {
  if (sendbuf != MPI_IN_PLACE) std::copy_n(static_cast<const T*>(sendbuf), count, buf);
  int pof2 = 1;
  while (pof2 <= size / 2) pof2 *= 2;
  const int rem = size - pof2;
  const Scratch<T, Kokkos::HostSpace> scratch(rem > 0 ? count : (count + 1) / 2);
  T* tmp = scratch.view().data();
  constexpr int tag = 0x6b71;  // a private communicator: any fixed tag is unambiguous
  const auto exchange = [&](const T* send, std::int64_t sends, T* recv, std::int64_t recvs, int peer) {
    check_mpi(MPI_Sendrecv(send, static_cast<int>(sends), type, peer, tag, recv, static_cast<int>(recvs),
                           type, peer, tag, comm, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
  };
  const auto combine = [&](const T* in, T* inout, std::int64_t n) {  // inout = in op inout
    check_mpi(MPI_Reduce_local(in, inout, static_cast<int>(n), type, op), "MPI_Reduce_local");
  };
  // Fold: of ranks 0 .. 2 rem - 1, each even one hands its message to the odd one above it.
  int newrank = rank - rem;
  if (rank < 2 * rem) {
    if (rank % 2 == 0) {
      check_mpi(MPI_Send(buf, count, type, rank + 1, tag, comm), "MPI_Send");
      newrank = -1;
    } else {
      check_mpi(MPI_Recv(tmp, count, type, rank - 1, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
      combine(tmp, buf, count);
      newrank = rank / 2;
    }
  }
  if (newrank >= 0) {
    const auto peer = [&](int mask) {
      const int other = newrank ^ mask;
      return other < rem ? 2 * other + 1 : other + rem;
    };
    // Reduce-scatter: at each level keep one half of [lo, hi) (the lower one if my bit is 0)
    // and add the partner's copy of it; parents[level] remembers [lo, hi) for the gather.
    std::int64_t lo = 0, hi = count, parents[32][2];
    int level = 0;
    for (int mask = 1; mask < pof2; mask *= 2, ++level) {
      const std::int64_t mid = lo + (hi - lo) / 2;
      const bool upper = (newrank & mask) != 0;
      const std::int64_t keep_lo = upper ? mid : lo, keep_hi = upper ? hi : mid;
      const std::int64_t give_lo = upper ? lo : mid, give_hi = upper ? mid : hi;
      exchange(buf + give_lo, give_hi - give_lo, tmp, keep_hi - keep_lo, peer(mask));
      combine(tmp, buf + keep_lo, keep_hi - keep_lo);
      parents[level][0] = lo;
      parents[level][1] = hi;
      lo = keep_lo;
      hi = keep_hi;
    }
    // All-gather: the levels in reverse, each swapping my summed part for the partner's.
    for (int mask = pof2 / 2; mask >= 1; mask /= 2) {
      --level;
      const std::int64_t plo = parents[level][0], phi = parents[level][1], mid = plo + (phi - plo) / 2;
      const bool upper = (newrank & mask) != 0;
      const std::int64_t other_lo = upper ? plo : mid, other_hi = upper ? mid : phi;
      exchange(buf + lo, hi - lo, buf + other_lo, other_hi - other_lo, peer(mask));
      lo = plo;
      hi = phi;
    }
  }
  if (rank < 2 * rem) {  // unfold: the odd ranks hand the result back
    if (rank % 2 == 1) {
      check_mpi(MPI_Send(buf, count, type, rank - 1, tag, comm), "MPI_Send");
    } else {
      check_mpi(MPI_Recv(buf, count, type, rank + 1, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv");
    }
  }
}

template <ReduceOp Op, class Exec, class In, class Out>
void reduce(const char* name, bool mean, const Exec& exec, const Axis& axis, const In& in, const Out& out) {
  using T = value_t<In>;
  auto p = plan_reduce<Op>(name, mean, exec, axis, in, out);
  for_each_chunk(p.count, [&](std::int64_t offset, int count) {
    if constexpr (uses_user_op<T>(Op)) {
      if (p.n > 1 && static_cast<std::int64_t>(count) * static_cast<std::int64_t>(sizeof(T)) > halving_min_bytes) {
        allreduce_by_halving(p.sendbuf(offset), p.recv.data() + offset, count, p.type, p.op, p.comm, p.n, p.me);
        return;
      }
    }
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
