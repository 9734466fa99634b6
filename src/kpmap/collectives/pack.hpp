// Staging of Views for MPI: MPI sees every View as a contiguous, row-major buffer in memory it
// can read. Contiguous row-major Views in such memory go to MPI as they are (no copy); other
// layouts (LayoutLeft, strided subviews) are packed into row-major buffers by a kernel on the
// View's own execution space; device Views go through host mirrors unless KPMAP_GPU_AWARE_MPI.
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <type_traits>

#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/collectives/shape.hpp"
#include "kpmap/config.hpp"
#include "kpmap/core/types.hpp"

namespace kpmap {

// The returning variants allocate this: same element type, device and layout as `V`, rank R
// (a strided input gives a LayoutRight result).
template <class V, int R>
struct result_view;

namespace detail {

template <class V>
inline constexpr int rank_v = static_cast<int>(V::rank);

template <class V>
using value_t = std::remove_const_t<typename V::value_type>;

// Whether MPI may be handed a buffer directly: memory the host can read always; device memory
// only with GPU-aware MPI, and never for a reduction through one of kpmap's user-defined ops
// (uses_user_op): MPI runs those on the host, on the buffer's address, and most GPU-aware MPI
// libraries do not stage user ops off the device.
constexpr bool mpi_may_access(bool host_accessible, bool gpu_aware_mpi, bool user_op) {
  return host_accessible || (gpu_aware_mpi && !user_op);
}

// Memory that MPI may be handed directly; HostOnly: for a reduction through a user op.
template <class MemorySpace, bool HostOnly = false>
inline constexpr bool mpi_accessible_v =
    mpi_may_access(host_accessible_v<MemorySpace>, KPMAP_GPU_AWARE_MPI, HostOnly);

template <class MemorySpace, bool HostOnly = false>
using mpi_space_t = std::conditional_t<mpi_accessible_v<MemorySpace, HostOnly>, MemorySpace,
                                       Kokkos::HostSpace>;

// The execution space that runs kernels on a buffer in MemorySpace.
template <class MemorySpace>
using exec_space_t = typename Kokkos::View<int*, MemorySpace>::execution_space;

template <class T, class MemorySpace>
using Flat = Kokkos::View<T*, MemorySpace>;

using Policy = Kokkos::IndexType<std::int64_t>;

template <class T, class MemorySpace>
Flat<T, MemorySpace> allocate(const char* label, std::int64_t n) {
  return Flat<T, MemorySpace>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), n);
}

template <class V>
Shape shape_of(const V& v) {
  Shape s(rank_v<V>);
  for (int d = 0; d < rank_v<V>; ++d) s[d] = static_cast<std::int64_t>(v.extent(d));
  return s;
}

// Throws ShapeError (check_output_shape) unless out has in's extents; builds no Shape otherwise.
template <class In, class Out>
void check_same_shape(const char* collective, const AxisNames& axes, int n, const In& in, const Out& out) {
  static_assert(rank_v<In> == rank_v<Out>, "elementwise collectives keep the rank");
  for (int d = 0; d < rank_v<In>; ++d) {
    if (in.extent(d) != out.extent(d)) {
      check_output_shape(collective, axes, n, shape_of(in), "", shape_of(out), shape_of(in));
    }
  }
}

// Whether element (i0, i1, ...) sits at offset i0*e1*e2 + i1*e2 + ... (extents of 1 may have any
// stride: they are never stepped over).
template <class V>
bool row_major_contiguous(const V& v) {
  std::int64_t expected = 1;
  for (int d = rank_v<V> - 1; d >= 0; --d) {
    if (v.extent(d) > 1 && static_cast<std::int64_t>(v.stride(d)) != expected) return false;
    expected *= static_cast<std::int64_t>(v.extent(d));
  }
  return true;
}

// The element at row-major flat index i.
template <class V>
KOKKOS_INLINE_FUNCTION typename V::reference_type at_flat(const V& v, std::int64_t i) {
  if constexpr (rank_v<V> == 0) {
    (void)i;
    return v();
  } else if constexpr (rank_v<V> == 1) {
    return v(i);
  } else if constexpr (rank_v<V> == 2) {
    const std::int64_t e1 = v.extent(1);
    return v(i / e1, i % e1);
  } else if constexpr (rank_v<V> == 3) {
    const std::int64_t e1 = v.extent(1), e2 = v.extent(2);
    return v(i / (e1 * e2), (i / e2) % e1, i % e2);
  } else {
    static_assert(rank_v<V> == 4, "kpmap collectives handle Views of rank 0 to 4");
    const std::int64_t e1 = v.extent(1), e2 = v.extent(2), e3 = v.extent(3);
    return v(i / (e1 * e2 * e3), (i / (e2 * e3)) % e1, (i / e3) % e2, i % e3);
  }
}

template <class V, class F>
void pack(const V& v, const F& flat) {
  using exec = typename V::execution_space;
  Kokkos::parallel_for(
      "kpmap::pack", Kokkos::RangePolicy<exec, Policy>(0, flat.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { flat(i) = at_flat(v, i); });
}

template <class F, class V>
void unpack(const F& flat, const V& v) {
  using exec = typename V::execution_space;
  Kokkos::parallel_for(
      "kpmap::unpack", Kokkos::RangePolicy<exec, Policy>(0, flat.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { at_flat(v, i) = flat(i); });
}

// dst viewed as [b][a][c] = src viewed as [a][b][c]: moves the blocks of a gather, a scatter or
// an all_to_all between rank-major order (MPI's) and the order of the View's dimensions.
template <class S, class D>
void swap_leading(const S& src, const D& dst, std::int64_t a, std::int64_t b, std::int64_t c) {
  using exec = exec_space_t<typename D::memory_space>;
  Kokkos::parallel_for(
      "kpmap::swap_leading", Kokkos::RangePolicy<exec, Policy>(0, a * b * c),
      KOKKOS_LAMBDA(const std::int64_t k) {
        const std::int64_t ic = k % c, ia = (k / c) % a, ib = k / (c * a);
        dst(k) = src((ia * b + ib) * c + ic);
      });
}

template <class F>
void fill_zero(const F& flat) {
  using T = typename F::non_const_value_type;
  using exec = exec_space_t<typename F::memory_space>;
  Kokkos::parallel_for(
      "kpmap::fill_zero", Kokkos::RangePolicy<exec, Policy>(0, flat.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) { flat(i) = static_cast<T>(0.0f); });
}

// pmean of integers: out = sum / n elementwise (any layouts, same shape), computed in double
// and rounded once to out's type.
template <class S, class O>
void divide_into(const S& sum, const O& out, int n) {
  using R = typename O::non_const_value_type;
  using exec = typename O::execution_space;
  const double d = n;
  Kokkos::parallel_for(
      "kpmap::divide", Kokkos::RangePolicy<exec, Policy>(0, static_cast<std::int64_t>(out.size())),
      KOKKOS_LAMBDA(const std::int64_t i) {
        at_flat(out, i) = static_cast<R>(static_cast<double>(at_flat(sum, i)) / d);
      });
}

// pmean's division; the quotient is rounded once to T (16-bit types divide in double too).
template <class F>
void divide(const F& flat, int n) {
  using T = typename F::non_const_value_type;
  using exec = exec_space_t<typename F::memory_space>;
  const double d = n;
  Kokkos::parallel_for(
      "kpmap::divide", Kokkos::RangePolicy<exec, Policy>(0, flat.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i) {
        flat(i) = static_cast<T>(static_cast<double>(flat(i)) / d);
      });
}

enum class Use { read, write, read_write };

// A View's elements as a contiguous row-major buffer MPI can use: the View itself when possible,
// otherwise a packed copy (and a host mirror of it for device memory without GPU-aware MPI, or
// always when HostOnly: a reduction through a user-defined MPI op).
// Reading uses have their contents in place after construction (fenced); finish() moves what
// MPI wrote back into the View. `copy` forces a separate buffer (an aliased send buffer).
template <class V, bool HostOnly = false>
class Staged {
 public:
  using value_type = value_t<V>;
  using view_space = typename V::memory_space;
  using memory_space = mpi_space_t<view_space, HostOnly>;
  using flat_type = Flat<value_type, memory_space>;

  Staged(const V& v, Use use, bool copy = false) : v_(v), use_(use) {
    const std::int64_t n = static_cast<std::int64_t>(v.size());
    contiguous_ = row_major_contiguous(v) && !copy;
    direct_ = contiguous_ && mpi_accessible_v<view_space, HostOnly>;
    const bool read = use != Use::write;
    if (contiguous_) {
      packed_ = Flat<value_type, view_space>(const_cast<value_type*>(v.data()), n);
    } else {
      packed_ = allocate<value_type, view_space>("kpmap::packed", n);
      if (read) pack(v, packed_);
    }
    if constexpr (mpi_accessible_v<view_space, HostOnly>) {
      flat_ = packed_;
    } else {
      flat_ = allocate<value_type, memory_space>("kpmap::host_staging", n);
      if (read) Kokkos::deep_copy(flat_, packed_);
    }
    fence_all();  // MPI reads (or overwrites) the buffer next
  }

  value_type* data() const { return flat_.data(); }
  const flat_type& flat() const { return flat_; }
  std::int64_t size() const { return static_cast<std::int64_t>(flat_.extent(0)); }
  bool direct() const { return direct_; }

  // After MPI wrote the buffer: the View gets its contents.
  void finish() {
    if (use_ == Use::read) return;
    if (!direct_) {
      if constexpr (!mpi_accessible_v<view_space, HostOnly>) Kokkos::deep_copy(packed_, flat_);
      if (!contiguous_) unpack(packed_, v_);
    }
    fence_all();  // kernels that wrote the buffer (pmean, block swaps) are done
  }

 private:
  V v_;
  Use use_;
  bool contiguous_ = false;
  bool direct_ = false;
  Flat<value_type, view_space> packed_;
  flat_type flat_;
};

// Whether two Views share their first element: a collective called "in place".
template <class A, class B>
bool aliased(const A& a, const B& b) {
  return a.size() > 0 && static_cast<const void*>(a.data()) == static_cast<const void*>(b.data());
}

template <class T, int R>
struct data_type {
  using type = typename data_type<T, R - 1>::type*;
};
template <class T>
struct data_type<T, 0> {
  using type = T;
};

template <class V>
using result_layout_t = std::conditional_t<
    std::is_same_v<typename V::array_layout, Kokkos::LayoutStride>, Kokkos::LayoutRight,
    typename V::array_layout>;

template <class Out>
Out make_view(const char* label, const Shape& s) {
  const auto alloc = Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label));
  constexpr int R = rank_v<Out>;
  if constexpr (R == 0) return Out(alloc);
  else if constexpr (R == 1) return Out(alloc, s[0]);
  else if constexpr (R == 2) return Out(alloc, s[0], s[1]);
  else if constexpr (R == 3) return Out(alloc, s[0], s[1], s[2]);
  else return Out(alloc, s[0], s[1], s[2], s[3]);
}

// Common compile-time rules of every collective taking an input and an output View. MinRank 0:
// the elementwise reductions, which take scalars (rank-0 Views) too.
template <class In, class Out, int MinRank = 1>
constexpr void check_pair() {
  static_assert(element_type_check<value_t<In>>::value);
  static_assert(rank_v<In> >= MinRank && rank_v<In> <= 3,
                "kpmap collectives take Views of rank 1 to 3 (psum, pmean, pmax, pmin: 0 to 3)");
  static_assert(std::is_same_v<value_t<In>, typename Out::value_type>,
                "the output View needs the input's element type, non-const");
  static_assert(std::is_same_v<typename In::memory_space, typename Out::memory_space>,
                "input and output Views must live in the same memory space");
}

}  // namespace detail

template <class V, int R>
struct result_view {
  using type = Kokkos::View<typename detail::data_type<detail::value_t<V>, R>::type,
                            detail::result_layout_t<V>, typename V::device_type>;
};

template <class V, int R = detail::rank_v<V>>
using result_view_t = typename result_view<V, R>::type;

}  // namespace kpmap
