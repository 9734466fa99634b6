// JAX's shape rules for the collectives whose output shape differs from the input, and the
// errors that name a broken rule. Pure functions: every rank computes the same answer, so a
// violated rule throws on every rank before any communication.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "kpmap/mesh/mesh.hpp"

namespace kpmap {

// Extents of a View, outermost first (row-major logical order, whatever the View's layout).
// A fixed-capacity sequence (no heap allocation: the collectives build shapes on every call)
// with the parts of std::vector's interface that shapes need.
class Shape {
 public:
  static constexpr int capacity = 8;
  using value_type = std::int64_t;
  using iterator = std::int64_t*;
  using const_iterator = const std::int64_t*;

  Shape() = default;
  explicit Shape(std::size_t rank) { resize(rank); }
  Shape(std::initializer_list<std::int64_t> extents) {
    resize(extents.size());
    std::copy(extents.begin(), extents.end(), d_.begin());
  }

  std::size_t size() const { return static_cast<std::size_t>(n_); }
  bool empty() const { return n_ == 0; }
  std::int64_t& operator[](std::size_t i) { return d_[i]; }
  std::int64_t operator[](std::size_t i) const { return d_[i]; }
  iterator begin() { return d_.data(); }
  iterator end() { return d_.data() + n_; }
  const_iterator begin() const { return d_.data(); }
  const_iterator end() const { return d_.data() + n_; }

  void push_back(std::int64_t extent) {
    resize(size() + 1);
    d_[n_ - 1] = extent;
  }
  // Inserts `extent` before `at`; erases the extent at `at`.
  void insert(const_iterator at, std::int64_t extent) {
    const int i = static_cast<int>(at - d_.data());
    resize(size() + 1);
    for (int k = n_ - 1; k > i; --k) d_[k] = d_[k - 1];
    d_[i] = extent;
  }
  void erase(const_iterator at) {
    for (int k = static_cast<int>(at - d_.data()); k + 1 < n_; ++k) d_[k] = d_[k + 1];
    --n_;
  }

  friend bool operator==(const Shape& a, const Shape& b) {
    return a.n_ == b.n_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const Shape& a, const Shape& b) { return !(a == b); }

 private:
  void resize(std::size_t rank) {
    if (rank > static_cast<std::size_t>(capacity)) {
      throw std::length_error("kpmap::Shape holds at most 8 extents, not " + std::to_string(rank));
    }
    for (std::size_t k = static_cast<std::size_t>(n_); k < rank; ++k) d_[k] = 0;
    n_ = static_cast<int>(rank);
  }
  std::array<std::int64_t, capacity> d_{};
  int n_ = 0;
};

std::string to_string(const Shape& shape);  // "[6, 3]"

// Tags for the returning variants, whose output rank must be known at compile time:
// all_gather(mesh, axes, x, 0, kpmap::untiled) has rank x.rank + 1, kpmap::tiled keeps it.
struct tiled_t {};
struct untiled_t {};
inline constexpr tiled_t tiled{};
inline constexpr untiled_t untiled{};

// Output extents for an axis (or tuple) of size n. Each throws ShapeError naming the collective,
// the axis, the input shape and the rule, e.g. "psum_scatter over 'data' (size 4): input shape
// [6, 3], scatter_dimension 0: 6 is not divisible by 4 (tiled)".
//   all_gather:   untiled inserts n at `axis` (-(rank+1) <= axis <= rank); tiled multiplies
//                 shape[axis] (-rank <= axis < rank). A negative axis counts from the end of the
//                 output, as JAX's canonicalize_axis.
//   psum_scatter and all_to_all take non-negative dimensions only (JAX does not canonicalise
//   them either).
//   psum_scatter: untiled needs shape[d] == n and removes d; tiled needs n | shape[d], divides it.
//   all_to_all:   untiled needs shape[split] == n, removes split and inserts n at concat (a
//                 position in the output); tiled needs n | shape[split], divides shape[split]
//                 and multiplies shape[concat].
Shape all_gather_shape(const Shape& in, const AxisNames& axes, int n, int axis, bool tiled);
Shape psum_scatter_shape(const Shape& in, const AxisNames& axes, int n, int scatter_dimension,
                         bool tiled);
Shape all_to_all_shape(const Shape& in, const AxisNames& axes, int n, int split_axis,
                       int concat_axis, bool tiled);

// The same over a resolved axis (or tuple).
Shape all_gather_shape(const Axis& group, const Shape& in, int axis, bool tiled);
Shape psum_scatter_shape(const Axis& group, const Shape& in, int scatter_dimension, bool tiled);
Shape all_to_all_shape(const Axis& group, const Shape& in, int split_axis, int concat_axis, bool tiled);

// The same over a mesh axis (or tuple); an unknown axis name throws the mesh's InputError.
Shape all_gather_shape(const Mesh& mesh, const AxisNames& axes, const Shape& in, int axis,
                       bool tiled);
Shape psum_scatter_shape(const Mesh& mesh, const AxisNames& axes, const Shape& in,
                         int scatter_dimension, bool tiled);
Shape all_to_all_shape(const Mesh& mesh, const AxisNames& axes, const Shape& in, int split_axis,
                       int concat_axis, bool tiled);

namespace detail {

// "psum over 'data' (size 4): input shape [6, 3]": the start of every collective's error.
std::string where(const char* collective, const AxisNames& axes, int n, const Shape& in);

// Throws ShapeError unless the caller's output View has the expected shape.
void check_output_shape(const char* collective, const AxisNames& axes, int n, const Shape& in,
                        const std::string& arguments, const Shape& out, const Shape& expected);

// ppermute's rules: indices in [-n, n) (a negative index counts from the end, Python-style, as
// JAX's ppermute), no source and no destination twice once made non-negative. Throws ShapeError.
void check_permutation(const AxisNames& axes, int n, const Shape& in,
                       const std::vector<std::pair<int, int>>& perm);

// all_gather's axis, checked (ShapeError) and made non-negative: axis + output rank if < 0.
int all_gather_axis(const Shape& in, const AxisNames& axes, int n, int axis, bool tiled);

// pbroadcast's source must be an axis index. Throws ShapeError.
void check_source(const AxisNames& axes, int n, const Shape& in, int source);

// Product of shape[begin, end).
std::int64_t product(const Shape& shape, int begin, int end);

// An axis index in [-n, n) made non-negative: index + n when negative.
inline int axis_position(int index, int n) { return index < 0 ? index + n : index; }

}  // namespace detail
}  // namespace kpmap
