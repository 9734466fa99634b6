// Staging of Views for MPI: MPI sees every View as a contiguous, row-major buffer in memory it
// can read. Contiguous row-major Views in such memory go to MPI as they are (no copy); other
// layouts (LayoutLeft, strided subviews) are packed into row-major buffers by a kernel on the
// caller's execution space instance; device Views go through pinned host buffers unless
// KPMAP_GPU_AWARE_MPI. Every buffer comes from the collectives' pools (workspace.hpp).
#pragma once

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <optional>
#include <type_traits>

#include "kpmap/collectives/mpi_types.hpp"
#include "kpmap/collectives/shape.hpp"
#include "kpmap/collectives/workspace.hpp"
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

// Host memory that stages device Views for MPI: pinned (page-locked) where the backend has it,
// so that the copies run at the link's speed and MPI may use the buffer directly.
#if defined(KOKKOS_HAS_SHARED_HOST_PINNED_SPACE)
using staging_space = Kokkos::SharedHostPinnedSpace;
#elif defined(KOKKOS_ENABLE_CUDA)
using staging_space = Kokkos::CudaHostPinnedSpace;
#else
using staging_space = Kokkos::HostSpace;
#endif

template <class MemorySpace, bool HostOnly = false>
using mpi_space_t =
    std::conditional_t<mpi_accessible_v<MemorySpace, HostOnly>, MemorySpace, staging_space>;

// The instance a collective without one uses: the default instance of the Views' execution space.
template <class V>
using default_exec_t = typename V::execution_space;

// The default instance of Exec, built once (constructing a Kokkos 4 instance allocates its shared
// handle) and dropped at Kokkos::finalize.
template <class Exec>
const Exec& default_instance() {
  static std::optional<Exec> instance;
  if (!instance) {
    instance.emplace();
    Kokkos::push_finalize_hook([] { instance.reset(); });
  }
  return *instance;
}

template <class V>
const default_exec_t<V>& default_instance_for() {
  return default_instance<default_exec_t<V>>();
}

// The instance for work on host memory: exec itself when it can reach host memory, otherwise the
// default host instance.
template <class Exec>
using host_exec_t = std::conditional_t<Kokkos::SpaceAccessibility<Exec, Kokkos::HostSpace>::accessible, Exec,
                                       Kokkos::DefaultHostExecutionSpace>;

template <class Exec>
const host_exec_t<Exec>& host_instance(const Exec& exec) {
  if constexpr (std::is_same_v<host_exec_t<Exec>, Exec>) {
    return exec;
  } else {
    return default_instance<Kokkos::DefaultHostExecutionSpace>();
  }
}

template <class E>
using if_exec_t = std::enable_if_t<Kokkos::is_execution_space<E>::value, int>;

template <class T, class MemorySpace>
using Flat = Kokkos::View<T*, MemorySpace>;

using Policy = Kokkos::IndexType<std::int64_t>;

template <class Exec>
Kokkos::RangePolicy<Exec, Policy> range(const Exec& exec, std::int64_t n) {
  return Kokkos::RangePolicy<Exec, Policy>(exec, 0, n);
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

// Kernel labels are static std::strings: Kokkos takes a std::string, and a label longer than the
// small-string buffer would otherwise be allocated at every launch.
template <class E, class V, class F>
void pack(const E& exec, const V& v, const F& flat) {
  static const std::string name = "kpmap::pack";
  Kokkos::parallel_for(name, range(exec, flat.extent(0)),
                       KOKKOS_LAMBDA(const std::int64_t i) { flat(i) = at_flat(v, i); });
}

template <class E, class F, class V>
void unpack(const E& exec, const F& flat, const V& v) {
  static const std::string name = "kpmap::unpack";
  Kokkos::parallel_for(name, range(exec, flat.extent(0)),
                       KOKKOS_LAMBDA(const std::int64_t i) { at_flat(v, i) = flat(i); });
}

// dst viewed as [b][a][c] = src viewed as [a][b][c]: moves the blocks of a gather, a scatter or
// an all_to_all between rank-major order (MPI's) and the order of the View's dimensions.
template <class E, class S, class D>
void swap_leading(const E& exec, const S& src, const D& dst, std::int64_t a, std::int64_t b,
                  std::int64_t c) {
  static const std::string name = "kpmap::swap_leading";
  Kokkos::parallel_for(name, range(exec, a * b * c), KOKKOS_LAMBDA(const std::int64_t k) {
    const std::int64_t ic = k % c, ia = (k / c) % a, ib = k / (c * a);
    dst(k) = src((ia * b + ib) * c + ic);
  });
}

template <class E, class F>
void fill_zero(const E& exec, const F& flat) {
  using T = typename F::non_const_value_type;
  static const std::string name = "kpmap::fill_zero";
  Kokkos::parallel_for(name, range(exec, flat.extent(0)),
                       KOKKOS_LAMBDA(const std::int64_t i) { flat(i) = static_cast<T>(0.0f); });
}

// pmean of integers: out = sum / n elementwise (any layouts, same shape), computed in double
// and rounded once to out's type.
template <class E, class S, class O>
void divide_into(const E& exec, const S& sum, const O& out, int n) {
  using R = typename O::non_const_value_type;
  static const std::string name = "kpmap::divide";
  const double d = n;
  Kokkos::parallel_for(name, range(exec, static_cast<std::int64_t>(out.size())),
                       KOKKOS_LAMBDA(const std::int64_t i) {
                         at_flat(out, i) = static_cast<R>(static_cast<double>(at_flat(sum, i)) / d);
                       });
}

// pmean's division; the quotient is rounded once to T (16-bit types divide in double too).
template <class E, class F>
void divide(const E& exec, const F& flat, int n) {
  using T = typename F::non_const_value_type;
  static const std::string name = "kpmap::divide";
  const double d = n;
  Kokkos::parallel_for(name, range(exec, flat.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) {
    flat(i) = static_cast<T>(static_cast<double>(flat(i)) / d);
  });
}

enum class Use { read, write, read_write };

// A View's elements as a contiguous row-major buffer MPI can use: the View itself when possible,
// otherwise a packed copy (and a pinned host copy of it for device memory without GPU-aware MPI,
// or always when HostOnly: a reduction through a user-defined MPI op), from the pools.
// Reading uses have their contents in place after construction; finish() moves what MPI wrote
// back into the View. `copy` forces a separate buffer (an aliased send buffer). Kernels and
// copies run on the instance the collective was given (`exec`, passed to the constructor and to
// finish()), or on the default host instance for a host staging buffer (flat_exec(exec)).
//
// Fences, one per collective where nothing needs copying: the first Staged of a call fences the
// instance (Fence::always: the caller's kernels writing the Views are done before MPI uses their
// memory); a further one (Fence::own_work) only when it packed or copied. finish() fences when
// it copied or unpacked, or when the caller says kernels ran on flat_exec(exec) after MPI.
//
// A Staged holds neither the instance nor a View whose memory MPI uses directly (reference
// counts cost atomic operations per call): a blocking collective runs within the caller's
// references, and a Request holds the caller's instance and Views itself (request.hpp).
enum class Fence { always, own_work };

template <class Exec, class V, bool HostOnly = false>
class Staged {
 public:
  using value_type = value_t<V>;
  using view_space = typename V::memory_space;
  using memory_space = mpi_space_t<view_space, HostOnly>;
  using flat_type = Flat<value_type, memory_space>;
  using flat_exec_type =
      std::conditional_t<std::is_same_v<memory_space, view_space>, Exec, Kokkos::DefaultHostExecutionSpace>;
  static_assert(Kokkos::SpaceAccessibility<Exec, view_space>::accessible,
                "the execution space instance must be able to access the Views' memory space");

  Staged(const Exec& exec, const V& v, Use use, bool copy = false, Fence fence = Fence::always)
      : use_(use), n_(static_cast<std::int64_t>(v.size())) {
    contiguous_ = row_major_contiguous(v) && !copy;
    direct_ = contiguous_ && mpi_accessible_v<view_space, HostOnly>;
    const bool read = use != Use::write;
    if (contiguous_) {
      packed_ = const_cast<value_type*>(v.data());
    } else {
      if (use != Use::read) v_ = v;  // finish() unpacks into it
      packed_buffer_ = Scratch<value_type, view_space>(n_);
      packed_ = packed_buffer_.view().data();
      if (read) pack(exec, v, packed());
    }
    if constexpr (mpi_accessible_v<view_space, HostOnly>) {
      flat_ = packed_;
    } else {
      staging_buffer_ = Scratch<value_type, memory_space>(n_);
      flat_ = staging_buffer_.view().data();
      if (read) Kokkos::deep_copy(exec, flat(), packed());
    }
    // MPI reads (or overwrites) the buffer next
    if (fence == Fence::always || (read && !direct_)) fence_instance(exec);
  }

  value_type* data() const { return flat_; }
  flat_type flat() const { return flat_type(flat_, n_); }
  std::int64_t size() const { return n_; }
  bool direct() const { return direct_; }
  // The instance for kernels on flat(): exec, or the default host instance for a host staging
  // buffer.
  static const flat_exec_type& flat_exec(const Exec& exec) {
    if constexpr (std::is_same_v<flat_exec_type, Exec>) {
      return exec;
    } else {
      return default_instance<flat_exec_type>();
    }
  }

  // After MPI wrote the buffer (and, if `kernels`, kernels on flat_exec(exec) wrote it since:
  // pmean's division, a block swap): the View gets its contents, and what ran on it is done.
  void finish(const Exec& exec, bool kernels) {
    if (use_ == Use::read) return;
    if constexpr (!std::is_same_v<flat_exec_type, Exec>) {
      if (kernels) fence_instance(flat_exec(exec));
    }
    if (!direct_) {
      if constexpr (!mpi_accessible_v<view_space, HostOnly>) Kokkos::deep_copy(exec, packed(), flat());
      if (!contiguous_) unpack(exec, packed(), v_);
    }
    if (!direct_ || kernels) fence_instance(exec);
  }

 private:
  Flat<value_type, view_space> packed() const { return Flat<value_type, view_space>(packed_, n_); }

  V v_;  // only when finish() unpacks into it
  Use use_;
  std::int64_t n_;
  bool contiguous_ = false;
  bool direct_ = false;
  Scratch<value_type, view_space> packed_buffer_;
  Scratch<value_type, memory_space> staging_buffer_;
  value_type* packed_ = nullptr;  // the View's elements, row-major: the View's memory or packed_buffer_
  value_type* flat_ = nullptr;    // what MPI uses: packed_, or staging_buffer_
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

// An unmanaged View of type Out's data type and layout over `data` (s.size() elements).
template <class Out>
Out make_view_at(typename Out::pointer_type data, const Shape& s) {
  constexpr int R = rank_v<Out>;
  if constexpr (R == 0) return Out(data);
  else if constexpr (R == 1) return Out(data, s[0]);
  else if constexpr (R == 2) return Out(data, s[0], s[1]);
  else if constexpr (R == 3) return Out(data, s[0], s[1], s[2]);
  else return Out(data, s[0], s[1], s[2], s[3]);
}

// Common compile-time rules of every collective taking an input and an output View. Scalars
// (rank-0 Views) are inputs too; the shape rules reject them where JAX does (a tiled all_gather,
// psum_scatter, all_to_all: no dimension to act on).
template <class In, class Out>
constexpr void check_pair() {
  static_assert(element_type_check<value_t<In>>::value);
  static_assert(rank_v<In> >= 0 && rank_v<In> <= 3, "kpmap collectives take Views of rank 0 to 3");
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
