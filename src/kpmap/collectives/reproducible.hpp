// Reproducible psum and pmean: the sum over the axis does not depend on the order in which MPI
// adds the ranks' contributions (its reduction tree, the message size, the rank order), so every
// rank of every run gets the same bits for the same set of contributions, wherever each
// contribution sits:
//   psum(mesh, "data", in, out, kpmap::reproducible);   // or psum(axis, in, out, kpmap::reproducible)
//   pmean(mesh, "data", in, out, kpmap::reproducible);
// Element types float and double (accumulated in double). How (core/repro_sum.hpp): one pmax of
// max |x| over the axis gives a bound B; every element becomes a two-level fixed-point
// accumulator on the grid of n (the axis size) terms of magnitude <= B; the accumulators are
// psum'ed as doubles (exact, in any order); each element is their value rounded to the element
// type, then divided by n for pmean. Cost: one extra scalar pmax and two doubles per element on
// the wire. The error is at most n u2 / 2 (about n^3 B 2^-100) plus the final rounding: relative
// to the largest element of the whole View, not to each element's own magnitude (see
// docs/collectives.md). A non-finite element, or a sum outside the
// grid's range (above about 2^1019), throws RuntimeError on every rank of the axis (they all see
// the same bound).
#pragma once

#include <Kokkos_Core.hpp>
#include <cmath>
#include <limits>
#include <sstream>
#include <type_traits>

#include "kpmap/collectives/pack.hpp"
#include "kpmap/collectives/reduce.hpp"
#include "kpmap/core/error.hpp"
#include "kpmap/core/repro_sum.hpp"
#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

struct Reproducible {};
inline constexpr Reproducible reproducible{};

// The largest |element| of a View of any rank (local, not collective), computed on `exec` (by
// default the View's execution space): the bound a reproducible sum's grid is made from. +Inf
// when an element is NaN or infinite, so that no grid exists for it.
template <class Exec, class V>
double max_abs(const Exec& exec, const V& v) {
  static const std::string name = "kpmap::max_abs";
  const double huge = std::numeric_limits<double>::max(), inf = std::numeric_limits<double>::infinity();
  double m = 0;
  Kokkos::parallel_reduce(
      name, detail::range(exec, static_cast<std::int64_t>(v.size())),
      KOKKOS_LAMBDA(std::int64_t i, double& acc) {
        double a = static_cast<double>(detail::at_flat(v, i));
        a = a < 0 ? -a : a;
        if (!(a <= huge)) a = inf;
        if (a > acc) acc = a;
      },
      Kokkos::Max<double>(m));
  return m;
}

template <class V>
double max_abs(const V& v) {
  return max_abs(detail::default_instance_for<V>(), v);
}

namespace detail {

template <class Exec, class In, class Out>
void reproducible_reduce(const char* name, bool mean, const Exec& exec, const Axis& axis, const In& in,
                         const Out& out) {
  check_pair<In, Out>();
  using T = value_t<In>;
  static_assert(std::is_same_v<T, double> || std::is_same_v<T, float>,
                "the reproducible psum / pmean take float or double elements");
  using memory_space = typename In::memory_space;
  const int n = axis.size();
  check_same_shape(name, axis.names(), n, in, out);
  const std::int64_t count = static_cast<std::int64_t>(in.size());

  // The bound: max |x| over the axis; a non-finite element makes it +Inf everywhere.
  const Scratch<double, Kokkos::HostSpace> bound(1);
  bound.view()(0) = max_abs(exec, in);
  pmax(host_instance(exec), axis, bound.view(), bound.view());
  ReproGrid grid;
  if (!ReproGrid::make(static_cast<double>(n), bound.view()(0), grid)) {
    std::ostringstream msg;
    msg << "kpmap::" << name << " (reproducible) over " << axis.str() << ": the largest |element| is "
        << bound.view()(0) << ", outside the exact accumulator's range (finite, and 2 x " << n
        << " ranks x it at most 2^1020)";
    throw RuntimeError(msg.str());
  }

  // Two levels per element, level-major, summed as doubles over the axis.
  const Scratch<double, memory_space> buffer(2 * count);
  const auto acc = buffer.view();
  static const std::string split = "kpmap::reproducible::split", value = "kpmap::reproducible::value";
  Kokkos::parallel_for(split, range(exec, count), KOKKOS_LAMBDA(std::int64_t i) {
    double s1 = 0, s2 = 0, s3 = 0;
    repro_add<2>(grid, static_cast<double>(at_flat(in, i)), s1, s2, s3);
    acc(i) = s1;
    acc(count + i) = s2;
  });
  fence_instance(exec);
  psum(exec, axis, acc, acc);
  const double divisor = mean ? static_cast<double>(n) : 1.0;
  Kokkos::parallel_for(value, range(exec, count), KOKKOS_LAMBDA(std::int64_t i) {
    at_flat(out, i) = static_cast<T>(repro_value(acc(i), acc(count + i), 0.0) / divisor);
  });
  fence_instance(exec);
}

}  // namespace detail

// psum whose result does not depend on the order of the additions (see the top of this file).
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void psum(const Exec& exec, const Axis& axis, const In& in, const Out& out, Reproducible) {
  detail::reproducible_reduce("psum", false, exec, axis, in, out);
}

// pmean likewise: the reproducible sum, then one division by the axis size.
template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmean(const Exec& exec, const Axis& axis, const In& in, const Out& out, Reproducible) {
  detail::reproducible_reduce("pmean", true, exec, axis, in, out);
}

template <class In, class Out>
void psum(const Axis& axis, const In& in, const Out& out, Reproducible r) {
  psum(detail::default_instance_for<Out>(), axis, in, out, r);
}

template <class In, class Out>
void pmean(const Axis& axis, const In& in, const Out& out, Reproducible r) {
  pmean(detail::default_instance_for<Out>(), axis, in, out, r);
}

template <class In, class Out>
void psum(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out, Reproducible r) {
  psum(mesh.axis(axes), in, out, r);
}

template <class In, class Out>
void pmean(const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out, Reproducible r) {
  pmean(mesh.axis(axes), in, out, r);
}

template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void psum(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
          Reproducible r) {
  psum(exec, mesh.axis(axes), in, out, r);
}

template <class Exec, class In, class Out, detail::if_exec_t<Exec> = 0>
void pmean(const Exec& exec, const Mesh& mesh, const AxisNames& axes, const In& in, const Out& out,
           Reproducible r) {
  pmean(exec, mesh.axis(axes), in, out, r);
}

}  // namespace kpmap
