// The collectives' scratch memory: packed copies of non-row-major Views, host staging buffers of
// device Views, block-swap buffers. Each memory space has one process-wide pool of buffers;
// a collective takes what it needs for the duration of the call (or of its Request) and gives
// it back, so a program that repeats the same collectives allocates only during its first
// calls. The pools free their buffers at Kokkos::finalize.
//
// Not thread-safe: the collectives are called from one thread at a time (MPI_THREAD_FUNNELED).
#pragma once

#include <Kokkos_Core.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace kpmap::detail {

template <class MemorySpace>
class BufferPool {
 public:
  using Buffer = Kokkos::View<unsigned char*, MemorySpace>;

  static BufferPool& get() {
    static BufferPool pool;
    return pool;
  }

  // The smallest free buffer of at least `bytes`, or a new one when none is that large (the
  // largest free buffer is then freed: the pool never holds more buffers than were in use at
  // once).
  Buffer acquire(std::size_t bytes) {
    if (!hooked_) {
      Kokkos::push_finalize_hook([] { get().clear(); });
      hooked_ = true;
      free_.reserve(16);
    }
    std::size_t best = free_.size(), largest = free_.size();
    for (std::size_t i = 0; i < free_.size(); ++i) {
      const std::size_t size = free_[i].extent(0);
      if (size >= bytes && (best == free_.size() || size < free_[best].extent(0))) best = i;
      if (largest == free_.size() || size > free_[largest].extent(0)) largest = i;
    }
    if (best < free_.size()) return take(best);
    if (largest < free_.size()) take(largest);  // too small: dropped
    ++allocations_;
    return Buffer(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("kpmap::workspace")), bytes);
  }

  void release(Buffer&& buffer) { free_.push_back(std::move(buffer)); }

  // Buffers allocated since the program started (a test's check of steady state).
  long allocations() const { return allocations_; }

 private:
  Buffer take(std::size_t i) {
    Buffer b = std::move(free_[i]);
    free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(i));
    return b;
  }
  void clear() {
    free_.clear();
    free_.shrink_to_fit();
    hooked_ = false;
  }

  std::vector<Buffer> free_;
  bool hooked_ = false;
  long allocations_ = 0;
};

// n elements of T in MemorySpace from the pool, returned when the Scratch is destroyed. Move-only;
// view() is an unmanaged View, valid while the Scratch (or what it was moved into) lives.
template <class T, class MemorySpace>
class Scratch {
 public:
  using view_type = Kokkos::View<T*, MemorySpace>;

  Scratch() = default;
  explicit Scratch(std::int64_t n) {
    if (n <= 0) return;
    buffer_ = BufferPool<MemorySpace>::get().acquire(static_cast<std::size_t>(n) * sizeof(T));
    view_ = view_type(reinterpret_cast<T*>(buffer_.data()), n);
  }
  Scratch(Scratch&& other) noexcept { *this = std::move(other); }
  Scratch& operator=(Scratch&& other) noexcept {
    if (this != &other) {
      give_back();
      if (other.buffer_.data() != nullptr) {
        buffer_ = std::move(other.buffer_);
        view_ = std::move(other.view_);
        other.buffer_ = {};
        other.view_ = {};
      }
    }
    return *this;
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  ~Scratch() { give_back(); }

  const view_type& view() const { return view_; }

 private:
  void give_back() {
    if (buffer_.data() == nullptr) return;  // empty: most calls (contiguous Views need no scratch)
    BufferPool<MemorySpace>::get().release(std::move(buffer_));
    buffer_ = {};
    view_ = {};
  }

  typename BufferPool<MemorySpace>::Buffer buffer_;
  view_type view_;
};

}  // namespace kpmap::detail
